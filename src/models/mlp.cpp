// mlp: Flatten, then Linear+ReLU(+Dropout) per hidden size (one block each,
// for checkpoint=1), then Linear.
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
  const bool checkpoint = get_checkpoint(cfg);
  cfg.finish();

  auto m = std::make_unique<BlockSequential>(s, checkpoint);
  // Image batches [N, C, H, W] arrive as they are; [N, in] passes unchanged.
  m->append(nn::flatten(s, 1));
  int64_t width = in;
  for (int64_t h : hidden) {
    std::vector<std::unique_ptr<Module>> layer;
    layer.push_back(linear(s, width, h, true, dtype));
    layer.push_back(nn::relu(s));
    if (p > 0) layer.push_back(nn::dropout(s, p));
    m->append_block(std::move(layer));
    width = h;
  }
  m->append(linear(s, width, classes, true, dtype));
  return m;
}

}  // namespace mixp::models
