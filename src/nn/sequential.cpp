// Containers (Sequential) and the parameterless layers the zoo composes.
#include "core/error.hpp"
#include "nn/api_call.hpp"
#include "nn/layers.hpp"

namespace mixp {

void check_param_dtype(DType dtype, const char *fn) {
  if (!dtype_valid(int(dtype)) || !is_float(dtype))
    fail(MIXP_ERR_DTYPE, fn, ": dtype must be a float dtype (f32, f16, bf16, f64), got ",
         dtype_valid(int(dtype)) ? dtype_name(dtype) : str(int(dtype)).c_str());
}

namespace nn {

Module &Sequential::append(std::unique_ptr<Module> m) {
  return append(std::to_string(num_children()), std::move(m));
}

Module &Sequential::append(std::string name, std::unique_ptr<Module> m) {
  return child_slot(register_module(std::move(name), std::move(m)));
}

TensorPtr Sequential::forward(const TensorPtr &x) {
  TensorPtr h = x;
  for (size_t i = 0; i < num_children(); ++i) h = child_slot(i).forward(h);
  return h;
}

std::unique_ptr<Module> relu(Session *s) {
  return std::make_unique<Functional>(
      s, "ReLU", [](const TensorPtr &x, bool) { return call(mixp_relu, x.get()); });
}

std::unique_ptr<Module> hardswish(Session *s) {
  return std::make_unique<Functional>(
      s, "Hardswish", [](const TensorPtr &x, bool) { return call(mixp_hardswish, x.get()); });
}

std::unique_ptr<Module> dropout(Session *s, double p) {
  return std::make_unique<Functional>(s, "Dropout", [p](const TensorPtr &x, bool training) {
    if (!training || p == 0.0) return x;
    return call(mixp_dropout, x.get(), p, 1);
  });
}

std::unique_ptr<Module> max_pool2d(Session *s, int64_t kernel, int64_t stride, int64_t pad,
                                   mixp_layout layout) {
  mixp_pool2d_options o;
  mixp_pool2d_options_init(&o);
  o.kernel_h = o.kernel_w = kernel;
  o.stride_h = o.stride_w = stride;
  o.pad_h = o.pad_w = pad;
  o.layout = layout;
  return std::make_unique<Functional>(
      s, "MaxPool2d", [o](const TensorPtr &x, bool) { return call(mixp_max_pool2d, x.get(), &o); });
}

std::unique_ptr<Module> global_avg_pool(Session *s, mixp_layout layout) {
  return std::make_unique<Functional>(s, "AdaptiveAvgPool2d", [layout](const TensorPtr &x, bool) {
    return call(mixp_adaptive_avg_pool2d, x.get(), int64_t(1), int64_t(1), layout);
  });
}

std::unique_ptr<Module> flatten(Session *s, int start_dim) {
  return std::make_unique<Functional>(s, "Flatten", [start_dim](const TensorPtr &x, bool) {
    return call(mixp_flatten, x.get(), start_dim, -1);
  });
}

}  // namespace nn
}  // namespace mixp
