// resnet: torchvision's ResNet-18/34/50 (He et al. 2016, "v1.5" with the
// stride in the 3x3 conv of the bottleneck), with configurable input
// channels, base width and classes. Parameter names match torchvision's
// state dict ("layer2.0.downsample.1.running_mean"). With checkpoint=1 each
// BasicBlock/Bottleneck is a checkpoint region of its own. Activations are
// NHWC inside under channels_last=1 (the default on the CPU: models.hpp).
#include "core/error.hpp"
#include "models/models.hpp"
#include "nn/api_call.hpp"
#include "nn/layers.hpp"

namespace mixp::models {
namespace {

constexpr ConvInit kInit = ConvInit::KaimingFanOut;

TensorPtr relu(const TensorPtr &x) { return nn::call(mixp_relu, x.get()); }

std::unique_ptr<Module> bn(Session *s, int64_t c, mixp_dtype dtype, mixp_layout layout) {
  return batchnorm2d(s, c, 1e-5, 0.1, dtype, layout);
}

// 1x1 conv + BN matching the block's output when its shape changes.
std::unique_ptr<Module> downsample(Session *s, int64_t in, int64_t out, int64_t stride,
                                   mixp_dtype dtype, mixp_layout layout) {
  auto d = std::make_unique<nn::Sequential>(s);
  d->append(conv2d(s, in, out, 1, stride, 0, 1, false, dtype, kInit, layout));
  d->append(bn(s, out, dtype, layout));
  return d;
}

class Block : public Module {
 public:
  Block(Session *s, const char *type, bool checkpoint) : Module(s, type), checkpoint_(checkpoint) {}

 protected:
  TensorPtr run(const std::function<TensorPtr()> &body) { return checkpointed(*this, checkpoint_, body); }
  // out = relu(residual + (downsample ? downsample(x) : x))
  TensorPtr finish(const TensorPtr &x, const TensorPtr &residual) {
    TensorPtr identity = has_down_ ? child_slot(down_).forward(x) : x;
    return relu(nn::call(mixp_add, residual.get(), identity.get()));
  }
  void maybe_downsample(Session *s, int64_t in, int64_t out, int64_t stride, mixp_dtype dtype,
                        mixp_layout layout) {
    if (stride != 1 || in != out) {
      down_ = register_module("downsample", downsample(s, in, out, stride, dtype, layout));
      has_down_ = true;
    }
  }

 private:
  bool checkpoint_;
  bool has_down_ = false;
  size_t down_ = 0;
};

class BasicBlock final : public Block {
 public:
  static constexpr int64_t kExpansion = 1;
  BasicBlock(Session *s, int64_t in, int64_t planes, int64_t stride, mixp_dtype dtype,
             bool checkpoint, mixp_layout layout)
      : Block(s, "BasicBlock", checkpoint) {
    register_module("conv1", conv2d(s, in, planes, 3, stride, 1, 1, false, dtype, kInit, layout));
    register_module("bn1", bn(s, planes, dtype, layout));
    register_module("conv2", conv2d(s, planes, planes, 3, 1, 1, 1, false, dtype, kInit, layout));
    register_module("bn2", bn(s, planes, dtype, layout));
    maybe_downsample(s, in, planes, stride, dtype, layout);
  }

  TensorPtr forward(const TensorPtr &x) override {
    return run([&] {
      TensorPtr h = relu(child_slot(1).forward(child_slot(0).forward(x)));
      h = child_slot(3).forward(child_slot(2).forward(h));
      return finish(x, h);
    });
  }
};

class Bottleneck final : public Block {
 public:
  static constexpr int64_t kExpansion = 4;
  Bottleneck(Session *s, int64_t in, int64_t planes, int64_t stride, mixp_dtype dtype,
             bool checkpoint, mixp_layout layout)
      : Block(s, "Bottleneck", checkpoint) {
    const int64_t out = planes * kExpansion;
    register_module("conv1", conv2d(s, in, planes, 1, 1, 0, 1, false, dtype, kInit, layout));
    register_module("bn1", bn(s, planes, dtype, layout));
    register_module("conv2", conv2d(s, planes, planes, 3, stride, 1, 1, false, dtype, kInit, layout));
    register_module("bn2", bn(s, planes, dtype, layout));
    register_module("conv3", conv2d(s, planes, out, 1, 1, 0, 1, false, dtype, kInit, layout));
    register_module("bn3", bn(s, out, dtype, layout));
    maybe_downsample(s, in, out, stride, dtype, layout);
  }

