// Hugging Face GPT-2 checkpoints for the zoo's gpt: mixp_model_load_hf_gpt2
// and mixp_model_save_hf_gpt2 (mixp.h, docs/model-zoo.md "GPT-2 weights").
//
// The layout transformers' GPT2LMHeadModel writes (save_pretrained, safetensors):
//   transformer.wte.weight [V, E]      -> wte.weight
//   transformer.wpe.weight [P, E]      -> wpe.weight
//   transformer.h.<i>.ln_1.{weight,bias}, ln_2, transformer.ln_f  (same names)
//   transformer.h.<i>.attn.c_attn.{weight [E, 3E], bias} -> attn.in_proj_{weight,bias}
//   transformer.h.<i>.attn.c_proj.{weight [E, E], bias}  -> attn.out_proj.{weight,bias}
//   transformer.h.<i>.mlp.c_fc.{weight [E, 4E], bias}    -> mlp.c_fc.{weight,bias}
//   transformer.h.<i>.mlp.c_proj.{weight [4E, E], bias}  -> mlp.c_proj.{weight,bias}
// The four weights are Conv1D's [in, out]; mixp's Linear holds [out, in], so
// they are transposed both ways. c_attn stays packed: mixp's in-projection
// stacks q, k, v in the same order. Files of GPT2Model (the hub's original
// gpt2) carry the same names without "transformer.". lm_head.weight is
// tied to wte: transformers omits it; a file that holds it must hold wte's
// values. The causal-mask buffers of older files (h.<i>.attn.bias [1, 1, P,
// P], h.<i>.attn.masked_bias []) are accepted: the mask must be the causal
// one mixp's attention applies; masked_bias is ignored.
#pragma once
#include <string>

#include "core/dtype.hpp"
#include "models/models.hpp"
#include "optim/optimizer.hpp"

namespace mixp::state {

// Validates the whole file against the model (its config.json when there
// is one, names, shapes, dtypes, the GPT-2 size they imply) and only then
// writes every parameter (and the master an optimizer keeps for it). `path`
// is a safetensors file or a directory holding model.safetensors.
void load_hf_gpt2(Module &m, const models::GptConfig &c, Optimizer *opt, const std::string &path,
                  const char *fn);

// When a config.json sits beside `weights` (the safetensors file), checks
// it against the model: model_type gpt2, GPT-2's activation, LayerNorm
// epsilon, attention scaling and tying, and the sizes (n_head included,
// which no tensor shows). Fails naming the key; no config.json is no check.
void check_hf_gpt2_config(const std::string &weights, const models::GptConfig &c, const char *fn);

// Writes dir/model.safetensors (values in `dtype`: F32, F16 or BF16; the
// masters of decorated parameters when `opt` keeps them) and dir/config.json,
// creating `dir` when it does not exist.
void save_hf_gpt2(const Module &m, const models::GptConfig &c, Optimizer *opt,
                  const std::string &dir, DType dtype, const char *fn);

}  // namespace mixp::state
