// The two 8-bit float storage formats (OCP OFP8, 2023) and their exact
// conversions, written once for the host and the device (MIXP_HOST_DEVICE):
//
//   E4M3 ("fn"): bias 7, 3 mantissa bits, no infinity; S.1111.111 is NaN,
//                the largest finite value 448 (S.1111.110).
//   E5M2:        bias 15, 2 mantissa bits, IEEE-like: S.11111.00 is inf,
//                S.11111.xx (xx != 0) NaN, the largest finite value 57344.
//
// Into fp8 every value rounds once to nearest, ties to even, from its exact
// binary value (a double holds every f32, f16 and bf16 exactly, so one
// function serves all of them). What happens past the largest finite value
// is the caller's choice, `Overflow`:
//   kSaturate:   to the largest finite value (inf too), NaN stays NaN;
//   kIeee:       IEEE's rule: round as if the exponent were unbounded, and a
//                result above the largest finite value is inf. Only E5M2
//                has inf; E4M3 then saturates as above.
// mixp_cast uses PyTorch's choice (.to(torch.float8_e4m3fn / _e5m2)):
// E4M3 saturates, E5M2 follows IEEE (61440, the midpoint of 57344 and 2^16,
// rounds to inf). A NaN keeps its sign and becomes S.1111111 in both formats.
// Out of fp8, every value is exact in f32; NaNs come out quiet with their
// sign and mantissa bits on top of the payload (as PyTorch does).
#pragma once
#include <cstdint>
#include <cstring>

#include "core/host_device.hpp"