  TensorPtr forward(const TensorPtr &x) override {
    return run([&] {
      TensorPtr h = relu(child_slot(1).forward(child_slot(0).forward(x)));
      h = relu(child_slot(3).forward(child_slot(2).forward(h)));
      h = child_slot(5).forward(child_slot(4).forward(h));
      return finish(x, h);
    });
  }
};

class ResNet final : public Module {
 public:
  ResNet(Session *s, bool bottleneck, const int (&layers)[4], int64_t in_channels,
         int64_t width, int64_t classes, mixp_dtype dtype, bool checkpoint, mixp_layout layout)
      : Module(s, "ResNet"), in_channels_(in_channels), layout_(layout) {
    register_module("conv1", conv2d(s, in_channels, width, 7, 2, 3, 1, false, dtype, kInit, layout));
    register_module("bn1", bn(s, width, dtype, layout));
    register_module("relu", nn::relu(s));
    register_module("maxpool", nn::max_pool2d(s, 3, 2, 1, layout));
    const int64_t expansion = bottleneck ? Bottleneck::kExpansion : BasicBlock::kExpansion;
    int64_t in = width;
    for (int stage = 0; stage < 4; ++stage) {
      const int64_t planes = width << stage;
      auto layer = std::make_unique<nn::Sequential>(s);
      for (int b = 0; b < layers[stage]; ++b) {
        const int64_t stride = (stage > 0 && b == 0) ? 2 : 1;
        if (bottleneck)
          layer->append(std::make_unique<Bottleneck>(s, in, planes, stride, dtype, checkpoint, layout));
        else
          layer->append(std::make_unique<BasicBlock>(s, in, planes, stride, dtype, checkpoint, layout));
        in = planes * expansion;
      }
      register_module("layer" + std::to_string(stage + 1), std::move(layer));
    }
    register_module("avgpool", nn::global_avg_pool(s, layout));
    // torchvision leaves the classifier with Linear's default init.
    register_module("fc", linear(s, in, classes, true, dtype));
  }

  TensorPtr forward(const TensorPtr &x) override {
    if (nn::ndim_of(x) != 4 || nn::dim_of(x, 1) != in_channels_)
      fail(MIXP_ERR_SHAPE, "mixp_module_forward: resnet expects NCHW input [N, ", in_channels_,
           ", H, W] (key in_channels), got ", nn::shape_string(x));
    TensorPtr h = to_layout(x, layout_);
    for (size_t i = 0; i < 9; ++i) h = child_slot(i).forward(h);  // stem .. avgpool
    h = nn::call(mixp_flatten, h.get(), 1, -1);  // [N, C] from either layout's pooled map
    return child_slot(9).forward(h);
  }

 private:
  int64_t in_channels_;
  mixp_layout layout_;
};

}  // namespace

std::unique_ptr<Module> make_resnet(Session *s, Config &cfg) {
  const int64_t depth = cfg.get_int("depth", 18, 0, 1000);
  const int64_t classes = cfg.get_int("classes", 1000, 1, int64_t(1) << 24);
  const int64_t in_channels = cfg.get_int("in_channels", 3, 1, int64_t(1) << 16);
  const int64_t width = cfg.get_int("width", 64, 1, 4096);
  const mixp_dtype dtype = cfg.get_dtype();
  const bool checkpoint = get_checkpoint(cfg);
  const mixp_layout layout = get_layout(s, cfg);
  static const int k18[4] = {2, 2, 2, 2}, k34[4] = {3, 4, 6, 3};
  if (depth != 18 && depth != 34 && depth != 50)
    fail(MIXP_ERR_INVALID_ARGUMENT, "mixp_model_create: resnet: invalid value '", depth,
         "' for key 'depth': expected 18, 34 or 50");
  cfg.finish();
  const bool bottleneck = depth == 50;
  return std::make_unique<ResNet>(s, bottleneck, depth == 18 ? k18 : k34, in_channels, width,
                                  classes, dtype, checkpoint, layout);
}

}  // namespace mixp::models
