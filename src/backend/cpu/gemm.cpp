// Matrix products on the CPU. F32 and BF16 go through oneDNN's matmul (on
// these Xeons BF16 runs on AMX with fp32 accumulation); F16 has no oneDNN 2.6
// matmul, so it is widened to fp32, multiplied, and rounded once (the same
// rounding a Tensor Core applies); F64 uses a plain blocked loop.
#include <array>
#include <cstring>
#include <dnnl.hpp>
#include <map>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "backend/cpu/block_cache.hpp"
#include "backend/cpu/convert_row.hpp"
#include "backend/cpu/cpu_backend.hpp"
#include "backend/cpu/dnnl_error.hpp"
#include "backend/cpu/scratch.hpp"
#include "core/error.hpp"

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

// Copies a strided half matrix stack into a contiguous fp32 buffer.
template <class H>
void widen(const void *src, int64_t batch, int64_t rows, int64_t cols, int64_t sb, int64_t sr, int64_t sc,
           float *out) {
  const H *s = static_cast<const H *>(src);
#pragma omp parallel for schedule(static) if (batch * rows * cols > 32768)
  for (int64_t r = 0; r < batch * rows; ++r) {
    const int64_t b = r / rows, i = r % rows;
    cpu::convert_row(s + b * sb + i * sr, sc, out + r * cols, 1, cols);
  }
}

}  // namespace

// A half-precision product computed as fp32 and rounded once: for F16 (no
// oneDNN 2.6 f16 matmul) and for BF16 on CPUs without a bf16 unit.
template <class H>
void CpuBackend::gemm_widened(const GemmArgs &g) {
  auto &buf = dnnl_->widened;
  const int64_t ab = g.a_batch ? g.batch : 1, bb = g.b_batch ? g.batch : 1;
  float *a32 = buf[0].get(size_t(ab * g.m * g.k));
  float *b32 = buf[1].get(size_t(bb * g.k * g.n));
  float *c32 = buf[2].get(size_t(g.batch * g.m * g.n));
  widen<H>(g.a, ab, g.m, g.k, g.a_batch, g.a_rs, g.a_cs, a32);
  widen<H>(g.b, bb, g.k, g.n, g.b_batch, g.b_rs, g.b_cs, b32);
  if (g.beta != 0.0f) widen<H>(g.c, g.batch, g.m, g.n, g.c_batch, g.c_rs, 1, c32);
  float *bias32 = g.bias ? buf[3].get(size_t(g.n)) : nullptr;
  if (g.bias) widen<H>(g.bias, 1, 1, g.n, 0, 0, 1, bias32);
  GemmArgs w = g;
  w.bias = bias32;
  w.dtype = MIXP_F32;
  w.a = a32; w.a_batch = g.a_batch ? g.m * g.k : 0; w.a_rs = g.k; w.a_cs = 1;
  w.b = b32; w.b_batch = g.b_batch ? g.k * g.n : 0; w.b_rs = g.n; w.b_cs = 1;
  w.c = c32; w.c_batch = g.m * g.n; w.c_rs = g.n;
  gemm(w);
  H *c = static_cast<H *>(g.c);
#pragma omp parallel for schedule(static) if (g.batch * g.m * g.n > 32768)
  for (int64_t r = 0; r < g.batch * g.m; ++r) {
    const int64_t b = r / g.m, i = r % g.m;
    cpu::convert_row(static_cast<const float *>(c32 + r * g.n), 1, c + b * g.c_batch + i * g.c_rs, 1, g.n);
  }
}

