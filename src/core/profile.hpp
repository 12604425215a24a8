// A profile: every op a session runs while recording (mixp_profile_begin ..
// mixp_profile_end), with its host times and the device's timing marks, kept
// on the host. Plain data; recording, the summary and the trace file are in
// ops/profile.hpp.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace mixp {

struct ProfileRecord {
  const char *op = "?";  // a static string: an op-table name, a node's name, or a literal
  bool backward = false;
  int32_t parent = -1;   // the record this one ran inside, or -1
  int64_t host_begin_ns = 0, host_end_ns = 0;  // since Profile::origin_ns
  uint64_t mark_begin = 0, mark_end = 0;       // the backend's timing marks; 0: none
  double device_begin_us = 0, device_end_us = 0;  // since origin_mark; read when recording ends (device clock only)
  std::string inputs;  // "f32[8,768] bf16[768,2304]"; the inputs as the op ran them
  std::string output;  // its first output, likewise
};

struct Profile {
  // Records kept at most (~1 GiB of records); later calls are only counted.
  static constexpr size_t kMaxRecords = size_t(1) << 22;
  std::vector<ProfileRecord> records;
  uint64_t dropped = 0;
  int32_t open = -1;      // the innermost record still running, or -1
  int64_t origin_ns = 0;  // steady-clock time of mixp_profile_begin
  uint64_t origin_mark = 0;
  bool device_clock = false;  // the backend's marks timed the device
  std::string device;         // the session's device ("cpu", "cuda:0")
};

}  // namespace mixp
