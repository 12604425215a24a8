// LayerNorm over the last dimension, with PyTorch's weight (1) and bias (0).
#include <cmath>

#include "core/error.hpp"
#include "nn/api_call.hpp"
#include "nn/layers.hpp"

namespace mixp {
namespace {

class LayerNorm final : public Module {
 public:
  LayerNorm(Session *s, int64_t d, double eps, bool affine, DType dtype)
      : Module(s, "LayerNorm"), d_(d), eps_(eps) {
    if (affine) {
      weight_ = register_parameter("weight", nn::as_parameter(nn::full_tensor(s, dtype, &d, 1, 1)));
      bias_ = register_parameter("bias", nn::as_parameter(nn::full_tensor(s, dtype, &d, 1, 0)));
    }
  }

  bool is_norm_layer() const override { return true; }

  TensorPtr forward(const TensorPtr &x) override {
    const int nd = nn::ndim_of(x);
    if (nd < 1 || nn::dim_of(x, nd - 1) != d_)
      fail(MIXP_ERR_SHAPE, "mixp_module_forward: LayerNorm(", d_,
           ") expects an input whose last dim is ", d_, ", got ", nn::shape_string(x));
    mixp_tensor *w = weight_ == kNone ? nullptr : param_slot(weight_).get();
    mixp_tensor *b = bias_ == kNone ? nullptr : param_slot(bias_).get();
    // Without affine parameters there is nothing to reconcile the input with.
    const mixp_dtype pd = w ? mixp_tensor_dtype(w) : mixp_tensor_dtype(x.get());
    return nn::in_param_dtype(x, pd, "layer_norm", [&](const TensorPtr &in) {
      return nn::call(mixp_layer_norm, in.get(), 1, w, b, eps_);
    });
  }

 private:
  static constexpr size_t kNone = ~size_t(0);
  int64_t d_;
  double eps_;
  size_t weight_ = kNone, bias_ = kNone;
};

}  // namespace

std::unique_ptr<Module> make_layernorm(Session *s, int64_t normalized_size, double eps,
                                       bool affine, DType dtype, const char *fn) {
  if (normalized_size < 1)
    fail(MIXP_ERR_INVALID_ARGUMENT, fn, ": normalized_size must be >= 1, got ", normalized_size);
  if (!(eps > 0.0) || !std::isfinite(eps))
    fail(MIXP_ERR_INVALID_ARGUMENT, fn, ": eps must be finite and > 0, got ", eps);
  check_param_dtype(dtype, fn);
  return std::make_unique<LayerNorm>(s, normalized_size, eps, affine, dtype);
}

}  // namespace mixp
