// The numerics checker: finds the first op whose output holds NaN or Inf
// (or, when asked, finite values that would overflow fp16), in the forward or
// the backward pass, and says exactly where; filtered by op name and step.
#include <algorithm>
#include <cmath>

#include "core/error.hpp"
#include "ops/ops.hpp"

namespace mixp {

namespace {
// Warn mode logs the first reports in full, then only every 1000th, so a
// diverged run does not drown the log.
constexpr uint64_t kWarnFull = 20;
// The smallest magnitude that rounds to Inf in fp16 (65504 + half its step).
constexpr double kF16Overflow = 65520.0;
}  // namespace

void check_numerics(Session *s, const char *op, const char *phase, int index, const Tensor &t) {
  if (s->numerics == MIXP_NUMERICS_OFF || !(is_float(t.dtype) || is_fp8(t.dtype)) || t.numel() == 0) return;
  const Session::NumericsFilter &f = s->numerics_filter;
  if (s->numerics_step < f.start_step || (f.end_step >= 0 && s->numerics_step >= f.end_step)) return;
  auto listed = [op](const std::vector<std::string> &names) {
    return std::find(names.begin(), names.end(), op) != names.end();
  };
  if ((!f.include.empty() && !listed(f.include)) || listed(f.exclude)) return;
  ValueCounts c;
  // fp8 values are counted in f32, where each is exact (the backends count
  // the float types only); this costs a copy only while the checker is on.
  TensorPtr wide = is_fp8(t.dtype) ? empty(s, MIXP_F32, shape_of(t)) : TensorPtr();
  if (wide) backend_of(t).copy(view_of(t), view_of(*wide));
  backend_of(t).count_values(view_of(wide ? *wide : t), 0.0, f.fp16_overflow ? kF16Overflow : INFINITY, &c);
  if (c.nan == 0 && c.inf == 0 && c.huge == 0) return;
  const std::string where = str(" in the ", phase, " pass of op '", op, "', output ", index, " (",
                                dtype_name(t.dtype), " ", shape_str(t), ")",
                                s->dist_rank >= 0 ? str(" on rank ", s->dist_rank) : std::string(),
                                ": ");
  if (c.nan + c.inf > 0) {
    s->numerics_report = str("non-finite values", where, c.nan, " NaN, ", c.inf, " Inf of ", t.numel(), " elements");
    if (c.huge > 0) s->numerics_report += str("; ", c.huge, " finite values would overflow fp16");
  } else {
    s->numerics_report = str("values that would overflow fp16", where, c.huge, " of ", t.numel(),
                             " elements have |x| >= 65520 (the largest fp16 is 65504)");
  }
  if (s->numerics == MIXP_NUMERICS_ERROR) fail(MIXP_ERR_NUMERIC, s->numerics_report);
  const uint64_t k = s->numerics_warnings++;
  if (k < kWarnFull || k % 1000 == 0) {
    std::string msg = s->numerics_report;
    if (k == kWarnFull - 1) msg += " (further reports are logged every 1000th)";
    s->log(MIXP_LOG_WARNING, msg);
  }
}

}  // namespace mixp
