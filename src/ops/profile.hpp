// The profiler: a record opened and closed around every op a session runs
// while a profile is recorded (core/profile.hpp holds the records), then a
// summary per op and a Chrome trace. OpScope records the ops a caller makes;
// ProfileScope records the rest (backward nodes, the optimizer's step, the
// loader). When no profile is recorded each costs one branch.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "core/profile.hpp"
#include "core/tensor.hpp"

namespace mixp {

// Opens a record for `op` inside the innermost open one and returns its
// index, or -1 once Profile::kMaxRecords are kept (the call is counted).
// The caller has checked s->profile.
int32_t profile_open(Session *s, const char *op, bool backward) noexcept;
// Describes an open record's inputs (dtype and shape of each, in order) or
// its first output.
void profile_inputs(Session *s, int32_t rec, const Tensor *const *inputs, size_t n) noexcept;
void profile_output(Session *s, int32_t rec, const Tensor &out) noexcept;
// Closes record `rec`, the innermost open one.
void profile_close(Session *s, int32_t rec) noexcept;

// A record around a block that is not an op of the op table.
class ProfileScope {
 public:
  ProfileScope(Session *s, const char *op, bool backward = false) noexcept : s_(s) {
    if (s->profile) rec_ = profile_open(s, op, backward);
  }
  ~ProfileScope() {
    if (rec_ >= 0) profile_close(s_, rec_);
  }
  ProfileScope(const ProfileScope &) = delete;
  ProfileScope &operator=(const ProfileScope &) = delete;
  bool recording() const noexcept { return rec_ >= 0; }
  void inputs(const std::vector<TensorPtr> &ts) noexcept;

 private:
  Session *s_;
  int32_t rec_ = -1;
};

// mixp_profile_begin: waits for the device (so that the host and device
// tracks share their time zero) and starts recording.
void profile_start(Session *s);
// mixp_profile_end: stops recording, waits for the device and reads the
// device time of every record.
std::unique_ptr<Profile> profile_stop(Session *s);

// One op in one pass over all its calls (mixp_profile_row).
struct ProfileRow {
  const char *op = "?";
  bool backward = false;
  int64_t calls = 0;
  double host_ms = 0, device_ms = 0, self_host_ms = 0, self_device_ms = 0;
};
// The rows, largest self device time first (ties: by name, forward first).
std::vector<ProfileRow> profile_summary(const Profile &p);
// The rows as a table (at most max_rows of them; <= 0: all) and a totals line.
std::string profile_table(const Profile &p, const std::vector<ProfileRow> &rows, int max_rows);
// The Chrome trace event file (JSON object format).
std::string profile_trace_json(const Profile &p);

}  // namespace mixp
