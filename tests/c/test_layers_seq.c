/* Sequence layers: Embedding and MultiheadAttention — parameters,
 * PyTorch's initialisations, forward passes against formulas in double,
 * gradients, train/eval dropout, and misuse. */
#include "test_layers_util.h"

/* ---- Embedding --------------------------------------------------------------------- */

static void test_embedding(void **state) {
  (void)state;
  enum { V = 100, D = 64 };
  mixp_session *s = mt_session();
  mixp_module *m = NULL;
  MT_OK(mixp_embedding_create(s, V, D, 7, MIXP_F32, &m));
  const char *pn[1] = {"weight"};
  expect_names(m, pn, 1, 0);
  assert_int_equal(mixp_module_num_parameter_elements(m), V * D);
  mixp_tensor *w = param_named(m, "weight");
  const int64_t ws[2] = {V, D};
  expect_shape(w, ws, 2);
  /* N(0, 1) except the zero padding row */
  double *wv = mt_values(w), mean = 0, var = 0;
  for (int j = 0; j < D; ++j) assert_true(wv[7 * D + j] == 0.0);
  const int cnt = (V - 1) * D;
  for (int i = 0; i < V * D; ++i)
    if (i / D != 7) mean += wv[i] / cnt;
  for (int i = 0; i < V * D; ++i)
    if (i / D != 7) var += (wv[i] - mean) * (wv[i] - mean) / cnt;
  assert_true(fabs(mean) < 6.0 / sqrt((double)cnt));
  assert_true(fabs(var - 1.0) < 0.08);

  /* rows picked by I64 indices of any shape; the padding row gets no grad */
  const int64_t idx[6] = {3, 7, 0, 99, 3, 7}, is[2] = {2, 3};
  mixp_tensor *it = NULL, *y = NULL, *sum = NULL, *g = NULL;
  MT_OK(mixp_tensor_from_host(s, idx, sizeof idx, MIXP_I64, is, 2, &it));
  y = forward(m, it);
  const int64_t ys[3] = {2, 3, D};
  expect_shape(y, ys, 3);
  double *yv = mt_values(y);
  for (int k = 0; k < 6; ++k) mt_assert_close(yv + k * D, wv + idx[k] * D, D, 0, 0);
  free(yv);
  MT_OK(mixp_sum(y, NULL, 0, 0, &sum));
  MT_OK(mixp_backward(sum, NULL));
  MT_OK(mixp_tensor_grad(w, &g));
  double *gv = mt_values(g);
  for (int j = 0; j < D; ++j) {
    assert_true(gv[3 * D + j] == 2.0);
    assert_true(gv[7 * D + j] == 0.0);
    assert_true(gv[99 * D + j] == 1.0);
    assert_true(gv[1 * D + j] == 0.0);
  }
  free(gv);
  free(wv);
  mixp_tensor_release(g);
  mixp_tensor_release(sum);
  mixp_tensor_release(y);
  mixp_tensor_release(it);
  mixp_tensor_release(w);
  mixp_module_destroy(m);

  /* no padding row; other dtypes */
  MT_OK(mixp_embedding_create(s, 3, 2, -1, MIXP_BF16, &m));
  w = param_named(m, "weight");
  assert_int_equal(mixp_tensor_dtype(w), MIXP_BF16);
  mixp_tensor_release(w);
  mixp_module_destroy(m);

  m = (mixp_module *)0x1;
  MT_FAILS(mixp_embedding_create(NULL, V, D, -1, MIXP_F32, &m), MIXP_ERR_INVALID_ARGUMENT,
           "mixp_embedding_create: session is NULL");
  MT_FAILS(mixp_embedding_create(s, V, D, -1, MIXP_F32, NULL), MIXP_ERR_INVALID_ARGUMENT,
           "mixp_embedding_create: out is NULL");
  MT_FAILS(mixp_embedding_create(s, 0, D, -1, MIXP_F32, &m), MIXP_ERR_INVALID_ARGUMENT,
           "num_embeddings must be >= 1, got 0");
  MT_FAILS(mixp_embedding_create(s, V, -3, -1, MIXP_F32, &m), MIXP_ERR_INVALID_ARGUMENT,
           "dim must be >= 1, got -3");
  MT_FAILS(mixp_embedding_create(s, V, D, V, MIXP_F32, &m), MIXP_ERR_INVALID_ARGUMENT,
           "padding_idx must be -1 (none) or in [0, 100), got 100");
  MT_FAILS(mixp_embedding_create(s, V, D, -2, MIXP_F32, &m), MIXP_ERR_INVALID_ARGUMENT,
           "got -2");
  MT_FAILS(mixp_embedding_create(s, INT64_MAX / 2, D, -1, MIXP_F32, &m),
           MIXP_ERR_INVALID_ARGUMENT, "too large");
  MT_FAILS(mixp_embedding_create(s, V, D, -1, MIXP_I64, &m), MIXP_ERR_DTYPE, "got i64");
  assert_ptr_equal(m, (mixp_module *)0x1);
  mixp_session_destroy(s);
}

