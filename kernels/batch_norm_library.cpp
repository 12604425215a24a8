// Training batch norm as one cuDNN call each way (the declinable kernels
// Backend::batch_norm_train_forward/_backward): the forward computes the
// batch statistics, normalises and blends the running statistics in one
// cudnnBatchNormalizationForwardTrainingEx, where the core kernels
// (norm.cu) take about ten launches and read x three times; the backward is
// one cudnnBatchNormalizationBackwardEx. This is what PyTorch runs on CUDA.
//
// What differs from the core kernels, and is documented as such
// (docs/amp-op-policy.md): the statistics are accumulated in fp32 by cuDNN,
// not in double; NHWC half data (inner == 1) uses
// CUDNN_BATCHNORM_SPATIAL_PERSISTENT, as PyTorch picks it for channels_last,
// everything else CUDNN_BATCHNORM_SPATIAL. Declined, so the op composes the
// core kernels: F64 (their double statistics are the reference), eps below
// CUDNN_BN_MIN_EPSILON, a backward without weight, sizes past cuDNN's int,
// statistics not in F32, and cases whose backward would need the forward's
// reserve space (the autograd node keeps mean and invstd only).
//
// cuDNN 9 marks this legacy API deprecated in favour of its graph API; it is
// still shipped and is what PyTorch 2.11 calls.
#include <cudnn.h>

#include <climits>
#include <cstdint>

#include "core/dtype.hpp"
#include "libs.hpp"

#if defined(__GNUC__)
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
#endif

