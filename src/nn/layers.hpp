// Layer factories behind the public *_create functions, and the containers
// the model zoo assembles networks from. Factories validate their arguments
// with messages naming `fn`.
#pragma once
#include <functional>
#include <memory>
#include <string>

#include "mixp/mixp.h"
#include "nn/module.hpp"

namespace mixp {

std::unique_ptr<Module> make_linear(Session *s, int64_t in_features, int64_t out_features,
                                    bool bias, DType dtype, const char *fn);
std::unique_ptr<Module> make_conv2d(Session *s, int64_t in_channels, int64_t out_channels,
                                    int64_t kernel_h, int64_t kernel_w,
                                    const mixp_conv2d_options *geom, bool bias, DType dtype,
                                    const char *fn);
// layout: where the channels of a 4-D input are (mixp_batchnorm2d_create's
// layer is NCHW; the zoo's convolutional models may run NHWC).
std::unique_ptr<Module> make_batchnorm2d(Session *s, int64_t features, double eps,
                                         double momentum, bool affine, DType dtype,
                                         const char *fn, mixp_layout layout = MIXP_NCHW);
std::unique_ptr<Module> make_layernorm(Session *s, int64_t normalized_size, double eps,
                                       bool affine, DType dtype, const char *fn);
std::unique_ptr<Module> make_embedding(Session *s, int64_t num_embeddings, int64_t dim,
                                       int64_t padding_idx, DType dtype, const char *fn);
std::unique_ptr<Module> make_multihead_attention(Session *s, int64_t embed_dim,
                                                 int64_t num_heads, bool bias, double dropout,
                                                 bool causal, DType dtype, const char *fn);

// Fails with MIXP_ERR_DTYPE unless `dtype` is a float dtype.
void check_param_dtype(DType dtype, const char *fn);

namespace nn {

// Runs its children in registration order, named "0", "1", ... like
// torch.nn.Sequential (so parameter names match torchvision's).
class Sequential final : public Module {
 public:
  explicit Sequential(Session *s) : Module(s, "Sequential") {}
  // Appends a child under the next index and returns it.
  Module &append(std::unique_ptr<Module> m);
  // Appends under an explicit name (a ModuleDict-like container).
  Module &append(std::string name, std::unique_ptr<Module> m);
  TensorPtr forward(const TensorPtr &x) override;
  size_t size() const noexcept { return num_children(); }
};

// A parameterless layer (activation, pooling, dropout, flatten): a named
// function of the input and the training flag. Registering these as children
// keeps torchvision's indices inside Sequentials (classifier.0, classifier.3).
class Functional final : public Module {
 public:
  using Fn = std::function<TensorPtr(const TensorPtr &, bool training)>;
  Functional(Session *s, std::string type_name, Fn f)
      : Module(s, std::move(type_name)), f_(std::move(f)) {}
  TensorPtr forward(const TensorPtr &x) override { return f_(x, training()); }

 private:
  Fn f_;
};

std::unique_ptr<Module> relu(Session *s);
std::unique_ptr<Module> hardswish(Session *s);
std::unique_ptr<Module> dropout(Session *s, double p);
// max_pool2d over square windows.
std::unique_ptr<Module> max_pool2d(Session *s, int64_t kernel, int64_t stride, int64_t pad,
                                   mixp_layout layout = MIXP_NCHW);
// Global average pooling to [N, C, 1, 1] (NCHW) or [N, 1, 1, C] (NHWC):
// flattened, the same [N, C] either way.
std::unique_ptr<Module> global_avg_pool(Session *s, mixp_layout layout = MIXP_NCHW);
// Merges dims start_dim..-1.
std::unique_ptr<Module> flatten(Session *s, int start_dim);

}  // namespace nn
}  // namespace mixp
