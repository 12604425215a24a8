// The internal C++ operation API. Each function validates its arguments
// (throwing mixp::Error with a message that names `mixp_<op>` and the
// argument), runs the backend kernels, and records autograd when needed.
// Results are new tensors. The C shims in src/api/ call these; backward
// formulas call them too (with grad mode off), so every op is reusable.
#pragma once
#include <type_traits>
#include <vector>

#include "autograd/checkpoint.hpp"
#include "backend/backend.hpp"
#include "core/tensor.hpp"

namespace mixp {

// ---- per-op scaffolding (ops/op_common.cpp) ---------------------------------
// Entered at the start of every op, named by its row in the op table
// (core/ops.def): checks the session is open and sets the thread count. At
// the outermost level (an op the user called, not one an op calls
// internally) it casts the float tensors among `inputs` in place as the
// session's autocast region decides for the op (autocast/autocast.hpp), and
// finish()/check_output() run the numerics checker on the results.
class OpScope {
 public:
  OpScope(OpId op, Session *s, std::initializer_list<TensorPtr *> inputs = {});
  OpScope(OpId op, Session *s, std::vector<TensorPtr> &inputs);
  ~OpScope();
  OpScope(const OpScope &) = delete;
  OpScope &operator=(const OpScope &) = delete;
  OpId op() const noexcept { return op_; }
  const char *name() const noexcept { return name_; }
  Session *session() const noexcept { return s_; }
  bool outermost() const noexcept { return outermost_; }
  // Checks output `index` (outermost level only) and passes it through.
  TensorPtr finish(TensorPtr out) const {
    check_output(*out, 0);
    return out;
  }
  // Runs the numerics checker on output `index` and marks it for the tape.
  void check_output(const Tensor &out, int index) const;
  // Marks output `index` for the tape without a numerics check (views,
  // index outputs) and passes it through.
  TensorPtr produced(TensorPtr out, int index = 0) const {
    mark(*out, index);
    return out;
  }

  // ---- activation checkpointing (autograd/checkpoint.hpp) -------------------
  // OP AUTHORS: every op function that opens an OpScope must call tape()
  // right after it (before validating arguments or drawing random numbers)
  // and return each output through finish(), check_output() or produced()
  // with its index, e.g.
  //   OpScope scope(OpId::silu, x->session.get(), {&x});
  //   scope.tape({x.get()}, [=](const Replay &r) { return silu(r[0]); });
  // Inside a checkpoint region this records how to run the op again;
  // elsewhere it costs one branch. `inputs` are the op's tensor inputs as
  // they are after the scope (autocast may have replaced them; nulls are
  // allowed); `replay` receives their recomputed counterparts, in that
  // order, and calls the same internal op with the same non-tensor
  // arguments, returning its output (TensorPtr) or outputs (a
  // std::vector<TensorPtr> in index order). Capture no TensorPtr in
  // `replay`: it would keep an activation alive and replay stale values. An
  // op the user calls inside a region without a tape() makes
  // mixp_checkpoint_end fail with MIXP_ERR_UNSUPPORTED naming the op. Ops
  // with side effects (batch_norm's running statistics) skip them while
  // session()->checkpoint_replaying is set, so a replay does not repeat them.
  // In-place updates (mixp_tensor_copy_) call writes(dst) instead of tape():
  // they are not replayed, which is right as long as the region never reads
  // dst (a layer's counter); otherwise the region is refused.
  void writes(const Tensor &dst);
  template <class F>
  void tape(std::initializer_list<const Tensor *> inputs, F &&replay) {
    if (recording_) tape_impl(std::vector<const Tensor *>(inputs), wrap(std::forward<F>(replay)));
  }
  template <class F>
  void tape(const std::vector<TensorPtr> &inputs, F &&replay) {
    if (!recording_) return;
    std::vector<const Tensor *> in;
    for (const TensorPtr &t : inputs) in.push_back(t.get());
    tape_impl(std::move(in), wrap(std::forward<F>(replay)));
  }

