#include "core/options.hpp"
#include "optim/optimizer.hpp"

#include <cmath>
#include <cstring>
#include <string>

#include "autograd/node.hpp"
#include "backend/backend.hpp"
#include "core/error.hpp"
#include "core/step_capture.hpp"
#include "ops/ops.hpp"
#include "ops/profile.hpp"
#include "backend/optimizer_args.hpp"

namespace mixp::optim {
namespace {

void require_finite_min(double v, double lo, const char *field, const char *fn) {
  if (!std::isfinite(v) || v < lo)
    fail(MIXP_ERR_INVALID_ARGUMENT, fn, ": options->", field, " must be finite and >= ", lo,
         ", got ", v);
}

void require_beta(double v, const char *field, const char *fn) {
  if (!(v >= 0.0 && v < 1.0))
    fail(MIXP_ERR_INVALID_ARGUMENT, fn, ": options->", field, " must be in [0, 1), got ", v);
}

}  // namespace

void default_options(mixp_optimizer_options &o, mixp_optimizer_kind kind) noexcept {
  std::memset(&o, 0, sizeof o);
  o.struct_size = sizeof(mixp_optimizer_options);
  o.kind = kind;
  const bool adam = kind == MIXP_OPTIM_ADAM || kind == MIXP_OPTIM_ADAMW;
  o.lr = adam ? 1e-3 : 0.01;
  o.momentum = 0.0;
  o.dampening = 0.0;
  o.nesterov = 0;
  o.weight_decay = kind == MIXP_OPTIM_ADAMW ? 0.01 : 0.0;
  o.beta1 = 0.9;
  o.beta2 = 0.999;
  o.eps = 1e-8;
  o.schedule = MIXP_LR_CONSTANT;
  o.warmup_steps = 0;
  o.total_steps = 0;
  o.min_lr = 0.0;
  o.state_dtype = MIXP_F32;
  o.stochastic_rounding = 0;
}

mixp_optimizer_options read_options(const mixp_optimizer_options *o, const char *fn) {
  if (!o) fail(MIXP_ERR_INVALID_ARGUMENT, fn, ": options is NULL");
  check_struct_size(*o, fn, "options", "fill options with mixp_optimizer_options_init()");
  mixp_optimizer_options v;
  default_options(v, o->kind);
  std::memcpy(static_cast<void *>(&v), static_cast<const void *>(o), o->struct_size);
  v.struct_size = sizeof v;
  return v;
}

DType state_dtype_for(const mixp_optimizer_options &o, DType param) noexcept {
  return param == MIXP_F64 ? MIXP_F64 : DType(o.state_dtype);
}

void check_schedule_options(const mixp_optimizer_options &o, const char *fn) {
  check_struct_size(o, fn, "options", "fill options with mixp_optimizer_options_init()");
  require_finite_min(o.lr, 0.0, "lr", fn);
  switch (o.schedule) {
    case MIXP_LR_CONSTANT:
      return;
    case MIXP_LR_WARMUP_COSINE:
      if (o.warmup_steps < 0)
        fail(MIXP_ERR_INVALID_ARGUMENT, fn, ": options->warmup_steps must be >= 0, got ",
             o.warmup_steps);
      if (o.total_steps < 1 || o.total_steps < o.warmup_steps)
        fail(MIXP_ERR_INVALID_ARGUMENT, fn,
             ": options->total_steps must be >= 1 and >= warmup_steps (", o.warmup_steps,
             "), got ", o.total_steps);
      require_finite_min(o.min_lr, 0.0, "min_lr", fn);
      return;
  }
  fail(MIXP_ERR_INVALID_ARGUMENT, fn, ": options->schedule is ", int(o.schedule),
       ", expected MIXP_LR_CONSTANT (0) or MIXP_LR_WARMUP_COSINE (1)");
}

void check_options(const mixp_optimizer_options &o, const char *fn) {
  check_schedule_options(o, fn);
  require_finite_min(o.weight_decay, 0.0, "weight_decay", fn);
  if (o.state_dtype != MIXP_F32 && o.state_dtype != MIXP_BF16)
    fail(MIXP_ERR_INVALID_ARGUMENT, fn, ": options->state_dtype must be MIXP_F32 (0) or MIXP_BF16 (2), got ",
         int(o.state_dtype));
  if (o.stochastic_rounding != 0 && o.stochastic_rounding != 1)
    fail(MIXP_ERR_INVALID_ARGUMENT, fn, ": options->stochastic_rounding must be 0 or 1, got ",
         o.stochastic_rounding);
  switch (o.kind) {
    case MIXP_OPTIM_SGD:
      require_finite_min(o.momentum, 0.0, "momentum", fn);
      if (!std::isfinite(o.dampening))
        fail(MIXP_ERR_INVALID_ARGUMENT, fn, ": options->dampening must be finite, got ",
             o.dampening);
      if (o.nesterov != 0 && o.nesterov != 1)
        fail(MIXP_ERR_INVALID_ARGUMENT, fn, ": options->nesterov must be 0 or 1, got ",
             o.nesterov);
      if (o.nesterov && (o.momentum <= 0.0 || o.dampening != 0.0))
        fail(MIXP_ERR_INVALID_ARGUMENT, fn,
             ": options->nesterov requires momentum > 0 and dampening == 0, got momentum ",
             o.momentum, " and dampening ", o.dampening);
      return;
    case MIXP_OPTIM_ADAM:
    case MIXP_OPTIM_ADAMW:
      require_beta(o.beta1, "beta1", fn);
      require_beta(o.beta2, "beta2", fn);
      if (!std::isfinite(o.eps) || !(o.eps > 0.0))
        fail(MIXP_ERR_INVALID_ARGUMENT, fn, ": options->eps must be finite and > 0, got ",
             o.eps);
      return;
  }
  fail(MIXP_ERR_INVALID_ARGUMENT, fn, ": options->kind is ", int(o.kind),
       ", expected MIXP_OPTIM_SGD (0), MIXP_OPTIM_ADAM (1) or MIXP_OPTIM_ADAMW (2)");
}

double schedule_lr(const mixp_optimizer_options &o, double base_lr, int64_t step) noexcept {
  if (o.schedule != MIXP_LR_WARMUP_COSINE) return base_lr;
  if (step < o.warmup_steps) return base_lr * double(step) / double(o.warmup_steps);
  if (step >= o.total_steps) return o.min_lr;
  const double progress =
      double(step - o.warmup_steps) / double(o.total_steps - o.warmup_steps);
  const double pi = 3.141592653589793238462643383279502884;
  return o.min_lr + (base_lr - o.min_lr) * 0.5 * (1.0 + std::cos(pi * progress));
}

}  // namespace mixp::optim

