#include "core/dtype.hpp"

#include <cmath>
#include <limits>

namespace mixp {

size_t dtype_size(DType t) noexcept {
  switch (t) {
    case MIXP_F32: case MIXP_I32: return 4;
    case MIXP_F16: case MIXP_BF16: return 2;
    case MIXP_F64: case MIXP_I64: return 8;
    case MIXP_U8: case MIXP_BOOL: case MIXP_F8E4M3: case MIXP_F8E5M2: return 1;
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
    case MIXP_F8E4M3: return "f8e4m3";
    case MIXP_F8E5M2: return "f8e5m2";
  }
  return "unknown";
}

bool dtype_valid(int t) noexcept { return t >= MIXP_F32 && t <= MIXP_F8E5M2; }

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
    case MIXP_F8E4M3: return e4m3_bits_to_f32(*static_cast<const uint8_t *>(p));
    case MIXP_F8E5M2: return e5m2_bits_to_f32(*static_cast<const uint8_t *>(p));
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
    case MIXP_F8E4M3: *static_cast<uint8_t *>(p) = f64_to_e4m3_bits(v); return;
    case MIXP_F8E5M2: *static_cast<uint8_t *>(p) = f64_to_e5m2_bits(v); return;
  }
}

}  // namespace mixp
