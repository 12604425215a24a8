// Checkpoint regions: the op tape recorded in forward, the CheckpointNode
// that replays it in backward, and the begin/end bookkeeping.
#include "autograd/checkpoint.hpp"

#include <string>
#include <unordered_map>
#include <unordered_set>

#include "autograd/node.hpp"
#include "core/error.hpp"

namespace mixp {

struct CheckpointRegion {
  // Where a replayed input comes from: a value made by an earlier entry
  // (slot), a region input (input), or nowhere (an absent optional input).
  struct Source {
    int slot = -1;
    int input = -1;
  };
  struct Entry {
    const char *op = "?";
    ReplayFn fn;
    std::vector<Source> inputs;
    std::vector<int> outputs;  // slot of each output index; -1 where none
    uint64_t seed = 0, rng_offset = 0;
    bool needs_grad = false;  // some input requires grad
    bool live = true;         // some region output depends on it
  };

  Session *session = nullptr;
  uint32_t serial = 0;
  size_t grad_depth = 0;  // grad_mode_stack size with the region's "off" pushed
  bool grad_was_enabled = false;
  std::vector<Entry> entries;
  std::vector<TensorPtr> inputs;  // kept alive until the replay
  std::unordered_map<const Tensor *, int> input_index;
  std::vector<unsigned char> slot_needs_grad;
  std::vector<std::shared_ptr<Storage>> written;  // by in-place writes (kept: no address reuse)
  std::string unsupported;  // the first op that cannot be replayed, and why

  // Filled by plan() at mixp_checkpoint_end.
  std::vector<int> out_slots;                // slot of each node output
  std::vector<int> grad_inputs;              // region inputs that get a gradient
  std::vector<std::vector<int>> free_after;  // slots dead after entry j

  int slot_of(const Tensor &t) const noexcept {
    if (uint32_t(t.checkpoint_tag >> 32) != serial) return -1;
    return int(t.checkpoint_tag & 0xffffffffu) - 1;
  }
  void plan();
};

// Drops entries no output depends on (their RNG offsets are recorded, so
// skipping one changes nothing for the others) and works out when each
// recomputed value can be freed during the replay.
void CheckpointRegion::plan() {
  const size_t nslots = slot_needs_grad.size();
  std::vector<unsigned char> needed(nslots, 0), keep(nslots, 0);
  for (int s : out_slots) needed[size_t(s)] = keep[size_t(s)] = 1;
  for (size_t j = entries.size(); j-- > 0;) {
    Entry &e = entries[j];
    e.live = false;
    for (int s : e.outputs)
      if (s >= 0 && needed[size_t(s)]) e.live = true;
    if (!e.live) {
      e.fn = nullptr;
      continue;
    }
    for (const Source &src : e.inputs)
      if (src.slot >= 0) needed[size_t(src.slot)] = 1;
  }
  std::vector<int> last(nslots, -1);
  std::vector<unsigned char> used_input(inputs.size(), 0);
  for (size_t j = 0; j < entries.size(); ++j) {
    const Entry &e = entries[j];
    if (!e.live) continue;
    for (int s : e.outputs)
      if (s >= 0) last[size_t(s)] = int(j);
    for (const Source &src : e.inputs) {
      if (src.slot >= 0) last[size_t(src.slot)] = int(j);
      if (src.input >= 0) used_input[size_t(src.input)] = 1;
    }
  }
  free_after.assign(entries.size(), {});
  for (size_t s = 0; s < nslots; ++s)
    if (last[s] >= 0 && !keep[s]) free_after[size_t(last[s])].push_back(int(s));
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (!used_input[i]) inputs[i].reset();
    else if (inputs[i]->requires_grad) grad_inputs.push_back(int(i));
  }
  input_index.clear();
}

namespace {

// The root of the nested backward: hands the gradients that reached the
// region's outputs to the recomputed outputs, so one engine pass runs from
// all of them at once (the same accumulation as without checkpointing).
struct SeedNode final : Node {
  using Node::Node;
  std::vector<TensorPtr> grads;
  std::vector<TensorPtr> backward(std::vector<TensorPtr> &) override { return std::move(grads); }
};

// Session state a replay changes, restored however it ends: no region
// records, grad mode is on, autocast is off (its casts are on the tape), and
// each entry draws from the Philox position it drew from in forward.
class ReplayGuard {
 public:
  explicit ReplayGuard(Session *s)
      : s_(s), open_(std::move(s->checkpoint)), seed_(s->seed), rng_(s->rng_offset) {
    autocast_.swap(s->autocast);
    s->grad_mode_stack.push_back(true);
    s->checkpoint_replaying = true;
  }
  ~ReplayGuard() {
    s_->checkpoint_replaying = false;
    s_->grad_mode_stack.pop_back();
    s_->autocast.swap(autocast_);
    s_->seed = seed_;
    s_->rng_offset = rng_;
    s_->checkpoint = std::move(open_);
  }
  ReplayGuard(const ReplayGuard &) = delete;
  ReplayGuard &operator=(const ReplayGuard &) = delete;

