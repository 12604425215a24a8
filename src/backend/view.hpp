// Part of the backend contract (backend.hpp): a View, how every kernel sees
// a tensor -- memory on the backend's device, a dtype, a shape and strides
// in elements (0 for a broadcast dimension).
#pragma once
#include <cstdint>

#include "core/dtype.hpp"

namespace mixp {

struct View {
  void *data = nullptr;
  DType dtype = MIXP_F32;
  int ndim = 0;
  int64_t shape[MIXP_MAX_DIMS] = {};
  int64_t strides[MIXP_MAX_DIMS] = {};
  int64_t numel() const noexcept {
    int64_t n = 1;
    for (int i = 0; i < ndim; ++i) n *= shape[i];
    return n;
  }
};

}  // namespace mixp
