// Matrix products on Tensor Cores through cuBLASLt: F16/BF16 with fp32
// accumulation, F32 in fp32 (TF32 when the session allows it), F64 in fp64.
// Row-major mixp operands are handed to column-major cuBLASLt as the
// transposed product: C^T (n x m) = B^T (n x k) * A^T (k x m), so no data
// moves. The algorithm is chosen once per (shape, dtype, layout, epilogue,
// alignment) and cached in Libs::gemm_plans: the heuristic's first answer,
// or with MIXP_CUBLASLT_AUTOTUNE=1 the fastest of its first kCandidates
// timed on the problem itself (see fastest_candidate). Sizes are
// 64-bit throughout: cuBLASLt's layouts take them as such, the fallback uses
// the _64 API, and batches beyond cuBLASLt's int32 count run in pieces.
#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "common.cuh"
#include "libs.hpp"

namespace mixp::cuda {
namespace {

cudaDataType_t cuda_type(DType t) {
  switch (t) {
    case MIXP_F16: return CUDA_R_16F;
    case MIXP_BF16: return CUDA_R_16BF;
    case MIXP_F32: return CUDA_R_32F;
    case MIXP_F64: return CUDA_R_64F;
    default: fail(MIXP_ERR_INTERNAL, "cuda gemm: dtype ", dtype_name(t), " is not a float type");
  }
}

// The largest power of two up to 16 dividing the address: cuBLASLt's
// vectorised kernels need it, so it is part of the plan's key.
int64_t alignment(const void *p) {
  const uintptr_t a = reinterpret_cast<uintptr_t>(p);
  int64_t al = 16;
  while (al > 1 && (a % uintptr_t(al)) != 0) al >>= 1;
  return al;
}

// One column-major operand as cuBLASLt sees it.
struct Operand {
  cublasOperation_t op = CUBLAS_OP_N;
  int64_t rows = 0, cols = 0, ld = 0;  // of the stored matrix
};

// A row-major matrix `r x c` with row stride rs and column stride cs (one of
// them 1) is, column-major, the `c x r` matrix (ld rs) when cs == 1, or the
// transpose of the stored `r x c` matrix (ld cs) when rs == 1.
Operand as_column_major(int64_t r, int64_t c, int64_t rs, int64_t cs) {
  Operand o;
  if (cs == 1) {
    o.op = CUBLAS_OP_N;
    o.rows = c;
    o.cols = r;
    o.ld = rs;
  } else {
    o.op = CUBLAS_OP_T;
    o.rows = r;
    o.cols = c;
    o.ld = cs;
  }
  // A single stored column may carry any stride; cuBLASLt wants ld >= rows.
  if (o.cols <= 1 && o.ld < o.rows) o.ld = o.rows;
  if (o.ld < 1) o.ld = 1;
  if (o.ld < o.rows)
    fail(MIXP_ERR_INTERNAL, "cuda gemm: a ", r, "x", c, " operand with strides (", rs, ", ", cs,
         ") overlaps itself; ops must pass addressable matrices");
  return o;
}

// C[b, i, j] = beta * C[b, i, j] + bias[j] (bias may be null): the k == 0
// product, and the bias where no fused epilogue exists.
template <class T>
__global__ void beta_bias_kernel(T *c, int64_t batch, int64_t m, int64_t n, int64_t c_rs,
                                 int64_t c_batch, double beta, bool scale, const T *bias) {
  const int64_t total = batch * m * n;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < total;
       i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t j = i % n, r = (i / n) % m, b = i / (n * m);
    T *p = c + b * c_batch + r * c_rs + j;
    acc_t<T> v = scale ? acc_t<T>(beta) * ld(*p) : acc_t<T>(0);
    if (bias) v += ld(bias[j]);
    *p = st<T>(v);
  }
}

// scale: C is multiplied by `factor` (else overwritten, as beta == 0 means).
void beta_bias(CudaBackend &be, const GemmArgs &g, bool scale, double factor) {
  dispatch_float_dt(g.dtype, "gemm", [&](auto tag) {
    using T = decltype(tag);
    const int64_t total = g.batch * g.m * g.n;
    beta_bias_kernel<T><<<grid_for(total), kThreads, 0, be.stream()>>>(
        static_cast<T *>(g.c), g.batch, g.m, g.n, g.c_rs, g.c_batch, factor, scale,
        static_cast<const T *>(g.bias));
    MIXP_CUDA_LAUNCHED();
  });
}

void destroy_plan(GemmPlan &p) noexcept {
  if (p.a) cublasLtMatrixLayoutDestroy(p.a);
  if (p.b) cublasLtMatrixLayoutDestroy(p.b);
  if (p.c) cublasLtMatrixLayoutDestroy(p.c);
  if (p.op) cublasLtMatmulDescDestroy(p.op);
  p = GemmPlan{};
}

cublasLtMatrixLayout_t make_layout(cudaDataType_t t, const Operand &o, int64_t batch,
                                   int64_t batch_stride) {
  cublasLtMatrixLayout_t l = nullptr;
  MIXP_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&l, t, uint64_t(o.rows), uint64_t(o.cols), o.ld));
  if (batch > 1) {
    int32_t count = int32_t(batch);
    MIXP_CUBLAS_CHECK(cublasLtMatrixLayoutSetAttribute(l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT,
                                                       &count, sizeof count));
    MIXP_CUBLAS_CHECK(cublasLtMatrixLayoutSetAttribute(
        l, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &batch_stride, sizeof batch_stride));
  }
  return l;
}

