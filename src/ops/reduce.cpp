// Reductions: sum and mean over any set of dims, max/argmax along one dim.
// Sums move the reduced dims to the end and reduce rows of one contiguous
// buffer, so a single kernel (sum_rows) serves every combination of dims.
#include <memory>
#include <vector>

#include "autograd/node.hpp"
#include "core/error.hpp"
#include "ops/ops.hpp"

namespace mixp {
namespace {

// Normalises `dims` against ndim into a per-dim flag; empty means all dims.
std::vector<bool> reduced_dims(const char *fn, const std::vector<int> &dims, int ndim) {
  std::vector<bool> red(size_t(ndim), dims.empty());
  for (size_t i = 0; i < dims.size(); ++i) {
    int d = dims[i];
    if (d < -ndim || d >= ndim)
      fail(MIXP_ERR_INVALID_ARGUMENT, fn, ": dims[", i, "] = ", d, " is out of range [", -ndim,
           ", ", ndim, ") for a tensor with ", ndim, " dims");
    if (d < 0) d += ndim;
    if (red[size_t(d)])
      fail(MIXP_ERR_INVALID_ARGUMENT, fn, ": dims[", i, "] = ", dims[i], " repeats dim ", d);
    red[size_t(d)] = true;
  }
  return red;
}

struct SumNode : Node {
  using Node::Node;
  Shape in_shape;
  Shape keep_shape;  // the output shape with reduced dims kept as 1
  double scale = 1.0;

  std::vector<TensorPtr> backward(std::vector<TensorPtr> &grads) override {
    TensorPtr g = grads[0];
    if (scale != 1.0) g = mul_scalar(g, scale);
    g = reshape(g, keep_shape);
    return {contiguous(expand(g, in_shape))};
  }
};

TensorPtr sum_impl(OpId op, const TensorPtr &x_in, const std::vector<int> &dims, bool keepdim,
                   bool is_mean) {
  const char *fn = op_info(op).c_function;
  TensorPtr x = x_in;
  OpScope scope(op, x->session.get(), {&x});
  scope.tape({x.get()}, [=](const Replay &r) { return sum_impl(op, r[0], dims, keepdim, is_mean); });
  Session *s = scope.session();
  require_float(fn, "x", *x);
  const int nd = x->ndim;
  std::vector<bool> red = reduced_dims(fn, dims, nd);

  int perm[MIXP_MAX_DIMS];
  int np = 0;
  bool identity = true;
  Shape out_shape, keep_shape;
  int64_t rows = 1, cols = 1;
  for (int d = 0; d < nd; ++d)
    if (!red[size_t(d)]) {
      perm[np++] = d;
      rows *= x->shape[d];
      out_shape.d[out_shape.ndim++] = x->shape[d];
    }
  for (int d = 0; d < nd; ++d)
    if (red[size_t(d)]) {
      perm[np++] = d;
      cols *= x->shape[d];
    }
  for (int d = 0; d < nd; ++d) {
    identity = identity && perm[d] == d;
    keep_shape.d[keep_shape.ndim++] = red[size_t(d)] ? 1 : x->shape[d];
  }
  if (keepdim) out_shape = keep_shape;

  // Reducing a leading block of dims of a contiguous tensor (bias gradients,
  // batch means) reads the rows in place: no transposed copy.
  int lead = 0;
  while (lead < nd && red[size_t(lead)]) ++lead;
  bool leading = lead > 0 && lead < nd && x->is_contiguous();
  for (int d = lead; d < nd; ++d) leading = leading && !red[size_t(d)];
  const double scale = is_mean ? 1.0 / double(cols) : 1.0;  // mean of nothing is NaN, as in PyTorch
  TensorPtr y = empty(s, x->dtype, out_shape);
  if (leading) {
    if (rows > 0) backend_of(*x).sum_cols(view_of(*x), cols, rows, view_of(*y), scale);
  } else {
    // Work on a detached alias so the permute/copy below records nothing.
    TensorPtr xd = detach(*x);
    if (!identity) xd = permute(xd, perm, nd);
    xd = contiguous(xd);
    if (rows > 0) backend_of(*x).sum_rows(view_of(*xd), rows, cols, view_of(*y), scale);
  }

  if (should_record(s, {x.get()})) {
    auto node = std::make_shared<SumNode>(op);
    node->in_shape = shape_of(*x);
    node->keep_shape = keep_shape;
    node->scale = scale;
    record(node, {x.get()}, {y.get()});
  }
  return scope.finish(y);
}

// Geometry of a reduction along one dim: [outer, n, inner].
struct AxisSplit {
  int dim = 0;
  int64_t outer = 1, n = 1, inner = 1;
  Shape out_shape;
  Shape keep_shape;
};

AxisSplit split_axis(const char *fn, const Tensor &x, int dim, bool keepdim) {
  AxisSplit a;
  a.dim = wrap_dim(dim, x.ndim, fn, "dim");
  for (int d = 0; d < x.ndim; ++d) {
    if (d < a.dim) a.outer *= x.shape[d];
    if (d > a.dim) a.inner *= x.shape[d];
    if (d != a.dim) a.out_shape.d[a.out_shape.ndim++] = x.shape[d];
    a.keep_shape.d[a.keep_shape.ndim++] = d == a.dim ? 1 : x.shape[d];
  }
  a.n = x.shape[a.dim];
  if (keepdim) a.out_shape = a.keep_shape;
  if (a.n == 0 && a.outer * a.inner > 0)
    fail(MIXP_ERR_SHAPE, fn, ": dim ", dim, " has size 0 in ", shape_str(x),
         " and an empty dim has no maximum");
  return a;
}

// Routes the gradient of the maxima to the first maximal position of each
// slice, by a scatter on the backend's device (no host round trip).
struct MaxNode : Node {
  using Node::Node;
  TensorPtr indices;  // I64, contiguous [outer, inner]
  Shape in_shape;
  DType dtype = MIXP_F32;
  int64_t outer = 1, n = 1, inner = 1;

