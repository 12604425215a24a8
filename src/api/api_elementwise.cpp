// C ABI shims of the elementwise operations (ops/elementwise.cpp).
#include "api/api_common.hpp"
#include "mixp/mixp.h"
#include "ops/ops.hpp"

using namespace mixp;

namespace {

mixp_status binary_shim(const char *fn, BinaryOp op, const mixp_tensor *a, const mixp_tensor *b,
                        mixp_tensor **out) {
  return guard(fn, [&] {
    check_out(out, fn);
    auto a_ = share(check_tensor(a, fn, "a"));
    auto b_ = share(check_tensor(b, fn, "b"));
    give(out, mixp::binary(op, a_, b_));
  });
}

mixp_status unary_shim(const char *fn, UnaryOp op, const mixp_tensor *x, double s,
                       mixp_tensor **out) {
  return guard(fn, [&] {
    check_out(out, fn);
    auto x_ = share(check_tensor(x, fn, "x"));
    give(out, mixp::unary(op, x_, s));
  });
}

}  // namespace

extern "C" {

mixp_status mixp_add(const mixp_tensor *a, const mixp_tensor *b, mixp_tensor **out) {
  return binary_shim("mixp_add", BinaryOp::Add, a, b, out);
}
mixp_status mixp_sub(const mixp_tensor *a, const mixp_tensor *b, mixp_tensor **out) {
  return binary_shim("mixp_sub", BinaryOp::Sub, a, b, out);
}
mixp_status mixp_mul(const mixp_tensor *a, const mixp_tensor *b, mixp_tensor **out) {
  return binary_shim("mixp_mul", BinaryOp::Mul, a, b, out);
}
mixp_status mixp_div(const mixp_tensor *a, const mixp_tensor *b, mixp_tensor **out) {
  return binary_shim("mixp_div", BinaryOp::Div, a, b, out);
}

mixp_status mixp_add_scalar(const mixp_tensor *x, double s, mixp_tensor **out) {
  return unary_shim("mixp_add_scalar", UnaryOp::AddScalar, x, s, out);
}
mixp_status mixp_mul_scalar(const mixp_tensor *x, double s, mixp_tensor **out) {
  return unary_shim("mixp_mul_scalar", UnaryOp::MulScalar, x, s, out);
}
mixp_status mixp_rsub_scalar(const mixp_tensor *x, double s, mixp_tensor **out) {
  return unary_shim("mixp_rsub_scalar", UnaryOp::RsubScalar, x, s, out);
}
mixp_status mixp_rdiv_scalar(const mixp_tensor *x, double s, mixp_tensor **out) {
  return unary_shim("mixp_rdiv_scalar", UnaryOp::RdivScalar, x, s, out);
}

mixp_status mixp_neg(const mixp_tensor *x, mixp_tensor **out) {
  return unary_shim("mixp_neg", UnaryOp::Neg, x, 0.0, out);
}
mixp_status mixp_exp(const mixp_tensor *x, mixp_tensor **out) {
  return unary_shim("mixp_exp", UnaryOp::Exp, x, 0.0, out);
}
mixp_status mixp_log(const mixp_tensor *x, mixp_tensor **out) {
  return unary_shim("mixp_log", UnaryOp::Log, x, 0.0, out);
}
mixp_status mixp_sqrt(const mixp_tensor *x, mixp_tensor **out) {
  return unary_shim("mixp_sqrt", UnaryOp::Sqrt, x, 0.0, out);
}
mixp_status mixp_pow(const mixp_tensor *x, double exponent, mixp_tensor **out) {
  return unary_shim("mixp_pow", UnaryOp::Pow, x, exponent, out);
}
mixp_status mixp_relu(const mixp_tensor *x, mixp_tensor **out) {
  return unary_shim("mixp_relu", UnaryOp::Relu, x, 0.0, out);
}
mixp_status mixp_sigmoid(const mixp_tensor *x, mixp_tensor **out) {
  return unary_shim("mixp_sigmoid", UnaryOp::Sigmoid, x, 0.0, out);
}
mixp_status mixp_tanh(const mixp_tensor *x, mixp_tensor **out) {
  return unary_shim("mixp_tanh", UnaryOp::Tanh, x, 0.0, out);
}

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
