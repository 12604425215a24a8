// Matrix products on the CPU. F32 and BF16 go through oneDNN's matmul (on
// these Xeons BF16 runs on AMX with fp32 accumulation); F16 has no oneDNN 2.6
// matmul, so it is widened to fp32, multiplied, and rounded once (the same
// rounding a Tensor Core applies); F64 uses a plain blocked loop.
#include <algorithm>
#include <array>
#include <cstring>
#include <dnnl.hpp>
#include <map>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "core/error.hpp"
#include "cpu/block_cache.hpp"
#include "cpu/convert_row.hpp"
#include "cpu/cpu_backend.hpp"
#include "cpu/dnnl_error.hpp"
#include "cpu/half_gemm.hpp"
#include "cpu/scratch.hpp"

namespace mixp {

struct CpuBackend::Dnnl {
  dnnl::engine engine{dnnl::engine::kind::cpu, 0};
  dnnl::stream stream{engine};
  // Primitive creation costs tens of microseconds; training repeats a handful
  // of shapes, so primitives are kept per exact geometry.
  using Key = std::array<int64_t, 16>;
  struct Entry {
    dnnl::matmul prim;
    dnnl::memory::desc a, b, c, bias;
  };
  std::map<Key, Entry> cache;
  bool bf16_unavailable = false;  // learnt once: this CPU has no bf16 matmul
  cpu::ScratchBuffer widened[4];  // fp32 copies of a widened product's a, b, c and bias
  cpu::HalfGemmScratch half;      // packed panels of half_gemm

  // The matmul primitive of this F32/BF16 geometry, created and cached on
  // first use; null when it is BF16 and the CPU has no bf16 matmul (then
  // bf16_unavailable is set). Throws dnnl::error.
  Entry *matmul_for(const GemmArgs &g);
  // Runs `e` on g's operands and waits for it. Throws dnnl::error.
  void run(Entry &e, const GemmArgs &g);
};

CpuBackend::CpuBackend() : dnnl_(std::make_unique<Dnnl>()), blocks_(std::make_unique<cpu::BlockCache>()) {}
CpuBackend::~CpuBackend() = default;

namespace {

using dt = dnnl::memory::data_type;

void gemm_f64(const GemmArgs &g) {
  const double *A = static_cast<const double *>(g.a);
  const double *B = static_cast<const double *>(g.b);
  double *C = static_cast<double *>(g.c);
  const int64_t rows = g.batch * g.m;
#pragma omp parallel for schedule(static) if (rows * g.n * g.k > 32768)
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t bi = r / g.m, i = r % g.m;
    const double *a = A + bi * g.a_batch + i * g.a_rs;
    const double *b = B + bi * g.b_batch;
    double *c = C + bi * g.c_batch + i * g.c_rs;
    std::vector<double> acc(size_t(g.n), 0.0);
    for (int64_t l = 0; l < g.k; ++l) {
      const double av = a[l * g.a_cs];
      const double *brow = b + l * g.b_rs;
      for (int64_t j = 0; j < g.n; ++j) acc[size_t(j)] += av * brow[j * g.b_cs];
    }
    const double *bias = static_cast<const double *>(g.bias);
    for (int64_t j = 0; j < g.n; ++j)
      c[j] = g.alpha * acc[size_t(j)] + (g.beta != 0.0f ? double(g.beta) * c[j] : 0.0) + (bias ? bias[j] : 0.0);
  }
}

// One half operand of a widened product: a stack of `batch` matrices of
// rows x cols with the given element strides.
struct HalfMatrix {
  const void *data;
  int64_t batch, rows, cols, sb, sr, sc;
};

// Where a widened operand lies in its fp32 buffer: dense, in the source's own
// order (a transposed operand stays transposed; oneDNN takes either), so
// that every conversion reads and writes contiguous runs instead of
// gathering a column per element.
struct DenseLayout {
  int64_t sb, sr, sc;
};

DenseLayout dense_layout(const HalfMatrix &m) {
  if (m.sc != 1 && m.sr == 1 && m.rows > 1) return {m.rows * m.cols, 1, m.rows};
  return {m.rows * m.cols, m.cols, 1};
}

// Runs of a widening: `runs` runs of `len` elements, run r at src + r's
// batch and outer offsets (contiguous in the source when inner_stride is 1).
struct Runs {
  const void *src;
  float *dst;
  int64_t per_batch, runs, len;
  int64_t sb, outer_stride, inner_stride;
};

Runs runs_of(const HalfMatrix &m, float *dst) {
  const DenseLayout d = dense_layout(m);
  const bool by_cols = d.sr == 1 && d.sc != 1;  // each column is a run
  Runs r{m.data, dst, by_cols ? m.cols : m.rows, 0, by_cols ? m.rows : m.cols, m.sb,
         by_cols ? m.sc : m.sr, by_cols ? m.sr : m.sc};
  r.runs = m.batch * r.per_batch;
  // Whole contiguous matrices (or the whole stack) convert as one run.
  if (r.inner_stride == 1 && r.outer_stride == r.len) {
    r.len *= r.per_batch;
    r.outer_stride = r.len;
    r.per_batch = 1;
    r.runs = m.batch;
    if (m.batch == 1 || m.sb == r.len) {
      r.len *= m.batch;
      r.runs = 1;
      r.sb = r.len;
    }
  }
  return r;
}

// Conversions are shared between threads in pieces of at most this many
// elements, so that a single long run is shared too.
constexpr int64_t kPiece = 8192;

// Converts the operands of one widened product in one parallel region: a
// region per operand left the second thread spinning between them.
template <class H>
void widen_all(const Runs *ops, int count) {
  int64_t pieces[4], first[5] = {0}, total = 0;
  for (int i = 0; i < count; ++i) {
    pieces[i] = (ops[i].len + kPiece - 1) / kPiece;
    first[i + 1] = first[i] + ops[i].runs * pieces[i];
    total += ops[i].runs * ops[i].len;
  }
  const int64_t items = first[count];
#pragma omp parallel for schedule(static) if (total > 32768)
  for (int64_t it = 0; it < items; ++it) {
    int i = 0;
    while (it >= first[i + 1]) ++i;
    const Runs &o = ops[i];
    const int64_t run = (it - first[i]) / pieces[i], piece = (it - first[i]) % pieces[i];
    const int64_t b = run / o.per_batch, outer = run % o.per_batch;
    const int64_t begin = piece * kPiece, n = std::min(kPiece, o.len - begin);
    const H *s = static_cast<const H *>(o.src) + b * o.sb + outer * o.outer_stride + begin * o.inner_stride;
    cpu::convert_row(s, o.inner_stride, o.dst + run * o.len + begin, 1, n);
  }
}

}  // namespace

