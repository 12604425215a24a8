// CpuBackend::attention_backward: the gradients of fused attention without
// the L x S probabilities. A tile's probabilities are recomputed from the
// saved log-sum-exp, P = exp(scale q k^T - lse), and with
// delta_i = dO_i . O_i (= sum_j dP_ij P_ij, dropout included):
//   dV = Pd^T dO,   dS = P * (M dO v^T / (1 - p) - delta),
//   dQ = scale dS K,   dK = scale dS^T Q,
// where Pd = P M / (1 - p) are the kept probabilities (M: dropout's keep
// test, 1 without dropout). Two passes, so that no two threads add into one
// row: one task per (batch, head, key tile) sums dK and dV over the query
// tiles, one per (batch, head, query tile) sums dQ over the key tiles. Both
// recompute a tile with the same code from the same inputs, so they agree
// bit for bit, and the sums run in tile order whatever the thread count.
#include <omp.h>

#include <vector>

#include "cpu/cpu_backend.hpp"
#include "cpu/flash_attention.hpp"

namespace mixp {
namespace cpu::flash {
namespace {

// One task's tiles: queries and dO rows (and transposed), keys and values
// (rows and transposed), the kept probabilities, dS (and transposed), and
// two accumulators.
template <class A>
struct GradTiles {
  A *q, *dout, *qt, *doutt, *k, *v, *kt, *vt, *p, *ds, *dst, *acc1, *acc2;
  // An accumulator holds [D, kKeyTile] sums.
  static int64_t acc_size(int64_t d) { return kKeyTile * d; }
  static size_t size(int64_t d) {
    return size_t(4 * kQueryTile * d + 4 * kKeyTile * d + 3 * kQueryTile * kKeyTile + 2 * acc_size(d));
  }
  GradTiles(TileBuffers<A> &b, int64_t d) {
    q = b.at(0);
    dout = q + kQueryTile * d;
    qt = dout + kQueryTile * d;
    doutt = qt + kQueryTile * d;
    k = doutt + kQueryTile * d;
    v = k + kKeyTile * d;
    kt = v + kKeyTile * d;
    vt = kt + kKeyTile * d;
    p = vt + kKeyTile * d;
    ds = p + kQueryTile * kKeyTile;
    dst = ds + kQueryTile * kKeyTile;
    acc1 = dst + kQueryTile * kKeyTile;
    acc2 = acc1 + acc_size(d);
  }
};

// What a tile needs besides its tiles: where it is and the per-row stats.
template <class A>
struct TileSpot {
  int64_t bh, i0, rows, j0, cols;
  const A *lse, *delta;  // rows i0.. of (b, h)
};

// p = the kept probabilities, ds = dS, of a rows x cols tile (zero beyond
// each row's visible keys).
template <class A>
MIXP_KERNEL_BODY inline void grad_tile(const AttentionArgs &a, const Dims &g, const TileSpot<A> &at,
                                       GradTiles<A> &t) {
  const bool drop = a.dropout_p > 0.0;
  const uint32_t keep_at = keep_from(a.dropout_p);
  const A inv_keep = A(1.0 / (1.0 - a.dropout_p));
  product_tile(t.q, g.d, at.rows, t.kt, g.d, A(a.scale), t.p);
  product_tile(t.dout, g.d, at.rows, t.vt, g.d, A(1), t.ds);
  for (int64_t r = 0; r < at.rows; ++r) {
    const int64_t i = at.i0 + r, vis = visible_keys(a.causal, i, at.j0, at.cols);
    A *pr = t.p + r * kKeyTile, *dr = t.ds + r * kKeyTile;
    const A lse = at.lse[r], delta = at.delta[r];
    // Dropout's factor per key (1 without), so that the loop below vectorises.
    A kept[kKeyTile];
    if (drop) {
      uint8_t keep[kKeyTile];
      keep_mask(a.seed, a.offset, uint64_t((at.bh * g.l + i) * g.s + at.j0), vis, keep_at, keep);
      for (int64_t j = 0; j < vis; ++j) kept[j] = keep[j] ? inv_keep : A(0);
    } else {
      for (int64_t j = 0; j < vis; ++j) kept[j] = A(1);
    }
    for (int64_t j = 0; j < vis; ++j) {
      const A prob = hd::exp(pr[j] - lse);
      dr[j] = prob * (dr[j] * kept[j] - delta);
      pr[j] = prob * kept[j];
    }
    for (int64_t j = vis; j < kKeyTile; ++j) pr[j] = dr[j] = A(0);
  }
}

template <class T>
void load_keys(const AttentionArgs &a, const Dims &g, int64_t bh, int64_t j0, int64_t cols,
               GradTiles<acc_t<T>> &t) {
  load_rows<T>(a.k, bh / g.h, bh % g.h, j0, cols, g.d, t.k);
  load_rows<T>(a.v, bh / g.h, bh % g.h, j0, cols, g.d, t.v);
  run_kernel([&]() MIXP_KERNEL_BODY {
    transpose_tile(t.k, cols, g.d, t.kt);
    transpose_tile(t.v, cols, g.d, t.vt);
  });
}

template <class T>
void load_queries(const AttentionArgs &a, const Dims &g, int64_t bh, int64_t i0, int64_t rows,
                  GradTiles<acc_t<T>> &t) {
  load_rows<T>(a.q, bh / g.h, bh % g.h, i0, rows, g.d, t.q);
  load_rows<T>(a.dout, bh / g.h, bh % g.h, i0, rows, g.d, t.dout);
}

// dK^T += Q^T dS and dV^T += dO^T Pd for one tile ([D, kKeyTile] sums, a
// product of tiles summed in registers).
template <class A>
MIXP_KERNEL_BODY inline void key_grads_step(const AttentionArgs &a, const Dims &g, const TileSpot<A> &at,
                                            GradTiles<A> &t, A *dkt, A *dvt) {
  grad_tile(a, g, at, t);
  transpose_rows(t.q, at.rows, g.d, kQueryTile, t.qt);
  transpose_rows(t.dout, at.rows, g.d, kQueryTile, t.doutt);
  product_tile<A, true>(t.doutt, kQueryTile, g.d, t.p, at.rows, A(1), dvt);
  product_tile<A, true>(t.qt, kQueryTile, g.d, t.ds, at.rows, A(1), dkt);
}

// dQ^T [D, kQueryTile] += K^T dS^T for the tile grad_tile left in t.
template <class A>
MIXP_KERNEL_BODY inline void query_grads_step(const Dims &g, const TileSpot<A> &at, GradTiles<A> &t, A *dqt) {
  static_assert(kQueryTile == kKeyTile, "dS^T is a kKeyTile-wide operand of product_tile");
  transpose_rows(t.ds, at.rows, kKeyTile, kQueryTile, t.dst);
  product_tile<A, true>(t.kt, kKeyTile, g.d, t.dst, at.cols, A(1), dqt);
}

// Stores gradient rows [i0, i0 + n) of `out` from their transposed sums
// ([D, kKeyTile]) times `scale`, through the task's query buffer.
template <class T>
void store_transposed(const acc_t<T> *sums, acc_t<T> scale, int64_t n, const Dims &g, int64_t bh,
                      int64_t i0, const View &out, GradTiles<acc_t<T>> &t) {
  static_assert(kQueryTile >= kKeyTile, "the query buffer holds a key tile's rows");
  using A = acc_t<T>;
  A *rows = t.q;
  run_kernel([&]() MIXP_KERNEL_BODY {
    for (int64_t r = 0; r < n; ++r)
      for (int64_t c = 0; c < g.d; ++c) rows[r * g.d + c] = sums[c * kKeyTile + r] * scale;
  });
  store_rows<T>(rows, n, g.d, out, bh / g.h, bh % g.h, i0);
}

// dK and dV of key tile kt of (b, h), summed over the query tiles that see
// it; with dqts (one [D, kQueryTile] sum per query tile) dQ too, each sum
// receiving the key tiles in the order query_task adds them.
template <class T>
void key_task(const AttentionArgs &a, const Dims &g, const acc_t<T> *delta, int64_t bh, int64_t kt,
              GradTiles<acc_t<T>> &t, acc_t<T> *dqts) {
  using A = acc_t<T>;
  const int64_t d = g.d, j0 = kt * kKeyTile, cols = std::min(kKeyTile, g.s - j0);
  load_keys<T>(a, g, bh, j0, cols, t);
  A *dkt = t.acc1, *dvt = t.acc2;
  std::fill(dkt, dkt + d * kKeyTile, A(0));
  std::fill(dvt, dvt + d * kKeyTile, A(0));
  const A *lse = static_cast<const A *>(a.lse.data) + bh * g.l;
  const int64_t first = a.causal ? j0 / kQueryTile : 0;
  for (int64_t qt = first; qt * kQueryTile < g.l; ++qt) {
    const int64_t i0 = qt * kQueryTile, rows = std::min(kQueryTile, g.l - i0);
    load_queries<T>(a, g, bh, i0, rows, t);
    const TileSpot<A> at{bh, i0, rows, j0, cols, lse + i0, delta + bh * g.l + i0};
    run_kernel([&]() MIXP_KERNEL_BODY {
      key_grads_step(a, g, at, t, dkt, dvt);
      if (dqts) query_grads_step(g, at, t, dqts + qt * d * kQueryTile);
    });
  }
  store_transposed<T>(dkt, A(a.scale), cols, g, bh, j0, a.dk, t);
  store_transposed<T>(dvt, A(1), cols, g, bh, j0, a.dv, t);
}

// dQ of query tile qt of (b, h): summed over the key tiles it sees.
template <class T>
void query_task(const AttentionArgs &a, const Dims &g, const acc_t<T> *delta, int64_t bh, int64_t qt,
                GradTiles<acc_t<T>> &t) {
  using A = acc_t<T>;
  const int64_t d = g.d, i0 = qt * kQueryTile, rows = std::min(kQueryTile, g.l - i0);
  const int64_t kend = key_end(g, a.causal, i0, rows);
  A *dqt = t.acc1;
  std::fill(dqt, dqt + d * kQueryTile, A(0));
  const A *lse = static_cast<const A *>(a.lse.data) + bh * g.l + i0;
  load_queries<T>(a, g, bh, i0, rows, t);
  for (int64_t j0 = 0; j0 < kend; j0 += kKeyTile) {
    // The key task's tile: all of the keys' tile, whatever this query tile sees.
    const int64_t cols = std::min(kKeyTile, g.s - j0);
    load_keys<T>(a, g, bh, j0, cols, t);
    const TileSpot<A> at{bh, i0, rows, j0, cols, lse, delta + bh * g.l + i0};
    run_kernel([&]() MIXP_KERNEL_BODY {
      grad_tile(a, g, at, t);
      query_grads_step(g, at, t, dqt);
    });
  }
  store_transposed<T>(dqt, A(a.scale), rows, g, bh, i0, a.dq, t);
}

// Both of a head's passes in one task, when there are heads enough for the
// threads: each tile's probabilities computed once instead of twice, and
// the same sums in the same order as the two passes.
template <class T>
void head_task(const AttentionArgs &a, const Dims &g, const acc_t<T> *delta, int64_t bh,
               GradTiles<acc_t<T>> &t, std::vector<acc_t<T>> &dqts) {
  using A = acc_t<T>;
  const int64_t qtiles = tiles(g.l, kQueryTile), each = g.d * kQueryTile;
  dqts.assign(size_t(qtiles * each), A(0));
  for (int64_t kt = 0; kt * kKeyTile < g.s; ++kt) key_task<T>(a, g, delta, bh, kt, t, dqts.data());
  for (int64_t qt = 0; qt < qtiles; ++qt) {
    const int64_t i0 = qt * kQueryTile;
    store_transposed<T>(dqts.data() + qt * each, A(a.scale), std::min(kQueryTile, g.l - i0), g, bh, i0,
                        a.dq, t);
  }
}

// delta[bh * L + i] = dO_i . O_i, summed in c order.
template <class T>
void row_deltas(const AttentionArgs &a, const Dims &g, acc_t<T> *delta, bool parallel) {
  using A = acc_t<T>;
#pragma omp parallel if (parallel)
  {
    std::vector<A> o(size_t(kQueryTile * g.d)), dout(size_t(kQueryTile * g.d));
#pragma omp for schedule(static)
    for (int64_t bh = 0; bh < g.b * g.h; ++bh)
      for (int64_t i0 = 0; i0 < g.l; i0 += kQueryTile) {
        const int64_t rows = std::min(kQueryTile, g.l - i0);
        load_rows<T>(a.o, bh / g.h, bh % g.h, i0, rows, g.d, o.data());
        load_rows<T>(a.dout, bh / g.h, bh % g.h, i0, rows, g.d, dout.data());
        for (int64_t r = 0; r < rows; ++r) {
          A s = A(0);
          for (int64_t c = 0; c < g.d; ++c) s += dout[size_t(r * g.d + c)] * o[size_t(r * g.d + c)];
          delta[bh * g.l + i0 + r] = s;
        }
      }
  }
}

template <class T>
void backward(const AttentionArgs &a) {
  using A = acc_t<T>;
  const Dims g = dims_of(a);
  const int64_t bhs = g.b * g.h, qtiles = tiles(g.l, kQueryTile), ktiles = tiles(g.s, kKeyTile);
  const bool parallel = double(g.l) * double(g.s) * double(g.d) * double(bhs) >= 1e5;
  std::vector<A> delta(size_t(bhs * g.l));
  row_deltas<T>(a, g, delta.data(), parallel);
  // One task per head when the heads keep every thread busy; else two
  // passes over the tiles (the same bits either way).
  const bool per_head = bhs >= 4 * int64_t(omp_get_max_threads());
#pragma omp parallel if (parallel)
  {
    TileBuffers<A> buf(GradTiles<A>::size(g.d));
    GradTiles<A> t(buf, g.d);
    std::vector<A> dqts;
    if (per_head) {
#pragma omp for schedule(dynamic, 1)
      for (int64_t bh = 0; bh < bhs; ++bh) head_task<T>(a, g, delta.data(), bh, t, dqts);
    } else {
#pragma omp for schedule(dynamic, 1) nowait
      for (int64_t task = 0; task < bhs * ktiles; ++task)
        key_task<T>(a, g, delta.data(), task / ktiles, task % ktiles, t, nullptr);
#pragma omp for schedule(dynamic, 1)
      for (int64_t task = 0; task < bhs * qtiles; ++task)
        query_task<T>(a, g, delta.data(), task / qtiles, task % qtiles, t);
    }
  }
}

}  // namespace
}  // namespace cpu::flash

bool CpuBackend::attention_backward(const AttentionArgs &a) {
  if (!cpu::flash::views_supported(a, true)) return false;
  dispatch_float(a.q.dtype, [&](auto tag) { cpu::flash::backward<decltype(tag)>(a); });
  return true;
}

}  // namespace mixp
