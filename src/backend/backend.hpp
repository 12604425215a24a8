// The backend interface: everything an operation needs from a device.
// Ops (src/ops/) validate shapes and dtypes, record autograd and call these
// kernels; kernels know nothing of autograd. The CPU backend is always built;
// the CUDA backend (kernels/, libmixp_cuda.so) implements the same interface.
// The whole contract is this folder's headers: this file, View
// (view.hpp), the optional capabilities (capabilities.hpp), the declinable
// kernels' arguments (declinable_args.hpp), the formulas
// (elementwise_formulas.hpp, host_device_math.hpp, stochastic_round.hpp),
// the optimizer arguments (optimizer_args.hpp), the loss-scale rule
// (loss_scale_rule.hpp), the plugin entry point (plugin.hpp) -- and the op
// enums of core/op_table.hpp.
//
// What a device must do and what it may decline. Backend's methods are the
// required core: memory and copies, casts and elementwise, reductions,
// GEMM, convolution and pooling, normalisation, embedding, random numbers,
// loss scaling and the optimizers' fused steps -- everything an op or an
// optimizer runs on any device, pure virtual (synchronize and host_syncs
// have the defaults of a device that queues nothing). Everything else is
// optional, in one of two forms, and every caller handles the decline:
//  - A capability is a family of methods that only make sense together
//    (DeviceCollectives, DeviceTimer, DeviceMemoryStats: capabilities.hpp).
//    Backend hands it out through an accessor (collectives(), timer(),
//    memory_stats()) whose default returns null: a device has the whole
//    family or none of it, and a caller cannot reach a method the device
//    lacks without the null check. The caller then falls back (the host
//    transport, the host clock, the session's tensor counts) or fails with
//    MIXP_ERR_UNSUPPORTED naming the public function and the device.
//  - A declinable kernel (attention_forward/backward, gemm_row_sums,
//    batch_norm_train_forward/backward) is one Backend method
//    whose default returns false having written nothing; a device declines
//    the cases it does not run (or all of them) call by call, and the op
//    composes the result from the core kernels instead.
// (ggml's backend interface does the same with optional function pointers
// and supports_op.) A new optional feature is one of the two: a family with
// state (CUDA graphs: capture, instantiate, replay) becomes a new
// capability interface and one accessor returning null; a single
// kernel with a composed or slower equivalent (an fp8 GEMM) becomes a
// declinable kernel. Neither touches a backend that lacks it.
//
// Conventions for every kernel: a View describes memory on this backend's
// device; strides are in elements and may be 0 (broadcast). "Contiguous"
// parameters are row-major with no gaps. Callers (ops, optimizers, the
// scaler) guarantee what each method states about its arguments; backends
// do not check it again. Half types are loaded to fp32, computed there, and
// rounded to nearest even.
#pragma once
#include <cstddef>
#include <cstdint>
#include <initializer_list>

#include "backend/declinable_args.hpp"
#include "backend/loss_scale_rule.hpp"
#include "backend/optimizer_args.hpp"
#include "backend/view.hpp"
#include "core/dtype.hpp"
#include "core/op_table.hpp"

struct mixp_tensor;

