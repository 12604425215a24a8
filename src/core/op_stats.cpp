#include "core/op_stats.hpp"

#include <cstdio>

namespace mixp {

void count_op_call(Session *s, OpId op, bool backward, DType dt) noexcept {
  const size_t i = op_stats_index(op, backward, dt);
  if (i < s->op_stats.size()) ++s->op_stats[i];
}

void count_attention_path(Session *s, bool fused) noexcept {
  if (s->op_stats_on && s->backward_depth == 0) ++s->attention_paths[fused ? 0 : 1];
}

void op_stats_start(Session *s) {
  s->op_stats.assign(size_t(kOpIdCount) * 2 * kDTypeSlots, 0);
  s->attention_paths[0] = s->attention_paths[1] = 0;
  s->op_stats_on = true;
}

std::string op_stats_table(const Session &s) {
  char line[160];
  std::string out;
  std::snprintf(line, sizeof line, "%-32s | %10s | %10s | %10s | %10s | %10s | %10s\n", "op", "fp16 calls",
                "bf16 calls", "fp32 calls", "fp64 calls", "fp8 calls", "other");
  out += line;
  out += std::string(32, '-');
  for (int col = 0; col < 6; ++col) out += "-+-" + std::string(10, '-');
  out += "\n";
  uint64_t ops = 0, calls = 0;
  for (int op = 0; op < kOpIdCount; ++op)
    for (int bwd = 0; bwd < 2; ++bwd) {
      uint64_t c[kDTypeSlots] = {};
      uint64_t total = 0;
      for (int d = 0; d < kDTypeSlots; ++d) {
        const size_t i = op_stats_index(OpId(op), bwd != 0, DType(d));
        c[d] = i < s.op_stats.size() ? s.op_stats[i] : 0;
        total += c[d];
      }
      if (total == 0) continue;
      const uint64_t other = c[MIXP_I32] + c[MIXP_I64] + c[MIXP_U8] + c[MIXP_BOOL];
      std::string name = op_name(OpId(op));
      if (bwd) name += " (backward)";
      const uint64_t fp8 = c[MIXP_F8E4M3] + c[MIXP_F8E5M2];
      std::snprintf(line, sizeof line, "%-32s | %10llu | %10llu | %10llu | %10llu | %10llu | %10llu\n",
                    name.c_str(), (unsigned long long)c[MIXP_F16], (unsigned long long)c[MIXP_BF16],
                    (unsigned long long)c[MIXP_F32], (unsigned long long)c[MIXP_F64], (unsigned long long)fp8,
                    (unsigned long long)other);
      out += line;
      ++ops;
      calls += total;
    }
  if (s.attention_paths[0] + s.attention_paths[1] > 0) {
    std::snprintf(line, sizeof line, "scaled_dot_product_attention paths: %llu fused, %llu composed\n",
                  (unsigned long long)s.attention_paths[0], (unsigned long long)s.attention_paths[1]);
    out += line;
  }
  std::snprintf(line, sizeof line, "%llu ops, %llu calls\n", (unsigned long long)ops, (unsigned long long)calls);
  out += line;
  return out;
}

}  // namespace mixp
