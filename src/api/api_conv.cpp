// C ABI shims of convolution (ops/conv.cpp).
#include "api/api_common.hpp"
#include "core/options.hpp"
#include "mixp/mixp.h"
#include "ops/ops.hpp"

using namespace mixp;

extern "C" {

void mixp_conv2d_options_init(mixp_conv2d_options *options) {
  if (!options) return;
  *options = mixp_conv2d_options{};
  options->struct_size = sizeof(mixp_conv2d_options);
  options->stride_h = options->stride_w = 1;
  options->pad_h = options->pad_w = 0;
  options->dilation_h = options->dilation_w = 1;
  options->groups = 1;
  options->layout = MIXP_NCHW;
}

mixp_status mixp_conv2d(const mixp_tensor *x, const mixp_tensor *weight, const mixp_tensor *bias,
                        const mixp_conv2d_options *options, mixp_tensor **out) {
  const char *fn = "mixp_conv2d";
  return guard(fn, [&] {
    check_out(out, fn);
    TensorPtr xt = share(check_tensor(x, fn, "x"));
    TensorPtr wt = share(check_tensor(weight, fn, "weight"));
    TensorPtr bt = bias ? share(check_tensor(bias, fn, "bias")) : TensorPtr();
    const mixp_conv2d_options o = read_options(options, mixp_conv2d_options_init, fn, "mixp_conv2d_options_init");
    give(out, conv2d(xt, wt, bt, o));
  });
}

}  // extern "C"
