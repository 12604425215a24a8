// The config.json beside Hugging Face GPT-2 weights: what the tensors do not
// say (n_head, the activation, LayerNorm's epsilon, attention scaling,
// tying) checked against the zoo gpt before any value is read. The reader
// takes the top-level object's scalar members and skips nested values
// (transformers writes task_specific_params, id2label, ...); it is bounded
// in size and nesting, and fails with MIXP_ERR_CORRUPT on malformed JSON.
#include <sys/stat.h>

#include <cctype>
#include <cmath>
#include <cstdlib>
#include <map>

#include "core/error.hpp"
#include "state/file_io.hpp"
#include "state/hf_gpt2.hpp"

namespace mixp::state {
namespace {

constexpr size_t kMaxConfigBytes = size_t(1) << 20;
constexpr int kMaxDepth = 64;

// A scalar member: its JSON kind ('s' string, 'n' number, 'b' true/false,
// 'z' null, 'o' object or array) and text.
struct Scalar {
  char kind;
  std::string text;
};

class ConfigReader {
 public:
  ConfigReader(const std::vector<uint8_t> &b, const std::string &what) : b_(b), what_(what) {}

  std::map<std::string, Scalar> members() {
    std::map<std::string, Scalar> out;
    expect('{');
    if (accept('}')) return finish(out);
    do {
      std::string key = string();
      expect(':');
      out[key] = value(0);
    } while (accept(','));
    expect('}');
    return finish(out);
  }

 private:
  [[noreturn]] void bad(const char *msg) const {
    fail(MIXP_ERR_CORRUPT, what_, " is not valid JSON: byte ", pos_, ": ", msg);
  }
  void ws() {
    while (pos_ < b_.size() && (b_[pos_] == ' ' || b_[pos_] == '\n' || b_[pos_] == '\r' || b_[pos_] == '\t'))
      ++pos_;
  }
  bool accept(char c) {
    ws();
    if (pos_ < b_.size() && b_[pos_] == uint8_t(c)) return ++pos_, true;
    return false;
  }
  void expect(char c) {
    if (!accept(c)) bad(str("expected '", c, "'").c_str());
  }
  std::map<std::string, Scalar> finish(std::map<std::string, Scalar> &out) {
    ws();
    if (pos_ != b_.size()) bad("unexpected bytes after the object");
    return std::move(out);
  }

  // Strings keep their escapes undecoded except \" and \\: the keys and
  // values compared here are plain ASCII.
  std::string string() {
    ws();
    if (pos_ >= b_.size() || b_[pos_] != '"') bad("expected a string");
    std::string s;
    for (++pos_;; ++pos_) {
      if (pos_ >= b_.size()) bad("unterminated string");
      const uint8_t c = b_[pos_];
      if (c == '"') return ++pos_, s;
      if (c < 0x20) bad("control character in a string");
      if (c == '\\') {
        if (++pos_ >= b_.size()) bad("unterminated escape");
        if (b_[pos_] != '"' && b_[pos_] != '\\') s.push_back('\\');
      }
      s.push_back(char(b_[pos_]));
    }
  }

  Scalar value(int depth) {
    ws();
    if (pos_ >= b_.size()) bad("expected a value");
    const uint8_t c = b_[pos_];
    if (c == '"') return {'s', string()};
    if (c == '{' || c == '[') {
      skip_nested(depth);
      return {'o', ""};
    }
    const size_t start = pos_;
    while (pos_ < b_.size() && (std::isalnum(b_[pos_]) || b_[pos_] == '-' || b_[pos_] == '+' || b_[pos_] == '.'))
      ++pos_;
    const std::string word(b_.begin() + long(start), b_.begin() + long(pos_));
    if (word == "true" || word == "false") return {'b', word};
    if (word == "null") return {'z', word};
    char *end = nullptr;
    std::strtod(word.c_str(), &end);
    if (word.empty() || *end != '\0') bad("expected a value");
    return {'n', word};
  }

  void skip_nested(int depth) {
    if (depth >= kMaxDepth) bad("nested too deeply");
    const char close = b_[pos_++] == '{' ? '}' : ']';
    if (accept(close)) return;
    do {
      if (close == '}') {
        string();
        expect(':');
      }
      value(depth + 1);
    } while (accept(','));
    expect(close);
  }

