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

}  // extern "C"
