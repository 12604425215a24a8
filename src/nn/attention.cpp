// MultiheadAttention (self-attention on [B, T, E]) laid out like
// torch.nn.MultiheadAttention: one packed input projection in_proj_weight
// [3E, E] / in_proj_bias [3E] (q, k, v stacked in that order) and an output
// projection out_proj (a Linear). Initialised like PyTorch's
// _reset_parameters: xavier_uniform_ in-projection, zero biases, and the
// out-projection weight keeps Linear's default init.
#include <cmath>

#include "core/error.hpp"
#include "nn/api_call.hpp"
#include "nn/layers.hpp"

namespace mixp {
namespace {

class MultiheadAttention final : public Module {
 public:
  MultiheadAttention(Session *s, int64_t e, int64_t heads, bool bias, double dropout, bool causal,
                     DType dtype)
      : Module(s, "MultiheadAttention"), e_(e), heads_(heads), dropout_(dropout),
        causal_(causal) {
    const int64_t wshape[2] = {3 * e, e};
    // xavier_uniform_: bound sqrt(6 / (fan_in + fan_out)) over the packed
    // [3E, E] matrix, as PyTorch computes it.
    const double bound = std::sqrt(6.0 / double(e + 3 * e));
    in_w_ = register_parameter("in_proj_weight",
                               nn::as_parameter(nn::uniform_tensor(s, dtype, wshape, 2, bound)));
    if (bias) {
      const int64_t b = 3 * e;
      in_b_ = register_parameter("in_proj_bias",
                                 nn::as_parameter(nn::full_tensor(s, dtype, &b, 1, 0.0)));
    }
    mixp_module *proj = nullptr;
    nn::check(mixp_linear_create(s, e, e, int(bias), dtype, &proj));
    out_ = register_module("out_proj", std::unique_ptr<Module>(proj));
    if (bias) nn::fill_constant_(nn::parameter_named(proj, "bias"), 0.0);
  }

  TensorPtr forward(const TensorPtr &x) override {
    if (nn::ndim_of(x) != 3 || nn::dim_of(x, 2) != e_)
      fail(MIXP_ERR_SHAPE, "mixp_module_forward: MultiheadAttention(embed_dim=", e_,
           ") expects x [B, T, ", e_, "], got ", nn::shape_string(x));
    const int64_t b = nn::dim_of(x, 0), t = nn::dim_of(x, 1), hd = e_ / heads_;
    mixp_tensor *in_b = in_b_ == kNone ? nullptr : param_slot(in_b_).get();
    TensorPtr qkv = nn::call(mixp_linear, x.get(), param_slot(in_w_).get(), in_b);

    const int64_t sizes[3] = {e_, e_, e_};
    mixp_tensor *parts[3] = {nullptr, nullptr, nullptr};
    nn::check(mixp_split(qkv.get(), sizes, 3, -1, parts));
    TensorPtr q = TensorPtr::adopt(parts[0]), k = TensorPtr::adopt(parts[1]),
              v = TensorPtr::adopt(parts[2]);
    // [B, T, E] -> [B, H, T, E/H]
    const int64_t split_shape[4] = {b, t, heads_, hd};
    auto heads = [&](const TensorPtr &p) {
      TensorPtr r = nn::call(mixp_reshape, p.get(), split_shape, 4);
      return nn::call(mixp_transpose, r.get(), 1, 2);
    };
    q = heads(q);
    k = heads(k);
    v = heads(v);
    const double p = training() ? dropout_ : 0.0;
    TensorPtr a = nn::call(mixp_scaled_dot_product_attention, q.get(), k.get(), v.get(),
                           int(causal_), p, 0.0);
    a = nn::call(mixp_transpose, a.get(), 1, 2);
    const int64_t merged[3] = {b, t, e_};
    a = nn::call(mixp_reshape, a.get(), merged, 3);
    return child_slot(out_).forward(a);
  }

 private:
  static constexpr size_t kNone = ~size_t(0);
  int64_t e_, heads_;
  double dropout_;
  bool causal_;
  size_t in_w_ = kNone, in_b_ = kNone, out_ = kNone;
};

}  // namespace

std::unique_ptr<Module> make_multihead_attention(Session *s, int64_t embed_dim,
                                                 int64_t num_heads, bool bias, double dropout,
                                                 bool causal, DType dtype, const char *fn) {
  if (embed_dim < 1)
    fail(MIXP_ERR_INVALID_ARGUMENT, fn, ": embed_dim must be >= 1, got ", embed_dim);
  if (num_heads < 1)
    fail(MIXP_ERR_INVALID_ARGUMENT, fn, ": num_heads must be >= 1, got ", num_heads);
  if (embed_dim % num_heads != 0)
    fail(MIXP_ERR_INVALID_ARGUMENT, fn, ": embed_dim (", embed_dim,
         ") must be divisible by num_heads (", num_heads, ")");
  if (embed_dim > (int64_t(1) << 30))
    fail(MIXP_ERR_INVALID_ARGUMENT, fn, ": embed_dim ", embed_dim, " is too large");
  if (!(dropout >= 0.0 && dropout < 1.0))
    fail(MIXP_ERR_INVALID_ARGUMENT, fn, ": dropout must be in [0, 1), got ", dropout);
  check_param_dtype(dtype, fn);
  return std::make_unique<MultiheadAttention>(s, embed_dim, num_heads, bias, dropout, causal,
                                              dtype);
}

}  // namespace mixp