 private:
  Session *s_;
  std::shared_ptr<CheckpointRegion> open_;
  std::shared_ptr<autocast::SessionState> autocast_;  // set aside while replaying
  uint64_t seed_, rng_;
};

struct CheckpointNode final : Node {
  using Node::Node;
  std::shared_ptr<CheckpointRegion> region;

  std::vector<TensorPtr> backward(std::vector<TensorPtr> &grad_outputs) override {
    if (!region)
      fail(MIXP_ERR_STATE, "mixp_backward: the checkpoint region was already recomputed by an earlier "
           "backward; run the forward pass again");
    CheckpointRegion &r = *region;
    Session *s = r.session;

    // The region inputs that get a gradient are replaced by detached leaves,
    // so the nested backward stops at them and leaves their .grad for us.
    std::vector<TensorPtr> alias = r.inputs;
    for (int i : r.grad_inputs) {
      alias[size_t(i)] = detach(*r.inputs[size_t(i)]);
      alias[size_t(i)]->requires_grad = true;
    }
    std::vector<TensorPtr> outs(r.out_slots.size());
    {
      ReplayGuard guard(s);
      std::vector<TensorPtr> slots(r.slot_needs_grad.size());
      for (size_t j = 0; j < r.entries.size(); ++j) {
        const CheckpointRegion::Entry &e = r.entries[j];
        if (!e.live) continue;
        std::vector<TensorPtr> in;
        in.reserve(e.inputs.size());
        for (const auto &src : e.inputs) {
          if (src.slot >= 0 && !slots[size_t(src.slot)])
            fail(MIXP_ERR_INTERNAL, "checkpoint replay: op '", e.op, "' reads a value that was not recomputed");
          in.push_back(src.slot >= 0 ? slots[size_t(src.slot)]
                                     : src.input >= 0 ? alias[size_t(src.input)] : TensorPtr());
        }
        s->seed = e.seed;
        s->rng_offset = e.rng_offset;
        std::vector<TensorPtr> res = e.fn(Replay(std::move(in)));
        for (size_t k = 0; k < e.outputs.size(); ++k) {
          const int slot = e.outputs[k];
          if (slot < 0) continue;
          if (k >= res.size() || !res[k])
            fail(MIXP_ERR_INTERNAL, "checkpoint replay: op '", e.op, "' returned no output ", k);
          slots[size_t(slot)] = std::move(res[k]);
        }
        for (int slot : r.free_after[j]) slots[size_t(slot)].reset();
      }
      for (size_t k = 0; k < outs.size(); ++k) outs[k] = slots[size_t(r.out_slots[k])];
    }

    auto seed = std::make_shared<SeedNode>(OpId::checkpoint);
    std::vector<const Tensor *> roots;
    for (size_t k = 0; k < outs.size(); ++k) {
      const bool flows = k < grad_outputs.size() && grad_outputs[k] && outs[k]->requires_grad;
      roots.push_back(flows ? outs[k].get() : nullptr);
      seed->grads.push_back(flows ? grad_outputs[k] : TensorPtr());
    }
    TensorPtr root = zeros(s, MIXP_F32, Shape{});
    record(seed, roots, {root.get()});
    run_backward(*root, nullptr);

    std::vector<TensorPtr> grads;
    for (int i : r.grad_inputs) grads.push_back(alias[size_t(i)]->grad);
    region.reset();  // the tape is spent: free the region inputs now
    return grads;
  }
  void release_saved() override { region.reset(); }
};

CheckpointRegion &open_region(Session *s) { return *s->checkpoint; }

}  // namespace

size_t checkpoint_tape(Session *s, const char *op, const std::vector<const Tensor *> &inputs,
                       ReplayFn fn, uint64_t rng_offset) {
  CheckpointRegion &r = open_region(s);
  CheckpointRegion::Entry e;
  e.op = op;
  e.fn = std::move(fn);
  e.seed = s->seed;
  e.rng_offset = rng_offset;
  for (const Tensor *t : inputs) {
    CheckpointRegion::Source src;
    if (t) {
      src.slot = r.slot_of(*t);
      if (src.slot >= 0) {
        e.needs_grad = e.needs_grad || r.slot_needs_grad[size_t(src.slot)];
      } else {
        auto [it, fresh] = r.input_index.try_emplace(t, int(r.inputs.size()));
        if (fresh) r.inputs.push_back(TensorPtr::share(const_cast<Tensor *>(t)));
        for (const auto &w : r.written)
          if (w == t->storage && r.unsupported.empty())
            r.unsupported = str("op '", op, "' reads a tensor modified in place earlier in the region");
        src.input = it->second;
        e.needs_grad = e.needs_grad || t->requires_grad;
      }
    }
    e.inputs.push_back(src);
  }
  r.entries.push_back(std::move(e));
  return r.entries.size() - 1;
}

