// The internal C++ operation API. Each function validates its arguments
// (throwing mixp::Error with a message that names `mixp_<op>` and the
// argument), runs the backend kernels, and records autograd when needed.
// Results are new tensors. The C shims in src/api/ call these; backward
// formulas call them too (with grad mode off), so every op is reusable.
#pragma once
#include <vector>

#include "backend/backend.hpp"
#include "core/tensor.hpp"

namespace mixp {

// ---- per-op scaffolding (ops/op_common.cpp) ---------------------------------
// Entered at the start of every public op: checks the session is open and
// sets the thread count. `name` is the op's stable name.
class OpScope {
 public:
  OpScope(const char *name, Session *s);
  const char *name() const noexcept { return name_; }
  Session *session() const noexcept { return s_; }

 private:
  const char *name_;
  Session *s_;
};

Backend &backend_of(const Tensor &t) noexcept;
// Fails unless all tensors share one session; returns it.
Session *same_session(const char *fn, std::initializer_list<const Tensor *> ts);
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
const char *unary_name(UnaryOp op) noexcept;
const char *binary_name(BinaryOp op) noexcept;

// ---- reductions, row ops, losses (ops/reduce.cpp, ops/softmax.cpp, ops/loss.cpp)
// dims: each in [-ndim, ndim); empty = all.
TensorPtr sum(const TensorPtr &x, const std::vector<int> &dims, bool keepdim);
TensorPtr mean(const TensorPtr &x, const std::vector<int> &dims, bool keepdim);
// values (recorded) and I64 indices.
void max(const TensorPtr &x, int dim, bool keepdim, TensorPtr *values, TensorPtr *indices);
TensorPtr argmax(const TensorPtr &x, int dim, bool keepdim);
TensorPtr softmax(const TensorPtr &x, int dim, bool log);
TensorPtr cross_entropy(const TensorPtr &logits, const TensorPtr &target,
                        mixp_reduction reduction, int64_t ignore_index);
TensorPtr mse_loss(const TensorPtr &a, const TensorPtr &b, mixp_reduction reduction);
TensorPtr dropout(const TensorPtr &x, double p, bool training);
TensorPtr cat(const std::vector<TensorPtr> &xs, int dim);

// ---- matrix products (ops/matmul.cpp) -----------------------------------------
TensorPtr matmul(const TensorPtr &a, const TensorPtr &b);
TensorPtr bmm(const TensorPtr &a, const TensorPtr &b);
TensorPtr linear(const TensorPtr &x, const TensorPtr &w, const TensorPtr &bias);

}  // namespace mixp