/* ---- MultiheadAttention ---------------------------------------------------------- */

/* Reference self-attention in double: x [B,T,E] with packed in-projection
 * Win [3E,E], bin [3E], out-projection Wo [E,E], bo [E]. */
static void mha_reference(const double *x, const double *win, const double *bin,
                          const double *wo, const double *bo, int B, int T, int E, int H,
                          int causal, double *y) {
  const int hd = E / H;
  double *qkv = malloc(sizeof(double) * (size_t)(B * T * 3 * E));
  double *ctx = malloc(sizeof(double) * (size_t)(B * T * E));
  for (int r = 0; r < B * T; ++r)
    for (int o = 0; o < 3 * E; ++o) {
      double a = bin[o];
      for (int i = 0; i < E; ++i) a += x[r * E + i] * win[o * E + i];
      qkv[r * 3 * E + o] = a;
    }
  for (int b = 0; b < B; ++b)
    for (int h = 0; h < H; ++h)
      for (int i = 0; i < T; ++i) {
        double sc[16], mx = -1e300, z = 0;
        for (int j = 0; j < T; ++j) {
          double d = 0;
          for (int k = 0; k < hd; ++k)
            d += qkv[(b * T + i) * 3 * E + h * hd + k] * qkv[(b * T + j) * 3 * E + E + h * hd + k];
          sc[j] = (causal && j > i) ? -INFINITY : d / sqrt((double)hd);
          if (sc[j] > mx) mx = sc[j];
        }
        for (int j = 0; j < T; ++j) {
          sc[j] = exp(sc[j] - mx);
          z += sc[j];
        }
        for (int k = 0; k < hd; ++k) {
          double a = 0;
          for (int j = 0; j < T; ++j) a += sc[j] / z * qkv[(b * T + j) * 3 * E + 2 * E + h * hd + k];
          ctx[(b * T + i) * E + h * hd + k] = a;
        }
      }
  for (int r = 0; r < B * T; ++r)
    for (int o = 0; o < E; ++o) {
      double a = bo[o];
      for (int i = 0; i < E; ++i) a += ctx[r * E + i] * wo[o * E + i];
      y[r * E + o] = a;
    }
  free(qkv);
  free(ctx);
}

static void randomize(mixp_session *s, mixp_tensor *p, uint64_t seed) {
  int64_t n = mixp_tensor_numel(p), shape[MIXP_MAX_DIMS];
  int nd = 0;
  MT_OK(mixp_tensor_shape(p, shape, MIXP_MAX_DIMS, &nd));
  double *v = malloc(sizeof(double) * (size_t)n);
  mt_fill(v, n, -0.5, 0.5, seed);
  mixp_tensor *t = mt_tensor(s, mixp_tensor_dtype(p), v, shape, nd);
  MT_OK(mixp_no_grad_begin(s));
  MT_OK(mixp_tensor_copy_(p, t));
  MT_OK(mixp_no_grad_end(s));
  mixp_tensor_release(t);
  free(v);
}

static void test_mha_parameters_and_init(void **state) {
  (void)state;
  enum { E = 32 };
  mixp_session *s = mt_session();
  mixp_module *m = NULL;
  MT_OK(mixp_multihead_attention_create(s, E, 4, 1, 0.0, 0, MIXP_F32, &m));
  const char *pn[4] = {"in_proj_weight", "in_proj_bias", "out_proj.weight", "out_proj.bias"};
  expect_names(m, pn, 4, 0);
  assert_int_equal(mixp_module_num_buffers(m), 0);
  assert_int_equal(mixp_module_num_parameter_elements(m), 4 * E * E + 4 * E);
  mixp_tensor *wi = param_named(m, "in_proj_weight"), *bi = param_named(m, "in_proj_bias");
  mixp_tensor *wo = param_named(m, "out_proj.weight"), *bo = param_named(m, "out_proj.bias");
  const int64_t wis[2] = {3 * E, E}, bis[1] = {3 * E};
  expect_shape(wi, wis, 2);
  expect_shape(bi, bis, 1);
  check_uniform(wi, sqrt(6.0 / (4.0 * E))); /* xavier over [3E, E] */
  check_uniform(wo, 1.0 / sqrt((double)E)); /* Linear default */
  check_constant(bi, 0.0);
  check_constant(bo, 0.0);
  mixp_tensor_release(wi);
  mixp_tensor_release(bi);
  mixp_tensor_release(wo);
  mixp_tensor_release(bo);
  mixp_module_destroy(m);
  /* without biases */
  MT_OK(mixp_multihead_attention_create(s, E, 4, 0, 0.0, 1, MIXP_F32, &m));
  const char *pn2[2] = {"in_proj_weight", "out_proj.weight"};
  expect_names(m, pn2, 2, 0);
  mixp_module_destroy(m);
  mixp_session_destroy(s);
}

