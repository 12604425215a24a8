// C shims of the profiler (core/profile.hpp, ops/profile.hpp).
#include <memory>

#include "api/api_common.hpp"
#include "core/options.hpp"
#include "ops/profile.hpp"
#include "state/file_io.hpp"

using namespace mixp;

struct mixp_profile {
  static constexpr uint32_t kMagic = 0x50524f46u;  // "PROF"
  uint32_t magic = kMagic;
  std::unique_ptr<Profile> profile;
  std::vector<ProfileRow> rows;  // the summary, sorted
  std::string report;            // of the last mixp_profile_report
  ~mixp_profile() { magic = 0; }
};

namespace {

const mixp_profile *live(const mixp_profile *p) noexcept {
  return (p && p->magic == mixp_profile::kMagic) ? p : nullptr;
}

const mixp_profile *check_profile(const mixp_profile *p, const char *fn) {
  if (!p) fail(MIXP_ERR_INVALID_ARGUMENT, fn, ": profile is NULL");
  if (!live(p))
    fail(MIXP_ERR_INVALID_ARGUMENT, fn, ": profile is not a live profile handle (destroyed or not a mixp_profile)");
  return p;
}

}  // namespace

extern "C" {

mixp_status mixp_profile_begin(mixp_session *session) {
  static const char *fn = "mixp_profile_begin";
  return guard(fn, [&] {
    Session *s = check_session(session, fn);
    if (s->profile) fail(MIXP_ERR_STATE, fn, ": a profile is already being recorded on this session");
    profile_start(s);
  });
}

mixp_status mixp_profile_end(mixp_session *session, mixp_profile **out) {
  static const char *fn = "mixp_profile_end";
  return guard(fn, [&] {
    Session *s = check_session(session, fn);
    check_out(out, fn);
    if (!s->profile) fail(MIXP_ERR_STATE, fn, ": no profile is being recorded (call mixp_profile_begin first)");
    auto p = std::make_unique<mixp_profile>();
    p->profile = profile_stop(s);  // recording has stopped even if reading the device fails
    p->rows = profile_summary(*p->profile);
    *out = p.release();
  });
}

void mixp_profile_destroy(mixp_profile *profile) {
  if (live(profile)) delete profile;
}

int64_t mixp_profile_length(const mixp_profile *profile) {
  return live(profile) ? int64_t(profile->profile->records.size()) : -1;
}

int64_t mixp_profile_summary_rows(const mixp_profile *profile) {
  return live(profile) ? int64_t(profile->rows.size()) : -1;
}

mixp_status mixp_profile_summary_get(const mixp_profile *profile, int64_t index, mixp_profile_row *row) {
  static const char *fn = "mixp_profile_summary_get";
  return guard(fn, [&] {
    const mixp_profile *p = check_profile(profile, fn);
    check_out(row, fn, "row");
    if (row->struct_size < sizeof(mixp_profile_row))
      fail(MIXP_ERR_INVALID_ARGUMENT, fn, ": row->struct_size is ", row->struct_size, "; set it to sizeof(mixp_profile_row) (",
           sizeof(mixp_profile_row), ")");
    if (index < 0 || index >= int64_t(p->rows.size()))
      fail(MIXP_ERR_INVALID_ARGUMENT, fn, ": index ", index, " is out of [0, ", p->rows.size(), ")");
    const ProfileRow &r = p->rows[size_t(index)];
    mixp_profile_row out{};
    out.op = r.op;
    out.backward = r.backward ? 1 : 0;
    out.calls = r.calls;
    out.host_ms = r.host_ms;
    out.device_ms = r.device_ms;
    out.self_host_ms = r.self_host_ms;
    out.self_device_ms = r.self_device_ms;
    write_answer(row, out);
  });
}

const char *mixp_profile_report(mixp_profile *profile, int max_rows) {
  if (!live(profile)) return "";
  try {
    profile->report = profile_table(*profile->profile, profile->rows, max_rows);
  } catch (...) {
    return "";
  }
  return profile->report.c_str();
}

mixp_status mixp_profile_write_trace(const mixp_profile *profile, const char *path) {
  static const char *fn = "mixp_profile_write_trace";
  return guard(fn, [&] {
    const mixp_profile *p = check_profile(profile, fn);
    if (!path) fail(MIXP_ERR_INVALID_ARGUMENT, fn, ": path is NULL");
    if (!*path) fail(MIXP_ERR_INVALID_ARGUMENT, fn, ": path is empty");
    const std::string json = profile_trace_json(*p->profile);
    state::write_atomic(path, {{json.data(), json.size()}}, fn);
  });
}

}  // extern "C"
