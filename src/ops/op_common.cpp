// What every op shares, in one place so that each op file holds only its
// own formulas: the OpScope every op opens (session checks, thread count,
// autocast casting of the inputs, the numerics checker, the profiler's
// record, and the checkpoint tape that lets a region replay the op), and the
// argument checks and broadcasting helpers the op files call alike
// (same_session, require_float, broadcast_shapes, sum_to, ...). The
// declarations and the rules an op author follows are in ops/ops.hpp.
#include "ops/ops.hpp"

#include <cstdlib>
#include <cstring>
#include <exception>
#include <string>

#include "autocast/autocast.hpp"
#include "autograd/node.hpp"
#include "core/error.hpp"
#include "core/op_stats.hpp"
#include "ops/profile.hpp"

namespace mixp {

void OpScope::enter() {
  if (s_->closed)
    fail(MIXP_ERR_STATE, "mixp_", name_,
         ": the tensors' session was destroyed; its tensors can only be read and released");
  apply_threads(s_);
  outermost_ = s_->op_depth == 0;
  if (outermost_ && checkpoint_recording(s_)) {
    recording_ = true;
    uncaught_ = std::uncaught_exceptions();
    rng_start_ = s_->rng_offset;
  }
}

OpScope::~OpScope() {
  --s_->op_depth;
  if (profiled_ >= 0) profile_close(s_, profiled_);
  if (recording_) settle();
}

void OpScope::tape_impl(std::vector<const Tensor *> inputs, ReplayFn fn) {
  if (entry_ != ~size_t(0)) return;  // one entry per op call
  entry_ = checkpoint_tape(s_, name_, inputs, std::move(fn), rng_start_);
  tape_inputs_ = std::move(inputs);
}

void OpScope::writes(const Tensor &dst) {
  if (!recording_) return;
  checkpoint_write(s_, dst, name_);
  wrote_ = true;
}

void OpScope::mark(const Tensor &out, int index) const {
  // Forward calls only: a backward pass counts per node (autograd/engine.cpp).
  if (outermost_ && index == 0 && s_->op_stats_on && s_->backward_depth == 0)
    count_op_call(s_, op_, false, out.dtype);
  if (profiled_ >= 0 && index == 0) profile_output(s_, profiled_, out);
  if (entry_ == ~size_t(0)) return;
  ++marked_;
  // An op that returns one of its inputs (dropout in eval mode) makes no new
  // value: later uses keep referring to the input.
  for (const Tensor *t : tape_inputs_)
    if (t == &out) return;
  checkpoint_mark_output(s_, entry_, const_cast<Tensor &>(out), index);
}

// An op that failed leaves no entry; one that finished without a replay
// entry (or without marking what it made) poisons the region, so that
// mixp_checkpoint_end refuses it instead of computing wrong gradients.
void OpScope::settle() noexcept {
  if (!checkpoint_recording(s_)) return;
  try {
    if (std::uncaught_exceptions() > uncaught_) {
      if (entry_ != ~size_t(0)) checkpoint_drop_entry(s_, entry_);
    } else if (entry_ == ~size_t(0) && !wrote_) {
      checkpoint_untaped(s_, name_, "cannot be replayed (it records no checkpoint tape entry)");
    } else if (entry_ != ~size_t(0) && marked_ == 0) {
      checkpoint_untaped(s_, name_, "did not mark its outputs for the checkpoint tape");
    }
  } catch (...) {
    // Only allocation can fail here; the region then stays as it was.
  }
}

namespace {

// The ops with an fp8 kernel among those that hand their inputs to the
// scope; the others (copies, views, casts) move fp8 data without opening
// the scope on their inputs.
bool takes_fp8(OpId op) noexcept { return op == OpId::cat || op == OpId::scaled_matmul; }

// fp8 is a storage type: every op without an fp8 kernel refuses it here,
// before autocast or any kernel sees it.
void refuse_fp8(OpId op, const Tensor *t, size_t index) {
  if (t && is_fp8(t->dtype) && !takes_fp8(op))
    fail(MIXP_ERR_DTYPE, op_info(op).c_function, ": input ", index, " has dtype ", dtype_name(t->dtype),
         ", a storage type that ", op_name(op), " has no kernel for; cast it with mixp_cast (fp8 products:",
         " mixp_scaled_matmul)");
}

}  // namespace

OpScope::OpScope(OpId op, Session *s, std::initializer_list<TensorPtr *> inputs)
    : op_(op), name_(op_name(op)), s_(s) {
  size_t i = 0;
  for (TensorPtr *p : inputs) refuse_fp8(op, p ? p->get() : nullptr, i++);
  enter();
  if (outermost_ && inputs.size() && s->autocast) autocast_inputs(inputs.begin(), inputs.size());
  // After autocast: its casts are ops of their own, and the record shows the
  // dtypes the op runs in.
  if (outermost_ && s->profile) profile_begin(inputs.begin(), inputs.size());
  ++s_->op_depth;  // last: a constructor that throws never reaches the destructor
}

OpScope::OpScope(OpId op, Session *s, std::vector<TensorPtr> &inputs)
    : op_(op), name_(op_name(op)), s_(s) {
  for (size_t i = 0; i < inputs.size(); ++i) refuse_fp8(op, inputs[i].get(), i);
  enter();
  if (outermost_ && (s->autocast || s->profile)) {
    std::vector<TensorPtr *> ptrs;
    for (TensorPtr &t : inputs) ptrs.push_back(&t);
    if (s->autocast && !ptrs.empty()) autocast_inputs(ptrs.data(), ptrs.size());
    if (s->profile) profile_begin(ptrs.data(), ptrs.size());
  }
  ++s_->op_depth;
}

void OpScope::profile_begin(TensorPtr *const *inputs, size_t n) noexcept {
  profiled_ = profile_open(s_, name_, s_->backward_depth > 0);
  if (profiled_ < 0 || n == 0) return;
  const Tensor *ts[8];
  size_t k = 0;
  for (size_t i = 0; i < n && k < 8; ++i)
    if (inputs[i] && *inputs[i]) ts[k++] = inputs[i]->get();
  profile_inputs(s_, profiled_, ts, k);
}

namespace {

// One input brought to `to` for autocast, through the cast cache where
// autocast allows it. The casts run before the op's depth is raised, so
// they are ops the user called in effect: a checkpoint region tapes them.
TensorPtr autocast_input(Session *s, const TensorPtr &t, DType to) {
  if (t->dtype == to) return t;
  if (!autocast::cacheable(s, *t, to)) return cast(t, to);
  // A backward pass frees the graph of the cached copy's cast; reusing it
  // would make the next backward fail (gradient accumulation inside one
  // region), so such an entry is cast afresh.
  TensorPtr c = autocast::cached(s, *t, to);
  if (c && !(c->grad_fn && c->grad_fn->released)) return c;
  c = cast(t, to);
  autocast::remember(s, t, c);
  return c;
}

bool eligible(const TensorPtr *p) { return p && *p && autocast::eligible(**p); }

}  // namespace

void OpScope::autocast_inputs(TensorPtr *const *inputs, size_t n) {
  std::vector<DType> dtypes;
  for (size_t i = 0; i < n; ++i)
    if (eligible(inputs[i])) dtypes.push_back((*inputs[i])->dtype);
  const std::optional<DType> to = autocast::cast_target(s_, op_, dtypes);
  if (!to) return;
  for (size_t i = 0; i < n; ++i)
    if (eligible(inputs[i])) *inputs[i] = autocast_input(s_, *inputs[i], *to);
}

void OpScope::check_output(const Tensor &out, int index) const {
  if (outermost_ && s_->numerics != MIXP_NUMERICS_OFF) check_numerics(s_, name_, "forward", index, out);
  if (outermost_ && s_->trace) record_trace(s_, name_, false, index, out);
  mark(out, index);
}

Backend &backend_of(const Tensor &t) noexcept { return *t.session->backend; }

Session *same_session(const char *fn, std::initializer_list<const Tensor *> ts) {
  Session *s = nullptr;
  for (const Tensor *t : ts) {
    if (!t) continue;
    if (!s) s = t->session.get();
    else if (t->session.get() != s)
      fail(MIXP_ERR_DEVICE, fn, ": tensors belong to different sessions (", s->device, " and ",
           t->session->device, ")");
  }
  return s;
}

int env_choice(const char *fn, const char *var, std::initializer_list<const char *> choices) {
  const char *env = std::getenv(var);
  if (env == nullptr || *env == '\0') return 0;
  int i = 0;
  std::string names;
  for (const char *c : choices) {
    if (std::strcmp(env, c) == 0) return i;
    names += (i++ ? ", " : "") + std::string(c);
  }
  fail(MIXP_ERR_INVALID_ARGUMENT, fn, ": the environment variable ", var, " = '", env, "' is none of ", names);
}

void require_float(const char *fn, const char *arg, const Tensor &t) {
  if (!is_float(t.dtype))
    fail(MIXP_ERR_DTYPE, fn, ": ", arg, " must be a float tensor (f32, f64, f16, bf16), got ",
         dtype_name(t.dtype));
}

void require_same_dtype(const char *fn, const char *an, const Tensor &a, const char *bn, const Tensor &b) {
  if (a.dtype != b.dtype)
    fail(MIXP_ERR_DTYPE, fn, ": dtypes differ: ", an, " is ", dtype_name(a.dtype), ", ", bn, " is ",
         dtype_name(b.dtype), " (cast one with mixp_cast)");
}

Shape broadcast_shapes(const char *fn, const Shape &a, const Shape &b) {
  Shape out;
  out.ndim = std::max(a.ndim, b.ndim);
  for (int i = 0; i < out.ndim; ++i) {
    const int ia = a.ndim - out.ndim + i, ib = b.ndim - out.ndim + i;
    const int64_t da = ia >= 0 ? a.d[ia] : 1, db = ib >= 0 ? b.d[ib] : 1;
    if (da != db && da != 1 && db != 1)
      fail(MIXP_ERR_SHAPE, fn, ": shapes do not broadcast: a is ", shape_str(a), ", b is ", shape_str(b));
    out.d[i] = da == 1 ? db : da;
  }
  return out;
}

View broadcast_view(const Tensor &t, const Shape &shape) {
  View v = view_of(t);
  v.ndim = shape.ndim;
  for (int i = 0; i < shape.ndim; ++i) {
    const int it = t.ndim - shape.ndim + i;
    v.shape[i] = shape.d[i];
    v.strides[i] = (it >= 0 && t.shape[it] == shape.d[i]) ? t.strides[it] : 0;
  }
  return v;
}

TensorPtr sum_to(const TensorPtr &g, const Shape &shape) {
  if (shape_of(*g) == shape) return g;
  std::vector<int> dims;
  const int lead = g->ndim - shape.ndim;
  for (int i = 0; i < g->ndim; ++i) {
    if (i < lead) dims.push_back(i);
    else if (shape.d[i - lead] == 1 && g->shape[i] != 1) dims.push_back(i);
  }
  TensorPtr r = dims.empty() ? g : sum(g, dims, true);
  return reshape(r, shape);
}

}  // namespace mixp
