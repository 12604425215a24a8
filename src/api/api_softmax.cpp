// C ABI shims of softmax and log_softmax (ops/softmax.cpp).
#include "api/api_common.hpp"
#include "ops/ops.hpp"

using namespace mixp;

extern "C" {

mixp_status mixp_softmax(const mixp_tensor *x, int dim, mixp_tensor **out) {
  return guard("mixp_softmax", [&] {
    check_out(out, "mixp_softmax");
    auto x_ = share(check_tensor(x, "mixp_softmax", "x"));
    give(out, mixp::softmax(x_, dim, false));
  });
}

mixp_status mixp_log_softmax(const mixp_tensor *x, int dim, mixp_tensor **out) {
  return guard("mixp_log_softmax", [&] {
    check_out(out, "mixp_log_softmax");
    auto x_ = share(check_tensor(x, "mixp_log_softmax", "x"));
    give(out, mixp::softmax(x_, dim, true));
  });
}

}  // extern "C"
