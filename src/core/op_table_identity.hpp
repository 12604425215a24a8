// Which op table (core/ops.def) a binary was built from: the number of rows
// and an FNV-1a hash of their names in table order. The CUDA plugin's
// dispatch switches are generated from the table just as libmixp's are, so
// a plugin built from another table would read an op's number as another
// op; the plugin reports the identity it was built with and the loader
// (device/loader.cpp) refuses one that differs from its own. Both are
// computed from the table itself, so no version number has to be bumped by
// hand when a row is added, removed, renamed or moved.
#pragma once
#include <cstdint>

#include "core/op_table.hpp"

namespace mixp {

struct OpTableIdentity {
  uint32_t op_count;   // OpIds (public ops and internal scopes)
  uint32_t map_count;  // UnaryOps + BinaryOps (the backends' dispatch)
  uint64_t name_hash;  // FNV-1a 64 of every name below, each ending in a 0 byte
};

namespace op_table_detail {

// Every name the backends' numbering depends on, in table order: the OpIds,
// then the UnaryOp enumerators with the saved value each backward reads (a
// plugin built when relu read its input would read the empty View the op
// layer now passes), then the BinaryOp enumerators.
inline constexpr const char *kIdentityNames[] = {
#define MIXP_OP(name, c_function, category) #name,
#define MIXP_UNARY(Enum, name, c_function, reads, category, c_args) #name,
#define MIXP_BINARY(Enum, name, c_function, category) #name,
#include "core/ops.def"
#define MIXP_INTERNAL(name, c_function) #name,
#include "core/ops.def"
#define MIXP_UNARY(Enum, name, c_function, reads, category, c_args) "UnaryOp::" #Enum "/" #reads,
#define MIXP_UNARY_VARIANT(Enum, name, reads) "UnaryOp::" #Enum "/" #reads,
#include "core/ops.def"
#define MIXP_BINARY(Enum, name, c_function, category) "BinaryOp::" #Enum,
#include "core/ops.def"
};
static_assert(sizeof kIdentityNames / sizeof kIdentityNames[0] ==
              std::size_t(kOpIdCount + kUnaryOpCount + kBinaryOpCount));

constexpr uint64_t fnv1a_names() noexcept {
  uint64_t h = 14695981039346656037ull;
  for (const char *name : kIdentityNames) {
    for (const char *c = name;; ++c) {
      h = (h ^ uint8_t(*c)) * 1099511628211ull;
      if (!*c) break;
    }
  }
  return h;
}

}  // namespace op_table_detail

// The table this binary was compiled from.
inline constexpr OpTableIdentity kOpTableIdentity{uint32_t(kOpIdCount),
                                                  uint32_t(kUnaryOpCount + kBinaryOpCount),
                                                  op_table_detail::fnv1a_names()};

constexpr bool operator==(const OpTableIdentity &a, const OpTableIdentity &b) noexcept {
  return a.op_count == b.op_count && a.map_count == b.map_count && a.name_hash == b.name_hash;
}

}  // namespace mixp
