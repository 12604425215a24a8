// The model zoo: networks assembled from the public layers and operations.
// Each factory reads its keys from the Config, calls cfg.finish() (so a bad
// key fails before any parameter is drawn), then builds the model.
#pragma once
#include <functional>
#include <memory>
#include <vector>

#include "models/config.hpp"
#include "nn/module.hpp"

namespace mixp::models {

std::unique_ptr<Module> make_mlp(Session *s, Config &cfg);
std::unique_ptr<Module> make_cnn(Session *s, Config &cfg);
std::unique_ptr<Module> make_resnet(Session *s, Config &cfg);
std::unique_ptr<Module> make_mobilenet_v3(Session *s, Config &cfg);
std::unique_ptr<Module> make_gpt(Session *s, Config &cfg);

// What a zoo gpt was built with (the keys of its config string).
struct GptConfig {
  int64_t n_layer, n_head, n_embd, vocab, block_size;
  double dropout;
  bool gelu_tanh;  // gelu=tanh (GPT-2's approximation) rather than erf
};
// The configuration of `m` when it is a zoo gpt, else null. Valid while `m` lives.
const GptConfig *gpt_config(const Module &m);

// Parses `config` and builds the model it names (aliases resnet18/34/50 and
// mobilenet_v3_small/large preset depth and size).
std::unique_ptr<Module> make_model(Session *s, const char *config, const char *fn);

// ---- building blocks (blocks.cpp), all through the public create functions --

// How a convolution's weight is drawn: PyTorch's layer default, or
// kaiming_normal_(mode="fan_out", nonlinearity="relu") with a zero bias
// (torchvision's ResNet and MobileNetV3).
enum class ConvInit { Default, KaimingFanOut };

// layout: where a convolutional model keeps its activations' channels
// (get_layout; the weights are OIHW either way).
std::unique_ptr<Module> conv2d(Session *s, int64_t in, int64_t out, int64_t kernel,
                               int64_t stride, int64_t pad, int64_t groups, bool bias,
                               mixp_dtype dtype, ConvInit init, mixp_layout layout = MIXP_NCHW);
// (The one block not made through a public create function: the public
// BatchNorm2d is NCHW.)
std::unique_ptr<Module> batchnorm2d(Session *s, int64_t c, double eps, double momentum,
                                    mixp_dtype dtype, mixp_layout layout = MIXP_NCHW);
std::unique_ptr<Module> linear(Session *s, int64_t in, int64_t out, bool bias, mixp_dtype dtype);
std::unique_ptr<Module> layernorm(Session *s, int64_t d, mixp_dtype dtype);
std::unique_ptr<Module> embedding(Session *s, int64_t n, int64_t d, mixp_dtype dtype);
std::unique_ptr<Module> attention(Session *s, int64_t e, int64_t heads, double dropout,
                                  mixp_dtype dtype);

// ---- channels last (blocks.cpp) ---------------------------------------------
// The key channels_last=0|1 of cnn, resnet and mobilenet_v3: 1 keeps the activations NHWC
// inside the model, as PyTorch's channels_last memory format does. The
// model's input stays NCHW and its parameters the same tensors (OIHW
// weights, the classifier reading features in NCHW order), so results agree
// with channels_last=0 up to rounding and checkpoints load either way.
// Default 1 on the CPU: oneDNN convolves NHWC natively, where NCHW cost a
// reorder of each activation in and out of every convolution (~2 ms of the
// cnn's ~18 ms bf16 step on the AMX Xeon); 0 on CUDA, not yet measured there.
// mobilenet_v3 passes cpu_default = false: 0 everywhere until its depthwise
// convolutions are measured in NHWC.
mixp_layout get_layout(Session *s, Config &cfg, bool cpu_default = true);
// x (NCHW) as the model's layout: a contiguous NHWC copy, or x itself.
TensorPtr to_layout(const TensorPtr &x, mixp_layout layout);
// The inverse, for the classifier's NCHW-ordered features.
TensorPtr from_layout(const TensorPtr &x, mixp_layout layout);

// ---- activation checkpointing per block (blocks.cpp) -----------------------
// Every model reads the key checkpoint=0|1. With 1 it runs each block in a
// checkpoint region of its own, so that backward recomputes one block at a
// time and the forward pass keeps only the blocks' inputs and outputs.

// The common key: checkpoint=0 (default) or 1.
bool get_checkpoint(Config &cfg);

// Runs `body` (the forward pass of block `m`) in its own checkpoint region
// when `on`, `m` is training and grad mode is on; otherwise runs it plainly.
// Evaluation, no-grad passes and passes inside a caller's region (where grad
// mode reads off) therefore open none. If `body` or the region's end fails,
// the region is aborted, so begin and end stay balanced, and the error goes
// on to the caller unchanged.
TensorPtr checkpointed(const Module &m, bool on, const std::function<TensorPtr()> &body);

// A Sequential (children named "0", "1", ... as torch.nn.Sequential, so
// parameter names are unchanged) in which runs of consecutive children form
// blocks: append() adds a child outside any block, append_block() adds a
// block of several children, each checkpointed as one when `checkpoint`.
class BlockSequential final : public Module {
 public:
  BlockSequential(Session *s, bool checkpoint) : Module(s, "Sequential"), checkpoint_(checkpoint) {}
  void append(std::unique_ptr<Module> m);
  void append_block(std::vector<std::unique_ptr<Module>> ms);
  TensorPtr forward(const TensorPtr &x) override;

 private:
  struct Run {
    size_t first, last;  // children [first, last)
    bool block;
  };
  bool checkpoint_;
  std::vector<Run> runs_;
};

// In-place re-initialisation of a module's parameter by name.
void init_normal(const Module &m, const char *name, double std);
void init_zero(const Module &m, const char *name);

}  // namespace mixp::models
