// What each elementwise op computes, written once for both backends: the CPU
// backend (cpu/elementwise.cpp) instantiates these in its vectorised
// loops, the CUDA backend (kernels/elementwise.cu) in its kernels, both in
// acc_t<T> (fp32 for the half types, rounded once to nearest even on store).
//
// UnaryFormula<op>::forward(x, s) is y = op(x, s); backward(x, y, g, s) is
// gx = g * d op/dx, reading only the saved value `reads` names (the other
// argument is 0). A formula's `reads` must equal its row in core/ops.def:
// the static_assert at the end checks every op. Kinks and NaN follow
// PyTorch: relu and the hard* ops let NaN fall through to the arithmetic,
// and their derivatives take PyTorch's one-sided choices at the kinks.
#pragma once
#include "backend/host_device_math.hpp"
#include "core/error.hpp"
#include "core/op_table.hpp"

namespace mixp {

template <UnaryOp>
struct UnaryFormula;  // one specialisation per MIXP_UNARY row

template <class A>
struct GeluConst {
  static constexpr A kInvSqrt2 = A(0.70710678118654752440);
  static constexpr A kInvSqrt2Pi = A(0.39894228040143267794);
  static constexpr A kSqrt2OverPi = A(0.79788456080286535588);
  static constexpr A kCubic = A(0.044715);
};

#define MIXP_FORMULA_BEGIN(Op, reads_what)            \
  template <>                                         \
  struct UnaryFormula<UnaryOp::Op> {                  \
    static constexpr Reads reads = Reads::reads_what;
#define MIXP_FORMULA_END };

MIXP_FORMULA_BEGIN(Neg, None)
template <class A> MIXP_HOST_DEVICE static A forward(A x, A) { return -x; }
template <class A> MIXP_HOST_DEVICE static A backward(A, A, A g, A) { return -g; }
MIXP_FORMULA_END

MIXP_FORMULA_BEGIN(Exp, Output)
template <class A> MIXP_HOST_DEVICE static A forward(A x, A) { return hd::exp(x); }
template <class A> MIXP_HOST_DEVICE static A backward(A, A y, A g, A) { return g * y; }
MIXP_FORMULA_END

MIXP_FORMULA_BEGIN(Log, Input)
template <class A> MIXP_HOST_DEVICE static A forward(A x, A) { return hd::log(x); }
template <class A> MIXP_HOST_DEVICE static A backward(A x, A, A g, A) { return g / x; }
MIXP_FORMULA_END

MIXP_FORMULA_BEGIN(Sqrt, Output)
template <class A> MIXP_HOST_DEVICE static A forward(A x, A) { return hd::sqrt(x); }
template <class A> MIXP_HOST_DEVICE static A backward(A, A y, A g, A) { return g / (A(2) * y); }
MIXP_FORMULA_END

MIXP_FORMULA_BEGIN(Pow, Input)
template <class A> MIXP_HOST_DEVICE static A forward(A x, A s) { return hd::pow(x, s); }
// x^0 is constant: its gradient is 0 even at x = 0, where s*x^(s-1) is 0*inf.
template <class A> MIXP_HOST_DEVICE static A backward(A x, A, A g, A s) {
  return s == A(0) ? A(0) : g * s * hd::pow(x, s - A(1));
}
MIXP_FORMULA_END

MIXP_FORMULA_BEGIN(AddScalar, None)
template <class A> MIXP_HOST_DEVICE static A forward(A x, A s) { return x + s; }
template <class A> MIXP_HOST_DEVICE static A backward(A, A, A g, A) { return g; }
MIXP_FORMULA_END

MIXP_FORMULA_BEGIN(MulScalar, None)
template <class A> MIXP_HOST_DEVICE static A forward(A x, A s) { return x * s; }
template <class A> MIXP_HOST_DEVICE static A backward(A, A, A g, A s) { return g * s; }
MIXP_FORMULA_END

MIXP_FORMULA_BEGIN(RsubScalar, None)
template <class A> MIXP_HOST_DEVICE static A forward(A x, A s) { return s - x; }
template <class A> MIXP_HOST_DEVICE static A backward(A, A, A g, A) { return -g; }
MIXP_FORMULA_END

MIXP_FORMULA_BEGIN(RdivScalar, Input)
template <class A> MIXP_HOST_DEVICE static A forward(A x, A s) { return s / x; }
template <class A> MIXP_HOST_DEVICE static A backward(A x, A, A g, A s) { return -g * s / (x * x); }
MIXP_FORMULA_END

// The backward reads the output: y > 0 exactly where x > 0 (y is x itself
// there, in the same dtype; NaN and -0 give y = x, false like x > 0), so the
// gradient is bitwise that of x > 0, and a conv-BN-ReLU keeps one activation
// less: y is what the next layer saves anyway (PyTorch's in-place ReLU).
MIXP_FORMULA_BEGIN(Relu, Output)
template <class A> MIXP_HOST_DEVICE static A forward(A x, A) { return x < A(0) ? A(0) : x; }
template <class A> MIXP_HOST_DEVICE static A backward(A, A y, A g, A) { return y > A(0) ? g : A(0); }
MIXP_FORMULA_END

MIXP_FORMULA_BEGIN(GeluErf, Input)
template <class A> MIXP_HOST_DEVICE static A forward(A x, A) {
  return A(0.5) * x * (A(1) + hd::erf(x * GeluConst<A>::kInvSqrt2));
}
template <class A> MIXP_HOST_DEVICE static A backward(A x, A, A g, A) {
  using C = GeluConst<A>;
  const A cdf = A(0.5) * (A(1) + hd::erf(x * C::kInvSqrt2));
  return g * (cdf + x * hd::exp(A(-0.5) * x * x) * C::kInvSqrt2Pi);
}
MIXP_FORMULA_END

MIXP_FORMULA_BEGIN(GeluTanh, Input)
template <class A> MIXP_HOST_DEVICE static A forward(A x, A) {
  using C = GeluConst<A>;
  const A u = C::kSqrt2OverPi * (x + C::kCubic * x * x * x);
  return A(0.5) * x * (A(1) + hd::tanh(u));
}
template <class A> MIXP_HOST_DEVICE static A backward(A x, A, A g, A) {
  using C = GeluConst<A>;
  const A x2 = x * x;
  const A t = hd::tanh(C::kSqrt2OverPi * (x + C::kCubic * x2 * x));
  const A du = C::kSqrt2OverPi * (A(1) + A(3) * C::kCubic * x2);
  return g * (A(0.5) * (A(1) + t) + A(0.5) * x * (A(1) - t * t) * du);
}
MIXP_FORMULA_END

MIXP_FORMULA_BEGIN(Sigmoid, Output)
template <class A> MIXP_HOST_DEVICE static A forward(A x, A) { return A(1) / (A(1) + hd::exp(-x)); }
template <class A> MIXP_HOST_DEVICE static A backward(A, A y, A g, A) { return g * y * (A(1) - y); }
MIXP_FORMULA_END

MIXP_FORMULA_BEGIN(Tanh, Output)
template <class A> MIXP_HOST_DEVICE static A forward(A x, A) { return hd::tanh(x); }
template <class A> MIXP_HOST_DEVICE static A backward(A, A y, A g, A) { return g * (A(1) - y * y); }
MIXP_FORMULA_END

MIXP_FORMULA_BEGIN(Silu, Input)
template <class A> MIXP_HOST_DEVICE static A forward(A x, A) { return x / (A(1) + hd::exp(-x)); }
template <class A> MIXP_HOST_DEVICE static A backward(A x, A, A g, A) {
  const A sg = A(1) / (A(1) + hd::exp(-x));
  return g * sg * (A(1) + x * (A(1) - sg));
}
MIXP_FORMULA_END

// hardswish' is 0 below -3, (2x+3)/6 on [-3, 3] and 1 above.
MIXP_FORMULA_BEGIN(Hardswish, Input)
template <class A> MIXP_HOST_DEVICE static A forward(A x, A) {
  return x <= A(-3) ? A(0) : x >= A(3) ? x : x * (x + A(3)) / A(6);
}
template <class A> MIXP_HOST_DEVICE static A backward(A x, A, A g, A) {
  return x < A(-3) ? A(0) : x <= A(3) ? g * (A(2) * x + A(3)) / A(6) : g;
}
MIXP_FORMULA_END

// hardsigmoid' is 1/6 strictly inside (-3, 3) and 0 elsewhere.
MIXP_FORMULA_BEGIN(Hardsigmoid, Input)
template <class A> MIXP_HOST_DEVICE static A forward(A x, A) {
  return x <= A(-3) ? A(0) : x >= A(3) ? A(1) : (x + A(3)) / A(6);
}
template <class A> MIXP_HOST_DEVICE static A backward(A x, A, A g, A) {
  return (x > A(-3) && x < A(3)) ? g / A(6) : A(0);
}
MIXP_FORMULA_END

#undef MIXP_FORMULA_BEGIN
#undef MIXP_FORMULA_END

// Every unary op has a formula that reads what its table row says.
#define MIXP_UNARY(Enum, name, c_function, reads_what, category, c_args)         \
  static_assert(UnaryFormula<UnaryOp::Enum>::reads == Reads::reads_what, \
                "core/ops.def and the formula of " #Enum " disagree on what backward reads");
#define MIXP_UNARY_VARIANT(Enum, name, reads_what) MIXP_UNARY(Enum, name, -, reads_what, -, -)
#include "core/ops.def"

template <BinaryOp>
struct BinaryFormula;  // one specialisation per MIXP_BINARY row

#define MIXP_BINARY_FORMULA(Op, expr)                                           \
  template <>                                                                 \
  struct BinaryFormula<BinaryOp::Op> {                                        \
    template <class A> MIXP_HOST_DEVICE static A apply(A a, A b) { return expr; } \
  };
MIXP_BINARY_FORMULA(Add, a + b)
MIXP_BINARY_FORMULA(Sub, a - b)
MIXP_BINARY_FORMULA(Mul, a * b)
MIXP_BINARY_FORMULA(Div, a / b)
#undef MIXP_BINARY_FORMULA

// An op number outside this build's table: a bug (the loader refuses a
// plugin built from another table), so an error -- never another op's result.
[[noreturn]] MIXP_HOST_DEVICE inline void unknown_elementwise_op(const char *kind, int op, int count) {
#ifdef __CUDA_ARCH__
  (void)kind, (void)op, (void)count;
  __trap();
  __builtin_unreachable();
#else
  fail(MIXP_ERR_INTERNAL, "elementwise dispatch: ", kind, " op ", op, " is not in core/ops.def (",
       count, " ", kind, " ops)");
#endif
}

// For a device backend's host side, before a launch (in a kernel the check
// above can only trap, which poisons the context).
inline void require_known(UnaryOp op) {
  if (unsigned(op) >= unsigned(kUnaryOpCount)) unknown_elementwise_op("unary", int(op), kUnaryOpCount);
}
inline void require_known(BinaryOp op) {
  if (unsigned(op) >= unsigned(kBinaryOpCount)) unknown_elementwise_op("binary", int(op), kBinaryOpCount);
}

// Runs f(UnaryFormula<op>{}) for a runtime op: the one switch both
// backends dispatch through, generated from the table.
template <class F>
MIXP_HOST_DEVICE inline auto with_unary_formula(UnaryOp op, F &&f) {
  switch (op) {
#define MIXP_UNARY(Enum, name, c_function, reads, category, c_args) \
  case UnaryOp::Enum: return f(UnaryFormula<UnaryOp::Enum>{});
#define MIXP_UNARY_VARIANT(Enum, name, reads) MIXP_UNARY(Enum, name, -, reads, -, -)
#include "core/ops.def"
  }
  unknown_elementwise_op("unary", int(op), kUnaryOpCount);
}

template <class F>
MIXP_HOST_DEVICE inline auto with_binary_formula(BinaryOp op, F &&f) {
  switch (op) {
#define MIXP_BINARY(Enum, name, c_function, category) \
  case BinaryOp::Enum: return f(BinaryFormula<BinaryOp::Enum>{});
#include "core/ops.def"
  }
  unknown_elementwise_op("binary", int(op), kBinaryOpCount);
}

}  // namespace mixp
