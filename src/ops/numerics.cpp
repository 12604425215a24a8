// The numerics checker: finds the first op whose output holds NaN or Inf,
// in the forward or the backward pass, and says exactly where.
#include "core/error.hpp"
#include "ops/ops.hpp"

namespace mixp {

namespace {
// Warn mode logs the first reports in full, then only every 1000th, so a
// diverged run does not drown the log.
constexpr uint64_t kWarnFull = 20;
}  // namespace

void check_numerics(Session *s, const char *op, const char *phase, int index, const Tensor &t) {
  if (s->numerics == MIXP_NUMERICS_OFF || !is_float(t.dtype) || t.numel() == 0) return;
  int64_t nans = 0, infs = 0;
  backend_of(t).count_nonfinite(view_of(t), &nans, &infs);
  if (nans == 0 && infs == 0) return;
  s->numerics_report = str("non-finite values in the ", phase, " pass of op '", op, "', output ", index, " (",
                           dtype_name(t.dtype), " ", shape_str(t), "): ", nans, " NaN, ", infs, " Inf of ",
                           t.numel(), " elements");
  if (s->numerics == MIXP_NUMERICS_ERROR) fail(MIXP_ERR_NUMERIC, s->numerics_report);
  const uint64_t k = s->numerics_warnings++;
  if (k < kWarnFull || k % 1000 == 0) {
    std::string msg = s->numerics_report;
    if (k == kWarnFull - 1) msg += " (further reports are logged every 1000th)";
    s->log(MIXP_LOG_WARNING, msg);
  }
}

}  // namespace mixp
