// matmul, bmm and linear. Operands are handed to the backend GEMM with their
// strides, so transposed views (the backward pass is full of them) cost no
// copy; only layouts a GEMM cannot address are made contiguous first.
#include <algorithm>

#include "autograd/node.hpp"
#include "core/error.hpp"
#include "ops/ops.hpp"

namespace mixp {

namespace {

// Whether the matrix part of t (last two dims) has a unit stride on one side
// and the leading dims fold into one batch stride.
bool gemm_addressable(const Tensor &t) {
  const int nd = t.ndim;
  const int64_t rs = t.strides[nd - 2], cs = t.strides[nd - 1];
  const bool unit = (cs == 1 || t.shape[nd - 1] == 1) || (rs == 1 || t.shape[nd - 2] == 1);
  if (!unit) return false;
  for (int i = 0; i + 1 < nd - 2; ++i)
    if (t.shape[i] != 1 && t.strides[i] != t.strides[i + 1] * t.shape[i + 1]) return false;
  return true;
}

// Row/column strides that a GEMM accepts: a size-1 side gets a unit stride.
void matrix_strides(const Tensor &t, int64_t *rs, int64_t *cs) {
  const int nd = t.ndim;
  *rs = t.strides[nd - 2];
  *cs = t.strides[nd - 1];
  if (t.shape[nd - 1] == 1) *cs = 1;
  else if (t.shape[nd - 2] == 1 && *cs != 1) *rs = 1;
  if (*cs != 1 && *rs != 1) *cs = 1;  // unreachable for addressable tensors
}

// out[..., M, N] = a[..., M, K] x b[..., K, N] (+ beta * out). The batch dims
// of a and b are either equal to out's or absent (broadcast).
void gemm_into(const Tensor &a, const Tensor &b, Tensor &out, float beta, const Tensor *bias = nullptr) {
  GemmArgs g;
  g.dtype = out.dtype;
  const int on = out.ndim;
  g.m = out.shape[on - 2];
  g.n = out.shape[on - 1];
  g.k = a.shape[a.ndim - 1];
  g.batch = 1;
  for (int i = 0; i < on - 2; ++i) g.batch *= out.shape[i];
  g.a = a.data();
  g.b = b.data();
  g.c = out.data();
  matrix_strides(a, &g.a_rs, &g.a_cs);
  matrix_strides(b, &g.b_rs, &g.b_cs);
  g.a_batch = a.ndim > 2 ? a.strides[a.ndim - 3] : 0;
  g.b_batch = b.ndim > 2 ? b.strides[b.ndim - 3] : 0;
  if (a.ndim > 2 && a.numel() / (g.m * g.k > 0 ? g.m * g.k : 1) == 1) g.a_batch = 0;
  if (b.ndim > 2 && b.numel() / (g.k * g.n > 0 ? g.k * g.n : 1) == 1) g.b_batch = 0;
  g.c_rs = out.strides[on - 2];
  g.c_batch = on > 2 ? out.strides[on - 3] : 0;
  g.beta = beta;
  g.bias = bias ? bias->data() : nullptr;
  g.allow_tf32 = tf32_enabled(out.session.get());
  backend_of(out).gemm(g);
}

TensorPtr addressable(const TensorPtr &t) { return gemm_addressable(*t) ? t : clone(t); }

struct MatmulNode : Node {
  using Node::Node;
  TensorPtr a, b;  // detached
  std::vector<TensorPtr> backward(std::vector<TensorPtr> &g) override {
    std::vector<TensorPtr> r(2);
    if (needs_grad(0)) r[0] = sum_to(matmul(g[0], transpose(b, -1, -2)), input_shapes[0]);
    if (needs_grad(1)) r[1] = sum_to(matmul(transpose(a, -1, -2), g[0]), input_shapes[1]);
    return r;
  }
  void release_saved() override {
    a.reset();
    b.reset();
  }
};

// A linear layer's weight and bias gradients in one product, where the
// backend folds the bias gradient (the row sums of gy^T) into the weight
// gradient's GEMM (Backend::gemm_row_sums); false, having computed nothing,
// where it declines (the CPU always does), and LinearNode computes the two
// apart as before. gy^T is handed over through gy's strides: no view op,
// so a declined call leaves op statistics and profiles as they were.
bool folded_weight_bias_grads(const TensorPtr &gy, const TensorPtr &x, TensorPtr *gw, TensorPtr *gb) {
  if (gy->dtype != x->dtype || gy->ndim != 2 || x->ndim != 2 || gy->shape[0] == 0) return false;
  if (!gemm_addressable(*gy) || !gemm_addressable(*x)) return false;
  Session *s = gy->session.get();
  TensorPtr w_grad = empty(s, gy->dtype, Shape{gy->shape[1], x->shape[1]});
  TensorPtr b_grad = empty(s, gy->dtype, Shape{gy->shape[1]});
  GemmArgs g;
  g.dtype = gy->dtype;
  g.m = gy->shape[1];
  g.n = x->shape[1];
  g.k = gy->shape[0];
  g.a = gy->data();
  matrix_strides(*gy, &g.a_cs, &g.a_rs);  // gy's (row, column) strides are gy^T's (column, row)
  if (g.m == 1) g.a_rs = 1;
  g.b = x->data();
  matrix_strides(*x, &g.b_rs, &g.b_cs);
  g.c = w_grad->data();
  g.c_rs = g.n;
  g.allow_tf32 = tf32_enabled(s);
  if (!backend_of(*gy).gemm_row_sums(g, b_grad->data())) return false;
  *gw = w_grad;
  *gb = b_grad;
  return true;
}

struct LinearNode : Node {
  using Node::Node;
  TensorPtr x, w;  // detached; x is [N, in]
  std::vector<TensorPtr> backward(std::vector<TensorPtr> &g) override {
    std::vector<TensorPtr> r(3);
    if (needs_grad(0)) r[0] = matmul(g[0], w);  // [N,out] x [out,in]
    if (needs_grad(1) && needs_grad(2) && folded_weight_bias_grads(g[0], x, &r[1], &r[2])) return r;
    if (needs_grad(1)) r[1] = matmul(transpose(g[0], 0, 1), x);  // [out,N] x [N,in]
    if (needs_grad(2)) r[2] = sum(g[0], {0}, false);
    return r;
  }
  void release_saved() override {
    x.reset();
    w.reset();
  }
};

// The 2+-D product with broadcast batch dims; a and b have ndim >= 2.
TensorPtr matmul_nd(OpId op, const TensorPtr &a_in, const TensorPtr &b_in) {
  const char *fn = op_info(op).c_function;
  Session *s = a_in->session.get();
  const int an = a_in->ndim, bn = b_in->ndim;
  if (a_in->shape[an - 1] != b_in->shape[bn - 2])
    fail(MIXP_ERR_SHAPE, fn, ": inner dimensions differ: a is ", shape_str(*a_in), ", b is ", shape_str(*b_in));
  Shape ab(a_in->shape, an - 2), bb(b_in->shape, bn - 2);
  for (int i = 1; i <= std::min(ab.ndim, bb.ndim); ++i) {
    const int64_t x = ab.d[ab.ndim - i], y = bb.d[bb.ndim - i];
    if (x != y && x != 1 && y != 1)
      fail(MIXP_ERR_SHAPE, fn, ": batch dimensions do not broadcast: a is ", shape_str(*a_in), ", b is ",
           shape_str(*b_in));
  }
  Shape batch = broadcast_shapes(fn, ab, bb);
  Shape oshape = batch;
  oshape.d[oshape.ndim++] = a_in->shape[an - 2];
  oshape.d[oshape.ndim++] = b_in->shape[bn - 1];

  // Bring each operand to either no batch dims or out's full batch dims.
  auto prepare = [&](const TensorPtr &t, const Shape &tb, int64_t rows, int64_t cols) {
    if (tb.numel() == 1 && batch.numel() >= 1) {
      Shape m{rows, cols};
      int64_t st[2] = {t->strides[t->ndim - 2], t->strides[t->ndim - 1]};
      TensorPtr v = make_view(*t, m, st, t->offset);
      return addressable(v);
    }
    Shape full_shape = batch;
    full_shape.d[full_shape.ndim++] = rows;
    full_shape.d[full_shape.ndim++] = cols;
    TensorPtr v = tb == batch ? t : make_view(*t, full_shape, broadcast_view(*t, full_shape).strides, t->offset);
    return addressable(v);
  };
  TensorPtr a = prepare(a_in, ab, a_in->shape[an - 2], a_in->shape[an - 1]);
  TensorPtr b = prepare(b_in, bb, b_in->shape[bn - 2], b_in->shape[bn - 1]);
  TensorPtr out = empty(s, a_in->dtype, oshape);
  if (out->numel() > 0) gemm_into(*a, *b, *out, 0.0f);
  if (should_record(s, {a_in.get(), b_in.get()})) {
    auto node = std::make_shared<MatmulNode>(op);
    node->a = detach(*a_in);
    node->b = detach(*b_in);
    record(node, {a_in.get(), b_in.get()}, {out.get()});
  }
  return out;
}

void check_matmul_args(const char *fn, const Tensor &a, const Tensor &b) {
  same_session(fn, {&a, &b});
  require_float(fn, "a", a);
  require_float(fn, "b", b);
  require_same_dtype(fn, "a", a, "b", b);
}

}  // namespace

TensorPtr gemm_operand(const TensorPtr &t) { return gemm_addressable(*t) ? t : contiguous(t); }

TensorPtr matmul(const TensorPtr &a_in, const TensorPtr &b_in) {
  const char *fn = "mixp_matmul";
  same_session(fn, {a_in.get(), b_in.get()});
  TensorPtr a = a_in, b = b_in;
  OpScope scope(OpId::matmul, a->session.get(), {&a, &b});
  scope.tape({a.get(), b.get()}, [](const Replay &r) { return matmul(r[0], r[1]); });
  check_matmul_args(fn, *a, *b);
  if (a->ndim == 0 || b->ndim == 0)
    fail(MIXP_ERR_SHAPE, fn, ": operands must have at least one dimension: a is ", shape_str(*a), ", b is ",
         shape_str(*b));
  // numpy semantics for vectors: promote, multiply, drop the added dim.
  TensorPtr a2 = a, b2 = b;
  if (a->ndim == 1) a2 = reshape(a, Shape{1, a->shape[0]});
  if (b->ndim == 1) b2 = reshape(b, Shape{b->shape[0], 1});
  if (a2->shape[a2->ndim - 1] != b2->shape[b2->ndim - 2])
    fail(MIXP_ERR_SHAPE, fn, ": inner dimensions differ: a is ", shape_str(*a), ", b is ", shape_str(*b));
  TensorPtr out = matmul_nd(scope.op(), a2, b2);
  if (a->ndim == 1 || b->ndim == 1) {
    Shape s = shape_of(*out);
    Shape r;
    for (int i = 0; i < s.ndim; ++i) {
      if (a->ndim == 1 && i == s.ndim - 2) continue;
      if (b->ndim == 1 && i == s.ndim - 1) continue;
      r.d[r.ndim++] = s.d[i];
    }
    out = reshape(out, r);
  }
  return scope.finish(out);
}

TensorPtr bmm(const TensorPtr &a_in, const TensorPtr &b_in) {
  const char *fn = "mixp_bmm";
  same_session(fn, {a_in.get(), b_in.get()});
  TensorPtr a = a_in, b = b_in;
  OpScope scope(OpId::bmm, a->session.get(), {&a, &b});
  scope.tape({a.get(), b.get()}, [](const Replay &r) { return bmm(r[0], r[1]); });
  check_matmul_args(fn, *a, *b);
  if (a->ndim != 3 || b->ndim != 3)
    fail(MIXP_ERR_SHAPE, fn, ": a and b must be 3-D [B,M,K] and [B,K,N]: a is ", shape_str(*a), ", b is ",
         shape_str(*b));
  if (a->shape[0] != b->shape[0])
    fail(MIXP_ERR_SHAPE, fn, ": batch sizes differ: a is ", shape_str(*a), ", b is ", shape_str(*b));
  return scope.finish(matmul_nd(scope.op(), a, b));
}

TensorPtr linear(const TensorPtr &x_in, const TensorPtr &w_in, const TensorPtr &bias_in) {
  const char *fn = "mixp_linear";
  same_session(fn, {x_in.get(), w_in.get(), bias_in.get()});
  TensorPtr x = x_in, w = w_in, bias = bias_in;
  OpScope scope(OpId::linear, x->session.get(), {&x, &w, &bias});
  scope.tape({x.get(), w.get(), bias.get()}, [](const Replay &r) { return linear(r[0], r[1], r[2]); });
  require_float(fn, "x", *x);
  require_float(fn, "weight", *w);
  require_same_dtype(fn, "x", *x, "weight", *w);
  if (bias) require_same_dtype(fn, "x", *x, "bias", *bias);
  if (w->ndim != 2) fail(MIXP_ERR_SHAPE, fn, ": weight must be 2-D [out, in], got ", shape_str(*w));
  if (x->ndim < 1) fail(MIXP_ERR_SHAPE, fn, ": x must have at least one dimension, got ", shape_str(*x));
  const int64_t in = w->shape[1], outf = w->shape[0];
  if (x->shape[x->ndim - 1] != in)
    fail(MIXP_ERR_SHAPE, fn, ": x has ", x->shape[x->ndim - 1], " features but weight expects ", in,
         ": x is ", shape_str(*x), ", weight is ", shape_str(*w));
  if (bias && (bias->ndim != 1 || bias->shape[0] != outf))
    fail(MIXP_ERR_SHAPE, fn, ": bias must be [", outf, "], got ", shape_str(*bias));
  if (x->ndim != 2) {
    // Fold leading dims into rows: [..., in] -> [N, in] -> [..., out].
    TensorPtr x2 = reshape(x, Shape{-1, in});
    TensorPtr y2 = linear(x2, w, bias);
    Shape os = shape_of(*x);
    os.d[os.ndim - 1] = outf;
    return scope.finish(reshape(y2, os));
  }
  Session *s = x->session.get();
  TensorPtr xa = addressable(x), wa = addressable(w);
  TensorPtr out = empty(s, x->dtype, Shape{x->shape[0], outf});
  if (out->numel() > 0) {
    // The bias is added inside the GEMM (oneDNN's bias argument): no separate
    // pass over the output.
    TensorPtr bc = bias ? contiguous(detach(*bias)) : TensorPtr();
    TensorPtr wt;
    {
      // The transposed view is internal plumbing, never part of the graph.
      NoGradGuard ng(s);
      wt = transpose(wa, 0, 1);
    }
    gemm_into(*xa, *wt, *out, 0.0f, bc.get());
  }
  if (should_record(s, {x.get(), w.get(), bias.get()})) {
    auto node = std::make_shared<LinearNode>(OpId::linear);
    node->x = detach(*x);
    node->w = detach(*w);
    record(node, {x.get(), w.get(), bias.get()}, {out.get()});
  }
  return scope.finish(out);
}

}  // namespace mixp
