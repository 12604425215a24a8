// The model zoo: networks assembled from the public layers and operations.
// Each factory reads its keys from the Config, calls cfg.finish() (so a bad
// key fails before any parameter is drawn), then builds the model.
#pragma once
#include <memory>

#include "models/config.hpp"
#include "nn/module.hpp"

namespace mixp::models {

std::unique_ptr<Module> make_mlp(Session *s, Config &cfg);
std::unique_ptr<Module> make_cnn(Session *s, Config &cfg);
std::unique_ptr<Module> make_resnet(Session *s, Config &cfg);
std::unique_ptr<Module> make_mobilenet_v3(Session *s, Config &cfg);
std::unique_ptr<Module> make_gpt(Session *s, Config &cfg);

// Parses `config` and builds the model it names (aliases resnet18/34/50 and
// mobilenet_v3_small/large preset depth and size).
std::unique_ptr<Module> make_model(Session *s, const char *config, const char *fn);

// ---- building blocks (blocks.cpp), all through the public create functions --

// How a convolution's weight is drawn: PyTorch's layer default, or
// kaiming_normal_(mode="fan_out", nonlinearity="relu") with a zero bias
// (torchvision's ResNet and MobileNetV3).
enum class ConvInit { Default, KaimingFanOut };

std::unique_ptr<Module> conv2d(Session *s, int64_t in, int64_t out, int64_t kernel,
                               int64_t stride, int64_t pad, int64_t groups, bool bias,
                               mixp_dtype dtype, ConvInit init);
std::unique_ptr<Module> batchnorm2d(Session *s, int64_t c, double eps, double momentum,
                                    mixp_dtype dtype);
std::unique_ptr<Module> linear(Session *s, int64_t in, int64_t out, bool bias, mixp_dtype dtype);
std::unique_ptr<Module> layernorm(Session *s, int64_t d, mixp_dtype dtype);
std::unique_ptr<Module> embedding(Session *s, int64_t n, int64_t d, mixp_dtype dtype);
std::unique_ptr<Module> attention(Session *s, int64_t e, int64_t heads, double dropout,
                                  mixp_dtype dtype);

// In-place re-initialisation of a module's parameter by name.
void init_normal(const Module &m, const char *name, double std);
void init_zero(const Module &m, const char *name);

}  // namespace mixp::models
