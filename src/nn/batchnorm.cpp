// BatchNorm2d: mixp_batch_norm over the channels of NCHW (or [N, C]) input
// (NHWC for the zoo's channels-last models: make_batchnorm2d's layout),
// with PyTorch's parameters and buffers: weight (1) and bias (0) when affine;
// running_mean (0), running_var (1) and num_batches_tracked (I64 scalar).
#include <cmath>

#include "core/error.hpp"
#include "core/session.hpp"
#include "nn/api_call.hpp"
#include "nn/layers.hpp"

namespace mixp {
namespace {

class BatchNorm2d final : public Module {
 public:
  BatchNorm2d(Session *s, int64_t c, double eps, double momentum, bool affine, DType dtype, mixp_layout layout)
      : Module(s, "BatchNorm2d"), eps_(eps), momentum_(momentum), layout_(layout) {
    if (affine) {
      weight_ = register_parameter("weight", nn::as_parameter(nn::full_tensor(s, dtype, &c, 1, 1)));
      bias_ = register_parameter("bias", nn::as_parameter(nn::full_tensor(s, dtype, &c, 1, 0)));
    }
    mean_ = register_buffer("running_mean", nn::full_tensor(s, dtype, &c, 1, 0));
    var_ = register_buffer("running_var", nn::full_tensor(s, dtype, &c, 1, 1));
    count_ = register_buffer("num_batches_tracked", nn::full_tensor(s, MIXP_I64, nullptr, 0, 0));
  }

  bool is_norm_layer() const override { return true; }

  TensorPtr forward(const TensorPtr &x) override {
    // The statistics' dtype, not the parameters', survives a non-affine layer.
    const mixp_dtype pd = mixp_tensor_dtype(buffer_slot(mean_).get());
    mixp_tensor *w = weight_ == kNone ? nullptr : param_slot(weight_).get();
    mixp_tensor *b = bias_ == kNone ? nullptr : param_slot(bias_).get();
    const bool train = training();
    auto run = [&](const TensorPtr &in) {
      return nn::call(mixp_batch_norm, in.get(), w, b, buffer_slot(mean_).get(), buffer_slot(var_).get(),
                      int(train), momentum_, eps_, layout_);
    };
    // mixp_batch_norm takes F32, F16 and BF16 data and parameters in any
    // mix (computing in fp32, output in x's dtype): half activations meet
    // the fp32 parameters of a decorated model with no cast. F64 does not mix.
    const mixp_dtype xd = mixp_tensor_dtype(x.get());
    TensorPtr y = xd != MIXP_F64 && pd != MIXP_F64 ? run(x) : nn::in_param_dtype(x, pd, "batch_norm", run);
    if (train) count_batch();
    return y;
  }

 private:
  static constexpr size_t kNone = ~size_t(0);

  // num_batches_tracked += 1, as PyTorch counts every training forward, on
  // the device (through F64, exact below 2^53, which autocast leaves alone):
  // reading the count back to the host would wait for the device once per
  // layer per step (53 waits a ResNet-50 step on a GPU, measured), and a
  // captured step (mixp_graph) must advance it at every replay anyway.
  // Inside a checkpoint region, which refuses an in-place write to a tensor
  // it has read, the count is read on the host and written whole, as
  // before: one wait per layer there.
  void count_batch() {
    const TensorPtr &c = buffer_slot(count_);
    mixp_session *s = mixp_tensor_session(c.get());
    if (s->checkpoint && !s->capture) {
      int64_t n = 0;
      nn::check(mixp_tensor_to_host(c.get(), &n, sizeof n));
      TensorPtr next = nn::full_tensor(s, MIXP_I64, nullptr, 0, double(n + 1));
      nn::check(mixp_tensor_copy_(c.get(), next.get()));
      return;
    }
    TensorPtr wide = nn::call(mixp_cast, c.get(), MIXP_F64);
    TensorPtr next = nn::call(mixp_add_scalar, wide.get(), 1.0);
    nn::check(mixp_tensor_copy_(c.get(), next.get()));
  }

  double eps_, momentum_;
  mixp_layout layout_;
  size_t weight_ = kNone, bias_ = kNone, mean_ = kNone, var_ = kNone, count_ = kNone;
};

}  // namespace

std::unique_ptr<Module> make_batchnorm2d(Session *s, int64_t features, double eps,
                                         double momentum, bool affine, DType dtype,
                                         const char *fn, mixp_layout layout) {
  if (features < 1)
    fail(MIXP_ERR_INVALID_ARGUMENT, fn, ": num_features must be >= 1, got ", features);
  if (!(eps > 0.0) || !std::isfinite(eps))
    fail(MIXP_ERR_INVALID_ARGUMENT, fn, ": eps must be finite and > 0, got ", eps);
  if (!(momentum >= 0.0 && momentum <= 1.0))
    fail(MIXP_ERR_INVALID_ARGUMENT, fn, ": momentum must be in [0, 1], got ", momentum);
  check_param_dtype(dtype, fn);
  return std::make_unique<BatchNorm2d>(s, features, eps, momentum, affine, dtype, layout);
}

}  // namespace mixp