namespace mixp::cuda {
namespace {

// The tensor descriptors of one call, destroyed with it.
struct BnDescs {
  cudnnTensorDescriptor_t x = nullptr, stat = nullptr;
  ~BnDescs() {
    if (stat) cudnnDestroyTensorDescriptor(stat);
    if (x) cudnnDestroyTensorDescriptor(x);
  }
};

bool fits_int(int64_t v) { return v >= 1 && v <= INT_MAX; }

bool dnn_type(DType t, cudnnDataType_t *out) {
  switch (t) {
    case MIXP_F16: *out = CUDNN_DATA_HALF; return true;
    case MIXP_BF16: *out = CUDNN_DATA_BFLOAT16; return true;
    case MIXP_F32: *out = CUDNN_DATA_FLOAT; return true;
    default: return false;
  }
}

// Whether cuDNN takes the case at all; fills the descriptors and the mode.
// [outer, c, inner] is NCHW with H = inner, W = 1 (spatial statistics over
// N, H, W are the same sums), or NHWC with H = W = 1 when inner == 1.
bool describe(const BatchNormTrainArgs &a, BnDescs &d, cudnnBatchNormMode_t *mode) {
  cudnnDataType_t dt;
  if (!dnn_type(a.x.dtype, &dt) || a.mean.dtype != MIXP_F32 || a.invstd.dtype != MIXP_F32) return false;
  if (!fits_int(a.outer) || !fits_int(a.c) || !fits_int(a.inner) || a.outer * a.c * a.inner > INT_MAX)
    return false;
  const bool nhwc = a.inner == 1;
  MIXP_CUDNN_CHECK(cudnnCreateTensorDescriptor(&d.x));
  MIXP_CUDNN_CHECK(cudnnCreateTensorDescriptor(&d.stat));
  MIXP_CUDNN_CHECK(cudnnSetTensor4dDescriptor(d.x, nhwc ? CUDNN_TENSOR_NHWC : CUDNN_TENSOR_NCHW, dt,
                                              int(a.outer), int(a.c), int(a.inner), 1));
  MIXP_CUDNN_CHECK(cudnnSetTensor4dDescriptor(d.stat, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, 1, int(a.c), 1, 1));
  *mode = nhwc && a.x.dtype != MIXP_F32 ? CUDNN_BATCHNORM_SPATIAL_PERSISTENT : CUDNN_BATCHNORM_SPATIAL;
  return true;
}

// A status that means "cuDNN does not run this case" rather than a failure:
// it is returned before anything is launched.
bool declined(cudnnStatus_t st) { return st == CUDNN_STATUS_NOT_SUPPORTED || st == CUDNN_STATUS_BAD_PARAM; }

// A contiguous [c] F32 vector at p (scratch, or cuDNN's parameter gradients).
View f32_vector(void *p, int64_t c) {
  View v;
  v.data = p;
  v.dtype = MIXP_F32;
  v.ndim = 1;
  v.shape[0] = c;
  v.strides[0] = 1;
  return v;
}

}  // namespace

bool CudaBackend::batch_norm_train_forward(const BatchNormTrainArgs &a) {
  if (a.eps < CUDNN_BN_MIN_EPSILON || (a.running_mean == nullptr) != (a.running_var == nullptr)) return false;
  for (const View *p : {a.weight, a.bias, a.running_mean, a.running_var})
    if (p && p->dtype != MIXP_F32) return false;
  BnDescs d;
  cudnnBatchNormMode_t mode;
  if (!describe(a, d, &mode)) return false;
  cudnnHandle_t h = cudnn_handle(*this);
  const cudnnBatchNormOps_t ops = CUDNN_BATCHNORM_OPS_BN;
  size_t ws_bytes = 0, reserve_bytes = 0;
  cudnnStatus_t st = cudnnGetBatchNormalizationForwardTrainingExWorkspaceSize(h, mode, ops, d.x, nullptr, d.x,
                                                                             d.stat, nullptr, &ws_bytes);
  if (st == CUDNN_STATUS_SUCCESS)
    st = cudnnGetBatchNormalizationTrainingExReserveSpaceSize(h, mode, ops, nullptr, d.x, &reserve_bytes);
  if (declined(st) || reserve_bytes != 0) return false;
  MIXP_CUDNN_CHECK(st);
  const int64_t c = a.c;
  // Missing weight/bias (1 and 0) and running statistics (blended and
  // dropped): [c] F32 scratch, 4 slots at 256-byte boundaries.
  const size_t slot = (size_t(c) * sizeof(float) + 255) & ~size_t(255);
  const bool own_stats = a.running_mean == nullptr;
  Scratch extra(*this, (a.weight ? 0 : slot) + (a.bias ? 0 : slot) + (own_stats ? 2 * slot : 0));
  char *next = extra.as<char>();
  auto take = [&](size_t n) {
    void *p = next;
    next += n;
    return p;
  };
  const void *w = a.weight ? a.weight->data : take(slot);
  const void *b = a.bias ? a.bias->data : take(slot);
  void *rm = own_stats ? take(slot) : a.running_mean->data;
  void *rv = own_stats ? take(slot) : a.running_var->data;
  if (!a.weight) fill(f32_vector(const_cast<void *>(w), c), 1.0);
  if (!a.bias) fill(f32_vector(const_cast<void *>(b), c), 0.0);
  if (own_stats) {
    fill(f32_vector(rm, c), 0.0);
    fill(f32_vector(rv, c), 1.0);
  }
  Scratch ws(*this, ws_bytes);
  const float one = 1.0f, zero = 0.0f;
  st = cudnnBatchNormalizationForwardTrainingEx(h, mode, ops, &one, &zero, d.x, a.x.data, nullptr, nullptr, d.x,
                                                a.y.data, d.stat, w, b, a.momentum, rm, rv, a.eps, a.mean.data,
                                                a.invstd.data, nullptr, ws.p, ws_bytes, nullptr, 0);
  if (declined(st)) return false;
  MIXP_CUDNN_CHECK(st);
  return true;
}

bool CudaBackend::batch_norm_train_backward(const BatchNormTrainArgs &a) {
  if (!a.weight || a.weight->dtype != MIXP_F32) return false;
  for (const View *g : {a.gw, a.gb})
    if (g && g->dtype != MIXP_F64) return false;
  BnDescs d;
  cudnnBatchNormMode_t mode;
  if (!describe(a, d, &mode)) return false;
  cudnnHandle_t h = cudnn_handle(*this);
  const cudnnBatchNormOps_t ops = CUDNN_BATCHNORM_OPS_BN;
  size_t ws_bytes = 0;
  cudnnStatus_t st = cudnnGetBatchNormalizationBackwardExWorkspaceSize(h, mode, ops, d.x, nullptr, d.x, nullptr,
                                                                      d.x, d.stat, nullptr, &ws_bytes);
  if (declined(st)) return false;
  MIXP_CUDNN_CHECK(st);
  const int64_t c = a.c;
  // cuDNN writes every output: the weight and bias gradients in F32 (then
  // widened into the F64 gw/gb the contract asks for), gx into scratch
  // when the op does not want it.
  const size_t slot = (size_t(c) * sizeof(float) + 255) & ~size_t(255);
  const size_t x_bytes = size_t(a.outer * a.c * a.inner) * dtype_size(a.x.dtype);
  Scratch grads(*this, 2 * slot + (a.gx ? 0 : x_bytes));
  char *base = grads.as<char>();
  void *gw32 = base, *gb32 = base + slot;
  void *gx = a.gx ? a.gx->data : base + 2 * slot;
  Scratch ws(*this, ws_bytes);
  const float one = 1.0f, zero = 0.0f;
  // With the forward's mean and invstd given, cuDNN does not use epsilon;
  // it must still be a valid value.
  st = cudnnBatchNormalizationBackwardEx(h, mode, ops, &one, &zero, &one, &zero, d.x, a.x.data, nullptr, nullptr,
                                         d.x, a.gy.data, nullptr, nullptr, d.x, gx, d.stat, a.weight->data,
                                         nullptr, gw32, gb32, CUDNN_BN_MIN_EPSILON, a.mean.data,
                                         a.invstd.data, nullptr, ws.p, ws_bytes, nullptr, 0);
  if (declined(st)) return false;
  MIXP_CUDNN_CHECK(st);
  if (a.gw) copy(f32_vector(gw32, c), *a.gw);
  if (a.gb) copy(f32_vector(gb32, c), *a.gb);
  return true;
}

}  // namespace mixp::cuda