 private:
  template <class F>
  static ReplayFn wrap(F &&f) {
    using R = std::invoke_result_t<std::decay_t<F> &, const Replay &>;
    if constexpr (std::is_convertible_v<R, TensorPtr>)
      return [g = std::forward<F>(f)](const Replay &r) { return std::vector<TensorPtr>{TensorPtr(g(r))}; };
    else
      return ReplayFn(std::forward<F>(f));
  }
  void enter();
  void autocast_inputs(TensorPtr *const *inputs, size_t n);
  void profile_begin(TensorPtr *const *inputs, size_t n) noexcept;
  void tape_impl(std::vector<const Tensor *> inputs, ReplayFn fn);
  void mark(const Tensor &out, int index) const;
  void settle() noexcept;
  OpId op_;
  const char *name_;
  Session *s_;
  bool outermost_ = false;
  int32_t profiled_ = -1;  // this call's profile record (ops/profile.hpp), or -1
  // Checkpoint bookkeeping, used only while a region records this op.
  bool recording_ = false;
  int uncaught_ = 0;
  uint64_t rng_start_ = 0;
  size_t entry_ = ~size_t(0);
  bool wrote_ = false;
  mutable int marked_ = 0;
  std::vector<const Tensor *> tape_inputs_;
};

// The numerics checker (ops/numerics.cpp): when the session's mode is on and
// `t` holds NaN or Inf, reports op, phase ("forward"/"backward"), output
// index, dtype, shape and counts: logs it (warn) or throws MIXP_ERR_NUMERIC.
void check_numerics(Session *s, const char *op, const char *phase, int index, const Tensor &t);
// Appends t (an output of op, forward or backward) to the session's op trace
// (the caller has checked s->trace).
void record_trace(Session *s, const char *op, bool backward, int index, const Tensor &t);

Backend &backend_of(const Tensor &t) noexcept;
// Fails unless all tensors share one session; returns it.
Session *same_session(const char *fn, std::initializer_list<const Tensor *> ts);
// Which of `choices` the environment variable `var` names, read at every
// call (so a benchmark can switch paths between calls): 0, the first choice
// (the default, "auto"), when unset or empty; any other value fails with
// MIXP_ERR_INVALID_ARGUMENT naming fn, the variable and the choices.
// MIXP_ATTENTION and MIXP_BATCH_NORM pick an op's path this way.
int env_choice(const char *fn, const char *var, std::initializer_list<const char *> choices);
// Fails with MIXP_ERR_DTYPE naming fn/arg unless t is a float tensor.
void require_float(const char *fn, const char *arg, const Tensor &t);
// Fails with MIXP_ERR_DTYPE unless a and b have equal dtypes.
void require_same_dtype(const char *fn, const char *an, const Tensor &a, const char *bn,
                        const Tensor &b);
// numpy broadcasting of two shapes; fails with MIXP_ERR_SHAPE naming both.
Shape broadcast_shapes(const char *fn, const Shape &a, const Shape &b);
// A View of t broadcast to `shape` (stride 0 on broadcast dims).
View broadcast_view(const Tensor &t, const Shape &shape);
// Sums g down to `shape` (the inverse of broadcasting), for backward.
TensorPtr sum_to(const TensorPtr &g, const Shape &shape);

// ---- creation and copies (ops/copy.cpp) --------------------------------------
TensorPtr contiguous(const TensorPtr &x);
TensorPtr cast(const TensorPtr &x, DType dtype);
TensorPtr clone(const TensorPtr &x);  // contiguous copy, not recorded
void copy_into(Tensor &dst, const Tensor &src);  // in place, broadcasting src, not recorded
TensorPtr rand_uniform(Session *s, DType dtype, const Shape &shape);
TensorPtr rand_normal(Session *s, DType dtype, const Shape &shape);

// ---- views (ops/view.cpp) ----------------------------------------------------
TensorPtr reshape(const TensorPtr &x, const Shape &shape);  // one -1 allowed
TensorPtr transpose(const TensorPtr &x, int dim0, int dim1);
TensorPtr permute(const TensorPtr &x, const int *dims, int ndim);
TensorPtr slice(const TensorPtr &x, int dim, int64_t start, int64_t end, int64_t step);
TensorPtr expand(const TensorPtr &x, const Shape &shape);  // broadcast view

// ---- elementwise (ops/elementwise.cpp) -----------------------------------------
TensorPtr unary(UnaryOp op, const TensorPtr &x, double s = 0.0);
TensorPtr binary(BinaryOp op, const TensorPtr &a, const TensorPtr &b);
inline TensorPtr add(const TensorPtr &a, const TensorPtr &b) { return binary(BinaryOp::Add, a, b); }
inline TensorPtr sub(const TensorPtr &a, const TensorPtr &b) { return binary(BinaryOp::Sub, a, b); }
inline TensorPtr mul(const TensorPtr &a, const TensorPtr &b) { return binary(BinaryOp::Mul, a, b); }
inline TensorPtr div(const TensorPtr &a, const TensorPtr &b) { return binary(BinaryOp::Div, a, b); }
inline TensorPtr neg(const TensorPtr &x) { return unary(UnaryOp::Neg, x); }
inline TensorPtr add_scalar(const TensorPtr &x, double s) { return unary(UnaryOp::AddScalar, x, s); }
inline TensorPtr mul_scalar(const TensorPtr &x, double s) { return unary(UnaryOp::MulScalar, x, s); }

// ---- reductions, row ops, losses (ops/reduce.cpp, ops/softmax.cpp, ops/loss.cpp)
// dims: each in [-ndim, ndim); empty = all.
TensorPtr sum(const TensorPtr &x, const std::vector<int> &dims, bool keepdim);
TensorPtr mean(const TensorPtr &x, const std::vector<int> &dims, bool keepdim);
// values (recorded) and I64 indices.
void max(const TensorPtr &x, int dim, bool keepdim, TensorPtr *values, TensorPtr *indices);
TensorPtr argmax(const TensorPtr &x, int dim, bool keepdim);
TensorPtr softmax(const TensorPtr &x, int dim, bool log);
// label_smoothing in [0, 1] (PyTorch's); fn names the C function in errors.
TensorPtr cross_entropy(const TensorPtr &logits, const TensorPtr &target,
                        mixp_reduction reduction, int64_t ignore_index,
                        double label_smoothing = 0.0, const char *fn = "mixp_cross_entropy");
TensorPtr mse_loss(const TensorPtr &a, const TensorPtr &b, mixp_reduction reduction);
TensorPtr dropout(const TensorPtr &x, double p, bool training);
TensorPtr cat(const std::vector<TensorPtr> &xs, int dim);
// Writes pieces[i] into out's slice [starts[i], starts[i + 1]) along dim
// (converting dtype if need be), zeros where pieces[i] is null: cat's
// forward and split's backward. Not recorded.
void write_along(Tensor &out, int dim, const std::vector<TensorPtr> &pieces, const std::vector<int64_t> &starts);

// ---- matrix products (ops/matmul.cpp) -----------------------------------------
TensorPtr matmul(const TensorPtr &a, const TensorPtr &b);
// (ops/scaled_matmul.cpp) D = (scale_a * scale_b) * (a x b) + bias for fp8 a, b;
// bias may be null; amax (null, or an F32 scalar) receives max |D|.
TensorPtr scaled_matmul(const TensorPtr &a, const TensorPtr &scale_a, const TensorPtr &b,
                        const TensorPtr &scale_b, const TensorPtr &bias, DType out_dtype, unsigned flags,
                        Tensor *amax);
TensorPtr bmm(const TensorPtr &a, const TensorPtr &b);
// t itself when a GEMM can address it (its matrix part has a unit stride on
// one side and its batch dims fold into one stride), else contiguous(t), a
// recorded copy. An op that multiplies a view more than once (forward and
// backward) copies it once here instead of once per product.
TensorPtr gemm_operand(const TensorPtr &t);
TensorPtr linear(const TensorPtr &x, const TensorPtr &w, const TensorPtr &bias);

// ---- convolution and pooling (ops/conv.cpp, ops/pool.cpp) ---------------------
// The options come from the C API (struct_size already checked); the ops
// validate every field. bias may be null.
TensorPtr conv2d(const TensorPtr &x, const TensorPtr &w, const TensorPtr &bias,
                 const mixp_conv2d_options &o);
TensorPtr max_pool2d(const TensorPtr &x, const mixp_pool2d_options &o);
TensorPtr avg_pool2d(const TensorPtr &x, const mixp_pool2d_options &o);
TensorPtr adaptive_avg_pool2d(const TensorPtr &x, int64_t out_h, int64_t out_w, mixp_layout layout);

// ---- normalisation, activations, embedding, attention, shape ops (norm helper:
// ops/norm.cpp, ops/embedding.cpp, ops/attention.cpp, ops/shape_ops.cpp) ------
// Optional tensors (weight, bias, running statistics) may be null. In
// training, batch_norm updates running_mean/running_var in place (not
// recorded) once the whole call has succeeded.
TensorPtr batch_norm(const TensorPtr &x, const TensorPtr &weight, const TensorPtr &bias,
                     const TensorPtr &running_mean, const TensorPtr &running_var, bool training,
                     double momentum, double eps, mixp_layout layout);
TensorPtr layer_norm(const TensorPtr &x, int normalized_ndim, const TensorPtr &weight,
                     const TensorPtr &bias, double eps);
TensorPtr group_norm(const TensorPtr &x, int64_t groups, const TensorPtr &weight,
                     const TensorPtr &bias, double eps);
inline TensorPtr hardswish(const TensorPtr &x) { return unary(UnaryOp::Hardswish, x); }
inline TensorPtr hardsigmoid(const TensorPtr &x) { return unary(UnaryOp::Hardsigmoid, x); }
inline TensorPtr silu(const TensorPtr &x) { return unary(UnaryOp::Silu, x); }
// padding_idx -1 for none.
TensorPtr embedding(const TensorPtr &weight, const TensorPtr &indices, int64_t padding_idx);
// scale <= 0 means 1/sqrt(E).
TensorPtr scaled_dot_product_attention(const TensorPtr &q, const TensorPtr &k, const TensorPtr &v,
                                       bool is_causal, double dropout_p, double scale);
// Views, one per size, each recorded as a slice.
std::vector<TensorPtr> split(const TensorPtr &x, const std::vector<int64_t> &sizes, int dim);
TensorPtr flatten(const TensorPtr &x, int start_dim, int end_dim);
// (before, after) pairs from the last dim; negative values crop.
TensorPtr pad(const TensorPtr &x, const std::vector<int64_t> &pads, double value);

}  // namespace mixp
