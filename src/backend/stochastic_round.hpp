// Stochastic rounding of fp32 to bf16, the optimizer's parameter write for
// BF16 parameters kept without an fp32 master (optimizer_args.hpp), written
// once for the CPU and CUDA backends so both round the same element the same
// way. Part of the backend contract (kBackendAbiVersion).
//
// Round-to-nearest loses every update smaller than half a bf16 step (a
// parameter near 1.0 cannot move by less than 2^-9), so a long run of small
// steps stalls. Rounding up with probability equal to the discarded part
// keeps the expected value of the parameter exact: adding 16 random bits to
// the low half of the fp32 pattern and truncating does that (the carry
// reaches bit 16 with probability low/2^16), for either sign (magnitudes).
#pragma once
#include <cstdint>
#include <cstring>

#include "core/host_device.hpp"
#include "core/philox.hpp"

namespace mixp {

// The random word of element i of a stochastic write keyed (seed, offset):
// word i % 4 of Philox block offset + i / 4, in the stream counter_hi = 2
// (uniforms use 0 and normals 1).
MIXP_HOST_DEVICE inline uint32_t stochastic_bits(uint64_t seed, uint64_t offset, uint64_t i) noexcept {
  return philox4x32_10(offset + i / 4, 2, seed).v[i % 4];
}

// The bf16 bits of x rounded stochastically with `random`'s low 16 bits.
// Inf stays Inf and NaN stays NaN (quiet), as in rounding to nearest.
MIXP_HOST_DEVICE inline uint16_t bf16_bits_stochastic(float x, uint32_t random) noexcept {
  uint32_t u;
  std::memcpy(&u, &x, sizeof u);
  if ((u & 0x7f800000u) == 0x7f800000u) return uint16_t((u >> 16) | ((u & 0xffffu) ? 0x40u : 0u));
  return uint16_t((u + (random & 0xffffu)) >> 16);
}

}  // namespace mixp
