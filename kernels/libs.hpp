// CudaBackend::Libs: the library handles, the memory pool and the scratch a
// CUDA session owns (created in runtime.cu, used by gemm.cu and conv.cu).
#pragma once
#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <cudnn.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>

#include "cuda_backend.hpp"

namespace mixp::cuda {

// Throws MIXP_ERR_DEVICE naming a failed cuBLAS(Lt) / cuDNN call.
[[noreturn]] void fail_cublas(cublasStatus_t st, const char *what, const char *file, int line);
[[noreturn]] void fail_cudnn(cudnnStatus_t st, const char *what, const char *file, int line);
#define MIXP_CUBLAS_CHECK(call)                                                          \
  do {                                                                                   \
    cublasStatus_t mixp_st_ = (call);                                                    \
    if (mixp_st_ != CUBLAS_STATUS_SUCCESS)                                               \
      ::mixp::cuda::fail_cublas(mixp_st_, #call, __FILE__, __LINE__);                    \
  } while (0)
#define MIXP_CUDNN_CHECK(call)                                                           \
  do {                                                                                   \
    cudnnStatus_t mixp_st_ = (call);                                                     \
    if (mixp_st_ != CUDNN_STATUS_SUCCESS)                                                \
      ::mixp::cuda::fail_cudnn(mixp_st_, #call, __FILE__, __LINE__);                     \
  } while (0)

// The key of a cached plan (cuBLASLt GEMMs, cuDNN convolutions, fused
// attention): the N words a plan depends on (shape, dtypes, layouts, flags,
// pointer alignments), compared whole and hashed FNV-1a.
template <size_t N>
struct PlanKey {
  std::array<int64_t, N> v{};
  bool operator==(const PlanKey &o) const noexcept { return v == o.v; }
};
struct PlanKeyHash {
  template <size_t N>
  size_t operator()(const PlanKey<N> &k) const noexcept {
    uint64_t h = 1469598103934665603ull;
    for (int64_t x : k.v) {
      h ^= uint64_t(x);
      h *= 1099511628211ull;
    }
    return size_t(h);
  }
};

// One cached cuBLASLt plan: everything that depends only on the problem's
// shape, dtypes, layouts, epilogue and pointer alignments (the key), so the
// heuristic query runs once per distinct GEMM.
using GemmKey = PlanKey<16>;
struct GemmPlan {
  cublasLtMatmulDesc_t op = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr;
  cublasLtMatmulAlgo_t algo{};
  size_t workspace = 0;
};

// One cached convolution plan (conv_plan.cu): the cuDNN descriptors of one
// direction of one convolution, the algorithm chosen for it and its
// workspace size, keyed by geometry, dtype, layout, direction and the
// session's choice mode (benchmark, deterministic), so nothing is rebuilt
// or queried per call.
using ConvKey = PlanKey<22>;

// The fused attention's cached cuDNN frontend plans (attention.cpp; only
// that file sees the frontend's types).
struct AttentionPlans;

struct ConvPlan {
  cudnnTensorDescriptor_t x = nullptr, y = nullptr;
  cudnnFilterDescriptor_t w = nullptr;
  cudnnConvolutionDescriptor_t conv = nullptr;
  int algo = -1;  // a cudnnConvolution*Algo_t, or kConvDirect (conv_plan.hpp)
  size_t workspace = 0;
};

struct CudaBackend::Libs {
  int sm = 0;                      // compute capability, major * 10 + minor
  std::string description;         // one line: name, sm, memory, versions
  cudaMemPool_t pool = nullptr;    // this session's stream-ordered pool
  cublasLtHandle_t lt = nullptr;
  cublasHandle_t blas = nullptr;
  cudnnHandle_t dnn = nullptr;     // created on first use (cudnn_handle)

  // cuBLASLt workspace: 32 MiB on sm_90 (what its Hopper kernels want), 4 MiB
  // elsewhere; plain cudaMalloc, outside the pool and its statistics.
  void *workspace = nullptr;
  size_t workspace_bytes = 0;
  std::unordered_map<GemmKey, GemmPlan, PlanKeyHash> gemm_plans;
  std::unordered_map<ConvKey, ConvPlan, PlanKeyHash> conv_plans;
  std::shared_ptr<AttentionPlans> attention;  // null until the first fused attention

  // Pinned staging for host->device copies (the data loader's batches): a
  // ring of slots, each reused once the copy that last used it has finished.
  static constexpr int kStagingSlots = 4;
  static constexpr size_t kStagingSlotBytes = size_t(4) << 20;
  void *staging[kStagingSlots] = {};
  cudaEvent_t staging_done[kStagingSlots] = {};
  int staging_next = 0;

  ~Libs();  // runtime.cu (gemm plans are destroyed by gemm.cu's helper)
};

// runtime.cu: the session's cuDNN handle on its stream, created on first use
// (convolutions, fused attention).
cudnnHandle_t cudnn_handle(CudaBackend &be);

// gemm.cu: frees every cached cuBLASLt plan.
void destroy_gemm_plans(CudaBackend::Libs &libs) noexcept;
// conv_plan.cu: frees every cached convolution plan's descriptors.
void destroy_conv_plans(CudaBackend::Libs &libs) noexcept;

}  // namespace mixp::cuda
