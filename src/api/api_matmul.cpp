// C ABI shims of the matrix products (ops/matmul.cpp).
#include "api/api_common.hpp"
#include "ops/ops.hpp"

using namespace mixp;

extern "C" {

mixp_status mixp_matmul(const mixp_tensor *a, const mixp_tensor *b, mixp_tensor **out) {
  const char *fn = "mixp_matmul";
  return guard(fn, [&] {
    check_out(out, fn);
    give(out, matmul(share(check_tensor(a, fn, "a")), share(check_tensor(b, fn, "b"))));
  });
}

mixp_status mixp_bmm(const mixp_tensor *a, const mixp_tensor *b, mixp_tensor **out) {
  const char *fn = "mixp_bmm";
  return guard(fn, [&] {
    check_out(out, fn);
    give(out, bmm(share(check_tensor(a, fn, "a")), share(check_tensor(b, fn, "b"))));
  });
}

mixp_status mixp_linear(const mixp_tensor *x, const mixp_tensor *weight, const mixp_tensor *bias,
                        mixp_tensor **out) {
  const char *fn = "mixp_linear";
  return guard(fn, [&] {
    check_out(out, fn);
    TensorPtr xt = share(check_tensor(x, fn, "x"));
    TensorPtr wt = share(check_tensor(weight, fn, "weight"));
    TensorPtr bt = bias ? share(check_tensor(bias, fn, "bias")) : TensorPtr();
    give(out, linear(xt, wt, bt));
  });
}

mixp_status mixp_scaled_matmul(const mixp_tensor *a, const mixp_tensor *scale_a, const mixp_tensor *b,
                               const mixp_tensor *scale_b, const mixp_tensor *bias, mixp_dtype out_dtype,
                               unsigned flags, mixp_tensor *amax, mixp_tensor **out) {
  const char *fn = "mixp_scaled_matmul";
  return guard(fn, [&] {
    check_out(out, fn);
    TensorPtr at = share(check_tensor(a, fn, "a")), sat = share(check_tensor(scale_a, fn, "scale_a"));
    TensorPtr bt = share(check_tensor(b, fn, "b")), sbt = share(check_tensor(scale_b, fn, "scale_b"));
    TensorPtr biast = bias ? share(check_tensor(bias, fn, "bias")) : TensorPtr();
    Tensor *amaxt = amax ? check_tensor(amax, fn, "amax") : nullptr;
    give(out, scaled_matmul(at, sat, bt, sbt, biast, out_dtype, flags, amaxt));
  });
}

}  // extern "C"
