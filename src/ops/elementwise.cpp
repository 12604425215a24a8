// Elementwise operations: unary maps (with a scalar parameter for pow and
// the scalar arithmetic ops) and broadcasting binary arithmetic, forward and
// backward. Unary backward runs one fused backend kernel; binary backward is
// composed of public ops so it works on every backend and broadcast shape.
#include <memory>

#include "autograd/node.hpp"
#include "core/error.hpp"
#include "ops/ops.hpp"

namespace mixp {

namespace {

// Brings an incoming gradient to the dtype of the forward result and to a
// dense layout, which the fused unary backward kernel expects.
TensorPtr dense_grad(const TensorPtr &g, DType dtype) {
  TensorPtr r = g->dtype == dtype ? g : cast(g, dtype);
  return contiguous(r);
}

struct UnaryNode final : Node {
  using Node::Node;
  UnaryOp op = UnaryOp::Neg;
  double s = 0.0;
  DType dtype = MIXP_F32;
  Shape shape;
  TensorPtr x, y;  // detached; only those the formula reads

  std::vector<TensorPtr> backward(std::vector<TensorPtr> &grad_outputs) override {
    if (released)
      fail(MIXP_ERR_STATE, "backward of ", name(), ": saved tensors were already freed");
    TensorPtr gy = dense_grad(grad_outputs.at(0), dtype);
    if (gy->numel() != shape.numel())
      fail(MIXP_ERR_INTERNAL, "backward of ", name(), ": gradient has shape ", shape_str(*gy),
           ", expected ", shape_str(shape));
    TensorPtr gx = empty(gy->session.get(), dtype, shape);
    View none;
    none.dtype = dtype;
    none.ndim = shape.ndim;
    for (int i = 0; i < shape.ndim; ++i) none.shape[i] = shape[i];
    backend_of(*gy).unary_backward(op, x ? view_of(*x) : none, y ? view_of(*y) : none,
                                   view_of(*gy), view_of(*gx), s);
    return {gx};
  }
  void release_saved() override {
    x.reset();
    y.reset();
  }
};

struct BinaryNode final : Node {
  using Node::Node;
  BinaryOp op = BinaryOp::Add;
  Shape a_shape, b_shape;
  TensorPtr a, b, y;  // detached; only those the formula reads

  std::vector<TensorPtr> backward(std::vector<TensorPtr> &grad_outputs) override {
    if (released)
      fail(MIXP_ERR_STATE, "backward of ", name(), ": saved tensors were already freed");
    const TensorPtr &g = grad_outputs.at(0);
    TensorPtr ga, gb;  // at the broadcast (output) shape
    switch (op) {
      case BinaryOp::Add:
        ga = g;
        gb = g;
        break;
      case BinaryOp::Sub:
        ga = g;
        if (needs_grad(1)) gb = neg(g);
        break;
      case BinaryOp::Mul:
        if (needs_grad(0)) ga = mul(g, b);
        if (needs_grad(1)) gb = mul(g, a);
        break;
      case BinaryOp::Div:
        // d(a/b)/db = -(a/b)/b: reuse g/b and the saved quotient.
        ga = div(g, b);
        if (needs_grad(1)) gb = neg(mul(ga, y));
        break;
    }
    std::vector<TensorPtr> out(2);
    if (needs_grad(0)) out[0] = sum_to(ga, a_shape);
    if (needs_grad(1)) out[1] = sum_to(gb, b_shape);
    return out;
  }
  void release_saved() override {
    a.reset();
    b.reset();
    y.reset();
  }
};

void require_tensor(const TensorPtr &t, const char *fn, const char *arg) {
  if (!t) fail(MIXP_ERR_INVALID_ARGUMENT, fn, ": ", arg, " is NULL");
}

}  // namespace

TensorPtr unary(UnaryOp op, const TensorPtr &x_in, double s) {
  const OpInfo &info = op_info(op_of(op));
  const char *fn = info.c_function;
  require_tensor(x_in, fn, "x");
  TensorPtr x = x_in;
  OpScope scope(op_of(op), x->session.get(), {&x});
  scope.tape({x.get()}, [=](const Replay &r) { return unary(op, r[0], s); });
  Session *ses = scope.session();
  require_float(fn, "x", *x);

  // The dense copy is an implementation detail (clone records nothing): the
  // graph links this op to x itself.
  TensorPtr xc = x->is_contiguous() ? x : clone(x);
  const Shape shape = shape_of(*x);
  TensorPtr y = empty(ses, x->dtype, shape);
  ses->backend->unary(op, view_of(*xc), view_of(*y), s);

  if (should_record(ses, {x.get()})) {
    auto node = std::make_shared<UnaryNode>(op_of(op));
    node->op = op;
    node->s = s;
    node->dtype = x->dtype;
    node->shape = shape;
    // Only what the backward formula reads (core/ops.def), so that
    // activations nothing needs are not held until backward.
    if (unary_reads(op) == Reads::Input) node->x = detach(*xc);
    if (unary_reads(op) == Reads::Output) node->y = detach(*y);
    record(node, {x.get()}, {y.get()});
  }
  return scope.finish(y);
}

TensorPtr binary(BinaryOp op, const TensorPtr &a_in, const TensorPtr &b_in) {
  const OpInfo &info = op_info(op_of(op));
  const char *fn = info.c_function;
  require_tensor(a_in, fn, "a");
  require_tensor(b_in, fn, "b");
  Session *ses = same_session(fn, {a_in.get(), b_in.get()});
  TensorPtr a = a_in, b = b_in;
  OpScope scope(op_of(op), ses, {&a, &b});
  scope.tape({a.get(), b.get()}, [=](const Replay &r) { return binary(op, r[0], r[1]); });
  require_float(fn, "a", *a);
  require_float(fn, "b", *b);
  require_same_dtype(fn, "a", *a, "b", *b);
  const Shape a_shape = shape_of(*a), b_shape = shape_of(*b);
  const Shape shape = broadcast_shapes(fn, a_shape, b_shape);

  TensorPtr out = empty(ses, a->dtype, shape);
  ses->backend->binary(op, broadcast_view(*a, shape), broadcast_view(*b, shape), view_of(*out));

  if (should_record(ses, {a.get(), b.get()})) {
    auto node = std::make_shared<BinaryNode>(op_of(op));
    node->op = op;
    node->a_shape = a_shape;
    node->b_shape = b_shape;
    if (op == BinaryOp::Mul) {
      if (a->requires_grad) node->b = detach(*b);
      if (b->requires_grad) node->a = detach(*a);
    } else if (op == BinaryOp::Div) {
      node->b = detach(*b);
      if (b->requires_grad) node->y = detach(*out);
    }
    record(node, {a.get(), b.get()}, {out.get()});
  }
  return scope.finish(out);
}

}  // namespace mixp
