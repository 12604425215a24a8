// C ABI shim of scaled dot-product attention (ops/attention.cpp).
#include "api/api_common.hpp"
#include "ops/ops.hpp"

using namespace mixp;

extern "C" {

mixp_status mixp_scaled_dot_product_attention(const mixp_tensor *q, const mixp_tensor *k,
                                              const mixp_tensor *v, int is_causal,
                                              double dropout_p, double scale, mixp_tensor **out) {
  static const char *fn = "mixp_scaled_dot_product_attention";
  return guard(fn, [&] {
    check_out(out, fn);
    auto q_ = share(check_tensor(q, fn, "q"));
    auto k_ = share(check_tensor(k, fn, "k"));
    auto v_ = share(check_tensor(v, fn, "v"));
    check_flag(is_causal, fn, "is_causal");
    give(out, mixp::scaled_dot_product_attention(q_, k_, v_, is_causal == 1, dropout_p, scale));
  });
}

}  // extern "C"