// A half-precision product computed as fp32 and rounded once: for F16 (no
// oneDNN 2.6 f16 matmul) and for BF16 on CPUs without a bf16 unit.
template <class H>
void CpuBackend::gemm_widened(const GemmArgs &g) {
  auto &buf = dnnl_->widened;
  const HalfMatrix a{g.a, g.a_batch ? g.batch : 1, g.m, g.k, g.a_batch, g.a_rs, g.a_cs};
  const HalfMatrix b{g.b, g.b_batch ? g.batch : 1, g.k, g.n, g.b_batch, g.b_rs, g.b_cs};
  const HalfMatrix c{g.c, g.batch, g.m, g.n, g.c_batch, g.c_rs, 1};
  Runs ops[4];
  int count = 0;
  float *a32 = buf[0].get(size_t(a.batch * g.m * g.k));
  float *b32 = buf[1].get(size_t(b.batch * g.k * g.n));
  float *c32 = buf[2].get(size_t(g.batch * g.m * g.n));
  ops[count++] = runs_of(a, a32);
  ops[count++] = runs_of(b, b32);
  if (g.beta != 0.0f) ops[count++] = runs_of(c, c32);
  float *bias32 = g.bias ? buf[3].get(size_t(g.n)) : nullptr;
  if (g.bias) ops[count++] = runs_of(HalfMatrix{g.bias, 1, 1, g.n, 0, g.n, 1}, bias32);
  widen_all<H>(ops, count);
  const DenseLayout al = dense_layout(a), bl = dense_layout(b);
  GemmArgs w = g;
  w.bias = bias32;
  w.dtype = MIXP_F32;
  w.a = a32; w.a_batch = g.a_batch ? al.sb : 0; w.a_rs = al.sr; w.a_cs = al.sc;
  w.b = b32; w.b_batch = g.b_batch ? bl.sb : 0; w.b_rs = bl.sr; w.b_cs = bl.sc;
  w.c = c32; w.c_batch = g.m * g.n; w.c_rs = g.n;
  gemm(w);
  // The one rounding, into C's rows (one run when C is contiguous).
  const bool dense_c = g.c_rs == g.n && (g.batch == 1 || g.c_batch == g.m * g.n);
  const int64_t runs = dense_c ? 1 : g.batch * g.m, len = dense_c ? g.batch * g.m * g.n : g.n;
  const int64_t pieces = (len + kPiece - 1) / kPiece;
  H *out = static_cast<H *>(g.c);
#pragma omp parallel for schedule(static) if (runs * len > 32768)
  for (int64_t it = 0; it < runs * pieces; ++it) {
    const int64_t r = it / pieces, begin = (it % pieces) * kPiece, n = std::min(kPiece, len - begin);
    H *dst = dense_c ? out + begin : out + (r / g.m) * g.c_batch + (r % g.m) * g.c_rs + begin;
    cpu::convert_row(c32 + r * len + begin, 1, dst, 1, n);
  }
}