static void check_mha_forward(int causal) {
  enum { B = 2, T = 4, E = 6, H = 2 };
  mixp_session *s = mt_session();
  mixp_module *m = NULL;
  MT_OK(mixp_multihead_attention_create(s, E, H, 1, 0.5, causal, MIXP_F64, &m));
  for (int i = 0; i < 4; ++i) {
    mixp_tensor *p = NULL;
    MT_OK(mixp_module_parameter(m, i, &p));
    randomize(s, p, 40 + (uint64_t)i); /* non-zero biases */
    mixp_tensor_release(p);
  }
  /* evaluation mode: no attention dropout */
  MT_OK(mixp_module_set_training(m, 0));
  const int64_t xs[3] = {B, T, E};
  double xv[B * T * E], want[B * T * E];
  mt_fill(xv, B * T * E, -1, 1, 31);
  mixp_tensor *x = mt_tensor(s, MIXP_F64, xv, xs, 3), *y = forward(m, x);
  expect_shape(y, xs, 3);
  mixp_tensor *wi = param_named(m, "in_proj_weight"), *bi = param_named(m, "in_proj_bias");
  mixp_tensor *wo = param_named(m, "out_proj.weight"), *bo = param_named(m, "out_proj.bias");
  double *wiv = mt_values(wi), *biv = mt_values(bi), *wov = mt_values(wo), *bov = mt_values(bo);
  mha_reference(xv, wiv, biv, wov, bov, B, T, E, H, causal, want);
  double *got = mt_values(y);
  mt_assert_close(got, want, B * T * E, 1e-12, 1e-12);
  free(got);
  free(wiv);
  free(biv);
  free(wov);
  free(bov);
  mixp_tensor_release(wi);
  mixp_tensor_release(bi);
  mixp_tensor_release(wo);
  mixp_tensor_release(bo);
  mixp_tensor_release(y);
  mixp_tensor_release(x);
  mixp_module_destroy(m);
  mixp_session_destroy(s);
}

static void test_mha_forward(void **state) {
  (void)state;
  check_mha_forward(0);
  check_mha_forward(1);
}

/* In training mode dropout makes two passes differ; in eval they agree. */
static void test_mha_dropout_modes(void **state) {
  (void)state;
  mixp_session *s = mt_session();
  mixp_module *m = NULL;
  MT_OK(mixp_multihead_attention_create(s, 8, 2, 1, 0.5, 0, MIXP_F32, &m));
  const int64_t xs[3] = {2, 5, 8};
  double xv[80];
  mt_fill(xv, 80, -1, 1, 2);
  mixp_tensor *x = mt_tensor(s, MIXP_F32, xv, xs, 3);
  mixp_tensor *a = forward(m, x), *b = forward(m, x);
  double *va = mt_values(a), *vb = mt_values(b);
  assert_memory_not_equal(va, vb, sizeof(double) * 80);
  free(va);
  free(vb);
  mixp_tensor_release(a);
  mixp_tensor_release(b);
  MT_OK(mixp_module_set_training(m, 0));
  a = forward(m, x);
  b = forward(m, x);
  assert_same_values(a, b);
  mixp_tensor_release(a);
  mixp_tensor_release(b);
  mixp_tensor_release(x);
  mixp_module_destroy(m);
  mixp_session_destroy(s);
}

/* Central differences through the whole layer (input gradient, F64). */
static mixp_status mha_fn(mixp_tensor **in, int n, void *ctx, mixp_tensor **out) {
  (void)n;
  return mixp_module_forward((mixp_module *)ctx, in[0], out);
}

