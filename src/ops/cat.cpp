// cat: each input is copied into its slice of one output; the backward
// hands every input its slice of the gradient.
#include <memory>
#include <string>
#include <vector>

#include "autograd/node.hpp"
#include "core/error.hpp"
#include "core/sizes.hpp"
#include "ops/ops.hpp"

namespace mixp {
namespace {

struct CatNode : Node {
  using Node::Node;
  int dim = 0;
  std::vector<int64_t> starts;  // one more than inputs: input i spans [starts[i], starts[i+1])

  std::vector<TensorPtr> backward(std::vector<TensorPtr> &grads) override {
    std::vector<TensorPtr> out(starts.size() - 1);
    for (size_t i = 0; i + 1 < starts.size(); ++i)
      if (needs_grad(i)) out[i] = contiguous(slice(grads[0], dim, starts[i], starts[i + 1], 1));
    return out;
  }
};

}  // namespace

void write_along(Tensor &out, int dim, const std::vector<TensorPtr> &pieces, const std::vector<int64_t> &starts) {
  Backend &be = backend_of(out);
  for (size_t i = 0; i < pieces.size(); ++i) {
    Shape piece = shape_of(out);
    piece.d[dim] = starts[i + 1] - starts[i];
    if (piece.numel() == 0) continue;
    TensorPtr part = make_view(out, piece, out.strides, out.offset + starts[i] * out.strides[dim]);
    if (pieces[i]) be.copy(view_of(*pieces[i]), view_of(*part));
    else be.fill(view_of(*part), 0.0);
  }
}

TensorPtr cat(const std::vector<TensorPtr> &xs_in, int dim) {
  static const char *fn = "mixp_cat";
  if (xs_in.empty()) fail(MIXP_ERR_INVALID_ARGUMENT, fn, ": needs at least one tensor, got 0");
  std::vector<TensorPtr> xs = xs_in;
  OpScope scope(OpId::cat, xs[0]->session.get(), xs);
  scope.tape(xs, [dim](const Replay &r) { return cat(r.all(), dim); });
  const Tensor &x0 = *xs[0];
  Session *s = scope.session();
  if (x0.ndim == 0)
    fail(MIXP_ERR_SHAPE, fn, ": tensors[0] is 0-dimensional and has no dim to concatenate along");
  const int d = wrap_dim(dim, x0.ndim, fn, "dim");

  Shape out_shape = shape_of(x0);
  std::vector<int64_t> starts{0};
  for (size_t i = 0; i < xs.size(); ++i) {
    const Tensor &xi = *xs[i];
    if (xi.session.get() != s)
      fail(MIXP_ERR_DEVICE, fn, ": tensors[", i, "] belongs to another session than tensors[0]");
    if (xi.dtype != x0.dtype)
      fail(MIXP_ERR_DTYPE, fn, ": tensors[", i, "] has dtype ", dtype_name(xi.dtype),
           ", tensors[0] has ", dtype_name(x0.dtype));
    bool fits = xi.ndim == x0.ndim;
    for (int k = 0; fits && k < x0.ndim; ++k) fits = k == d || xi.shape[k] == x0.shape[k];
    if (!fits)
      fail(MIXP_ERR_SHAPE, fn, ": tensors[", i, "] is ", shape_str(xi), " and tensors[0] is ",
           shape_str(x0), "; all dims but dim ", d, " must match");
    // (expanded views can be long: the sum is checked)
    if (i > 0) out_shape.d[d] = size_add(out_shape.d[d], xi.shape[d], fn, "the output's concatenated dim");
    starts.push_back(starts.back() + xi.shape[d]);
  }

  TensorPtr y = empty(s, x0.dtype, out_shape);
  write_along(*y, d, xs, starts);

  std::vector<const Tensor *> inputs;
  for (const TensorPtr &x : xs) inputs.push_back(x.get());
  if (should_record(s, inputs)) {
    auto node = std::make_shared<CatNode>(OpId::cat);
    node->dim = d;
    node->starts = starts;
    record(node, inputs, {y.get()});
  }
  return scope.finish(y);
}

}  // namespace mixp
