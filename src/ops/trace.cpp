// The op trace (core/op_trace.hpp): recording an output, and comparing two
// traces op by op.
#include <algorithm>
#include <cmath>
#include <cstdio>

#include "backend/backend.hpp"
#include "core/error.hpp"
#include "ops/ops.hpp"
#include "ops/trace.hpp"

namespace mixp {

void record_trace(Session *s, const char *op, bool backward, int index, const Tensor &t) {
  // Forward entries only for the ops the user calls, not for those a
  // backward formula runs.
  if (!backward && s->backward_depth > 0) return;
  if (!is_float(t.dtype)) return;
  OpTrace &tr = *s->trace;
  OpTraceEntry e;
  e.op = op;
  e.backward = backward;
  e.index = index;
  e.dtype = t.dtype;
  const Shape shape = shape_of(t);
  e.shape.assign(shape.d, shape.d + shape.ndim);
  const int64_t n = t.numel();
  if (n > 0 && tr.values + size_t(n) <= OpTrace::kMaxValues) {
    // The values in F64 through the backend (any strides, any device), then
    // to the host: a trace is for debugging one batch, so it waits.
    TensorPtr wide = empty(s, MIXP_F64, shape_of(t));
    backend_of(t).copy(view_of(t), view_of(*wide));
    e.values.resize(size_t(n));
    backend_of(t).copy_to_host(e.values.data(), wide->data(), size_t(n) * sizeof(double));
    tr.values += size_t(n);
  }
  tr.entries.push_back(std::move(e));
}

namespace {

std::string shape_text(const std::vector<int64_t> &shape) {
  std::string out = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i) out += ',';
    out += std::to_string(shape[i]);
  }
  out += ']';
  return out;
}

// The entries compared: casts are left out, since autocast inserts them in
// one run and not in the other.
std::vector<const OpTraceEntry *> comparable(const OpTrace &t) {
  std::vector<const OpTraceEntry *> out;
  for (const OpTraceEntry &e : t.entries)
    if (e.op != "cast") out.push_back(&e);
  return out;
}

}  // namespace

TraceComparison compare_traces(const OpTrace &reference, const OpTrace &test, double rel_tol) {
  TraceComparison c;
  const std::vector<const OpTraceEntry *> a = comparable(reference), b = comparable(test);
  char line[256];
  std::snprintf(line, sizeof line, "%5s  %-24s %-8s %3s  %-5s %-5s %-16s %11s %11s\n", "#", "op", "pass", "out",
                "ref", "test", "shape", "max_abs", "max_rel");
  c.report = line;
  const size_t n = std::min(a.size(), b.size());
  for (size_t i = 0; i < n; ++i) {
    const OpTraceEntry &x = *a[i], &y = *b[i];
    if (x.op != y.op || x.backward != y.backward || x.index != y.index || x.shape != y.shape) {
      c.report += str("entry ", i, ": the runs took different paths here (reference: ", x.op, " ",
                      x.backward ? "backward" : "forward", " output ", x.index, " ", shape_text(x.shape),
                      "; test: ", y.op, " ", y.backward ? "backward" : "forward", " output ", y.index, " ",
                      shape_text(y.shape), "); comparison stops\n");
      c.structure_differs = true;
      if (c.first_divergent < 0) c.first_divergent = int64_t(i);
      c.compared = int64_t(i);
      return c;
    }
    double max_abs = 0, ref_max = 0;
    bool kept = !x.values.empty() && !y.values.empty(), nonfinite_mismatch = false;
    if (kept) {
      for (size_t k = 0; k < x.values.size(); ++k) {
        const double u = x.values[k], v = y.values[k];
        if (std::isfinite(u) != std::isfinite(v)) nonfinite_mismatch = true;
        if (std::isfinite(u) && std::isfinite(v)) {
          max_abs = std::max(max_abs, std::fabs(u - v));
          ref_max = std::max(ref_max, std::fabs(u));
        }
      }
    }
    // Relative to the reference's largest magnitude: robust where single
    // elements are near zero.
    const double max_rel = nonfinite_mismatch ? INFINITY : ref_max > 0 ? max_abs / ref_max : (max_abs > 0 ? INFINITY : 0);
    const bool over = kept && !(max_rel <= rel_tol);
    const bool first = over && c.first_divergent < 0;
    if (first) c.first_divergent = int64_t(i);
    if (kept) {
      std::snprintf(line, sizeof line, "%5zu  %-24.24s %-8s %3d  %-5s %-5s %-16.16s %11.3e %11.3e%s\n", i,
                    x.op.c_str(), x.backward ? "backward" : "forward", x.index, dtype_name(x.dtype),
                    dtype_name(y.dtype), shape_text(x.shape).c_str(), max_abs, max_rel,
                    first ? "  <- first above the tolerance" : "");
    } else {
      std::snprintf(line, sizeof line, "%5zu  %-24.24s %-8s %3d  %-5s %-5s %-16.16s %11s %11s\n", i, x.op.c_str(),
                    x.backward ? "backward" : "forward", x.index, dtype_name(x.dtype), dtype_name(y.dtype),
                    shape_text(x.shape).c_str(), "-", "-");
    }
    c.report += line;
    c.max_rel = std::max(c.max_rel, kept ? max_rel : 0.0);
  }
  c.compared = int64_t(n);
  if (a.size() != b.size())
    c.report += str("the reference has ", a.size(), " entries, the test ", b.size(), "; the first ", n,
                    " were compared\n");
  c.report += c.first_divergent < 0
                  ? str("no op above the relative tolerance ", rel_tol, " (", n, " outputs compared)\n")
                  : str("first op above the relative tolerance ", rel_tol, ": entry ", c.first_divergent, " ('",
                        a[size_t(c.first_divergent)]->op, "')\n");
  return c;
}

}  // namespace mixp
