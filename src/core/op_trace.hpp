// An op trace: the outputs of every op a user calls (forward and backward),
// in execution order, kept on the host in double precision, so that two runs
// of the same batch (O0 against O1/O2, CPU against GPU) can be compared op by
// op afterwards (mixp_trace_*; Paddle's compare_accuracy).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "core/dtype.hpp"

namespace mixp {

struct OpTraceEntry {
  std::string op;
  bool backward = false;
  int index = 0;  // which output (forward) or which input's gradient (backward)
  DType dtype = MIXP_F32;
  std::vector<int64_t> shape;
  std::vector<double> values;  // empty when the trace's value budget ran out
};

struct OpTrace {
  // Values kept at most (doubles, 256 MiB): past it entries keep their name
  // and shape only, and comparing them reports no error figures.
  static constexpr size_t kMaxValues = size_t(1) << 25;
  std::vector<OpTraceEntry> entries;
  size_t values = 0;
};

}  // namespace mixp
