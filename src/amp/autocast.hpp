// Autocast: the per-session stack of casting regions, the decision an op
// takes at dispatch, and the cast cache for fp32 parameters. Ops consult it
// through OpScope (src/ops/op_common.cpp) at the outermost op level only, so
// the ops an op calls internally (and backward formulas) are never re-cast.
#pragma once
#include <initializer_list>
#include <unordered_map>
#include <vector>

#include "amp/policy.hpp"
#include "core/tensor.hpp"

namespace mixp::amp {

struct AutocastState {
  bool enabled = false;
  DType dtype = MIXP_BF16;
  mixp_amp_level level = MIXP_AMP_O0;
  bool cache = true;
  // Per op index: 0 = default category, 1 = custom white, 2 = custom black.
  std::vector<unsigned char> custom;
  bool active() const noexcept { return enabled && level != MIXP_AMP_O0; }
};

// What an op does with its float inputs under the current state.
struct Decision {
  mixp_cast_policy cast = MIXP_CAST_NONE;
  DType dtype = MIXP_F32;  // target of LOWER (the low dtype) and FP32
};

struct SessionAmp {
  std::vector<AutocastState> stack;
  struct CacheEntry {
    TensorPtr source;  // kept alive so its address cannot be reused
    TensorPtr casted;
  };
  std::unordered_map<const Tensor *, CacheEntry> cache;
};

// The innermost region's state, or null when no region is open.
const AutocastState *current(const Session *s) noexcept;
Decision decide(const AutocastState &st, int op_index) noexcept;

// Casts the float tensors among `inputs` in place as op `name` requires.
void apply(Session *s, const char *name, std::initializer_list<TensorPtr *> inputs);
void apply(Session *s, const char *name, std::vector<TensorPtr> &inputs);

void push(Session *s, const mixp_autocast_options &o, const char *fn);
void pop(Session *s, const char *fn);

// For the GradScaler's AUTO mode: the dtype of the innermost enabled region.
bool current_autocast_dtype(const mixp_session *s, mixp_dtype *out) noexcept;

}  // namespace mixp::amp
