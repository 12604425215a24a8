// Op statistics: per-op call counts by dtype over a region the user opens
// and closes (mixp_session_op_stats_*), forward and backward apart, and the
// table Paddle's collect_operator_stats prints.
#pragma once
#include <cstdint>
#include <string>

#include "core/dtype.hpp"
#include "core/op_table.hpp"
#include "core/session.hpp"

namespace mixp {

// One slot per mixp_dtype value.
inline constexpr int kDTypeSlots = 10;  // up to MIXP_F8E5M2

inline size_t op_stats_index(OpId op, bool backward, DType dt) noexcept {
  return (size_t(op) * 2 + (backward ? 1 : 0)) * kDTypeSlots + size_t(dt);
}

// Counts one call (the caller has checked s->op_stats_on).
void count_op_call(Session *s, OpId op, bool backward, DType dt) noexcept;

// Counts one scaled_dot_product_attention call by the path it took, when
// op statistics are on (the table's last line before the totals).
void count_attention_path(Session *s, bool fused) noexcept;

// Clears the counts (sized for every op) and starts counting.
void op_stats_start(Session *s);

// The table of every op called since the start: one row per op and pass,
// columns FP16, BF16, FP32, FP64, FP8 (both formats) and other (integer
// and bool outputs).
std::string op_stats_table(const Session &s);

}  // namespace mixp
