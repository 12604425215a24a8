// Autograd shims.
#include "api/api_common.hpp"
#include "autograd/node.hpp"
#include "ops/ops.hpp"

using namespace mixp;

extern "C" {

mixp_status mixp_tensor_set_requires_grad(mixp_tensor *tensor, int requires_grad) {
  const char *fn = "mixp_tensor_set_requires_grad";
  return guard(fn, [&] {
    Tensor *t = check_tensor(tensor, fn, "tensor");
    if (!t->is_leaf())
      fail(MIXP_ERR_STATE, fn, ": tensor is not a leaf (it was produced by op '", t->grad_fn->name(),
           "'); use mixp_tensor_detach() to make a leaf");
    if (requires_grad && !is_float(t->dtype))
      fail(MIXP_ERR_DTYPE, fn, ": only float tensors can require grad, tensor is ", dtype_name(t->dtype));
    t->requires_grad = requires_grad != 0;
  });
}

int mixp_tensor_requires_grad(const mixp_tensor *t) {
  return (t && t->magic == mixp_tensor::kMagic && t->requires_grad) ? 1 : 0;
}

int mixp_tensor_is_leaf(const mixp_tensor *t) {
  return (t && t->magic == mixp_tensor::kMagic && t->is_leaf()) ? 1 : 0;
}

mixp_status mixp_tensor_grad(const mixp_tensor *tensor, mixp_tensor **out) {
  const char *fn = "mixp_tensor_grad";
  return guard(fn, [&] {
    Tensor *t = check_tensor(tensor, fn, "tensor");
    check_out(out, fn);
    give(out, t->grad);
  });
}

mixp_status mixp_tensor_zero_grad(mixp_tensor *tensor) {
  const char *fn = "mixp_tensor_zero_grad";
  return guard(fn, [&] { check_tensor(tensor, fn, "tensor")->grad.reset(); });
}

mixp_status mixp_tensor_detach(const mixp_tensor *tensor, mixp_tensor **out) {
  const char *fn = "mixp_tensor_detach";
  return guard(fn, [&] {
    Tensor *t = check_tensor(tensor, fn, "tensor");
    check_out(out, fn);
    give(out, detach(*t));
  });
}

mixp_status mixp_backward(mixp_tensor *loss, const mixp_tensor *seed_grad) {
  const char *fn = "mixp_backward";
  return guard(fn, [&] {
    Tensor *l = check_tensor(loss, fn, "loss");
    const Tensor *sg = seed_grad ? check_tensor(seed_grad, fn, "seed_grad") : nullptr;
    if (l->session->checkpoint)
      fail(MIXP_ERR_STATE, fn, ": a checkpoint region is open on the loss's session; call "
           "mixp_checkpoint_end before backward");
    OpScope scope(OpId::backward, l->session.get());
    run_backward(*l, sg);
  });
}

}  // extern "C"
