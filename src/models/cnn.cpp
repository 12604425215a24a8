// cnn: a small VGG-style classifier sized for Fashion-MNIST on a CPU:
// `blocks` x [conv3x3 (width * 2^i channels, no bias) - BatchNorm - ReLU -
// maxpool 2x2], then Flatten - Dropout - Linear(hidden) - ReLU - Dropout -
// Linear(classes), with the features NHWC inside under channels_last=1 (the
// default on the CPU: models.hpp). Named "features.*" and "classifier.*" like torchvision's
// VGG. Each conv block is one block for checkpoint=1. With the defaults it has 421,738 parameters and reaches ~92% on
// Fashion-MNIST in a few epochs.
#include "core/error.hpp"
#include "models/models.hpp"
#include "nn/api_call.hpp"
#include "nn/layers.hpp"

namespace mixp::models {
namespace {

class Cnn final : public Module {
 public:
  Cnn(Session *s, int64_t in_channels, int64_t classes, int64_t width, int64_t blocks,
      int64_t image, int64_t hidden, double p, mixp_dtype dtype, bool checkpoint, mixp_layout layout)
      : Module(s, "Cnn"), in_channels_(in_channels), image_(image), layout_(layout) {
    auto features = std::make_unique<BlockSequential>(s, checkpoint);
    int64_t c = in_channels, side = image;
    for (int64_t i = 0; i < blocks; ++i) {
      const int64_t out = width << i;
      std::vector<std::unique_ptr<Module>> block;
      block.push_back(conv2d(s, c, out, 3, 1, 1, 1, false, dtype, ConvInit::Default, layout));
      block.push_back(batchnorm2d(s, out, 1e-5, 0.1, dtype, layout));
      block.push_back(nn::relu(s));
      block.push_back(nn::max_pool2d(s, 2, 2, 0, layout));
      features->append_block(std::move(block));
      c = out;
      side /= 2;
    }
    features_ = register_module("features", std::move(features));
    auto classifier = std::make_unique<nn::Sequential>(s);
    classifier->append(nn::flatten(s, 1));
    classifier->append(nn::dropout(s, p));
    classifier->append(linear(s, c * side * side, hidden, true, dtype));
    classifier->append(nn::relu(s));
    classifier->append(nn::dropout(s, p));
    classifier->append(linear(s, hidden, classes, true, dtype));
    classifier_ = register_module("classifier", std::move(classifier));
  }

  TensorPtr forward(const TensorPtr &x) override {
    if (nn::ndim_of(x) != 4 || nn::dim_of(x, 1) != in_channels_ || nn::dim_of(x, 2) != image_ ||
        nn::dim_of(x, 3) != image_)
      fail(MIXP_ERR_SHAPE, "mixp_module_forward: cnn expects NCHW input [N, ", in_channels_, ", ",
           image_, ", ", image_, "] (keys in_channels and image_size), got ",
           nn::shape_string(x));
    const TensorPtr f = child_slot(features_).forward(to_layout(x, layout_));
    return child_slot(classifier_).forward(from_layout(f, layout_));
  }

 private:
  int64_t in_channels_, image_;
  mixp_layout layout_;
  size_t features_ = 0, classifier_ = 0;
};

}  // namespace

std::unique_ptr<Module> make_cnn(Session *s, Config &cfg) {
  const int64_t kMax = int64_t(1) << 16;
  const int64_t in_channels = cfg.get_int("in_channels", 1, 1, kMax);
  const int64_t classes = cfg.get_int("classes", 10, 1, int64_t(1) << 24);
  const int64_t width = cfg.get_int("width", 32, 1, 4096);
  const int64_t blocks = cfg.get_int("blocks", 2, 1, 4);
  const int64_t image = cfg.get_int("image_size", 28, 1, kMax);
  const int64_t hidden = cfg.get_int("hidden", 128, 1, int64_t(1) << 20);
  const double p = cfg.get_double("dropout", 0.25, 0.0, 1.0, true);
  const mixp_dtype dtype = cfg.get_dtype();
  const bool checkpoint = get_checkpoint(cfg);
  const mixp_layout layout = get_layout(s, cfg);
  cfg.finish();
  if ((image >> blocks) < 1)
    fail(MIXP_ERR_INVALID_ARGUMENT, "mixp_model_create: cnn: image_size=", image,
         " is too small for blocks=", blocks, " (each block halves it; need >= ",
         int64_t(1) << blocks, ")");
  return std::make_unique<Cnn>(s, in_channels, classes, width, blocks, image, hidden, p, dtype,
                               checkpoint, layout);
}

}  // namespace mixp::models