void mixp_optimizer::agree_on_skip() {
  if (agree_max && !skip_agreed && found_inf) agree_max(*found_inf);
  skip_agreed = true;
}

namespace mixp::optim {
namespace {

// One parameter's part of a step, prepared before any kernel runs.
struct Work {
  Optimizer::Slot *slot;
  TensorPtr grad;    // contiguous; F32 with a master, else the parameter's dtype
  TensorPtr target;  // the parameter, or a contiguous copy written back after
  TensorPtr buf1, buf2, step;
};

// Phase 1: everything that can fail (casts, copies, new state), so that an
// error leaves parameters and state untouched.
std::vector<Work> prepare_work(Optimizer &opt, const char *fn) {
  Session *s = opt.session.get();
  const bool sgd = opt.options.kind == MIXP_OPTIM_SGD;
  const bool need_buf1 = !sgd || opt.options.momentum != 0.0;
  std::vector<Work> work;
  NoGradGuard no_grad(s);
  for (Optimizer::Slot &slot : opt.slots) {
    Tensor &p = *slot.param;
    if (!p.grad) continue;
    TensorPtr g = p.grad;
    if (shape_of(*g) != shape_of(p))
      fail(MIXP_ERR_INTERNAL, fn, ": a parameter of shape ", shape_str(p),
           " holds a gradient of shape ", shape_str(*g));
    // With a master, half grads are read as they are (the kernel widens
    // them); F32 grads (master_grad) too. Anything else is cast.
    const DType gd = (slot.master && g->dtype == MIXP_F32) ? MIXP_F32 : p.dtype;
    if (g->dtype != gd) g = cast(g, gd);
    g = contiguous(g);
    Work w{&slot, g, p.is_contiguous() ? slot.param : clone(slot.param), slot.buf1, slot.buf2,
           slot.step};
    const DType sd = state_dtype_for(opt.options, p.dtype);
    // Zeros even for SGD's momentum (whose first update overwrites it): a
    // first step skipped on the device must leave defined state behind.
    // New state is made once, not at every replay of a captured step.
    CapturePause made_once(s->capture);
    if (need_buf1 && !w.buf1) w.buf1 = zeros(s, sd, shape_of(p));
    if (!sgd && !w.buf2) w.buf2 = zeros(s, sd, shape_of(p));
    if (!w.step) w.step = zeros(s, MIXP_F64, Shape{});
    work.push_back(std::move(w));
  }
  return work;
}

// The kernels' view of each parameter (optimizer_args.hpp); draws the
// stochastic-rounding offsets.
std::vector<ParamArgs> kernel_args(const Optimizer &opt, std::vector<Work> &work) {
  Session *s = opt.session.get();
  std::vector<ParamArgs> args;
  args.reserve(work.size());
  for (Work &w : work) {
    Tensor &t = *w.target;
    ParamArgs pa;
    pa.dtype = t.dtype;
    pa.n = t.numel();
    pa.param = t.data();
    pa.master = w.slot->master ? w.slot->master->data() : nullptr;
    pa.grad = w.grad->data();
    pa.grad_f32 = w.grad->dtype == MIXP_F32;
    pa.step = w.step->data_as<double>();
    pa.buf1 = w.buf1 ? w.buf1->data() : nullptr;
    pa.buf2 = w.buf2 ? w.buf2->data() : nullptr;
    pa.state_dtype = state_dtype_for(opt.options, t.dtype);
    if (opt.options.stochastic_rounding && t.dtype == MIXP_BF16 && !pa.master) {
      pa.stochastic = true;
      pa.seed = s->seed;
      pa.offset = s->take_rng(uint64_t(pa.n + 3) / 4);
    }
    args.push_back(pa);
  }
  return args;
}

// Every parameter in one call (the backend may batch them); the kernels skip
// on the device when `skip` is set.
void run_kernels(const Optimizer &opt, const std::vector<ParamArgs> &args, double lr,
                 const float *skip) {
  const mixp_optimizer_options &o = opt.options;
  Backend &kernels = *opt.session->backend;
  if (o.kind == MIXP_OPTIM_SGD) {
    SgdArgs a;
    a.lr = lr;
    a.momentum = o.momentum;
    a.dampening = o.dampening;
    a.weight_decay = o.weight_decay;
    a.nesterov = o.nesterov != 0;
    kernels.sgd_step(args.data(), int(args.size()), a, skip);
  } else {
    AdamArgs a;
    a.lr = lr;
    a.beta1 = o.beta1;
    a.beta2 = o.beta2;
    a.eps = o.eps;
    a.weight_decay = o.weight_decay;
    a.decoupled = o.kind == MIXP_OPTIM_ADAMW;
    kernels.adam_step(args.data(), int(args.size()), a, skip);
  }
}

// A captured step (core/step_capture.hpp): the update runs now and at every
// replay as a host step, which takes the learning rate of the step count
// then, advances the count and shifts the stochastic-rounding offsets, as
// an eager step would.
void captured_kernels(Optimizer &opt, const std::vector<ParamArgs> &args, const float *skip) {
  std::vector<const void *> uses{skip};
  for (const ParamArgs &p : args)
    for (const void *q : std::initializer_list<const void *>{p.param, p.master, p.grad, p.step, p.buf1, p.buf2})
      if (q) uses.push_back(q);
  Optimizer *o = &opt;
  opt.session->capture->host_step(opt.identity, "an optimizer", std::move(uses), [o, args, skip](uint64_t shift) {
    std::vector<ParamArgs> now = args;
    for (ParamArgs &p : now)
      if (p.stochastic) p.offset += shift;
    run_kernels(*o, now, o->current_lr(), skip);
    o->advance();
  });
}

// Writes strided parameters back and keeps the (possibly new) state.
void commit_work(Session *s, std::vector<Work> &work) {
  for (Work &w : work) {
    if (w.target.get() != w.slot->param.get()) {
      NoGradGuard no_grad(s);
      copy_into(*w.slot->param, *w.target);
    }
    w.slot->buf1 = std::move(w.buf1);
    w.slot->buf2 = std::move(w.buf2);
    w.slot->step = std::move(w.step);
  }
}

}  // namespace
}  // namespace mixp::optim

