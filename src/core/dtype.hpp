// Element types, their sizes, and exact conversions between fp32/fp64 and the
// 16-bit float formats (round-to-nearest-even, overflow to inf, subnormals
// and NaN preserved).
#pragma once
#include <cmath>
#include <cstdint>
#include <cstring>

#include "core/fp8.hpp"
#include "mixp/mixp.h"

namespace mixp {

using DType = mixp_dtype;

size_t dtype_size(DType t) noexcept;
const char *dtype_name(DType t) noexcept;
bool dtype_valid(int t) noexcept;
inline bool is_float(DType t) noexcept {
  return t == MIXP_F32 || t == MIXP_F16 || t == MIXP_BF16 || t == MIXP_F64;
}
inline bool is_half(DType t) noexcept { return t == MIXP_F16 || t == MIXP_BF16; }
// The 8-bit floats are storage types: not is_float, so an op without an fp8
// kernel refuses them (OpScope, ops/op_common.cpp); casts, copies, views and
// the scaled products take them.
inline bool is_fp8(DType t) noexcept { return t == MIXP_F8E4M3 || t == MIXP_F8E5M2; }

// Bit-level conversions. The float->half ones round to nearest even.
// fp16 <-> fp32 are written without branches (selects only) so that the
// multi-versioned loops of cpu/simd.hpp vectorise them; the approach is
// F. Giesen's public-domain float/half conversions; NaNs keep their sign and
// payload's top bits and come out quiet (as x86's F16C conversions do).
inline uint16_t f32_to_f16_bits(float f) noexcept {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  const uint32_t sign = (x >> 16) & 0x8000u;
  x &= 0x7fffffffu;
  // Normal results: rebias the exponent and round the 13 dropped bits to
  // nearest even; a carry into the exponent (even up to inf) is correct.
  const uint32_t normal = (x + 0xc8000fffu + ((x >> 13) & 1u)) >> 13;  // 0xc8000000 = (15 - 127) << 23
  // Subnormal results: adding 0.5 aligns the 2^-24 steps to the float's last
  // mantissa bits, and the FPU rounds to nearest even.
  float sub_f;
  std::memcpy(&sub_f, &x, 4);
  sub_f += 0.5f;
  uint32_t sub;
  std::memcpy(&sub, &sub_f, 4);
  sub -= 0x3f000000u;
  const uint32_t nan = 0x7e00u | ((x >> 13) & 0x3ffu);
  uint32_t h = x < 0x38800000u ? sub : normal;
  h = x >= 0x47800000u ? 0x7c00u : h;  // >= 65536: inf (65520..65536 round to inf above)
  h = x > 0x7f800000u ? nan : h;
  return uint16_t(sign | h);
}

inline float f16_bits_to_f32(uint16_t h) noexcept {
  const uint32_t em = uint32_t(h & 0x7fffu) << 13;
  const uint32_t exp = em & 0x0f800000u;
  uint32_t normal = em + 0x38000000u;                       // (127 - 15) << 23
  // inf/NaN: all exponent bits; NaNs come out quiet, as from F16C's vcvtph2ps
  // (cpu/half_convert.hpp relies on the two agreeing bit for bit).
  const uint32_t special = (em + 0x70000000u) | (em > 0x0f800000u ? 0x00400000u : 0u);
  normal = exp == 0x0f800000u ? special : normal;
  // Subnormal halves: renormalise through a float subtraction (exact).
  uint32_t sub_u = em + 0x38800000u;
  float sub_f;
  std::memcpy(&sub_f, &sub_u, 4);
  sub_f -= 6.103515625e-05f;  // 2^-14
  uint32_t sub;
  std::memcpy(&sub, &sub_f, 4);
  const uint32_t u = (exp == 0 ? sub : normal) | (uint32_t(h & 0x8000u) << 16);
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
// d rounded to float toward zero, its last bit set when that dropped
// anything ("round to odd"): rounding the result once more, to a format
// with at least two fewer mantissa bits, gives d correctly rounded, as if
// once. Branch-free like the conversions above, so loops that store double
// results as halves (softmax's) vectorise; checked against an exact
// integer rounding on 2e8 doubles, with and without FTZ/DAZ.
inline float f64_to_f32_round_odd(double d) noexcept {
  float f = float(d);
  const double back = double(f);
  uint32_t b;
  std::memcpy(&b, &f, 4);
  const bool inexact = back != d;  // NaN too; its bits are replaced by the callers
  b = inexact && std::fabs(back) > std::fabs(d) ? b - 1u : b;  // rounded away: one step back
  b = inexact ? (b | 1u) : b;
  std::memcpy(&f, &b, 4);
  return f;
}
inline uint16_t f64_to_f16_bits(double d) noexcept {
  uint64_t u;
  std::memcpy(&u, &d, 8);
  const uint16_t sign = uint16_t((u >> 48) & 0x8000u);
  // (A flushed float below 2^-126 still rounds to the right half: zero.)
  const uint16_t h = f32_to_f16_bits(f64_to_f32_round_odd(d));
  return d != d ? uint16_t(sign | 0x7e00u) : h;
}
inline float bf16_bits_to_f32(uint16_t h) noexcept {
  uint32_t u = uint32_t(h) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
inline uint16_t f32_to_bf16_bits(float f) noexcept {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  // Both results are computed and one is selected, so loops vectorise.
  const uint32_t rounded = (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;
  const uint32_t quiet_nan = (u >> 16) | 0x40u;  // keeps sign and top payload bits
  return uint16_t((u & 0x7fffffffu) > 0x7f800000u ? quiet_nan : rounded);
}
inline uint16_t f64_to_bf16_bits(double d) noexcept {
  uint64_t u;
  std::memcpy(&u, &d, 8);
  const uint16_t sign = uint16_t((u >> 48) & 0x8000u);
  const double a = std::fabs(d);
  // bf16 subnormals (below 2^-126) are multiples of 2^-133, rounded here in
  // double (a thread with FTZ set would flush the float in between): adding
  // and subtracting 2^52 rounds to nearest even; 128 is the smallest normal.
  const bool tiny = a < 0x1p-126;
  const uint16_t sub = uint16_t(((tiny ? a : 0.0) * 0x1p133 + 0x1p52) - 0x1p52);
  const uint16_t h = f32_to_bf16_bits(f64_to_f32_round_odd(a));
  return d != d ? uint16_t(sign | 0x7fc0u) : uint16_t(sign | (tiny ? sub : h));
}

// Storage types for the 16-bit formats, distinct so templates can dispatch.
struct f16 {
  uint16_t bits;
};
struct bf16 {
  uint16_t bits;
};
struct f8e4m3 {
  uint8_t bits;
};
struct f8e5m2 {
  uint8_t bits;
};

// acc_t<T>: the type arithmetic on T is done in (fp32 for the half types).
template <class T> struct Acc { using type = T; };
template <> struct Acc<f16> { using type = float; };
template <> struct Acc<bf16> { using type = float; };
template <> struct Acc<f8e4m3> { using type = float; };
template <> struct Acc<f8e5m2> { using type = float; };
template <class T> using acc_t = typename Acc<T>::type;

template <class T> inline acc_t<T> load(T v) noexcept { return v; }
template <> inline float load<f16>(f16 v) noexcept { return f16_bits_to_f32(v.bits); }
template <> inline float load<bf16>(bf16 v) noexcept { return bf16_bits_to_f32(v.bits); }
template <> inline float load<f8e4m3>(f8e4m3 v) noexcept { return e4m3_bits_to_f32(v.bits); }
template <> inline float load<f8e5m2>(f8e5m2 v) noexcept { return e5m2_bits_to_f32(v.bits); }

template <class T> inline T store(acc_t<T> v) noexcept { return v; }
template <> inline f16 store<f16>(float v) noexcept { return f16{f32_to_f16_bits(v)}; }
template <> inline bf16 store<bf16>(float v) noexcept { return bf16{f32_to_bf16_bits(v)}; }
template <> inline f8e4m3 store<f8e4m3>(float v) noexcept { return f8e4m3{f32_to_e4m3_bits(v)}; }
template <> inline f8e5m2 store<f8e5m2>(float v) noexcept { return f8e5m2{f32_to_e5m2_bits(v)}; }

// Rounds a double once into a storage type (no detour through fp32, which
// would round twice for the half types).
template <class T> inline T store_double(double v) noexcept { return T(v); }
template <> inline f16 store_double<f16>(double v) noexcept { return f16{f64_to_f16_bits(v)}; }
template <> inline bf16 store_double<bf16>(double v) noexcept { return bf16{f64_to_bf16_bits(v)}; }
template <> inline f8e4m3 store_double<f8e4m3>(double v) noexcept { return f8e4m3{f64_to_e4m3_bits(v)}; }
template <> inline f8e5m2 store_double<f8e5m2>(double v) noexcept { return f8e5m2{f64_to_e5m2_bits(v)}; }

// Converts any element value to double and back (used by generic paths:
// casts, fill, item). to_dtype rounds once, directly from double.
double element_to_double(const void *p, DType t) noexcept;
void double_to_element(double v, void *p, DType t) noexcept;

// Calls f(T{}) with the C++ storage type of a float dtype (not fp8: see
// dispatch_fp8).
template <class F>
decltype(auto) dispatch_float(DType t, F &&f) {
  switch (t) {
    case MIXP_F32: return f(float{});
    case MIXP_F64: return f(double{});
    case MIXP_F16: return f(f16{});
    default: return f(bf16{});
  }
}
template <class F>
decltype(auto) dispatch_fp8(DType t, F &&f) {
  return t == MIXP_F8E4M3 ? f(f8e4m3{}) : f(f8e5m2{});
}

}  // namespace mixp
