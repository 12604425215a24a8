// Element types, their sizes, and exact conversions between fp32/fp64 and the
// 16-bit float formats (round-to-nearest-even, overflow to inf, subnormals
// and NaN preserved).
#pragma once
#include <cstdint>
#include <cstring>

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

// Bit-level conversions. The float->half ones round to nearest even.
// Where the compiler has _Float16 (GCC 12 on x86-64), fp16 conversions use
// it: exact IEEE conversions that become single F16C instructions inside the
// AVX2/AVX-512 versions of the hot loops (core/simd.hpp) and libgcc calls in
// baseline code. The portable bit-level versions are the fallback.
uint16_t f32_to_f16_bits_soft(float f) noexcept;
float f16_bits_to_f32_soft(uint16_t h) noexcept;
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && __GNUC__ >= 12
inline uint16_t f32_to_f16_bits(float f) noexcept {
  const _Float16 h = static_cast<_Float16>(f);
  uint16_t u;
  std::memcpy(&u, &h, 2);
  return u;
}
inline float f16_bits_to_f32(uint16_t u) noexcept {
  _Float16 h;
  std::memcpy(&h, &u, 2);
  return static_cast<float>(h);
}
#else
inline uint16_t f32_to_f16_bits(float f) noexcept { return f32_to_f16_bits_soft(f); }
inline float f16_bits_to_f32(uint16_t h) noexcept { return f16_bits_to_f32_soft(h); }
#endif
uint16_t f64_to_f16_bits(double d) noexcept;
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
uint16_t f64_to_bf16_bits(double d) noexcept;

// Storage types for the 16-bit formats, distinct so templates can dispatch.
struct f16 {
  uint16_t bits;
};
struct bf16 {
  uint16_t bits;
};

// acc_t<T>: the type arithmetic on T is done in (fp32 for the half types).
template <class T> struct Acc { using type = T; };
template <> struct Acc<f16> { using type = float; };
template <> struct Acc<bf16> { using type = float; };
template <class T> using acc_t = typename Acc<T>::type;

template <class T> inline acc_t<T> load(T v) noexcept { return v; }
template <> inline float load<f16>(f16 v) noexcept { return f16_bits_to_f32(v.bits); }
template <> inline float load<bf16>(bf16 v) noexcept { return bf16_bits_to_f32(v.bits); }

template <class T> inline T store(acc_t<T> v) noexcept { return v; }
template <> inline f16 store<f16>(float v) noexcept { return f16{f32_to_f16_bits(v)}; }
template <> inline bf16 store<bf16>(float v) noexcept { return bf16{f32_to_bf16_bits(v)}; }

// Rounds a double once into a storage type (no detour through fp32, which
// would round twice for the half types).
template <class T> inline T store_double(double v) noexcept { return T(v); }
template <> inline f16 store_double<f16>(double v) noexcept { return f16{f64_to_f16_bits(v)}; }
template <> inline bf16 store_double<bf16>(double v) noexcept { return bf16{f64_to_bf16_bits(v)}; }

// Converts any element value to double and back (used by generic paths:
// casts, fill, item). to_dtype rounds once, directly from double.
double element_to_double(const void *p, DType t) noexcept;
void double_to_element(double v, void *p, DType t) noexcept;

// Calls f(T{}) with the C++ storage type of a float dtype.
template <class F>
decltype(auto) dispatch_float(DType t, F &&f) {
  switch (t) {
    case MIXP_F32: return f(float{});
    case MIXP_F64: return f(double{});
    case MIXP_F16: return f(f16{});
    default: return f(bf16{});
  }
}

}  // namespace mixp
