#include "core/options.hpp"
#include "amp/decorate.hpp"

#include <cstring>
#include <unordered_map>
#include <vector>

#include "autograd/node.hpp"
#include "core/error.hpp"
#include "ops/ops.hpp"

namespace mixp::amp {

void default_decorate_options(mixp_decorate_options &o) noexcept {
  std::memset(&o, 0, sizeof o);
  o.struct_size = sizeof(mixp_decorate_options);
  o.dtype = MIXP_F16;
  o.master_weights = 1;
  o.master_grad = 0;
  o.keep_norm_fp32 = 1;
}

namespace {

void check_flag(int v, const char *field, const char *fn) {
  if (v != 0 && v != 1)
    fail(MIXP_ERR_INVALID_ARGUMENT, fn, ": options->", field, " must be 0 or 1, got ", v);
}

// The first module of the tree that an earlier decorate marked, or null.
const Module *find_decorated(const Module &m) noexcept {
  if (m.amp_decorated) return &m;
  for (size_t i = 0; i < m.num_children(); ++i)
    if (const Module *d = find_decorated(m.child(i))) return d;
  return nullptr;
}

void mark_decorated(Module &m) noexcept {
  m.amp_decorated = true;
  for (size_t i = 0; i < m.num_children(); ++i) mark_decorated(m.child(i));
}

// The options, read at the caller's size and checked field by field.
mixp_decorate_options checked_options(const mixp_decorate_options *opts, const char *fn) {
  mixp_decorate_options o = read_options(opts, default_decorate_options, fn, "mixp_decorate_options_init");
  if (!dtype_valid(int(o.dtype)))
    fail(MIXP_ERR_INVALID_ARGUMENT, fn, ": options->dtype is ", int(o.dtype),
         ", not a mixp_dtype");
  if (!is_half(o.dtype))
    fail(MIXP_ERR_DTYPE, fn, ": options->dtype must be MIXP_F16 or MIXP_BF16, got ",
         dtype_name(o.dtype));
  check_flag(o.master_weights, "master_weights", fn);
  check_flag(o.master_grad, "master_grad", fn);
  check_flag(o.keep_norm_fp32, "keep_norm_fp32", fn);
  return o;
}

// Where each of the model's parameters sits in the optimizer (-1: not
// there), after checking that the optimizer may be decorated with it.
std::vector<long> optimizer_slots(Module &model, Session *s, Optimizer *opt, const char *fn) {
  const size_t np = model.num_parameters();
  std::vector<long> slot_of(np, -1);
  if (!opt) return slot_of;
  if (opt->session.get() != s)
    fail(MIXP_ERR_DEVICE, fn, ": optimizer belongs to a different session than the model");
  if (opt->has_state() || opt->step_count > 0)
    fail(MIXP_ERR_STATE, fn,
         ": the optimizer has already stepped (its state exists); decorate before the first "
         "step");
  std::unordered_map<const Tensor *, size_t> index;
  for (size_t i = 0; i < np; ++i) index.emplace(model.parameter(i).get(), i);
  // The optimizer may also hold other modules' parameters (one optimizer
  // over several models, decorated one model at a time, like Paddle's
  // decorate(models=[...])); those are left alone.
  size_t matched = 0;
  for (size_t k = 0; k < opt->slots.size(); ++k) {
    auto it = index.find(opt->slots[k].param.get());
    if (it == index.end()) continue;
    slot_of[it->second] = long(k);
    ++matched;
  }
  if (matched == 0 && np > 0)
    fail(MIXP_ERR_INVALID_ARGUMENT, fn, ": the optimizer holds none of the model's parameters");
  return slot_of;
}

// One parameter to replace: its half copy and, for the optimizer, its master.
struct Plan {
  size_t index;
  TensorPtr half, master;
};

// Phase 1: every new tensor, so that a failure (out of memory) changes
// nothing.
std::vector<Plan> plan_casts(Module &model, Session *s, const std::vector<long> &slot_of,
                             const mixp_decorate_options &o) {
  std::vector<Plan> plan;
  OpScope scope(OpId::amp_decorate, s);  // its casts are internal: no autocast
  NoGradGuard no_grad(s);
  for (size_t i = 0; i < slot_of.size(); ++i) {
    const TensorPtr &p = model.parameter(i);
    if (p->dtype != MIXP_F32) continue;
    if (o.keep_norm_fp32 && model.parameter_owner(i).is_norm_layer()) continue;
    Plan pl{i, cast(p, o.dtype), TensorPtr()};
    pl.half->requires_grad = p->requires_grad;
    if (o.master_grad) {
      pl.half->grad_dtype = MIXP_F32;
      pl.half->grad_dtype_set = true;
    }
    // The old fp32 values become the master: a private contiguous copy,
    // so that a handle the caller still holds on the old parameter never
    // aliases the optimizer's state.
    if (slot_of[i] >= 0 && o.master_weights) pl.master = clone(p);
    plan.push_back(std::move(pl));
  }
  return plan;
}

}  // namespace

void decorate(Module &model, Optimizer *opt, const mixp_decorate_options *opts, const char *fn) {
  const mixp_decorate_options o = checked_options(opts, fn);
  Session *s = check_session(model.session(), fn, "the model's session");
  if (const Module *d = find_decorated(model))
    fail(MIXP_ERR_STATE, fn, ": the model is already decorated (its ", d->type_name(),
         " module was cast by an earlier mixp_amp_decorate)");
  const std::vector<long> slot_of = optimizer_slots(model, s, opt, fn);
  std::vector<Plan> plan = plan_casts(model, s, slot_of, o);

  // Phase 2: commit (nothing below allocates or can fail on valid input).
  for (Plan &pl : plan) {
    model.replace_parameter(pl.index, pl.half);
    if (slot_of[pl.index] >= 0) {
      Optimizer::Slot &slot = opt->slots[size_t(slot_of[pl.index])];
      slot.param = pl.half;
      slot.master = std::move(pl.master);
    }
  }
  mark_decorated(model);
}

}  // namespace mixp::amp
