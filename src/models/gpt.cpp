// gpt: a decoder-only transformer in the style of GPT-2 / nanoGPT: token and
// learned position embeddings, n_layer pre-LN blocks (causal self-attention,
// GELU MLP of 4 * n_embd, each added to the residual stream), a final
// LayerNorm and an output projection tied to the token embedding. GPT-2's
// init: N(0, 0.02) weights, zero biases, and the residual projections scaled
// by 1/sqrt(2 * n_layer). With checkpoint=1 each block is a checkpoint
// region of its own. gelu=tanh selects GPT-2's own GELU (the tanh
// approximation), which Hugging Face GPT-2 weights need (state/hf_gpt2.hpp).
#include <cmath>

#include "core/error.hpp"
#include "models/models.hpp"
#include "nn/api_call.hpp"
#include "nn/layers.hpp"

namespace mixp::models {
namespace {

constexpr double kStd = 0.02;

class Block final : public Module {
 public:
  Block(Session *s, int64_t e, int64_t heads, double p, int64_t n_layer, mixp_dtype dtype,
        bool checkpoint, bool tanh)
      : Module(s, "Block"), checkpoint_(checkpoint) {
    register_module("ln_1", layernorm(s, e, dtype));
    auto attn = attention(s, e, heads, p, dtype);
    init_normal(*attn, "in_proj_weight", kStd);
    init_normal(*attn, "out_proj.weight", kStd / std::sqrt(2.0 * double(n_layer)));
    register_module("attn", std::move(attn));
    register_module("ln_2", layernorm(s, e, dtype));
    auto mlp = std::make_unique<nn::Sequential>(s);
    mlp->append("c_fc", linear(s, e, 4 * e, true, dtype));
    mlp->append("gelu", std::make_unique<nn::Functional>(s, "GELU", [tanh](const TensorPtr &x, bool) {
                  return tanh ? nn::call(mixp_gelu_tanh, x.get())
                              : nn::call(mixp_gelu, x.get(), MIXP_GELU_ERF);
                }));
    mlp->append("c_proj", linear(s, 4 * e, e, true, dtype));
    mlp->append("dropout", nn::dropout(s, p));
    init_normal(mlp->child(0), "weight", kStd);
    init_zero(mlp->child(0), "bias");
    init_normal(mlp->child(2), "weight", kStd / std::sqrt(2.0 * double(n_layer)));
    init_zero(mlp->child(2), "bias");
    register_module("mlp", std::move(mlp));
    register_module("resid_dropout", nn::dropout(s, p));
  }

  TensorPtr forward(const TensorPtr &x) override {
    return checkpointed(*this, checkpoint_, [&] {
      TensorPtr a = child_slot(4).forward(child_slot(1).forward(child_slot(0).forward(x)));
      TensorPtr h = nn::call(mixp_add, x.get(), a.get());
      TensorPtr m = child_slot(3).forward(child_slot(2).forward(h));
      return nn::call(mixp_add, h.get(), m.get());
    });
  }

 private:
  bool checkpoint_;
};

class Gpt final : public Module {
 public:
  Gpt(Session *s, const GptConfig &c, mixp_dtype dtype, bool checkpoint)
      : Module(s, "GPT"), config_(c) {
    const int64_t e = c.n_embd, n_layer = c.n_layer;
    const double p = c.dropout;
    auto wte = embedding(s, c.vocab, e, dtype);
    auto wpe = embedding(s, c.block_size, e, dtype);
    init_normal(*wte, "weight", kStd);
    init_normal(*wpe, "weight", kStd);
    wte_ = register_module("wte", std::move(wte));
    register_module("wpe", std::move(wpe));
    register_module("drop", nn::dropout(s, p));
    auto h = std::make_unique<nn::Sequential>(s);
    for (int64_t i = 0; i < n_layer; ++i)
      h->append(std::make_unique<Block>(s, e, c.n_head, p, n_layer, dtype, checkpoint, c.gelu_tanh));
    register_module("h", std::move(h));
    register_module("ln_f", layernorm(s, e, dtype));
  }

  TensorPtr forward(const TensorPtr &idx) override {
    if (nn::ndim_of(idx) != 2 || mixp_tensor_dtype(idx.get()) != MIXP_I64)
      fail(MIXP_ERR_SHAPE, "mixp_module_forward: gpt expects I64 token indices [B, T], got ",
           mixp_dtype_name(mixp_tensor_dtype(idx.get())), " ", nn::shape_string(idx));
    const int64_t t = nn::dim_of(idx, 1);
    if (t < 1 || t > config_.block_size)
      fail(MIXP_ERR_SHAPE, "mixp_module_forward: gpt: sequence length ", t,
           " must be in [1, block_size=", config_.block_size, "]");
    TensorPtr pos = nn::call(mixp_tensor_arange, mixp_tensor_session(idx.get()), MIXP_I64, 0.0,
                             double(t), 1.0);
    TensorPtr tok = child_slot(0).forward(idx);
    TensorPtr x = nn::call(mixp_add, tok.get(), child_slot(1).forward(pos).get());
    x = child_slot(2).forward(x);
    x = child_slot(4).forward(child_slot(3).forward(x));
    // The output projection reuses the token embedding (weight tying), read
    // from its slot each time so that a replaced (decorated) tensor is used.
    TensorPtr w = nn::parameter_named(&child_slot(wte_), "weight");
    return nn::call(mixp_linear, x.get(), w.get(), static_cast<const mixp_tensor *>(nullptr));
  }

  const GptConfig &config() const noexcept { return config_; }

 private:
  GptConfig config_;
  size_t wte_ = 0;
};

}  // namespace

const GptConfig *gpt_config(const Module &m) {
  const auto *g = dynamic_cast<const Gpt *>(&m);
  return g ? &g->config() : nullptr;
}

std::unique_ptr<Module> make_gpt(Session *s, Config &cfg) {
  const int64_t kMax = int64_t(1) << 24;
  const int64_t n_layer = cfg.get_int("n_layer", 2, 1, 4096);
  const int64_t n_head = cfg.get_int("n_head", 2, 1, 4096);
  const int64_t n_embd = cfg.get_int("n_embd", 64, 1, 1 << 16);
  const int64_t vocab = cfg.get_int("vocab", 65, 1, kMax);
  const int64_t block = cfg.get_int("block_size", 64, 1, kMax);
  const double p = cfg.get_double("dropout", 0.0, 0.0, 1.0, true);
  // GPT-2 was trained with the tanh approximation (HF's "gelu_new"); erf
  // stays the default so that existing models compute what they did.
  const bool gelu_tanh = cfg.get_choice("gelu", "erf", {"erf", "tanh"}) == "tanh";
  const mixp_dtype dtype = cfg.get_dtype();
  const bool checkpoint = get_checkpoint(cfg);
  cfg.finish();
  if (n_embd % n_head != 0)
    fail(MIXP_ERR_INVALID_ARGUMENT, "mixp_model_create: gpt: n_embd=", n_embd,
         " must be divisible by n_head=", n_head);
  const GptConfig c{n_layer, n_head, n_embd, vocab, block, p, gelu_tanh};
  return std::make_unique<Gpt>(s, c, dtype, checkpoint);
}

}  // namespace mixp::models
