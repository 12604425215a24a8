// C ABI shims of split, flatten and pad (ops/shape_ops.cpp).
#include "api/api_common.hpp"
#include "ops/ops.hpp"

using namespace mixp;

extern "C" {

mixp_status mixp_split(const mixp_tensor *x, const int64_t *sizes, int n, int dim,
                       mixp_tensor **outs) {
  static const char *fn = "mixp_split";
  return guard(fn, [&] {
    check_out(outs, fn, "outs");
    auto x_ = share(check_tensor(x, fn, "x"));
    if (n < 1) fail(MIXP_ERR_INVALID_ARGUMENT, fn, ": n must be >= 1, got ", n);
    check_out(sizes, fn, "sizes");
    std::vector<TensorPtr> pieces = mixp::split(x_, std::vector<int64_t>(sizes, sizes + n), dim);
    for (int i = 0; i < n; ++i) give(&outs[i], std::move(pieces[size_t(i)]));
  });
}

mixp_status mixp_flatten(const mixp_tensor *x, int start_dim, int end_dim, mixp_tensor **out) {
  static const char *fn = "mixp_flatten";
  return guard(fn, [&] {
    check_out(out, fn);
    auto x_ = share(check_tensor(x, fn, "x"));
    give(out, mixp::flatten(x_, start_dim, end_dim));
  });
}

mixp_status mixp_pad(const mixp_tensor *x, const int64_t *pads, int npads, double value,
                     mixp_tensor **out) {
  static const char *fn = "mixp_pad";
  return guard(fn, [&] {
    check_out(out, fn);
    auto x_ = share(check_tensor(x, fn, "x"));
    if (npads < 0) fail(MIXP_ERR_INVALID_ARGUMENT, fn, ": npads must be >= 0, got ", npads);
    if (npads > 0) check_out(pads, fn, "pads");
    give(out, mixp::pad(x_, std::vector<int64_t>(pads, pads + npads), value));
  });
}

}  // extern "C"