namespace mixp {

// The version of this interface (the vtables of Backend and the capability
// interfaces, every struct and enum they take, the constants, the entry
// point and the formulas). libmixp.so and a backend plugin (libmixp_cuda.so)
// must be built from the same headers: the plugin's entry point refuses any
// other value. Bump it once per change to a declaration or formula in a
// header of src/backend/ (docs/architecture.md, "The backend contract",
// lists what counts); the op table needs none, the loader compares its
// identity (core/op_table_identity.hpp).
// (v3: check_indices, scatter_dim. v4: the op table's enums, ScaleUpdate.rule. v5: batch_norm
// parameters as stat Views, gw/gb F64. v6: sgd_step/adam_step over a list of parameters,
// ParamArgs.buf1/buf2/state_dtype/stochastic, stochastic_round.hpp; count_values replaces
// count_nonfinite. v7: device collectives. v8: pool_index_dtype. v9: all_reduce_overlapped,
// collectives_join. v10: the optional capabilities timing_mark/timing_elapsed_ms/timing_reset
// and device_memory/reset_device_memory_peak. v11: the required core and the optional
// capabilities DeviceCollectives, DeviceTimer and DeviceMemoryStats split; the declinable
// kernels attention_forward/backward. v12: Conv2dGeom.benchmark/deterministic; relu's
// backward formula reads its output; scaled_gemm, ScaledGemmArgs; the fp8 dtypes; the
// declinable kernel gemm_row_sums. v13: the declinable kernels batch_norm_train_forward and
// batch_norm_train_backward, BatchNormTrainArgs.)
inline constexpr uint32_t kBackendAbiVersion = 13;

// What Backend::count_values returns.
struct ValueCounts {
  int64_t nan = 0, inf = 0, zero = 0, tiny = 0, huge = 0;
};

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
  // Optional bias added to every row of C after the product: n contiguous
  // elements of `dtype` (fused into the GEMM where the library can).
  const void *bias = nullptr;
  // F32 products may use TF32 Tensor Cores (the session's switch, see
  // tf32_enabled); backends without TF32 ignore it.
  bool allow_tf32 = false;
};

// The scaled fp8 product (Backend::scaled_gemm), validated by the op
// (ops/scaled_matmul.cpp):
//   D = (scale_a * scale_b) * (A x B) + bias,
// A [m, k] and B [k, n] of an fp8 dtype (E4M3 or E5M2, not both E5M2) with
// one unit stride each, D [m, n] contiguous F32/F16/BF16, bias null or n
// contiguous elements (BF16, or F16 for an F16 D), scale_a and scale_b F32
// scalars in device memory, read there (no host sync). The product is
// accumulated in fp32 and multiplied once by the fp32 product of the two
// scales, the bias added in fp32, and the sum rounded once to D's dtype. A
// scale that is not finite and positive makes every element of D NaN. amax
// (null, or an F32 scalar) receives max |D| of D as stored (NaN when D holds
// a NaN). fast_accum lets a device accumulate with fewer bits
// (cuBLASLt's fast accumulation); the CPU ignores it.
struct ScaledGemmArgs {
  int64_t m = 0, n = 0, k = 0;
  View a, b, scale_a, scale_b, bias, d, amax;  // bias.data / amax.data null: none
  bool fast_accum = false;
};

// The loss-scale update of a GradScaler step (the state machine of
// loss_scale_rule.hpp), in device memory. Counters are I32 scalars, scale
// and found_inf F32 scalars; found_inf may be the sum of several
// optimizers' flags (non-zero = overflow).
struct ScaleUpdate {
  View scale, growth_tracker, bad_count, hysteresis_left, found_inf;
  LossScaleRule rule;
};

// ---- convolution and pooling geometry (conv helper) --------------------------
// Validated by the ops (ops/conv.cpp, ops/pool.cpp). Activations are
// contiguous [N, C, H, W] or, with nhwc, [N, H, W, C]; conv weights are
// contiguous [C_out, C_in/groups, kh, kw] in both layouts.
struct Conv2dGeom {
  int64_t n = 0, c_in = 0, h = 0, w = 0;      // input
  int64_t c_out = 0, kh = 0, kw = 0;          // weight
  int64_t oh = 0, ow = 0;                     // output
  int64_t stride_h = 1, stride_w = 1, pad_h = 0, pad_w = 0, dil_h = 1, dil_w = 1;
  int64_t groups = 1;
  bool nhwc = false;
  // How a backend with a choice of algorithms picks one (the session's
  // cudnn_benchmark / cudnn_deterministic): by timing them or by its
  // heuristic, among the bitwise-reproducible ones only or among all. The
  // CPU's oneDNN convolutions have one deterministic path and ignore both.
  bool benchmark = false;
  bool deterministic = true;
};

enum class PoolKind { Max, Avg, AdaptiveAvg };

