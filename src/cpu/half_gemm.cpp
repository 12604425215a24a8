// The blocked GEMM of half_gemm.hpp, in the shape of BLIS's AVX2 one: B is
// packed in blocks of kc x nc as 16-wide panels, A in blocks of mc x kc as
// 6-high panels, and a 6x16 micro-kernel keeps its tile in 12 ymm
// accumulators. Packing is where the halves become floats: a row-major
// operand converts 16 contiguous elements per packed row, a k-contiguous one
// (A row-major, or B = W^T of a linear layer) is transposed 8x8 in
// registers as it converts.
//
// Each tile's arithmetic is fixed by the blocking, not by which thread runs
// it: results do not depend on the thread count.
#include "cpu/half_gemm.hpp"

#include <dnnl.h>
#include <immintrin.h>
#include <omp.h>

#include <algorithm>
#include <cstdint>

#include "core/dtype.hpp"
#include "cpu/cpu_features.hpp"
#include "cpu/simd.hpp"

namespace mixp::cpu {

bool half_gemm_chosen() noexcept {
  static const bool ok = [] {
    const CpuFeatures &f = cpu_features();
    const int isa = int(dnnl_get_effective_cpu_isa()), avx2 = int(dnnl_cpu_isa_avx2);
    return f.avx2 && f.fma && f.f16c && (isa & avx2) == avx2;
  }();
  return ok;
}

bool half_gemm_wide() noexcept { return kernel_isa() == KernelIsa::avx512; }

namespace {

#define MIXP_AVX2 __attribute__((target("avx2,fma,f16c")))

constexpr int64_t kMR = 6, kNR = 16;
// A packed row holds 8 floats of which 6 are used: one aligned store per row
// when packing (two unaligned ones for 6 floats cost more than the rows'
// extra bytes in L1).
constexpr int64_t kAS = 8;
constexpr int64_t kMaxKC = 1024;  // a packed 16-wide B panel is at most 64 KiB
constexpr int64_t kMaxMC = 144;   // a packed A block is at most 768 KiB: L2
constexpr int64_t kMaxNC = 1024;  // a packed B block is at most 4 MiB per thread

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }
int64_t round_up(int64_t a, int64_t b) { return ceil_div(a, b) * b; }

// 64-byte aligned floats from a scratch buffer, so that every packed 16-wide
// row is one cache line.
float *aligned(ScratchBuffer &s, int64_t n) {
  float *p = s.get(size_t(n + 16));
  return reinterpret_cast<float *>((reinterpret_cast<uintptr_t>(p) + 63) & ~uintptr_t(63));
}

template <class H>
MIXP_AVX2 inline __m256 widen8(const H *p);
template <>
MIXP_AVX2 inline __m256 widen8<bf16>(const bf16 *p) {
  const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i *>(p));
  return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
}
template <>
MIXP_AVX2 inline __m256 widen8<f16>(const f16 *p) {
  return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i *>(p)));
}

// Rounds 16 floats to nearest even and stores them: the same bits as
// store<H>() (dtype.hpp) element by element, NaNs quieted.
template <class H>
MIXP_AVX2 inline void narrow16(__m256 lo, __m256 hi, H *dst);
MIXP_AVX2 inline __m256i round_bf16(__m256 v) {
  const __m256i u = _mm256_castps_si256(v), hi = _mm256_srli_epi32(u, 16);
  const __m256i bias = _mm256_add_epi32(_mm256_set1_epi32(0x7fff), _mm256_and_si256(hi, _mm256_set1_epi32(1)));
  const __m256i rounded = _mm256_srli_epi32(_mm256_add_epi32(u, bias), 16);
  const __m256i quiet = _mm256_or_si256(hi, _mm256_set1_epi32(0x40));
  const __m256i nan = _mm256_cmpgt_epi32(_mm256_and_si256(u, _mm256_set1_epi32(0x7fffffff)),
                                         _mm256_set1_epi32(0x7f800000));
  return _mm256_blendv_epi8(rounded, quiet, nan);
}
template <>
MIXP_AVX2 inline void narrow16<bf16>(__m256 lo, __m256 hi, bf16 *dst) {
  // packus works within 128-bit lanes; the permute puts the halves in order.
  const __m256i packed = _mm256_permute4x64_epi64(_mm256_packus_epi32(round_bf16(lo), round_bf16(hi)), 0xD8);
  _mm256_storeu_si256(reinterpret_cast<__m256i *>(dst), packed);
}
template <>
MIXP_AVX2 inline void narrow16<f16>(__m256 lo, __m256 hi, f16 *dst) {
  _mm_storeu_si128(reinterpret_cast<__m128i *>(dst), _mm256_cvtps_ph(lo, _MM_FROUND_TO_NEAREST_INT));
  _mm_storeu_si128(reinterpret_cast<__m128i *>(dst + 8), _mm256_cvtps_ph(hi, _MM_FROUND_TO_NEAREST_INT));
}

