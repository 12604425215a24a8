// C shims of the nn group (src/nn/): the layer constructors and the generic
// module calls (forward, parameters, buffers, training mode).
#include "api/api_common.hpp"
#include "nn/layers.hpp"
#include "nn/module.hpp"

using namespace mixp;

namespace {

size_t check_buffer_index(const Module *m, int index, const char *fn) {
  if (index < 0 || size_t(index) >= m->num_buffers())
    fail(MIXP_ERR_INVALID_ARGUMENT, fn, ": index ", index, " is out of range [0, ",
         m->num_buffers(), ")");
  return size_t(index);
}

}  // namespace

extern "C" {

mixp_status mixp_linear_create(mixp_session *session, int64_t in_features, int64_t out_features,
                               int bias, mixp_dtype dtype, mixp_module **out) {
  static const char *fn = "mixp_linear_create";
  return guard(fn, [&] {
    Session *s = check_session(session, fn);
    check_out(out, fn);
    const bool b = check_flag(bias, fn, "bias") == 1;
    *out = make_linear(s, in_features, out_features, b, dtype, fn).release();
  });
}

void mixp_module_destroy(mixp_module *module) {
  // A stale or foreign handle is left alone: freeing it would corrupt memory
  // and this function has no status to report it with.
  if (module && module->magic == Module::kMagic) delete module;
}

mixp_status mixp_module_forward(mixp_module *module, const mixp_tensor *x, mixp_tensor **out) {
  static const char *fn = "mixp_module_forward";
  return guard(fn, [&] {
    Module *m = check_module(module, fn);
    check_session(m->session(), fn, "the module's session");
    check_tensor(x, fn, "x");
    check_out(out, fn);
    give(out, m->forward(share(x)));
  });
}

int mixp_module_num_parameters(const mixp_module *module) {
  static const char *fn = "mixp_module_num_parameters";
  return guard_value(fn, -1, [&] { return int(check_module(module, fn)->num_parameters()); });
}

static size_t check_param_index(const Module *m, int index, const char *fn) {
  if (index < 0 || size_t(index) >= m->num_parameters())
    fail(MIXP_ERR_INVALID_ARGUMENT, fn, ": index ", index, " is out of range [0, ",
         m->num_parameters(), ")");
  return size_t(index);
}

mixp_status mixp_module_parameter(const mixp_module *module, int index, mixp_tensor **out) {
  static const char *fn = "mixp_module_parameter";
  return guard(fn, [&] {
    Module *m = check_module(module, fn);
    size_t i = check_param_index(m, index, fn);
    check_out(out, fn);
    give(out, m->parameter(i));
  });
}

const char *mixp_module_parameter_name(const mixp_module *module, int index) {
  static const char *fn = "mixp_module_parameter_name";
  return guard_value(fn, static_cast<const char *>(nullptr), [&] {
    Module *m = check_module(module, fn);
    return m->parameter_name(check_param_index(m, index, fn)).c_str();
  });
}

mixp_status mixp_module_set_training(mixp_module *module, int training) {
  static const char *fn = "mixp_module_set_training";
  return guard(fn, [&] {
    Module *m = check_module(module, fn);
    if (training != 0 && training != 1)
      fail(MIXP_ERR_INVALID_ARGUMENT, fn, ": training must be 0 or 1, got ", training);
    m->set_training(training == 1);
  });
}

mixp_status mixp_conv2d_create(mixp_session *session, int64_t in_channels, int64_t out_channels,
                               int64_t kernel_h, int64_t kernel_w,
                               const mixp_conv2d_options *geom, int bias, mixp_dtype dtype,
                               mixp_module **out) {
  static const char *fn = "mixp_conv2d_create";
  return guard(fn, [&] {
    Session *s = check_session(session, fn);
    check_out(out, fn);
    const bool b = check_flag(bias, fn, "bias") == 1;
    *out = make_conv2d(s, in_channels, out_channels, kernel_h, kernel_w, geom, b, dtype, fn)
               .release();
  });
}

mixp_status mixp_batchnorm2d_create(mixp_session *session, int64_t num_features, double eps,
                                    double momentum, int affine, mixp_dtype dtype,
                                    mixp_module **out) {
  static const char *fn = "mixp_batchnorm2d_create";
  return guard(fn, [&] {
    Session *s = check_session(session, fn);
    check_out(out, fn);
    const bool a = check_flag(affine, fn, "affine") == 1;
    *out = make_batchnorm2d(s, num_features, eps, momentum, a, dtype, fn).release();
  });
}

mixp_status mixp_layernorm_create(mixp_session *session, int64_t normalized_size, double eps,
                                  int affine, mixp_dtype dtype, mixp_module **out) {
  static const char *fn = "mixp_layernorm_create";
  return guard(fn, [&] {
    Session *s = check_session(session, fn);
    check_out(out, fn);
    const bool a = check_flag(affine, fn, "affine") == 1;
    *out = make_layernorm(s, normalized_size, eps, a, dtype, fn).release();
  });
}

mixp_status mixp_embedding_create(mixp_session *session, int64_t num_embeddings, int64_t dim,
                                  int64_t padding_idx, mixp_dtype dtype, mixp_module **out) {
  static const char *fn = "mixp_embedding_create";
  return guard(fn, [&] {
    Session *s = check_session(session, fn);
    check_out(out, fn);
    *out = make_embedding(s, num_embeddings, dim, padding_idx, dtype, fn).release();
  });
}

mixp_status mixp_multihead_attention_create(mixp_session *session, int64_t embed_dim,
                                            int64_t num_heads, int bias, double dropout,
                                            int causal, mixp_dtype dtype, mixp_module **out) {
  static const char *fn = "mixp_multihead_attention_create";
  return guard(fn, [&] {
    Session *s = check_session(session, fn);
    check_out(out, fn);
    const bool b = check_flag(bias, fn, "bias") == 1;
    const bool c = check_flag(causal, fn, "causal") == 1;
    *out = make_multihead_attention(s, embed_dim, num_heads, b, dropout, c, dtype, fn).release();
  });
}

int mixp_module_num_buffers(const mixp_module *module) {
  static const char *fn = "mixp_module_num_buffers";
  return guard_value(fn, -1, [&] { return int(check_module(module, fn)->num_buffers()); });
}

mixp_status mixp_module_buffer(const mixp_module *module, int index, mixp_tensor **out) {
  static const char *fn = "mixp_module_buffer";
  return guard(fn, [&] {
    Module *m = check_module(module, fn);
    size_t i = check_buffer_index(m, index, fn);
    check_out(out, fn);
    give(out, m->buffer(i));
  });
}

const char *mixp_module_buffer_name(const mixp_module *module, int index) {
  static const char *fn = "mixp_module_buffer_name";
  return guard_value(fn, static_cast<const char *>(nullptr), [&] {
    Module *m = check_module(module, fn);
    return m->buffer_name(check_buffer_index(m, index, fn)).c_str();
  });
}

int64_t mixp_module_num_parameter_elements(const mixp_module *module) {
  static const char *fn = "mixp_module_num_parameter_elements";
  return guard_value(fn, int64_t(-1), [&] {
    Module *m = check_module(module, fn);
    int64_t n = 0;
    for (size_t i = 0; i < m->num_parameters(); ++i) n += m->parameter(i)->numel();
    return n;
  });
}

}  // extern "C"
