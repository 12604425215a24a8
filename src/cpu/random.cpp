// CPU random kernels over the counter-based Philox stream: element i depends
// only on (seed, offset, i), so the result is the same for any thread count
// and matches the CUDA backend, which evaluates the same functions.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <type_traits>

#include "core/error.hpp"
#include "core/philox.hpp"
#include "cpu/cpu_backend.hpp"
#include "cpu/simd.hpp"

namespace mixp {
namespace {

constexpr int64_t kParallelMin = 1 << 14;

// The largest value below 1 in each half format: a uniform close to 1 would
// round up to 1.0 there, which would break the [0, 1) contract.
constexpr uint16_t kF16BelowOne = 0x3BFF;   // 1 - 2^-11
constexpr uint16_t kBF16BelowOne = 0x3F7F;  // 1 - 2^-8

template <class T>
inline T uniform_as(float u) noexcept {
  if constexpr (std::is_same_v<T, f16>) {
    uint16_t b = f32_to_f16_bits(u);
    return f16{b >= 0x3C00 ? kF16BelowOne : b};
  } else if constexpr (std::is_same_v<T, bf16>) {
    uint16_t b = f32_to_bf16_bits(u);
    return bf16{b >= 0x3F80 ? kBF16BelowOne : b};
  } else {
    return T(u);  // exact: the uniform has 24 significant bits
  }
}

void require_float_out(const View &out, const char *kernel) {
  if (!is_float(out.dtype))
    fail(MIXP_ERR_INTERNAL, "cpu ", kernel, ": out has non-float dtype ", dtype_name(out.dtype));
}

}  // namespace

void CpuBackend::rand_uniform(const View &out, uint64_t seed, uint64_t offset) {
  require_float_out(out, "rand_uniform");
  const int64_t n = out.numel();
  dispatch_float(out.dtype, [&](auto tag) {
    using T = decltype(tag);
    T *p = static_cast<T *>(out.data);
#pragma omp parallel for schedule(static) if (n >= kParallelMin)
    for (int64_t i = 0; i < n; ++i) p[i] = uniform_as<T>(philox_uniform(seed, offset, uint64_t(i)));
  });
}

void CpuBackend::rand_normal(const View &out, uint64_t seed, uint64_t offset) {
  require_float_out(out, "rand_normal");
  const int64_t n = out.numel();
  dispatch_float(out.dtype, [&](auto tag) {
    using T = decltype(tag);
    T *p = static_cast<T *>(out.data);
#pragma omp parallel for schedule(static) if (n >= kParallelMin)
    for (int64_t i = 0; i < n; ++i) p[i] = store_double<T>(philox_normal(seed, offset, uint64_t(i)));
  });
}

void CpuBackend::dropout_mask(const View &mask, double p, uint64_t seed, uint64_t offset) {
  if (mask.dtype != MIXP_U8 && mask.dtype != MIXP_BOOL)
    fail(MIXP_ERR_INTERNAL, "cpu dropout_mask: mask must be u8, not ", dtype_name(mask.dtype));
  const int64_t n = mask.numel();
  uint8_t *m = static_cast<uint8_t *>(mask.data);
  // Chunks in the multi-versioned kernels: Philox is integer arithmetic that
  // vectorises; each element depends on its index alone. Element i reads
  // word i % 4 of block offset + i / 4 (philox_uniform), so one block serves
  // four elements instead of being computed four times. (Chunks hold whole
  // blocks: kParallelMin is a multiple of 4.)
  static_assert(kParallelMin % 4 == 0);
  const int64_t chunks = (n + kParallelMin - 1) / kParallelMin;
  // A uniform is (x >> 8) * 2^-24 (philox.hpp), so u >= p exactly when
  // x >> 8 >= ceil(p * 2^24): an integer test (p * 2^24 is exact in double).
  const uint32_t keep_from = uint32_t(std::ceil(std::clamp(p, 0.0, 1.0) * 16777216.0));
#pragma omp parallel for schedule(static) if (chunks > 1)
  for (int64_t c = 0; c < chunks; ++c) {
    const int64_t lo = c * kParallelMin, hi = std::min(n, lo + kParallelMin);
    const int64_t full = lo + (hi - lo) / 4 * 4;
    cpu::run_kernel([&]() MIXP_KERNEL_BODY {
      for (int64_t b = lo / 4; b < full / 4; ++b) {
        const Philox4 r = philox4x32_10(offset + uint64_t(b), 0, seed);
        for (int k = 0; k < 4; ++k) m[4 * b + k] = (r.v[k] >> 8) >= keep_from ? 1 : 0;
      }
    });
    if (full < hi) {  // the tensor's last, partial block
      const Philox4 r = philox4x32_10(offset + uint64_t(full / 4), 0, seed);
      for (int64_t i = full; i < hi; ++i) m[i] = (r.v[i - full] >> 8) >= keep_from ? 1 : 0;
    }
  }
}

}  // namespace mixp
