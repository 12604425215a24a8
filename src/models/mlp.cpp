// mlp: Flatten, then Linear+ReLU(+Dropout) per hidden size, then Linear.
#include "models/models.hpp"
#include "nn/layers.hpp"

namespace mixp::models {

std::unique_ptr<Module> make_mlp(Session *s, Config &cfg) {
  const int64_t kMax = int64_t(1) << 24;
  const int64_t in = cfg.get_int("in", 784, 1, kMax);
  const std::vector<int64_t> hidden = cfg.get_int_list("hidden", {256, 128}, 1, kMax);
  const int64_t classes = cfg.get_int("classes", 10, 1, kMax);
  const double p = cfg.get_double("dropout", 0.0, 0.0, 1.0, true);
  const mixp_dtype dtype = cfg.get_dtype();
  cfg.finish();

  auto m = std::make_unique<nn::Sequential>(s);
  // Image batches [N, C, H, W] arrive as they are; [N, in] passes unchanged.
  m->append(nn::flatten(s, 1));
  int64_t width = in;
  for (int64_t h : hidden) {
    m->append(linear(s, width, h, true, dtype));
    m->append(nn::relu(s));
    if (p > 0) m->append(nn::dropout(s, p));
    width = h;
  }
  m->append(linear(s, width, classes, true, dtype));
  return m;
}

}  // namespace mixp::models