  std::vector<TensorPtr> backward(std::vector<TensorPtr> &grads) override {
    TensorPtr g = contiguous(grads[0]->dtype == dtype ? grads[0] : cast(grads[0], dtype));
    TensorPtr gx = empty(g->session.get(), dtype, in_shape);
    if (gx->numel() > 0)
      backend_of(*g).scatter_dim(view_of(*g), view_of(*indices), outer, n, inner, view_of(*gx));
    return {gx};
  }
  void release_saved() override { indices.reset(); }
};

}  // namespace

TensorPtr sum(const TensorPtr &x, const std::vector<int> &dims, bool keepdim) {
  return sum_impl(OpId::sum, x, dims, keepdim, false);
}

TensorPtr mean(const TensorPtr &x, const std::vector<int> &dims, bool keepdim) {
  return sum_impl(OpId::mean, x, dims, keepdim, true);
}

void max(const TensorPtr &x_in, int dim, bool keepdim, TensorPtr *values, TensorPtr *indices) {
  TensorPtr x = x_in;
  OpScope scope(OpId::max, x->session.get(), {&x});
  const bool want_values = values != nullptr;
  scope.tape({x.get()}, [=](const Replay &r) {
    TensorPtr v, i;
    max(r[0], dim, keepdim, want_values ? &v : nullptr, &i);
    return std::vector<TensorPtr>{v, i};
  });
  Session *s = scope.session();
  if (x->dtype == MIXP_BOOL)
    fail(MIXP_ERR_DTYPE, "mixp_max: x has dtype bool, which has no order");
  AxisSplit a = split_axis("mixp_max", *x, dim, keepdim);
  TensorPtr xc = contiguous(detach(*x));
  TensorPtr vals = values ? empty(s, x->dtype, a.out_shape) : TensorPtr();
  TensorPtr idx = empty(s, MIXP_I64, a.out_shape);
  if (a.outer * a.inner > 0) {
    View vv = vals ? view_of(*vals) : View{};
    backend_of(*x).max_dim(view_of(*xc), a.outer, a.n, a.inner, vals ? &vv : nullptr,
                           view_of(*idx));
  }
  if (vals && should_record(s, {x.get()})) {
    auto node = std::make_shared<MaxNode>(OpId::max);
    node->indices = idx;
    node->in_shape = shape_of(*x);
    node->dtype = x->dtype;
    node->outer = a.outer;
    node->n = a.n;
    node->inner = a.inner;
    record(node, {x.get()}, {vals.get()});
  }
  if (vals) scope.check_output(*vals, 0);
  scope.produced(idx, 1);
  if (values) *values = vals;
  if (indices) *indices = idx;
}

TensorPtr argmax(const TensorPtr &x_in, int dim, bool keepdim) {
  TensorPtr x = x_in;
  OpScope scope(OpId::argmax, x->session.get(), {&x});
  scope.tape({x.get()}, [=](const Replay &r) { return argmax(r[0], dim, keepdim); });
  if (x->dtype == MIXP_BOOL)
    fail(MIXP_ERR_DTYPE, "mixp_argmax: x has dtype bool, which has no order");
  AxisSplit a = split_axis("mixp_argmax", *x, dim, keepdim);
  TensorPtr xc = contiguous(detach(*x));
  TensorPtr idx = empty(scope.session(), MIXP_I64, a.out_shape);
  if (a.outer * a.inner > 0)
    backend_of(*x).max_dim(view_of(*xc), a.outer, a.n, a.inner, nullptr, view_of(*idx));
  return scope.finish(idx);
}

}  // namespace mixp