// A half product oneDNN cannot run: converted while packed where the CPU
// has AVX2 (half_gemm.hpp), else widened.
void CpuBackend::gemm_half(const GemmArgs &g) {
  if (cpu::half_gemm_chosen())
    cpu::half_gemm(g, dnnl_->half);
  else if (g.dtype == MIXP_F16)
    gemm_widened<f16>(g);
  else
    gemm_widened<bf16>(g);
}

namespace {

// k == 0, an empty sum: C = beta * C (+ bias).
void gemm_empty_sum(Backend &be, const GemmArgs &g) {
  View c;
  c.data = g.c;
  c.dtype = g.dtype;
  c.ndim = 3;
  c.shape[0] = g.batch; c.shape[1] = g.m; c.shape[2] = g.n;
  c.strides[0] = g.c_batch; c.strides[1] = g.c_rs; c.strides[2] = 1;
  if (g.beta != 0.0f && (g.beta != 1.0f || g.bias))
    fail(MIXP_ERR_INTERNAL, "gemm: k == 0 supports beta 0 (with or without bias) or 1 (without)");
  if (g.beta == 0.0f && !g.bias) be.fill(c, 0.0);
  if (g.bias) {
    View b;
    b.data = const_cast<void *>(g.bias);
    b.dtype = g.dtype;
    b.ndim = 3;
    b.shape[0] = g.batch; b.shape[1] = g.m; b.shape[2] = g.n;
    b.strides[0] = 0; b.strides[1] = 0; b.strides[2] = 1;
    be.copy(b, c);
  }
}

}  // namespace

CpuBackend::Dnnl::Entry *CpuBackend::Dnnl::matmul_for(const GemmArgs &g) {
  const dt t = g.dtype == MIXP_F32 ? dt::f32 : dt::bf16;
  const int64_t ab = g.a_batch ? g.batch : 1, bb = g.b_batch ? g.batch : 1;
  Key key = {int64_t(g.dtype), g.batch, g.m, g.n, g.k, g.a_batch, g.a_rs, g.a_cs,
             g.b_batch, g.b_rs, g.b_cs, g.c_batch, g.c_rs, 0, 0, 0};
  std::memcpy(&key[13], &g.alpha, sizeof(float));
  std::memcpy(&key[14], &g.beta, sizeof(float));
  key[15] = g.bias ? 1 : 0;
  auto it = cache.find(key);
  if (it != cache.end()) return &it->second;
  dnnl::memory::desc a_md({ab, g.m, g.k}, t, {g.a_batch ? g.a_batch : g.m * g.k, g.a_rs, g.a_cs});
  dnnl::memory::desc b_md({bb, g.k, g.n}, t, {g.b_batch ? g.b_batch : g.k * g.n, g.b_rs, g.b_cs});
  dnnl::memory::desc c_md({g.batch, g.m, g.n}, t, {g.c_batch ? g.c_batch : g.m * g.n, g.c_rs, 1});
  dnnl::primitive_attr attr;
  if (g.alpha != 1.0f) attr.set_output_scales(0, {g.alpha});
  if (g.beta != 0.0f) {
    dnnl::post_ops po;
    po.append_sum(g.beta);
    attr.set_post_ops(po);
  }
  dnnl::memory::desc bias_md({1, 1, g.n}, t, {g.n, g.n, 1});
  dnnl::matmul::desc d = g.bias ? dnnl::matmul::desc(a_md, b_md, bias_md, c_md)
                                : dnnl::matmul::desc(a_md, b_md, c_md);
  dnnl::matmul::primitive_desc pd;
  try {
    pd = dnnl::matmul::primitive_desc(d, attr, engine);
  } catch (const dnnl::error &) {
    // No bf16 matmul on this CPU (no AVX512-BF16/AMX, or under an
    // emulator that hides them): same math in fp32, rounded once.
    if (g.dtype != MIXP_BF16) throw;
    bf16_unavailable = true;
    return nullptr;
  }
  if (cache.size() > 512) cache.clear();
  return &cache.emplace(key, Entry{dnnl::matmul(pd), a_md, b_md, c_md, bias_md}).first->second;
}

