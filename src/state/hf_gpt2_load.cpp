// mixp_model_load_hf_gpt2: a plan that reads and checks the whole file and
// stages every value in fresh tensors (everything that can fail happens
// there), then a commit that copies the staged values into place, so a
// failed import leaves the model and its masters as they were.
#include <sys/stat.h>

#include <algorithm>
#include <map>
#include <set>

#include "autocast/autocast.hpp"
#include "backend/backend.hpp"
#include "core/error.hpp"
#include "state/file_io.hpp"
#include "state/hf_gpt2.hpp"
#include "state/hf_gpt2_layout.hpp"
#include "state/safetensors.hpp"
#include "state/state.hpp"

namespace mixp::state {
namespace {

constexpr const char *kPrefix = "transformer.";

// "h.<i>.<rest>" -> i (and rest); -1 for any other name.
int64_t block_index(const std::string &name, std::string *rest = nullptr) {
  if (name.rfind("h.", 0) != 0) return -1;
  size_t i = 2;
  int64_t v = 0;
  while (i < name.size() && name[i] >= '0' && name[i] <= '9' && i < 12) v = v * 10 + (name[i++] - '0');
  if (i == 2 || i >= name.size() || name[i] != '.') return -1;
  if (rest) *rest = name.substr(i + 1);
  return v;
}

std::string quoted_list(const std::vector<std::string> &names) {
  std::string r;
  const size_t shown = std::min<size_t>(names.size(), 5);
  for (size_t i = 0; i < shown; ++i) r += (i ? ", '" : "'") + names[i] + "'";
  if (names.size() > shown) r += str(" and ", names.size() - shown, " more");
  return r;
}

std::string resolve(const std::string &path) {
  struct stat st;
  if (::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode))
    return path + (path.back() == '/' ? "" : "/") + "model.safetensors";
  return path;
}

// The file, its tensors by name without "transformer.", and which were used.
class HfFile {
 public:
  HfFile(const std::string &path, const char *fn)
      : what_(str(fn, ": '", path, "'")), bytes_(read_file(path, fn)),
        file_(parse(bytes_.data(), bytes_.size(), what_)) {
    verify_checksums(file_, bytes_.data(), false, what_);
    for (const Entry &e : file_.tensors) {
      const bool prefixed = e.name.rfind(kPrefix, 0) == 0;
      if (prefixed) prefixed_ = true;
      const std::string key = prefixed ? e.name.substr(std::string(kPrefix).size()) : e.name;
      if (!by_name_.emplace(key, &e).second)
        fail(MIXP_ERR_SHAPE, what_, " holds both '", key, "' and '", kPrefix, key,
             "' (one tensor twice)");
    }
  }

  const std::string &what() const noexcept { return what_; }
  const uint8_t *data(const Entry &e) const noexcept {
    return bytes_.data() + file_.data_offset + e.begin;
  }
  // The name a tensor has (or would have) in this file.
  std::string file_name(const std::string &key) const {
    return key == "lm_head.weight" || !prefixed_ ? key : kPrefix + key;
  }
  const Entry *find(const std::string &key) const {
    auto it = by_name_.find(key);
    return it == by_name_.end() ? nullptr : it->second;
  }
  const Entry *take(const std::string &key) {
    const Entry *e = find(key);
    if (e) used_.insert(key);
    return e;
  }
  const std::map<std::string, const Entry *> &tensors() const noexcept { return by_name_; }
  bool used(const std::string &key) const { return used_.count(key) != 0; }

