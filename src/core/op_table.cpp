// The op table's lookups by name (the table itself is core/op_table.hpp).
#include "core/op_table.hpp"

#include <cstring>

namespace mixp {

int op_index(const char *name) noexcept {
  for (int i = 0; i < kOpCount; ++i)
    if (std::strcmp(name, op_info(op_at(i)).name) == 0) return i;
  return -1;
}

const char *category_name(CastCategory c) noexcept {
  switch (c) {
    case CastCategory::Lower: return "lower";
    case CastCategory::Fp32: return "fp32";
    case CastCategory::Promote: return "promote";
    case CastCategory::Other: return "other";
    case CastCategory::Neutral: return "neutral";
  }
  return "?";
}

}  // namespace mixp
