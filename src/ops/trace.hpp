// Comparing two op traces (core/op_trace.hpp) op by op.
#pragma once
#include <cstdint>
#include <string>

#include "core/op_trace.hpp"

namespace mixp {

struct TraceComparison {
  int64_t compared = 0;          // entries compared (casts left out)
  int64_t first_divergent = -1;  // first entry whose relative error passes the tolerance, or -1
  bool structure_differs = false;  // the runs called different ops at some entry
  double max_rel = 0;
  std::string report;  // one line per entry, then the verdict
};

// Entry i of `test` against entry i of `reference`: the largest absolute
// difference and that over the reference's largest magnitude (Inf where one
// run has a non-finite value the other has not).
TraceComparison compare_traces(const OpTrace &reference, const OpTrace &test, double rel_tol);

}  // namespace mixp