void checkpoint_mark_output(Session *s, size_t entry, Tensor &out, int index) {
  CheckpointRegion &r = open_region(s);
  CheckpointRegion::Entry &e = r.entries.at(entry);
  const int slot = int(r.slot_needs_grad.size());
  r.slot_needs_grad.push_back(e.needs_grad && is_float(out.dtype));
  out.checkpoint_tag = (uint64_t(r.serial) << 32) | uint64_t(slot + 1);
  if (e.outputs.size() <= size_t(index)) e.outputs.resize(size_t(index) + 1, -1);
  e.outputs[size_t(index)] = slot;
}

void checkpoint_drop_entry(Session *s, size_t entry) {
  CheckpointRegion &r = open_region(s);
  if (entry + 1 == r.entries.size()) r.entries.pop_back();
}

void checkpoint_write(Session *s, const Tensor &dst, const char *op) {
  CheckpointRegion &r = open_region(s);
  bool read = r.slot_of(dst) >= 0;
  for (const TensorPtr &t : r.inputs) read = read || t->storage == dst.storage;
  if (read && r.unsupported.empty())
    r.unsupported = str("op '", op, "' modifies in place a tensor the region reads");
  r.written.push_back(dst.storage);
}

void checkpoint_untaped(Session *s, const char *op, const char *why) {
  CheckpointRegion &r = open_region(s);
  if (r.unsupported.empty()) r.unsupported = str("op '", op, "' ", why);
}

void checkpoint_begin(Session *s) {
  if (s->checkpoint)
    fail(MIXP_ERR_STATE, "mixp_checkpoint_begin: a checkpoint region is already open on this session "
         "(regions do not nest; close it with mixp_checkpoint_end first)");
  auto r = std::make_shared<CheckpointRegion>();
  r->session = s;
  if (++s->checkpoint_serial == 0) ++s->checkpoint_serial;  // 0 tags nothing
  r->serial = s->checkpoint_serial;
  r->grad_was_enabled = s->grad_enabled();
  s->grad_mode_stack.push_back(false);
  r->grad_depth = s->grad_mode_stack.size();
  s->checkpoint = std::move(r);
}

// The values made inside keep no history (grad mode was off while they were
// computed) and their tags name a serial no later region reuses, so dropping
// the region is all there is to undo. No-grad regions still open inside it
// go with it: the caller is unwinding from an error and cannot know how far
// the failed code got.
void checkpoint_abort(Session *s) {
  if (!s->checkpoint)
    fail(MIXP_ERR_STATE, "mixp_checkpoint_abort: no checkpoint region is open (call mixp_checkpoint_begin "
         "first)");
  const size_t depth = s->checkpoint->grad_depth;
  if (s->grad_mode_stack.size() >= depth) s->grad_mode_stack.resize(depth - 1);
  s->checkpoint.reset();
}

void checkpoint_end(Session *s, const std::vector<Tensor *> &outputs) {
  const char *fn = "mixp_checkpoint_end";
  if (!s->checkpoint)
    fail(MIXP_ERR_STATE, fn, ": no checkpoint region is open (call mixp_checkpoint_begin first)");
  if (s->grad_mode_stack.size() != s->checkpoint->grad_depth)
    fail(MIXP_ERR_STATE, fn, ": the no-grad regions opened inside the checkpoint region are not balanced "
         "(close them with mixp_no_grad_end before ending the checkpoint region)");
  for (size_t i = 0; i < outputs.size(); ++i)
    if (outputs[i]->session.get() != s)
      fail(MIXP_ERR_DEVICE, fn, ": outputs[", i, "] belongs to another session");

  // From here on the region is closed, whatever happens.
  std::shared_ptr<CheckpointRegion> region = std::move(s->checkpoint);
  s->grad_mode_stack.pop_back();
  CheckpointRegion &r = *region;
  if (!r.unsupported.empty())
    fail(MIXP_ERR_UNSUPPORTED, fn, ": the region cannot be recomputed in backward: ", r.unsupported,
         "; the region is closed and its outputs carry no gradient history");
  if (!r.grad_was_enabled) return;

  std::vector<Tensor *> node_outputs;
  std::unordered_set<int> seen;
  for (Tensor *t : outputs) {
    const int slot = r.slot_of(*t);
    // Values not made inside the region (inputs passed through) keep their
    // own history; values no gradient can flow through need no node.
    if (slot < 0 || !r.slot_needs_grad[size_t(slot)] || !seen.insert(slot).second) continue;
    node_outputs.push_back(t);
    r.out_slots.push_back(slot);
  }
  if (node_outputs.empty()) return;
  r.plan();
  std::vector<const Tensor *> node_inputs;
  for (int i : r.grad_inputs) node_inputs.push_back(r.inputs[size_t(i)].get());
  auto node = std::make_shared<CheckpointNode>(OpId::checkpoint);
  node->region = std::move(region);
  record(node, node_inputs, node_outputs);
}

}  // namespace mixp
