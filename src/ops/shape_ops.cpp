// Shape operations built on views: split (one view per piece, one node for
// all of them), flatten (a reshape) and constant padding (whose backward is
// padding by the negated amounts, i.e. the slice of the gradient that the
// input occupies).
#include <algorithm>
#include <memory>
#include <vector>

#include "autograd/node.hpp"
#include "core/error.hpp"
#include "ops/ops.hpp"

namespace mixp {
namespace {

struct PadNode : Node {
  using Node::Node;
  std::vector<int64_t> pads;
  std::vector<TensorPtr> backward(std::vector<TensorPtr> &g) override {
    std::vector<int64_t> inv(pads.size());
    for (size_t i = 0; i < pads.size(); ++i) inv[i] = -pads[i];
    return {pad(g[0], inv, 0.0)};
  }
};

// The pieces' gradients written into one gradient of x, as cat writes its
// inputs (write_along): one buffer and one copy per piece, where a slice
// node per piece would fill a zero tensor of x's size for each and the
// engine then add them up. Only pieces without a gradient are zeroed.
struct SplitNode : Node {
  using Node::Node;
  int dim = 0;
  std::vector<int64_t> starts;  // one more than pieces
  std::vector<TensorPtr> backward(std::vector<TensorPtr> &g) override {
    Session *s = nullptr;
    for (const TensorPtr &gi : g)
      if (gi) s = gi->session.get();
    TensorPtr gx = empty(s, input_dtypes[0], input_shapes[0]);
    write_along(*gx, dim, g, starts);
    return {gx};
  }
};

}  // namespace

std::vector<TensorPtr> split(const TensorPtr &x, const std::vector<int64_t> &sizes, int dim) {
  static const char *fn = "mixp_split";
  OpScope scope(OpId::split, x->session.get());
  scope.tape({x.get()}, [=](const Replay &r) { return split(r[0], sizes, dim); });
  if (x->ndim == 0) fail(MIXP_ERR_SHAPE, fn, ": x is a scalar (0-d); there is no dim to split");
  const int d = wrap_dim(dim, x->ndim, fn, "dim");
  if (sizes.empty()) fail(MIXP_ERR_INVALID_ARGUMENT, fn, ": n must be >= 1, got 0");
  int64_t total = 0;
  for (size_t i = 0; i < sizes.size(); ++i) {
    if (sizes[i] < 0)
      fail(MIXP_ERR_INVALID_ARGUMENT, fn, ": sizes[", i, "] = ", sizes[i], " is negative");
    if (sizes[i] > x->shape[d] - total)  // (total <= shape[d]: no overflow)
      fail(MIXP_ERR_SHAPE, fn, ": sizes[0..", i, "] add up to more than dim ", d, " of x (shape ",
           shape_str(*x), "), which has size ", x->shape[d]);
    total += sizes[i];
  }
  if (total != x->shape[d])
    fail(MIXP_ERR_SHAPE, fn, ": sizes add up to ", total, " but dim ", d, " of x (shape ",
         shape_str(*x), ") has size ", x->shape[d]);
  std::vector<TensorPtr> outs;
  std::vector<Tensor *> raw;
  outs.reserve(sizes.size());
  int64_t start = 0;
  for (int64_t sz : sizes) {
    Shape piece = shape_of(*x);
    piece.d[d] = sz;
    outs.push_back(make_view(*x, piece, x->strides, x->offset + start * x->strides[d]));
    raw.push_back(outs.back().get());
    start += sz;
  }
  if (should_record(x->session.get(), {x.get()})) {
    auto node = std::make_shared<SplitNode>(OpId::split);
    node->dim = d;
    node->starts.assign(1, 0);
    for (int64_t sz : sizes) node->starts.push_back(node->starts.back() + sz);
    record(node, {x.get()}, raw);
  }
  for (size_t i = 0; i < outs.size(); ++i) outs[i] = scope.produced(outs[i], int(i));
  return outs;
}

TensorPtr flatten(const TensorPtr &x, int start_dim, int end_dim) {
  static const char *fn = "mixp_flatten";
  OpScope scope(OpId::flatten, x->session.get());
  scope.tape({x.get()}, [=](const Replay &r) { return flatten(r[0], start_dim, end_dim); });
  if (x->ndim == 0) {
    // As PyTorch: a scalar flattens to [1]; only dims 0 and -1 name it.
    for (int dd : {start_dim, end_dim})
      if (dd != 0 && dd != -1)
        fail(MIXP_ERR_INVALID_ARGUMENT, fn, ": dim ", dd, " is out of range for a 0-d x");
    return scope.produced(reshape(x, Shape{1}));
  }
  const int s = wrap_dim(start_dim, x->ndim, fn, "start_dim");
  const int e = wrap_dim(end_dim, x->ndim, fn, "end_dim");
  if (s > e)
    fail(MIXP_ERR_INVALID_ARGUMENT, fn, ": start_dim (", start_dim, " -> ", s,
         ") comes after end_dim (", end_dim, " -> ", e, ")");
  Shape shape;
  for (int i = 0; i < s; ++i) shape.d[shape.ndim++] = x->shape[i];
  int64_t merged = 1;
  for (int i = s; i <= e; ++i) merged *= x->shape[i];
  shape.d[shape.ndim++] = merged;
  for (int i = e + 1; i < x->ndim; ++i) shape.d[shape.ndim++] = x->shape[i];
  return scope.produced(reshape(x, shape));
}

TensorPtr pad(const TensorPtr &x_in, const std::vector<int64_t> &pads, double value) {
  static const char *fn = "mixp_pad";
  TensorPtr x = x_in;
  OpScope scope(OpId::pad, x->session.get(), {&x});
  scope.tape({x.get()}, [=](const Replay &r) { return pad(r[0], pads, value); });
  Session *s = scope.session();
  require_float(fn, "x", *x);
  const int np = int(pads.size());
  if (np % 2 != 0 || np > 2 * x->ndim)
    fail(MIXP_ERR_INVALID_ARGUMENT, fn, ": npads = ", np, " must be even and at most 2*ndim = ",
         2 * x->ndim, " for x of shape ", shape_str(*x));
  // Per dim: the output size, the part of x that is kept (after cropping)
  // and where it lands in the output.
  Shape oshape = shape_of(*x), kept = shape_of(*x);
  int64_t src_off = x->offset, dst_pos[MIXP_MAX_DIMS] = {};
  for (int j = 0; j < np / 2; ++j) {
    const int d = x->ndim - 1 - j;
    const int64_t before = pads[size_t(2 * j)], after = pads[size_t(2 * j + 1)];
    int64_t grown = 0;
    if (before < -kMaxElements || after < -kMaxElements || !add_fits(before, after, &grown) ||
        !add_fits(grown, x->shape[d], &grown) || grown > kMaxElements)
      fail(MIXP_ERR_INVALID_ARGUMENT, fn, ": pads (", before, ", ", after, ") of dim ", d, " (size ",
           x->shape[d], ") give a size beyond 2^62");
    // Each cut is at most 2^62 (checked above), but both together may not fit.
    const int64_t cut_before = std::max<int64_t>(0, -before), cut_after = std::max<int64_t>(0, -after);
    int64_t crop = 0;
    if (!add_fits(cut_before, cut_after, &crop) || crop > x->shape[d])
      fail(MIXP_ERR_SHAPE, fn, ": pads (", before, ", ", after, ") crop ", cut_before, " + ", cut_after,
           " elements from dim ", d, " of size ", x->shape[d], " (x is ", shape_str(*x), ")");
    kept.d[d] = x->shape[d] - crop;
    oshape.d[d] = grown;
    src_off += std::max<int64_t>(0, -before) * x->strides[d];
    dst_pos[d] = std::max<int64_t>(0, before);
  }
  TensorPtr out = full(s, x->dtype, oshape, value);
  if (kept.numel() > 0) {
    int64_t dst_off = out->offset;
    for (int d = 0; d < x->ndim; ++d) dst_off += dst_pos[d] * out->strides[d];
    TensorPtr src = make_view(*x, kept, x->strides, src_off);
    TensorPtr dst = make_view(*out, kept, out->strides, dst_off);
    copy_into(*dst, *src);
  }
  if (should_record(s, {x.get()})) {
    auto node = std::make_shared<PadNode>(OpId::pad);
    node->pads = pads;
    record(node, {x.get()}, {out.get()});
  }
  return scope.finish(out);
}

}  // namespace mixp
