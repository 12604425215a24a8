// Linear: y = x W^T + b, initialised like torch.nn.Linear.
#include <cmath>
#include <limits>

#include "autograd/node.hpp"
#include "core/error.hpp"
#include "nn/module.hpp"
#include "ops/ops.hpp"

namespace mixp {
namespace {

// U(-bound, bound) from the session's Philox stream. The draw and the affine
// map run in fp32 (fp64 for F64) and are rounded once to the parameter dtype,
// so half parameters get the nearest half of the fp32 init, as in PyTorch's
// init on a half tensor.
TensorPtr uniform_param(Session *s, DType dtype, const Shape &shape, double bound) {
  DType work = dtype == MIXP_F64 ? MIXP_F64 : MIXP_F32;
  TensorPtr u = rand_uniform(s, work, shape);
  TensorPtr t = add_scalar(mul_scalar(u, 2.0 * bound), -bound);
  if (work != dtype) t = cast(t, dtype);
  t->requires_grad = true;
  return t;
}

class Linear final : public Module {
 public:
  Linear(Session *s, int64_t in, int64_t out, bool bias, DType dtype) : Module(s, "Linear") {
    // kaiming_uniform_(a=sqrt(5)) on [out, in] gives gain sqrt(2/(1+5)) and
    // bound gain*sqrt(3/in) = 1/sqrt(in); PyTorch's bias bound is 1/sqrt(in)
    // as well. Weight first, then bias: the same stream order as PyTorch.
    const double bound = 1.0 / std::sqrt(double(in));
    NoGradGuard no_grad(s);
    weight_ = register_parameter("weight", uniform_param(s, dtype, Shape{out, in}, bound));
    if (bias) bias_ = register_parameter("bias", uniform_param(s, dtype, Shape{out}, bound));
  }

  TensorPtr forward(const TensorPtr &x) override {
    return linear(x, param_slot(weight_), bias_ == kNone ? TensorPtr() : param_slot(bias_));
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
  if (in_features > std::numeric_limits<int64_t>::max() / out_features)
    fail(MIXP_ERR_INVALID_ARGUMENT, fn, ": in_features x out_features (", in_features, " x ",
         out_features, ") overflows int64");
  if (!dtype_valid(int(dtype)) || !is_float(dtype))
    fail(MIXP_ERR_DTYPE, fn, ": dtype must be a float dtype (f32, f16, bf16, f64), got ",
         dtype_valid(int(dtype)) ? dtype_name(dtype) : str(int(dtype)).c_str());
  return std::make_unique<Linear>(s, in_features, out_features, bias, dtype);
}

}  // namespace mixp
