// Autocast, the policy half of mixed precision (below the ops): the
// per-session stack of casting regions, the decision an op takes at
// dispatch from its category in the op table (core/ops.def) and the
// region's custom lists, and the cast cache of fp32 parameters. It decides;
// the op's scope (ops/op_common.cpp) does the casting, at the outermost op
// level only, so the ops an op calls internally (and backward formulas) are
// never re-cast.
#pragma once
#include <optional>
#include <unordered_map>
#include <vector>

#include "core/op_table.hpp"
#include "core/tensor.hpp"

namespace mixp::autocast {

struct State {
  bool enabled = false;
  DType dtype = MIXP_BF16;
  mixp_amp_level level = MIXP_AMP_O0;
  bool cache = true;
  bool use_promote = false;  // O2: ops off the low list promote (Paddle's use_promote)
  // Per public op (index into the op table): 0 = its category, 1 = custom
  // white list, 2 = custom black list.
  std::vector<unsigned char> custom;
  bool active() const noexcept { return enabled && level != MIXP_AMP_O0; }
};

// What an op does with its float inputs under a state.
struct Decision {
  mixp_cast_policy cast = MIXP_CAST_NONE;
  DType dtype = MIXP_F32;  // target of LOWER (the low dtype) and FP32
};

struct SessionState {
  std::vector<State> stack;
  struct CacheEntry {
    TensorPtr source;  // kept alive so its address cannot be reused
    TensorPtr casted;
  };
  std::unordered_map<const Tensor *, CacheEntry> cache;
};

// The innermost region's state, or null when no region is open.
const State *current(const Session *s) noexcept;
Decision decide(const State &st, OpId op) noexcept;

// Whether an input takes part in autocasting: floats other than F64
// (PyTorch leaves doubles alone).
inline bool eligible(const Tensor &t) noexcept { return is_float(t.dtype) && t.dtype != MIXP_F64; }

// The dtype op `op` casts its eligible inputs to under the session's current
// region, given those inputs' dtypes; nothing when they stay as they are.
// PROMOTE casts only mixed inputs, to fp32 (fp16 with bf16 widens too).
std::optional<DType> cast_target(const Session *s, OpId op, const std::vector<DType> &eligible_dtypes);

// The cast cache (PyTorch's rule: only fp32 leaves that require grad and
// are not views -- in practice parameters -- and only for the region's low
// dtype, while grad mode is on). cached() returns the low copy made in this
// region, or null; remember() stores one. Leaving the outermost region
// clears the cache.
bool cacheable(const Session *s, const Tensor &t, DType to) noexcept;
TensorPtr cached(const Session *s, const Tensor &source, DType to);
void remember(Session *s, const TensorPtr &source, const TensorPtr &casted);
void clear_cache(Session *s) noexcept;

void push(Session *s, const mixp_autocast_options &o, const char *fn);
void pop(Session *s, const char *fn);

// For the GradScaler's AUTO mode: the dtype of the innermost enabled region.
bool current_dtype(const Session *s, mixp_dtype *out) noexcept;

}  // namespace mixp::autocast
