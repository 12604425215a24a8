#include "cpu/half_convert.hpp"

#include "cpu/simd.hpp"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define MIXP_F16C_LOOPS 1
#endif

namespace mixp::cpu {
namespace {

// d[i] = s[i] through the software conversions of core/dtype.hpp, in the
// multi-versioned kernels (a shift each way for bf16).
template <class S, class D>
void convert_soft(const S *s, D *d, int64_t n) noexcept {
  run_kernel([&]() MIXP_KERNEL_BODY {
    for (int64_t i = 0; i < n; ++i) d[i] = store<D>(load<S>(s[i]));
  });
}

#ifdef MIXP_F16C_LOOPS
// x86-64-v3 and v4 both have F16C; 8 lanes are enough to keep up with the
// loads and stores. The tail goes through the software conversion, which
// gives the same bits.
__attribute__((target("avx2,f16c"))) void f16_to_f32_f16c(const f16 *s, float *d, int64_t n) noexcept {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm256_storeu_ps(d + i, _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i *>(s + i))));
  for (; i < n; ++i) d[i] = f16_bits_to_f32(s[i].bits);
}

__attribute__((target("avx2,f16c"))) void f32_to_f16_f16c(const float *s, f16 *d, int64_t n) noexcept {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm_storeu_si128(reinterpret_cast<__m128i *>(d + i),
                     _mm256_cvtps_ph(_mm256_loadu_ps(s + i), _MM_FROUND_TO_NEAREST_INT));
  for (; i < n; ++i) d[i].bits = f32_to_f16_bits(s[i]);
}
#endif

}  // namespace

void f16_to_f32(const f16 *s, float *d, int64_t n) noexcept {
#ifdef MIXP_F16C_LOOPS
  if (kernel_isa() != KernelIsa::baseline) return f16_to_f32_f16c(s, d, n);
#endif
  convert_soft(s, d, n);
}

void bf16_to_f32(const bf16 *s, float *d, int64_t n) noexcept { convert_soft(s, d, n); }

void f32_to_bf16(const float *s, bf16 *d, int64_t n) noexcept { convert_soft(s, d, n); }

void f32_to_f16(const float *s, f16 *d, int64_t n) noexcept {
#ifdef MIXP_F16C_LOOPS
  if (kernel_isa() != KernelIsa::baseline) return f32_to_f16_f16c(s, d, n);
#endif
  convert_soft(s, d, n);
}

}  // namespace mixp::cpu
