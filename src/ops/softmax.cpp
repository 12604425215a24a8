// softmax and log_softmax along one dim, with their backward from the
// saved output (neither formula needs the input).
#include <memory>
#include <vector>

#include "autograd/node.hpp"
#include "core/error.hpp"
#include "ops/ops.hpp"

namespace mixp {
namespace {

struct SoftmaxNode : Node {
  using Node::Node;
  TensorPtr y;  // detached alias of the output (a strong ref to the output itself would be a cycle)
  int64_t outer = 1, n = 1, inner = 1;
  bool log = false;

  std::vector<TensorPtr> backward(std::vector<TensorPtr> &grads) override {
    TensorPtr gy = contiguous(grads[0]);
    TensorPtr gx = empty(gy->session.get(), y->dtype, shape_of(*y));
    if (gx->numel() > 0)
      backend_of(*y).softmax_backward(view_of(*y), view_of(*gy), outer, n, inner, log,
                                      view_of(*gx));
    return {gx};
  }
  void release_saved() override { y.reset(); }
};

}  // namespace

TensorPtr softmax(const TensorPtr &x_in, int dim, bool log) {
  const OpId op = log ? OpId::log_softmax : OpId::softmax;
  const char *fn = op_info(op).c_function;
  TensorPtr x = x_in;
  OpScope scope(op, x->session.get(), {&x});
  scope.tape({x.get()}, [=](const Replay &r) { return softmax(r[0], dim, log); });
  Session *s = scope.session();
  require_float(fn, "x", *x);
  const int d = wrap_dim(dim, x->ndim, fn, "dim");
  int64_t outer = 1, inner = 1;
  for (int i = 0; i < d; ++i) outer *= x->shape[i];
  for (int i = d + 1; i < x->ndim; ++i) inner *= x->shape[i];
  const int64_t n = x->shape[d];

  TensorPtr xc = contiguous(detach(*x));
  TensorPtr y = empty(s, x->dtype, shape_of(*x));
  if (y->numel() > 0) backend_of(*x).softmax(view_of(*xc), outer, n, inner, log, view_of(*y));

  if (should_record(s, {x.get()})) {
    auto node = std::make_shared<SoftmaxNode>(op);
    node->y = detach(*y);
    node->outer = outer;
    node->n = n;
    node->inner = inner;
    node->log = log;
    record(node, {x.get()}, {y.get()});
  }
  return scope.finish(y);
}

}  // namespace mixp