void CpuBackend::Dnnl::run(Entry &e, const GemmArgs &g) {
  dnnl::memory a_mem(e.a, engine, const_cast<void *>(g.a));
  dnnl::memory b_mem(e.b, engine, const_cast<void *>(g.b));
  dnnl::memory c_mem(e.c, engine, g.c);
  std::unordered_map<int, dnnl::memory> args{{DNNL_ARG_SRC, a_mem}, {DNNL_ARG_WEIGHTS, b_mem}, {DNNL_ARG_DST, c_mem}};
  if (g.bias) args.emplace(DNNL_ARG_BIAS, dnnl::memory(e.bias, engine, const_cast<void *>(g.bias)));
  e.prim.execute(stream, args);
  stream.wait();
}

// oneDNN's bf16 matmul with an fp32 destination where the CPU has a bf16
// unit (AMX, AVX512-BF16); elsewhere both operands widened to fp32 (exact)
// and multiplied there: fp32 accumulation either way, no rounding of p.
void CpuBackend::gemm_bf16_into_f32(const bf16 *a, const bf16 *b, float *p, int64_t m, int64_t n, int64_t k) {
  Dnnl &d = *dnnl_;
  if (!d.bf16_unavailable) {
    try {
      const Dnnl::Key key = {-1, 1, m, n, k, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0};
      auto it = d.cache.find(key);
      if (it == d.cache.end()) {
        dnnl::memory::desc a_md({m, k}, dt::bf16, {k, 1}), b_md({k, n}, dt::bf16, {n, 1});
        dnnl::memory::desc p_md({m, n}, dt::f32, {n, 1});
        dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(a_md, b_md, p_md), d.engine);
        if (d.cache.size() > 512) d.cache.clear();
        it = d.cache.emplace(key, Dnnl::Entry{dnnl::matmul(pd), a_md, b_md, p_md, {}}).first;
      }
      Dnnl::Entry &e = it->second;
      e.prim.execute(d.stream, {{DNNL_ARG_SRC, dnnl::memory(e.a, d.engine, const_cast<bf16 *>(a))},
                                {DNNL_ARG_WEIGHTS, dnnl::memory(e.b, d.engine, const_cast<bf16 *>(b))},
                                {DNNL_ARG_DST, dnnl::memory(e.c, d.engine, p)}});
      d.stream.wait();
      return;
    } catch (const dnnl::error &) {
      d.bf16_unavailable = true;  // no bf16 matmul on this CPU: widen below
    }
  }
  float *a32 = d.widened[0].get(size_t(m * k)), *b32 = d.widened[1].get(size_t(k * n));
  cpu::convert_row(a, 1, a32, 1, m * k);
  cpu::convert_row(b, 1, b32, 1, k * n);
  GemmArgs w;
  w.m = m; w.n = n; w.k = k;
  w.a = a32; w.a_rs = k; w.a_cs = 1;
  w.b = b32; w.b_rs = n; w.b_cs = 1;
  w.c = p; w.c_rs = n;
  gemm(w);
}

void CpuBackend::gemm(const GemmArgs &g) {
  if (g.batch == 0 || g.m == 0 || g.n == 0) return;
  if (g.k == 0) {
    gemm_empty_sum(*this, g);
    return;
  }
  if (g.dtype == MIXP_F64) {
    gemm_f64(g);
    return;
  }
  if (g.dtype == MIXP_F16) {
    gemm_half(g);
    return;
  }
  if (g.dtype != MIXP_F32 && g.dtype != MIXP_BF16)
    fail(MIXP_ERR_DTYPE, "gemm: unsupported dtype ", dtype_name(g.dtype));

  if (g.dtype == MIXP_BF16 && dnnl_->bf16_unavailable) {
    gemm_half(g);
    return;
  }
  try {
    Dnnl::Entry *e = dnnl_->matmul_for(g);
    if (!e) {
      gemm_half(g);
      return;
    }
    dnnl_->run(*e, g);
  } catch (const dnnl::error &e) {
    cpu::fail_dnnl(e, "gemm", str(dtype_name(g.dtype), " m=", g.m, " n=", g.n, " k=", g.k, " batch=", g.batch));
  }
}

}  // namespace mixp
