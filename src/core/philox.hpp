// Philox4x32-10 (Salmon et al., "Parallel random numbers: as easy as 1, 2,
// 3", SC'11): a counter-based generator, so element i of a random tensor is a
// pure function of (seed, offset + i). The CUDA backend uses the same
// function, which makes CPU and GPU draws identical.
#pragma once
#include <cmath>
#include <cstdint>

// Callable from CUDA kernels too (kernels/random.cu compiles these very
// functions for the device).
#include "core/host_device.hpp"

namespace mixp {

struct Philox4 {
  uint32_t v[4];
};

MIXP_HOST_DEVICE inline Philox4 philox4x32_10(uint64_t counter_lo, uint64_t counter_hi, uint64_t key) noexcept {
  uint32_t c0 = uint32_t(counter_lo), c1 = uint32_t(counter_lo >> 32);
  uint32_t c2 = uint32_t(counter_hi), c3 = uint32_t(counter_hi >> 32);
  uint32_t k0 = uint32_t(key), k1 = uint32_t(key >> 32);
  for (int r = 0; r < 10; ++r) {
    uint64_t p0 = uint64_t(0xD2511F53u) * c0;
    uint64_t p1 = uint64_t(0xCD9E8D57u) * c2;
    uint32_t n0 = uint32_t(p1 >> 32) ^ c1 ^ k0;
    uint32_t n2 = uint32_t(p0 >> 32) ^ c3 ^ k1;
    c1 = uint32_t(p1);
    c3 = uint32_t(p0);
    c0 = n0;
    c2 = n2;
    k0 += 0x9E3779B9u;
    k1 += 0xBB67AE85u;
  }
  return Philox4{{c0, c1, c2, c3}};
}

// Uniform in [0, 1) with 24 random bits (exactly representable in fp32).
MIXP_HOST_DEVICE inline float uniform_from_u32(uint32_t x) noexcept { return float(x >> 8) * (1.0f / 16777216.0f); }

// The i-th uniform of the stream (seed, offset): counter = offset + i / 4.
MIXP_HOST_DEVICE inline float philox_uniform(uint64_t seed, uint64_t offset, uint64_t i) noexcept {
  Philox4 r = philox4x32_10(offset + i / 4, 0, seed);
  return uniform_from_u32(r.v[i % 4]);
}

// The i-th standard normal of the stream: Box-Muller over the pair of
// uniforms of the same Philox block, computed in double and rounded once.
MIXP_HOST_DEVICE inline double philox_normal(uint64_t seed, uint64_t offset, uint64_t i) noexcept {
  Philox4 r = philox4x32_10(offset + i / 2, 1, seed);
  double u1 = (double(r.v[0]) + 1.0) / 4294967296.0;  // (0, 1]
  double u2 = double(r.v[1]) / 4294967296.0;
  double rad = std::sqrt(-2.0 * std::log(u1));
  double th = 6.283185307179586476925286766559 * u2;
  return (i % 2 == 0) ? rad * std::cos(th) : rad * std::sin(th);
}

}  // namespace mixp
