// CPU kernels of loss scaling and gradient clipping: the fused non-finite
// check and unscale, the loss-scale update, the global gradient norm and the
// in-place gradient scaling. The scalar operands live in (host) memory like
// every other tensor of a CPU session, so the same code path a GPU takes,
// with no host round trip, is exercised here.
//
// Determinism: the non-finite test is an OR and the norm is summed in fixed
// blocks added in block order, so no result depends on the thread count.
#include <algorithm>
#include <cmath>
#include <vector>

#include "backend/loss_scale_rule.hpp"
#include "cpu/cpu_backend.hpp"
#include "cpu/half_convert.hpp"
#include "cpu/simd.hpp"

namespace mixp {
namespace {

// Below this many elements a loop runs on the calling thread.
constexpr int64_t kParallelMin = 1 << 15;
// Block length of the fixed-order sum of squares.
constexpr int64_t kNormBlock = 4096;

float &scalar_f32(const View &v) noexcept { return *static_cast<float *>(v.data); }
int32_t &scalar_i32(const View &v) noexcept { return *static_cast<int32_t *>(v.data); }

// Multiplies n contiguous elements of one gradient by `factor` in its
// compute type; returns whether any element was non-finite beforehand.
// x - x is 0 for every finite x and NaN otherwise: a test without a branch,
// so the loops vectorise (std::isfinite does not).
template <class T>
bool check_and_scale_chunk(T *p, int64_t n, acc_t<T> f, bool multiply) {
  if constexpr (std::is_same_v<T, f16>) {  // float tiles (half_convert.hpp)
    alignas(64) float t[cpu::kHalfTile];
    bool bad = false;
    for (int64_t b = 0; b < n; b += cpu::kHalfTile) {
      const int64_t len = std::min(cpu::kHalfTile, n - b);
      cpu::f16_to_f32(p + b, t, len);
      bad |= check_and_scale_chunk(t, len, f, multiply);
      if (multiply) cpu::f32_to_f16(t, p + b, len);
    }
    return bad;
  }
  int bad = 0;
  cpu::run_kernel([&]() MIXP_KERNEL_BODY {
    using A = acc_t<T>;
    if (multiply) {
      for (int64_t i = 0; i < n; ++i) {
        const A v = load<T>(p[i]);
        bad |= std::isunordered(v - v, A(0));
        p[i] = store<T>(v * f);
      }
    } else {
      for (int64_t i = 0; i < n; ++i) {
        const A v = load<T>(p[i]);
        bad |= std::isunordered(v - v, A(0));
      }
    }
  });
  return bad != 0;
}

template <class T>
bool check_and_scale(T *p, int64_t n, float factor, bool multiply) {
  const int64_t chunks = (n + kParallelMin - 1) / kParallelMin;
  bool bad = false;
#pragma omp parallel for schedule(static) reduction(|| : bad) if (chunks > 1)
  for (int64_t c = 0; c < chunks; ++c) {
    const int64_t lo = c * kParallelMin;
    if (check_and_scale_chunk(p + lo, std::min(n - lo, kParallelMin), acc_t<T>(factor), multiply)) bad = true;
  }
  return bad;
}

template <class T>
double block_sum_sq(const T *p, int64_t n) noexcept {
  double s = 0.0;
  for (int64_t i = 0; i < n; ++i) {
    const double v = double(load<T>(p[i]));
    s += v * v;
  }
  return s;
}

}  // namespace

void CpuBackend::non_finite_check_and_unscale(const View *grads, int n, const View &found_inf,
                                              const View &inv_scale) {
  const float inv = scalar_f32(inv_scale);
  const bool multiply = inv != 1.0f;
  bool bad = false;
  for (int i = 0; i < n; ++i) {
    const View &g = grads[i];
    dispatch_float(g.dtype, [&](auto tag) {
      using T = decltype(tag);
      if (check_and_scale(static_cast<T *>(g.data), g.numel(), inv, multiply)) bad = true;
    });
  }
  if (bad) scalar_f32(found_inf) = 1.0f;
}

void CpuBackend::update_scale(const ScaleUpdate &u) {
  LossScaleState st{scalar_f32(u.scale), scalar_i32(u.growth_tracker), scalar_i32(u.bad_count),
                    scalar_i32(u.hysteresis_left)};
  update_loss_scale(st, scalar_f32(u.found_inf), u.rule);
  scalar_f32(u.scale) = st.scale;
  scalar_i32(u.growth_tracker) = st.growth_tracker;
  scalar_i32(u.bad_count) = st.bad_count;
  scalar_i32(u.hysteresis_left) = st.hysteresis_left;
}

void CpuBackend::grad_norm_sq(const View *grads, int n, const View &out) {
  // Blocks of every tensor in one flat list, so that one parallel loop
  // covers many small tensors as well as one large one.
  std::vector<int64_t> first(size_t(n) + 1, 0);
  for (int i = 0; i < n; ++i)
    first[size_t(i) + 1] = first[size_t(i)] + (grads[i].numel() + kNormBlock - 1) / kNormBlock;
  const int64_t nblocks = first[size_t(n)];
  std::vector<double> partial(size_t(nblocks), 0.0);
#pragma omp parallel for schedule(static) if (nblocks * kNormBlock >= kParallelMin)
  for (int64_t b = 0; b < nblocks; ++b) {
    const int t = int(std::upper_bound(first.begin(), first.end(), b) - first.begin()) - 1;
    const View &g = grads[t];
    const int64_t start = (b - first[size_t(t)]) * kNormBlock;
    const int64_t len = std::min(kNormBlock, g.numel() - start);
    dispatch_float(g.dtype, [&](auto tag) {
      using T = decltype(tag);
      partial[size_t(b)] = block_sum_sq(static_cast<const T *>(g.data) + start, len);
    });
  }
  double s = 0.0;
  for (double p : partial) s += p;
  double_to_element(s, out.data, out.dtype);
}

void CpuBackend::clip_coefficient(const View &norm_sq, double max_norm, const View &total_norm,
                                  const View &coef, const View &found_inf) {
  const float norm = float(std::sqrt(element_to_double(norm_sq.data, norm_sq.dtype)));
  scalar_f32(total_norm) = norm;
  if (!std::isfinite(norm)) {
    scalar_f32(found_inf) = 1.0f;
    scalar_f32(coef) = 1.0f;
    return;
  }
  // torch.nn.utils.clip_grad_norm_: max_norm / (total_norm + 1e-6) in fp32,
  // clamped to 1.
  scalar_f32(coef) = std::min(1.0f, float(max_norm) / (norm + 1e-6f));
}

void CpuBackend::scale_grads(const View *grads, int n, const View &coef) {
  const float c = scalar_f32(coef);
  if (c == 1.0f) return;
  for (int i = 0; i < n; ++i) {
    const View &g = grads[i];
    dispatch_float(g.dtype, [&](auto tag) {
      using T = decltype(tag);
      check_and_scale(static_cast<T *>(g.data), g.numel(), c, true);
    });
  }
}

}  // namespace mixp
