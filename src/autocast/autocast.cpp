#include "autocast/autocast.hpp"

#include "core/error.hpp"

namespace mixp::autocast {

const State *current(const Session *s) noexcept {
  if (!s->autocast || s->autocast->stack.empty()) return nullptr;
  return &s->autocast->stack.back();
}

bool current_dtype(const Session *s, mixp_dtype *out) noexcept {
  const State *st = current(s);
  if (!st || !st->active()) return false;
  *out = st->dtype;
  return true;
}

Decision decide(const State &st, OpId op) noexcept {
  Decision d;
  const OpInfo &info = op_info(op);
  if (!st.active() || !info.is_public || info.category == CastCategory::Neutral) return d;
  const size_t index = size_t(op);
  const unsigned char custom = index < st.custom.size() ? st.custom[index] : 0;
  if (custom == 2 || (custom == 0 && info.category == CastCategory::Fp32)) {
    d.cast = MIXP_CAST_FP32;
    d.dtype = MIXP_F32;
  } else if (custom == 1 || info.category == CastCategory::Lower) {
    d.cast = MIXP_CAST_LOWER;
    d.dtype = st.dtype;
  } else if (st.level == MIXP_AMP_O2) {
    // Paddle's use_promote: an F32 input keeps the op in fp32 (inputs meet
    // at the widest type); without it O2 casts every input down.
    d.cast = st.use_promote ? MIXP_CAST_PROMOTE : MIXP_CAST_LOWER;
    d.dtype = st.use_promote ? MIXP_F32 : st.dtype;
  } else if (st.level == MIXP_AMP_OD) {  // off the low-precision list: fp32
    d.cast = MIXP_CAST_FP32;
    d.dtype = MIXP_F32;
  } else if (info.category == CastCategory::Promote) {
    d.cast = MIXP_CAST_PROMOTE;
  }
  return d;
}

std::optional<DType> cast_target(const Session *s, OpId op, const std::vector<DType> &dtypes) {
  const State *st = current(s);
  if (!st || !st->active() || dtypes.empty()) return std::nullopt;
  const Decision d = decide(*st, op);
  switch (d.cast) {
    case MIXP_CAST_NONE: return std::nullopt;
    case MIXP_CAST_PROMOTE:
      if (st->level == MIXP_AMP_O2) {  // use_promote: fp32 if any input is, else the region's dtype
        for (DType t : dtypes)
          if (t == MIXP_F32) return MIXP_F32;
        return st->dtype;
      }
      // The widest float input wins: mixed inputs (the only ones left to
      // reconcile, F64 being ineligible) meet in fp32.
      for (DType t : dtypes)
        if (t != dtypes.front()) return MIXP_F32;
      return std::nullopt;
    default: return d.dtype;
  }
}

bool cacheable(const Session *s, const Tensor &t, DType to) noexcept {
  const State *st = current(s);
  return st && st->cache && to == st->dtype && t.dtype == MIXP_F32 && t.requires_grad &&
         t.is_leaf() && !t.is_view && s->grad_enabled();
}

TensorPtr cached(const Session *s, const Tensor &source, DType to) {
  if (!s->autocast) return {};
  auto it = s->autocast->cache.find(&source);
  if (it == s->autocast->cache.end() || it->second.casted->dtype != to) return {};
  return it->second.casted;
}

void remember(Session *s, const TensorPtr &source, const TensorPtr &casted) {
  s->autocast->cache[source.get()] = SessionState::CacheEntry{source, casted};
}

void clear_cache(Session *s) noexcept {
  if (s->autocast) s->autocast->cache.clear();
}

namespace {

void mark_list(State &st, const char *const *names, int n, unsigned char mark, const char *fn,
               const char *field) {
  if (n < 0) fail(MIXP_ERR_INVALID_ARGUMENT, fn, ": options->n_", field, " is negative (", n, ")");
  if (n > 0 && !names) fail(MIXP_ERR_INVALID_ARGUMENT, fn, ": options->", field, " is NULL but n_", field, " is ", n);
  for (int i = 0; i < n; ++i) {
    if (!names[i]) fail(MIXP_ERR_INVALID_ARGUMENT, fn, ": options->", field, "[", i, "] is NULL");
    const int idx = op_index(names[i]);
    if (idx < 0)
      fail(MIXP_ERR_INVALID_ARGUMENT, fn, ": options->", field, "[", i, "] names unknown op '", names[i],
           "' (mixp_op_name() lists the ops)");
    if (op_info(op_at(idx)).category == CastCategory::Neutral)
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
  State st;
  st.enabled = o.enabled != 0;
  if (o.level != MIXP_AMP_O0 && o.level != MIXP_AMP_O1 && o.level != MIXP_AMP_O2 && o.level != MIXP_AMP_OD)
    fail(MIXP_ERR_INVALID_ARGUMENT, fn, ": options->level is ", int(o.level), " (expected O0, O1, O2 or OD)");
  if (o.dtype != MIXP_F16 && o.dtype != MIXP_BF16)
    fail(MIXP_ERR_DTYPE, fn, ": options->dtype must be f16 or bf16, got ", dtype_name(o.dtype));
  st.level = o.level;
  st.dtype = o.dtype;
  st.cache = o.cache_enabled != 0;
  st.use_promote = o.use_promote != 0;
  st.custom.assign(size_t(kOpCount), 0);
  mark_list(st, o.custom_white_list, o.n_custom_white, 1, fn, "custom_white_list");
  mark_list(st, o.custom_black_list, o.n_custom_black, 2, fn, "custom_black_list");
  if (!s->autocast) s->autocast = std::make_shared<SessionState>();
  s->autocast->stack.push_back(std::move(st));
}

void pop(Session *s, const char *fn) {
  if (!s->autocast || s->autocast->stack.empty())
    fail(MIXP_ERR_STATE, fn, ": no autocast region is open (unbalanced mixp_autocast_push/pop)");
  s->autocast->stack.pop_back();
  // Leaving the outermost region drops the cached low-precision parameters.
  if (s->autocast->stack.empty()) s->autocast->cache.clear();
}

}  // namespace mixp::autocast
