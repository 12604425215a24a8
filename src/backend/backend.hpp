// The backend interface: everything an operation needs from a device.
// Ops (src/ops/) validate shapes and dtypes, record autograd and call these
// kernels; kernels know nothing of autograd. The CPU backend is always built;
// the CUDA backend (kernels/, libmixp_cuda.so) implements the same interface.
//
// Conventions for every kernel: a View describes memory on this backend's
// device; strides are in elements and may be 0 (broadcast). "Contiguous"
// parameters are row-major with no gaps; ops guarantee it before calling.
// Half types are loaded to fp32, computed there, and rounded to nearest even.
#pragma once
#include <cstddef>
#include <cstdint>

#include "core/dtype.hpp"

struct mixp_tensor;

namespace mixp {

struct View {
  void *data = nullptr;
  DType dtype = MIXP_F32;
  int ndim = 0;
  int64_t shape[MIXP_MAX_DIMS] = {};
  int64_t strides[MIXP_MAX_DIMS] = {};
  int64_t numel() const noexcept {
    int64_t n = 1;
    for (int i = 0; i < ndim; ++i) n *= shape[i];
    return n;
  }
};

enum class UnaryOp {
  Neg, Exp, Log, Sqrt, Relu, GeluErf, GeluTanh, Sigmoid, Tanh,
  Pow,         // x^s
  AddScalar,   // x + s
  MulScalar,   // x * s
  RsubScalar,  // s - x
  RdivScalar   // s / x
};

enum class BinaryOp { Add, Sub, Mul, Div };

// One batched matrix product C[b] = alpha * A[b] x B[b] + beta * C[b], where
// A[b] is m x k with element (i,l) at a + b*a_batch + i*a_rs + l*a_cs, and
// likewise for B (k x n) and C (m x n, c_cs == 1). One of each operand's
// row/column strides is 1. All three share `dtype`; accumulation is fp32
// (fp64 for F64).
struct GemmArgs {
  DType dtype = MIXP_F32;
  int64_t batch = 1, m = 0, n = 0, k = 0;
  const void *a = nullptr;
  int64_t a_batch = 0, a_rs = 0, a_cs = 0;
  const void *b = nullptr;
  int64_t b_batch = 0, b_rs = 0, b_cs = 0;
  void *c = nullptr;
  int64_t c_batch = 0, c_rs = 0;
  float alpha = 1.0f, beta = 0.0f;
};

class Backend {
 public:
  virtual ~Backend() = default;
  virtual const char *name() const noexcept = 0;

  // --- memory -------------------------------------------------------------
  // Throws Error(MIXP_ERR_OUT_OF_MEMORY) on failure.
  virtual void *allocate(size_t nbytes) = 0;
  virtual void deallocate(void *p, size_t nbytes) noexcept = 0;
  virtual void copy_from_host(void *dst, const void *src, size_t nbytes) = 0;
  virtual void copy_to_host(void *dst, const void *src, size_t nbytes) = 0;
  // Blocks until queued work is done (no-op on the CPU).
  virtual void synchronize() {}

  // --- elementwise --------------------------------------------------------
  // dst = convert(src) elementwise; same shape, any strides, any dtypes
  // (float->int truncates toward zero; float->half rounds to nearest even).
  virtual void copy(const View &src, const View &dst) = 0;
  // dst[...] = value converted to dst's dtype; any strides.
  virtual void fill(const View &dst, double value) = 0;
  // y = op(x, s); x, y contiguous, same float dtype and numel.
  virtual void unary(UnaryOp op, const View &x, const View &y, double s) = 0;
  // gx = gy * d op(x)/dx; x (input), y (output of the forward), gy, gx
  // contiguous, same dtype and numel.
  virtual void unary_backward(UnaryOp op, const View &x, const View &y, const View &gy,
                              const View &gx, double s) = 0;
  // out = a op b; a and b have out's shape with broadcast (0) strides; out
  // contiguous; same float dtype.
  virtual void binary(BinaryOp op, const View &a, const View &b, const View &out) = 0;

  // --- reductions and row-wise ops ------------------------------------------
  // out[r] = scale * sum_c x[r, c]; x contiguous [rows, cols]; out [rows].
  virtual void sum_rows(const View &x, int64_t rows, int64_t cols, const View &out,
                        double scale) = 0;
  // Along the middle axis of a contiguous [outer, n, inner] x: values (may be
  // null) and I64 indices (first maximum), both contiguous [outer, inner].
  virtual void max_dim(const View &x, int64_t outer, int64_t n, int64_t inner,
                       const View *values, const View &indices) = 0;
  // (log_)softmax along the middle axis of contiguous [outer, n, inner].
  virtual void softmax(const View &x, int64_t outer, int64_t n, int64_t inner, bool log,
                       const View &y) = 0;
  // gx from the forward output y and gy (all contiguous [outer, n, inner]).
  virtual void softmax_backward(const View &y, const View &gy, int64_t outer, int64_t n,
                                int64_t inner, bool log, const View &gx) = 0;
  // Per-row cross-entropy of contiguous logits [n, c] against I64 targets:
  // losses ([n]; F64 for F64 logits, else F32) gets -log softmax(logits)[target],
  // 0 where ignored.
  virtual void cross_entropy(const View &logits, const View &target, int64_t n, int64_t c,
                             int64_t ignore_index, const View &losses) = 0;
  // glogits[i, :] = row_scale[i] * (softmax(logits[i]) - onehot(target[i])),
  // 0 for ignored rows; row_scale [n] (the incoming per-row gradient, same
  // dtype as the losses buffer).
  virtual void cross_entropy_backward(const View &logits, const View &target, int64_t n,
                                      int64_t c, int64_t ignore_index, const View &row_scale,
                                      const View &glogits) = 0;

  // --- random -------------------------------------------------------------
  // out[i] = i-th uniform [0,1) (or normal) of the Philox stream (seed,
  // offset); contiguous float out.
  virtual void rand_uniform(const View &out, uint64_t seed, uint64_t offset) = 0;
  virtual void rand_normal(const View &out, uint64_t seed, uint64_t offset) = 0;
  // mask[i] = uniform_i >= p (U8), contiguous.
  virtual void dropout_mask(const View &mask, double p, uint64_t seed, uint64_t offset) = 0;

  // --- matrix products ------------------------------------------------------
  virtual void gemm(const GemmArgs &args) = 0;
};

// A View of a tensor's current geometry.
View view_of(const mixp_tensor &t) noexcept;

}  // namespace mixp
