// What load and save of Hugging Face GPT-2 files share: the name of each
// gpt parameter in the HF layout, whether it is a Conv1D weight (stored
// transposed), and float conversion of host values with that transpose.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "core/dtype.hpp"
#include "core/tensor.hpp"

namespace mixp::state::hf {

// One gpt parameter and where it lives in an HF file.
struct Mapped {
  std::string hf_name;  // without the "transformer." prefix
  bool conv1d;          // stored [in, out]: the transpose of mixp's [out, in]
};

// The HF name of a zoo gpt's parameter (its mixp name), e.g.
// "h.0.attn.in_proj_weight" -> {"h.0.attn.c_attn.weight", true}. Fails with
// MIXP_ERR_INTERNAL for a name the zoo's gpt does not have.
Mapped map_name(const std::string &mixp_name);

// The shape the file holds for a parameter of shape `model_shape`.
Shape file_shape(const Shape &model_shape, bool conv1d);

// `count` values of dtype `from` at `src` as dtype `to` (floats only: F64,
// F32, F16, BF16; each value rounds once). With `transpose`, src is a
// row-major [rows, count / rows] matrix and the result its transpose.
std::vector<uint8_t> convert(DType from, const uint8_t *src, int64_t count, DType to,
                             bool transpose, int64_t rows);

// Whether n values of dtype a at pa equal those of dtype b at pb (floats).
bool same_values(DType a, const uint8_t *pa, DType b, const uint8_t *pb, int64_t n) noexcept;

// The values of a float tensor of any layout, in its own dtype.
std::vector<uint8_t> host_bytes(const Tensor &t);

// The file dtypes an HF checkpoint may use for weights.
bool weight_dtype(const std::string &file_dtype, DType *out) noexcept;

}  // namespace mixp::state::hf
