// The tiles of the CPU's fused attention (flash_attention.cpp: forward,
// flash_attention_backward.cpp: backward), FlashAttention's scheme: a tile of
// kQueryTile queries meets the keys kKeyTile at a time, the softmax runs
// online (a running row maximum and sum), and the L x S probabilities never
// exist beyond one kQueryTile x kKeyTile tile. Each row keeps its
// log-sum-exp, from which backward recomputes the probabilities.
//
// Arithmetic is in A = acc_t<T> (fp32 for the half types, fp64 for F64):
// the tiles are widened once as they are loaded (F16C / AVX-512 shifts,
// half_convert.hpp) and the results rounded once. Every loop below runs
// inside a run_kernel body (simd.hpp) and its order is fixed by the tiles,
// so the kernel versions and any thread count give the same bits.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <memory>
#include <type_traits>

#include "backend/backend.hpp"
#include "backend/host_device_math.hpp"
#include "core/dtype.hpp"
#include "core/philox.hpp"
#include "cpu/half_convert.hpp"
#include "cpu/simd.hpp"

namespace mixp::cpu::flash {

constexpr int64_t kQueryTile = 64;
constexpr int64_t kKeyTile = 64;
// The largest head size run fused: a thread's tiles (about 9 of
// kQueryTile x D values) stay within L2. Larger heads are composed.
constexpr int64_t kMaxHeadDim = 256;

// The [B, H, rows, D] geometry shared by q, k, v (AttentionArgs).
struct Dims {
  int64_t b = 0, h = 0, l = 0, s = 0, d = 0;
};

inline Dims dims_of(const AttentionArgs &a) noexcept {
  return Dims{a.q.shape[0], a.q.shape[1], a.q.shape[2], a.k.shape[2], a.q.shape[3]};
}

// The number of tiles of `tile` rows covering n rows.
inline int64_t tiles(int64_t n, int64_t tile) noexcept { return (n + tile - 1) / tile; }

// The last key a causal query tile [i0, i0 + rows) sees, plus one.
inline int64_t key_end(const Dims &g, bool causal, int64_t i0, int64_t rows) noexcept {
  return causal ? std::min(g.s, i0 + rows) : g.s;
}

template <class T>
inline T *row_of(const View &v, int64_t b, int64_t h, int64_t i) noexcept {
  return static_cast<T *>(v.data) + b * v.strides[0] + h * v.strides[1] + i * v.strides[2];
}

// dst[r * d + c] = v[b, h, i0 + r, c] for r < n, widened to A.
template <class T, class A>
void load_rows(const View &v, int64_t b, int64_t h, int64_t i0, int64_t n, int64_t d, A *dst) {
  for (int64_t r = 0; r < n; ++r) {
    const T *src = row_of<T>(v, b, h, i0 + r);
    if constexpr (is_half_v<T>) widen(src, dst + r * d, d);
    else std::copy(src, src + d, dst + r * d);
  }
}

// v[b, h, i0 + r, :] = src[r * d ...] for r < n, rounded once to T.
template <class T, class A>
void store_rows(const A *src, int64_t n, int64_t d, const View &v, int64_t b, int64_t h, int64_t i0) {
  for (int64_t r = 0; r < n; ++r) {
    T *dst = row_of<T>(v, b, h, i0 + r);
    if constexpr (is_half_v<T>) narrow(src + r * d, dst, d);
    else std::copy(src + r * d, src + (r + 1) * d, dst);
  }
}

// kt[c * kKeyTile + j] = rows[j * d + c] (j < n), zero for n <= j < kKeyTile:
// the key tile transposed, so that a score row is kKeyTile-wide vectors.
template <class A>
MIXP_KERNEL_BODY inline void transpose_tile(const A *rows, int64_t n, int64_t d, A *kt) {
  for (int64_t c = 0; c < d; ++c) {
    A *col = kt + c * kKeyTile;
    for (int64_t j = 0; j < n; ++j) col[j] = rows[j * d + c];
    for (int64_t j = n; j < kKeyTile; ++j) col[j] = A(0);
  }
}

// out[r * kKeyTile + j] = scale * sum_{c < n} a[r * lda + c] * bt[c * kKeyTile + j]
// (with kAdd: out += that): a rows x kKeyTile tile of a b^T, each dot
// product summed in c order in registers. Fused multiply-adds, written out:
// one instruction in the AVX2 and AVX-512 versions and libm's exact fma in
// the baseline one, so every version rounds alike (the library's
// -ffp-contract=off makes no FMA of its own).
template <class A, bool kAdd = false>
MIXP_KERNEL_BODY inline void product_tile(const A *a, int64_t lda, int64_t rows, const A *bt, int64_t n,
                                          A scale, A *out) {
  for (int64_t r = 0; r < rows; ++r) {
    A acc[kKeyTile] = {};
    const A *ar = a + r * lda;
    for (int64_t c = 0; c < n; ++c) {
      const A x = ar[c];
      const A *br = bt + c * kKeyTile;
      for (int64_t j = 0; j < kKeyTile; ++j) acc[j] = std::fma(x, br[j], acc[j]);
    }
    A *o = out + r * kKeyTile;
    for (int64_t j = 0; j < kKeyTile; ++j) {
      if constexpr (kAdd) o[j] += acc[j] * scale;
      else o[j] = acc[j] * scale;
    }
  }
}

// t[c * ld + r] = rows[r * d + c] for r < n: a tile of rows transposed.
template <class A>
MIXP_KERNEL_BODY inline void transpose_rows(const A *rows, int64_t n, int64_t d, int64_t ld, A *t) {
  for (int64_t c = 0; c < d; ++c)
    for (int64_t r = 0; r < n; ++r) t[c * ld + r] = rows[r * d + c];
}

// The keys of a key tile that query i sees: the first `visible` of `cols`.
inline int64_t visible_keys(bool causal, int64_t i, int64_t j0, int64_t cols) noexcept {
  if (!causal) return cols;
  return std::clamp<int64_t>(i - j0 + 1, 0, cols);
}

// Dropout's keep test for n elements of the flattened [B, H, L, S]
// probabilities from index `first` on: element e reads word e % 4 of the
// Philox block offset + e / 4, as CpuBackend::dropout_mask does, and is kept
// when its 24 bits are >= keep_from (= ceil(p * 2^24), its integer test).
MIXP_KERNEL_BODY inline void keep_mask(uint64_t seed, uint64_t offset, uint64_t first, int64_t n,
                                       uint32_t keep_from, uint8_t *keep) {
  uint32_t words[kKeyTile + 8];
  const uint64_t b0 = first / 4, b1 = (first + uint64_t(n) + 3) / 4;
  for (uint64_t blk = b0; blk < b1; ++blk) {
    const Philox4 r = philox4x32_10(offset + blk, 0, seed);
    for (int w = 0; w < 4; ++w) words[(blk - b0) * 4 + w] = r.v[w];
  }
  const uint32_t *from = words + (first - b0 * 4);
  for (int64_t j = 0; j < n; ++j) keep[j] = (from[j] >> 8) >= keep_from ? 1 : 0;
}

// The largest of n values in 8 lanes combined in order; a NaN wins.
template <class A>
MIXP_KERNEL_BODY inline A row_max(const A *x, int64_t n) {
  auto larger = [](A v, A m) { return (v > m || v != v) ? v : m; };
  A lane[8];
  for (int l = 0; l < 8; ++l) lane[l] = -std::numeric_limits<A>::infinity();
  int64_t j = 0;
  for (; j + 8 <= n; j += 8)
    for (int l = 0; l < 8; ++l) lane[l] = larger(x[j + l], lane[l]);
  for (int l = 0; j < n; ++j, ++l) lane[l] = larger(x[j], lane[l]);
  A m = lane[0];
  for (int l = 1; l < 8; ++l) m = larger(lane[l], m);
  return m;
}

// The sum of n values in 8 lanes added in a fixed tree.
template <class A>
MIXP_KERNEL_BODY inline A row_sum(const A *x, int64_t n) {
  A lane[8] = {};
  int64_t j = 0;
  for (; j + 8 <= n; j += 8)
    for (int l = 0; l < 8; ++l) lane[l] += x[j + l];
  for (int l = 0; j < n; ++j, ++l) lane[l] += x[j];
  return ((lane[0] + lane[1]) + (lane[2] + lane[3])) + ((lane[4] + lane[5]) + (lane[6] + lane[7]));
}

// Whether the CPU runs this case fused (dtype, D <= kMaxHeadDim, a unit
// stride along D, consistent shapes; dout too for backward).
bool views_supported(const AttentionArgs &a, bool backward) noexcept;
// Dropout's integer keep threshold ceil(p * 2^24) (keep_mask).
uint32_t keep_from(double p) noexcept;

// Where a thread's tiles live while it runs one call: one allocation.
template <class A>
struct TileBuffers {
  std::unique_ptr<A[]> mem;
  // Zeroed once: the tile products also read the unused rows of a partial
  // tile (their results are never used), which then hold finite values.
  explicit TileBuffers(size_t n) : mem(new A[n]()) {}
  A *at(size_t off) noexcept { return mem.get() + off; }
};

}  // namespace mixp::cpu::flash