// Output cell (i, j) covers rows [i*stride_h - pad_h, +kh) clipped to the
// input for Max/Avg; for AdaptiveAvg rows [floor(i*h/oh), ceil((i+1)*h/oh))
// (PyTorch's rule) and likewise for columns.
struct Pool2dGeom {
  PoolKind kind = PoolKind::Max;
  int64_t n = 0, c = 0, h = 0, w = 0, oh = 0, ow = 0;
  int64_t kh = 1, kw = 1, stride_h = 1, stride_w = 1, pad_h = 0, pad_w = 0;
  bool count_include_pad = true;  // Avg: divide by the window size including padding
  bool nhwc = false;
};

// batch_norm's parameter contract (Backend::batch_norm_forward): weight and
// bias are in the statistics' dtype, their gradients F64. Checked by every
// backend, which names itself in the error.
inline bool batch_norm_params_ok(const View &stat, std::initializer_list<const View *> params,
                                 std::initializer_list<const View *> grads) noexcept {
  for (const View *p : params)
    if (p && p->dtype != stat.dtype) return false;
  for (const View *g : grads)
    if (g && g->dtype != MIXP_F64) return false;
  return true;
}

// ---- normalisation geometry (norm helper) -----------------------------------
// group_norm and layer_norm: x is contiguous [n, c, s]; statistics are taken
// per (sample, group) over the c/groups*s elements of that group, the affine
// weight and bias are per channel. layer_norm is n = rows, c = the normalised
// numel, s = 1, groups = 1.
struct GroupNormGeom {
  int64_t n = 0, c = 0, s = 1, groups = 1;
};

// What check_indices validates and how a failure is reported:
//   "<fn>: <what>[<pos>] = <value> is out of range [0, <limit>)<note>"
struct IndexCheck {
  const char *fn = "";    // the public function (the message's prefix)
  const char *what = "";  // the argument's name
  int64_t limit = 0;      // valid indices are [0, limit)
  bool has_ignore = false;
  int64_t ignore = 0;     // with has_ignore: this value is valid and not counted
  const char *note = "";  // appended to the message (copied if kept)
};

// The optional capabilities (backend/capabilities.hpp).
class DeviceCollectives;
class DeviceTimer;
class DeviceMemoryStats;

