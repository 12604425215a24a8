// Embedding: a lookup table [num_embeddings, dim] drawn from N(0, 1) as in
// torch.nn.Embedding, with the padding row (if any) zeroed and frozen by the
// embedding op (it gets no gradient).
#include <limits>

#include "core/error.hpp"
#include "nn/api_call.hpp"
#include "nn/layers.hpp"

namespace mixp {
namespace {

class Embedding final : public Module {
 public:
  Embedding(Session *s, int64_t n, int64_t d, int64_t padding_idx, DType dtype)
      : Module(s, "Embedding"), padding_idx_(padding_idx) {
    const int64_t shape[2] = {n, d};
    TensorPtr w = nn::normal_tensor(s, dtype, shape, 2, 1.0);
    if (padding_idx >= 0) {
      TensorPtr row = nn::call(mixp_slice, w.get(), 0, padding_idx, padding_idx + 1, int64_t(1));
      TensorPtr zero = nn::full_tensor(s, dtype, nullptr, 0, 0.0);
      nn::check(mixp_tensor_copy_(row.get(), zero.get()));
    }
    weight_ = register_parameter("weight", nn::as_parameter(std::move(w)));
  }

  TensorPtr forward(const TensorPtr &idx) override {
    return nn::call(mixp_embedding, param_slot(weight_).get(), idx.get(), padding_idx_);
  }

 private:
  int64_t padding_idx_;
  size_t weight_ = 0;
};

}  // namespace

std::unique_ptr<Module> make_embedding(Session *s, int64_t num_embeddings, int64_t dim,
                                       int64_t padding_idx, DType dtype, const char *fn) {
  if (num_embeddings < 1)
    fail(MIXP_ERR_INVALID_ARGUMENT, fn, ": num_embeddings must be >= 1, got ", num_embeddings);
  if (dim < 1) fail(MIXP_ERR_INVALID_ARGUMENT, fn, ": dim must be >= 1, got ", dim);
  if (num_embeddings > std::numeric_limits<int64_t>::max() / 8 / dim)
    fail(MIXP_ERR_INVALID_ARGUMENT, fn, ": num_embeddings x dim (", num_embeddings, " x ", dim,
         ") is too large");
  if (padding_idx < -1 || padding_idx >= num_embeddings)
    fail(MIXP_ERR_INVALID_ARGUMENT, fn, ": padding_idx must be -1 (none) or in [0, ",
         num_embeddings, "), got ", padding_idx);
  check_param_dtype(dtype, fn);
  return std::make_unique<Embedding>(s, num_embeddings, dim, padding_idx, dtype);
}

}  // namespace mixp
