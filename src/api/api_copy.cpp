// C ABI shims of contiguous copies and dtype casts (ops/copy.cpp).
#include "api/api_common.hpp"
#include "ops/ops.hpp"

using namespace mixp;

extern "C" {

mixp_status mixp_contiguous(const mixp_tensor *x, mixp_tensor **out) {
  const char *fn = "mixp_contiguous";
  return guard(fn, [&] {
    check_out(out, fn);
    TensorPtr t = share(check_tensor(x, fn, "x"));
    OpScope scope(OpId::contiguous, t->session.get());
    scope.tape({t.get()}, [](const Replay &r) { return contiguous(r[0]); });
    give(out, scope.produced(contiguous(t)));
  });
}

mixp_status mixp_cast(const mixp_tensor *x, mixp_dtype dtype, mixp_tensor **out) {
  const char *fn = "mixp_cast";
  return guard(fn, [&] {
    check_out(out, fn);
    TensorPtr t = share(check_tensor(x, fn, "x"));
    check_dtype(dtype, fn);
    // A same-dtype cast returns x itself (a new reference), like PyTorch's .to().
    give(out, cast(t, dtype));
  });
}

}  // extern "C"
