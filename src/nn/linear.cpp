// Linear: a learned mixp_linear, y = x W^T + b, initialised like
// torch.nn.Linear.
#include <cmath>

#include "core/error.hpp"
#include "nn/api_call.hpp"
#include "nn/layers.hpp"

namespace mixp {
namespace {

class Linear final : public Module {
 public:
  Linear(Session *s, int64_t in, int64_t out, bool bias, DType dtype) : Module(s, "Linear") {
    // kaiming_uniform_(a=sqrt(5)) on [out, in] gives gain sqrt(2/(1+5)) and
    // bound gain*sqrt(3/in) = 1/sqrt(in); PyTorch's bias bound is 1/sqrt(in)
    // as well. Weight first, then bias: the same stream order as PyTorch.
    const double bound = 1.0 / std::sqrt(double(in));
    const int64_t wshape[2] = {out, in};
    weight_ = register_parameter(
        "weight", nn::as_parameter(nn::uniform_tensor(s, dtype, wshape, 2, bound)));
    if (bias)
      bias_ = register_parameter(
          "bias", nn::as_parameter(nn::uniform_tensor(s, dtype, &out, 1, bound)));
  }

  TensorPtr forward(const TensorPtr &x) override {
    mixp_tensor *b = bias_ == kNone ? nullptr : param_slot(bias_).get();
    return nn::call(mixp_linear, x.get(), param_slot(weight_).get(), b);
  }

 private:
  static constexpr size_t kNone = ~size_t(0);
  size_t weight_ = kNone;
  size_t bias_ = kNone;
};

}  // namespace

std::unique_ptr<Module> make_linear(Session *s, int64_t in_features, int64_t out_features,
                                    bool bias, DType dtype, const char *fn) {
  if (in_features < 1)
    fail(MIXP_ERR_INVALID_ARGUMENT, fn, ": in_features must be >= 1, got ", in_features);
  if (out_features < 1)
    fail(MIXP_ERR_INVALID_ARGUMENT, fn, ": out_features must be >= 1, got ", out_features);
  check_param_dtype(dtype, fn);
  size_bytes(size_mul(in_features, out_features, fn, "the weight, in_features x out_features"), dtype, fn,
             "the weight");
  return std::make_unique<Linear>(s, in_features, out_features, bias, dtype);
}

}  // namespace mixp
