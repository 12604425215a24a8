// mixp_model_save_hf_gpt2: the gpt's parameters (or their fp32 masters) in
// the layout transformers' GPT2LMHeadModel.from_pretrained reads, beside the
// config.json it needs.
#include <sys/stat.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "core/error.hpp"
#include "state/file_io.hpp"
#include "state/hf_gpt2.hpp"
#include "state/hf_gpt2_layout.hpp"
#include "state/safetensors.hpp"
#include "state/state.hpp"

namespace mixp::state {
namespace {

void make_dir(const std::string &dir, const char *fn) {
  struct stat st;
  if (::stat(dir.c_str(), &st) == 0) {
    if (!S_ISDIR(st.st_mode))
      fail(MIXP_ERR_IO, fn, ": '", dir, "' exists and is not a directory");
    return;
  }
  if (::mkdir(dir.c_str(), 0777) != 0 && errno != EEXIST)
    fail(MIXP_ERR_IO, fn, ": cannot create the directory '", dir, "': ", std::strerror(errno));
}

std::string number(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

const char *torch_dtype(DType t) noexcept {
  return t == MIXP_F16 ? "float16" : t == MIXP_BF16 ? "bfloat16" : "float32";
}

// transformers' GPT2Config for the model: the architecture's keys, GELU as
// HF names it ("gelu_new" is the tanh approximation, "gelu" the erf form),
// LayerNorm's epsilon (the zoo's 1e-5) and tied output embeddings. GPT-2's
// <|endoftext|> is its last token (50256); the last token here too, so that
// transformers finds the ids inside a smaller vocabulary.
std::string config_json(const models::GptConfig &c, DType dtype) {
  const std::string p = number(c.dropout);
  return str("{\n"
             "  \"architectures\": [\"GPT2LMHeadModel\"],\n"
             "  \"model_type\": \"gpt2\",\n"
             "  \"vocab_size\": ", c.vocab, ",\n",
             "  \"n_positions\": ", c.block_size, ",\n",
             "  \"n_embd\": ", c.n_embd, ",\n",
             "  \"n_layer\": ", c.n_layer, ",\n",
             "  \"n_head\": ", c.n_head, ",\n",
             "  \"n_inner\": null,\n"
             "  \"activation_function\": \"", c.gelu_tanh ? "gelu_new" : "gelu", "\",\n",
             "  \"resid_pdrop\": ", p, ",\n  \"embd_pdrop\": ", p, ",\n  \"attn_pdrop\": ", p, ",\n",
             "  \"layer_norm_epsilon\": 1e-05,\n"
             "  \"initializer_range\": 0.02,\n"
             "  \"scale_attn_weights\": true,\n"
             "  \"scale_attn_by_inverse_layer_idx\": false,\n"
             "  \"reorder_and_upcast_attn\": false,\n"
             "  \"tie_word_embeddings\": true,\n"
             "  \"bos_token_id\": ", c.vocab - 1, ",\n  \"eos_token_id\": ", c.vocab - 1, ",\n",
             "  \"torch_dtype\": \"", torch_dtype(dtype), "\"\n"
             "}\n");
}

struct OutValues {
  OutTensor meta;
  std::vector<uint8_t> bytes;
};

}  // namespace

void save_hf_gpt2(const Module &m, const models::GptConfig &c, Optimizer *opt,
                  const std::string &dir, DType dtype, const char *fn) {
  std::vector<Optimizer *> opts;
  if (opt) opts.push_back(opt);
  const std::vector<Named> named =
      named_tensors({const_cast<Module *>(&m)}, {""}, {}, opts, fn);
  std::vector<OutValues> out;
  for (const Named &n : named) {
    const hf::Mapped map = hf::map_name(n.name);
    const Tensor &src = n.master ? *n.master : *n.tensor;
    const Shape shape = shape_of(src);
    const std::vector<uint8_t> bytes = hf::host_bytes(src);
    OutValues o;
    o.meta.name = std::string("transformer.") + map.hf_name;
    o.meta.dtype = file_dtype(dtype);
    const Shape fs = hf::file_shape(shape, map.conv1d);
    o.meta.shape.assign(fs.d, fs.d + fs.ndim);
    o.bytes = hf::convert(src.dtype, bytes.data(), shape.numel(), dtype, map.conv1d,
                          map.conv1d ? shape[0] : 1);
    o.meta.nbytes = o.bytes.size();
    out.push_back(std::move(o));
  }
  std::vector<OutTensor> metas;
  for (const OutValues &o : out) metas.push_back(o.meta);
  // transformers refuses a safetensors file whose "format" is not one it knows.
  const std::string header = build_header(metas, {{"format", "pt"}});
  std::vector<Piece> pieces{{header.data(), header.size()}};
  for (const OutValues &o : out) pieces.push_back({o.bytes.data(), o.bytes.size()});
  make_dir(dir, fn);
  const std::string base = dir + (dir.back() == '/' ? "" : "/");
  write_atomic(base + "model.safetensors", pieces, fn);
  const std::string json = config_json(c, dtype);
  write_atomic(base + "config.json", {{json.data(), json.size()}}, fn);
}

}  // namespace mixp::state
