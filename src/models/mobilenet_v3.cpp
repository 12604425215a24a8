// mobilenet_v3: torchvision's MobileNetV3 (Howard et al. 2019) small and
// large, with the same block table, channel rounding (_make_divisible),
// squeeze-excitation, BatchNorm(eps 0.001, momentum 0.01), classifier and
// initialisation, so parameter counts and names ("features.4.block.2.fc1")
// match torchvision's. With checkpoint=1 each inverted-residual block is a
// checkpoint region of its own; channels_last=1 keeps the features NHWC
// (models.hpp; default 0).
#include <algorithm>
#include <cmath>

#include "core/error.hpp"
#include "models/models.hpp"
#include "nn/api_call.hpp"
#include "nn/layers.hpp"

namespace mixp::models {
namespace {

constexpr double kBnEps = 0.001, kBnMomentum = 0.01;
constexpr ConvInit kInit = ConvInit::KaimingFanOut;

// torchvision's _make_divisible: round to a multiple of 8, never below 8 and
// never more than 10% below v.
int64_t make_divisible(double v, int64_t divisor = 8) {
  int64_t nv = std::max(divisor, int64_t(v + divisor / 2.0) / divisor * divisor);
  if (double(nv) < 0.9 * v) nv += divisor;
  return nv;
}

enum class Act { None, ReLU, Hardswish };

struct BlockConf {
  int64_t in, kernel, expanded, out;
  bool se;
  Act act;
  int64_t stride;
};

// Conv2dNormActivation: Sequential(conv, BN[, activation]), no conv bias.
std::unique_ptr<Module> conv_bn_act(Session *s, int64_t in, int64_t out, int64_t k,
                                    int64_t stride, int64_t groups, Act act, mixp_dtype dtype,
                                    mixp_layout layout) {
  auto m = std::make_unique<nn::Sequential>(s);
  m->append(conv2d(s, in, out, k, stride, (k - 1) / 2, groups, false, dtype, kInit, layout));
  m->append(batchnorm2d(s, out, kBnEps, kBnMomentum, dtype, layout));
  if (act == Act::ReLU) m->append(nn::relu(s));
  if (act == Act::Hardswish) m->append(nn::hardswish(s));
  return m;
}

// x * hardsigmoid(fc2(relu(fc1(avgpool(x))))), fc1/fc2 1x1 convs with bias.
// In NHWC the pooled scale is [N, 1, 1, C], which broadcasts over x alike.
class SqueezeExcitation final : public Module {
 public:
  SqueezeExcitation(Session *s, int64_t c, int64_t squeeze, mixp_dtype dtype, mixp_layout layout)
      : Module(s, "SqueezeExcitation") {
    register_module("avgpool", nn::global_avg_pool(s, layout));
    register_module("fc1", conv2d(s, c, squeeze, 1, 1, 0, 1, true, dtype, kInit, layout));
    register_module("fc2", conv2d(s, squeeze, c, 1, 1, 0, 1, true, dtype, kInit, layout));
    register_module("activation", nn::relu(s));
  }

  TensorPtr forward(const TensorPtr &x) override {
    TensorPtr sc = child_slot(0).forward(x);
    sc = child_slot(3).forward(child_slot(1).forward(sc));
    sc = nn::call(mixp_hardsigmoid, child_slot(2).forward(sc).get());
    return nn::call(mixp_mul, x.get(), sc.get());
  }
};

class InvertedResidual final : public Module {
 public:
  InvertedResidual(Session *s, const BlockConf &c, mixp_dtype dtype, bool checkpoint, mixp_layout layout)
      : Module(s, "InvertedResidual"), residual_(c.stride == 1 && c.in == c.out),
        checkpoint_(checkpoint) {
    auto block = std::make_unique<nn::Sequential>(s);
    if (c.expanded != c.in)
      block->append(conv_bn_act(s, c.in, c.expanded, 1, 1, 1, c.act, dtype, layout));
    block->append(conv_bn_act(s, c.expanded, c.expanded, c.kernel, c.stride, c.expanded, c.act,
                              dtype, layout));
    if (c.se)
      block->append(std::make_unique<SqueezeExcitation>(s, c.expanded,
                                                        make_divisible(double(c.expanded / 4)),
                                                        dtype, layout));
    block->append(conv_bn_act(s, c.expanded, c.out, 1, 1, 1, Act::None, dtype, layout));
    register_module("block", std::move(block));
  }

  TensorPtr forward(const TensorPtr &x) override {
    return checkpointed(*this, checkpoint_, [&] {
      TensorPtr y = child_slot(0).forward(x);
      return residual_ ? nn::call(mixp_add, y.get(), x.get()) : y;
    });
  }

