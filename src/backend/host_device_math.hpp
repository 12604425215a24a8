// Math for code written once for both backends (core/host_device.hpp):
// the helpers pick the host's libm or the device's, each overloaded for
// float and double like <cmath>, so the two backends evaluate the same
// formulas in the same order.
#pragma once
#include <cmath>
#include <cstdint>

#include "core/host_device.hpp"

namespace mixp::hd {

#if defined(__CUDA_ARCH__)
#define MIXP_HD_MATH1(f) \
  MIXP_HOST_DEVICE inline float f(float x) { return ::f(x); } \
  MIXP_HOST_DEVICE inline double f(double x) { return ::f(x); }
#define MIXP_HD_MATH2(f) \
  MIXP_HOST_DEVICE inline float f(float x, float y) { return ::f(x, y); } \
  MIXP_HOST_DEVICE inline double f(double x, double y) { return ::f(x, y); }
#else
#define MIXP_HD_MATH1(f) \
  inline float f(float x) { return std::f(x); } \
  inline double f(double x) { return std::f(x); }
#define MIXP_HD_MATH2(f) \
  inline float f(float x, float y) { return std::f(x, y); } \
  inline double f(double x, double y) { return std::f(x, y); }
#endif

#if defined(__CUDA_ARCH__)
MIXP_HD_MATH1(exp)
MIXP_HD_MATH1(erf)
#else
// On the host, float exp and erf are written out here instead of calling
// libm: a call per element keeps every elementwise loop that uses them
// scalar (GELU's erf was the largest single cost of the GPT step). Only
// +, -, *, / and selects, evaluated in one fixed order, so every kernel
// version (baseline, AVX2, AVX-512) gets bitwise the same result. (The
// library's -fno-trapping-math lets GCC vectorise the selects for AVX2.)

// exp: x = n ln2 + r with |r| <= ln2/2 (ln2 split in two for an exact
// n*ln2_hi), a degree-7 Taylor polynomial for e^r (truncation < 6e-9), and
// 2^n applied in two halves so that subnormal results come out right.
// Within 2 ulp of the exact value; overflow gives inf, NaN stays NaN.
inline float exp(float x) {
  const float xc = x > 88.7228394f ? 88.7228394f : (x < -104.0f ? -104.0f : x);
  // Adding 1.5 * 2^23 rounds to an integer, held in t's low mantissa bits.
  const float t = xc * 1.44269504f + 12582912.0f;
  const float n = t - 12582912.0f;
  const float r = (xc - n * 0.693145752f) - n * 1.42860677e-06f;
  float p = 1.98412698e-04f;  // 1/7!
  p = p * r + 1.38888889e-03f;
  p = p * r + 8.33333333e-03f;
  p = p * r + 4.16666667e-02f;
  p = p * r + 1.66666667e-01f;
  p = p * r + 0.5f;
  p = p * r + 1.0f;
  p = p * r + 1.0f;
  const int32_t ni = int32_t(__builtin_bit_cast(uint32_t, t) - 0x4B400000u);
  const int32_t n1 = ni >> 1, n2 = ni - n1;
  const float s1 = __builtin_bit_cast(float, uint32_t(n1 + 127) << 23);
  const float s2 = __builtin_bit_cast(float, uint32_t(n2 + 127) << 23);
  float y = p * s1 * s2;
  y = x > 88.7228394f ? __builtin_inff() : y;
  return x < -104.0f ? 0.0f : y;  // NaN falls through every select and stays NaN
}
inline double exp(double x) { return std::exp(x); }

// erf: the odd Taylor series below |x| = 0.5 (terms to x^13: relative error
// < 1e-8), above it Abramowitz & Stegun 7.1.26, 1 - t(a1 + t(a2 + ...)) e^-x^2
// with t = 1 / (1 + p|x|) (absolute error < 1.5e-7), sign restored.
inline float erf(float x) {
  const float ax = x < 0.0f ? -x : x;
  const float x2 = x * x;
  float q = -1.06837607e-04f;  // -1/9360
  q = q * x2 + 7.57575758e-04f;  // 1/1320
  q = q * x2 - 4.62962963e-03f;  // -1/216
  q = q * x2 + 2.38095238e-02f;  // 1/42
  q = q * x2 - 1.0e-01f;         // -1/10
  q = q * x2 + 3.33333333e-01f;  // 1/3
  q = q * x2 - 1.0f;
  const float small = -1.12837917f * x * q;  // 2/sqrt(pi) (x - x^3/3 + ...)
  const float t = 1.0f / (1.0f + 0.3275911f * ax);
  float a = 1.061405429f;
  a = a * t - 1.453152027f;
  a = a * t + 1.421413741f;
  a = a * t - 0.284496736f;
  a = a * t + 0.254829592f;
  const float e = exp(-x2);
  float big = 1.0f - a * t * e;
  big = x < 0.0f ? -big : big;
  return ax < 0.5f ? small : big;  // NaN: both are NaN
}
inline double erf(double x) { return std::erf(x); }
#endif
MIXP_HD_MATH1(log)
MIXP_HD_MATH1(sqrt)
MIXP_HD_MATH1(tanh)
MIXP_HD_MATH2(pow)

MIXP_HOST_DEVICE inline bool isfinite(float x) {
#if defined(__CUDA_ARCH__)
  return ::isfinite(x);
#else
  return std::isfinite(x);
#endif
}

#undef MIXP_HD_MATH1
#undef MIXP_HD_MATH2

}  // namespace mixp::hd
