// The scaled fp8 product on the GPU (Backend::scaled_gemm; the contract is
// ScaledGemmArgs in backend/backend.hpp): cuBLASLt's FP8 GEMM, sm_89+.
//
// cuBLASLt's FP8 kernels take one form only, "TN": its A transposed, its B
// not. Row-major D = A B is, column-major, D^T = B^T A^T; so cuBLASLt's A is
// our B stored as Bt [n, k] row-major (each output column's K values
// contiguous) and its B our A stored [m, k] row-major. An operand that is
// not already in that layout (B usually is not) is copied into it by
// to_row_major_fp8, a tiled transpose. The scales stay on the device: a
// one-thread kernel checks them there (NaN for a scale that is not finite
// and positive) and cuBLASLt reads the checked copies through its scale
// pointers. amax is reduced from D as stored, with an integer atomicMax on
// the magnitudes' bit patterns (order-independent, so reproducible).
#include <cmath>

#include "common.cuh"
#include "libs.hpp"

namespace mixp::cuda {
namespace {

constexpr int kTile = 32, kTileRows = 8;

// dst[r * cols + c] = src[r * rs + c * cs] for an rows x cols matrix of
// bytes. The tile is read with consecutive threads along r, so a source
// whose rows are contiguous columns (rs == 1: a row-major B seen as Bt)
// is read and written coalesced.
__global__ void to_row_major_fp8(const uint8_t *__restrict__ src, int64_t rs, int64_t cs,
                                 uint8_t *__restrict__ dst, int64_t rows, int64_t cols) {
  __shared__ uint8_t tile[kTile][kTile + 1];
  const int64_t r0 = int64_t(blockIdx.y) * kTile, c0 = int64_t(blockIdx.x) * kTile;
  for (int i = threadIdx.y; i < kTile; i += kTileRows) {
    const int64_t r = r0 + threadIdx.x, c = c0 + i;
    if (r < rows && c < cols) tile[i][threadIdx.x] = src[r * rs + c * cs];
  }
  __syncthreads();
  for (int i = threadIdx.y; i < kTile; i += kTileRows) {
    const int64_t r = r0 + i, c = c0 + threadIdx.x;
    if (r < rows && c < cols) dst[r * cols + c] = tile[threadIdx.x][i];
  }
}

// checked[0] = scale_b, checked[1] = scale_a (cuBLASLt's A is our B), or
// NaN in both when either is not finite and positive.
__global__ void check_scales(const float *scale_a, const float *scale_b, float *checked) {
  const float sa = *scale_a, sb = *scale_b;
  const bool ok = isfinite(sa) && sa > 0.0f && isfinite(sb) && sb > 0.0f;
  checked[0] = ok ? sb : __int_as_float(0x7fc00000);
  checked[1] = ok ? sa : __int_as_float(0x7fc00000);
}

// *amax_bits = max over D of the bits of |d| (a NaN's quiet bits exceed
// inf's, so a NaN wins); *amax_bits starts at 0.
template <class T>
__global__ void amax_kernel(const T *d, int64_t n, unsigned *amax_bits) {
  unsigned best = 0;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) {
    const float v = fabsf(ld(d[i]));
    const unsigned bits = isnan(v) ? 0x7fc00000u : __float_as_uint(v);
    best = bits > best ? bits : best;
  }
  for (int off = 16; off > 0; off >>= 1) {
    const unsigned o = __shfl_down_sync(0xffffffffu, best, off);
    best = o > best ? o : best;
  }
  if ((threadIdx.x & 31) == 0) atomicMax(amax_bits, best);
}

cudaDataType_t fp8_type(DType t) { return t == MIXP_F8E4M3 ? CUDA_R_8F_E4M3 : CUDA_R_8F_E5M2; }
cudaDataType_t out_type(DType t) {
  return t == MIXP_F32 ? CUDA_R_32F : t == MIXP_F16 ? CUDA_R_16F : CUDA_R_16BF;
}

// src (rows x cols, strides rs/cs) as a row-major matrix: src itself when it
// is one, else a copy in `buf`.
const void *row_major(CudaBackend &be, const View &v, int64_t rows, int64_t cols, int64_t rs, int64_t cs,
                      uint8_t *buf) {
  if (cs == 1 && rs == cols) return v.data;
  const dim3 grid(unsigned((cols + kTile - 1) / kTile), unsigned((rows + kTile - 1) / kTile));
  to_row_major_fp8<<<grid, dim3(kTile, kTileRows), 0, be.stream()>>>(static_cast<const uint8_t *>(v.data), rs,
                                                                      cs, buf, rows, cols);
  MIXP_CUDA_LAUNCHED();
  return buf;
}

void check_supported(int sm, const ScaledGemmArgs &g) {
  if (sm < 89)
    fail(MIXP_ERR_UNSUPPORTED, "mixp_scaled_matmul: fp8 products need an sm_89+ GPU (Ada, Hopper or newer) for",
         " their FP8 Tensor Cores; this one is sm_", sm, " (a CPU session computes them exactly)");
  if (g.m <= 0 || g.n <= 0 || g.k <= 0 || g.m % 16 || g.n % 16 || g.k % 16)
    fail(MIXP_ERR_UNSUPPORTED, "mixp_scaled_matmul: on the GPU M, N and K must be positive multiples of 16",
         " (cuBLASLt's FP8 kernels), got M = ", g.m, ", N = ", g.n, ", K = ", g.k);
}

void set_attr(cublasLtMatmulDesc_t d, cublasLtMatmulDescAttributes_t a, const void *v, size_t n) {
  MIXP_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(d, a, v, n));
}

