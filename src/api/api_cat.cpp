// C ABI shim of concatenation (ops/cat.cpp).
#include "api/api_common.hpp"
#include "ops/ops.hpp"

using namespace mixp;

extern "C" {

mixp_status mixp_cat(const mixp_tensor *const *tensors, int n, int dim, mixp_tensor **out) {
  return guard("mixp_cat", [&] {
    check_out(out, "mixp_cat");
    if (!tensors) fail(MIXP_ERR_INVALID_ARGUMENT, "mixp_cat: tensors is NULL");
    if (n < 1) fail(MIXP_ERR_INVALID_ARGUMENT, "mixp_cat: n = ", n, " but at least 1 tensor is needed");
    std::vector<TensorPtr> xs;
    xs.reserve(size_t(n));
    for (int i = 0; i < n; ++i) {
      const std::string arg = str("tensors[", i, "]");
      xs.push_back(share(check_tensor(tensors[i], "mixp_cat", arg.c_str())));
    }
    give(out, mixp::cat(xs, dim));
  });
}

}  // extern "C"
