// The fused path of scaled_dot_product_attention (attention_fused.hpp).
#include "ops/attention_fused.hpp"

#include <memory>
#include <vector>

#include "autograd/node.hpp"
#include "core/error.hpp"
#include "ops/ops.hpp"
#include "ops/profile.hpp"

namespace mixp {
namespace {

// t as the [B, H, rows, E] View of AttentionArgs: a 2- or 3-D tensor gets
// leading dims of 1.
View view4(const Tensor &t) noexcept {
  const View v = view_of(t);
  View r;
  r.data = v.data;
  r.dtype = v.dtype;
  r.ndim = 4;
  const int pad = 4 - v.ndim;
  for (int i = 0; i < 4; ++i) {
    r.shape[i] = i < pad ? 1 : v.shape[i - pad];
    r.strides[i] = i < pad ? 0 : v.strides[i - pad];
  }
  return r;
}

// The backward of one fused call: recomputes the probabilities from lse.
struct FusedAttentionNode : Node {
  using Node::Node;
  TensorPtr q, k, v, o, lse;  // detached; q, k, v may be views of one projection
  AttentionArgs args;         // scale, causal, dropout and its stream

  std::vector<TensorPtr> backward(std::vector<TensorPtr> &grads) override {
    Session *s = q->session.get();
    ProfileScope profiled(s, "scaled_dot_product_attention (fused)", true);
    TensorPtr dout = grads[0];
    if (dout->dtype != o->dtype) dout = cast(dout, o->dtype);
    // A gradient broadcast along E (stride 0), say from a sum, is made whole.
    if (dout->ndim == 0 || dout->strides[dout->ndim - 1] != 1) dout = contiguous(dout);
    // Each gradient laid out as its input is: heads viewed out of a
    // [B, T, 3, H, D] projection get [B, T, H, D]-dense gradients, which the
    // transpose and reshape that made the heads take back as views.
    TensorPtr dq = empty_in_order_of(s, q->dtype, *q);
    TensorPtr dk = empty_in_order_of(s, k->dtype, *k);
    TensorPtr dv = empty_in_order_of(s, v->dtype, *v);
    AttentionArgs a = args;
    a.q = view4(*q);
    a.k = view4(*k);
    a.v = view4(*v);
    a.o = view4(*o);
    a.lse = view_of(*lse);
    a.dout = view4(*dout);
    a.dq = view4(*dq);
    a.dk = view4(*dk);
    a.dv = view4(*dv);
    if (!backend_of(*q).attention_backward(a))
      fail(MIXP_ERR_INTERNAL, "mixp_backward: the ", backend_of(*q).name(),
           " backend ran scaled_dot_product_attention fused but declines its backward");
    return {dq, dk, dv};
  }
  void release_saved() override {
    q.reset();
    k.reset();
    v.reset();
    o.reset();
    lse.reset();
  }
};

}  // namespace

AttentionPath attention_path(const char *fn) {
  switch (env_choice(fn, "MIXP_ATTENTION", {"auto", "fused", "composed"})) {
    case 1: return AttentionPath::fused;
    case 2: return AttentionPath::composed;
    default: return AttentionPath::automatic;
  }
}

bool fused_attention_shapes(const Tensor &q, const Tensor &k, const Tensor &v) {
  if (q.ndim < 2 || q.ndim > 4 || k.ndim != q.ndim || v.ndim != q.ndim) return false;
  for (int i = 0; i + 2 < q.ndim; ++i)
    if (k.shape[i] != q.shape[i] || v.shape[i] != q.shape[i]) return false;
  return v.shape[v.ndim - 1] == q.shape[q.ndim - 1] && q.shape[q.ndim - 2] >= 1;
}

TensorPtr fused_attention(const TensorPtr &q, const TensorPtr &k, const TensorPtr &v, bool causal,
                          double dropout_p, double scale) {
  Session *s = q->session.get();
  ProfileScope profiled(s, "scaled_dot_product_attention (fused)");
  AttentionArgs a;
  a.q = view4(*q);
  a.k = view4(*k);
  a.v = view4(*v);
  a.scale = scale;
  a.causal = causal;
  a.dropout_p = dropout_p;
  const int64_t bh = a.q.shape[0] * a.q.shape[1], l = a.q.shape[2], sk = a.k.shape[2];
  // The composed path's dropout draws one uniform per probability.
  const uint64_t rng_before = s->rng_offset;
  if (dropout_p > 0.0) {
    a.seed = s->seed;
    a.offset = s->take_rng(uint64_t(bh) * uint64_t(l) * uint64_t(sk));
  }
  // o in q's layout (as PyTorch's fused SDPA): [B, H, T, D] heads of a
  // [B, T, ...] projection give a [B, T, H, D]-dense o, which transposes
  // and reshapes back to [B, T, E] without a copy.
  TensorPtr o = empty_in_order_of(s, q->dtype, *q);
  TensorPtr lse = empty(s, q->dtype == MIXP_F64 ? MIXP_F64 : MIXP_F32, Shape{bh, l});
  a.o = view4(*o);
  a.lse = view_of(*lse);
  if (!backend_of(*q).attention_forward(a)) {
    s->rng_offset = rng_before;
    return nullptr;
  }
  if (should_record(s, {q.get(), k.get(), v.get()})) {
    auto node = std::make_shared<FusedAttentionNode>(OpId::scaled_dot_product_attention);
    node->q = detach(*q);
    node->k = detach(*k);
    node->v = detach(*v);
    node->o = detach(*o);
    node->lse = lse;
    node->args = a;
    record(node, {q.get(), k.get(), v.get()}, {o.get()});
  }
  return o;
}

}  // namespace mixp
