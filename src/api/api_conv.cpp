// C ABI shims of convolution (ops/conv.cpp).
#include "api/api_common.hpp"
#include "api/options_init.hpp"
#include "core/options.hpp"
#include "mixp/mixp.h"
#include "ops/ops.hpp"

using namespace mixp;

extern "C" {

mixp_status mixp_conv2d_options_init_sized(mixp_conv2d_options *options, size_t size) {
  static const mixp_conv2d_options defaults = defaults_of<mixp_conv2d_options>([](mixp_conv2d_options &d) {
    d.struct_size = sizeof d;
    d.stride_h = d.stride_w = 1;
    d.pad_h = d.pad_w = 0;
    d.dilation_h = d.dilation_w = 1;
    d.groups = 1;
    d.layout = MIXP_NCHW;
  });
  return init_options_sized(options, size, defaults, "mixp_conv2d_options_init_sized");
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