void mixp_optimizer::step(const char *fn) {
  using namespace mixp;
  Session *s = check_session(session.get(), fn);
  ProfileScope profiled(s, "optimizer_step");
  agree_on_skip();
  const double lr = current_lr();
  std::vector<optim::Work> work = optim::prepare_work(*this, fn);
  apply_threads(s);
  const float *skip = found_inf ? found_inf->data_as<const float>() : nullptr;
  const std::vector<optim::ParamArgs> args = optim::kernel_args(*this, work);
  if (s->capture) {
    optim::captured_kernels(*this, args, skip);
  } else {
    optim::run_kernels(*this, args, lr, skip);
    advance();
  }
  optim::commit_work(s, work);
  if (found_inf) s->backend->fill(view_of(*found_inf), 0.0);
  skip_agreed = false;
}

void mixp_optimizer::advance() noexcept {
  ++step_count;
  ++session->numerics_step;  // the numerics checker's step range counts optimizer steps
}

std::vector<double> mixp_optimizer::grad_underflow(double smallest_normal) const {
  std::vector<double> out(slots.size(), std::nan(""));
  for (size_t i = 0; i < slots.size(); ++i) {
    const mixp::Tensor &p = *slots[i].param;
    if (!p.grad || p.grad->numel() == 0) continue;
    mixp::ValueCounts c;
    mixp::backend_of(*p.grad).count_values(mixp::view_of(*p.grad), smallest_normal, INFINITY, &c);
    out[i] = double(c.zero + c.tiny) / double(p.grad->numel());
  }
  return out;
}