namespace mixp {

enum class Overflow { kSaturate, kIeee };

struct E4M3 {
  static constexpr int kMantBits = 3;
  static constexpr int kMinExp = -6;  // of the smallest normal, 2^-6
  static constexpr int kBias = 7;
  static constexpr uint8_t kMaxFinite = 0x7e;  // 448
  static constexpr bool kHasInf = false;
  MIXP_HOST_DEVICE static constexpr bool is_nan(uint8_t code) { return code == 0x7f; }
};

struct E5M2 {
  static constexpr int kMantBits = 2;
  static constexpr int kMinExp = -14;
  static constexpr int kBias = 15;
  static constexpr uint8_t kMaxFinite = 0x7b;  // 57344
  static constexpr bool kHasInf = true;
  MIXP_HOST_DEVICE static constexpr bool is_nan(uint8_t code) { return code > 0x7c; }
};

namespace fp8_detail {
MIXP_HOST_DEVICE inline uint64_t bits_of(double d) {
#if defined(__CUDA_ARCH__)
  return uint64_t(__double_as_longlong(d));
#else
  uint64_t u;
  std::memcpy(&u, &d, 8);
  return u;
#endif
}
MIXP_HOST_DEVICE inline float float_of(uint32_t u) {
#if defined(__CUDA_ARCH__)
  return __uint_as_float(u);
#else
  float f;
  std::memcpy(&f, &u, 4);
  return f;
#endif
}
}  // namespace fp8_detail

// d rounded to the fp8 format F (see the top of the file).
template <class F>
MIXP_HOST_DEVICE inline uint8_t fp8_from_double(double d, Overflow overflow) {
  constexpr int M = F::kMantBits;
  const uint64_t u = fp8_detail::bits_of(d);
  const uint8_t sign = uint8_t((u >> 56) & 0x80u);
  const uint64_t a = u & 0x7fffffffffffffffull;
  const uint8_t too_big = F::kHasInf && overflow == Overflow::kIeee ? uint8_t(F::kMaxFinite + 1) : F::kMaxFinite;
  if (a > 0x7ff0000000000000ull) return uint8_t(sign | 0x7f);    // NaN
  if (a == 0x7ff0000000000000ull) return uint8_t(sign | too_big);  // inf
  const int biased = int(a >> 52);
  if (biased == 0) return sign;  // double subnormals are far below half the smallest fp8
  // |d| = sig * 2^(e - 52) exactly. The result is q * 2^(exp - M) with exp the
  // exponent of |d|, or the format's smallest where |d| is subnormal there:
  // q is sig shifted right by `shift` bits, rounded to nearest even.
  const uint64_t sig = (a & 0x000fffffffffffffull) | 0x0010000000000000ull;
  const int e = biased - 1023;
  const int exp = e < F::kMinExp ? F::kMinExp : e;
  const int shift = 52 - M + (exp - e);
  if (shift > 62) return sign;  // below a quarter of the smallest subnormal
  uint64_t q = sig >> shift;
  const uint64_t rest = sig & ((uint64_t(1) << shift) - 1), half = uint64_t(1) << (shift - 1);
  q += (rest > half || (rest == half && (q & 1u))) ? 1u : 0u;
  // The code is ((exp - kMinExp) << M) + q for normal and subnormal results
  // alike (q carries its implicit bit into the exponent field, and a
  // rounding carry to 2^(M+1) steps the exponent up).
  const int64_t code = (int64_t(exp - F::kMinExp) << M) + int64_t(q);
  if (code > F::kMaxFinite) return uint8_t(sign | too_big);
  return uint8_t(sign | uint8_t(code));
}

// f rounded to F: a NaN is caught here, as a device's f32 -> f64 conversion
// need not keep its sign.
template <class F>
MIXP_HOST_DEVICE inline uint8_t fp8_from_float(float f, Overflow overflow) {
  uint32_t x;
#if defined(__CUDA_ARCH__)
  x = __float_as_uint(f);
#else
  std::memcpy(&x, &f, 4);
#endif
  if ((x & 0x7fffffffu) > 0x7f800000u) return uint8_t(((x >> 24) & 0x80u) | 0x7fu);
  return fp8_from_double<F>(double(f), overflow);
}

// The exact value of an fp8 code as f32.
template <class F>
MIXP_HOST_DEVICE inline float fp8_to_float(uint8_t b) {
  constexpr int M = F::kMantBits;
  const uint32_t sign = uint32_t(b & 0x80u) << 24;
  const uint8_t code = uint8_t(b & 0x7fu);
  const uint32_t mant = code & ((1u << M) - 1u);
  if (F::is_nan(code)) return fp8_detail::float_of(sign | 0x7fc00000u | (mant << (23 - M)));
  if (F::kHasInf && code == F::kMaxFinite + 1) return fp8_detail::float_of(sign | 0x7f800000u);
  const uint32_t field = code >> M;
  if (field == 0) {  // subnormal: mant * 2^(kMinExp - M), exact in f32
    const float quantum = fp8_detail::float_of(uint32_t(127 + F::kMinExp - M) << 23);
    const float v = float(mant) * quantum;
    return sign ? -v : v;
  }
  const uint32_t exp32 = uint32_t(int(field) - F::kBias + 127);
  return fp8_detail::float_of(sign | (exp32 << 23) | (mant << (23 - M)));
}

// The plain cast (mixp_cast, PyTorch's .to()): E4M3 saturates, E5M2 overflows to inf.

MIXP_HOST_DEVICE inline uint8_t f64_to_e4m3_bits(double d) { return fp8_from_double<E4M3>(d, Overflow::kSaturate); }
MIXP_HOST_DEVICE inline uint8_t f64_to_e5m2_bits(double d) { return fp8_from_double<E5M2>(d, Overflow::kIeee); }
MIXP_HOST_DEVICE inline uint8_t f32_to_e4m3_bits(float f) { return fp8_from_float<E4M3>(f, Overflow::kSaturate); }
MIXP_HOST_DEVICE inline uint8_t f32_to_e5m2_bits(float f) { return fp8_from_float<E5M2>(f, Overflow::kIeee); }
MIXP_HOST_DEVICE inline float e4m3_bits_to_f32(uint8_t b) { return fp8_to_float<E4M3>(b); }
MIXP_HOST_DEVICE inline float e5m2_bits_to_f32(uint8_t b) { return fp8_to_float<E5M2>(b); }

}  // namespace mixp
