// The found-inf handshake (see found_inf_handshake.hpp for the flow). Every
// call below is a backend kernel on a one-element tensor or on the
// gradients: the scaler's bookkeeping records no graph and runs no op.
#include "amp/found_inf_handshake.hpp"

#include "core/error.hpp"


namespace mixp::amp {
namespace {

TensorPtr scalar(Session &s, DType dtype) { return empty(&s, dtype, Shape{}); }

// PyTorch's inv_scale = scale.double().reciprocal().float(): the reciprocal
// formed in double and rounded once to fp32.
TensorPtr reciprocal_of(Session &s, const Tensor &scale) {
  TensorPtr wide = scalar(s, MIXP_F64);
  TensorPtr inv = scalar(s, MIXP_F32);
  Backend &be = *s.backend;
  const View w = view_of(*wide);
  be.copy(view_of(scale), w);
  be.unary(UnaryOp::RdivScalar, w, w, 1.0);
  be.copy(w, view_of(*inv));
  return inv;
}

// skipped += (found != 0), through `indicator` (an F64 scalar): `found`
// sums the optimizers' 0/1 flags (a small integer), so 1 - relu(1 - found)
// is exactly that indicator.
void count_skipped(Session &s, const Tensor &found, Tensor &indicator, Tensor &skipped) {
  Backend &be = *s.backend;
  const View v = view_of(indicator);
  be.copy(view_of(found), v);
  be.unary(UnaryOp::RsubScalar, v, v, 1.0);
  be.unary(UnaryOp::Relu, v, v, 0.0);
  be.unary(UnaryOp::RsubScalar, v, v, 1.0);
  be.binary(BinaryOp::Add, view_of(skipped), v, view_of(skipped));
}

}  // namespace

FoundInfHandshake::Record *FoundInfHandshake::find(const Optimizer &opt) noexcept {
  for (Record &r : records_) {
    std::shared_ptr<const int> id = r.id.lock();
    if (id && id.get() == opt.identity.get()) return &r;
  }
  return nullptr;
}

const FoundInfHandshake::Record *FoundInfHandshake::find(const Optimizer &opt) const noexcept {
  return const_cast<FoundInfHandshake *>(this)->find(opt);
}

OptStage FoundInfHandshake::stage(const Optimizer &opt) const noexcept {
  const Record *r = find(opt);
  return r ? r->stage : OptStage::Ready;
}

void FoundInfHandshake::unscale(Optimizer &opt, const Tensor &scale) {
  Session &s = *opt.session;
  // Everything that allocates first, so that a failure changes nothing.
  TensorPtr found = zeros(&s, MIXP_F32, Shape{});
  TensorPtr inv = reciprocal_of(s, scale);
  const std::vector<TensorPtr> grads = opt.contiguous_grads();
  std::vector<View> views;
  views.reserve(grads.size());
  for (const TensorPtr &g : grads) views.push_back(view_of(*g));
  Record *r = find(opt);
  if (!r) {
    records_.push_back(Record{opt.identity, OptStage::Ready, nullptr, nullptr});
    r = &records_.back();
  }

  apply_threads(&s);
  Backend &be = *s.backend;
  be.non_finite_check_and_unscale(views.data(), int(views.size()), view_of(*found), view_of(*inv));
  const View flag = view_of(*opt.found_inf);
  be.binary(BinaryOp::Add, flag, view_of(*found), flag);
  opt.skip_agreed = false;  // the flag changed: the ranks agree again
  r->stage = OptStage::Unscaled;
  r->flag = opt.found_inf;
  r->found_inf = std::move(found);
}

void FoundInfHandshake::step(Optimizer &opt, const char *fn) {
  Record *r = find(opt);
  if (!r || r->stage != OptStage::Unscaled)
    fail(MIXP_ERR_INTERNAL, fn, ": the scaler steps an optimizer it has not unscaled");
  Session &s = *opt.session;
  TensorPtr snapshot = scalar(s, MIXP_F32);
  // Data parallel: what update() sums is what every rank stepped on.
  opt.agree_on_skip();
  s.backend->copy(view_of(*opt.found_inf), view_of(*snapshot));
  opt.step(fn);  // reads the flag on the device, then clears it
  r->found_inf = std::move(snapshot);
  r->stage = OptStage::Stepped;
}

TensorPtr FoundInfHandshake::finish(Session &s) {
  Backend &be = *s.backend;
  TensorPtr sum = zeros(&s, MIXP_F32, Shape{});
  const View total = view_of(*sum);
  for (const Record &r : records_) {
    be.binary(BinaryOp::Add, total, view_of(*r.found_inf), total);
    // Unscaled but never stepped through the scaler: the optimizer's flag
    // may hold a clip finding too (or was consumed by a plain step, in which
    // case the record's own finding still holds the unscale's).
    if (r.stage == OptStage::Unscaled) be.binary(BinaryOp::Add, total, view_of(*r.flag), total);
  }
  for (const Record &r : records_)
    if (r.stage == OptStage::Unscaled) be.fill(view_of(*r.flag), 0.0);
  records_.clear();
  return sum;
}

TensorPtr FoundInfHandshake::update(Session &s, const ScaleUpdate *dynamic, Tensor &skipped) {
  TensorPtr indicator = scalar(s, MIXP_F64);  // allocated before anything changes
  TensorPtr sum = finish(s);
  if (dynamic) {
    ScaleUpdate u = *dynamic;
    u.found_inf = view_of(*sum);
    s.backend->update_scale(u);
  }
  count_skipped(s, *sum, *indicator, skipped);
  return sum;
}

}  // namespace mixp::amp
