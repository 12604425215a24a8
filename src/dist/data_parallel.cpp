// Data parallelism on top of the collectives: one model replica per rank,
// made equal at the start (broadcast_module) and kept equal by averaging the
// gradients before every step (average_gradients). Because the averaged
// gradients are bit-identical on every rank, so are the steps taken from
// them; the optimizer's skip flag and clip norm are agreed on as well
// (mixp_optimizer::agree_max), so that an overflow on one rank is skipped by all.
#include <vector>

#include "autograd/node.hpp"
#include "backend/backend.hpp"
#include "core/error.hpp"
#include "dist/dist.hpp"
#include "nn/module.hpp"
#include "ops/ops.hpp"
#include "optim/optimizer.hpp"

namespace mixp::dist {

void broadcast_module(Dist &d, mixp_module &m) {
  for (size_t i = 0; i < m.num_parameters(); ++i) broadcast(d, *m.parameter(i), 0);
  for (size_t i = 0; i < m.num_buffers(); ++i) broadcast(d, *m.buffer(i), 0);
}

namespace {

// One bucket: gradients of one reduction dtype packed into a flat buffer.
struct Bucket {
  DType dtype = MIXP_F32;
  std::vector<size_t> params;   // optimizer slot indices, in packing order
  std::vector<int64_t> starts;  // element offsets in `flat`
  int64_t numel = 0;
  TensorPtr flat;
};

}  // namespace

void average_gradients(Dist &d, mixp_optimizer &opt, int64_t local_samples, const char *fn) {
  Session *s = d.session.get();
  // Every rank's model size and sample count, in one small exchange: ranks
  // with different models would trade garbage (or wait forever), so they
  // fail together instead; the counts weigh each rank by its share of the
  // global batch when every rank gave one, else each weighs 1/world.
  const int W = d.world();
  int64_t mine[2] = {0, local_samples};
  for (const auto &slot : opt.slots) mine[0] += slot.param->numel();
  std::vector<int64_t> all(size_t(2 * W));
  d.host->all_gather(mine, all.data(), sizeof mine);
  for (int r = 0; r < W; ++r)
    if (all[size_t(2 * r)] != all[0])
      fail(MIXP_ERR_SHAPE, fn, ": the optimizer holds ", all[0], " parameter elements on rank 0 but ",
           all[size_t(2 * r)], " on rank ", r, "; every rank must train the same model");
  std::vector<double> weights(size_t(W), 1.0 / W);
  int64_t total = 0;
  bool counted = true;
  for (int r = 0; r < W; ++r) {
    total += all[size_t(2 * r + 1)];
    counted = counted && all[size_t(2 * r + 1)] > 0;
  }
  if (counted)
    for (int r = 0; r < W; ++r) weights[size_t(r)] = double(all[size_t(2 * r + 1)]) / double(total);

  if (W == 1) {
    // A world of one: the average is the gradient itself (weight 1, bit for
    // bit); only a missing gradient becomes zeros, as on N ranks.
    OpScope scope(OpId::dist_average_gradients, s);
    NoGradGuard no_grad(s);
    std::vector<TensorPtr> missing(opt.slots.size());
    for (size_t k = 0; k < opt.slots.size(); ++k) {
      const Tensor &p = *opt.slots[k].param;
      if (!p.grad) missing[k] = zeros(s, p.grad_dtype_set ? p.grad_dtype : p.dtype, shape_of(p));
    }
    for (size_t k = 0; k < opt.slots.size(); ++k)
      if (missing[k]) opt.slots[k].param->grad = std::move(missing[k]);
    return;
  }

  // Phase 1: everything that allocates (buckets, missing gradients), so that
  // running out of memory changes nothing. Reverse order: the last layers'
  // gradients are the first a backward pass finishes.
  OpScope scope(OpId::dist_average_gradients, s);
  NoGradGuard no_grad(s);
  std::vector<Bucket> buckets;
  std::vector<TensorPtr> grads(opt.slots.size());
  Bucket open[2];  // F32 and F64 staging
  Backend &be = *s->backend;
  auto close = [&](Bucket &b) {
    if (b.params.empty()) return;
    // Room for a whole number of per-rank chunks, the tail zeroed: the host
    // transport then sends and receives the bucket in place.
    const int64_t padded = (b.numel + W - 1) / W * W;
    b.flat = empty(s, b.dtype, Shape{padded});
    if (padded > b.numel) be.fill(flat_range(*b.flat, b.numel, padded - b.numel), 0.0);
    buckets.push_back(std::move(b));
    b = Bucket{};
  };
  for (size_t k = opt.slots.size(); k-- > 0;) {
    Tensor &p = *opt.slots[k].param;
    const DType gd = p.grad_dtype_set ? p.grad_dtype : p.dtype;
    grads[k] = p.grad ? p.grad : zeros(s, gd, shape_of(p));
    const bool wide = grads[k]->dtype == MIXP_F64;
    Bucket &b = open[wide];
    b.dtype = wide ? MIXP_F64 : MIXP_F32;
    b.params.push_back(k);
    b.starts.push_back(b.numel);
    b.numel += p.numel();
    if (b.numel * int64_t(dtype_size(b.dtype)) >= d.bucket_bytes) close(b);
  }
  close(open[0]);
  close(open[1]);

  // Phase 2: pack, reduce (weighted), and only then write the gradients.
  apply_threads(s);
  for (Bucket &b : buckets) {
    for (size_t j = 0; j < b.params.size(); ++j) {
      const Tensor &g = *grads[b.params[j]];
      be.copy(view_of(g), packed_view(*b.flat, b.starts[j], g));
    }
    reduce_buffer(d, *b.flat, CollectiveOp::Sum, b.numel, weights.data());
  }
  for (Bucket &b : buckets)
    for (size_t j = 0; j < b.params.size(); ++j) {
      const size_t k = b.params[j];
      Tensor &g = *grads[k];
      be.copy(packed_view(*b.flat, b.starts[j], g), view_of(g));
      Tensor &p = *opt.slots[k].param;
      if (!p.grad) p.grad = grads[k];
    }

  // From now on this optimizer skips steps together with the other ranks.
  std::weak_ptr<mixp_dist *> alive = d.self;
  opt.agree_max = [alive](Tensor &flag) {
    if (auto self = alive.lock()) all_reduce(**self, flag, MIXP_REDUCE_MAX);
  };
  opt.skip_agreed = false;
}

}  // namespace mixp::dist
