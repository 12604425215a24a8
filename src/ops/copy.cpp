// Copies, casts and random fills.
#include "autograd/node.hpp"
#include "core/error.hpp"
#include "ops/ops.hpp"

namespace mixp {

namespace {

struct CastNode : Node {
  using Node::Node;
  std::vector<TensorPtr> backward(std::vector<TensorPtr> &g) override {
    return {cast(g[0], input_dtypes[0])};
  }
};

// Contiguous is a copy that keeps the dtype; its gradient passes through.
struct IdentityNode : Node {
  using Node::Node;
  std::vector<TensorPtr> backward(std::vector<TensorPtr> &g) override { return {g[0]}; }
};

}  // namespace

TensorPtr clone(const TensorPtr &x) {
  TensorPtr out = empty(x->session.get(), x->dtype, shape_of(*x));
  if (out->numel() > 0) backend_of(*x).copy(view_of(*x), view_of(*out));
  return out;
}

TensorPtr contiguous(const TensorPtr &x) {
  if (x->is_contiguous()) return x;
  OpScope scope(OpId::contiguous, x->session.get());
  scope.tape({x.get()}, [](const Replay &r) { return contiguous(r[0]); });
  TensorPtr out = clone(x);
  if (should_record(x->session.get(), {x.get()})) {
    auto node = std::make_shared<IdentityNode>(OpId::contiguous);
    record(node, {x.get()}, {out.get()});
  }
  return scope.produced(out);
}

TensorPtr cast(const TensorPtr &x, DType dtype) {
  if (x->dtype == dtype) return x;
  OpScope scope(OpId::cast, x->session.get());
  scope.tape({x.get()}, [dtype](const Replay &r) { return cast(r[0], dtype); });
  TensorPtr out = empty(x->session.get(), dtype, shape_of(*x));
  if (out->numel() > 0) backend_of(*x).copy(view_of(*x), view_of(*out));
  if (is_float(x->dtype) && is_float(dtype) && should_record(x->session.get(), {x.get()})) {
    auto node = std::make_shared<CastNode>(OpId::cast);
    record(node, {x.get()}, {out.get()});
  }
  // Narrowing to a 16-bit or 8-bit float is where overflow to Inf starts
  // (autocast's casts included), so the numerics checker looks at those casts.
  const bool narrows = (is_half(dtype) && !is_half(x->dtype)) || (is_fp8(dtype) && !is_fp8(x->dtype));
  return narrows ? scope.finish(out) : scope.produced(out);
}

void copy_into(Tensor &dst, const Tensor &src) {
  const char *fn = "mixp_tensor_copy_";
  Shape ds = shape_of(dst);
  Shape b = broadcast_shapes(fn, ds, shape_of(src));
  if (b != ds)
    fail(MIXP_ERR_SHAPE, fn, ": src of shape ", shape_str(src), " does not broadcast to dst of shape ",
         shape_str(ds));
  if (dst.numel() == 0) return;
  // Source and destination may overlap (a view of itself): go through a copy.
  const bool overlap = dst.storage == src.storage;
  TensorPtr tmp = overlap ? clone(TensorPtr::share(const_cast<Tensor *>(&src))) : TensorPtr();
  const Tensor &s = overlap ? *tmp : src;
  backend_of(dst).copy(broadcast_view(s, ds), view_of(dst));
}

TensorPtr rand_uniform(Session *s, DType dtype, const Shape &shape) {
  TensorPtr t = empty(s, dtype, shape);
  const int64_t n = t->numel();
  // Four uniforms per Philox block.
  const uint64_t offset = s->take_rng(uint64_t(n + 3) / 4);
  if (n > 0) s->backend->rand_uniform(view_of(*t), s->seed, offset);
  return t;
}

TensorPtr rand_normal(Session *s, DType dtype, const Shape &shape) {
  TensorPtr t = empty(s, dtype, shape);
  const int64_t n = t->numel();
  // Two normals per Philox block (one Box-Muller pair).
  const uint64_t offset = s->take_rng(uint64_t(n + 1) / 2);
  if (n > 0) s->backend->rand_normal(view_of(*t), s->seed, offset);
  return t;
}

}  // namespace mixp
