#include "amp/autocast.hpp"

#include <algorithm>
#include <cstring>

#include "autograd/node.hpp"
#include "core/error.hpp"
#include "ops/ops.hpp"

namespace mixp::amp {

const AutocastState *current(const Session *s) noexcept {
  if (!s->amp || s->amp->stack.empty()) return nullptr;
  return &s->amp->stack.back();
}

bool current_autocast_dtype(const mixp_session *s, mixp_dtype *out) noexcept {
  const AutocastState *st = current(s);
  if (!st || !st->active()) return false;
  *out = st->dtype;
  return true;
}

Decision decide(const AutocastState &st, int op_index) noexcept {
  Decision d;
  if (!st.active() || op_index < 0) return d;
  const Category c = op_info(op_index).category;
  if (c == Category::Neutral) return d;
  const unsigned char custom = op_index < int(st.custom.size()) ? st.custom[size_t(op_index)] : 0;
  if (custom == 2 || (custom == 0 && c == Category::Fp32)) {
    d.cast = MIXP_CAST_FP32;
    d.dtype = MIXP_F32;
  } else if (custom == 1 || c == Category::Lower || st.level == MIXP_AMP_O2) {
    d.cast = MIXP_CAST_LOWER;
    d.dtype = st.dtype;
  } else if (c == Category::Promote) {
    d.cast = MIXP_CAST_PROMOTE;
  }
  return d;
}

namespace {

// PyTorch's cache rule: only fp32 leaves that require grad and are not views
// (in practice: parameters) are cached, and only for the low dtype.
bool cacheable(const AutocastState &st, const Tensor &t, DType to) {
  return st.cache && to == st.dtype && t.dtype == MIXP_F32 && t.requires_grad && t.is_leaf() &&
         !t.is_view && t.session->grad_enabled();
}

TensorPtr cast_input(Session *s, const AutocastState &st, const TensorPtr &t, DType to) {
  if (t->dtype == to) return t;
  if (!cacheable(st, *t, to)) return cast(t, to);
  auto &cache = s->amp->cache;
  auto it = cache.find(t.get());
  // A backward pass frees the graph of the cached copy's cast; reusing it
  // would make the next backward fail (gradient accumulation inside one
  // region), so such an entry is cast afresh.
  if (it != cache.end() && it->second.casted->dtype == to &&
      !(it->second.casted->grad_fn && it->second.casted->grad_fn->released))
    return it->second.casted;
  TensorPtr c = cast(t, to);
  cache[t.get()] = SessionAmp::CacheEntry{t, c};
  return c;
}

// Eligible inputs are floats other than F64 (PyTorch leaves doubles alone).
bool eligible(const TensorPtr *p) { return p && *p && is_float((*p)->dtype) && (*p)->dtype != MIXP_F64; }

template <class Range>
void apply_range(Session *s, const char *name, const Range &inputs) {
  const AutocastState *st = current(s);
  if (!st || !st->active()) return;
  const Decision d = decide(*st, op_index(name));
  if (d.cast == MIXP_CAST_NONE) return;
  DType to = d.dtype;
  if (d.cast == MIXP_CAST_PROMOTE) {
    // The widest float input wins; fp16 with bf16 widens to fp32.
    bool any = false, mixed = false;
    DType first = MIXP_F32;
    for (TensorPtr *p : inputs) {
      if (!eligible(p)) continue;
      if (!any) first = (*p)->dtype, any = true;
      else if ((*p)->dtype != first) mixed = true;
    }
    if (!any || !mixed) return;
    to = MIXP_F32;
  }
  for (TensorPtr *p : inputs)
    if (eligible(p)) *p = cast_input(s, *st, *p, to);
}

}  // namespace

void apply(Session *s, const char *name, std::initializer_list<TensorPtr *> inputs) {
  apply_range(s, name, inputs);
}

void apply(Session *s, const char *name, std::vector<TensorPtr> &inputs) {
  std::vector<TensorPtr *> ptrs;
  for (TensorPtr &t : inputs) ptrs.push_back(&t);
  apply_range(s, name, ptrs);
}

namespace {

void mark_list(AutocastState &st, const char *const *names, int n, unsigned char mark, const char *fn,
               const char *field) {
  if (n < 0) fail(MIXP_ERR_INVALID_ARGUMENT, fn, ": options->n_", field, " is negative (", n, ")");
  if (n > 0 && !names) fail(MIXP_ERR_INVALID_ARGUMENT, fn, ": options->", field, " is NULL but n_", field, " is ", n);
  for (int i = 0; i < n; ++i) {
    if (!names[i]) fail(MIXP_ERR_INVALID_ARGUMENT, fn, ": options->", field, "[", i, "] is NULL");
    const int idx = op_index(names[i]);
    if (idx < 0)
      fail(MIXP_ERR_INVALID_ARGUMENT, fn, ": options->", field, "[", i, "] names unknown op '", names[i],
           "' (mixp_op_name() lists the ops)");
    if (op_info(idx).category == Category::Neutral)
      fail(MIXP_ERR_INVALID_ARGUMENT, fn, ": options->", field, "[", i, "] names '", names[i],
           "', which only moves data and is never cast");
    unsigned char &slot = st.custom[size_t(idx)];
    if (slot != 0 && slot != mark)
      fail(MIXP_ERR_INVALID_ARGUMENT, fn, ": op '", names[i],
           "' is in both the custom white list and the custom black list");
    slot = mark;
  }
}

}  // namespace

void push(Session *s, const mixp_autocast_options &o, const char *fn) {
  AutocastState st;
  st.enabled = o.enabled != 0;
  if (o.level != MIXP_AMP_O0 && o.level != MIXP_AMP_O1 && o.level != MIXP_AMP_O2)
    fail(MIXP_ERR_INVALID_ARGUMENT, fn, ": options->level is ", int(o.level), " (expected O0, O1 or O2)");
  if (o.dtype != MIXP_F16 && o.dtype != MIXP_BF16)
    fail(MIXP_ERR_DTYPE, fn, ": options->dtype must be f16 or bf16, got ", dtype_name(o.dtype));
  st.level = o.level;
  st.dtype = o.dtype;
  st.cache = o.cache_enabled != 0;
  st.custom.assign(size_t(op_count()), 0);
  mark_list(st, o.custom_white_list, o.n_custom_white, 1, fn, "custom_white_list");
  mark_list(st, o.custom_black_list, o.n_custom_black, 2, fn, "custom_black_list");
  if (!s->amp) s->amp = std::make_unique<SessionAmp>();
  s->amp->stack.push_back(std::move(st));
}

void pop(Session *s, const char *fn) {
  if (!s->amp || s->amp->stack.empty())
    fail(MIXP_ERR_STATE, fn, ": no autocast region is open (unbalanced mixp_autocast_push/pop)");
  s->amp->stack.pop_back();
  // Leaving the outermost region drops the cached low-precision parameters.
  if (s->amp->stack.empty()) s->amp->cache.clear();
}

}  // namespace mixp::amp
