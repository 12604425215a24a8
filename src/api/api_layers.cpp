// C shims of the layer constructors (Conv2d, BatchNorm2d, LayerNorm,
// Embedding, MultiheadAttention) and of the buffer and size queries of modules.

#include "api/api_common.hpp"
#include "nn/layers.hpp"
#include "nn/module.hpp"

using namespace mixp;

namespace {

bool check_flag(int v, const char *fn, const char *arg) {
  if (v != 0 && v != 1) fail(MIXP_ERR_INVALID_ARGUMENT, fn, ": ", arg, " must be 0 or 1, got ", v);
  return v == 1;
}

size_t check_buffer_index(const Module *m, int index, const char *fn) {
  if (index < 0 || size_t(index) >= m->num_buffers())
    fail(MIXP_ERR_INVALID_ARGUMENT, fn, ": index ", index, " is out of range [0, ",
         m->num_buffers(), ")");
  return size_t(index);
}

}  // namespace

extern "C" {

mixp_status mixp_conv2d_create(mixp_session *session, int64_t in_channels, int64_t out_channels,
                               int64_t kernel_h, int64_t kernel_w,
                               const mixp_conv2d_options *geom, int bias, mixp_dtype dtype,
                               mixp_module **out) {
  static const char *fn = "mixp_conv2d_create";
  return guard(fn, [&] {
    Session *s = check_session(session, fn);
    check_out(out, fn);
    bool b = check_flag(bias, fn, "bias");
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
    bool a = check_flag(affine, fn, "affine");
    *out = make_batchnorm2d(s, num_features, eps, momentum, a, dtype, fn).release();
  });
}

mixp_status mixp_layernorm_create(mixp_session *session, int64_t normalized_size, double eps,
                                  int affine, mixp_dtype dtype, mixp_module **out) {
  static const char *fn = "mixp_layernorm_create";
  return guard(fn, [&] {
    Session *s = check_session(session, fn);
    check_out(out, fn);
    bool a = check_flag(affine, fn, "affine");
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
    bool b = check_flag(bias, fn, "bias");
    bool c = check_flag(causal, fn, "causal");
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