  const std::vector<uint8_t> &b_;
  const std::string &what_;
  size_t pos_ = 0;
};

// The directory part of a weights path ("." for a bare file name).
std::string directory_of(const std::string &weights) {
  const size_t slash = weights.find_last_of('/');
  return slash == std::string::npos ? "." : weights.substr(0, slash == 0 ? 1 : slash);
}

class Checker {
 public:
  Checker(std::map<std::string, Scalar> m, std::string what) : m_(std::move(m)), what_(std::move(what)) {}

  // A size key, which must be the model's (the tensors give most of them too).
  void size(const char *key, int64_t model_v, const char *model_key) {
    auto it = m_.find(key);
    if (it == m_.end()) return;
    if (it->second.kind != 'n' || it->second.text != std::to_string(model_v))
      diff_ += str(diff_.empty() ? "" : ", ", key, "=", it->second.text, " (the model has ", model_key,
                   "=", model_v, ")");
  }
  // A key GPT-2 has one value of (absent means that value).
  void same(const char *key, const char *want, const char *why) {
    auto it = m_.find(key);
    if (it != m_.end() && it->second.text != want)
      fail(MIXP_ERR_INVALID_ARGUMENT, what_, " describes no GPT-2 that the gpt model computes: ", key,
           " is ", it->second.text, "; ", why);
  }
  const Scalar *get(const char *key) const {
    auto it = m_.find(key);
    return it == m_.end() ? nullptr : &it->second;
  }
  void report_sizes() const {
    if (!diff_.empty())
      fail(MIXP_ERR_SHAPE, what_, " is of another GPT-2: ", diff_,
           "; create the model with the checkpoint's sizes");
  }
  const std::string &what() const noexcept { return what_; }

 private:
  std::map<std::string, Scalar> m_;
  std::string what_;
  std::string diff_;
};

void check_architecture(const Checker &k) {
  const Scalar *type = k.get("model_type");
  if (type && type->text != "gpt2")
    fail(MIXP_ERR_INVALID_ARGUMENT, k.what(), " is of model_type '", type->text,
         "', not 'gpt2': mixp_model_load_hf_gpt2 reads GPT-2 checkpoints only");
  const Scalar *act = k.get("activation_function");
  if (act && act->text != "gelu_new" && act->text != "gelu_pytorch_tanh")
    fail(MIXP_ERR_INVALID_ARGUMENT, k.what(), " has activation_function '", act->text,
         "'; the gpt model with gelu=tanh computes GPT-2's gelu_new (gelu_pytorch_tanh)");
  const Scalar *eps = k.get("layer_norm_epsilon");
  if (eps && (eps->kind != 'n' || std::strtod(eps->text.c_str(), nullptr) != 1e-5))
    fail(MIXP_ERR_INVALID_ARGUMENT, k.what(), " has layer_norm_epsilon ", eps->text,
         "; the gpt model's LayerNorms use 1e-5 (GPT-2's)");
}

}  // namespace

void check_hf_gpt2_config(const std::string &weights, const models::GptConfig &c, const char *fn) {
  const std::string path = directory_of(weights) + "/config.json";
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) return;  // transformers needs it; the weights do not
  const std::string what = str(fn, ": '", path, "'");
  if (!S_ISREG(st.st_mode) || uint64_t(st.st_size) > kMaxConfigBytes)
    fail(MIXP_ERR_CORRUPT, what, " is not a config file of at most ", kMaxConfigBytes, " bytes");
  const std::vector<uint8_t> bytes = read_file(path, fn);
  Checker k(ConfigReader(bytes, what).members(), what);
  check_architecture(k);
  k.same("scale_attn_weights", "true", "the gpt model scales attention by 1/sqrt(head_dim)");
  k.same("scale_attn_by_inverse_layer_idx", "false", "the gpt model does not scale by layer");
  k.same("tie_word_embeddings", "true", "the gpt model ties its output layer to wte");
  k.same("add_cross_attention", "false", "the gpt model is a decoder without cross-attention");
  k.size("n_layer", c.n_layer, "n_layer");
  k.size("n_head", c.n_head, "n_head");
  k.size("n_embd", c.n_embd, "n_embd");
  k.size("vocab_size", c.vocab, "vocab");
  k.size("n_positions", c.block_size, "block_size");
  const Scalar *inner = k.get("n_inner");
  if (inner && inner->kind != 'z') k.size("n_inner", 4 * c.n_embd, "4 * n_embd");
  k.report_sizes();
}

}  // namespace mixp::state