// What cuBLASLt is asked for: types, compute mode and the three operands
// as column-major layouts (cuBLASLt's A is our B and its B our A, see the
// top of the file).
struct GemmForm {
  cudaDataType_t dt;
  bool f64, tf32;
  cublasComputeType_t compute;
  cudaDataType_t scale_t;
  Operand la, lb, lc;
  // cuBLASLt's bias epilogue reads the bias with 16-byte vectors; a bias
  // that is a view at another offset gets the plain product and a separate
  // bias kernel instead.
  bool fused_bias;
  // gemm_row_sums: the BGRADB epilogue writes the row sums of mixp's A.
  bool row_sums = false;
};

GemmForm form_of(const GemmArgs &g) {
  GemmForm f;
  f.dt = cuda_type(g.dtype);
  f.f64 = g.dtype == MIXP_F64;
  f.tf32 = g.dtype == MIXP_F32 && g.allow_tf32;
  f.compute = f.f64 ? CUBLAS_COMPUTE_64F : (f.tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F);
  f.scale_t = f.f64 ? CUDA_R_64F : CUDA_R_32F;
  f.la = as_column_major(g.k, g.n, g.b_rs, g.b_cs);
  f.lb = as_column_major(g.m, g.k, g.a_rs, g.a_cs);
  f.lc.rows = g.n;
  f.lc.cols = g.m;
  f.lc.ld = g.c_rs < g.n ? g.n : g.c_rs;
  if (g.m > 1 && g.c_rs < g.n)
    fail(MIXP_ERR_INTERNAL, "cuda gemm: C row stride ", g.c_rs, " < n = ", g.n);
  f.fused_bias = g.bias != nullptr && alignment(g.bias) >= 16;
  return f;
}

GemmKey key_of(const GemmArgs &g, const GemmForm &f) {
  GemmKey key;
  key.v = {int64_t(g.dtype) | int64_t(f.tf32) << 8 | int64_t(f.la.op) << 9 | int64_t(f.lb.op) << 11 |
               int64_t(f.fused_bias) << 13 | int64_t(f.row_sums) << 14,
           g.batch, g.m, g.n, g.k, f.la.ld, f.lb.ld, f.lc.ld,
           g.batch > 1 ? g.b_batch : 0, g.batch > 1 ? g.a_batch : 0, g.batch > 1 ? g.c_batch : 0,
           alignment(g.a) | alignment(g.b) << 8 | alignment(g.c) << 16,
           0, 0, 0, 0};
  return key;
}

