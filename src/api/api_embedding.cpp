// C ABI shim of the embedding lookup (ops/embedding.cpp).
#include "api/api_common.hpp"
#include "ops/ops.hpp"

using namespace mixp;

extern "C" {

mixp_status mixp_embedding(const mixp_tensor *weight, const mixp_tensor *indices,
                           int64_t padding_idx, mixp_tensor **out) {
  static const char *fn = "mixp_embedding";
  return guard(fn, [&] {
    check_out(out, fn);
    auto w_ = share(check_tensor(weight, fn, "weight"));
    auto i_ = share(check_tensor(indices, fn, "indices"));
    give(out, mixp::embedding(w_, i_, padding_idx));
  });
}

}  // extern "C"
