#include "core/dtype.hpp"

#include <cmath>
#include <limits>

namespace mixp {

size_t dtype_size(DType t) noexcept {
  switch (t) {
    case MIXP_F32: case MIXP_I32: return 4;
    case MIXP_F16: case MIXP_BF16: return 2;
    case MIXP_F64: case MIXP_I64: return 8;
    case MIXP_U8: case MIXP_BOOL: return 1;
  }
  return 0;
}

const char *dtype_name(DType t) noexcept {
  switch (t) {
    case MIXP_F32: return "f32";
    case MIXP_F16: return "f16";
    case MIXP_BF16: return "bf16";
    case MIXP_F64: return "f64";
    case MIXP_I32: return "i32";
    case MIXP_I64: return "i64";
    case MIXP_U8: return "u8";
    case MIXP_BOOL: return "bool";
  }
  return "unknown";
}

bool dtype_valid(int t) noexcept { return t >= MIXP_F32 && t <= MIXP_BOOL; }

namespace {
// Rounds |d| to a binary format with `mant` stored mantissa bits and
// exponent bias `bias` (max biased exponent 2*bias+1 is inf/NaN), once,
// to nearest even. Returns the magnitude bits.
uint16_t round_magnitude(double a, int mant, int bias) noexcept {
  const int min_exp = 1 - bias;  // exponent of the smallest normal
  if (a < std::ldexp(1.0, min_exp)) {
    // Subnormal: a multiple of 2^(min_exp - mant). Scaling by a power of two
    // is exact, and nearbyint rounds to nearest even in the default mode.
    return uint16_t(std::nearbyint(std::ldexp(a, mant - min_exp)));
  }
  int ex;
  std::frexp(a, &ex);
  int e = ex - 1;  // a in [2^e, 2^(e+1))
  double q = std::nearbyint(std::ldexp(a, mant - e));
  if (q == std::ldexp(1.0, mant + 1)) {
    ++e;
    q = std::ldexp(1.0, mant);
  }
  const int biased = e + bias;
  if (biased >= 2 * bias + 1) return uint16_t(((2 * bias + 1) << mant));  // overflow: inf
  return uint16_t((biased << mant) | (uint32_t(q) - (1u << mant)));
}
}  // namespace

// Rounds the magnitude bits `u` of a finite double whose result is a normal
// (or overflowing) value of a format with `mant` mantissa bits and exponent
// bias `bias`: rebias the exponent, then round the 52-bit mantissa to `mant`
// bits to nearest even on the integer, letting a carry bump the exponent.
static inline uint64_t round_normal(uint64_t u, int mant, int bias) noexcept {
  const int drop = 52 - mant;
  const uint64_t v = u - (uint64_t(1023 - bias) << 52);
  return (v + ((uint64_t(1) << (drop - 1)) - 1) + ((v >> drop) & 1)) >> drop;
}

uint16_t f64_to_f16_bits(double d) noexcept {
  uint64_t u;
  std::memcpy(&u, &d, 8);
  const uint16_t sign = uint16_t((u >> 48) & 0x8000u);
  u &= 0x7fffffffffffffffull;
  if (u >= 0x7ff0000000000000ull) return uint16_t(sign | (u > 0x7ff0000000000000ull ? 0x7e00u : 0x7c00u));
  if (u >= 0x3f10000000000000ull) {  // |d| >= 2^-14: a normal half or overflow
    const uint64_t h = round_normal(u, 10, 15);
    return uint16_t(sign | (h >= 0x7c00u ? 0x7c00u : h));
  }
  return uint16_t(sign | round_magnitude(std::fabs(d), 10, 15));
}

uint16_t f64_to_bf16_bits(double d) noexcept {
  uint64_t u;
  std::memcpy(&u, &d, 8);
  const uint16_t sign = uint16_t((u >> 48) & 0x8000u);
  u &= 0x7fffffffffffffffull;
  if (u >= 0x7ff0000000000000ull) return uint16_t(sign | (u > 0x7ff0000000000000ull ? 0x7fc0u : 0x7f80u));
  if (u >= 0x3810000000000000ull) {  // |d| >= 2^-126: a normal bf16 or overflow
    const uint64_t h = round_normal(u, 7, 127);
    return uint16_t(sign | (h >= 0x7f80u ? 0x7f80u : h));
  }
  return uint16_t(sign | round_magnitude(std::fabs(d), 7, 127));
}

double element_to_double(const void *p, DType t) noexcept {
  switch (t) {
    case MIXP_F32: { float v; std::memcpy(&v, p, 4); return v; }
    case MIXP_F64: { double v; std::memcpy(&v, p, 8); return v; }
    case MIXP_F16: { uint16_t v; std::memcpy(&v, p, 2); return f16_bits_to_f32(v); }
    case MIXP_BF16: { uint16_t v; std::memcpy(&v, p, 2); return bf16_bits_to_f32(v); }
    case MIXP_I32: { int32_t v; std::memcpy(&v, p, 4); return v; }
    case MIXP_I64: { int64_t v; std::memcpy(&v, p, 8); return double(v); }
    case MIXP_U8: return *static_cast<const uint8_t *>(p);
    case MIXP_BOOL: return *static_cast<const uint8_t *>(p) ? 1.0 : 0.0;
  }
  return 0.0;
}

namespace {
// Truncates toward zero and saturates, so an out-of-range value is never UB.
template <class I>
I to_int(double v) noexcept {
  if (std::isnan(v)) return 0;
  v = std::trunc(v);
  if (v <= double(std::numeric_limits<I>::min())) return std::numeric_limits<I>::min();
  if (v >= double(std::numeric_limits<I>::max())) return std::numeric_limits<I>::max();
  return I(v);
}
}  // namespace

void double_to_element(double v, void *p, DType t) noexcept {
  switch (t) {
    case MIXP_F32: { float f = float(v); std::memcpy(p, &f, 4); return; }
    case MIXP_F64: std::memcpy(p, &v, 8); return;
    case MIXP_F16: { uint16_t h = f64_to_f16_bits(v); std::memcpy(p, &h, 2); return; }
    case MIXP_BF16: { uint16_t h = f64_to_bf16_bits(v); std::memcpy(p, &h, 2); return; }
    case MIXP_I32: { int32_t i = to_int<int32_t>(v); std::memcpy(p, &i, 4); return; }
    case MIXP_I64: { int64_t i = to_int<int64_t>(v); std::memcpy(p, &i, 8); return; }
    case MIXP_U8: *static_cast<uint8_t *>(p) = to_int<uint8_t>(v); return;
    case MIXP_BOOL: *static_cast<uint8_t *>(p) = (v != 0.0) ? 1 : 0; return;
  }
}

}  // namespace mixp