// The matmul descriptor: transposes and, when fused, the bias epilogue.
void describe_matmul(GemmPlan &p, const GemmForm &f) {
  MIXP_CUBLAS_CHECK(cublasLtMatmulDescCreate(&p.op, f.compute, f.scale_t));
  MIXP_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(p.op, CUBLASLT_MATMUL_DESC_TRANSA, &f.la.op,
                                                   sizeof f.la.op));
  MIXP_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(p.op, CUBLASLT_MATMUL_DESC_TRANSB, &f.lb.op,
                                                   sizeof f.lb.op));
  if (!f.fused_bias && !f.row_sums) return;
  // The bias has one entry per row of the column-major D, i.e. per column j
  // of mixp's C, shared by every batch. BGRADB's vector has one per column
  // of D (row of mixp's C): the sums over k of cuBLASLt's B, which is
  // mixp's A transposed, i.e. the row sums of A.
  cublasLtEpilogue_t ep = f.row_sums ? CUBLASLT_EPILOGUE_BGRADB : CUBLASLT_EPILOGUE_BIAS;
  MIXP_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(p.op, CUBLASLT_MATMUL_DESC_EPILOGUE, &ep,
                                                   sizeof ep));
  cudaDataType_t bt = f.dt;
  MIXP_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(p.op, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &bt,
                                                   sizeof bt));
  int64_t bias_stride = 0;
  MIXP_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(
      p.op, CUBLASLT_MATMUL_DESC_BIAS_BATCH_STRIDE, &bias_stride, sizeof bias_stride));
}

// Up to n of the heuristic's algorithms for the described plan, best
// first, under the workspace and the operands' alignments; 0 when cuBLASLt
// has none.
int heuristic_candidates(CudaBackend::Libs &L, GemmPlan &p, const GemmArgs &g,
                         cublasLtMatmulHeuristicResult_t *out, int n) {
  cublasLtMatmulPreference_t pref = nullptr;
  MIXP_CUBLAS_CHECK(cublasLtMatmulPreferenceCreate(&pref));
  uint64_t ws = L.workspace_bytes;
  cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws,
                                       sizeof ws);
  const uint32_t al_a = uint32_t(alignment(g.b)), al_b = uint32_t(alignment(g.a)),
                 al_c = uint32_t(alignment(g.c));
  cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, &al_a,
                                       sizeof al_a);
  cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, &al_b,
                                       sizeof al_b);
  cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, &al_c,
                                       sizeof al_c);
  cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, &al_c,
                                       sizeof al_c);
  int found = 0;
  cublasStatus_t hs = cublasLtMatmulAlgoGetHeuristic(L.lt, p.op, p.a, p.b, p.c, p.c, pref, n, out,
                                                     &found);
  cublasLtMatmulPreferenceDestroy(pref);
  return hs == CUBLAS_STATUS_SUCCESS ? found : 0;
}

// MIXP_CUBLASLT_AUTOTUNE=1 (read once per process): time the heuristic's
// candidates instead of taking its first. Off by default: the winner of a
// timing can change from run to run (clocks, other work on the GPU), and
// algorithms differ in how they split and add the k sum, so the same
// program would no longer give the same bits every run; the timing also
// waits for the GPU once per new shape (not inside a CUDA graph capture).
bool autotune_enabled() {
  static const bool on = [] {
    const char *e = std::getenv("MIXP_CUBLASLT_AUTOTUNE");
    return e != nullptr && std::strcmp(e, "1") == 0;
  }();
  return on;
}
constexpr int kCandidates = 8, kTimedRuns = 5;