void CpuBackend::gemm(const GemmArgs &g) {
  if (g.batch == 0 || g.m == 0 || g.n == 0) return;
  if (g.k == 0) {
    // An empty sum: C = beta * C.
    View c;
    c.data = g.c;
    c.dtype = g.dtype;
    c.ndim = 3;
    c.shape[0] = g.batch; c.shape[1] = g.m; c.shape[2] = g.n;
    c.strides[0] = g.c_batch; c.strides[1] = g.c_rs; c.strides[2] = 1;
    if (g.beta != 0.0f && (g.beta != 1.0f || g.bias))
      fail(MIXP_ERR_INTERNAL, "gemm: k == 0 supports beta 0 (with or without bias) or 1 (without)");
    if (g.beta == 0.0f && !g.bias) fill(c, 0.0);
    if (g.bias) {
      View b;
      b.data = const_cast<void *>(g.bias);
      b.dtype = g.dtype;
      b.ndim = 3;
      b.shape[0] = g.batch; b.shape[1] = g.m; b.shape[2] = g.n;
      b.strides[0] = 0; b.strides[1] = 0; b.strides[2] = 1;
      copy(b, c);
    }
    return;
  }
  if (g.dtype == MIXP_F64) {
    gemm_f64(g);
    return;
  }
  if (g.dtype == MIXP_F16) {
    gemm_widened<f16>(g);
    return;
  }
  if (g.dtype != MIXP_F32 && g.dtype != MIXP_BF16)
    fail(MIXP_ERR_DTYPE, "gemm: unsupported dtype ", dtype_name(g.dtype));

  if (g.dtype == MIXP_BF16 && dnnl_->bf16_unavailable) {
    gemm_widened<bf16>(g);
    return;
  }
  const dt t = g.dtype == MIXP_F32 ? dt::f32 : dt::bf16;
  const int64_t ab = g.a_batch ? g.batch : 1, bb = g.b_batch ? g.batch : 1;
  Dnnl::Key key = {int64_t(g.dtype), g.batch, g.m, g.n, g.k, g.a_batch, g.a_rs, g.a_cs,
                   g.b_batch, g.b_rs, g.b_cs, g.c_batch, g.c_rs, 0, 0, 0};
  std::memcpy(&key[13], &g.alpha, sizeof(float));
  std::memcpy(&key[14], &g.beta, sizeof(float));
  key[15] = g.bias ? 1 : 0;
  auto it = dnnl_->cache.find(key);
  try {
    if (it == dnnl_->cache.end()) {
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
        pd = dnnl::matmul::primitive_desc(d, attr, dnnl_->engine);
      } catch (const dnnl::error &) {
        // No bf16 matmul on this CPU (no AVX512-BF16/AMX, or under an
        // emulator that hides them): same math in fp32, rounded once.
        if (g.dtype != MIXP_BF16) throw;
        dnnl_->bf16_unavailable = true;
        gemm_widened<bf16>(g);
        return;
      }
      if (dnnl_->cache.size() > 512) dnnl_->cache.clear();
      it = dnnl_->cache.emplace(key, Dnnl::Entry{dnnl::matmul(pd), a_md, b_md, c_md, bias_md}).first;
    }
    Dnnl::Entry &e = it->second;
    dnnl::memory a_mem(e.a, dnnl_->engine, const_cast<void *>(g.a));
    dnnl::memory b_mem(e.b, dnnl_->engine, const_cast<void *>(g.b));
    dnnl::memory c_mem(e.c, dnnl_->engine, g.c);
    std::unordered_map<int, dnnl::memory> args{{DNNL_ARG_SRC, a_mem}, {DNNL_ARG_WEIGHTS, b_mem}, {DNNL_ARG_DST, c_mem}};
    if (g.bias) args.emplace(DNNL_ARG_BIAS, dnnl::memory(e.bias, dnnl_->engine, const_cast<void *>(g.bias)));
    e.prim.execute(dnnl_->stream, args);
    dnnl_->stream.wait();
  } catch (const dnnl::error &e) {
    cpu::fail_dnnl(e, "gemm", str(dtype_name(g.dtype), " m=", g.m, " n=", g.n, " k=", g.k, " batch=", g.batch));
  }
}

}  // namespace mixp
