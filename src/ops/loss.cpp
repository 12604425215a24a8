// Losses: softmax cross-entropy over class indices (fused kernel, PyTorch's
// ignore_index, label_smoothing and reduction semantics) and the mean
// squared error.
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "autocast/autocast.hpp"
#include "autograd/node.hpp"
#include "core/error.hpp"
#include "ops/ops.hpp"

namespace mixp {
namespace {

void check_reduction(const char *fn, mixp_reduction r) {
  if (r != MIXP_REDUCTION_MEAN && r != MIXP_REDUCTION_SUM && r != MIXP_REDUCTION_NONE)
    fail(MIXP_ERR_INVALID_ARGUMENT, fn, ": reduction = ", int(r),
         " is not a mixp_reduction (0 mean, 1 sum, 2 none)");
}

// Per-row losses are kept in F64 for F64 logits (gradient checks need the
// precision) and in F32 otherwise, so half logits accumulate in fp32.
DType loss_dtype(DType logits) { return logits == MIXP_F64 ? MIXP_F64 : MIXP_F32; }

struct CrossEntropyNode : Node {
  using Node::Node;
  TensorPtr logits;  // contiguous, detached
  TensorPtr target;  // contiguous I64
  mixp_reduction reduction = MIXP_REDUCTION_MEAN;
  int64_t ignore_index = MIXP_IGNORE_INDEX_DEFAULT;
  double label_smoothing = 0.0;
  int64_t n = 0, c = 0;
  TensorPtr inv_count;  // F64 scalar on the device: 1/count for the mean

