// CUDA embedding: a row gather, and its backward without float atomics.
// The backward sorts (index, position) pairs with CUB's stable radix sort,
// so each vocabulary row's positions come out grouped and in increasing
// order; then a block per row finds the row's run by binary search and its
// threads add the picked gradient rows in that order, in acc_t<T> -- the
// CPU's order (src/cpu/embedding.cpp), so the sums match it bit for
// bit and are reproducible run to run.
#include <algorithm>

#include <cub/device/device_radix_sort.cuh>

#include "common.cuh"

namespace mixp::cuda {
namespace {

// Rows are copied as raw elements of their size (no conversion). An index
// outside [0, v) -- reported later by check_indices (indices.cu) -- gives a
// zero row, never a read outside the table.
template <class U>
__global__ void gather_kernel(const U *w, const int64_t *idx, int64_t n, int64_t v, int64_t d, U *out) {
  const int64_t total = n * d;
  for (int64_t e = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; e < total; e += int64_t(gridDim.x) * blockDim.x) {
    const int64_t i = e / d, j = e - i * d, r = idx[i];
    out[e] = r >= 0 && r < v ? w[r * d + j] : U(0);
  }
}

// Out-of-range indices get key v, which no row's run [r, r + 1) includes:
// their gradient rows are dropped and the sort stays within end_bit.
__global__ void keys_kernel(const int64_t *idx, int64_t n, int64_t v, int32_t *keys, int32_t *pos) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t r = idx[i];
    keys[i] = int32_t(r >= 0 && r < v ? r : v);
    pos[i] = int32_t(i);
  }
}

__device__ __forceinline__ int64_t lower_bound(const int32_t *keys, int64_t n, int32_t v) {
  int64_t lo = 0, hi = n;
  while (lo < hi) {
    const int64_t mid = (lo + hi) / 2;
    if (keys[mid] < v) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

// A block per table row (looping over rows past the grid): the row's run
// of sorted keys is found once, then the block's threads sum its columns.
// A thread per table element searched the run twice and divided in 64 bits
// for each of GPT-2's 38.6M wte elements (1 ms of a step on an H200).
template <class T>
__global__ void accumulate_kernel(const T *gy, const int32_t *keys, const int32_t *pos, int64_t n, int64_t v,
                                  int64_t d, int64_t padding_idx, T *gw) {
  using A = acc_t<T>;
  for (int64_t r = blockIdx.x; r < v; r += gridDim.x) {
    int64_t p0 = 0, p1 = 0;
    if (r != padding_idx) {
      p0 = lower_bound(keys, n, int32_t(r));
      p1 = lower_bound(keys, n, int32_t(r + 1));  // r + 1 <= v < INT32_MAX
    }
    for (int64_t j = threadIdx.x; j < d; j += blockDim.x) {
      A acc = A(0);
      for (int64_t p = p0; p < p1; ++p) acc += ld(gy[int64_t(pos[p]) * d + j]);
      gw[r * d + j] = st<T>(acc);
    }
  }
}

void check_geometry(const char *kernel, const View &table, const View &indices) {
  if (table.ndim != 2 || indices.dtype != MIXP_I64 ||
      !(table.dtype == MIXP_F32 || table.dtype == MIXP_F64 || table.dtype == MIXP_F16 || table.dtype == MIXP_BF16))
    fail(MIXP_ERR_INTERNAL, "cuda ", kernel, ": expected a 2-D float table and i64 indices");
}

}  // namespace

void CudaBackend::embedding(const View &weight, const View &indices, const View &out) {
  check_geometry("embedding", weight, indices);
  const int64_t n = indices.numel(), v = weight.shape[0], d = weight.shape[1];
  if (n * d == 0) return;
  const int64_t *idx = static_cast<const int64_t *>(indices.data);
  const unsigned grid = grid_for(n * d);
  switch (weight.dtype) {
    case MIXP_F64:
      gather_kernel<uint64_t><<<grid, kThreads, 0, stream()>>>(static_cast<const uint64_t *>(weight.data), idx, n, v, d,
                                                               static_cast<uint64_t *>(out.data));
      break;
    case MIXP_F32:
      gather_kernel<uint32_t><<<grid, kThreads, 0, stream()>>>(static_cast<const uint32_t *>(weight.data), idx, n, v, d,
                                                               static_cast<uint32_t *>(out.data));
      break;
    default:
      gather_kernel<uint16_t><<<grid, kThreads, 0, stream()>>>(static_cast<const uint16_t *>(weight.data), idx, n, v, d,
                                                               static_cast<uint16_t *>(out.data));
      break;
  }
  MIXP_CUDA_LAUNCHED();
}

void CudaBackend::embedding_backward(const View &gy, const View &indices, int64_t padding_idx, const View &gw) {
  check_geometry("embedding_backward", gw, indices);
  if (gy.dtype != gw.dtype) fail(MIXP_ERR_INTERNAL, "cuda embedding_backward: gy and gw differ in dtype");
  const int64_t n = indices.numel(), v = gw.shape[0], d = gw.shape[1];
  if (v * d == 0) return;
  if (n > INT32_MAX || v >= INT32_MAX)
    fail(MIXP_ERR_UNSUPPORTED, "cuda embedding_backward: more than 2^31 indices or rows");
  // keys_in | pos_in | keys_out | pos_out, then CUB's temporary storage.
  const size_t arr = size_t(std::max<int64_t>(n, 1)) * sizeof(int32_t);
  int end_bit = 1;
  while (end_bit < 31 && (int64_t(1) << end_bit) <= v) ++end_bit;  // keys in [0, v]
  size_t temp_bytes = 0;
  MIXP_CUDA_CHECK(cub::DeviceRadixSort::SortPairs(nullptr, temp_bytes, static_cast<const int32_t *>(nullptr),
                                                  static_cast<int32_t *>(nullptr), static_cast<const int32_t *>(nullptr),
                                                  static_cast<int32_t *>(nullptr), n, 0, end_bit, stream()));
  Scratch buf(*this, 4 * arr + temp_bytes);
  int32_t *keys_in = buf.as<int32_t>();
  int32_t *pos_in = reinterpret_cast<int32_t *>(buf.as<char>() + arr);
  int32_t *keys = reinterpret_cast<int32_t *>(buf.as<char>() + 2 * arr);
  int32_t *pos = reinterpret_cast<int32_t *>(buf.as<char>() + 3 * arr);
  void *temp = buf.as<char>() + 4 * arr;
  if (n > 0) {
    keys_kernel<<<grid_for(n), kThreads, 0, stream()>>>(static_cast<const int64_t *>(indices.data), n, v, keys_in, pos_in);
    MIXP_CUDA_LAUNCHED();
    MIXP_CUDA_CHECK(cub::DeviceRadixSort::SortPairs(temp, temp_bytes, keys_in, keys, pos_in, pos, n, 0, end_bit,
                                                    stream()));
  }
  dispatch_float_dt(gw.dtype, "embedding_backward", [&](auto tag) {
    using T = decltype(tag);
    const int threads = d >= kThreads ? kThreads : int((d + 31) / 32 * 32);
    accumulate_kernel<T><<<unsigned(std::min<int64_t>(v, kMaxRowBlocks)), threads, 0, stream()>>>(
        static_cast<const T *>(gy.data), keys, pos, n, v, d, padding_idx, static_cast<T *>(gw.data));
  });
  MIXP_CUDA_LAUNCHED();
}

}  // namespace mixp::cuda
