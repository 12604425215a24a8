// Activation checkpointing (mixp_checkpoint_begin/end), PyTorch's reentrant
// checkpoint without a host callback. Inside a region every op runs with
// grad mode off, so no activation is saved, while an op tape remembers how to
// run each outermost op again: a replay closure holding its non-tensor
// arguments, and its tensor inputs by identity (region inputs, i.e. tensors
// made outside the region or by something other than an op, are kept alive
// by the tape; values made by earlier tape entries are referred to by slot,
// never held). mixp_checkpoint_end attaches one CheckpointNode to the
// region's outputs; its backward replays the tape with grad mode on, over
// detached aliases of the region inputs, at the RNG offsets of the forward
// pass, then back-propagates through the recomputed graph.
//
// Casts inserted by autocast are outermost ops of their own and are taped
// like any other, so a replay runs with autocast switched off and repeats
// exactly the kernels of the forward pass.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "core/tensor.hpp"

namespace mixp {

// The tensors a replay closure receives: the recomputed counterparts of the
// inputs the op passed to OpScope::tape(), in that order (null stays null).
class Replay {
 public:
  explicit Replay(std::vector<TensorPtr> in) : in_(std::move(in)) {}
  const TensorPtr &operator[](size_t i) const { return in_.at(i); }
  const std::vector<TensorPtr> &all() const noexcept { return in_; }
  size_t size() const noexcept { return in_.size(); }

 private:
  std::vector<TensorPtr> in_;
};

// Runs one op again from its replayed inputs; returns its outputs in the
// order of the indices the op marked them with (OpScope::finish/produced).
using ReplayFn = std::function<std::vector<TensorPtr>(const Replay &)>;

struct CheckpointRegion;

// ---- hooks used by OpScope (ops/op_common.cpp) --------------------------------
// Whether a region of `s` is open and recording (a replay runs with none).
inline bool checkpoint_recording(const Session *s) noexcept { return bool(s->checkpoint); }
// Appends a tape entry for op `op`; returns its index.
size_t checkpoint_tape(Session *s, const char *op, const std::vector<const Tensor *> &inputs,
                       ReplayFn fn, uint64_t rng_offset);
// Gives output `index` of entry `entry` a slot and tags `out` with it.
void checkpoint_mark_output(Session *s, size_t entry, Tensor &out, int index);
// Removes the last entry (its op failed after taping).
void checkpoint_drop_entry(Session *s, size_t entry);
// Notes an in-place write of `dst` by op `op` (not replayed: it happened
// once, in forward). Refuses the region when the region reads dst's storage,
// before or after the write.
void checkpoint_write(Session *s, const Tensor &dst, const char *op);
// Notes an outermost op that cannot be replayed: mixp_checkpoint_end fails.
void checkpoint_untaped(Session *s, const char *op, const char *why);

// ---- the region API (api/api_checkpoint.cpp) --------------------------------
void checkpoint_begin(Session *s);
// `outputs` are validated handles of the session; see mixp_checkpoint_end.
void checkpoint_end(Session *s, const std::vector<Tensor *> &outputs);
// Discards the open region (see mixp_checkpoint_abort).
void checkpoint_abort(Session *s);

}  // namespace mixp
