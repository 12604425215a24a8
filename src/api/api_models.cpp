// C shim of the model zoo.
#include "api/api_common.hpp"
#include "models/models.hpp"

using namespace mixp;

extern "C" {

mixp_status mixp_model_create(mixp_session *session, const char *config, mixp_module **out) {
  static const char *fn = "mixp_model_create";
  return guard(fn, [&] {
    Session *s = check_session(session, fn);
    if (!config) fail(MIXP_ERR_INVALID_ARGUMENT, fn, ": config is NULL");
    check_out(out, fn);
    *out = models::make_model(s, config, fn).release();
  });
}

}  // extern "C"