static void test_mha_gradcheck(void **state) {
  (void)state;
  mixp_session *s = mt_session();
  mixp_module *m = NULL;
  MT_OK(mixp_multihead_attention_create(s, 4, 2, 1, 0.0, 1, MIXP_F64, &m));
  double xv[2 * 3 * 4];
  mt_fill(xv, 24, -1, 1, 12);
  const int64_t xs[3] = {2, 3, 4};
  mt_input in[1] = {{xv, xs, 3, 1, MIXP_F64}};
  mt_gradcheck(s, mha_fn, m, in, 1, 1e-7, 1e-5);
  mixp_module_destroy(m);
  mixp_session_destroy(s);
}

static void test_mha_misuse(void **state) {
  (void)state;
  mixp_session *s = mt_session();
  mixp_module *m = (mixp_module *)0x1;
  MT_FAILS(mixp_multihead_attention_create(NULL, 8, 2, 1, 0.0, 0, MIXP_F32, &m),
           MIXP_ERR_INVALID_ARGUMENT, "mixp_multihead_attention_create: session is NULL");
  MT_FAILS(mixp_multihead_attention_create(s, 8, 2, 1, 0.0, 0, MIXP_F32, NULL),
           MIXP_ERR_INVALID_ARGUMENT, "mixp_multihead_attention_create: out is NULL");
  MT_FAILS(mixp_multihead_attention_create(s, 0, 2, 1, 0.0, 0, MIXP_F32, &m),
           MIXP_ERR_INVALID_ARGUMENT, "embed_dim must be >= 1, got 0");
  MT_FAILS(mixp_multihead_attention_create(s, 8, 0, 1, 0.0, 0, MIXP_F32, &m),
           MIXP_ERR_INVALID_ARGUMENT, "num_heads must be >= 1, got 0");
  MT_FAILS(mixp_multihead_attention_create(s, 8, 3, 1, 0.0, 0, MIXP_F32, &m),
           MIXP_ERR_INVALID_ARGUMENT, "embed_dim (8) must be divisible by num_heads (3)");
  MT_FAILS(mixp_multihead_attention_create(s, 8, 2, 1, 1.0, 0, MIXP_F32, &m),
           MIXP_ERR_INVALID_ARGUMENT, "dropout must be in [0, 1), got 1");
  MT_FAILS(mixp_multihead_attention_create(s, 8, 2, 1, -0.5, 0, MIXP_F32, &m),
           MIXP_ERR_INVALID_ARGUMENT, "dropout");
  MT_FAILS(mixp_multihead_attention_create(s, 8, 2, 5, 0.0, 0, MIXP_F32, &m),
           MIXP_ERR_INVALID_ARGUMENT, "bias must be 0 or 1, got 5");
  MT_FAILS(mixp_multihead_attention_create(s, 8, 2, 1, 0.0, 2, MIXP_F32, &m),
           MIXP_ERR_INVALID_ARGUMENT, "causal must be 0 or 1, got 2");
  MT_FAILS(mixp_multihead_attention_create(s, 8, 2, 1, 0.0, 0, MIXP_BOOL, &m), MIXP_ERR_DTYPE,
           "got bool");
  assert_ptr_equal(m, (mixp_module *)0x1);
  MT_OK(mixp_multihead_attention_create(s, 8, 2, 1, 0.0, 0, MIXP_F32, &m));
  const int64_t bad3[3] = {2, 3, 6}, bad2[2] = {3, 8};
  mixp_tensor *x = NULL, *y = (mixp_tensor *)0x1;
  MT_OK(mixp_tensor_zeros(s, MIXP_F32, bad3, 3, &x));
  MT_FAILS(mixp_module_forward(m, x, &y), MIXP_ERR_SHAPE,
           "MultiheadAttention(embed_dim=8) expects x [B, T, 8], got [2,3,6]");
  mixp_tensor_release(x);
  MT_OK(mixp_tensor_zeros(s, MIXP_F32, bad2, 2, &x));
  MT_FAILS(mixp_module_forward(m, x, &y), MIXP_ERR_SHAPE, "got [3,8]");
  assert_ptr_equal(y, (mixp_tensor *)0x1);
  mixp_tensor_release(x);
  mixp_module_destroy(m);
  mixp_session_destroy(s);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_embedding),
      cmocka_unit_test(test_mha_parameters_and_init),
      cmocka_unit_test(test_mha_forward),
      cmocka_unit_test(test_mha_dropout_modes),
      cmocka_unit_test(test_mha_gradcheck),
      cmocka_unit_test(test_mha_misuse),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
