// C ABI shims of pooling (ops/pool.cpp).
#include "api/api_common.hpp"
#include "api/options_init.hpp"
#include "core/options.hpp"
#include "ops/ops.hpp"

using namespace mixp;

namespace {

mixp_status pool_shim(const char *fn, bool max, const mixp_tensor *x, const mixp_pool2d_options *options,
                      mixp_tensor **out) {
  return guard(fn, [&] {
    check_out(out, fn);
    auto x_ = share(check_tensor(x, fn, "x"));
    const mixp_pool2d_options o = read_options(options, mixp_pool2d_options_init, fn, "mixp_pool2d_options_init");
    give(out, max ? max_pool2d(x_, o) : avg_pool2d(x_, o));
  });
}

}  // namespace

extern "C" {

mixp_status mixp_pool2d_options_init_sized(mixp_pool2d_options *options, size_t size) {
  static const mixp_pool2d_options defaults = defaults_of<mixp_pool2d_options>([](mixp_pool2d_options &d) {
    d.struct_size = sizeof d;
    d.kernel_h = d.kernel_w = 2;
    d.stride_h = d.stride_w = 0;
    d.pad_h = d.pad_w = 0;
    d.count_include_pad = 1;
    d.layout = MIXP_NCHW;
  });
  return init_options_sized(options, size, defaults, "mixp_pool2d_options_init_sized");
}

mixp_status mixp_max_pool2d(const mixp_tensor *x, const mixp_pool2d_options *options, mixp_tensor **out) {
  return pool_shim("mixp_max_pool2d", true, x, options, out);
}

mixp_status mixp_avg_pool2d(const mixp_tensor *x, const mixp_pool2d_options *options, mixp_tensor **out) {
  return pool_shim("mixp_avg_pool2d", false, x, options, out);
}

mixp_status mixp_adaptive_avg_pool2d(const mixp_tensor *x, int64_t out_h, int64_t out_w, mixp_layout layout,
                                     mixp_tensor **out) {
  const char *fn = "mixp_adaptive_avg_pool2d";
  return guard(fn, [&] {
    check_out(out, fn);
    auto x_ = share(check_tensor(x, fn, "x"));
    give(out, adaptive_avg_pool2d(x_, out_h, out_w, layout));
  });
}

}  // extern "C"