MIXP_AVX2 inline void transpose8x8(__m256 r[8]) {
  __m256 t[8], s[8];
  for (int i = 0; i < 4; ++i) {
    t[2 * i] = _mm256_unpacklo_ps(r[2 * i], r[2 * i + 1]);
    t[2 * i + 1] = _mm256_unpackhi_ps(r[2 * i], r[2 * i + 1]);
  }
  for (int i = 0; i < 2; ++i) {
    s[4 * i + 0] = _mm256_shuffle_ps(t[4 * i], t[4 * i + 2], _MM_SHUFFLE(1, 0, 1, 0));
    s[4 * i + 1] = _mm256_shuffle_ps(t[4 * i], t[4 * i + 2], _MM_SHUFFLE(3, 2, 3, 2));
    s[4 * i + 2] = _mm256_shuffle_ps(t[4 * i + 1], t[4 * i + 3], _MM_SHUFFLE(1, 0, 1, 0));
    s[4 * i + 3] = _mm256_shuffle_ps(t[4 * i + 1], t[4 * i + 3], _MM_SHUFFLE(3, 2, 3, 2));
  }
  for (int i = 0; i < 4; ++i) {
    r[i] = _mm256_permute2f128_ps(s[i], s[i + 4], 0x20);
    r[i + 4] = _mm256_permute2f128_ps(s[i], s[i + 4], 0x31);
  }
}

// Packs kc rows of up to 16 columns of B (src = &B[p0][j0]) as dst[p][16],
// zero beyond the w valid columns.
template <class H>
MIXP_AVX2 void pack_b_panel(const H *src, int64_t rs, int64_t cs, int64_t kc, int64_t w, float *dst) {
  if (w == kNR && cs == 1) {
    for (int64_t p = 0; p < kc; ++p) {
      _mm256_store_ps(dst + p * kNR, widen8(src + p * rs));
      _mm256_store_ps(dst + p * kNR + 8, widen8(src + p * rs + 8));
    }
    return;
  }
  int64_t p = 0;
  if (w == kNR && rs == 1) {
    for (; p + 8 <= kc; p += 8) {
      for (int64_t half = 0; half < 2; ++half) {
        __m256 r[8];
        for (int t = 0; t < 8; ++t) r[t] = widen8(src + (half * 8 + t) * cs + p);
        transpose8x8(r);
        for (int t = 0; t < 8; ++t) _mm256_store_ps(dst + (p + t) * kNR + half * 8, r[t]);
      }
    }
  }
  for (int64_t j = 0; j < kNR; ++j)
    for (int64_t q = p; q < kc; ++q) dst[q * kNR + j] = j < w ? load<H>(src[q * rs + j * cs]) : 0.0f;
}

// Packs up to 6 rows of kc columns of A (src = &A[i0][p0]) as dst[p][8],
// zero beyond the h valid rows (the last two of each row unused). may_read_8: rows i0+6 and i0+7 exist, so a
// column-major operand can be read 8 rows at a time.
template <class H>
MIXP_AVX2 void pack_a_panel(const H *src, int64_t rs, int64_t cs, int64_t kc, int64_t h, bool may_read_8,
                            float *dst) {
  if (h == kMR && rs == 1 && may_read_8) {
    for (int64_t p = 0; p < kc; ++p) _mm256_store_ps(dst + p * kAS, widen8(src + p * cs));
    return;
  }
  int64_t p = 0;
  if (h == kMR && cs == 1) {
    for (; p + 8 <= kc; p += 8) {
      __m256 r[8];
      for (int t = 0; t < 8; ++t) r[t] = t < kMR ? widen8(src + t * rs + p) : _mm256_setzero_ps();
      transpose8x8(r);
      for (int t = 0; t < 8; ++t) _mm256_store_ps(dst + (p + t) * kAS, r[t]);
    }
  }
  for (int64_t i = 0; i < kMR; ++i)
    for (int64_t q = p; q < kc; ++q) dst[q * kAS + i] = i < h ? load<H>(src[i * rs + q * cs]) : 0.0f;
}

