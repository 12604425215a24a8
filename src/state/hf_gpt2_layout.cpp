#include "state/hf_gpt2_layout.hpp"

#include <cstring>

#include "autograd/node.hpp"
#include "backend/backend.hpp"
#include "core/error.hpp"
#include "ops/ops.hpp"
#include "state/state.hpp"

namespace mixp::state::hf {
namespace {

bool ends_with(const std::string &s, const std::string &tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

}  // namespace

Mapped map_name(const std::string &n) {
  // (mixp suffix, HF suffix, Conv1D) inside a block "h.<i>."; the rest of a
  // block's names and the top-level ones are the same in both layouts.
  struct Rename {
    const char *mixp, *hf;
    bool conv1d;
  };
  static const Rename kBlock[] = {
      {".attn.in_proj_weight", ".attn.c_attn.weight", true},
      {".attn.in_proj_bias", ".attn.c_attn.bias", false},
      {".attn.out_proj.weight", ".attn.c_proj.weight", true},
      {".attn.out_proj.bias", ".attn.c_proj.bias", false},
      {".mlp.c_fc.weight", ".mlp.c_fc.weight", true},
      {".mlp.c_fc.bias", ".mlp.c_fc.bias", false},
      {".mlp.c_proj.weight", ".mlp.c_proj.weight", true},
      {".mlp.c_proj.bias", ".mlp.c_proj.bias", false},
      {".ln_1.weight", ".ln_1.weight", false},
      {".ln_1.bias", ".ln_1.bias", false},
      {".ln_2.weight", ".ln_2.weight", false},
      {".ln_2.bias", ".ln_2.bias", false},
  };
  if (n == "wte.weight" || n == "wpe.weight" || n == "ln_f.weight" || n == "ln_f.bias")
    return {n, false};
  if (n.rfind("h.", 0) == 0)
    for (const Rename &r : kBlock)
      if (ends_with(n, r.mixp))
        return {n.substr(0, n.size() - std::strlen(r.mixp)) + r.hf, r.conv1d};
  fail(MIXP_ERR_INTERNAL, "hf_gpt2: the gpt parameter '", n, "' has no Hugging Face name");
}

Shape file_shape(const Shape &model_shape, bool conv1d) {
  Shape s = model_shape;
  if (conv1d) std::swap(s[0], s[1]);
  return s;
}

std::vector<uint8_t> convert(DType from, const uint8_t *src, int64_t count, DType to,
                             bool transpose, int64_t rows) {
  const size_t fs = dtype_size(from), ts = dtype_size(to);
  std::vector<uint8_t> out(size_t(count) * ts);
  if (!transpose) {
    if (from == to) {
      if (!out.empty()) std::memcpy(out.data(), src, out.size());
    } else {
      for (int64_t i = 0; i < count; ++i)
        double_to_element(element_to_double(src + size_t(i) * fs, from), &out[size_t(i) * ts], to);
    }
    return out;
  }
  const int64_t cols = rows ? count / rows : 0;
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c)
      double_to_element(element_to_double(src + size_t(r * cols + c) * fs, from), &out[size_t(c * rows + r) * ts],
                        to);
  return out;
}

bool same_values(DType a, const uint8_t *pa, DType b, const uint8_t *pb, int64_t n) noexcept {
  const size_t as = dtype_size(a), bs = dtype_size(b);
  for (int64_t i = 0; i < n; ++i)
    if (element_to_double(pa + size_t(i) * as, a) != element_to_double(pb + size_t(i) * bs, b)) return false;
  return true;
}

std::vector<uint8_t> host_bytes(const Tensor &t) {
  TensorPtr c = TensorPtr::share(const_cast<Tensor *>(&t));
  if (!t.is_contiguous()) {
    NoGradGuard no_grad(t.session.get());
    c = clone(c);
  }
  std::vector<uint8_t> bytes(size_t(t.numel()) * t.elem_size());
  if (!bytes.empty()) t.session->backend->copy_to_host(bytes.data(), c->data(), bytes.size());
  return bytes;
}

bool weight_dtype(const std::string &file_dtype, DType *out) noexcept {
  DType t;
  if (!from_file_dtype(file_dtype, &t) || (t != MIXP_F32 && t != MIXP_F16 && t != MIXP_BF16))
    return false;
  *out = t;
  return true;
}

}  // namespace mixp::state::hf