  std::vector<TensorPtr> backward(std::vector<TensorPtr> &grads) override {
    const DType ldt = loss_dtype(logits->dtype);
    TensorPtr g = grads[0];
    TensorPtr rs;
    if (reduction == MIXP_REDUCTION_NONE) {
      rs = contiguous(cast(g, ldt));
    } else {
      rs = contiguous(cast(expand(reshape(g, Shape{1}), Shape{n}), ldt));
      // Rounding 1/count to the loss dtype first keeps the bits of a
      // multiply by a host scalar (mul_scalar), without reading the count.
      if (reduction == MIXP_REDUCTION_MEAN) rs = mul(rs, cast(inv_count, ldt));
    }
    TensorPtr gl = empty(logits->session.get(), logits->dtype, shape_of(*logits));
    if (gl->numel() > 0)
      backend_of(*logits).cross_entropy_backward(view_of(*logits), view_of(*target), n, c,
                                                 ignore_index, label_smoothing, view_of(*rs),
                                                 view_of(*gl));
    return {gl};
  }
  void release_saved() override {
    logits.reset();
    target.reset();
    inv_count.reset();
  }
};

// The per-sample losses (n, in the loss dtype) under `reduction`;
// inv_count is 1 / the number of non-ignored targets (F64, on the device).
TensorPtr reduced_losses(const TensorPtr &losses, mixp_reduction reduction, const Tensor &inv_count) {
  if (reduction == MIXP_REDUCTION_NONE) return losses;
  Session *s = losses->session.get();
  Backend &be = backend_of(*losses);
  const DType ldt = losses->dtype;
  const int64_t n = losses->shape[0];
  if (reduction == MIXP_REDUCTION_SUM) {
    TensorPtr out = empty(s, ldt, Shape{});
    be.sum_rows(view_of(*losses), 1, n, view_of(*out), 1.0);
    return out;
  }
  // The sum in double times 1/count in double, rounded once to ldt: the
  // bits of sum_rows(scale = 1/count) with the count left on the device.
  // PyTorch's mean over zero non-ignored targets is 0/0 = NaN; 0 * inf gives it.
  TensorPtr total = empty(s, MIXP_F64, Shape{});
  be.sum_rows(view_of(*losses), 1, n, view_of(*total), 1.0);
  TensorPtr mean64 = empty(s, MIXP_F64, Shape{});
  be.binary(BinaryOp::Mul, view_of(*total), view_of(inv_count), view_of(*mean64));
  if (ldt == MIXP_F64) return mean64;
  TensorPtr out = empty(s, ldt, Shape{});
  be.copy(view_of(*mean64), view_of(*out));
  return out;
}

// Whether autocast would cast half logits to F32 for this call (the op's
// fp32 category, or a custom fp32 list). The kernels compute in fp32 from
// any float logits, so such logits are read as they are instead: the same
// loss and gradients as after the cast (widening is exact; the gradient is
// rounded once to the logits' dtype either way), without an F32 copy of the
// logits and its cast back in backward (at GPT-2's vocabulary and batch 8 x
// 1024, 1.6 GB written and read twice). The loss is F32, as after the cast.
bool reads_half_as_fp32(const TensorPtr &logits) {
  if (!logits || (logits->dtype != MIXP_F16 && logits->dtype != MIXP_BF16)) return false;
  Session *s = logits->session.get();
  if (!s->autocast || s->op_depth != 0) return false;
  const std::optional<DType> to = autocast::cast_target(s, OpId::cross_entropy, {logits->dtype});
  return to && *to == MIXP_F32;
}

TensorPtr cross_entropy_as(const TensorPtr &logits_in, const TensorPtr &target, mixp_reduction reduction,
                           int64_t ignore_index, double label_smoothing, const char *fn, bool fp32_loss) {
  // With fp32_loss the scope casts nothing (reads_half_as_fp32).
  std::vector<TensorPtr> inputs;
  if (!fp32_loss) inputs.push_back(logits_in);
  OpScope scope(OpId::cross_entropy, logits_in->session.get(), inputs);
  const TensorPtr logits = fp32_loss ? logits_in : inputs[0];
  scope.tape({logits.get(), target.get()}, [=](const Replay &r) {
    return cross_entropy_as(r[0], r[1], reduction, ignore_index, label_smoothing, fn, fp32_loss);
  });
  Session *s = same_session(fn, {logits.get(), target.get()});
  check_reduction(fn, reduction);
  if (!(label_smoothing >= 0.0 && label_smoothing <= 1.0))
    fail(MIXP_ERR_INVALID_ARGUMENT, fn, ": label_smoothing = ", label_smoothing, " is outside [0, 1]");
  require_float(fn, "logits", *logits);
  if (target->dtype != MIXP_I64)
    fail(MIXP_ERR_DTYPE, fn, ": target must have dtype i64 (class indices), got ",
         dtype_name(target->dtype));
  if (logits->ndim != 2)
    fail(MIXP_ERR_SHAPE, fn, ": logits must be 2-D [N, C], got ", shape_str(*logits));
  const int64_t n = logits->shape[0], c = logits->shape[1];
  if (target->ndim != 1 || target->shape[0] != n)
    fail(MIXP_ERR_SHAPE, fn, ": target must be [", n, "] for logits ", shape_str(*logits),
         ", got ", shape_str(*target));

  Backend &be = backend_of(*logits);
  TensorPtr tc = contiguous(detach(*target));
  // The backend validates the targets (an out-of-range class must be an
  // error naming it, never a kernel reading outside its row) and counts the
  // non-ignored ones for the mean, where they live: the CPU fails right
  // here, a device reports at its next synchronisation (backend.hpp).
  const std::string note = " and is not ignore_index (" + std::to_string(ignore_index) + ")";
  IndexCheck chk;
  chk.fn = fn;
  chk.what = "target";
  chk.limit = c;
  chk.has_ignore = true;
  chk.ignore = ignore_index;
  chk.note = note.c_str();
  TensorPtr inv_count = empty(s, MIXP_F64, Shape{});
  const View inv_view = view_of(*inv_count);
  be.check_indices(chk, view_of(*tc), &inv_view);

  const DType ldt = loss_dtype(logits->dtype);
  TensorPtr lc = contiguous(detach(*logits));
  TensorPtr losses = empty(s, ldt, Shape{n});
  if (n > 0)
    be.cross_entropy(view_of(*lc), view_of(*tc), n, c, ignore_index, label_smoothing, view_of(*losses));

  TensorPtr out = reduced_losses(losses, reduction, *inv_count);
  if (!fp32_loss && out->dtype != logits->dtype) out = cast(out, logits->dtype);

  if (should_record(s, {logits.get()})) {
    auto node = std::make_shared<CrossEntropyNode>(OpId::cross_entropy);
    node->logits = lc;
    node->target = tc;
    node->reduction = reduction;
    node->ignore_index = ignore_index;
    node->label_smoothing = label_smoothing;
    node->n = n;
    node->c = c;
    node->inv_count = inv_count;
    record(node, {logits.get()}, {out.get()});
  }
  return scope.finish(out);
}

}  // namespace

TensorPtr cross_entropy(const TensorPtr &logits, const TensorPtr &target, mixp_reduction reduction,
                        int64_t ignore_index, double label_smoothing, const char *fn) {
  return cross_entropy_as(logits, target, reduction, ignore_index, label_smoothing, fn,
                          reads_half_as_fp32(logits));
}

TensorPtr mse_loss(const TensorPtr &a_in, const TensorPtr &b_in, mixp_reduction reduction) {
  static const char *fn = "mixp_mse_loss";
  TensorPtr a = a_in, b = b_in;
  OpScope scope(OpId::mse_loss, a->session.get(), {&a, &b});
  scope.tape({a.get(), b.get()}, [=](const Replay &r) { return mse_loss(r[0], r[1], reduction); });
  same_session(fn, {a.get(), b.get()});
  check_reduction(fn, reduction);
  require_float(fn, "a", *a);
  require_same_dtype(fn, "a", *a, "b", *b);
  if (shape_of(*a) != shape_of(*b))
    fail(MIXP_ERR_SHAPE, fn, ": shapes differ: a is ", shape_str(*a), ", b is ", shape_str(*b));
  TensorPtr d = sub(a, b);
  TensorPtr sq = mul(d, d);
  switch (reduction) {
    case MIXP_REDUCTION_SUM: return scope.finish(sum(sq, {}, false));
    case MIXP_REDUCTION_NONE: return scope.finish(sq);
    default: return scope.finish(mean(sq, {}, false));
  }
}

}  // namespace mixp