// acc[6][16] (32-byte aligned) = sum over p of a[p][0..5] x b[p][0..15] (a's rows 8 apart).
MIXP_AVX2 void kernel_6x16(int64_t kc, const float *a, const float *b, float *acc) {
  __m256 c00 = _mm256_setzero_ps(), c01 = c00, c10 = c00, c11 = c00, c20 = c00, c21 = c00;
  __m256 c30 = c00, c31 = c00, c40 = c00, c41 = c00, c50 = c00, c51 = c00;
  for (int64_t p = 0; p < kc; ++p, a += kAS, b += kNR) {
    const __m256 b0 = _mm256_load_ps(b), b1 = _mm256_load_ps(b + 8);
    __m256 x = _mm256_broadcast_ss(a);
    c00 = _mm256_fmadd_ps(x, b0, c00);
    c01 = _mm256_fmadd_ps(x, b1, c01);
    x = _mm256_broadcast_ss(a + 1);
    c10 = _mm256_fmadd_ps(x, b0, c10);
    c11 = _mm256_fmadd_ps(x, b1, c11);
    x = _mm256_broadcast_ss(a + 2);
    c20 = _mm256_fmadd_ps(x, b0, c20);
    c21 = _mm256_fmadd_ps(x, b1, c21);
    x = _mm256_broadcast_ss(a + 3);
    c30 = _mm256_fmadd_ps(x, b0, c30);
    c31 = _mm256_fmadd_ps(x, b1, c31);
    x = _mm256_broadcast_ss(a + 4);
    c40 = _mm256_fmadd_ps(x, b0, c40);
    c41 = _mm256_fmadd_ps(x, b1, c41);
    x = _mm256_broadcast_ss(a + 5);
    c50 = _mm256_fmadd_ps(x, b0, c50);
    c51 = _mm256_fmadd_ps(x, b1, c51);
  }
  _mm256_store_ps(acc + 0, c00);
  _mm256_store_ps(acc + 8, c01);
  _mm256_store_ps(acc + 16, c10);
  _mm256_store_ps(acc + 24, c11);
  _mm256_store_ps(acc + 32, c20);
  _mm256_store_ps(acc + 40, c21);
  _mm256_store_ps(acc + 48, c30);
  _mm256_store_ps(acc + 56, c31);
  _mm256_store_ps(acc + 64, c40);
  _mm256_store_ps(acc + 72, c41);
  _mm256_store_ps(acc + 80, c50);
  _mm256_store_ps(acc + 88, c51);
}

#define MIXP_AVX512 __attribute__((target("avx512f,avx2,fma,f16c")))

// acc[12][16] (64-byte aligned): two 6-row A panels against one B panel,
// one zmm accumulator per row of C (12 independent FMA chains, enough to
// cover the FMA latency on two ports). Each element of C sees the same FMAs
// in the same order as in kernel_6x16, so results are the same bits.
MIXP_AVX512 void kernel_12x16(int64_t kc, const float *a0, const float *a1, const float *b, float *acc) {
  __m512 c[12];
#pragma GCC unroll 12
  for (int i = 0; i < 12; ++i) c[i] = _mm512_setzero_ps();
  for (int64_t p = 0; p < kc; ++p, a0 += kAS, a1 += kAS, b += kNR) {
    const __m512 bv = _mm512_load_ps(b);
#pragma GCC unroll 6
    for (int i = 0; i < 6; ++i) c[i] = _mm512_fmadd_ps(_mm512_set1_ps(a0[i]), bv, c[i]);
#pragma GCC unroll 6
    for (int i = 0; i < 6; ++i) c[6 + i] = _mm512_fmadd_ps(_mm512_set1_ps(a1[i]), bv, c[6 + i]);
  }
#pragma GCC unroll 12
  for (int i = 0; i < 12; ++i) _mm512_store_ps(acc + 16 * i, c[i]);
}

// The part of C one thread computes: rows [m0, m1) and columns [n0, n1) of
// every matrix in [b0, b1) of the batch. Threads share nothing they write
// (each packs the panels it reads itself), so a product needs no barrier:
// a shared packed block cost more in cache lines moving between cores than
// packing it twice.
struct Part {
  int64_t b0, b1, m0, m1, n0, n1;
};

struct Blocking {
  int64_t kc, mc, nc;  // block sizes (the last block of each may be smaller)
  bool split_k;        // more than one k block: partial sums kept in fp32
};

Blocking blocking(int64_t m, int64_t n, int64_t k) {
  Blocking b;
  const int64_t kb = ceil_div(k, kMaxKC), mb = ceil_div(m, kMaxMC);
  b.kc = ceil_div(k, kb);
  b.mc = round_up(ceil_div(m, mb), kMR);
  b.nc = std::min(round_up(n, kNR), kMaxNC);
  b.split_k = kb > 1;
  return b;
}