 private:
  std::string what_;
  std::vector<uint8_t> bytes_;
  File file_;
  bool prefixed_ = false;
  std::map<std::string, const Entry *> by_name_;
  std::set<std::string> used_;
};

std::string shape_text(const Entry &e) { return shape_str(e.shape.data(), int(e.shape.size())); }

// The GPT-2 the file's shapes describe must be the model's.
void check_dimensions(const HfFile &f, const models::GptConfig &c) {
  const Entry *wte = f.find("wte.weight"), *wpe = f.find("wpe.weight");
  int64_t n_layer = 0;
  for (const auto &[key, e] : f.tensors()) n_layer = std::max(n_layer, block_index(key) + 1);
  std::string diff;
  auto differs = [&](const char *file_key, int64_t file_v, const char *model_key, int64_t model_v) {
    if (file_v != model_v)
      diff += str(diff.empty() ? "" : ", ", file_key, "=", file_v, " (the model has ", model_key,
                  "=", model_v, ")");
  };
  // A file without blocks is no GPT-2 at all: the missing tensors say more.
  if (n_layer > 0) differs("n_layer", n_layer, "n_layer", c.n_layer);
  if (wte && wte->shape.size() == 2) {
    differs("vocab_size", wte->shape[0], "vocab", c.vocab);
    differs("n_embd", wte->shape[1], "n_embd", c.n_embd);
  }
  if (wpe && wpe->shape.size() == 2) differs("n_positions", wpe->shape[0], "block_size", c.block_size);
  if (!diff.empty())
    fail(MIXP_ERR_SHAPE, f.what(), " is a GPT-2 of another size: its tensors give ", diff,
         "; create the model with the checkpoint's n_layer, n_embd, vocab and block_size "
         "(and n_head from its config.json)");
}

// A parameter and its staged new values.
struct Staged {
  Tensor *dst;
  TensorPtr src;
};

TensorPtr upload(Session *s, DType dtype, const Shape &shape, const std::vector<uint8_t> &bytes) {
  TensorPtr t = empty(s, dtype, shape);
  if (!bytes.empty()) s->backend->copy_from_host(t->data(), bytes.data(), bytes.size());
  return t;
}

// Checks one parameter's tensor (dtype, shape) and returns its entry, or
// null when the file lacks it.
const Entry *check_param(HfFile &f, const std::string &key, const Shape &want, DType *from) {
  const Entry *e = f.take(key);
  if (!e) return nullptr;
  if (!hf::weight_dtype(e->dtype, from))
    fail(MIXP_ERR_DTYPE, f.what(), ": tensor '", e->name, "' is ", e->dtype,
         "; GPT-2 weights must be F32, F16 or BF16");
  bool same = e->shape.size() == size_t(want.ndim);
  for (int i = 0; same && i < want.ndim; ++i) same = e->shape[size_t(i)] == want[i];
  if (!same)
    fail(MIXP_ERR_SHAPE, f.what(), " does not fit: tensor '", e->name, "' has shape ",
         shape_text(*e), ", the model's ", e->shape.size() == 2 ? "(as HF stores it) " : "", "is ",
         shape_str(want));
  return e;
}

void stage(const HfFile &f, const Entry &e, DType from, const Named &n, bool conv1d,
           std::vector<Staged> &out) {
  Session *s = n.tensor->session.get();
  const Shape shape = shape_of(*n.tensor);
  const int64_t count = shape.numel(), rows = conv1d ? shape[1] : 1;
  if (n.master) {
    std::vector<uint8_t> m = hf::convert(from, f.data(e), count, MIXP_F32, conv1d, rows);
    out.push_back({n.tensor, upload(s, n.tensor->dtype, shape,
                                    hf::convert(MIXP_F32, m.data(), count, n.tensor->dtype, false, 1))});
    out.push_back({n.master, upload(s, MIXP_F32, shape, m)});
  } else {
    out.push_back({n.tensor, upload(s, n.tensor->dtype, shape,
                                    hf::convert(from, f.data(e), count, n.tensor->dtype, conv1d, rows))});
  }
}

// lm_head.weight, when present, must be wte's values: mixp's gpt ties them.
void check_tied_head(HfFile &f) {
  const Entry *head = f.take("lm_head.weight");
  const Entry *wte = f.find("wte.weight");
  if (!head || !wte) return;
  DType hd, wd;
  const bool same_shape = head->shape == wte->shape;
  if (!hf::weight_dtype(head->dtype, &hd) || !hf::weight_dtype(wte->dtype, &wd) || !same_shape ||
      !hf::same_values(hd, f.data(*head), wd, f.data(*wte), int64_t(head->nbytes() / head->elem_size)))
    fail(MIXP_ERR_SHAPE, f.what(), " does not fit: tensor 'lm_head.weight' (", head->dtype, " ",
         shape_text(*head), ") is not a copy of '", wte->name,
         "': the file's output layer is untied, and the gpt model ties it to the token embedding");
}

// An older file's h.<i>.attn.bias must be the causal mask [1, 1, P, P].
void check_causal_mask(const HfFile &f, const Entry &e, int64_t positions) {
  DType t = MIXP_F32;
  const bool bytes = e.dtype == "BOOL" || e.dtype == "U8";
  const bool ok_dtype = bytes || (from_file_dtype(e.dtype, &t) && is_float(t));
  const bool ok_shape = e.shape.size() == 4 && e.shape[0] == 1 && e.shape[1] == 1 &&
                        e.shape[2] == positions && e.shape[3] == positions;
  if (!ok_dtype || !ok_shape)
    fail(MIXP_ERR_SHAPE, f.what(), " does not fit: tensor '", e.name, "' (", e.dtype, " ",
         shape_text(e), ") is not GPT-2's causal mask [1, 1, ", positions, ", ", positions, "]");
  const uint8_t *p = f.data(e);
  const size_t es = e.elem_size;
  for (int64_t i = 0; i < positions; ++i)
    for (int64_t j = 0; j < positions; ++j) {
      const uint8_t *q = p + size_t(i * positions + j) * es;
      const bool one = bytes ? *q != 0 : element_to_double(q, t) != 0.0;
      if (one != (j <= i))
        fail(MIXP_ERR_SHAPE, f.what(), " does not fit: tensor '", e.name, "' is not the causal "
             "mask at [0, 0, ", i, ", ", j, "]: the gpt model's attention is causal");
    }
}

// What remains after the parameters: the tied head, the mask buffers of
// older files, and nothing else.
void check_rest(HfFile &f, const models::GptConfig &c) {
  check_tied_head(f);
  std::vector<std::string> unexpected;
  for (const auto &[key, e] : f.tensors()) {
    if (f.used(key)) continue;
    std::string rest;
    const int64_t b = block_index(key, &rest);
    if (b >= 0 && b < c.n_layer && rest == "attn.bias") {
      check_causal_mask(f, *e, c.block_size);
    } else if (b >= 0 && b < c.n_layer && rest == "attn.masked_bias" && e->shape.size() <= 1 &&
               e->nbytes() == e->elem_size) {
      // The masking value of old transformers versions; mixp masks exactly.
    } else {
      unexpected.push_back(e->name);
    }
  }
  if (!unexpected.empty())
    fail(MIXP_ERR_SHAPE, f.what(), " does not fit: it holds tensors that no gpt parameter takes: ",
         quoted_list(unexpected));
}

}  // namespace

