// The found-inf handshake between a GradScaler and the optimizers it steps:
// everything one iteration does with the overflow flags, in one place and on
// one level (backend kernels on device memory: no op, no autograd, no wait).
//
//   unscale(opt)  grads *= 1/scale in one fused pass that also tests them
//                 (before unscaling, as PyTorch does) into the scaler's own
//                 finding for this optimizer, a fresh F32 zero; the finding is
//                 then added into the optimizer's skip flag, the flag its step
//                 kernels read (a non-finite clip norm sets the same flag).
//   step(opt)     after unscale(opt) (the scaler's step() unscales first
//                 when the caller has not); the ranks agree on the flag
//                 (data parallel: MAX); the finding becomes
//                 a copy of the whole flag (unscale's plus clipping's); the
//                 optimizer steps, or skips on the device, and clears its flag.
//   update(...)   the findings of every optimizer seen this iteration summed
//                 into one F32 scalar (an optimizer unscaled but not stepped
//                 through the scaler adds its flag, which still holds what a
//                 clip found, and has it cleared: its iteration is over); the
//                 dynamic scale rule (backend/loss_scale_rule.hpp) and the
//                 skipped-step count read that sum; the records are dropped.
//
// So the flag crosses between scaler and optimizer three times an iteration
// (added in, copied out, and cleared for an optimizer not stepped), each in
// this file. The records are per optimizer and weak (a weak_ptr to the
// optimizer's identity token, plus their own references to the flags), so an
// optimizer destroyed before update() leaves no dangling pointer and its
// overflow still counts.
#pragma once
#include <memory>
#include <vector>

#include "backend/backend.hpp"
#include "core/tensor.hpp"
#include "optim/optimizer.hpp"

namespace mixp::amp {

// Where an optimizer is in the iteration (PyTorch's OptState).
enum class OptStage { Ready, Unscaled, Stepped };

class FoundInfHandshake {
 public:
  OptStage stage(const Optimizer &opt) const noexcept;
  // True while an unscale or a step waits for its update.
  bool pending() const noexcept { return !records_.empty(); }

  // Ready -> Unscaled. `scale` is the scaler's F32 scale. Allocates before
  // any kernel runs, so a failure changes nothing.
  void unscale(Optimizer &opt, const Tensor &scale);
  // Unscaled -> Stepped (see the top of this file).
  void step(Optimizer &opt, const char *fn);
  // Ends the iteration: returns the summed findings (F32 scalar, zero when no
  // optimizer was seen), clears the flags of optimizers unscaled but not
  // stepped, and drops the records.
  TensorPtr finish(Session &s);
  // finish(), then, when `dynamic` is given, the scale update on its tensors
  // (its found_inf is set here to the sum), and skipped += (sum != 0).
  // Returns the sum.
  TensorPtr update(Session &s, const ScaleUpdate *dynamic, Tensor &skipped);

 private:
  struct Record {
    std::weak_ptr<const int> id;  // the optimizer's identity token
    OptStage stage = OptStage::Ready;
    TensorPtr flag;  // the optimizer's skip flag (shared with it)
    // What this optimizer found: unscale's finding, replaced at step() by a
    // copy of the whole flag (clipping's finding included).
    TensorPtr found_inf;
  };
  Record *find(const Optimizer &opt) noexcept;
  const Record *find(const Optimizer &opt) const noexcept;

  std::vector<Record> records_;  // the optimizers seen since the last update
};

}  // namespace mixp::amp