// Descriptors of one call, destroyed with it.
struct LtCall {
  cublasLtMatmulDesc_t op = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, d = nullptr;
  cublasLtMatmulPreference_t pref = nullptr;
  ~LtCall() {
    if (pref) cublasLtMatmulPreferenceDestroy(pref);
    if (d) cublasLtMatrixLayoutDestroy(d);
    if (b) cublasLtMatrixLayoutDestroy(b);
    if (a) cublasLtMatrixLayoutDestroy(a);
    if (op) cublasLtMatmulDescDestroy(op);
  }
};

// D^T [n, m] = (Bt [n, k])^T-form x A^T, as cuBLASLt's TN product.
void run_lt(CudaBackend::Libs &L, cudaStream_t stream, const ScaledGemmArgs &g, const void *bt, const void *a,
            const float *checked, const void *bias) {
  LtCall c;
  MIXP_CUBLAS_CHECK(cublasLtMatmulDescCreate(&c.op, CUBLAS_COMPUTE_32F, CUDA_R_32F));
  const cublasOperation_t t = CUBLAS_OP_T, n = CUBLAS_OP_N;
  set_attr(c.op, CUBLASLT_MATMUL_DESC_TRANSA, &t, sizeof t);
  set_attr(c.op, CUBLASLT_MATMUL_DESC_TRANSB, &n, sizeof n);
  const float *sa_lt = checked, *sb_lt = checked + 1;
  set_attr(c.op, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, &sa_lt, sizeof sa_lt);
  set_attr(c.op, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, &sb_lt, sizeof sb_lt);
  const int8_t fast = g.fast_accum ? 1 : 0;
  set_attr(c.op, CUBLASLT_MATMUL_DESC_FAST_ACCUM, &fast, sizeof fast);
  if (bias) {
    const cublasLtEpilogue_t ep = CUBLASLT_EPILOGUE_BIAS;
    const cudaDataType_t bt_type = g.bias.dtype == MIXP_F16 ? CUDA_R_16F : CUDA_R_16BF;
    set_attr(c.op, CUBLASLT_MATMUL_DESC_EPILOGUE, &ep, sizeof ep);
    set_attr(c.op, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &bt_type, sizeof bt_type);
    set_attr(c.op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof bias);
  }
  // cuBLASLt's A: k x n column-major (ld k), transposed; its B: k x m (ld k).
  MIXP_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&c.a, fp8_type(g.b.dtype), uint64_t(g.k), uint64_t(g.n), g.k));
  MIXP_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&c.b, fp8_type(g.a.dtype), uint64_t(g.k), uint64_t(g.m), g.k));
  MIXP_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&c.d, out_type(g.d.dtype), uint64_t(g.n), uint64_t(g.m), g.n));
  MIXP_CUBLAS_CHECK(cublasLtMatmulPreferenceCreate(&c.pref));
  const uint64_t ws = L.workspace_bytes;
  MIXP_CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(c.pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws,
                                                         sizeof ws));
  // Several candidates, tried in the heuristic's order: a candidate may be
  // refused at launch (cuBLASLt checks some of its requirements only there),
  // and the next one then runs. A refused launch queues nothing.
  constexpr int kCandidates = 8;
  cublasLtMatmulHeuristicResult_t results[kCandidates] = {};
  int found = 0;
  const cublasStatus_t hs =
      cublasLtMatmulAlgoGetHeuristic(L.lt, c.op, c.a, c.b, c.d, c.d, c.pref, kCandidates, results, &found);
  if (hs != CUBLAS_STATUS_SUCCESS || found == 0)
    fail(MIXP_ERR_UNSUPPORTED, "mixp_scaled_matmul: cuBLASLt has no FP8 kernel for M = ", g.m, ", N = ", g.n,
         ", K = ", g.k, " (", dtype_name(g.a.dtype), " x ", dtype_name(g.b.dtype), " -> ", dtype_name(g.d.dtype),
         bias ? " with bias" : "", ")");
  const float one = 1.0f, zero = 0.0f;
  cublasStatus_t first = CUBLAS_STATUS_SUCCESS;
  // The whole workspace, not the candidate's workspaceSize: on an H200
  // (cuBLASLt 13.1) both FP8 kernels the heuristic proposed for 16x16x16
  // (algorithm 66, clustered) asked for 0 bytes and were refused at launch
  // with NOT_SUPPORTED when given 0, while PyTorch's _scaled_mm, passing its
  // whole workspace, ran the same algorithm on the same shape.
  for (int i = 0; i < found; ++i) {
    const cublasStatus_t st = cublasLtMatmul(L.lt, c.op, &one, bt, c.a, a, c.b, &zero, g.d.data, c.d, g.d.data,
                                             c.d, &results[i].algo, L.workspace, L.workspace_bytes, stream);
    if (st == CUBLAS_STATUS_SUCCESS) return;
    if (first == CUBLAS_STATUS_SUCCESS) first = st;
  }
  fail(MIXP_ERR_DEVICE, "mixp_scaled_matmul: cuBLASLt refused all ", found, " FP8 kernels it proposed for M = ",
       g.m, ", N = ", g.n, ", K = ", g.k, " (", dtype_name(g.a.dtype), " x ", dtype_name(g.b.dtype), " -> ",
       dtype_name(g.d.dtype), bias ? " with bias" : "", "); the first said ", cublasGetStatusName(first), " (",
       cublasGetStatusString(first), ")");
}

}  // namespace

