// Conv2d: a learned mixp_conv2d, initialised like torch.nn.Conv2d.
#include <cmath>
#include <limits>

#include "core/options.hpp"
#include "core/error.hpp"
#include "nn/api_call.hpp"
#include "nn/layers.hpp"

namespace mixp {
namespace {

class Conv2d final : public Module {
 public:
  Conv2d(Session *s, int64_t in, int64_t out, int64_t kh, int64_t kw,
         const mixp_conv2d_options &geom, bool bias, DType dtype)
      : Module(s, "Conv2d"), geom_(geom) {
    // kaiming_uniform_(a=sqrt(5)) gives bound 1/sqrt(fan_in), and the bias
    // bound is 1/sqrt(fan_in) as well; fan_in counts one group's inputs.
    const int64_t fan_in = in / geom.groups * kh * kw;
    const double bound = 1.0 / std::sqrt(double(fan_in));
    const int64_t wshape[4] = {out, in / geom.groups, kh, kw};
    weight_ = register_parameter(
        "weight", nn::as_parameter(nn::uniform_tensor(s, dtype, wshape, 4, bound)));
    if (bias)
      bias_ = register_parameter(
          "bias", nn::as_parameter(nn::uniform_tensor(s, dtype, &out, 1, bound)));
  }

  TensorPtr forward(const TensorPtr &x) override {
    mixp_tensor *b = bias_ == kNone ? nullptr : param_slot(bias_).get();
    return nn::call(mixp_conv2d, x.get(), param_slot(weight_).get(), b, &geom_);
  }

 private:
  static constexpr size_t kNone = ~size_t(0);
  mixp_conv2d_options geom_;
  size_t weight_ = kNone;
  size_t bias_ = kNone;
};

void require_positive(int64_t v, const char *fn, const char *what) {
  if (v < 1) fail(MIXP_ERR_INVALID_ARGUMENT, fn, ": ", what, " must be >= 1, got ", v);
}

}  // namespace

std::unique_ptr<Module> make_conv2d(Session *s, int64_t in_channels, int64_t out_channels,
                                    int64_t kernel_h, int64_t kernel_w,
                                    const mixp_conv2d_options *geom, bool bias, DType dtype,
                                    const char *fn) {
  const mixp_conv2d_options g = read_options(geom, mixp_conv2d_options_init, fn, "mixp_conv2d_options_init", "geom");
  require_positive(in_channels, fn, "in_channels");
  require_positive(out_channels, fn, "out_channels");
  require_positive(kernel_h, fn, "kernel_h");
  require_positive(kernel_w, fn, "kernel_w");
  require_positive(g.stride_h, fn, "geom->stride_h");
  require_positive(g.stride_w, fn, "geom->stride_w");
  require_positive(g.dilation_h, fn, "geom->dilation_h");
  require_positive(g.dilation_w, fn, "geom->dilation_w");
  require_positive(g.groups, fn, "geom->groups");
  if (g.pad_h < 0) fail(MIXP_ERR_INVALID_ARGUMENT, fn, ": geom->pad_h must be >= 0, got ", g.pad_h);
  if (g.pad_w < 0) fail(MIXP_ERR_INVALID_ARGUMENT, fn, ": geom->pad_w must be >= 0, got ", g.pad_w);
  if (int(g.layout) != MIXP_NCHW && int(g.layout) != MIXP_NHWC)
    fail(MIXP_ERR_INVALID_ARGUMENT, fn, ": geom->layout must be MIXP_NCHW or MIXP_NHWC, got ",
         int(g.layout));
  if (in_channels % g.groups != 0)
    fail(MIXP_ERR_INVALID_ARGUMENT, fn, ": in_channels (", in_channels,
         ") must be divisible by geom->groups (", g.groups, ")");
  if (out_channels % g.groups != 0)
    fail(MIXP_ERR_INVALID_ARGUMENT, fn, ": out_channels (", out_channels,
         ") must be divisible by geom->groups (", g.groups, ")");
  const int64_t big = int64_t(1) << 40;
  if (in_channels > big || out_channels > big || kernel_h > big || kernel_w > big ||
      double(out_channels) * double(in_channels / g.groups) * double(kernel_h) *
              double(kernel_w) > double(std::numeric_limits<int64_t>::max() / 8))
    fail(MIXP_ERR_INVALID_ARGUMENT, fn, ": the weight [", out_channels, ",",
         in_channels / g.groups, ",", kernel_h, ",", kernel_w, "] is too large");
  check_param_dtype(dtype, fn);
  return std::make_unique<Conv2d>(s, in_channels, out_channels, kernel_h, kernel_w, g, bias,
                                  dtype);
}

}  // namespace mixp
