// One optimizer step's gradient averaging (mixp_dist_prepare_gradients,
// mixp_dist_average_gradients): the optimizer's parameters planned into
// buckets, each bucket packed as its gradients become final and reduced
// (weighted by the ranks' sample counts) as soon as it and every bucket
// before it are packed, then the averages written back.
//
// Armed before a backward pass (as the session's LeafGradObserver), the
// buckets of the last layers are reduced while backward still computes the
// first layers' gradients: on a backend with overlapped collectives (NCCL
// on a second CUDA stream) the two run at once. Buckets are launched in
// their planned order only, so every rank issues the same collectives in
// the same order whatever order its gradients became final in, and the
// result is the same bits as averaging after backward.
#pragma once
#include <cstdint>
#include <unordered_map>
#include <vector>

#include "core/session.hpp"
#include "core/tensor.hpp"
#include "mixp/mixp.h"

namespace mixp::dist {

class GradSync final : public LeafGradObserver {
 public:
  // Plans the buckets of opt's parameters and agrees with the other ranks
  // on the model size and the weights (collective: one small host
  // exchange). Allocates every bucket now, so that running out of memory
  // fails here and not half-way through a step.
  GradSync(mixp_dist &d, const mixp_optimizer &opt, int64_t local_samples, const char *fn);
  ~GradSync();
  GradSync(const GradSync &) = delete;
  GradSync &operator=(const GradSync &) = delete;

  // LeafGradObserver: packs a parameter's final gradient, launches what is
  // ready.
  void final_grad(Tensor &leaf, const TensorPtr &grad) override;

  // Packs the gradients backward did not (a parameter without one counts as
  // zeros), launches the remaining buckets, waits, and writes the averages
  // into opt's gradients. opt must be the optimizer the plan was made for.
  void finish(mixp_optimizer &opt, const char *fn);

  bool planned_for(const mixp_optimizer &opt, int64_t local_samples) const noexcept {
    return &opt == optimizer_ && local_samples == local_samples_;
  }

 private:
  struct Bucket {
    DType dtype = MIXP_F32;
    std::vector<size_t> params;   // optimizer slot indices, in packing order
    std::vector<int64_t> starts;  // element offsets in `flat`
    int64_t numel = 0;
    TensorPtr flat;
    size_t waiting = 0;  // parameters not yet packed
  };
  void pack(size_t k, const TensorPtr &grad, const char *fn);  // fn: the API call, for errors
  void launch_ready();

  mixp_dist &d_;
  const mixp_optimizer *optimizer_;
  int64_t local_samples_;
  std::vector<TensorPtr> params_;               // the optimizer's, in slot order
  std::unordered_map<const Tensor *, size_t> slot_of_;
  std::vector<double> weights_;                 // one per rank
  std::vector<Bucket> buckets_;
  std::vector<std::pair<size_t, size_t>> place_;  // slot -> (bucket, index in it)
  std::vector<TensorPtr> grads_;                // slot -> the gradient packed
  size_t launched_ = 0;                         // buckets[0, launched_) are launched
  bool overlapped_ = false;                     // a collective may still be running
};

}  // namespace mixp::dist
