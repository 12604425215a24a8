// Shims of the activation-checkpointing region API.
#include "api/api_common.hpp"
#include "autograd/checkpoint.hpp"

using namespace mixp;

extern "C" {

mixp_status mixp_checkpoint_begin(mixp_session *session) {
  const char *fn = "mixp_checkpoint_begin";
  return guard(fn, [&] { checkpoint_begin(check_session(session, fn)); });
}

mixp_status mixp_checkpoint_end(mixp_session *session, mixp_tensor *const *outputs, int n) {
  const char *fn = "mixp_checkpoint_end";
  return guard(fn, [&] {
    Session *s = check_session(session, fn);
    if (n < 0) fail(MIXP_ERR_INVALID_ARGUMENT, fn, ": n must be >= 0, got ", n);
    if (n > 0 && !outputs) fail(MIXP_ERR_INVALID_ARGUMENT, fn, ": outputs is NULL but n is ", n);
    std::vector<Tensor *> outs;
    for (int i = 0; i < n; ++i) outs.push_back(check_tensor(outputs[i], fn, str("outputs[", i, "]").c_str()));
    checkpoint_end(s, outs);
  });
}

mixp_status mixp_checkpoint_abort(mixp_session *session) {
  const char *fn = "mixp_checkpoint_abort";
  return guard(fn, [&] { checkpoint_abort(check_session(session, fn)); });
}

}  // extern "C"
