// C ABI shim of dropout (ops/dropout.cpp).
#include "api/api_common.hpp"
#include "ops/ops.hpp"

using namespace mixp;

extern "C" {

mixp_status mixp_dropout(const mixp_tensor *x, double p, int training, mixp_tensor **out) {
  return guard("mixp_dropout", [&] {
    check_out(out, "mixp_dropout");
    auto x_ = share(check_tensor(x, "mixp_dropout", "x"));
    give(out, mixp::dropout(x_, p, training != 0));
  });
}

}  // extern "C"