// The index of the fastest candidate on this very problem: each runs once
// to warm up, then kTimedRuns times between two events. The products go to
// a scratch D with C's layout, so C is only read (as beta asks).
int fastest_candidate(CudaBackend &be, const GemmPlan &p, const GemmArgs &g, const GemmForm &f,
                      const cublasLtMatmulHeuristicResult_t *cand, int n) {
  CudaBackend::Libs &L = be.libs();
  const int64_t extent = (g.batch - 1) * g.c_batch + (g.m - 1) * f.lc.ld + g.n;
  Scratch d(be, size_t(extent) * dtype_size(g.dtype));
  Scratch sums(be, f.row_sums ? size_t(g.m) * dtype_size(g.dtype) : 0);
  if (f.row_sums)
    MIXP_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(p.op, CUBLASLT_MATMUL_DESC_BIAS_POINTER,
                                                     &sums.p, sizeof sums.p));
  const double alpha_d = g.alpha, beta_d = g.beta;
  const float alpha_f = g.alpha, beta_f = g.beta;
  const void *alpha = f.f64 ? static_cast<const void *>(&alpha_d) : &alpha_f;
  const void *beta = f.f64 ? static_cast<const void *>(&beta_d) : &beta_f;
  if (f.fused_bias)
    MIXP_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(p.op, CUBLASLT_MATMUL_DESC_BIAS_POINTER,
                                                     &g.bias, sizeof g.bias));
  cudaEvent_t ev[2];
  MIXP_CUDA_CHECK(cudaEventCreate(&ev[0]));
  MIXP_CUDA_CHECK(cudaEventCreate(&ev[1]));
  int best = -1;
  float best_ms = 0.0f;
  for (int i = 0; i < n; ++i) {
    auto run = [&] {
      return cublasLtMatmul(L.lt, p.op, alpha, g.b, p.a, g.a, p.b, beta, g.c, p.c, d.p, p.c,
                            &cand[i].algo, L.workspace, cand[i].workspaceSize, be.stream());
    };
    if (run() != CUBLAS_STATUS_SUCCESS) continue;  // a candidate that cannot run here
    cudaEventRecord(ev[0], be.stream());
    for (int r = 0; r < kTimedRuns; ++r) (void)run();
    cudaEventRecord(ev[1], be.stream());
    float ms = 0.0f;
    if (cudaEventSynchronize(ev[1]) == cudaSuccess &&
        cudaEventElapsedTime(&ms, ev[0], ev[1]) == cudaSuccess && (best < 0 || ms < best_ms)) {
      best = i;
      best_ms = ms;
    }
  }
  be.note_host_sync();
  cudaEventDestroy(ev[0]);
  cudaEventDestroy(ev[1]);
  return best < 0 ? 0 : best;  // none ran: the heuristic's first, whose call will say why
}

// A new plan; one without descriptors (p.op null) means "fall back to the
// classic GEMM".
GemmPlan make_plan(CudaBackend &be, const GemmArgs &g, const GemmForm &f) {
  GemmPlan p;
  try {
    describe_matmul(p, f);
    p.a = make_layout(f.dt, f.la, g.batch, g.b_batch);
    p.b = make_layout(f.dt, f.lb, g.batch, g.a_batch);
    p.c = make_layout(f.dt, f.lc, g.batch, g.c_batch);
    cublasLtMatmulHeuristicResult_t cand[kCandidates] = {};
    const int n = heuristic_candidates(be.libs(), p, g, cand, autotune_enabled() ? kCandidates : 1);
    // No cuBLASLt kernel for this combination (e.g. a fused bias on F64):
    // the plan stays without descriptors and the call falls back.
    if (n == 0) {
      destroy_plan(p);
      return p;
    }
    const int pick = n > 1 ? fastest_candidate(be, p, g, f, cand, n) : 0;
    p.algo = cand[pick].algo;
    p.workspace = cand[pick].workspaceSize;
  } catch (const Error &e) {
    // A combination cuBLASLt refuses to describe (e.g. a fused bias on
    // F64) falls back like one without an algorithm; only running out of
    // memory is an error here.
    destroy_plan(p);
    if (e.status() == MIXP_ERR_OUT_OF_MEMORY) throw;
  }
  return p;
}

}  // namespace

void destroy_gemm_plans(CudaBackend::Libs &libs) noexcept {
  for (auto &kv : libs.gemm_plans) destroy_plan(kv.second);
  libs.gemm_plans.clear();
}

