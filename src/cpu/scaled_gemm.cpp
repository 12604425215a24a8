// The scaled fp8 product on the CPU (Backend::scaled_gemm; the contract is
// ScaledGemmArgs in backend/backend.hpp). Every E4M3 and E5M2 value is
// exact in bf16 and every product of two of them exact in fp32, so the
// operands are widened to bf16 and multiplied on the bf16 path
// (gemm_bf16_into_f32: AMX / AVX512-BF16 where present, fp32 elsewhere)
// with fp32 accumulation: the result is exact up to that accumulation's
// roundings. The scales are read where they live (host memory here) and
// applied once, in the epilogue that also adds the bias, takes the amax
// and rounds into D.
#include <cmath>
#include <limits>
#include <vector>

#include "cpu/convert_row.hpp"
#include "cpu/cpu_backend.hpp"

namespace mixp {

namespace {

// An fp8 matrix (any row/column strides) into a contiguous bf16 one.
void widen_to_bf16(const View &v, int64_t rows, int64_t cols, int64_t rs, int64_t cs, bf16 *out) {
  dispatch_fp8(v.dtype, [&](auto tag) {
    using F = decltype(tag);
    const F *src = static_cast<const F *>(v.data);
#pragma omp parallel for schedule(static) if (rows * cols > 65536)
    for (int64_t i = 0; i < rows; ++i) cpu::convert_row<F, bf16>(src + i * rs, cs, out + i * cols, 1, cols);
  });
}

float read_scalar(const View &v) { return *static_cast<const float *>(v.data); }

// The factor the product is multiplied by: NaN unless both scales are
// finite and positive, so a bad scale poisons D (and amax) where the
// numerics checker and the loss scaler see it, without a host check.
float combined_scale(float sa, float sb) {
  const bool ok = std::isfinite(sa) && sa > 0.0f && std::isfinite(sb) && sb > 0.0f;
  return ok ? sa * sb : std::numeric_limits<float>::quiet_NaN();
}

// d = scale * p + bias (fp32), rounded once into D's type; returns max |d|
// of D as stored (NaN when any d is NaN).
template <class T>
float epilogue(const float *p, float scale, const View &bias, T *d, int64_t m, int64_t n) {
  std::vector<float> bias32(size_t(n), 0.0f);
  if (bias.data) {
    if (bias.dtype == MIXP_F16) cpu::convert_row(static_cast<const f16 *>(bias.data), 1, bias32.data(), 1, n);
    else cpu::convert_row(static_cast<const bf16 *>(bias.data), 1, bias32.data(), 1, n);
  }
  float amax = 0.0f;
  bool nan = false;
#pragma omp parallel if (m * n > 65536)
  {
    float local = 0.0f;
    bool local_nan = false;
#pragma omp for schedule(static)
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        const T v = store<T>(scale * p[i * n + j] + bias32[size_t(j)]);
        const float stored = std::fabs(float(load<T>(v)));
        local_nan = local_nan || std::isnan(stored);
        local = stored > local ? stored : local;
        d[i * n + j] = v;
      }
#pragma omp critical
    {
      amax = local > amax ? local : amax;
      nan = nan || local_nan;
    }
  }
  return nan ? std::numeric_limits<float>::quiet_NaN() : amax;
}

}  // namespace

void CpuBackend::scaled_gemm(const ScaledGemmArgs &g) {
  const int64_t m = g.m, n = g.n, k = g.k;
  std::vector<float> p(size_t(m * n), 0.0f);
  if (k > 0 && m > 0 && n > 0) {
    std::vector<bf16> a16(size_t(m * k)), b16(size_t(k * n));
    widen_to_bf16(g.a, m, k, g.a.strides[0], g.a.strides[1], a16.data());
    widen_to_bf16(g.b, k, n, g.b.strides[0], g.b.strides[1], b16.data());
    gemm_bf16_into_f32(a16.data(), b16.data(), p.data(), m, n, k);
  }
  const float scale = combined_scale(read_scalar(g.scale_a), read_scalar(g.scale_b));
  const float amax = dispatch_float(g.d.dtype, [&](auto tag) {
    using T = decltype(tag);
    return epilogue<T>(p.data(), scale, g.bias, static_cast<T *>(g.d.data), m, n);
  });
  if (g.amax.data) *static_cast<float *>(g.amax.data) = amax;
}

}  // namespace mixp
