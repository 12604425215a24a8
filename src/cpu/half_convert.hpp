// Contiguous runs of fp16 widened to fp32 and rounded back, with F16C's
// vcvtph2ps/vcvtps2ph where the kernel version has them (AVX2 and AVX-512;
// simd.hpp). The software conversions of core/dtype.hpp cost ~10 integer
// ops per element and made every f16 loop (optimizer, loss scaling, casts,
// elementwise ops) 2-3x slower than its bf16 twin; the hardware ones are
// one instruction per 8 elements. Both give the same bits for every input
// (tested exhaustively: signalling NaNs come out quiet from both), so the
// kernel versions stay bitwise equal.
//
// f16 loops that would otherwise convert element by element run over tiles
// of kHalfTile elements (elementwise.cpp, amp.cpp, optim.cpp, batch_norm.cpp):
// widen the f16 operands into float tiles, run the same float loop, round
// the result tile back.
#pragma once
#include <cstdint>
#include <type_traits>

#include "core/dtype.hpp"

namespace mixp::cpu {

// d[i] = float(s[i]) for i in [0, n).
void f16_to_f32(const f16 *s, float *d, int64_t n) noexcept;
// d[i] = f16(s[i]), rounded to nearest even, for i in [0, n).
void f32_to_f16(const float *s, f16 *d, int64_t n) noexcept;

// The same for bf16 (a shift each way, vectorised in the kernel versions),
// so that loops can stage either half type: widen() and narrow().
void bf16_to_f32(const bf16 *s, float *d, int64_t n) noexcept;
void f32_to_bf16(const float *s, bf16 *d, int64_t n) noexcept;
inline void widen(const f16 *s, float *d, int64_t n) noexcept { f16_to_f32(s, d, n); }
inline void widen(const bf16 *s, float *d, int64_t n) noexcept { bf16_to_f32(s, d, n); }
inline void narrow(const float *s, f16 *d, int64_t n) noexcept { f32_to_f16(s, d, n); }
inline void narrow(const float *s, bf16 *d, int64_t n) noexcept { f32_to_bf16(s, d, n); }

template <class T>
inline constexpr bool is_half_v = std::is_same_v<T, f16> || std::is_same_v<T, bf16>;

// Elements per tile: 2 KiB of floats per operand, well inside L1.
constexpr int64_t kHalfTile = 512;

}  // namespace mixp::cpu
