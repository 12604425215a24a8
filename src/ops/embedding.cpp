// embedding: rows of a [V, D] table picked by I64 indices. The indices are
// checked by the backend (Backend::check_indices) before the gather, so a
// bad index is an error naming it rather than a read outside the table.
#include <memory>
#include <string>
#include <vector>

#include "autograd/node.hpp"
#include "core/error.hpp"
#include "ops/ops.hpp"

namespace mixp {
namespace {

struct EmbeddingNode : Node {
  using Node::Node;
  TensorPtr indices;  // contiguous I64, flattened to [n]
  DType dtype = MIXP_F32;
  int64_t v = 0, d = 0, padding_idx = -1;

  std::vector<TensorPtr> backward(std::vector<TensorPtr> &grads) override {
    if (released) fail(MIXP_ERR_STATE, "backward of embedding: saved tensors were already freed");
    TensorPtr g = grads[0];
    TensorPtr gy = contiguous(g->dtype == dtype ? g : cast(g, dtype));
    TensorPtr gw = empty(gy->session.get(), dtype, Shape{v, d});
    if (gw->numel() > 0)
      backend_of(*gy).embedding_backward(view_of(*gy), view_of(*indices), padding_idx,
                                         view_of(*gw));
    return {gw};
  }
  void release_saved() override { indices.reset(); }
};

}  // namespace

TensorPtr embedding(const TensorPtr &weight_in, const TensorPtr &indices, int64_t padding_idx) {
  static const char *fn = "mixp_embedding";
  Session *s = same_session(fn, {weight_in.get(), indices.get()});
  TensorPtr weight = weight_in;
  OpScope scope(OpId::embedding, s, {&weight});
  scope.tape({weight.get(), indices.get()},
             [=](const Replay &r) { return embedding(r[0], r[1], padding_idx); });
  require_float(fn, "weight", *weight);
  if (weight->ndim != 2)
    fail(MIXP_ERR_SHAPE, fn, ": weight must be 2-D [V, D], got ", shape_str(*weight));
  if (indices->dtype != MIXP_I64)
    fail(MIXP_ERR_DTYPE, fn, ": indices must have dtype i64, got ", dtype_name(indices->dtype));
  if (indices->ndim >= MIXP_MAX_DIMS)
    fail(MIXP_ERR_SHAPE, fn, ": indices have ", indices->ndim,
         " dims; the result would exceed MIXP_MAX_DIMS (", MIXP_MAX_DIMS, ")");
  const int64_t v = weight->shape[0], d = weight->shape[1];
  if (padding_idx != -1 && (padding_idx < 0 || padding_idx >= v))
    fail(MIXP_ERR_INVALID_ARGUMENT, fn, ": padding_idx = ", padding_idx, " must be -1 (none) or in [0, ",
         v, ")");

  const int64_t n = indices->numel();
  TensorPtr ic = contiguous(detach(*indices));
  const int64_t unit_stride = 1;
  ic = make_view(*ic, Shape{n}, &unit_stride, ic->offset);
  // The backend validates the indices: the CPU fails right here, before
  // anything is allocated or written; a device checks where they live and
  // reports at its next synchronisation (backend.hpp, check_indices).
  const std::string note = " (flat position in indices of shape " + shape_str(*indices) + ")";
  IndexCheck chk;
  chk.fn = fn;
  chk.what = "indices";
  chk.limit = v;
  chk.note = note.c_str();
  backend_of(*ic).check_indices(chk, view_of(*ic), nullptr);

  Shape oshape = shape_of(*indices);
  oshape.d[oshape.ndim++] = d;
  TensorPtr out = empty(s, weight->dtype, oshape);
  TensorPtr wc = contiguous(detach(*weight));
  if (out->numel() > 0) backend_of(*wc).embedding(view_of(*wc), view_of(*ic), view_of(*out));

  if (should_record(s, {weight.get()})) {
    auto node = std::make_shared<EmbeddingNode>(OpId::embedding);
    // A private copy: the caller may overwrite its indices before backward.
    node->indices = clone(ic);
    node->dtype = weight->dtype;
    node->v = v;
    node->d = d;
    node->padding_idx = padding_idx;
    record(node, {weight.get()}, {out.get()});
  }
  return scope.finish(out);
}

}  // namespace mixp