void CudaBackend::gemm(const GemmArgs &g) {
  if (g.batch <= 0 || g.m <= 0 || g.n <= 0) return;
  if (g.batch > INT32_MAX) {
    // cuBLASLt's batch count is an int32: run the batch in pieces.
    const size_t es = dtype_size(g.dtype);
    for (int64_t b0 = 0; b0 < g.batch; b0 += INT32_MAX) {
      GemmArgs piece = g;
      piece.batch = std::min<int64_t>(INT32_MAX, g.batch - b0);
      piece.a = static_cast<const char *>(g.a) + size_t(b0 * g.a_batch) * es;
      piece.b = static_cast<const char *>(g.b) + size_t(b0 * g.b_batch) * es;
      piece.c = static_cast<char *>(g.c) + size_t(b0 * g.c_batch) * es;
      gemm(piece);
    }
    return;
  }
  if (g.k <= 0) {  // empty sum: C = beta * C (+ bias)
    beta_bias(*this, g, g.beta != 0.0f, double(g.beta));
    return;
  }
  Libs &L = libs();
  const GemmForm f = form_of(g);
  const GemmKey key = key_of(g, f);
  auto it = L.gemm_plans.find(key);
  if (it == L.gemm_plans.end()) it = L.gemm_plans.emplace(key, make_plan(*this, g, f)).first;
  const GemmPlan &p = it->second;
  const double alpha_d = g.alpha, beta_d = g.beta;
  const float alpha_f = g.alpha, beta_f = g.beta;
  const void *alpha = f.f64 ? static_cast<const void *>(&alpha_d) : &alpha_f;
  const void *beta = f.f64 ? static_cast<const void *>(&beta_d) : &beta_f;

  if (p.op) {
    if (f.fused_bias)
      MIXP_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(p.op, CUBLASLT_MATMUL_DESC_BIAS_POINTER,
                                                       &g.bias, sizeof g.bias));
    MIXP_CUBLAS_CHECK(cublasLtMatmul(L.lt, p.op, alpha, g.b, p.a, g.a, p.b, beta, g.c, p.c, g.c,
                                     p.c, &p.algo, L.workspace, p.workspace, stream()));
  } else {
    // Fallback: the classic strided-batched GEMM (its 64-bit API).
    const cublasGemmAlgo_t algo = CUBLAS_GEMM_DEFAULT;
    MIXP_CUBLAS_CHECK(cublasSetMathMode(L.blas, f.tf32 ? CUBLAS_TF32_TENSOR_OP_MATH : CUBLAS_DEFAULT_MATH));
    MIXP_CUBLAS_CHECK(cublasGemmStridedBatchedEx_64(
        L.blas, f.la.op, f.lb.op, g.n, g.m, g.k, alpha, g.b, f.dt, f.la.ld, g.batch > 1 ? g.b_batch : 0,
        g.a, f.dt, f.lb.ld, g.batch > 1 ? g.a_batch : 0, beta, g.c, f.dt, f.lc.ld,
        g.batch > 1 ? g.c_batch : 0, g.batch, f.compute, algo));
  }
  // A bias the epilogue did not add (no plan, or an unaligned bias).
  if (g.bias && !(p.op && f.fused_bias)) beta_bias(*this, g, true, 1.0);
}

// BGRADB: F16/BF16/F32 single products whose row-sum vector cuBLASLt's
// vectorised epilogue can write; a layout without such a kernel (the
// heuristic finds none) is declined and cached as such.
bool CudaBackend::gemm_row_sums(const GemmArgs &g, void *row_sums) {
  if (g.batch != 1 || g.bias || g.m <= 0 || g.n <= 0 || g.k <= 0 || g.dtype == MIXP_F64 ||
      alignment(row_sums) < 16)
    return false;
  Libs &L = libs();
  GemmForm f = form_of(g);
  f.row_sums = true;
  const GemmKey key = key_of(g, f);
  auto it = L.gemm_plans.find(key);
  if (it == L.gemm_plans.end()) it = L.gemm_plans.emplace(key, make_plan(*this, g, f)).first;
  const GemmPlan &p = it->second;
  if (!p.op) return false;
  const float alpha = g.alpha, beta = g.beta;
  MIXP_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(p.op, CUBLASLT_MATMUL_DESC_BIAS_POINTER,
                                                   &row_sums, sizeof row_sums));
  MIXP_CUBLAS_CHECK(cublasLtMatmul(L.lt, p.op, &alpha, g.b, p.a, g.a, p.b, &beta, g.c, p.c, g.c, p.c,
                                   &p.algo, L.workspace, p.workspace, stream()));
  return true;
}

}  // namespace mixp::cuda
