// View operations: new geometry over the same storage, no copy (reshape
// copies only when the strides make a view impossible).
#include <algorithm>
#include <numeric>

#include "autograd/node.hpp"
#include "core/error.hpp"
#include "ops/ops.hpp"

namespace mixp {

namespace {

struct ReshapeNode : Node {
  using Node::Node;
  std::vector<TensorPtr> backward(std::vector<TensorPtr> &g) override {
    return {reshape(g[0], input_shapes[0])};
  }
};

struct PermuteNode : Node {
  using Node::Node;
  std::vector<int> inverse;
  std::vector<TensorPtr> backward(std::vector<TensorPtr> &g) override {
    return {permute(g[0], inverse.data(), int(inverse.size()))};
  }
};

struct SliceNode : Node {
  using Node::Node;
  int dim = 0;
  int64_t start = 0, step = 1;
  std::vector<TensorPtr> backward(std::vector<TensorPtr> &g) override {
    const Shape &in = input_shapes[0];
    TensorPtr gx = zeros(g[0]->session.get(), g[0]->dtype, in);
    int64_t strides[MIXP_MAX_DIMS];
    for (int i = 0; i < in.ndim; ++i) strides[i] = gx->strides[i];
    strides[dim] *= step;
    TensorPtr region = make_view(*gx, shape_of(*g[0]), strides, start * gx->strides[dim]);
    copy_into(*region, *g[0]);
    return {gx};
  }
};

struct ExpandNode : Node {
  using Node::Node;
  std::vector<TensorPtr> backward(std::vector<TensorPtr> &g) override {
    return {sum_to(g[0], input_shapes[0])};
  }
};

// Strides for viewing (shape, strides) as `target` without copying, or
// false when impossible (the algorithm of PyTorch's computeStride).
bool view_strides(const Tensor &x, const Shape &target, int64_t *out) {
  if (x.numel() == 0 || x.is_contiguous()) {
    contiguous_strides(target, out);
    return true;
  }
  int64_t oshape[MIXP_MAX_DIMS], ostride[MIXP_MAX_DIMS];
  int ond = x.ndim;
  for (int i = 0; i < ond; ++i) {
    oshape[i] = x.shape[i];
    ostride[i] = x.strides[i];
  }
  int view_d = target.ndim - 1;
  int64_t chunk_base = ostride[ond - 1];
  int64_t tensor_numel = 1, view_numel = 1;
  for (int d = ond - 1; d >= 0; --d) {
    tensor_numel *= oshape[d];
    if (d == 0 || (oshape[d - 1] != 1 && ostride[d - 1] != tensor_numel * chunk_base)) {
      while (view_d >= 0 && (view_numel < tensor_numel || target.d[view_d] == 1)) {
        out[view_d] = view_numel * chunk_base;
        view_numel *= target.d[view_d];
        --view_d;
      }
      if (view_numel != tensor_numel) return false;
      if (d > 0) {
        chunk_base = ostride[d - 1];
        tensor_numel = 1;
        view_numel = 1;
      }
    }
  }
  return view_d == -1;
}

}  // namespace

TensorPtr reshape(const TensorPtr &x, const Shape &shape_in) {
  const char *fn = "mixp_reshape";
  OpScope scope(OpId::reshape, x->session.get());
  scope.tape({x.get()}, [shape_in](const Replay &r) { return reshape(r[0], shape_in); });
  Shape shape = shape_in;
  int infer = -1;
  int64_t known = 1;
  for (int i = 0; i < shape.ndim; ++i) {
    if (shape.d[i] == -1) {
      if (infer >= 0) fail(MIXP_ERR_INVALID_ARGUMENT, fn, ": only one dimension can be -1, got ", shape_str(shape));
      infer = i;
    } else if (shape.d[i] < 0) {
      fail(MIXP_ERR_INVALID_ARGUMENT, fn, ": shape[", i, "] is negative (", shape.d[i], ")");
    } else if (!mul_fits(known, shape.d[i], &known)) {
      fail(MIXP_ERR_SHAPE, fn, ": cannot reshape x of shape ", shape_str(*x), " into ", shape_str(shape),
           " (more elements than a tensor can hold)");
    }
  }
  const int64_t n = x->numel();
  if (infer >= 0) {
    if (known == 0 || n % known != 0)
      fail(MIXP_ERR_SHAPE, fn, ": cannot reshape x of shape ", shape_str(*x), " into ", shape_str(shape));
    shape.d[infer] = n / known;
  }
  if (shape.numel() != n)
    fail(MIXP_ERR_SHAPE, fn, ": cannot reshape x of shape ", shape_str(*x), " (", n, " elements) into ",
         shape_str(shape), " (", shape.numel(), " elements)");
  int64_t strides[MIXP_MAX_DIMS];
  TensorPtr out;
  if (view_strides(*x, shape, strides)) {
    out = make_view(*x, shape, strides, x->offset);
  } else {
    TensorPtr c = clone(x);
    contiguous_strides(shape, strides);
    out = make_view(*c, shape, strides, 0);
    out->is_view = false;
  }
  if (should_record(x->session.get(), {x.get()})) {
    auto node = std::make_shared<ReshapeNode>(OpId::reshape);
    record(node, {x.get()}, {out.get()});
  }
  return scope.produced(out);
}

TensorPtr permute(const TensorPtr &x, const int *dims, int ndim) {
  const char *fn = "mixp_permute";
  OpScope scope(OpId::permute, x->session.get());
  if (ndim != x->ndim)
    fail(MIXP_ERR_INVALID_ARGUMENT, fn, ": dims has ", ndim, " entries but x has ", x->ndim, " dimensions");
  bool used[MIXP_MAX_DIMS] = {};
  std::vector<int> perm(static_cast<size_t>(ndim)), inverse(static_cast<size_t>(ndim));
  for (int i = 0; i < ndim; ++i) {
    const int d = wrap_dim(dims[i], ndim, fn, "dims entry");
    if (used[d]) fail(MIXP_ERR_INVALID_ARGUMENT, fn, ": dims repeats dimension ", d);
    used[d] = true;
    perm[size_t(i)] = d;
    inverse[size_t(d)] = i;
  }
  scope.tape({x.get()}, [perm](const Replay &r) { return permute(r[0], perm.data(), int(perm.size())); });
  Shape shape;
  shape.ndim = ndim;
  int64_t strides[MIXP_MAX_DIMS];
  for (int i = 0; i < ndim; ++i) {
    shape.d[i] = x->shape[perm[size_t(i)]];
    strides[i] = x->strides[perm[size_t(i)]];
  }
  TensorPtr out = make_view(*x, shape, strides, x->offset);
  if (should_record(x->session.get(), {x.get()})) {
    auto node = std::make_shared<PermuteNode>(OpId::permute);
    node->inverse = inverse;
    record(node, {x.get()}, {out.get()});
  }
  return scope.produced(out);
}

TensorPtr transpose(const TensorPtr &x, int dim0, int dim1) {
  const char *fn = "mixp_transpose";
  const int a = wrap_dim(dim0, x->ndim, fn, "dim0");
  const int b = wrap_dim(dim1, x->ndim, fn, "dim1");
  std::vector<int> perm(size_t(x->ndim));
  std::iota(perm.begin(), perm.end(), 0);
  std::swap(perm[size_t(a)], perm[size_t(b)]);
  return permute(x, perm.data(), x->ndim);
}

TensorPtr slice(const TensorPtr &x, int dim, int64_t start, int64_t end, int64_t step) {
  const char *fn = "mixp_slice";
  OpScope scope(OpId::slice, x->session.get());
  scope.tape({x.get()}, [=](const Replay &r) { return slice(r[0], dim, start, end, step); });
  const int d = wrap_dim(dim, x->ndim, fn);
  if (step < 1) fail(MIXP_ERR_INVALID_ARGUMENT, fn, ": step must be >= 1, got ", step);
  const int64_t size = x->shape[d];
  if (start < 0) start += size;
  if (end < 0) end += size;
  start = std::clamp<int64_t>(start, 0, size);
  end = std::clamp<int64_t>(end, start, size);
  Shape shape = shape_of(*x);
  shape.d[d] = end == start ? 0 : (end - start - 1) / step + 1;
  // With at most one element taken the step is irrelevant; any step that
  // large (up to INT64_MAX) would overflow the stride.
  if (shape.d[d] <= 1) step = 1;
  int64_t strides[MIXP_MAX_DIMS];
  for (int i = 0; i < x->ndim; ++i) strides[i] = x->strides[i];
  strides[d] *= step;
  TensorPtr out = make_view(*x, shape, strides, x->offset + start * x->strides[d]);
  if (should_record(x->session.get(), {x.get()})) {
    auto node = std::make_shared<SliceNode>(OpId::slice);
    node->dim = d;
    node->start = start;
    node->step = step;
    record(node, {x.get()}, {out.get()});
  }
  return scope.produced(out);
}

TensorPtr expand(const TensorPtr &x, const Shape &shape) {
  const char *fn = "mixp_expand";
  OpScope scope(OpId::expand, x->session.get());
  scope.tape({x.get()}, [shape](const Replay &r) { return expand(r[0], shape); });
  if (broadcast_shapes(fn, shape_of(*x), shape) != shape)
    fail(MIXP_ERR_SHAPE, fn, ": x of shape ", shape_str(*x), " does not broadcast to ", shape_str(shape));
  View v = broadcast_view(*x, shape);
  TensorPtr out = make_view(*x, shape, v.strides, x->offset);
  if (should_record(x->session.get(), {x.get()})) {
    auto node = std::make_shared<ExpandNode>(OpId::expand);
    record(node, {x.get()}, {out.get()});
  }
  return scope.produced(out);
}

}  // namespace mixp
