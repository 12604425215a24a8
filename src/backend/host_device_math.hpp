// Math for code written once for both backends (core/host_device.hpp):
// the helpers pick the host's libm or the device's, each overloaded for
// float and double like <cmath>, so the two backends evaluate the same
// formulas in the same order.
#pragma once
#include <cmath>

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

MIXP_HD_MATH1(exp)
MIXP_HD_MATH1(log)
MIXP_HD_MATH1(sqrt)
MIXP_HD_MATH1(tanh)
MIXP_HD_MATH1(erf)
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
