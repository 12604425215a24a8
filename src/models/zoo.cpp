// The zoo's entry point: model names, aliases and dispatch.
#include "core/error.hpp"
#include "models/models.hpp"

namespace mixp::models {

std::unique_ptr<Module> make_model(Session *s, const char *config, const char *fn) {
  Config cfg(config, fn);
  const std::string name = cfg.name();
  // Aliases (the names mixp-train uses) preset one key of the base model.
  if (name == "resnet18" || name == "resnet34" || name == "resnet50") {
    cfg.preset("depth", name.substr(6));
    cfg.set_name("resnet");
  } else if (name == "mobilenet_v3_small" || name == "mobilenet_v3_large") {
    cfg.preset("size", name.substr(13));
    cfg.set_name("mobilenet_v3");
  }
  const std::string &base = cfg.name();
  if (base == "mlp") return make_mlp(s, cfg);
  if (base == "cnn") return make_cnn(s, cfg);
  if (base == "resnet") return make_resnet(s, cfg);
  if (base == "mobilenet_v3") return make_mobilenet_v3(s, cfg);
  if (base == "gpt") return make_gpt(s, cfg);
  fail(MIXP_ERR_INVALID_ARGUMENT, fn, ": unknown model '", name,
       "' (known: mlp, cnn, resnet, resnet18, resnet34, resnet50, mobilenet_v3, "
       "mobilenet_v3_small, mobilenet_v3_large, gpt)");
}

}  // namespace mixp::models