struct Buffers {
  float *a, *b, *partial;  // packed A block, packed B block, mc x nc partial sums
};

template <class H>
struct Matrix {
  const GemmArgs &g;
  const Blocking &bl;
  Buffers buf;
  const H *A, *B;
  H *C;

  // The current block.
  int64_t jc = 0, nc = 0, pc = 0, kc = 0, ic = 0, mc = 0;
  bool first = true, last = true;

  // Rows [m0, m1), columns [n0, n1). The k blocks are the innermost loop so
  // that partial sums need only one mc x nc block of fp32; with a single k
  // block, B is packed once for all row blocks.
  MIXP_AVX2 void run(int64_t m0, int64_t m1, int64_t n0, int64_t n1) {
    for (jc = n0; jc < n1; jc += bl.nc) {
      nc = std::min(bl.nc, n1 - jc);
      for (ic = m0; ic < m1; ic += bl.mc) {
        mc = std::min(bl.mc, m1 - ic);
        for (pc = 0; pc < g.k; pc += bl.kc) {
          kc = std::min(bl.kc, g.k - pc);
          first = pc == 0;
          last = pc + kc >= g.k;
          const int64_t npanels = ceil_div(nc, kNR), mpanels = ceil_div(mc, kMR);
          if (bl.split_k || ic == m0)
            for (int64_t jp = 0; jp < npanels; ++jp) pack_b(jp);
          for (int64_t ip = 0; ip < mpanels; ++ip) pack_a(ip);
          for (int64_t jp = 0; jp < npanels; ++jp) tiles(jp, mpanels);
        }
      }
    }
  }

  MIXP_AVX2 void pack_b(int64_t jp) {
    const int64_t j0 = jc + jp * kNR;
    pack_b_panel<H>(B + pc * g.b_rs + j0 * g.b_cs, g.b_rs, g.b_cs, kc, std::min(kNR, jc + nc - j0),
                    buf.b + jp * kc * kNR);
  }

  MIXP_AVX2 void pack_a(int64_t ip) {
    const int64_t i0 = ic + ip * kMR;
    pack_a_panel<H>(A + i0 * g.a_rs + pc * g.a_cs, g.a_rs, g.a_cs, kc, std::min(kMR, ic + mc - i0), i0 + 8 <= g.m,
                    buf.a + ip * kc * kAS);
  }

  MIXP_AVX2 void tiles(int64_t jp, int64_t mpanels) {
    const int64_t j0 = jc + jp * kNR, w = std::min(kNR, jc + nc - j0);
    alignas(64) float acc[2 * kMR * kNR];
    int64_t ip = 0;
    if (half_gemm_wide())
      for (; ip + 2 <= mpanels; ip += 2) {
        const int64_t i0 = ic + ip * kMR;
        kernel_12x16(kc, buf.a + ip * kc * kAS, buf.a + (ip + 1) * kc * kAS, buf.b + jp * kc * kNR, acc);
        store_tile(acc, i0, kMR, j0, w);
        store_tile(acc + kMR * kNR, i0 + kMR, std::min(kMR, ic + mc - i0 - kMR), j0, w);
      }
    for (; ip < mpanels; ++ip) {
      const int64_t i0 = ic + ip * kMR;
      kernel_6x16(kc, buf.a + ip * kc * kAS, buf.b + jp * kc * kNR, acc);
      store_tile(acc, i0, std::min(kMR, ic + mc - i0), j0, w);
    }
  }

