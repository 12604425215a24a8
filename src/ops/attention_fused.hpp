// The fused path of scaled_dot_product_attention (ops/attention_fused.cpp):
// one backend kernel for the forward (Backend::attention_forward) and one
// autograd node whose backward is another (attention_backward), saving q,
// k, v, the output and each row's log-sum-exp instead of the L x S
// probabilities. ops/attention.cpp chooses it or the composed path.
#pragma once
#include "core/tensor.hpp"

namespace mixp {

// Which path attention takes: MIXP_ATTENTION=fused|composed|auto (unset:
// auto, the fused path wherever the backend runs the case). Read at every
// call, so a test or benchmark can switch between calls; any other value
// fails with MIXP_ERR_INVALID_ARGUMENT naming fn.
enum class AttentionPath { automatic, fused, composed };
AttentionPath attention_path(const char *fn);

// The fused attention of already validated q [..., L, E], k [..., S, E] and
// v [..., S, E] with equal batch dims (at most two) and a resolved scale;
// null, with nothing drawn from the random stream, when the backend
// declines the case. Draws the dropout stream like the composed path does
// (one uniform per element of the [..., L, S] probabilities).
TensorPtr fused_attention(const TensorPtr &q, const TensorPtr &k, const TensorPtr &v, bool causal,
                          double dropout_p, double scale);

// Whether fused_attention could run these shapes at all (before asking the
// backend): equal batch dims, 2 to 4 dims, v's E equal to q's, L >= 1.
bool fused_attention_shapes(const Tensor &q, const Tensor &k, const Tensor &v);

}  // namespace mixp
