// The profiler (ops/profile.hpp): records, device times, the summary and the
// Chrome trace.
#include "ops/profile.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <map>
#include <utility>

#include "backend/backend.hpp"
#include "backend/capabilities.hpp"
#include "core/error.hpp"

namespace mixp {

namespace {

int64_t now_ns() noexcept {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// A device mark, or 0 when the device cannot give one now (the record then
// has no device time; the op itself reports any device failure).
uint64_t mark(Session *s) noexcept {
  DeviceTimer *timer = s->profile->device_clock ? s->backend->timer() : nullptr;
  if (!timer) return 0;
  try {
    return timer->timing_mark();
  } catch (...) {
    return 0;
  }
}

void describe(std::string &out, const Tensor &t) {
  if (!out.empty()) out += ' ';
  out += dtype_name(t.dtype);
  out += shape_str(t);
}

double host_ms(const ProfileRecord &r) { return double(r.host_end_ns - r.host_begin_ns) * 1e-6; }
// Without a device clock the ops ran during their calls: the same figure.
double device_ms(const Profile &p, const ProfileRecord &r) {
  return p.device_clock ? (r.device_end_us - r.device_begin_us) * 1e-3 : host_ms(r);
}

}  // namespace

int32_t profile_open(Session *s, const char *op, bool backward) noexcept {
  Profile &p = *s->profile;
  if (p.records.size() >= Profile::kMaxRecords) {
    ++p.dropped;
    return -1;
  }
  try {
    ProfileRecord r;
    r.op = op;
    r.backward = backward;
    r.parent = p.open;
    r.mark_begin = mark(s);
    r.host_begin_ns = now_ns() - p.origin_ns;
    p.records.push_back(std::move(r));
  } catch (...) {  // out of host memory: this call goes uncounted
    ++p.dropped;
    return -1;
  }
  p.open = int32_t(p.records.size() - 1);
  return p.open;
}

void profile_inputs(Session *s, int32_t rec, const Tensor *const *inputs, size_t n) noexcept {
  if (!s->profile || rec < 0 || size_t(rec) >= s->profile->records.size()) return;
  try {
    std::string &d = s->profile->records[size_t(rec)].inputs;
    for (size_t i = 0; i < n; ++i)
      if (inputs[i]) describe(d, *inputs[i]);
  } catch (...) {  // a description is optional
  }
}

void profile_output(Session *s, int32_t rec, const Tensor &out) noexcept {
  if (!s->profile || rec < 0 || size_t(rec) >= s->profile->records.size()) return;
  try {
    std::string &d = s->profile->records[size_t(rec)].output;
    if (d.empty()) describe(d, out);
  } catch (...) {
  }
}

void profile_close(Session *s, int32_t rec) noexcept {
  if (!s->profile || rec < 0 || size_t(rec) >= s->profile->records.size()) return;
  Profile &p = *s->profile;
  ProfileRecord &r = p.records[size_t(rec)];
  r.host_end_ns = now_ns() - p.origin_ns;
  r.mark_end = mark(s);
  p.open = r.parent;
}

void ProfileScope::inputs(const std::vector<TensorPtr> &ts) noexcept {
  if (rec_ < 0) return;
  std::vector<const Tensor *> ptrs;
  try {
    for (const TensorPtr &t : ts) ptrs.push_back(t.get());
  } catch (...) {
    return;
  }
  profile_inputs(s_, rec_, ptrs.data(), ptrs.size());
}

void profile_start(Session *s) {
  auto p = std::make_unique<Profile>();
  p->device = s->device;
  Backend &b = *s->backend;
  b.synchronize();  // work queued before the profile is not the profile's
  // A device without a clock ran each op during its call: the host clock
  // times the device too.
  if (DeviceTimer *timer = b.timer()) {
    timer->timing_reset();
    p->origin_mark = timer->timing_mark();
    p->device_clock = true;
  }
  p->origin_ns = now_ns();
  s->profile = std::move(p);
}

std::unique_ptr<Profile> profile_stop(Session *s) {
  std::unique_ptr<Profile> p = std::move(s->profile);
  Backend &b = *s->backend;
  DeviceTimer *timer = b.timer();
  // Without a device clock the records' host times are their device times
  // (device_ms below); there is nothing to read.
  if (!p->device_clock || !timer) return p;
  struct ResetMarks {  // the marks are dead whatever happens below
    DeviceTimer &timer;
    ~ResetMarks() { timer.timing_reset(); }
  } reset{*timer};
  b.synchronize();
  for (ProfileRecord &r : p->records) {
    if (r.mark_begin == 0 || r.mark_end == 0) continue;  // no device time: left at zero
    r.device_begin_us = timer->timing_elapsed_ms(p->origin_mark, r.mark_begin) * 1e3;
    r.device_end_us = timer->timing_elapsed_ms(p->origin_mark, r.mark_end) * 1e3;
  }
  return p;
}

std::vector<ProfileRow> profile_summary(const Profile &p) {
  // Self time: a record's time less that of the records directly inside it.
  std::vector<double> child_host(p.records.size()), child_device(p.records.size());
  for (const ProfileRecord &r : p.records)
    if (r.parent >= 0) {
      child_host[size_t(r.parent)] += host_ms(r);
      child_device[size_t(r.parent)] += device_ms(p, r);
    }
  std::map<std::pair<std::string, bool>, ProfileRow> rows;
  for (size_t i = 0; i < p.records.size(); ++i) {
    const ProfileRecord &r = p.records[i];
    ProfileRow &row = rows[{r.op, r.backward}];
    row.op = r.op;
    row.backward = r.backward;
    ++row.calls;
    row.host_ms += host_ms(r);
    row.device_ms += device_ms(p, r);
    row.self_host_ms += std::max(0.0, host_ms(r) - child_host[i]);
    row.self_device_ms += std::max(0.0, device_ms(p, r) - child_device[i]);
  }
  std::vector<ProfileRow> out;
  for (auto &kv : rows) out.push_back(kv.second);
  std::stable_sort(out.begin(), out.end(), [](const ProfileRow &a, const ProfileRow &b) {
    return a.self_device_ms > b.self_device_ms;
  });
  return out;
}

std::string profile_table(const Profile &p, const std::vector<ProfileRow> &rows, int max_rows) {
  double self_device = 0, top_host = 0;
  for (const ProfileRow &r : rows) self_device += r.self_device_ms;
  for (const ProfileRecord &r : p.records)
    if (r.parent < 0) top_host += host_ms(r);
  char line[256];
  std::string out;
  std::snprintf(line, sizeof line, "%-34s %-8s %7s %12s %12s %12s %12s %7s\n", "op", "pass", "calls",
                "self dev ms", "dev ms", "self host ms", "host ms", "self %");
  out += line;
  const size_t n = max_rows > 0 ? std::min(rows.size(), size_t(max_rows)) : rows.size();
  for (size_t i = 0; i < n; ++i) {
    const ProfileRow &r = rows[i];
    std::snprintf(line, sizeof line, "%-34.34s %-8s %7lld %12.3f %12.3f %12.3f %12.3f %6.1f%%\n", r.op,
                  r.backward ? "backward" : "forward", (long long)r.calls, r.self_device_ms, r.device_ms,
                  r.self_host_ms, r.host_ms, self_device > 0 ? 100.0 * r.self_device_ms / self_device : 0.0);
    out += line;
  }
  if (n < rows.size()) out += str("(", rows.size() - n, " more rows)\n");
  out += str(p.records.size(), " op calls recorded on ", p.device, " (device time: ",
             p.device_clock ? "events on the session's stream" : "the host's clock; ops run synchronously",
             "); recorded device time ");
  std::snprintf(line, sizeof line, "%.3f ms, host time of the outermost calls %.3f ms", self_device, top_host);
  out += line;
  if (p.dropped) out += str("; ", p.dropped, " calls past the record limit not recorded");
  out += "\n";
  return out;
}

namespace {

// Names and shape strings are ASCII identifiers and digits, but a JSON
// string is escaped all the same.
void json_string(std::string &out, const std::string &s) {
  out += '"';
  for (unsigned char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += char(c);
    } else if (c < 0x20) {
      char u[8];
      std::snprintf(u, sizeof u, "\\u%04x", c);
      out += u;
    } else {
      out += char(c);
    }
  }
  out += '"';
}

void json_event(std::string &out, const ProfileRecord &r, int tid, double ts_us, double dur_us) {
  char num[96];
  out += "{\"name\":";
  json_string(out, r.op);
  out += r.backward ? ",\"cat\":\"backward\"" : ",\"cat\":\"forward\"";
  std::snprintf(num, sizeof num, ",\"ph\":\"X\",\"pid\":1,\"tid\":%d,\"ts\":%.3f,\"dur\":%.3f", tid, ts_us,
                std::max(0.0, dur_us));
  out += num;
  out += ",\"args\":{\"inputs\":";
  json_string(out, r.inputs);
  out += ",\"output\":";
  json_string(out, r.output);
  out += "}},\n";
}

void json_name(std::string &out, const char *what, int tid, const std::string &name) {
  out += str("{\"name\":\"", what, "\",\"ph\":\"M\",\"pid\":1,\"tid\":", tid, ",\"args\":{\"name\":");
  json_string(out, name);
  out += "}},\n";
}

}  // namespace

std::string profile_trace_json(const Profile &p) {
  std::string out = "{\"traceEvents\":[\n";
  json_name(out, "process_name", 0, str("mixp session (", p.device, ")"));
  json_name(out, "thread_name", 1, "host (op calls)");
  if (p.device_clock) json_name(out, "thread_name", 2, str(p.device, " (stream)"));
  for (const ProfileRecord &r : p.records)
    json_event(out, r, 1, double(r.host_begin_ns) * 1e-3, double(r.host_end_ns - r.host_begin_ns) * 1e-3);
  if (p.device_clock)
    for (const ProfileRecord &r : p.records)
      if (r.mark_begin && r.mark_end) json_event(out, r, 2, r.device_begin_us, r.device_end_us - r.device_begin_us);
  // The last event's ",\n" becomes the array's end.
  out.resize(out.size() - 2);
  out += "\n],\"displayTimeUnit\":\"ms\",\"otherData\":{\"producer\":\"mixp\",\"device\":";
  json_string(out, p.device);
  out += str(",\"records\":", p.records.size(), ",\"dropped\":", p.dropped, "}}\n");
  return out;
}

}  // namespace mixp
