// Default casting categories, mapped from PyTorch's CUDA autocast lists
// (aten/src/ATen/autocast_mode.h) onto mixp's op names; see
// reference/amp-semantics.md §2.1. Ops PyTorch leaves to type promotion
// (add, mul, cat) are Promote here because mixp ops require equal dtypes.
#include "amp/policy.hpp"

#include <iterator>

namespace mixp::amp {

namespace {

constexpr OpInfo kOps[] = {
    // lower_precision_fp: the matrix products.
    {"matmul", Category::Lower},
    {"bmm", Category::Lower},
    {"linear", Category::Lower},
    {"conv2d", Category::Lower},
    {"scaled_dot_product_attention", Category::Lower},
    // fp32: pointwise math with large range, softmax family, reductions, losses.
    {"exp", Category::Fp32},
    {"log", Category::Fp32},
    {"pow", Category::Fp32},
    {"rdiv_scalar", Category::Fp32},  // PyTorch's reciprocal
    {"softmax", Category::Fp32},
    {"log_softmax", Category::Fp32},
    {"sum", Category::Fp32},
    {"mean", Category::Fp32},
    {"cross_entropy", Category::Fp32},
    {"mse_loss", Category::Fp32},
    {"batch_norm", Category::Fp32},
    {"layer_norm", Category::Fp32},
    {"group_norm", Category::Fp32},
    // promote: binary ops and concatenation.
    {"add", Category::Promote},
    {"sub", Category::Promote},
    {"mul", Category::Promote},
    {"div", Category::Promote},
    {"cat", Category::Promote},
    // the rest run in their inputs' dtype under O1.
    {"neg", Category::Other},
    {"sqrt", Category::Other},
    {"relu", Category::Other},
    {"gelu", Category::Other},
    {"sigmoid", Category::Other},
    {"tanh", Category::Other},
    {"add_scalar", Category::Other},
    {"mul_scalar", Category::Other},
    {"rsub_scalar", Category::Other},
    {"dropout", Category::Other},
    {"max", Category::Other},
    {"max_pool2d", Category::Other},
    {"avg_pool2d", Category::Other},
    {"adaptive_avg_pool2d", Category::Other},
    {"hardswish", Category::Other},
    {"hardsigmoid", Category::Other},
    {"silu", Category::Other},
    {"embedding", Category::Other},
    {"pad", Category::Other},

    // data movement and indices: never cast (argmax of rounded values could
    // pick another position).
    {"argmax", Category::Neutral},
    {"cast", Category::Neutral},
    {"contiguous", Category::Neutral},
    {"reshape", Category::Neutral},
    {"transpose", Category::Neutral},
    {"permute", Category::Neutral},
    {"slice", Category::Neutral},
    {"split", Category::Neutral},
    {"flatten", Category::Neutral},
};

}  // namespace

int op_count() noexcept { return int(std::size(kOps)); }

const OpInfo &op_info(int index) noexcept { return kOps[index]; }

int op_index(std::string_view name) noexcept {
  for (int i = 0; i < op_count(); ++i)
    if (name == kOps[i].name) return i;
  return -1;
}

const char *category_name(Category c) noexcept {
  switch (c) {
    case Category::Lower: return "lower";
    case Category::Fp32: return "fp32";
    case Category::Promote: return "promote";
    case Category::Other: return "other";
    case Category::Neutral: return "neutral";
  }
  return "?";
}

}  // namespace mixp::amp
