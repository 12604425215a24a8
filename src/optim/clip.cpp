#include "optim/clip.hpp"

#include <cmath>

#include "backend/backend.hpp"
#include "core/error.hpp"

namespace mixp::optim {

TensorPtr clip_grad_norm(Optimizer &opt, double max_norm, const char *fn) {
  if (!std::isfinite(max_norm) || !(max_norm > 0.0))
    fail(MIXP_ERR_INVALID_ARGUMENT, fn, ": max_norm must be finite and > 0, got ", max_norm);
  Session *s = check_session(opt.session.get(), fn, "the optimizer's session");
  const std::vector<TensorPtr> grads = opt.contiguous_grads();
  TensorPtr norm_sq = zeros(s, MIXP_F32, Shape{});
  TensorPtr total = zeros(s, MIXP_F32, Shape{});
  TensorPtr coef = zeros(s, MIXP_F32, Shape{});
  std::vector<View> views;
  views.reserve(grads.size());
  for (const TensorPtr &g : grads) views.push_back(view_of(*g));
  apply_threads(s);
  Backend &be = *s->backend;
  be.grad_norm_sq(views.data(), int(views.size()), view_of(*norm_sq));
  // Data parallel: every rank clips by the same norm (the largest of the
  // ranks'; equal anyway once gradients were averaged) and, when it is not
  // finite, every rank skips the step.
  if (opt.agree_max) opt.agree_max(*norm_sq);
  be.clip_coefficient(view_of(*norm_sq), max_norm, view_of(*total), view_of(*coef),
                      view_of(*opt.found_inf));
  opt.skip_agreed = false;
  be.scale_grads(views.data(), int(views.size()), view_of(*coef));
  return total;
}

}  // namespace mixp::optim
