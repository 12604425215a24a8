// Building blocks of the zoo: layers made through the public create
// functions, with the initialisations the reference architectures use, and
// the per-block checkpoint regions of the key checkpoint=1.
#include <cmath>

#include "core/error.hpp"
#include "models/models.hpp"
#include "core/session.hpp"
#include "nn/api_call.hpp"
#include "nn/layers.hpp"

namespace mixp::models {

std::unique_ptr<Module> conv2d(Session *s, int64_t in, int64_t out, int64_t kernel,
                               int64_t stride, int64_t pad, int64_t groups, bool bias,
                               mixp_dtype dtype, ConvInit init, mixp_layout layout) {
  mixp_conv2d_options g;
  mixp_conv2d_options_init(&g);
  g.layout = layout;
  g.stride_h = g.stride_w = stride;
  g.pad_h = g.pad_w = pad;
  g.groups = groups;
  mixp_module *m = nullptr;
  auto conv =
      nn::adopt(mixp_conv2d_create(s, in, out, kernel, kernel, &g, int(bias), dtype, &m), m);
  if (init == ConvInit::KaimingFanOut) {
    // PyTorch's fan_out of a conv weight is out_channels * kh * kw, whatever
    // the groups; gain sqrt(2) for ReLU.
    init_normal(*conv, "weight", std::sqrt(2.0 / double(out * kernel * kernel)));
    if (bias) init_zero(*conv, "bias");
  }
  return conv;
}

std::unique_ptr<Module> batchnorm2d(Session *s, int64_t c, double eps, double momentum,
                                    mixp_dtype dtype, mixp_layout layout) {
  return make_batchnorm2d(s, c, eps, momentum, true, dtype, "mixp_model_create", layout);
}

std::unique_ptr<Module> linear(Session *s, int64_t in, int64_t out, bool bias, mixp_dtype dtype) {
  mixp_module *m = nullptr;
  return nn::adopt(mixp_linear_create(s, in, out, int(bias), dtype, &m), m);
}

std::unique_ptr<Module> layernorm(Session *s, int64_t d, mixp_dtype dtype) {
  mixp_module *m = nullptr;
  return nn::adopt(mixp_layernorm_create(s, d, 1e-5, 1, dtype, &m), m);
}

std::unique_ptr<Module> embedding(Session *s, int64_t n, int64_t d, mixp_dtype dtype) {
  mixp_module *m = nullptr;
  return nn::adopt(mixp_embedding_create(s, n, d, -1, dtype, &m), m);
}

std::unique_ptr<Module> attention(Session *s, int64_t e, int64_t heads, double dropout,
                                  mixp_dtype dtype) {
  mixp_module *m = nullptr;
  return nn::adopt(mixp_multihead_attention_create(s, e, heads, 1, dropout, 1, dtype, &m), m);
}

bool get_checkpoint(Config &cfg) { return cfg.get_int("checkpoint", 0, 0, 1) != 0; }

mixp_layout get_layout(Session *s, Config &cfg, bool cpu_default) {
  const bool cpu = s->device == "cpu";
  return cfg.get_int("channels_last", cpu && cpu_default ? 1 : 0, 0, 1) != 0 ? MIXP_NHWC : MIXP_NCHW;
}

TensorPtr to_layout(const TensorPtr &x, mixp_layout layout) {
  if (layout == MIXP_NCHW) return x;
  static const int kToNhwc[4] = {0, 2, 3, 1};
  return nn::call(mixp_contiguous, nn::call(mixp_permute, x.get(), kToNhwc, 4).get());
}

TensorPtr from_layout(const TensorPtr &x, mixp_layout layout) {
  if (layout == MIXP_NCHW) return x;
  static const int kToNchw[4] = {0, 3, 1, 2};
  return nn::call(mixp_contiguous, nn::call(mixp_permute, x.get(), kToNchw, 4).get());
}

TensorPtr checkpointed(const Module &m, bool on, const std::function<TensorPtr()> &body) {
  mixp_session *s = m.session();
  if (!on || !m.training() || !mixp_grad_enabled(s)) return body();
  nn::check(mixp_checkpoint_begin(s));
  TensorPtr y;
  try {
    y = body();
  } catch (...) {
    mixp_checkpoint_abort(s);
    throw;
  }
  mixp_tensor *out = y.get();
  const mixp_status st = mixp_checkpoint_end(s, &out, 1);
  if (st != MIXP_OK) {
    // Some failures of end leave the region open, others close it; the
    // abort then finds none, and only the end's message matters.
    Error e(st, mixp_last_error());
    mixp_checkpoint_abort(s);
    throw e;
  }
  return y;
}

void BlockSequential::append(std::unique_ptr<Module> m) {
  const size_t i = num_children();
  register_module(std::to_string(i), std::move(m));
  runs_.push_back({i, i + 1, false});
}

void BlockSequential::append_block(std::vector<std::unique_ptr<Module>> ms) {
  const size_t first = num_children();
  for (auto &m : ms) register_module(std::to_string(num_children()), std::move(m));
  runs_.push_back({first, num_children(), true});
}

TensorPtr BlockSequential::forward(const TensorPtr &x) {
  TensorPtr h = x;
  for (const Run &r : runs_) {
    auto run = [&] {
      TensorPtr y = h;
      for (size_t i = r.first; i < r.last; ++i) y = child_slot(i).forward(y);
      return y;
    };
    h = checkpointed(*this, r.block && checkpoint_, run);
  }
  return h;
}

void init_normal(const Module &m, const char *name, double std) {
  nn::fill_normal_(nn::parameter_named(&m, name), std);
}

void init_zero(const Module &m, const char *name) {
  nn::fill_constant_(nn::parameter_named(&m, name), 0.0);
}

}  // namespace mixp::models