std::vector<int> mixp_optimizer::nonfinite_grads() const {
  std::vector<int> found;
  for (size_t i = 0; i < slots.size(); ++i) {
    const mixp::Tensor &p = *slots[i].param;
    if (!p.grad || p.grad->numel() == 0) continue;
    mixp::ValueCounts c;
    mixp::backend_of(*p.grad).count_values(mixp::view_of(*p.grad), 0.0, INFINITY, &c);
    if (c.nan + c.inf > 0) found.push_back(int(i));
  }
  return found;
}

void mixp_optimizer::zero_grad() noexcept {
  for (Slot &slot : slots) slot.param->grad.reset();
}

bool mixp_optimizer::has_state() const noexcept {
  for (const Slot &slot : slots)
    if (slot.step || slot.buf1 || slot.buf2) return true;
  return false;
}

std::vector<mixp::TensorPtr> mixp_optimizer::contiguous_grads() {
  using namespace mixp;
  std::vector<TensorPtr> grads;
  for (Slot &slot : slots) {
    Tensor &p = *slot.param;
    if (!p.grad) continue;
    if (!p.grad->is_contiguous()) {
      NoGradGuard no_grad(session.get());
      p.grad = clone(p.grad);
    }
    grads.push_back(p.grad);
  }
  return grads;
}

namespace mixp {
namespace {

// The element range [lo, hi] of a tensor's storage it can touch.
void storage_span(const Tensor &t, int64_t &lo, int64_t &hi) noexcept {
  lo = hi = t.offset;
  for (int i = 0; i < t.ndim; ++i) {
    const int64_t ext = (t.shape[i] - 1) * t.strides[i];
    (ext < 0 ? lo : hi) += ext;
  }
}

bool overlaps(const Tensor &a, const Tensor &b) noexcept {
  if (a.storage != b.storage || a.numel() == 0 || b.numel() == 0) return false;
  int64_t alo, ahi, blo, bhi;
  storage_span(a, alo, ahi);
  storage_span(b, blo, bhi);
  return alo <= bhi && blo <= ahi;
}

}  // namespace

Optimizer *check_optimizer(const mixp_optimizer *o, const char *fn, const char *arg) {
  if (!o) fail(MIXP_ERR_INVALID_ARGUMENT, fn, ": ", arg, " is NULL");
  if (o->magic != Optimizer::kMagic)
    fail(MIXP_ERR_INVALID_ARGUMENT, fn, ": ", arg,
         " is not a live optimizer handle (destroyed or not a mixp_optimizer)");
  return const_cast<Optimizer *>(o);
}

std::unique_ptr<Optimizer> make_optimizer(Session *s, mixp_tensor *const *params, int n,
                                          const mixp_optimizer_options &options,
                                          const char *fn) {
  optim::check_options(options, fn);
  if (n < 1) fail(MIXP_ERR_INVALID_ARGUMENT, fn, ": n must be >= 1, got ", n);
  if (!params) fail(MIXP_ERR_INVALID_ARGUMENT, fn, ": params is NULL");
  auto opt = std::make_unique<Optimizer>();
  opt->session = SessionRef::share(s);
  opt->options = options;
  opt->found_inf = zeros(s, MIXP_F32, Shape{});
  opt->slots.reserve(size_t(n));
  for (int i = 0; i < n; ++i) {
    const std::string arg = str("params[", i, "]");
    Tensor *t = check_tensor(params[i], fn, arg.c_str());
    if (t->session.get() != s)
      fail(MIXP_ERR_DEVICE, fn, ": ", arg, " belongs to a different session than `session`");
    if (!is_float(t->dtype))
      fail(MIXP_ERR_DTYPE, fn, ": ", arg, " must be a float tensor, got ", dtype_name(t->dtype));
    if (!t->is_leaf())
      fail(MIXP_ERR_STATE, fn, ": ", arg,
           " is not a leaf (it was produced by a recorded operation); pass the parameter itself");
    if (!t->requires_grad) fail(MIXP_ERR_STATE, fn, ": ", arg, " does not require grad");
    for (int j = 0; j < i; ++j) {
      const Tensor &u = *opt->slots[size_t(j)].param;
      if (&u == t) fail(MIXP_ERR_INVALID_ARGUMENT, fn, ": ", arg, " duplicates params[", j, "]");
      if (overlaps(u, *t))
        fail(MIXP_ERR_INVALID_ARGUMENT, fn, ": ", arg, " shares memory with params[", j,
             "] (it would be updated twice)");
    }
    Optimizer::Slot slot;
    slot.param = TensorPtr::share(t);
    opt->slots.push_back(std::move(slot));
  }
  return opt;
}

}  // namespace mixp
