// C shim of the model zoo, and the Hugging Face GPT-2 import and export.
#include "api/api_common.hpp"
#include "models/models.hpp"
#include "optim/optimizer.hpp"
#include "state/hf_gpt2.hpp"

using namespace mixp;

namespace {

// The configuration of a zoo gpt with GPT-2's GELU, or a failure saying why not.
const models::GptConfig &check_gpt2(Module *m, const char *fn) {
  const models::GptConfig *c = models::gpt_config(*m);
  if (!c)
    fail(MIXP_ERR_INVALID_ARGUMENT, fn, ": model is a ", m->type_name(),
         ", not a zoo gpt (create one with mixp_model_create(\"gpt ... gelu=tanh\"))");
  if (!c->gelu_tanh)
    fail(MIXP_ERR_INVALID_ARGUMENT, fn, ": model computes GELU with erf (gelu=erf, the "
         "default), GPT-2 with the tanh approximation (Hugging Face's gelu_new): create the "
         "model with gelu=tanh");
  return *c;
}

Optimizer *check_optional_optimizer(mixp_optimizer *optimizer, Session *s, const char *fn) {
  Optimizer *opt = optimizer ? check_optimizer(optimizer, fn) : nullptr;
  if (opt && opt->session.get() != s)
    fail(MIXP_ERR_DEVICE, fn, ": optimizer belongs to a different session than the model");
  return opt;
}

void check_path(const char *path, const char *fn, const char *arg) {
  if (!path) fail(MIXP_ERR_INVALID_ARGUMENT, fn, ": ", arg, " is NULL");
  if (!*path) fail(MIXP_ERR_INVALID_ARGUMENT, fn, ": ", arg, " is empty");
}

}  // namespace

extern "C" {

mixp_status mixp_model_create(mixp_session *session, const char *config, mixp_module **out) {
  static const char *fn = "mixp_model_create";
  return guard(fn, [&] {
    Session *s = check_session(session, fn);
    if (!config) fail(MIXP_ERR_INVALID_ARGUMENT, fn, ": config is NULL");
    check_out(out, fn);
    *out = models::make_model(s, config, fn).release();
  });
}

mixp_status mixp_model_load_hf_gpt2(mixp_module *model, mixp_optimizer *optimizer,
                                    const char *path) {
  static const char *fn = "mixp_model_load_hf_gpt2";
  return guard(fn, [&] {
    Module *m = check_module(model, fn, "model");
    Session *s = check_session(m->session(), fn, "the model's session");
    Optimizer *opt = check_optional_optimizer(optimizer, s, fn);
    check_path(path, fn, "path");
    state::load_hf_gpt2(*m, check_gpt2(m, fn), opt, path, fn);
  });
}

mixp_status mixp_model_save_hf_gpt2(mixp_module *model, mixp_optimizer *optimizer,
                                    const char *dir, mixp_dtype dtype) {
  static const char *fn = "mixp_model_save_hf_gpt2";
  return guard(fn, [&] {
    Module *m = check_module(model, fn, "model");
    Session *s = check_session(m->session(), fn, "the model's session");
    Optimizer *opt = check_optional_optimizer(optimizer, s, fn);
    check_path(dir, fn, "dir");
    const DType t = check_dtype(dtype, fn);
    if (t != MIXP_F32 && t != MIXP_F16 && t != MIXP_BF16)
      fail(MIXP_ERR_DTYPE, fn, ": dtype must be MIXP_F32, MIXP_F16 or MIXP_BF16, got ",
           dtype_name(t));
    state::save_hf_gpt2(*m, check_gpt2(m, fn), opt, dir, t, fn);
  });
}

}  // extern "C"
