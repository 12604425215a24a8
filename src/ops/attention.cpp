// scaled_dot_product_attention: fused (one backend kernel each way, the
// L x S probabilities never stored: ops/attention_fused.cpp) wherever the
// backend runs the case, else composed of recorded ops (matmul, scale,
// additive causal mask, softmax, dropout, matmul), whose backward is the
// chain of theirs and which runs on any backend. MIXP_ATTENTION forces
// either (attention_fused.hpp); op statistics count which ran.
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "autograd/node.hpp"
#include "core/error.hpp"
#include "core/op_stats.hpp"
#include "ops/attention_fused.hpp"
#include "ops/ops.hpp"
#include "ops/profile.hpp"

namespace mixp {
namespace {

// [L, S] of 0 where key j may be seen from query i (j <= i) and -inf
// elsewhere, in dtype dt, built by the session's backend where it lives (on
// a GPU: no upload, no wait, nothing a graph capture would miss). Column 0
// is never masked, so no softmax row is all -inf.
TensorPtr causal_mask(Session *s, DType dt, int64_t l, int64_t sk) {
  TensorPtr m = empty(s, dt, Shape{l, sk});
  s->backend->causal_mask(view_of(*m), l, sk);
  return m;
}

Shape batch_of(const Tensor &t) { return Shape(t.shape, t.ndim - 2); }

std::string strides_str(const Tensor &t) { return shape_str(Shape(t.strides, t.ndim)); }

}  // namespace

TensorPtr scaled_dot_product_attention(const TensorPtr &q_in, const TensorPtr &k_in,
                                       const TensorPtr &v_in, bool is_causal, double dropout_p,
                                       double scale) {
  static const char *fn = "mixp_scaled_dot_product_attention";
  Session *s = same_session(fn, {q_in.get(), k_in.get(), v_in.get()});
  TensorPtr q = q_in, k = k_in, v = v_in;
  OpScope scope(OpId::scaled_dot_product_attention, s, {&q, &k, &v});
  scope.tape({q.get(), k.get(), v.get()}, [=](const Replay &r) {
    return scaled_dot_product_attention(r[0], r[1], r[2], is_causal, dropout_p, scale);
  });
  require_float(fn, "q", *q);
  require_float(fn, "k", *k);
  require_float(fn, "v", *v);
  require_same_dtype(fn, "q", *q, "k", *k);
  require_same_dtype(fn, "q", *q, "v", *v);
  if (q->ndim < 2 || k->ndim < 2 || v->ndim < 2)
    fail(MIXP_ERR_SHAPE, fn, ": q, k and v need at least 2 dims ([..., L, E]): q is ",
         shape_str(*q), ", k is ", shape_str(*k), ", v is ", shape_str(*v));
  const int64_t l = q->shape[q->ndim - 2], e = q->shape[q->ndim - 1];
  const int64_t sk = k->shape[k->ndim - 2];
  if (k->shape[k->ndim - 1] != e)
    fail(MIXP_ERR_SHAPE, fn, ": q and k differ in embedding size E: q is ", shape_str(*q),
         ", k is ", shape_str(*k));
  if (v->shape[v->ndim - 2] != sk)
    fail(MIXP_ERR_SHAPE, fn, ": k and v differ in sequence length S: k is ", shape_str(*k),
         ", v is ", shape_str(*v));
  if (sk == 0)
    fail(MIXP_ERR_SHAPE, fn, ": k has no key positions (S = 0): k is ", shape_str(*k));
  broadcast_shapes(fn, broadcast_shapes(fn, batch_of(*q), batch_of(*k)), batch_of(*v));
  if (!(dropout_p >= 0.0 && dropout_p < 1.0))
    fail(MIXP_ERR_INVALID_ARGUMENT, fn, ": dropout_p = ", dropout_p, " is outside [0, 1)");
  if (!std::isfinite(scale))
    fail(MIXP_ERR_INVALID_ARGUMENT, fn, ": scale = ", scale, " is not finite");
  if (scale <= 0.0) {
    if (e == 0)
      fail(MIXP_ERR_SHAPE, fn, ": the default scale 1/sqrt(E) needs E > 0: q is ", shape_str(*q));
    scale = 1.0 / std::sqrt(double(e));
  }

  const AttentionPath path = attention_path(fn);
  const uint64_t rng_before = s->rng_offset;
  try {
    if (path != AttentionPath::composed) {
      TensorPtr fused;
      if (fused_attention_shapes(*q, *k, *v))
        fused = fused_attention(q, k, v, is_causal, dropout_p, scale);
      if (fused) {
        if (scope.outermost()) count_attention_path(s, true);
        return scope.finish(fused);
      }
      if (path == AttentionPath::fused)
        fail(MIXP_ERR_UNSUPPORTED, fn, ": MIXP_ATTENTION=fused, but the ", s->backend->name(),
             " backend does not run this case fused (it declines a dtype, a head size E or",
             " strides): ", dtype_name(q->dtype), " q ", shape_str(*q), " (strides ",
             strides_str(*q), "), k ", shape_str(*k), ", v ", shape_str(*v));
    }
    if (scope.outermost()) count_attention_path(s, false);
    ProfileScope profiled(s, "scaled_dot_product_attention (composed)");
    // A multi-head layer's q, k and v are [B, H, T, D] views of one [B, T,
    // 3E] projection, which no GEMM addresses: copied once here, each is
    // also what the products save for backward, where it would otherwise be
    // copied again.
    q = gemm_operand(q);
    k = gemm_operand(k);
    v = gemm_operand(v);
    TensorPtr scores = mul_scalar(matmul(q, transpose(k, -1, -2)), scale);
    if (is_causal && sk > 1 && l > 0) scores = add(scores, causal_mask(s, q->dtype, l, sk));
    TensorPtr attn = softmax(scores, -1, false);
    if (dropout_p > 0.0) attn = dropout(attn, dropout_p, true);
    return scope.finish(matmul(attn, v));
  } catch (...) {
    // A call that fails must not consume random numbers.
    s->rng_offset = rng_before;
    throw;
  }
}

}  // namespace mixp