void CudaBackend::scaled_gemm(const ScaledGemmArgs &g) {
  Libs &L = libs();
  check_supported(L.sm, g);
  const int64_t m = g.m, n = g.n, k = g.k;
  // Scratch: Bt [n, k], A [m, k] (when they need copying), the two checked
  // scales and an aligned bias, each at a 256-byte boundary.
  auto up = [](size_t x) { return (x + 255) & ~size_t(255); };
  const size_t bt_bytes = up(size_t(n * k)), a_bytes = up(size_t(m * k)), sc_bytes = 256;
  const size_t bias_bytes = g.bias.data ? up(size_t(n) * 2) : 0;
  Scratch s(*this, bt_bytes + a_bytes + sc_bytes + bias_bytes);  // common.cuh: stream-ordered
  uint8_t *base = s.as<uint8_t>();
  // Bt(r = j, c = l) = B(l, j): strides (b_cs, b_rs).
  const void *bt = row_major(*this, g.b, n, k, g.b.strides[1], g.b.strides[0], base);
  const void *a = row_major(*this, g.a, m, k, g.a.strides[0], g.a.strides[1], base + bt_bytes);
  float *checked = reinterpret_cast<float *>(base + bt_bytes + a_bytes);
  check_scales<<<1, 1, 0, stream()>>>(static_cast<const float *>(g.scale_a.data),
                                      static_cast<const float *>(g.scale_b.data), checked);
  MIXP_CUDA_LAUNCHED();
  const void *bias = g.bias.data;
  if (bias && reinterpret_cast<uintptr_t>(bias) % 16 != 0) {  // the epilogue reads 16-byte vectors
    void *aligned = base + bt_bytes + a_bytes + sc_bytes;
    MIXP_CUDA_CHECK(cudaMemcpyAsync(aligned, bias, size_t(n) * 2, cudaMemcpyDeviceToDevice, stream()));
    bias = aligned;
  }
  run_lt(L, stream(), g, bt, a, checked, bias);
  if (!g.amax.data) return;
  MIXP_CUDA_CHECK(cudaMemsetAsync(g.amax.data, 0, sizeof(float), stream()));
  dispatch_float_dt(g.d.dtype, "scaled_gemm amax", [&](auto tag) {
    using T = decltype(tag);
    amax_kernel<T><<<grid_for(m * n), kThreads, 0, stream()>>>(static_cast<const T *>(g.d.data), m * n,
                                                                 static_cast<unsigned *>(g.amax.data));
  });
  MIXP_CUDA_LAUNCHED();
}

}  // namespace mixp::cuda
