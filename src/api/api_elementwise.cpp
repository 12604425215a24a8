// C ABI shims of the elementwise operations (ops/elementwise.cpp). The shims
// of the unary and binary ops are generated from the op table
// (core/ops.def): a row's c_args says the C signature, so a new op needs no
// code here. The compiler checks each generated definition against its
// declaration in mixp.h, and that the declaration is there.
#include "api/api_common.hpp"
#include "mixp/mixp.h"
#include "ops/ops.hpp"

using namespace mixp;

namespace {

mixp_status binary_shim(BinaryOp op, const mixp_tensor *a, const mixp_tensor *b,
                        mixp_tensor **out) {
  const char *fn = op_info(op_of(op)).c_function;
  return guard(fn, [&] {
    check_out(out, fn);
    auto a_ = share(check_tensor(a, fn, "a"));
    auto b_ = share(check_tensor(b, fn, "b"));
    give(out, mixp::binary(op, a_, b_));
  });
}

mixp_status unary_shim(UnaryOp op, const mixp_tensor *x, double s, mixp_tensor **out) {
  const char *fn = op_info(op_of(op)).c_function;
  return guard(fn, [&] {
    check_out(out, fn);
    auto x_ = share(check_tensor(x, fn, "x"));
    give(out, mixp::unary(op, x_, s));
  });
}

}  // namespace

// Every generated shim is declared in mixp.h: a row whose C function the
// header lacks fails here (a definition alone would compile, unexported in
// spirit and undocumented).
#define MIXP_BINARY(Enum, name, c_function, category) \
  static_assert(sizeof(&::c_function) != 0, #c_function " needs its declaration in mixp.h");
#define MIXP_UNARY(Enum, name, c_function, reads, category, c_args) MIXP_BINARY(Enum, name, c_function, -)
#include "core/ops.def"

extern "C" {

#define MIXP_BINARY(Enum, name, c_function, category)                                   \
  mixp_status c_function(const mixp_tensor *a, const mixp_tensor *b, mixp_tensor **out) { \
    return binary_shim(BinaryOp::Enum, a, b, out);                                      \
  }
#define MIXP_UNARY(Enum, name, c_function, reads, category, c_args) \
  MIXP_UNARY_SHIM_##c_args(Enum, c_function)
#define MIXP_UNARY_SHIM_X(Enum, c_function)                          \
  mixp_status c_function(const mixp_tensor *x, mixp_tensor **out) { \
    return unary_shim(UnaryOp::Enum, x, 0.0, out);                   \
  }
#define MIXP_UNARY_SHIM_XS(Enum, c_function)                                   \
  mixp_status c_function(const mixp_tensor *x, double s, mixp_tensor **out) { \
    return unary_shim(UnaryOp::Enum, x, s, out);                               \
  }
#define MIXP_UNARY_SHIM_Custom(Enum, c_function)
#include "core/ops.def"
#undef MIXP_UNARY_SHIM_X
#undef MIXP_UNARY_SHIM_XS
#undef MIXP_UNARY_SHIM_Custom

mixp_status mixp_gelu(const mixp_tensor *x, mixp_gelu_approx approx, mixp_tensor **out) {
  return guard("mixp_gelu", [&] {
    check_out(out, "mixp_gelu");
    auto x_ = share(check_tensor(x, "mixp_gelu", "x"));
    UnaryOp op;
    switch (approx) {
      case MIXP_GELU_ERF: op = UnaryOp::GeluErf; break;
      case MIXP_GELU_TANH: op = UnaryOp::GeluTanh; break;
      default:
        fail(MIXP_ERR_INVALID_ARGUMENT, "mixp_gelu: approx is ", int(approx),
             ", expected MIXP_GELU_ERF (0) or MIXP_GELU_TANH (1)");
    }
    give(out, mixp::unary(op, x_));
  });
}

}  // extern "C"
