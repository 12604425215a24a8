// C ABI shims of the op statistics (core/op_stats.hpp).
#include "api/api_common.hpp"
#include "core/op_stats.hpp"

using namespace mixp;

extern "C" {

mixp_status mixp_session_op_stats_start(mixp_session *session) {
  const char *fn = "mixp_session_op_stats_start";
  return guard(fn, [&] { op_stats_start(check_session(session, fn)); });
}

mixp_status mixp_session_op_stats_stop(mixp_session *session) {
  const char *fn = "mixp_session_op_stats_stop";
  return guard(fn, [&] { check_session(session, fn)->op_stats_on = false; });
}

mixp_status mixp_session_op_stats_count(const mixp_session *session, const char *op, int backward,
                                        mixp_dtype dtype, int64_t *count) {
  const char *fn = "mixp_session_op_stats_count";
  return guard(fn, [&] {
    const Session *s = check_session(session, fn);
    check_out(count, fn, "count");
    if (!op) fail(MIXP_ERR_INVALID_ARGUMENT, fn, ": op is NULL");
    const int index = op_index(op);
    if (index < 0) fail(MIXP_ERR_INVALID_ARGUMENT, fn, ": unknown op '", op, "' (see mixp_op_name)");
    if (backward != 0 && backward != 1)
      fail(MIXP_ERR_INVALID_ARGUMENT, fn, ": backward = ", backward, " is not 0 or 1");
    if (int(dtype) < 0 || int(dtype) >= kDTypeSlots)
      fail(MIXP_ERR_INVALID_ARGUMENT, fn, ": dtype = ", int(dtype), " is not a mixp_dtype");
    const size_t i = op_stats_index(op_at(index), backward == 1, DType(dtype));
    *count = i < s->op_stats.size() ? int64_t(s->op_stats[i]) : 0;
  });
}

const char *mixp_session_op_stats_report(mixp_session *session) {
  if (!session || session->magic != mixp_session::kMagic) return "";
  try {
    session->op_stats_report = op_stats_table(*session);
  } catch (...) {
    return "";
  }
  return session->op_stats_report.c_str();
}

}  // extern "C"
