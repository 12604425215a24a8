// Part of the backend contract (backend.hpp): the arguments of the
// declinable kernels, the Backend methods a device may decline call by call
// (fused attention, training batch norm as one library call). A View is
// backend/view.hpp's.
#pragma once
#include <cstdint>

#include "backend/view.hpp"

namespace mixp {

// ---- fused attention (a declinable kernel, Backend::attention_forward) ----
// One scaled_dot_product_attention over batch*heads (b, h) pairs:
//   o = softmax(scale * q k^T + causal mask) (dropped out) v, per (b, h),
// q [B, H, L, D], k and v [B, H, S, D] and o [B, H, L, D] as 4-D Views of
// one float dtype with any strides but a unit stride along D (q, k and v
// may be strided views of one [B, T, 3, H, D] projection, read in place).
// The causal mask hides key j from query i where j > i (top-left aligned,
// as the composed path's). lse [B, H, L] (contiguous; F64 for F64 data,
// else F32) receives each row's log-sum-exp of scale * q k^T (masked), all
// backward needs besides q, k, v, o and dO: the L x S probabilities are
// never stored. With dropout_p > 0, each probability is kept with chance
// 1 - dropout_p and scaled by 1 / (1 - dropout_p), its mask drawn from the
// Philox stream (seed, offset): on the CPU the composed path's own bits
// (philox_uniform at ((b * H + h) * L + i) * S + j >= dropout_p); a device
// library may draw its own (CUDA: cuDNN's), the same again in the backward.
struct AttentionArgs {
  View q, k, v, o, lse;
  double scale = 1.0;
  bool causal = false;
  double dropout_p = 0.0;
  uint64_t seed = 0, offset = 0;
  // Backward only: the gradient of o (strided as o may be) and the
  // gradients of q, k and v (overwritten; any strides with a unit stride
  // along D). The op lays o, dq, dk and dv out by dense_strides_in_order of
  // q, q, k and v (view.hpp), and a backend may expect dO in o's layout:
  // CUDA plans its graphs for exactly these and copies through scratch
  // when handed others.
  View dout, dq, dk, dv;
};

// ---- batch norm in one library call (declinable kernels) --------------------
// batch_norm in training mode, x [outer, c, inner] as batch_norm_stats
// takes it (NCHW: N, C, H*W; NHWC and 2-D: rows, C, 1). Forward: writes y,
// and mean and invstd (stat Views [c]) as batch_norm_stats would, and, when
// running_mean and running_var are set (stat Views [c], both or neither),
// blends them in place by PyTorch's rule: r = (1 - momentum) r + momentum b,
// b the batch mean and unbiased variance. Backward: gx (may be null), and gw
// and gb (F64, may be null), from gy and the forward's mean and invstd
// (whichever path wrote them). weight and bias are stat Views or null.
struct BatchNormTrainArgs {
  View x, y, gy, mean, invstd;
  const View *weight = nullptr, *bias = nullptr;
  const View *running_mean = nullptr, *running_var = nullptr;  // forward
  const View *gx = nullptr, *gw = nullptr, *gb = nullptr;      // backward
  int64_t outer = 0, c = 0, inner = 0;
  double eps = 0.0, momentum = 0.0;
};

}  // namespace mixp