// The required core, the capability accessors and the declinable kernels
// (see the top of this file).
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
  // How many times the host has waited for the device so far (0 on the CPU,
  // where nothing is queued).
  virtual uint64_t host_syncs() const noexcept { return 0; }

  // --- elementwise --------------------------------------------------------
  // dst = convert(src) elementwise; same shape, any strides, any dtypes
  // (float->int truncates toward zero; float->half rounds to nearest even).
  virtual void copy(const View &src, const View &dst) = 0;
  // dst[...] = value converted to dst's dtype; any strides.
  virtual void fill(const View &dst, double value) = 0;
  // The additive causal mask of attention: dst is a contiguous [rows, cols]
  // float tensor; dst[i, j] = 0 where j <= i (key j visible from query i)
  // and -inf elsewhere. Built where dst lives, so attention needs no upload.
  virtual void causal_mask(const View &dst, int64_t rows, int64_t cols) = 0;
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
  // out[c] = scale * sum_r x[r, c]; x contiguous [rows, cols]; out [cols].
  // (Reducing leading dims, e.g. a bias gradient, without a transpose.)
  virtual void sum_cols(const View &x, int64_t rows, int64_t cols, const View &out,
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
  // 0 where ignored. With label smoothing e in [0, 1] (PyTorch's definition),
  // (1 - e) * that + e * mean_k(-log softmax(logits)[k]); e == 0 gives the
  // plain loss bit for bit.
  virtual void cross_entropy(const View &logits, const View &target, int64_t n, int64_t c,
                             int64_t ignore_index, double label_smoothing, const View &losses) = 0;
  // glogits[i, :] = row_scale[i] * (softmax(logits[i]) - (1 - e) onehot(target[i]) - e / c),
  // 0 for ignored rows; row_scale [n] (the incoming per-row gradient, same
  // dtype as the losses buffer).
  virtual void cross_entropy_backward(const View &logits, const View &target, int64_t n,
                                      int64_t c, int64_t ignore_index, double label_smoothing,
                                      const View &row_scale, const View &glogits) = 0;

  // Validates contiguous I64 indices (IndexCheck) and, when inv_count (an F64
  // scalar) is given, writes 1 / (the number of indices != ignore) there
  // (1/0 = inf). A backend whose memory the host can read (the CPU) checks
  // synchronously and fails with MIXP_ERR_INVALID_ARGUMENT before writing
  // anything. A device backend must not wait: it checks on the device,
  // keeps the first bad (position, value) and reports it from the next call
  // that synchronises anyway (copy_to_host, synchronize, count_values);
  // the kernels that consume bad indices must then neither read nor write
  // out of bounds (cross_entropy: NaN loss, zero gradient row; embedding:
  // zero row, no gradient).
  virtual void check_indices(const IndexCheck &chk, const View &indices,
                             const View *inv_count) = 0;
  // dst (contiguous [outer, n, inner], overwritten) = 0 except
  // dst[o, indices[o, i], i] = src[o, i] (raw bits of the element); src and
  // I64 indices contiguous [outer, inner], src and dst of one dtype. Indices
  // outside [0, n) are skipped. (The gradient of max along a dim.)
  virtual void scatter_dim(const View &src, const View &indices, int64_t outer, int64_t n,
                           int64_t inner, const View &dst) = 0;

  // --- random -------------------------------------------------------------
  // out[i] = i-th uniform [0,1) (or normal) of the Philox stream (seed,
  // offset); contiguous float out.
  virtual void rand_uniform(const View &out, uint64_t seed, uint64_t offset) = 0;
  virtual void rand_normal(const View &out, uint64_t seed, uint64_t offset) = 0;
  // mask[i] = uniform_i >= p (U8), contiguous.
  virtual void dropout_mask(const View &mask, double p, uint64_t seed, uint64_t offset) = 0;

  // --- numerics ------------------------------------------------------------
  // The elements of a float view (any strides) by kind, compared in the
  // view's compute type (fp32 for halves): NaN, +-Inf, zeros, tiny
  // (0 < |x| < tiny_below) and huge (huge_from <= |x| < Inf). tiny_below = 0
  // and huge_from = +Inf leave those two counts at 0. The numerics checker
  // (NaN/Inf; huge for values that would overflow fp16) and the underflow
  // statistics (tiny: subnormal or zero in a narrower type) read it. The
  // counts are exact whatever the split of the work.
  virtual void count_values(const View &x, double tiny_below, double huge_from, ValueCounts *out) = 0;

  // --- matrix products ------------------------------------------------------
  virtual void gemm(const GemmArgs &args) = 0;
  // The scaled fp8 product (ScaledGemmArgs). A device without fp8 units,
  // or one that cannot take the shape, throws MIXP_ERR_UNSUPPORTED saying
  // why; the CPU runs every case exactly (fp8 values are exact in bf16).
  virtual void scaled_gemm(const ScaledGemmArgs &args) = 0;

  // --- mixed precision: loss scaling and clipping ---------------------------
  // Scalars (found_inf, inv_scale, coef, the scaler state) are one-element
  // Views in device memory, so that a training step never waits on the host:
  // the kernels read and write them where they live. Gradient lists are n
  // contiguous float Views of any mix of F32/F16/BF16/F64.

  // One fused pass over the gradients: sets found_inf (F32) to 1 when any
  // element is non-finite, testing the value *before* unscaling as PyTorch
  // does, and multiplies every element in place by inv_scale (F32; the
  // multiply is skipped when it is exactly 1). found_inf is only ever set,
  // never cleared, so several calls (and clipping) accumulate into it.
  virtual void non_finite_check_and_unscale(const View *grads, int n, const View &found_inf,
                                            const View &inv_scale) = 0;
  // The dynamic loss-scale update, see ScaleUpdate.
  virtual void update_scale(const ScaleUpdate &u) = 0;
  // out (F32 or F64 scalar) = the sum of the squares of every element of the
  // gradients, accumulated in at least fp32; deterministic for any thread
  // count.
  virtual void grad_norm_sq(const View *grads, int n, const View &out) = 0;
  // From norm_sq (as written by grad_norm_sq): total_norm (F32) = sqrt(norm_sq)
  // and coef (F32) = min(1, max_norm / (total_norm + 1e-6)); a non-finite norm
  // sets found_inf (F32) to 1 and coef to 1, so the gradients stay unchanged.
  virtual void clip_coefficient(const View &norm_sq, double max_norm, const View &total_norm,
                                const View &coef, const View &found_inf) = 0;
  // Multiplies every gradient element in place by coef (F32 scalar), unless
  // it is exactly 1.
  virtual void scale_grads(const View *grads, int n, const View &coef) = 0;

  // --- optimizers (the fused per-parameter updates of optimizer_args.hpp,
  // over all `count` parameters of an optimizer at once, on this backend's
  // memory and queue; found_inf may be null) ----------------------------------
  virtual void sgd_step(const optim::ParamArgs *params, int count, const optim::SgdArgs &args,
                        const float *found_inf) = 0;
  virtual void adam_step(const optim::ParamArgs *params, int count, const optim::AdamArgs &args,
                         const float *found_inf) = 0;

  // --- convolution and pooling (conv helper; layouts in Conv2dGeom) ----------
  // All operands share one float dtype. y = conv(x, w) (+ bias [C_out], may be null).
  virtual void conv2d(const Conv2dGeom &g, const View &x, const View &w, const View *bias,
                      const View &y) = 0;
  // gx = the gradient of conv2d with respect to x, given gy (y's shape).
  virtual void conv2d_backward_data(const Conv2dGeom &g, const View &gy, const View &w,
                                    const View &gx) = 0;
  // gw = the gradient with respect to the weight (overwritten, not accumulated).
  virtual void conv2d_backward_weights(const Conv2dGeom &g, const View &x, const View &gy,
                                       const View &gw) = 0;
  // The dtype of max pooling's indices over g: I64, or I32 where the backend
  // takes it (every in-plane position fits).
  virtual DType pool_index_dtype(const Pool2dGeom &g) const noexcept = 0;
  // y = pooled x. For Max, `indices` (pool_index_dtype(g), y's shape)
  // receives the position h * W + w of the first maximum in its input plane
  // (NaN wins, as PyTorch); it is null for the averages.
  virtual void pool2d(const Pool2dGeom &g, const View &x, const View &y, const View *indices) = 0;
  // gx (overwritten) from gy; Max routes each gradient to its saved index.
  virtual void pool2d_backward(const Pool2dGeom &g, const View &gy, const View *indices,
                               const View &gx) = 0;

  // --- normalisation and embedding (norm helper) ----------------------------
  // Statistics are accumulated in double and kept in "stat" Views: contiguous,
  // F64 for F64 data and F32 otherwise. Data Views (x, y, gy, gx, weight,
  // bias, gw, gb) are contiguous and share one float dtype. Reductions are
  // split into chunks fixed by the shape alone and combined in order, so
  // results do not depend on the thread count.
  // batch_norm: x is [outer, c, inner] (NCHW: N, C, H*W; NHWC and 2-D: rows,
  // C, 1). Writes each channel's mean, biased variance and
  // invstd = 1/sqrt(var + eps) (stat Views [c]).
  virtual void batch_norm_stats(const View &x, int64_t outer, int64_t c, int64_t inner,
                                double eps, const View &mean, const View &var,
                                const View &invstd) = 0;
  // y = (x - mean[ch]) * invstd[ch] * weight[ch] + bias[ch]; weight and bias
  // may be null (1 and 0). batch_norm's weight and bias are stat Views, and
  // its gw and gb F64 (the op rounds them to the parameters' dtype once):
  // half data with F32 parameters, as mixed precision keeps batch norm, is
  // then one case of the kernels instead of two casts of the whole tensor.
  virtual void batch_norm_forward(const View &x, int64_t outer, int64_t c, int64_t inner,
                                  const View &mean, const View &invstd, const View *weight,
                                  const View *bias, const View &y) = 0;
  // Gradients of batch_norm_forward (each output may be null). With
  // batch_stats the mean and invstd were computed from x itself, so gx gets
  // their derivative too; otherwise (eval) gx = gy * weight * invstd.
  virtual void batch_norm_backward(const View &x, const View &gy, int64_t outer, int64_t c,
                                   int64_t inner, const View &mean, const View &invstd,
                                   const View *weight, bool batch_stats, const View *gx,
                                   const View *gw, const View *gb) = 0;
  // group_norm / layer_norm (GroupNormGeom): y, and mean and rstd (stat
  // Views [n * groups]).
  virtual void group_norm_forward(const GroupNormGeom &g, const View &x, const View *weight,
                                  const View *bias, double eps, const View &y, const View &mean,
                                  const View &rstd) = 0;
  virtual void group_norm_backward(const GroupNormGeom &g, const View &x, const View &gy,
                                   const View &mean, const View &rstd, const View *weight,
                                   const View *gx, const View *gw, const View *gb) = 0;
  // out[i, :] = weight[indices[i], :]; weight [v, d], contiguous I64 indices
  // [n] passed through check_indices (a row whose index is out of [0, v)
  // anyway -- a deferred device check -- is written as zeros), out [n, d].
  virtual void embedding(const View &weight, const View &indices, const View &out) = 0;
  // gw [v, d] (overwritten) = the sum of the rows of gy [n, d] that each
  // index picked, in index order (no atomics); row padding_idx (if in range)
  // stays zero; rows of gy whose index is out of [0, v) are dropped.
  virtual void embedding_backward(const View &gy, const View &indices, int64_t padding_idx,
                                  const View &gw) = 0;

  // --- optional capabilities: null when the device lacks them -----------------
  // Each pointer, when not null, lives as long as this backend; the
  // interfaces are in backend/capabilities.hpp.
  virtual DeviceCollectives *collectives() noexcept { return nullptr; }
  virtual DeviceTimer *timer() noexcept { return nullptr; }
  virtual DeviceMemoryStats *memory_stats() noexcept { return nullptr; }

  // --- declinable kernels: false (the default) declines ----------------------
  // Fused attention (AttentionArgs): returns false, having written nothing,
  // for a case the device does not run fused (a dtype, a head size D, the
  // strides); the op then composes attention from the other kernels. A
  // backend that accepts a forward accepts the backward of the same case
  // (dout, dq, dk, dv set; o and lse as the forward wrote them), which
  // recomputes the probabilities from lse.
  virtual bool attention_forward(const AttentionArgs &a) {
    (void)a;
    return false;
  }
  virtual bool attention_backward(const AttentionArgs &a) {
    (void)a;
    return false;
  }
  // batch_norm's training forward and backward as library calls
  // (BatchNormTrainArgs; cuDNN's, whose statistics are fp32 where the core
  // kernels' are double): false, having written nothing, for a case the
  // device does not run there (a dtype, eps below the library's minimum,
  // no weight); the op then composes batch_norm_stats, batch_norm_forward
  // and the blend, or calls batch_norm_backward.
  virtual bool batch_norm_train_forward(const BatchNormTrainArgs &a) {
    (void)a;
    return false;
  }
  virtual bool batch_norm_train_backward(const BatchNormTrainArgs &a) {
    (void)a;
    return false;
  }
  // A product with the row sums of A folded in: args.c = A x B as gemm()
  // computes it (batch 1, no bias), and row_sums (m contiguous elements of
  // args.dtype, overwritten) = sum_l A[i, l] accumulated in fp32 (fp64 for
  // F64). A linear layer's weight gradient dY^T X with its bias gradient
  // (the row sums of dY^T) in one pass, where the library has an epilogue
  // for it (cuBLASLt's BGRADB); false, having written nothing, otherwise.
  virtual bool gemm_row_sums(const GemmArgs &args, void *row_sums) {
    (void)args;
    (void)row_sums;
    return false;
  }
};

// A View of a tensor's current geometry.
View view_of(const mixp_tensor &t) noexcept;

}  // namespace mixp
