// C shims of the op traces (core/op_trace.hpp, ops/trace.hpp).
#include <cmath>
#include <memory>

#include "api/api_common.hpp"
#include "ops/trace.hpp"

using namespace mixp;

struct mixp_trace {
  static constexpr uint32_t kMagic = 0x54524143u;  // "TRAC"
  uint32_t magic = kMagic;
  OpTrace trace;
  std::string report;  // of the last mixp_trace_compare with this trace as `test`
  ~mixp_trace() { magic = 0; }
};

namespace {

mixp_trace *check_trace(const mixp_trace *t, const char *fn, const char *arg) {
  if (!t) fail(MIXP_ERR_INVALID_ARGUMENT, fn, ": ", arg, " is NULL");
  if (t->magic != mixp_trace::kMagic)
    fail(MIXP_ERR_INVALID_ARGUMENT, fn, ": ", arg, " is not a live trace handle (destroyed or not a mixp_trace)");
  return const_cast<mixp_trace *>(t);
}

}  // namespace

extern "C" {

mixp_status mixp_trace_begin(mixp_session *session) {
  static const char *fn = "mixp_trace_begin";
  return guard(fn, [&] {
    Session *s = check_session(session, fn);
    if (s->trace) fail(MIXP_ERR_STATE, fn, ": a trace is already being recorded on this session");
    s->trace = std::make_unique<OpTrace>();
  });
}

mixp_status mixp_trace_end(mixp_session *session, mixp_trace **out) {
  static const char *fn = "mixp_trace_end";
  return guard(fn, [&] {
    Session *s = check_session(session, fn);
    check_out(out, fn);
    if (!s->trace) fail(MIXP_ERR_STATE, fn, ": no trace is being recorded (call mixp_trace_begin first)");
    auto t = std::make_unique<mixp_trace>();
    t->trace = std::move(*s->trace);
    s->trace.reset();
    *out = t.release();
  });
}

void mixp_trace_destroy(mixp_trace *trace) {
  if (trace && trace->magic == mixp_trace::kMagic) delete trace;
}

int64_t mixp_trace_length(const mixp_trace *trace) {
  return (trace && trace->magic == mixp_trace::kMagic) ? int64_t(trace->trace.entries.size()) : -1;
}

const char *mixp_trace_report(const mixp_trace *trace) {
  return (trace && trace->magic == mixp_trace::kMagic) ? trace->report.c_str() : "";
}

mixp_status mixp_trace_compare(const mixp_trace *reference, mixp_trace *test, double rel_tol,
                               int64_t *first_divergent, const char **report) {
  static const char *fn = "mixp_trace_compare";
  return guard(fn, [&] {
    const mixp_trace *r = check_trace(reference, fn, "reference");
    mixp_trace *t = check_trace(test, fn, "test");
    if (!(rel_tol >= 0.0)) fail(MIXP_ERR_INVALID_ARGUMENT, fn, ": rel_tol must be >= 0, got ", rel_tol);
    TraceComparison c = compare_traces(r->trace, t->trace, rel_tol);
    t->report = std::move(c.report);
    if (first_divergent) *first_divergent = c.first_divergent;
    if (report) *report = t->report.c_str();
  });
}

}  // extern "C"
