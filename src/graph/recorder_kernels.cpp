// The recorder's deterministic kernels: each runs now and is kept, with its
// arguments by value, for the replays (see recorder.hpp).
#include <string>

#include "graph/recorder.hpp"

namespace mixp::graph {
namespace {

std::vector<View> views(const View *v, int n) { return std::vector<View>(v, v + n); }

}  // namespace

void Recorder::copy(const View &src, const View &dst) {
  touch(src), touch(dst);
  record([=](Backend &b, const Replay &) { b.copy(src, dst); });
}

void Recorder::fill(const View &dst, double value) {
  touch(dst);
  record([=](Backend &b, const Replay &) { b.fill(dst, value); });
}

void Recorder::causal_mask(const View &dst, int64_t rows, int64_t cols) {
  touch(dst);
  record([=](Backend &b, const Replay &) { b.causal_mask(dst, rows, cols); });
}

void Recorder::unary(UnaryOp op, const View &x, const View &y, double s) {
  touch(x), touch(y);
  record([=](Backend &b, const Replay &) { b.unary(op, x, y, s); });
}

void Recorder::unary_backward(UnaryOp op, const View &x, const View &y, const View &gy, const View &gx,
                              double s) {
  touch(x), touch(y), touch(gy), touch(gx);
  record([=](Backend &b, const Replay &) { b.unary_backward(op, x, y, gy, gx, s); });
}

void Recorder::binary(BinaryOp op, const View &a, const View &c, const View &out) {
  touch(a), touch(c), touch(out);
  record([=](Backend &b, const Replay &) { b.binary(op, a, c, out); });
}

void Recorder::sum_rows(const View &x, int64_t rows, int64_t cols, const View &out, double scale) {
  touch(x), touch(out);
  record([=](Backend &b, const Replay &) { b.sum_rows(x, rows, cols, out, scale); });
}

void Recorder::sum_cols(const View &x, int64_t rows, int64_t cols, const View &out, double scale) {
  touch(x), touch(out);
  record([=](Backend &b, const Replay &) { b.sum_cols(x, rows, cols, out, scale); });
}

void Recorder::max_dim(const View &x, int64_t outer, int64_t n, int64_t inner, const View *values,
                       const View &indices) {
  touch(x), touch(values), touch(indices);
  const OptView v(values);
  record([=](Backend &b, const Replay &) { b.max_dim(x, outer, n, inner, v.get(), indices); });
}

void Recorder::softmax(const View &x, int64_t outer, int64_t n, int64_t inner, bool log, const View &y) {
  touch(x), touch(y);
  record([=](Backend &b, const Replay &) { b.softmax(x, outer, n, inner, log, y); });
}

void Recorder::softmax_backward(const View &y, const View &gy, int64_t outer, int64_t n, int64_t inner,
                                bool log, const View &gx) {
  touch(y), touch(gy), touch(gx);
  record([=](Backend &b, const Replay &) { b.softmax_backward(y, gy, outer, n, inner, log, gx); });
}

void Recorder::cross_entropy(const View &logits, const View &target, int64_t n, int64_t c,
                             int64_t ignore_index, double label_smoothing, const View &losses) {
  touch(logits), touch(target), touch(losses);
  record([=](Backend &b, const Replay &) {
    b.cross_entropy(logits, target, n, c, ignore_index, label_smoothing, losses);
  });
}

void Recorder::cross_entropy_backward(const View &logits, const View &target, int64_t n, int64_t c,
                                      int64_t ignore_index, double label_smoothing, const View &row_scale,
                                      const View &glogits) {
  touch(logits), touch(target), touch(row_scale), touch(glogits);
  record([=](Backend &b, const Replay &) {
    b.cross_entropy_backward(logits, target, n, c, ignore_index, label_smoothing, row_scale, glogits);
  });
}

// The check runs again at each replay, on the indices the host refilled;
// its strings are kept by value.
void Recorder::check_indices(const IndexCheck &chk, const View &indices, const View *inv_count) {
  touch(indices), touch(inv_count);
  const std::string fn = chk.fn, what = chk.what, note = chk.note;
  const OptView inv(inv_count);
  record([=](Backend &b, const Replay &) {
    IndexCheck c = chk;
    c.fn = fn.c_str();
    c.what = what.c_str();
    c.note = note.c_str();
    b.check_indices(c, indices, inv.get());
  });
}

void Recorder::scatter_dim(const View &src, const View &indices, int64_t outer, int64_t n, int64_t inner,
                           const View &dst) {
  touch(src), touch(indices), touch(dst);
  record([=](Backend &b, const Replay &) { b.scatter_dim(src, indices, outer, n, inner, dst); });
}

void Recorder::gemm(const GemmArgs &args) {
  touch(args.a), touch(args.b), touch(args.c), touch(args.bias);
  record([=](Backend &b, const Replay &) { b.gemm(args); });
}

void Recorder::scaled_gemm(const ScaledGemmArgs &args) {
  for (const View *v : {&args.a, &args.b, &args.scale_a, &args.scale_b, &args.bias, &args.d, &args.amax})
    touch(*v);
  record([=](Backend &b, const Replay &) { b.scaled_gemm(args); });
}

void Recorder::non_finite_check_and_unscale(const View *grads, int n, const View &found_inf,
                                            const View &inv_scale) {
  const std::vector<View> gs = views(grads, n);
  for (const View &g : gs) touch(g);
  touch(found_inf), touch(inv_scale);
  record([=](Backend &b, const Replay &) { b.non_finite_check_and_unscale(gs.data(), n, found_inf, inv_scale); });
}

void Recorder::update_scale(const ScaleUpdate &u) {
  for (const View *v : {&u.scale, &u.growth_tracker, &u.bad_count, &u.hysteresis_left, &u.found_inf}) touch(*v);
  record([=](Backend &b, const Replay &) { b.update_scale(u); });
}

void Recorder::grad_norm_sq(const View *grads, int n, const View &out) {
  const std::vector<View> gs = views(grads, n);
  for (const View &g : gs) touch(g);
  touch(out);
  record([=](Backend &b, const Replay &) { b.grad_norm_sq(gs.data(), n, out); });
}

void Recorder::clip_coefficient(const View &norm_sq, double max_norm, const View &total_norm, const View &coef,
                                const View &found_inf) {
  touch(norm_sq), touch(total_norm), touch(coef), touch(found_inf);
  record([=](Backend &b, const Replay &) { b.clip_coefficient(norm_sq, max_norm, total_norm, coef, found_inf); });
}

void Recorder::scale_grads(const View *grads, int n, const View &coef) {
  const std::vector<View> gs = views(grads, n);
  for (const View &g : gs) touch(g);
  touch(coef);
  record([=](Backend &b, const Replay &) { b.scale_grads(gs.data(), n, coef); });
}

void Recorder::conv2d(const Conv2dGeom &g, const View &x, const View &w, const View *bias, const View &y) {
  touch(x), touch(w), touch(bias), touch(y);
  const OptView bv(bias);
  record([=](Backend &b, const Replay &) { b.conv2d(g, x, w, bv.get(), y); });
}

void Recorder::conv2d_backward_data(const Conv2dGeom &g, const View &gy, const View &w, const View &gx) {
  touch(gy), touch(w), touch(gx);
  record([=](Backend &b, const Replay &) { b.conv2d_backward_data(g, gy, w, gx); });
}

void Recorder::conv2d_backward_weights(const Conv2dGeom &g, const View &x, const View &gy, const View &gw) {
  touch(x), touch(gy), touch(gw);
  record([=](Backend &b, const Replay &) { b.conv2d_backward_weights(g, x, gy, gw); });
}

void Recorder::pool2d(const Pool2dGeom &g, const View &x, const View &y, const View *indices) {
  touch(x), touch(y), touch(indices);
  const OptView iv(indices);
  record([=](Backend &b, const Replay &) { b.pool2d(g, x, y, iv.get()); });
}

void Recorder::pool2d_backward(const Pool2dGeom &g, const View &gy, const View *indices, const View &gx) {
  touch(gy), touch(indices), touch(gx);
  const OptView iv(indices);
  record([=](Backend &b, const Replay &) { b.pool2d_backward(g, gy, iv.get(), gx); });
}

void Recorder::batch_norm_stats(const View &x, int64_t outer, int64_t c, int64_t inner, double eps,
                                const View &mean, const View &var, const View &invstd) {
  touch(x), touch(mean), touch(var), touch(invstd);
  record([=](Backend &b, const Replay &) { b.batch_norm_stats(x, outer, c, inner, eps, mean, var, invstd); });
}

void Recorder::batch_norm_forward(const View &x, int64_t outer, int64_t c, int64_t inner, const View &mean,
                                  const View &invstd, const View *weight, const View *bias, const View &y) {
  touch(x), touch(mean), touch(invstd), touch(weight), touch(bias), touch(y);
  const OptView wv(weight), bv(bias);
  record([=](Backend &b, const Replay &) {
    b.batch_norm_forward(x, outer, c, inner, mean, invstd, wv.get(), bv.get(), y);
  });
}

void Recorder::batch_norm_backward(const View &x, const View &gy, int64_t outer, int64_t c, int64_t inner,
                                   const View &mean, const View &invstd, const View *weight, bool batch_stats,
                                   const View *gx, const View *gw, const View *gb) {
  touch(x), touch(gy), touch(mean), touch(invstd), touch(weight), touch(gx), touch(gw), touch(gb);
  const OptView wv(weight), gxv(gx), gwv(gw), gbv(gb);
  record([=](Backend &b, const Replay &) {
    b.batch_norm_backward(x, gy, outer, c, inner, mean, invstd, wv.get(), batch_stats, gxv.get(), gwv.get(),
                          gbv.get());
  });
}

void Recorder::group_norm_forward(const GroupNormGeom &g, const View &x, const View *weight, const View *bias,
                                  double eps, const View &y, const View &mean, const View &rstd) {
  touch(x), touch(weight), touch(bias), touch(y), touch(mean), touch(rstd);
  const OptView wv(weight), bv(bias);
  record([=](Backend &b, const Replay &) { b.group_norm_forward(g, x, wv.get(), bv.get(), eps, y, mean, rstd); });
}

void Recorder::group_norm_backward(const GroupNormGeom &g, const View &x, const View &gy, const View &mean,
                                   const View &rstd, const View *weight, const View *gx, const View *gw,
                                   const View *gb) {
  touch(x), touch(gy), touch(mean), touch(rstd), touch(weight), touch(gx), touch(gw), touch(gb);
  const OptView wv(weight), gxv(gx), gwv(gw), gbv(gb);
  record([=](Backend &b, const Replay &) {
    b.group_norm_backward(g, x, gy, mean, rstd, wv.get(), gxv.get(), gwv.get(), gbv.get());
  });
}

void Recorder::embedding(const View &weight, const View &indices, const View &out) {
  touch(weight), touch(indices), touch(out);
  record([=](Backend &b, const Replay &) { b.embedding(weight, indices, out); });
}

void Recorder::embedding_backward(const View &gy, const View &indices, int64_t padding_idx, const View &gw) {
  touch(gy), touch(indices), touch(gw);
  record([=](Backend &b, const Replay &) { b.embedding_backward(gy, indices, padding_idx, gw); });
}

}  // namespace mixp::graph
