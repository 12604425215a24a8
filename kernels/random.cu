// CUDA random kernels over the CPU's Philox stream (core/philox.hpp, compiled
// here for the device): element i of (seed, offset) uses counter
// offset + i/4, lane i%4 for uniforms and dropout masks, and counter
// (offset + i/2, 1) with Box-Muller for normals, exactly as
// src/cpu/random.cpp does. Uniforms and masks are therefore bitwise
// the CPU's. Normals are computed in double with the device's log/sqrt/sin/
// cos, which may differ from glibc's in the last bit of the double; after
// rounding to F32/F16/BF16 that almost never shows, in F64 it can.
#include <type_traits>

#include "common.cuh"
#include "core/philox.hpp"

namespace mixp::cuda {
namespace {

// The largest value below 1 in each half format (see random.cpp): a uniform
// close to 1 must not round up to 1.0.
template <class T>
__device__ __forceinline__ T uniform_as(float u) {
  if constexpr (std::is_same_v<T, f16>) {
    const uint16_t b = f32_to_f16(u);
    return f16{b >= 0x3C00 ? uint16_t(0x3BFF) : b};
  } else if constexpr (std::is_same_v<T, bf16>) {
    const uint16_t b = f32_to_bf16(u);
    return bf16{b >= 0x3F80 ? uint16_t(0x3F7F) : b};
  } else {
    return T(u);  // exact: 24 significant bits
  }
}

// One Philox block (four uniforms) per thread.
template <class T>
__global__ void uniform_kernel(T *out, int64_t n, uint64_t seed, uint64_t offset) {
  const int64_t blocks = (n + 3) / 4;
  for (int64_t q = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; q < blocks;
       q += int64_t(gridDim.x) * blockDim.x) {
    const Philox4 r = philox4x32_10(offset + uint64_t(q), 0, seed);
#pragma unroll
    for (int k = 0; k < 4; ++k)
      if (4 * q + k < n) out[4 * q + k] = uniform_as<T>(uniform_from_u32(r.v[k]));
  }
}

template <class T>
__global__ void normal_kernel(T *out, int64_t n, uint64_t seed, uint64_t offset) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x)
    out[i] = st_d<T>(philox_normal(seed, offset, uint64_t(i)));
}

__global__ void dropout_mask_kernel(uint8_t *mask, int64_t n, double p, uint64_t seed, uint64_t offset) {
  const int64_t blocks = (n + 3) / 4;
  for (int64_t q = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; q < blocks;
       q += int64_t(gridDim.x) * blockDim.x) {
    const Philox4 r = philox4x32_10(offset + uint64_t(q), 0, seed);
#pragma unroll
    for (int k = 0; k < 4; ++k)
      if (4 * q + k < n) mask[4 * q + k] = double(uniform_from_u32(r.v[k])) >= p ? 1 : 0;
  }
}

}  // namespace

void CudaBackend::rand_uniform(const View &out, uint64_t seed, uint64_t offset) {
  const int64_t n = out.numel();
  if (n == 0) return;
  dispatch_float_dt(out.dtype, "rand_uniform", [&](auto tag) {
    using T = decltype(tag);
    uniform_kernel<T><<<grid_for((n + 3) / 4), kThreads, 0, stream()>>>(static_cast<T *>(out.data), n, seed,
                                                                         offset);
  });
  MIXP_CUDA_LAUNCHED();
}

void CudaBackend::rand_normal(const View &out, uint64_t seed, uint64_t offset) {
  const int64_t n = out.numel();
  if (n == 0) return;
  dispatch_float_dt(out.dtype, "rand_normal", [&](auto tag) {
    using T = decltype(tag);
    normal_kernel<T><<<grid_for(n), kThreads, 0, stream()>>>(static_cast<T *>(out.data), n, seed, offset);
  });
  MIXP_CUDA_LAUNCHED();
}

void CudaBackend::dropout_mask(const View &mask, double p, uint64_t seed, uint64_t offset) {
  if (mask.dtype != MIXP_U8 && mask.dtype != MIXP_BOOL)
    fail(MIXP_ERR_INTERNAL, "cuda dropout_mask: mask must be u8, got dtype ", int(mask.dtype));
  const int64_t n = mask.numel();
  if (n == 0) return;
  dropout_mask_kernel<<<grid_for((n + 3) / 4), kThreads, 0, stream()>>>(static_cast<uint8_t *>(mask.data), n,
                                                                         p, seed, offset);
  MIXP_CUDA_LAUNCHED();
}

namespace {
__global__ void philox_args_kernel(int64_t *dst, uint64_t seed, uint64_t offset) {
  dst[0] = int64_t(seed);
  dst[1] = int64_t(offset);
}
}  // namespace

void write_philox_args(CudaBackend &be, int64_t *dst, uint64_t seed, uint64_t offset) {
  philox_args_kernel<<<1, 1, 0, be.stream()>>>(dst, seed, offset);
  MIXP_CUDA_LAUNCHED();
}

}  // namespace mixp::cuda
