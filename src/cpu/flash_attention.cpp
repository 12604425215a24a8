// CpuBackend::attention_forward: fused attention (flash_attention.hpp), one
// task per (batch, head, query tile), spread over the OpenMP threads. Each
// task widens its queries once and meets the keys and values a tile at a
// time: scores, an online softmax (the row's running maximum m and sum l;
// earlier partial outputs are rescaled by exp(m_old - m_new)), dropout's
// keep test from the Philox stream, and the weighted values accumulated in
// fp32 (fp64 for F64). Only the output and each row's log-sum-exp are
// written.
#include <omp.h>

#include <cmath>

#include "cpu/cpu_backend.hpp"
#include "cpu/flash_attention.hpp"

namespace mixp {
namespace cpu::flash {

bool views_supported(const AttentionArgs &a, bool backward) noexcept {
  const DType dt = a.q.dtype;
  if (!is_float(dt)) return false;
  const View *rows[] = {&a.q, &a.k, &a.v, &a.o, &a.dout};
  for (const View *v : rows) {
    if (v == &a.dout && !backward) continue;
    if (v->ndim != 4 || v->dtype != dt || v->strides[3] != 1) return false;
  }
  const Dims g = dims_of(a);
  if (g.d < 1 || g.d > kMaxHeadDim || g.l < 1 || g.s < 1) return false;
  for (int i = 0; i < 4; ++i) {
    const int64_t q_like = i == 2 ? g.l : a.q.shape[i];
    const int64_t k_like = i == 2 ? g.s : a.q.shape[i];
    if (a.o.shape[i] != q_like || a.k.shape[i] != k_like || a.v.shape[i] != k_like) return false;
    if (backward && a.dout.shape[i] != q_like) return false;
  }
  const DType stat = dt == MIXP_F64 ? MIXP_F64 : MIXP_F32;
  return a.lse.dtype == stat && a.lse.numel() == g.b * g.h * g.l;
}

uint32_t keep_from(double p) noexcept {
  return uint32_t(std::ceil(std::clamp(p, 0.0, 1.0) * 16777216.0));
}

namespace {

// One task's tiles: queries, keys and values (rows and transposed), the
// scores (then probabilities) and their transpose, the output transposed
// ([D, kQueryTile], summed in registers: O^T = alpha O^T + V^T P^T), and
// each row's m, l and rescaling factor alpha.
template <class A>
struct ForwardTiles {
  A *q, *k, *v, *kt, *vt, *s, *pt, *ot, *m, *l, *alpha;
  static size_t size(int64_t d) {
    return size_t(2 * kQueryTile * d + 4 * kKeyTile * d + 2 * kQueryTile * kKeyTile + 3 * kQueryTile);
  }
  explicit ForwardTiles(TileBuffers<A> &b, int64_t d) {
    static_assert(kQueryTile == kKeyTile, "P^T is a kKeyTile-wide operand of product_tile");
    q = b.at(0);
    k = q + kQueryTile * d;
    v = k + kKeyTile * d;
    kt = v + kKeyTile * d;
    vt = kt + kKeyTile * d;
    s = vt + kKeyTile * d;
    pt = s + kQueryTile * kKeyTile;
    ot = pt + kQueryTile * kKeyTile;
    m = ot + kQueryTile * d;
    l = m + kQueryTile;
    alpha = l + kQueryTile;
  }
};

// The online softmax of one query row against `vis` visible keys whose
// scores are in sr: sr becomes the kept probabilities (0 beyond vis), m and
// l are updated, and the factor that rescales the row's earlier output is
// returned. keep is dropout's test (null without dropout).
template <class A>
MIXP_KERNEL_BODY inline A online_row(A *sr, int64_t vis, const uint8_t *keep, A inv_keep, A &m, A &l) {
  for (int64_t j = vis; j < kKeyTile; ++j) sr[j] = A(0);
  if (vis == 0) return A(1);
  const A tile_max = row_max(sr, vis);
  const A mx = (tile_max > m || tile_max != tile_max) ? tile_max : m;
  // Every score so far -inf: exp(-inf - -inf) would be NaN, not 0.
  const A base = mx == -std::numeric_limits<A>::infinity() ? A(0) : mx;
  for (int64_t j = 0; j < vis; ++j) sr[j] = hd::exp(sr[j] - base);
  const A alpha = hd::exp(m - base);
  l = l * alpha + row_sum(sr, vis);
  m = mx;
  if (keep)
    for (int64_t j = 0; j < vis; ++j) sr[j] = keep[j] ? sr[j] * inv_keep : A(0);
  return alpha;
}

// The scores of key tile [j0, j0 + cols) (keys in t.kt, values in t.vt)
// folded into the task's running output.
template <class A>
MIXP_KERNEL_BODY inline void attend_key_tile(const AttentionArgs &a, const Dims &g, int64_t bh, int64_t i0,
                                             int64_t rows, int64_t j0, int64_t cols, ForwardTiles<A> &t) {
  const bool drop = a.dropout_p > 0.0;
  const uint32_t keep_at = keep_from(a.dropout_p);
  const A inv_keep = A(1.0 / (1.0 - a.dropout_p));
  product_tile(t.q, g.d, rows, t.kt, g.d, A(a.scale), t.s);
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t i = i0 + r, vis = visible_keys(a.causal, i, j0, cols);
    uint8_t keep[kKeyTile];
    if (drop) keep_mask(a.seed, a.offset, uint64_t((bh * g.l + i) * g.s + j0), vis, keep_at, keep);
    t.alpha[r] = online_row(t.s + r * kKeyTile, vis, drop ? keep : nullptr, inv_keep, t.m[r], t.l[r]);
  }
  for (int64_t c = 0; c < g.d; ++c)
    for (int64_t r = 0; r < rows; ++r) t.ot[c * kQueryTile + r] *= t.alpha[r];
  transpose_rows(t.s, rows, kKeyTile, kQueryTile, t.pt);
  product_tile<A, true>(t.vt, kKeyTile, g.d, t.pt, cols, A(1), t.ot);
}

template <class T>
void forward_task(const AttentionArgs &a, const Dims &g, int64_t bh, int64_t qt,
                  ForwardTiles<acc_t<T>> &t) {
  using A = acc_t<T>;
  const int64_t b = bh / g.h, h = bh % g.h, d = g.d;
  const int64_t i0 = qt * kQueryTile, rows = std::min(kQueryTile, g.l - i0);
  const int64_t kend = key_end(g, a.causal, i0, rows);
  load_rows<T>(a.q, b, h, i0, rows, d, t.q);
  std::fill(t.ot, t.ot + d * kQueryTile, A(0));
  std::fill(t.m, t.m + rows, -std::numeric_limits<A>::infinity());
  std::fill(t.l, t.l + rows, A(0));
  for (int64_t j0 = 0; j0 < kend; j0 += kKeyTile) {
    const int64_t cols = std::min(kKeyTile, kend - j0);
    load_rows<T>(a.k, b, h, j0, cols, d, t.k);
    load_rows<T>(a.v, b, h, j0, cols, d, t.v);
    run_kernel([&]() MIXP_KERNEL_BODY {
      transpose_tile(t.k, cols, d, t.kt);
      transpose_tile(t.v, cols, d, t.vt);
      attend_key_tile(a, g, bh, i0, rows, j0, cols, t);
    });
  }
  A *lse = static_cast<A *>(a.lse.data) + bh * g.l + i0;
  A *o = t.q;  // the output's rows, in the queries' buffer
  run_kernel([&]() MIXP_KERNEL_BODY {
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t c = 0; c < d; ++c) o[r * d + c] = t.ot[c * kQueryTile + r] / t.l[r];
      lse[r] = t.m[r] + hd::log(t.l[r]);
    }
  });
  store_rows<T>(o, rows, d, a.o, b, h, i0);
}

template <class T>
void forward(const AttentionArgs &a) {
  using A = acc_t<T>;
  const Dims g = dims_of(a);
  const int64_t qtiles = tiles(g.l, kQueryTile), tasks = g.b * g.h * qtiles;
  const bool parallel = tasks > 1 && double(g.l) * double(g.s) * double(g.d) * double(g.b * g.h) >= 1e5;
#pragma omp parallel if (parallel)
  {
    TileBuffers<A> buf(ForwardTiles<A>::size(g.d));
    ForwardTiles<A> t(buf, g.d);
#pragma omp for schedule(dynamic, 1)
    for (int64_t task = 0; task < tasks; ++task) forward_task<T>(a, g, task / qtiles, task % qtiles, t);
  }
}

}  // namespace
}  // namespace cpu::flash

bool CpuBackend::attention_forward(const AttentionArgs &a) {
  if (!cpu::flash::views_supported(a, false)) return false;
  dispatch_float(a.q.dtype, [&](auto tag) { cpu::flash::forward<decltype(tag)>(a); });
  return true;
}

}  // namespace mixp