 private:
  bool residual_, checkpoint_;
};

class MobileNetV3 final : public Module {
 public:
  MobileNetV3(Session *s, const std::vector<BlockConf> &confs, int64_t in_channels,
              int64_t last_channel, int64_t classes, double dropout, mixp_dtype dtype,
              bool checkpoint, mixp_layout layout)
      : Module(s, "MobileNetV3"), in_channels_(in_channels), layout_(layout) {
    auto features = std::make_unique<nn::Sequential>(s);
    features->append(conv_bn_act(s, in_channels, confs[0].in, 3, 2, 1, Act::Hardswish, dtype, layout));
    for (const BlockConf &c : confs)
      features->append(std::make_unique<InvertedResidual>(s, c, dtype, checkpoint, layout));
    const int64_t last_in = confs.back().out, last_out = 6 * last_in;
    features->append(conv_bn_act(s, last_in, last_out, 1, 1, 1, Act::Hardswish, dtype, layout));
    register_module("features", std::move(features));
    register_module("avgpool", nn::global_avg_pool(s, layout));
    auto classifier = std::make_unique<nn::Sequential>(s);
    classifier->append(linear(s, last_out, last_channel, true, dtype));
    classifier->append(nn::hardswish(s));
    classifier->append(nn::dropout(s, dropout));
    classifier->append(linear(s, last_channel, classes, true, dtype));
    // torchvision: Linear weights N(0, 0.01), biases zero.
    for (size_t i : {size_t(0), size_t(3)}) {
      init_normal(classifier->child(i), "weight", 0.01);
      init_zero(classifier->child(i), "bias");
    }
    register_module("classifier", std::move(classifier));
  }

  TensorPtr forward(const TensorPtr &x) override {
    if (nn::ndim_of(x) != 4 || nn::dim_of(x, 1) != in_channels_)
      fail(MIXP_ERR_SHAPE, "mixp_module_forward: mobilenet_v3 expects NCHW input [N, ",
           in_channels_, ", H, W] (key in_channels), got ", nn::shape_string(x));
    TensorPtr h = child_slot(1).forward(child_slot(0).forward(to_layout(x, layout_)));
    h = nn::call(mixp_flatten, h.get(), 1, -1);  // [N, C] from either layout's pooled map
    return child_slot(2).forward(h);
  }

 private:
  int64_t in_channels_;
  mixp_layout layout_;
};

std::vector<BlockConf> block_table(bool large, double wm) {
  const Act RE = Act::ReLU, HS = Act::Hardswish;
  // (in, kernel, expanded, out, se, activation, stride), torchvision's
  // _mobilenet_v3_conf without dilation or reduced tail.
  std::vector<BlockConf> t;
  if (large)
    t = {{16, 3, 16, 16, false, RE, 1},    {16, 3, 64, 24, false, RE, 2},
         {24, 3, 72, 24, false, RE, 1},    {24, 5, 72, 40, true, RE, 2},
         {40, 5, 120, 40, true, RE, 1},    {40, 5, 120, 40, true, RE, 1},
         {40, 3, 240, 80, false, HS, 2},   {80, 3, 200, 80, false, HS, 1},
         {80, 3, 184, 80, false, HS, 1},   {80, 3, 184, 80, false, HS, 1},
         {80, 3, 480, 112, true, HS, 1},   {112, 3, 672, 112, true, HS, 1},
         {112, 5, 672, 160, true, HS, 2},  {160, 5, 960, 160, true, HS, 1},
         {160, 5, 960, 160, true, HS, 1}};
  else
    t = {{16, 3, 16, 16, true, RE, 2},    {16, 3, 72, 24, false, RE, 2},
         {24, 3, 88, 24, false, RE, 1},   {24, 5, 96, 40, true, HS, 2},
         {40, 5, 240, 40, true, HS, 1},   {40, 5, 240, 40, true, HS, 1},
         {40, 5, 120, 48, true, HS, 1},   {48, 5, 144, 48, true, HS, 1},
         {48, 5, 288, 96, true, HS, 2},   {96, 5, 576, 96, true, HS, 1},
         {96, 5, 576, 96, true, HS, 1}};
  for (BlockConf &c : t) {
    c.in = make_divisible(double(c.in) * wm);
    c.expanded = make_divisible(double(c.expanded) * wm);
    c.out = make_divisible(double(c.out) * wm);
  }
  return t;
}

}  // namespace

std::unique_ptr<Module> make_mobilenet_v3(Session *s, Config &cfg) {
  const std::string size = cfg.get_choice("size", "large", {"large", "small"});
  const int64_t classes = cfg.get_int("classes", 1000, 1, int64_t(1) << 24);
  const int64_t in_channels = cfg.get_int("in_channels", 3, 1, int64_t(1) << 16);
  const double wm = cfg.get_double("width_mult", 1.0, 0.01, 16.0, false);
  const double dropout = cfg.get_double("dropout", 0.2, 0.0, 1.0, true);
  const mixp_dtype dtype = cfg.get_dtype();
  const bool checkpoint = get_checkpoint(cfg);
  const mixp_layout layout = get_layout(s, cfg, false);
  cfg.finish();
  const bool large = size == "large";
  const int64_t last_channel = make_divisible((large ? 1280.0 : 1024.0) * wm);
  return std::make_unique<MobileNetV3>(s, block_table(large, wm), in_channels, last_channel,
                                       classes, dropout, dtype, checkpoint, layout);
}

}  // namespace mixp::models
