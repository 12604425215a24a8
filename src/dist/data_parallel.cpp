// Data parallelism on top of the collectives: one model replica per rank,
// made equal at the start (broadcast_module) and kept equal by averaging the
// gradients before every step (average_gradients). Because the averaged
// gradients are bit-identical on every rank, so are the steps taken from
// them; the optimizer's skip flag and clip norm are agreed on as well
// (mixp_optimizer::agree_max), so that an overflow on one rank is skipped by all.
#include <memory>
#include <vector>

#include "autograd/node.hpp"
#include "backend/backend.hpp"
#include "core/error.hpp"
#include "dist/dist.hpp"
#include "dist/grad_sync.hpp"
#include "nn/module.hpp"
#include "ops/ops.hpp"
#include "optim/optimizer.hpp"

namespace mixp::dist {

void broadcast_module(Dist &d, mixp_module &m) {
  for (size_t i = 0; i < m.num_parameters(); ++i) broadcast(d, *m.parameter(i), 0);
  for (size_t i = 0; i < m.num_buffers(); ++i) broadcast(d, *m.buffer(i), 0);
}

GradSync::GradSync(Dist &d, const mixp_optimizer &opt, int64_t local_samples, const char *fn)
    : d_(d), optimizer_(&opt), local_samples_(local_samples) {
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
  weights_.assign(size_t(W), 1.0 / W);
  double total = 0;  // in double: counts up to INT64_MAX on every rank
  bool counted = true;
  for (int r = 0; r < W; ++r) {
    total += double(all[size_t(2 * r + 1)]);
    counted = counted && all[size_t(2 * r + 1)] > 0;
  }
  if (counted)
    for (int r = 0; r < W; ++r) weights_[size_t(r)] = double(all[size_t(2 * r + 1)]) / total;

  const size_t n = opt.slots.size();
  params_.reserve(n);
  for (const auto &slot : opt.slots) params_.push_back(slot.param);
  grads_.resize(n);
  // A world of one on the host transport: the average is the gradient itself
  // (weight 1, bit for bit), so no buckets. Through a device clique even one
  // rank runs the collectives, so that one GPU exercises the path of many.
  if (W == 1 && !d.clique) return;

  // Reverse order: the last layers' gradients are the first a backward pass
  // finishes.
  OpScope scope(OpId::dist_average_gradients, s);
  NoGradGuard no_grad(s);
  Backend &be = *s->backend;
  place_.resize(n);
  Bucket open[2];  // F32 and F64 staging
  auto close = [&](Bucket &b) {
    if (b.params.empty()) return;
    // Room for a whole number of per-rank chunks, the tail zeroed: the host
    // transport then sends and receives the bucket in place.
    const int64_t padded = (b.numel + W - 1) / W * W;
    b.flat = empty(s, b.dtype, Shape{padded});
    if (padded > b.numel) be.fill(flat_range(*b.flat, b.numel, padded - b.numel), 0.0);
    b.waiting = b.params.size();
    for (size_t j = 0; j < b.params.size(); ++j) place_[b.params[j]] = {buckets_.size(), j};
    buckets_.push_back(std::move(b));
    b = Bucket{};
  };
  for (size_t k = n; k-- > 0;) {
    const Tensor &p = *params_[k];
    const DType gd = p.grad_dtype_set ? p.grad_dtype : p.dtype;
    const bool wide = gd == MIXP_F64;
    Bucket &b = open[wide];
    b.dtype = wide ? MIXP_F64 : MIXP_F32;
    b.params.push_back(k);
    b.starts.push_back(b.numel);
    b.numel += p.numel();
    if (b.numel * int64_t(dtype_size(b.dtype)) >= d.bucket_bytes) close(b);
  }
  close(open[0]);
  close(open[1]);
  slot_of_.reserve(n);
  for (size_t k = 0; k < n; ++k) slot_of_.emplace(params_[k].get(), k);
}

GradSync::~GradSync() {
  // The buckets go back to the session's memory: first make sure no
  // collective still reads them.
  if (overlapped_ && d_.clique && d_.session && d_.session->backend) {
    try {
      d_.clique->collectives_join();
    } catch (...) {
    }
  }
}

void GradSync::pack(size_t k, const TensorPtr &grad, const char *fn) {
  const auto [bi, j] = place_[k];
  Bucket &b = buckets_[bi];
  // The gradient's dtype decided the bucket; one in another would be
  // rounded differently from an average taken after backward.
  if ((grad->dtype == MIXP_F64) != (b.dtype == MIXP_F64))
    fail(MIXP_ERR_STATE, fn, ": parameter ", k, "'s gradient is ", dtype_name(grad->dtype),
         " but the plan of mixp_dist_prepare_gradients expected ", dtype_name(b.dtype),
         " staging; set gradient dtypes before preparing");
  d_.session->backend->copy(view_of(*grad), packed_view(*b.flat, b.starts[j], *grad));
  grads_[k] = grad;
  --b.waiting;
}

void GradSync::launch_ready() {
  Session *s = d_.session.get();
  while (launched_ < buckets_.size() && buckets_[launched_].waiting == 0) {
    Bucket &b = buckets_[launched_];
    reduce_buffer(d_, *b.flat, CollectiveOp::Sum, b.numel, weights_.data(), /*overlap=*/true);
    overlapped_ = overlapped_ || d_.clique;
    ++launched_;
    ++d_.stats.buckets;
    d_.stats.bytes += b.numel * int64_t(dtype_size(b.dtype));
    if (s->backward_depth > 0) ++d_.stats.buckets_in_backward;
  }
}

void GradSync::final_grad(Tensor &leaf, const TensorPtr &grad) {
  if (buckets_.empty()) return;
  const auto it = slot_of_.find(&leaf);
  if (it == slot_of_.end() || grads_[it->second]) return;  // not a parameter of the plan
  Session *s = d_.session.get();
  NoGradGuard no_grad(s);
  pack(it->second, grad, "mixp_backward");
  launch_ready();
}

void GradSync::finish(mixp_optimizer &opt, const char *fn) {
  Session *s = d_.session.get();
  OpScope scope(OpId::dist_average_gradients, s);
  NoGradGuard no_grad(s);
  const size_t n = params_.size();
  if (opt.slots.size() != n)
    fail(MIXP_ERR_STATE, fn, ": the optimizer's parameters changed since mixp_dist_prepare_gradients");
  // First everything that can fail without a collective: gradients that
  // changed after backward packed them, and the zeros of missing ones.
  std::vector<TensorPtr> missing(n);
  for (size_t k = 0; k < n; ++k) {
    Tensor &p = *opt.slots[k].param;
    if (&p != params_[k].get())
      fail(MIXP_ERR_STATE, fn, ": the optimizer's parameters changed since mixp_dist_prepare_gradients");
    if (grads_[k] && p.grad.get() != grads_[k].get())
      fail(MIXP_ERR_STATE, fn, ": parameter ", k, "'s gradient was replaced after the backward pass that ",
           "mixp_dist_prepare_gradients armed (prepare before the last micro-batch's backward only)");
    if (!p.grad) missing[k] = zeros(s, p.grad_dtype_set ? p.grad_dtype : p.dtype, shape_of(p));
  }
  apply_threads(s);
  Backend &be = *s->backend;
  if (!buckets_.empty()) {
    for (size_t k = n; k-- > 0;)
      if (!grads_[k]) pack(k, missing[k] ? missing[k] : opt.slots[k].param->grad, fn);
    launch_ready();
    if (d_.clique) d_.clique->collectives_join();
    overlapped_ = false;
    for (Bucket &b : buckets_)
      for (size_t j = 0; j < b.params.size(); ++j) {
        Tensor &g = *grads_[b.params[j]];
        be.copy(packed_view(*b.flat, b.starts[j], g), view_of(g));
      }
  }
  for (size_t k = 0; k < n; ++k)
    if (missing[k]) opt.slots[k].param->grad = std::move(missing[k]);
  ++d_.stats.gradient_averages;
}

void prepare_gradients(Dist &d, mixp_optimizer &opt, int64_t local_samples, const char *fn) {
  Session *s = d.session.get();
  if (s->leaf_grad_observer && s->leaf_grad_observer != d.sync.get())
    fail(MIXP_ERR_STATE, fn, ": another observer is armed for the session's next backward pass");
  auto sync = std::make_unique<GradSync>(d, opt, local_samples, fn);
  // A plan that was armed and never finished is replaced (its buckets were
  // never launched unless a backward ran; then they are joined on release).
  if (s->leaf_grad_observer == d.sync.get()) s->leaf_grad_observer = nullptr;
  d.sync = std::move(sync);
  s->leaf_grad_observer = d.sync.get();
}

void average_gradients(Dist &d, mixp_optimizer &opt, int64_t local_samples, const char *fn) {
  Session *s = d.session.get();
  if (d.sync && !d.sync->planned_for(opt, local_samples))
    fail(MIXP_ERR_INVALID_ARGUMENT, fn, ": mixp_dist_prepare_gradients armed this step for ",
         "another optimizer or another local_samples; pass the same ones");
  std::unique_ptr<GradSync> sync = std::move(d.sync);
  // Not taken by a backward pass (none ran since prepare): disarm it.
  if (s->leaf_grad_observer == sync.get()) s->leaf_grad_observer = nullptr;
  if (!sync) sync = std::make_unique<GradSync>(d, opt, local_samples, fn);
  sync->finish(opt, fn);

  // From now on this optimizer skips steps together with the other ranks.
  std::weak_ptr<mixp_dist *> alive = d.self;
  opt.agree_max = [alive](Tensor &flag) {
    if (auto self = alive.lock()) all_reduce(**self, flag, MIXP_REDUCE_MAX);
  };
  opt.skip_agreed = false;
}

}  // namespace mixp::dist
