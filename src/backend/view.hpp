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

// Dense strides for `like`'s shape with its dimensions in the order its
// strides give them (largest stride outermost): what PyTorch's empty_like
// keeps of a layout. A gradient or output laid
// out this way is a view wherever the tensor it belongs to was one (the
// heads of a [B, T, 3, H, D] projection viewed as [B, H, T, D] get
// [B, T, H, D]-dense buffers, which transpose and reshape back without a
// copy). Dimensions of extent 1 address nothing: they take no part in the
// order, so `like` and a view of it with extent-1 dims added or removed
// get the same strides on every other dim. A `like` whose elements overlap
// (a broadcast's stride 0, two dims with one stride) gives no order:
// row-major strides then, as empty_like gives them.
inline void dense_strides_in_order(const View &like, int64_t *out) noexcept {
  int order[MIXP_MAX_DIMS];
  int n = 0;
  bool ordered = true;
  for (int i = 0; i < like.ndim; ++i) {
    if (like.shape[i] == 1) continue;
    int j = n++;
    for (; j > 0 && like.strides[order[j - 1]] < like.strides[i]; --j) order[j] = order[j - 1];
    order[j] = i;
    // (the dims after j have smaller strides: only order[j - 1] can tie)
    if (like.strides[i] <= 0 || (j > 0 && like.strides[order[j - 1]] == like.strides[i])) ordered = false;
  }
  if (!ordered) {
    n = 0;
    for (int i = 0; i < like.ndim; ++i)
      if (like.shape[i] != 1) order[n++] = i;
  }
  int64_t st = 1;
  for (int j = n - 1; j >= 0; --j) {
    out[order[j]] = st;
    st *= like.shape[order[j]] > 0 ? like.shape[order[j]] : 1;
  }
  // An extent-1 dim: the stride of the dims inside it, as a packed layout
  // would give it (any value addresses the same elements).
  for (int i = like.ndim - 1; i >= 0; --i)
    if (like.shape[i] == 1) out[i] = i + 1 < like.ndim ? out[i + 1] * like.shape[i + 1] : 1;
}

}  // namespace mixp
