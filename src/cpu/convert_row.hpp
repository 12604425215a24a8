// One row of a float-type conversion, in the multi-versioned kernels: every
// float converts exactly to fp32 or fp64 and is rounded once into the
// destination (from double directly, so f64 -> half never rounds twice);
// between equal types it is a copy.
// Used by copies and casts (memory.cpp) and by the half operands that GEMM
// and convolution widen to fp32 and round back (gemm.cpp, conv_dnnl.cpp).
#pragma once
#include <cstdint>
#include <type_traits>

#include "core/dtype.hpp"
#include "cpu/half_convert.hpp"
#include "cpu/simd.hpp"

namespace mixp::cpu {

// d[i * ds] = s[i * ss] for i in [0, n), converted from S to D.
template <class S, class D>
void convert_row(const S *s, int64_t ss, D *d, int64_t ds, int64_t n) {
  if constexpr (std::is_same_v<S, f16> && std::is_same_v<D, float>) {
    if (ss == 1 && ds == 1) return f16_to_f32(s, d, n);
  } else if constexpr (std::is_same_v<S, float> && std::is_same_v<D, f16>) {
    if (ss == 1 && ds == 1) return f32_to_f16(s, d, n);
  }
  run_kernel([&]() MIXP_KERNEL_BODY {
    if constexpr (std::is_same_v<S, D>) {  // a copy moves bits (a NaN's too)
      for (int64_t i = 0; i < n; ++i) d[i * ds] = s[i * ss];
    } else if constexpr (std::is_same_v<S, double>) {
      for (int64_t i = 0; i < n; ++i) d[i * ds] = store_double<D>(s[i * ss]);
    } else {
      for (int64_t i = 0; i < n; ++i) d[i * ds] = store<D>(acc_t<D>(load<S>(s[i * ss])));
    }
  });
}

}  // namespace mixp::cpu
