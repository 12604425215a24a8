// The identities of mixp's operations, generated from the op table
// (core/ops.def): which ops exist, their names, their C entry points, what
// a unary backward reads, and their autocast category. Ops open their scope
// with an OpId (ops/ops.hpp), autocast decides by each row's category
// (autocast::decide, autocast/autocast.cpp), and backends dispatch on
// UnaryOp/BinaryOp, so a new row is all it takes for the rest to know the
// op -- and a missing formula or policy is a compile error, not a silent
// default.
#pragma once
#include <cstddef>
#include <cstdint>

namespace mixp {

// Every operation in table order, then every internal kernel scope (so the
// public ops are OpId(0) .. OpId(kOpCount - 1), the indices of mixp_op_name).
enum class OpId : uint16_t {
#define MIXP_OP(name, c_function, category) name,
#define MIXP_UNARY(Enum, name, c_function, reads, category, c_args) name,
#define MIXP_BINARY(Enum, name, c_function, category) name,
#include "core/ops.def"
#define MIXP_INTERNAL(name, c_function) name,
#include "core/ops.def"
};

// The unary elementwise maps y = f(x, s), s a scalar parameter.
enum class UnaryOp : uint8_t {
#define MIXP_UNARY(Enum, name, c_function, reads, category, c_args) Enum,
#define MIXP_UNARY_VARIANT(Enum, name, reads) Enum,
#include "core/ops.def"
};

// The broadcasting binary arithmetic ops.
enum class BinaryOp : uint8_t {
#define MIXP_BINARY(Enum, name, c_function, category) Enum,
#include "core/ops.def"
};

// How autocast treats an op's float inputs (see the table's header).
enum class CastCategory : uint8_t { Lower, Fp32, Promote, Other, Neutral };

// The saved forward value a unary backward formula reads.
enum class Reads : uint8_t { None, Input, Output };

#define MIXP_COUNT_ONE(...) +1
inline constexpr int kOpCount = 0
#define MIXP_OP(name, c_function, category) MIXP_COUNT_ONE()
#define MIXP_UNARY(Enum, name, c_function, reads, category, c_args) MIXP_COUNT_ONE()
#define MIXP_BINARY(Enum, name, c_function, category) MIXP_COUNT_ONE()
#include "core/ops.def"
    ;  // the ops of mixp_op_name (OpIds below this are public ops)
inline constexpr int kOpIdCount = kOpCount
#define MIXP_INTERNAL(name, c_function) MIXP_COUNT_ONE()
#include "core/ops.def"
    ;
inline constexpr int kUnaryOpCount = 0
#define MIXP_UNARY(Enum, name, c_function, reads, category, c_args) MIXP_COUNT_ONE()
#define MIXP_UNARY_VARIANT(Enum, name, reads) MIXP_COUNT_ONE()
#include "core/ops.def"
    ;
inline constexpr int kBinaryOpCount = 0
#define MIXP_BINARY(Enum, name, c_function, category) MIXP_COUNT_ONE()
#include "core/ops.def"
    ;
#undef MIXP_COUNT_ONE

// What stops a row added to core/ops.def before its op is complete -- no
// count to update by hand: a unary or binary row without a formula does not
// compile (backend/elementwise_formulas.hpp), nor one whose C function
// mixp.h does not declare (src/api/api_elementwise.cpp); CTest
// op_table_coverage fails for a public op without a gradcheck, CUDA parity
// or Python/Go/Java binding (the unary and binary test rows are generated
// from the table: tests/c/op_rows.h), the docs test for a stale
// docs/amp-op-policy.md, and a CUDA plugin built before the row is refused
// by the loader (core/op_table_identity.hpp).

struct OpInfo {
  const char *name;        // stable lowercase name ("matmul")
  const char *c_function;  // the entry point users call ("mixp_matmul")
  CastCategory category;   // Neutral for internal scopes
  bool is_public;          // listed by mixp_op_name (false: an internal scope)
};

namespace op_table_detail {

inline constexpr OpInfo kInfo[] = {
#define MIXP_OP(name, c_function, category) {#name, #c_function, CastCategory::category, true},
#define MIXP_UNARY(Enum, name, c_function, reads, category, c_args) \
  {#name, #c_function, CastCategory::category, true},
#define MIXP_BINARY(Enum, name, c_function, category) {#name, #c_function, CastCategory::category, true},
#include "core/ops.def"
#define MIXP_INTERNAL(name, c_function) {#name, #c_function, CastCategory::Neutral, false},
#include "core/ops.def"
};
static_assert(sizeof kInfo / sizeof kInfo[0] == std::size_t(kOpIdCount));

struct UnaryRow {
  OpId op;
  Reads reads;
};
inline constexpr UnaryRow kUnary[] = {
#define MIXP_UNARY(Enum, name, c_function, reads, category, c_args) {OpId::name, Reads::reads},
#define MIXP_UNARY_VARIANT(Enum, name, reads) {OpId::name, Reads::reads},
#include "core/ops.def"
};
static_assert(sizeof kUnary / sizeof kUnary[0] == std::size_t(kUnaryOpCount));

inline constexpr OpId kBinary[] = {
#define MIXP_BINARY(Enum, name, c_function, category) OpId::name,
#include "core/ops.def"
};
static_assert(sizeof kBinary / sizeof kBinary[0] == std::size_t(kBinaryOpCount));

}  // namespace op_table_detail

constexpr const OpInfo &op_info(OpId op) noexcept { return op_table_detail::kInfo[std::size_t(op)]; }
constexpr const char *op_name(OpId op) noexcept { return op_info(op).name; }
// The public ops in table order: index in [0, kOpCount).
constexpr OpId op_at(int index) noexcept { return OpId(index); }
// The public op named `name`, or -1.
int op_index(const char *name) noexcept;

// The op a unary map belongs to (gelu's two approximations share one).
constexpr OpId op_of(UnaryOp op) noexcept { return op_table_detail::kUnary[std::size_t(op)].op; }
constexpr OpId op_of(BinaryOp op) noexcept { return op_table_detail::kBinary[std::size_t(op)]; }
// The saved forward value a unary backward formula reads (host code only:
// device code takes it from the formula, UnaryFormula<op>::reads).
constexpr Reads unary_reads(UnaryOp op) noexcept { return op_table_detail::kUnary[std::size_t(op)].reads; }

const char *category_name(CastCategory c) noexcept;

}  // namespace mixp
