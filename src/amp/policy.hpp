// The registry of operation names and their autocast categories. Every op
// with a stable name appears here once; custom white/black lists and
// mixp_autocast_policy() validate names against it.
#pragma once
#include <string_view>

namespace mixp::amp {

enum class Category {
  Lower,    // runs in the low-precision dtype under O1 and O2 (GEMM-like)
  Fp32,     // runs in fp32 under O1 and O2 (range- or accuracy-sensitive)
  Promote,  // O1: the widest float input wins; O2: low precision
  Other,    // O1: runs in its inputs' dtype; O2: low precision
  Neutral   // never cast (views, copies, casts): it only moves data
};

struct OpInfo {
  const char *name;
  Category category;
};

// All registered ops, in a stable order (the order of the generated docs).
int op_count() noexcept;
const OpInfo &op_info(int index) noexcept;
// Index of `name`, or -1.
int op_index(std::string_view name) noexcept;

const char *category_name(Category c) noexcept;

}  // namespace mixp::amp