void load_hf_gpt2(Module &m, const models::GptConfig &c, Optimizer *opt, const std::string &path,
                  const char *fn) {
  std::vector<Optimizer *> opts;
  if (opt) opts.push_back(opt);
  const std::vector<Named> named = named_tensors({&m}, {""}, {}, opts, fn);
  const std::string weights = resolve(path);
  check_hf_gpt2_config(weights, c, fn);
  HfFile f(weights, fn);
  check_dimensions(f, c);
  std::vector<std::string> missing;
  std::vector<Staged> staged;
  for (const Named &n : named) {
    const hf::Mapped map = hf::map_name(n.name);
    DType from = MIXP_F32;
    const Entry *e = check_param(f, map.hf_name, hf::file_shape(shape_of(*n.tensor), map.conv1d), &from);
    if (!e) {
      missing.push_back(f.file_name(map.hf_name));
      continue;
    }
    if (missing.empty()) stage(f, *e, from, n, map.conv1d, staged);
  }
  if (!missing.empty())
    fail(MIXP_ERR_SHAPE, f.what(), " does not fit: it lacks ", missing.size(), " of the gpt's ",
         named.size(), " tensors: ", quoted_list(missing));
  check_rest(f, c);

  for (const Staged &st : staged)
    if (st.dst->numel() > 0) st.dst->session->backend->copy(view_of(*st.src), view_of(*st.dst));
  autocast::clear_cache(m.session());
}

}  // namespace mixp::state
