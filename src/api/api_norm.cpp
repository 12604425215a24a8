// C ABI shims of the normalisation, activation, embedding, attention and
// shape operations of the ops_nn group (ops/norm.cpp, ops/embedding.cpp,
// ops/attention.cpp, ops/shape_ops.cpp, and the unary family).
#include <vector>

#include "api/api_common.hpp"
#include "mixp/mixp.h"
#include "ops/ops.hpp"

using namespace mixp;

namespace {

// An optional tensor argument: NULL stays null, anything else is validated.
TensorPtr optional(const mixp_tensor *t, const char *fn, const char *arg) {
  return t ? share(check_tensor(t, fn, arg)) : TensorPtr();
}

int check_flag(int v, const char *fn, const char *arg) {
  if (v != 0 && v != 1) fail(MIXP_ERR_INVALID_ARGUMENT, fn, ": ", arg, " must be 0 or 1, got ", v);
  return v;
}

mixp_status unary_shim(const char *fn, UnaryOp op, const mixp_tensor *x, mixp_tensor **out) {
  return guard(fn, [&] {
    check_out(out, fn);
    auto x_ = share(check_tensor(x, fn, "x"));
    give(out, mixp::unary(op, x_));
  });
}

}  // namespace

extern "C" {

mixp_status mixp_batch_norm(const mixp_tensor *x, const mixp_tensor *weight,
                            const mixp_tensor *bias, mixp_tensor *running_mean,
                            mixp_tensor *running_var, int training, double momentum, double eps,
                            mixp_layout layout, mixp_tensor **out) {
  static const char *fn = "mixp_batch_norm";
  return guard(fn, [&] {
    check_out(out, fn);
    auto x_ = share(check_tensor(x, fn, "x"));
    auto w_ = optional(weight, fn, "weight");
    auto b_ = optional(bias, fn, "bias");
    auto rm_ = optional(running_mean, fn, "running_mean");
    auto rv_ = optional(running_var, fn, "running_var");
    check_flag(training, fn, "training");
    give(out, mixp::batch_norm(x_, w_, b_, rm_, rv_, training == 1, momentum, eps, layout));
  });
}

mixp_status mixp_layer_norm(const mixp_tensor *x, int normalized_ndim, const mixp_tensor *weight,
                            const mixp_tensor *bias, double eps, mixp_tensor **out) {
  static const char *fn = "mixp_layer_norm";
  return guard(fn, [&] {
    check_out(out, fn);
    auto x_ = share(check_tensor(x, fn, "x"));
    auto w_ = optional(weight, fn, "weight");
    auto b_ = optional(bias, fn, "bias");
    give(out, mixp::layer_norm(x_, normalized_ndim, w_, b_, eps));
  });
}

mixp_status mixp_group_norm(const mixp_tensor *x, int64_t groups, const mixp_tensor *weight,
                            const mixp_tensor *bias, double eps, mixp_tensor **out) {
  static const char *fn = "mixp_group_norm";
  return guard(fn, [&] {
    check_out(out, fn);
    auto x_ = share(check_tensor(x, fn, "x"));
    auto w_ = optional(weight, fn, "weight");
    auto b_ = optional(bias, fn, "bias");
    give(out, mixp::group_norm(x_, groups, w_, b_, eps));
  });
}

mixp_status mixp_hardswish(const mixp_tensor *x, mixp_tensor **out) {
  return unary_shim("mixp_hardswish", UnaryOp::Hardswish, x, out);
}
mixp_status mixp_hardsigmoid(const mixp_tensor *x, mixp_tensor **out) {
  return unary_shim("mixp_hardsigmoid", UnaryOp::Hardsigmoid, x, out);
}
mixp_status mixp_silu(const mixp_tensor *x, mixp_tensor **out) {
  return unary_shim("mixp_silu", UnaryOp::Silu, x, out);
}

mixp_status mixp_embedding(const mixp_tensor *weight, const mixp_tensor *indices,
                           int64_t padding_idx, mixp_tensor **out) {
  static const char *fn = "mixp_embedding";
  return guard(fn, [&] {
    check_out(out, fn);
    auto w_ = share(check_tensor(weight, fn, "weight"));
    auto i_ = share(check_tensor(indices, fn, "indices"));
    give(out, mixp::embedding(w_, i_, padding_idx));
  });
}

mixp_status mixp_scaled_dot_product_attention(const mixp_tensor *q, const mixp_tensor *k,
                                              const mixp_tensor *v, int is_causal,
                                              double dropout_p, double scale, mixp_tensor **out) {
  static const char *fn = "mixp_scaled_dot_product_attention";
  return guard(fn, [&] {
    check_out(out, fn);
    auto q_ = share(check_tensor(q, fn, "q"));
    auto k_ = share(check_tensor(k, fn, "k"));
    auto v_ = share(check_tensor(v, fn, "v"));
    check_flag(is_causal, fn, "is_causal");
    give(out, mixp::scaled_dot_product_attention(q_, k_, v_, is_causal == 1, dropout_p, scale));
  });
}

mixp_status mixp_split(const mixp_tensor *x, const int64_t *sizes, int n, int dim,
                       mixp_tensor **outs) {
  static const char *fn = "mixp_split";
  return guard(fn, [&] {
    check_out(outs, fn, "outs");
    auto x_ = share(check_tensor(x, fn, "x"));
    if (n < 1) fail(MIXP_ERR_INVALID_ARGUMENT, fn, ": n must be >= 1, got ", n);
    check_out(sizes, fn, "sizes");
    std::vector<TensorPtr> pieces = mixp::split(x_, std::vector<int64_t>(sizes, sizes + n), dim);
    for (int i = 0; i < n; ++i) give(&outs[i], std::move(pieces[size_t(i)]));
  });
}

mixp_status mixp_flatten(const mixp_tensor *x, int start_dim, int end_dim, mixp_tensor **out) {
  static const char *fn = "mixp_flatten";
  return guard(fn, [&] {
    check_out(out, fn);
    auto x_ = share(check_tensor(x, fn, "x"));
    give(out, mixp::flatten(x_, start_dim, end_dim));
  });
}

mixp_status mixp_pad(const mixp_tensor *x, const int64_t *pads, int npads, double value,
                     mixp_tensor **out) {
  static const char *fn = "mixp_pad";
  return guard(fn, [&] {
    check_out(out, fn);
    auto x_ = share(check_tensor(x, fn, "x"));
    if (npads < 0) fail(MIXP_ERR_INVALID_ARGUMENT, fn, ": npads must be >= 0, got ", npads);
    if (npads > 0) check_out(pads, fn, "pads");
    give(out, mixp::pad(x_, std::vector<int64_t>(pads, pads + npads), value));
  });
}

}  // extern "C"
