// Autocast shims: regions, policy queries and the op registry.
#include <cstring>

#include "autocast/autocast.hpp"
#include "api/api_common.hpp"
#include "core/options.hpp"

using namespace mixp;

extern "C" {

void mixp_autocast_options_init(mixp_autocast_options *o) {
  if (!o) return;
  *o = mixp_autocast_options{};
  o->struct_size = sizeof(mixp_autocast_options);
  o->enabled = 1;
  o->dtype = MIXP_BF16;
  o->level = MIXP_AMP_O1;
  o->cache_enabled = 1;
}

mixp_status mixp_autocast_push(mixp_session *session, const mixp_autocast_options *options) {
  const char *fn = "mixp_autocast_push";
  return guard(fn, [&] {
    Session *s = check_session(session, fn);
    const mixp_autocast_options o = read_options(options, mixp_autocast_options_init, fn,
                                                 "mixp_autocast_options_init");
    autocast::push(s, o, fn);
  });
}

mixp_status mixp_autocast_pop(mixp_session *session) {
  const char *fn = "mixp_autocast_pop";
  return guard(fn, [&] { autocast::pop(check_session(session, fn), fn); });
}

mixp_status mixp_autocast_policy(const mixp_session *session, const char *op_name,
                                 mixp_autocast_policy_info *policy) {
  const char *fn = "mixp_autocast_policy";
  return guard(fn, [&] {
    Session *s = check_session(session, fn);
    if (!op_name) fail(MIXP_ERR_INVALID_ARGUMENT, fn, ": op_name is NULL");
    check_out(policy, fn, "policy");
    check_struct_size(*policy, fn, "policy", "set it to sizeof(mixp_autocast_policy_info)");
    const int idx = op_index(op_name);
    if (idx < 0) fail(MIXP_ERR_INVALID_ARGUMENT, fn, ": unknown op '", op_name, "'");
    const autocast::State *st = autocast::current(s);
    autocast::Decision d = st ? autocast::decide(*st, op_at(idx)) : autocast::Decision{};
    policy->cast = d.cast;
    policy->dtype = d.cast == MIXP_CAST_LOWER ? d.dtype : MIXP_F32;
  });
}

int mixp_op_count(void) { return kOpCount; }

const char *mixp_op_name(int index) {
  if (index < 0 || index >= kOpCount) return nullptr;
  return op_name(op_at(index));
}

}  // extern "C"
