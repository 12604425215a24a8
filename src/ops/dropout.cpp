// Inverted dropout: y = x * mask / (1 - p) with a U8 mask drawn from the
// session's Philox stream, so a fixed seed reproduces the same masks on any
// device and thread count.
#include <cmath>
#include <memory>
#include <vector>

#include "autograd/node.hpp"
#include "core/error.hpp"
#include "ops/ops.hpp"

namespace mixp {
namespace {

// x * mask is exact (the mask is 0 or 1), so the product is rounded once,
// when it is scaled in the wide type.
TensorPtr apply_mask(const TensorPtr &x, const TensorPtr &mask, double scale) {
  return mul_scalar(mul(x, cast(mask, x->dtype)), scale);
}

struct DropoutNode : Node {
  using Node::Node;
  TensorPtr mask;  // U8, the shape of the input
  double scale = 1.0;

  std::vector<TensorPtr> backward(std::vector<TensorPtr> &grads) override {
    return {apply_mask(grads[0], mask, scale)};
  }
  void release_saved() override { mask.reset(); }
};

}  // namespace

TensorPtr dropout(const TensorPtr &x_in, double p, bool training) {
  static const char *fn = "mixp_dropout";
  TensorPtr x = x_in;
  OpScope scope(OpId::dropout, x->session.get(), {&x});
  scope.tape({x.get()}, [=](const Replay &r) { return dropout(r[0], p, training); });
  Session *s = scope.session();
  require_float(fn, "x", *x);
  if (!(p >= 0.0 && p < 1.0))
    fail(MIXP_ERR_INVALID_ARGUMENT, fn, ": p = ", p, " is outside [0, 1)");
  if (!training || p == 0.0) return scope.produced(x);

  TensorPtr mask = empty(s, MIXP_U8, shape_of(*x));
  const uint64_t n = uint64_t(mask->numel());
  const uint64_t offset = s->take_rng(n);
  if (n > 0) backend_of(*x).dropout_mask(view_of(*mask), p, s->seed, offset);
  const double scale = 1.0 / (1.0 - p);
  TensorPtr y = apply_mask(detach(*x), mask, scale);

  if (should_record(s, {x.get()})) {
    auto node = std::make_shared<DropoutNode>(OpId::dropout);
    node->mask = mask;
    node->scale = scale;
    record(node, {x.get()}, {y.get()});
  }
  try {
    return scope.finish(y);
  } catch (...) {
    // A call the numerics checker fails must not consume random numbers.
    s->rng_offset = offset;
    throw;
  }
}

}  // namespace mixp