  // Partial sums go to fp32; the last k block adds them, applies alpha,
  // beta * C and the bias in that order, and rounds once into C.
  MIXP_AVX2 void store_tile(const float *acc, int64_t i0, int64_t h, int64_t j0, int64_t w) {
    const H *bias = static_cast<const H *>(g.bias);
    for (int64_t i = 0; i < h; ++i) {
      const float *a = acc + i * kNR;
      float *part = buf.partial ? buf.partial + (i0 - ic + i) * bl.nc + (j0 - jc) : nullptr;
      if (!last) {
        for (int64_t j = 0; j < w; ++j) part[j] = first ? a[j] : part[j] + a[j];
        continue;
      }
      H *c = C + (i0 + i) * g.c_rs + j0;
      if (w == kNR) {
        __m256 v0 = _mm256_load_ps(a), v1 = _mm256_load_ps(a + 8);
        if (!first) {
          v0 = _mm256_add_ps(v0, _mm256_loadu_ps(part));
          v1 = _mm256_add_ps(v1, _mm256_loadu_ps(part + 8));
        }
        if (g.alpha != 1.0f) {
          const __m256 s = _mm256_set1_ps(g.alpha);
          v0 = _mm256_mul_ps(v0, s);
          v1 = _mm256_mul_ps(v1, s);
        }
        if (g.beta != 0.0f) {
          const __m256 s = _mm256_set1_ps(g.beta);
          v0 = _mm256_add_ps(v0, _mm256_mul_ps(s, widen8(c)));
          v1 = _mm256_add_ps(v1, _mm256_mul_ps(s, widen8(c + 8)));
        }
        if (bias) {
          v0 = _mm256_add_ps(v0, widen8(bias + j0));
          v1 = _mm256_add_ps(v1, widen8(bias + j0 + 8));
        }
        narrow16(v0, v1, c);
        continue;
      }
      for (int64_t j = 0; j < w; ++j) {
        float v = a[j];
        if (!first) v = v + part[j];
        if (g.alpha != 1.0f) v = v * g.alpha;
        if (g.beta != 0.0f) v = v + g.beta * load<H>(c[j]);
        if (bias) v = v + load<H>(bias[j0 + j]);
        c[j] = store<H>(v);
      }
    }
  }
};

template <class H>
MIXP_AVX2 void run_part(const GemmArgs &g, const Blocking &bl, const Buffers &buf, const Part &p) {
  for (int64_t b = p.b0; b < p.b1; ++b) {
    Matrix<H> mat{g, bl, buf, static_cast<const H *>(g.a) + b * g.a_batch,
                  static_cast<const H *>(g.b) + b * g.b_batch, static_cast<H *>(g.c) + b * g.c_batch};
    mat.run(p.m0, p.m1, p.n0, p.n1);
  }
}

// Thread t's part: whole matrices when the batch has enough small ones for
// every thread (attention's heads), else a tm x tn grid over each matrix's
// 6-row and 16-column panels, columns first.
Part part_of(const GemmArgs &g, int threads, int t) {
  const double flops = double(g.m) * double(g.n) * double(g.k);
  if (g.batch >= threads && flops <= double(1 << 21))
    return {g.batch * t / threads, g.batch * (t + 1) / threads, 0, g.m, 0, g.n};
  const int64_t mp = ceil_div(g.m, kMR), np = ceil_div(g.n, kNR);
  const int64_t tn = std::min<int64_t>(threads, np), tm = std::min<int64_t>(threads / tn, mp);
  if (t >= tn * tm) return {0, 0, 0, 0, 0, 0};
  const int64_t i = t / tn, j = t % tn;
  return {0, g.batch, std::min(g.m, mp * i / tm * kMR), std::min(g.m, mp * (i + 1) / tm * kMR),
          std::min(g.n, np * j / tn * kNR), std::min(g.n, np * (j + 1) / tn * kNR)};
}

template <class H>
void run(const GemmArgs &g, HalfGemmScratch &scratch) {
  const double flops = double(g.m) * double(g.n) * double(g.k) * double(g.batch);
  const int threads = flops > double(1 << 16) ? omp_get_max_threads() : 1;
  if (scratch.per_thread.size() < size_t(threads)) scratch.per_thread.resize(size_t(threads));
  std::vector<Part> parts;
  std::vector<Blocking> blocks;
  std::vector<Buffers> bufs;
  for (int t = 0; t < threads; ++t) {
    const Part p = part_of(g, threads, t);
    const Blocking bl = blocking(std::max<int64_t>(p.m1 - p.m0, 1), std::max<int64_t>(p.n1 - p.n0, 1), g.k);
    HalfGemmBuffers &s = scratch.per_thread[size_t(t)];
    parts.push_back(p);
    blocks.push_back(bl);
    bufs.push_back({aligned(s.packed_a, ceil_div(bl.mc, kMR) * kAS * bl.kc), aligned(s.packed_b, bl.kc * bl.nc),
                    bl.split_k ? aligned(s.partial, bl.mc * bl.nc) : nullptr});
  }
#pragma omp parallel num_threads(threads) if (threads > 1)
  {
    const size_t t = size_t(omp_get_thread_num());
    run_part<H>(g, blocks[t], bufs[t], parts[t]);
  }
}

}  // namespace

void half_gemm(const GemmArgs &g, HalfGemmScratch &scratch) {
  if (g.dtype == MIXP_BF16)
    run<bf16>(g, scratch);
  else
    run<f16>(g, scratch);
}

}  // namespace mixp::cpu
