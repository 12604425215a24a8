/* Layers: Conv2d, BatchNorm2d, LayerNorm, Embedding, MultiheadAttention —
 * parameters and buffers, PyTorch's initialisations, forward passes against
 * the public ops or formulas in double, train/eval, and misuse; plus the
 * module buffer and size queries. */
#include "test_util.h"

/* ---- helpers ---------------------------------------------------------------- */

static mixp_tensor *param_named(const mixp_module *m, const char *name) {
  int n = mixp_module_num_parameters(m);
  for (int i = 0; i < n; ++i)
    if (strcmp(mixp_module_parameter_name(m, i), name) == 0) {
      mixp_tensor *t = NULL;
      MT_OK(mixp_module_parameter(m, i, &t));
      return t;
    }
  print_error("no parameter %s\n", name);
  fail();
  return NULL;
}

static mixp_tensor *buffer_named(const mixp_module *m, const char *name) {
  int n = mixp_module_num_buffers(m);
  for (int i = 0; i < n; ++i)
    if (strcmp(mixp_module_buffer_name(m, i), name) == 0) {
      mixp_tensor *t = NULL;
      MT_OK(mixp_module_buffer(m, i, &t));
      return t;
    }
  print_error("no buffer %s\n", name);
  fail();
  return NULL;
}

static void expect_shape(const mixp_tensor *t, const int64_t *want, int ndim) {
  int64_t shape[MIXP_MAX_DIMS];
  int nd = -1;
  MT_OK(mixp_tensor_shape(t, shape, MIXP_MAX_DIMS, &nd));
  assert_int_equal(nd, ndim);
  for (int i = 0; i < ndim; ++i) assert_int_equal(shape[i], want[i]);
}

static void expect_names(const mixp_module *m, const char *const *names, int n, int buffers) {
  assert_int_equal(buffers ? mixp_module_num_buffers(m) : mixp_module_num_parameters(m), n);
  for (int i = 0; i < n; ++i)
    assert_string_equal(buffers ? mixp_module_buffer_name(m, i) : mixp_module_parameter_name(m, i),
                        names[i]);
}

/* Every value in [-bound, bound], the extremes near the bounds, and (for
 * many values) the uniform's mean and variance. */
static void check_uniform(const mixp_tensor *t, double bound) {
  int64_t n = mixp_tensor_numel(t);
  double *v = mt_values(t), lo = 1e300, hi = -1e300, mean = 0, var = 0;
  for (int64_t i = 0; i < n; ++i) {
    assert_true(v[i] >= -bound && v[i] <= bound);
    lo = v[i] < lo ? v[i] : lo;
    hi = v[i] > hi ? v[i] : hi;
    mean += v[i] / (double)n;
  }
  for (int64_t i = 0; i < n; ++i) var += (v[i] - mean) * (v[i] - mean) / (double)n;
  assert_true(lo < -0.8 * bound && hi > 0.8 * bound);
  if (n >= 1000) {
    assert_true(fabs(mean) < 6.0 * bound / sqrt(3.0 * (double)n));
    assert_true(fabs(var / (bound * bound / 3.0) - 1.0) < 0.1);
  }
  free(v);
}

static void check_constant(const mixp_tensor *t, double c) {
  int64_t n = mixp_tensor_numel(t);
  double *v = mt_values(t);
  for (int64_t i = 0; i < n; ++i) assert_true(v[i] == c);
  free(v);
}

static mixp_tensor *forward(mixp_module *m, const mixp_tensor *x) {
  mixp_tensor *y = NULL;
  MT_OK(mixp_module_forward(m, x, &y));
  return y;
}

static void assert_same_values(const mixp_tensor *a, const mixp_tensor *b) {
  int64_t n = mixp_tensor_numel(a);
  assert_int_equal(n, mixp_tensor_numel(b));
  double *va = mt_values(a), *vb = mt_values(b);
  assert_memory_equal(va, vb, (size_t)n * sizeof(double));
  free(va);
  free(vb);
}

/* ---- Conv2d ---------------------------------------------------------------------- */

static void test_conv2d_parameters_and_init(void **state) {
  (void)state;
  mixp_session *s = mt_session();
  mixp_module *m = NULL;
  MT_OK(mixp_conv2d_create(s, 16, 32, 3, 5, NULL, 1, MIXP_F32, &m));
  const char *names[2] = {"weight", "bias"};
  expect_names(m, names, 2, 0);
  assert_int_equal(mixp_module_num_buffers(m), 0);
  assert_int_equal(mixp_module_num_parameter_elements(m), 32 * 16 * 15 + 32);
  mixp_tensor *w = param_named(m, "weight"), *b = param_named(m, "bias");
  const int64_t ws[4] = {32, 16, 3, 5}, bs[1] = {32};
  expect_shape(w, ws, 4);
  expect_shape(b, bs, 1);
  assert_int_equal(mixp_tensor_requires_grad(w), 1);
  assert_int_equal(mixp_tensor_is_leaf(b), 1);
  check_uniform(w, 1.0 / sqrt(16.0 * 15.0));
  check_uniform(b, 1.0 / sqrt(16.0 * 15.0));
  mixp_tensor_release(w);
  mixp_tensor_release(b);
  mixp_module_destroy(m);

  /* depthwise: fan_in counts one group's inputs (1 * 3 * 3); no bias */
  mixp_conv2d_options g;
  mixp_conv2d_options_init(&g);
  g.groups = 64;
  MT_OK(mixp_conv2d_create(s, 64, 128, 3, 3, &g, 0, MIXP_BF16, &m));
  assert_int_equal(mixp_module_num_parameters(m), 1);
  w = param_named(m, "weight");
  const int64_t dws[4] = {128, 1, 3, 3};
  expect_shape(w, dws, 4);
  assert_int_equal(mixp_tensor_dtype(w), MIXP_BF16);
  check_uniform(w, 1.0 / 3.0);
  mixp_tensor_release(w);
  mixp_module_destroy(m);
  mixp_session_destroy(s);
}

/* The layer computes exactly mixp_conv2d with its parameters and geometry. */
static void check_conv_forward(mixp_layout layout, int bias, int groups) {
  mixp_session *s = mt_session();
  mixp_conv2d_options g;
  mixp_conv2d_options_init(&g);
  g.stride_h = 2;
  g.pad_h = 1;
  g.pad_w = 2;
  g.dilation_w = 2;
  g.groups = groups;
  g.layout = layout;
  mixp_module *m = NULL;
  MT_OK(mixp_conv2d_create(s, 4, 6, 3, 3, &g, bias, MIXP_F32, &m));
  const int64_t nchw[4] = {2, 4, 7, 6}, nhwc[4] = {2, 7, 6, 4};
  double xv[2 * 4 * 7 * 6];
  mt_fill(xv, 2 * 4 * 7 * 6, -1, 1, 3);
  mixp_tensor *x = mt_tensor(s, MIXP_F32, xv, layout == MIXP_NCHW ? nchw : nhwc, 4);
  mixp_tensor *y = forward(m, x), *w = param_named(m, "weight"), *b = NULL, *want = NULL;
  if (bias) b = param_named(m, "bias");
  MT_OK(mixp_conv2d(x, w, b, &g, &want));
  /* out: H (7 + 2 - 3)/2 + 1 = 4, W (6 + 4 - 5) + 1 = 6 */
  const int64_t ys_nchw[4] = {2, 6, 4, 6}, ys_nhwc[4] = {2, 4, 6, 6};
  expect_shape(y, layout == MIXP_NCHW ? ys_nchw : ys_nhwc, 4);
  assert_same_values(y, want);
  assert_int_equal(mixp_tensor_requires_grad(y), 1);
  mixp_tensor_release(x);
  mixp_tensor_release(y);
  mixp_tensor_release(w);
  mixp_tensor_release(b);
  mixp_tensor_release(want);
  mixp_module_destroy(m);
  mixp_session_destroy(s);
}

static void test_conv2d_forward(void **state) {
  (void)state;
  check_conv_forward(MIXP_NCHW, 1, 1);
  check_conv_forward(MIXP_NCHW, 0, 2);
  check_conv_forward(MIXP_NHWC, 1, 2);
}

static void test_conv2d_misuse(void **state) {
  (void)state;
  mixp_session *s = mt_session();
  mixp_module *m = (mixp_module *)0x1;
  mixp_conv2d_options g;
  mixp_conv2d_options_init(&g);
  MT_FAILS(mixp_conv2d_create(NULL, 1, 1, 3, 3, NULL, 1, MIXP_F32, &m), MIXP_ERR_INVALID_ARGUMENT,
           "mixp_conv2d_create: session is NULL");
  MT_FAILS(mixp_conv2d_create(s, 1, 1, 3, 3, NULL, 1, MIXP_F32, NULL), MIXP_ERR_INVALID_ARGUMENT,
           "mixp_conv2d_create: out is NULL");
  MT_FAILS(mixp_conv2d_create(s, 0, 1, 3, 3, NULL, 1, MIXP_F32, &m), MIXP_ERR_INVALID_ARGUMENT,
           "in_channels must be >= 1, got 0");
  MT_FAILS(mixp_conv2d_create(s, 1, -2, 3, 3, NULL, 1, MIXP_F32, &m), MIXP_ERR_INVALID_ARGUMENT,
           "out_channels must be >= 1, got -2");
  MT_FAILS(mixp_conv2d_create(s, 1, 1, 0, 3, NULL, 1, MIXP_F32, &m), MIXP_ERR_INVALID_ARGUMENT,
           "kernel_h must be >= 1");
  MT_FAILS(mixp_conv2d_create(s, 1, 1, 3, -1, NULL, 1, MIXP_F32, &m), MIXP_ERR_INVALID_ARGUMENT,
           "kernel_w must be >= 1");
  MT_FAILS(mixp_conv2d_create(s, 1, 1, 3, 3, NULL, 2, MIXP_F32, &m), MIXP_ERR_INVALID_ARGUMENT,
           "bias must be 0 or 1, got 2");
  MT_FAILS(mixp_conv2d_create(s, 1, 1, 3, 3, NULL, 1, MIXP_I64, &m), MIXP_ERR_DTYPE,
           "dtype must be a float dtype");
  g.groups = 3;
  MT_FAILS(mixp_conv2d_create(s, 4, 6, 3, 3, &g, 1, MIXP_F32, &m), MIXP_ERR_INVALID_ARGUMENT,
           "in_channels (4) must be divisible by geom->groups (3)");
  MT_FAILS(mixp_conv2d_create(s, 6, 4, 3, 3, &g, 1, MIXP_F32, &m), MIXP_ERR_INVALID_ARGUMENT,
           "out_channels (4) must be divisible by geom->groups (3)");
  g.groups = 0;
  MT_FAILS(mixp_conv2d_create(s, 6, 6, 3, 3, &g, 1, MIXP_F32, &m), MIXP_ERR_INVALID_ARGUMENT,
           "geom->groups must be >= 1");
  mixp_conv2d_options_init(&g);
  g.stride_w = 0;
  MT_FAILS(mixp_conv2d_create(s, 1, 1, 3, 3, &g, 1, MIXP_F32, &m), MIXP_ERR_INVALID_ARGUMENT,
           "geom->stride_w must be >= 1, got 0");
  mixp_conv2d_options_init(&g);
  g.dilation_h = -1;
  MT_FAILS(mixp_conv2d_create(s, 1, 1, 3, 3, &g, 1, MIXP_F32, &m), MIXP_ERR_INVALID_ARGUMENT,
           "geom->dilation_h");
  mixp_conv2d_options_init(&g);
  g.pad_h = -1;
  MT_FAILS(mixp_conv2d_create(s, 1, 1, 3, 3, &g, 1, MIXP_F32, &m), MIXP_ERR_INVALID_ARGUMENT,
           "geom->pad_h must be >= 0, got -1");
  mixp_conv2d_options_init(&g);
  g.layout = (mixp_layout)7;
  MT_FAILS(mixp_conv2d_create(s, 1, 1, 3, 3, &g, 1, MIXP_F32, &m), MIXP_ERR_INVALID_ARGUMENT,
           "geom->layout");
  mixp_conv2d_options_init(&g);
  g.struct_size = 4;
  MT_FAILS(mixp_conv2d_create(s, 1, 1, 3, 3, &g, 1, MIXP_F32, &m), MIXP_ERR_INVALID_ARGUMENT,
           "struct_size");
  MT_FAILS(mixp_conv2d_create(s, INT64_MAX / 4, 1 << 20, 3, 3, NULL, 1, MIXP_F32, &m),
           MIXP_ERR_INVALID_ARGUMENT, "too large");
  assert_ptr_equal(m, (mixp_module *)0x1);

  /* a forward on the wrong channel count fails in the op */
  MT_OK(mixp_conv2d_create(s, 3, 2, 3, 3, NULL, 1, MIXP_F32, &m));
  const int64_t xs[4] = {1, 2, 5, 5};
  mixp_tensor *x = NULL, *y = (mixp_tensor *)0x1;
  MT_OK(mixp_tensor_zeros(s, MIXP_F32, xs, 4, &x));
  MT_FAILS(mixp_module_forward(m, x, &y), MIXP_ERR_SHAPE, "mixp_conv2d");
  assert_ptr_equal(y, (mixp_tensor *)0x1);
  mixp_tensor_release(x);
  mixp_module_destroy(m);
  mixp_session_destroy(s);
}

/* ---- BatchNorm2d ------------------------------------------------------------------ */

enum { BN_N = 3, BN_C = 2, BN_H = 2, BN_W = 3 };

/* Per-channel batch mean and biased variance of NCHW values. */
static void channel_stats(const double *x, double *mean, double *var) {
  const int cnt = BN_N * BN_H * BN_W;
  for (int c = 0; c < BN_C; ++c) {
    double m = 0, v = 0;
    for (int n = 0; n < BN_N; ++n)
      for (int i = 0; i < BN_H * BN_W; ++i) m += x[(n * BN_C + c) * BN_H * BN_W + i] / cnt;
    for (int n = 0; n < BN_N; ++n)
      for (int i = 0; i < BN_H * BN_W; ++i) {
        double d = x[(n * BN_C + c) * BN_H * BN_W + i] - m;
        v += d * d / cnt;
      }
    mean[c] = m;
    var[c] = v;
  }
}

static void bn_reference(const double *x, const double *mean, const double *var, double eps,
                         double *y) {
  for (int n = 0; n < BN_N; ++n)
    for (int c = 0; c < BN_C; ++c)
      for (int i = 0; i < BN_H * BN_W; ++i) {
        int k = (n * BN_C + c) * BN_H * BN_W + i;
        y[k] = (x[k] - mean[c]) / sqrt(var[c] + eps);
      }
}

static int64_t read_count(const mixp_module *m) {
  mixp_tensor *t = buffer_named(m, "num_batches_tracked");
  assert_int_equal(mixp_tensor_dtype(t), MIXP_I64);
  assert_int_equal(mixp_tensor_ndim(t), 0);
  int64_t v = -1;
  MT_OK(mixp_tensor_to_host(t, &v, sizeof v));
  mixp_tensor_release(t);
  return v;
}

static void test_batchnorm_parameters_buffers(void **state) {
  (void)state;
  mixp_session *s = mt_session();
  mixp_module *m = NULL;
  MT_OK(mixp_batchnorm2d_create(s, 5, 1e-5, 0.1, 1, MIXP_F32, &m));
  const char *pn[2] = {"weight", "bias"};
  const char *bn[3] = {"running_mean", "running_var", "num_batches_tracked"};
  expect_names(m, pn, 2, 0);
  expect_names(m, bn, 3, 1);
  assert_int_equal(mixp_module_num_parameter_elements(m), 10);
  mixp_tensor *w = param_named(m, "weight"), *b = param_named(m, "bias");
  mixp_tensor *rm = buffer_named(m, "running_mean"), *rv = buffer_named(m, "running_var");
  check_constant(w, 1.0);
  check_constant(b, 0.0);
  check_constant(rm, 0.0);
  check_constant(rv, 1.0);
  assert_int_equal(mixp_tensor_requires_grad(rm), 0);
  assert_int_equal(mixp_tensor_dtype(rm), MIXP_F32);
  const int64_t cs[1] = {5};
  expect_shape(rv, cs, 1);
  assert_int_equal(read_count(m), 0);
  /* the same buffer object each time */
  mixp_tensor *rm2 = buffer_named(m, "running_mean");
  assert_ptr_equal(rm, rm2);
  assert_ptr_equal(mixp_module_buffer_name(m, 0), mixp_module_buffer_name(m, 0));
  mixp_tensor_release(rm2);
  mixp_tensor_release(w);
  mixp_tensor_release(b);
  mixp_tensor_release(rm);
  mixp_tensor_release(rv);
  mixp_module_destroy(m);

  /* not affine: no parameters, the same buffers */
  MT_OK(mixp_batchnorm2d_create(s, 5, 1e-3, 0.01, 0, MIXP_F64, &m));
  assert_int_equal(mixp_module_num_parameters(m), 0);
  assert_int_equal(mixp_module_num_parameter_elements(m), 0);
  expect_names(m, bn, 3, 1);
  rm = buffer_named(m, "running_mean");
  assert_int_equal(mixp_tensor_dtype(rm), MIXP_F64);
  mixp_tensor_release(rm);
  mixp_module_destroy(m);
  mixp_session_destroy(s);
}

/* Training: batch statistics, running-stat update with the unbiased variance,
 * a counted batch. Eval: running statistics, nothing updated. */
static void test_batchnorm_train_eval(void **state) {
  (void)state;
  const double eps = 1e-5, mom = 0.25;
  const int n = BN_N * BN_C * BN_H * BN_W, cnt = BN_N * BN_H * BN_W;
  mixp_session *s = mt_session();
  mixp_module *m = NULL;
  MT_OK(mixp_batchnorm2d_create(s, BN_C, eps, mom, 1, MIXP_F64, &m));
  const int64_t xs[4] = {BN_N, BN_C, BN_H, BN_W};
  double xv[BN_N * BN_C * BN_H * BN_W], mean[BN_C], var[BN_C], want[BN_N * BN_C * BN_H * BN_W];
  mt_fill(xv, n, -2, 3, 17);
  mixp_tensor *x = mt_tensor(s, MIXP_F64, xv, xs, 4);

  mixp_tensor *y = forward(m, x);
  expect_shape(y, xs, 4);
  channel_stats(xv, mean, var);
  bn_reference(xv, mean, var, eps, want);
  double *got = mt_values(y);
  mt_assert_close(got, want, n, 1e-12, 1e-12);
  free(got);
  mixp_tensor_release(y);
  double rm_want[BN_C], rv_want[BN_C];
  for (int c = 0; c < BN_C; ++c) {
    rm_want[c] = mom * mean[c];
    rv_want[c] = (1 - mom) * 1.0 + mom * var[c] * cnt / (cnt - 1);
  }
  mixp_tensor *rm = buffer_named(m, "running_mean"), *rv = buffer_named(m, "running_var");
  got = mt_values(rm);
  mt_assert_close(got, rm_want, BN_C, 1e-12, 1e-12);
  free(got);
  got = mt_values(rv);
  mt_assert_close(got, rv_want, BN_C, 1e-12, 1e-12);
  free(got);
  assert_int_equal(read_count(m), 1);
  y = forward(m, x);
  mixp_tensor_release(y);
  assert_int_equal(read_count(m), 2);

  /* eval: normalise with the running statistics; nothing changes */
  MT_OK(mixp_module_set_training(m, 0));
  double *rmv = mt_values(rm), *rvv = mt_values(rv);
  y = forward(m, x);
  bn_reference(xv, rmv, rvv, eps, want);
  got = mt_values(y);
  mt_assert_close(got, want, n, 1e-12, 1e-12);
  free(got);
  mixp_tensor_release(y);
  assert_int_equal(read_count(m), 2);
  double *rm_after = mt_values(rm);
  assert_memory_equal(rm_after, rmv, sizeof(double) * BN_C);
  free(rm_after);
  free(rmv);
  free(rvv);

  /* back to training */
  MT_OK(mixp_module_set_training(m, 1));
  y = forward(m, x);
  assert_int_equal(read_count(m), 3);
  mixp_tensor_release(y);
  mixp_tensor_release(rm);
  mixp_tensor_release(rv);
  mixp_tensor_release(x);
  mixp_module_destroy(m);
  mixp_session_destroy(s);
}

/* Affine parameters scale and shift; gradients reach them. */
static void test_batchnorm_affine_backward(void **state) {
  (void)state;
  const int n = BN_N * BN_C * BN_H * BN_W;
  mixp_session *s = mt_session();
  mixp_module *m = NULL;
  MT_OK(mixp_batchnorm2d_create(s, BN_C, 1e-5, 0.1, 1, MIXP_F64, &m));
  mixp_tensor *w = param_named(m, "weight"), *b = param_named(m, "bias");
  const double wv[BN_C] = {2.0, -0.5}, bv[BN_C] = {0.25, 1.0};
  const int64_t cs[1] = {BN_C};
  mixp_tensor *wn = mt_tensor(s, MIXP_F64, wv, cs, 1), *bnv = mt_tensor(s, MIXP_F64, bv, cs, 1);
  MT_OK(mixp_no_grad_begin(s));
  MT_OK(mixp_tensor_copy_(w, wn));
  MT_OK(mixp_tensor_copy_(b, bnv));
  MT_OK(mixp_no_grad_end(s));
  const int64_t xs[4] = {BN_N, BN_C, BN_H, BN_W};
  double xv[BN_N * BN_C * BN_H * BN_W], mean[BN_C], var[BN_C], want[BN_N * BN_C * BN_H * BN_W];
  mt_fill(xv, n, -1, 1, 5);
  mixp_tensor *x = mt_tensor(s, MIXP_F64, xv, xs, 4), *y = forward(m, x), *sum = NULL;
  channel_stats(xv, mean, var);
  bn_reference(xv, mean, var, 1e-5, want);
  for (int k = 0; k < n; ++k) {
    int c = (k / (BN_H * BN_W)) % BN_C;
    want[k] = want[k] * wv[c] + bv[c];
  }
  double *got = mt_values(y);
  mt_assert_close(got, want, n, 1e-12, 1e-12);
  free(got);
  /* d(sum y)/d bias = N*H*W per channel */
  MT_OK(mixp_sum(y, NULL, 0, 0, &sum));
  MT_OK(mixp_backward(sum, NULL));
  mixp_tensor *gb = NULL;
  MT_OK(mixp_tensor_grad(b, &gb));
  assert_non_null(gb);
  double *gbv = mt_values(gb), gb_want[BN_C] = {BN_N * BN_H * BN_W, BN_N * BN_H * BN_W};
  mt_assert_close(gbv, gb_want, BN_C, 1e-12, 1e-12);
  free(gbv);
  mixp_tensor_release(gb);
  mixp_tensor_release(sum);
  mixp_tensor_release(y);
  mixp_tensor_release(x);
  mixp_tensor_release(wn);
  mixp_tensor_release(bnv);
  mixp_tensor_release(w);
  mixp_tensor_release(b);
  mixp_module_destroy(m);
  mixp_session_destroy(s);
}

/* fp32 parameters (as O2 decorate leaves norm layers) with a bf16 input:
 * normalised in fp32, returned in bf16. */
static void test_norm_layers_mixed_dtype(void **state) {
  (void)state;
  const int n = BN_N * BN_C * BN_H * BN_W;
  mixp_session *s = mt_session();
  mixp_module *m = NULL, *ln = NULL;
  MT_OK(mixp_batchnorm2d_create(s, BN_C, 1e-5, 0.1, 1, MIXP_F32, &m));
  MT_OK(mixp_layernorm_create(s, BN_W, 1e-5, 1, MIXP_F32, &ln));
  const int64_t xs[4] = {BN_N, BN_C, BN_H, BN_W};
  double xv[BN_N * BN_C * BN_H * BN_W];
  mt_fill(xv, n, -1, 1, 8);
  mixp_tensor *x = mt_tensor(s, MIXP_BF16, xv, xs, 4), *xf = NULL;
  MT_OK(mixp_cast(x, MIXP_F32, &xf));
  mixp_tensor *y = forward(m, x), *yln = forward(ln, x);
  assert_int_equal(mixp_tensor_dtype(y), MIXP_BF16);
  assert_int_equal(mixp_tensor_dtype(yln), MIXP_BF16);
  MT_OK(mixp_module_set_training(m, 0));
  mixp_tensor_release(y);
  y = forward(m, x);
  mixp_tensor *yf = forward(m, xf), *yfb = NULL;
  MT_OK(mixp_cast(yf, MIXP_BF16, &yfb));
  assert_same_values(y, yfb);
  mixp_tensor_release(y);
  mixp_tensor_release(yf);
  mixp_tensor_release(yfb);
  mixp_tensor_release(yln);
  mixp_tensor_release(x);
  mixp_tensor_release(xf);
  mixp_module_destroy(m);
  mixp_module_destroy(ln);
  mixp_session_destroy(s);
}

static void test_batchnorm_misuse(void **state) {
  (void)state;
  mixp_session *s = mt_session();
  mixp_module *m = (mixp_module *)0x1;
  MT_FAILS(mixp_batchnorm2d_create(NULL, 4, 1e-5, 0.1, 1, MIXP_F32, &m),
           MIXP_ERR_INVALID_ARGUMENT, "mixp_batchnorm2d_create: session is NULL");
  MT_FAILS(mixp_batchnorm2d_create(s, 4, 1e-5, 0.1, 1, MIXP_F32, NULL),
           MIXP_ERR_INVALID_ARGUMENT, "mixp_batchnorm2d_create: out is NULL");
  MT_FAILS(mixp_batchnorm2d_create(s, 0, 1e-5, 0.1, 1, MIXP_F32, &m), MIXP_ERR_INVALID_ARGUMENT,
           "num_features must be >= 1, got 0");
  MT_FAILS(mixp_batchnorm2d_create(s, 4, 0.0, 0.1, 1, MIXP_F32, &m), MIXP_ERR_INVALID_ARGUMENT,
           "eps must be finite and > 0");
  MT_FAILS(mixp_batchnorm2d_create(s, 4, NAN, 0.1, 1, MIXP_F32, &m), MIXP_ERR_INVALID_ARGUMENT,
           "eps");
  MT_FAILS(mixp_batchnorm2d_create(s, 4, 1e-5, 1.5, 1, MIXP_F32, &m), MIXP_ERR_INVALID_ARGUMENT,
           "momentum must be in [0, 1], got 1.5");
  MT_FAILS(mixp_batchnorm2d_create(s, 4, 1e-5, -0.1, 1, MIXP_F32, &m), MIXP_ERR_INVALID_ARGUMENT,
           "momentum");
  MT_FAILS(mixp_batchnorm2d_create(s, 4, 1e-5, 0.1, 3, MIXP_F32, &m), MIXP_ERR_INVALID_ARGUMENT,
           "affine must be 0 or 1, got 3");
  MT_FAILS(mixp_batchnorm2d_create(s, 4, 1e-5, 0.1, 1, MIXP_I32, &m), MIXP_ERR_DTYPE,
           "dtype must be a float dtype");
  assert_ptr_equal(m, (mixp_module *)0x1);
  /* the op reports a channel mismatch */
  MT_OK(mixp_batchnorm2d_create(s, 4, 1e-5, 0.1, 1, MIXP_F32, &m));
  const int64_t xs[4] = {2, 3, 2, 2};
  mixp_tensor *x = NULL, *y = (mixp_tensor *)0x1;
  MT_OK(mixp_tensor_ones(s, MIXP_F32, xs, 4, &x));
  MT_FAILS(mixp_module_forward(m, x, &y), MIXP_ERR_SHAPE, "mixp_batch_norm");
  assert_ptr_equal(y, (mixp_tensor *)0x1);
  assert_int_equal(read_count(m), 0);
  mixp_tensor_release(x);
  mixp_module_destroy(m);
  mixp_session_destroy(s);
}

/* ---- LayerNorm --------------------------------------------------------------------- */

static void test_layernorm(void **state) {
  (void)state;
  enum { R = 6, D = 5 };
  mixp_session *s = mt_session();
  mixp_module *m = NULL;
  MT_OK(mixp_layernorm_create(s, D, 1e-5, 1, MIXP_F64, &m));
  const char *pn[2] = {"weight", "bias"};
  expect_names(m, pn, 2, 0);
  assert_int_equal(mixp_module_num_buffers(m), 0);
  mixp_tensor *w = param_named(m, "weight"), *b = param_named(m, "bias");
  check_constant(w, 1.0);
  check_constant(b, 0.0);
  const int64_t xs[3] = {2, 3, D};
  double xv[R * D], want[R * D];
  mt_fill(xv, R * D, -3, 3, 21);
  for (int r = 0; r < R; ++r) {
    double mu = 0, var = 0;
    for (int i = 0; i < D; ++i) mu += xv[r * D + i] / D;
    for (int i = 0; i < D; ++i) var += (xv[r * D + i] - mu) * (xv[r * D + i] - mu) / D;
    for (int i = 0; i < D; ++i) want[r * D + i] = (xv[r * D + i] - mu) / sqrt(var + 1e-5);
  }
  mixp_tensor *x = mt_tensor(s, MIXP_F64, xv, xs, 3), *y = forward(m, x);
  expect_shape(y, xs, 3);
  double *got = mt_values(y);
  mt_assert_close(got, want, R * D, 1e-12, 1e-12);
  free(got);
  /* the same as the public op */
  mixp_tensor *ref = NULL;
  MT_OK(mixp_layer_norm(x, 1, w, b, 1e-5, &ref));
  assert_same_values(y, ref);
  mixp_tensor_release(ref);
  mixp_tensor_release(y);

  /* a last dim of another size is a shape error naming the layer */
  const int64_t bad[2] = {3, D + 1};
  mixp_tensor *xb = NULL;
  y = (mixp_tensor *)0x1;
  MT_OK(mixp_tensor_zeros(s, MIXP_F64, bad, 2, &xb));
  MT_FAILS(mixp_module_forward(m, xb, &y), MIXP_ERR_SHAPE,
           "LayerNorm(5) expects an input whose last dim is 5, got [3,6]");
  assert_ptr_equal(y, (mixp_tensor *)0x1);
  mixp_tensor_release(xb);
  mixp_tensor_release(x);
  mixp_tensor_release(w);
  mixp_tensor_release(b);
  mixp_module_destroy(m);

  /* no affine */
  MT_OK(mixp_layernorm_create(s, D, 1e-6, 0, MIXP_F32, &m));
  assert_int_equal(mixp_module_num_parameters(m), 0);
  mixp_module_destroy(m);

  m = (mixp_module *)0x1;
  MT_FAILS(mixp_layernorm_create(NULL, D, 1e-5, 1, MIXP_F32, &m), MIXP_ERR_INVALID_ARGUMENT,
           "mixp_layernorm_create: session is NULL");
  MT_FAILS(mixp_layernorm_create(s, D, 1e-5, 1, MIXP_F32, NULL), MIXP_ERR_INVALID_ARGUMENT,
           "mixp_layernorm_create: out is NULL");
  MT_FAILS(mixp_layernorm_create(s, 0, 1e-5, 1, MIXP_F32, &m), MIXP_ERR_INVALID_ARGUMENT,
           "normalized_size must be >= 1, got 0");
  MT_FAILS(mixp_layernorm_create(s, D, -1.0, 1, MIXP_F32, &m), MIXP_ERR_INVALID_ARGUMENT,
           "eps must be finite and > 0");
  MT_FAILS(mixp_layernorm_create(s, D, INFINITY, 1, MIXP_F32, &m), MIXP_ERR_INVALID_ARGUMENT,
           "eps");
  MT_FAILS(mixp_layernorm_create(s, D, 1e-5, -1, MIXP_F32, &m), MIXP_ERR_INVALID_ARGUMENT,
           "affine must be 0 or 1, got -1");
  MT_FAILS(mixp_layernorm_create(s, D, 1e-5, 1, MIXP_U8, &m), MIXP_ERR_DTYPE, "got u8");
  assert_ptr_equal(m, (mixp_module *)0x1);
  mixp_session_destroy(s);
}

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

/* ---- module queries --------------------------------------------------------------- */

static void test_module_query_misuse(void **state) {
  (void)state;
  mixp_session *s = mt_session();
  mixp_module *m = NULL, *lin = NULL;
  MT_OK(mixp_batchnorm2d_create(s, 3, 1e-5, 0.1, 1, MIXP_F32, &m));
  MT_OK(mixp_linear_create(s, 5, 3, 1, MIXP_F32, &lin));
  assert_int_equal(mixp_module_num_parameter_elements(lin), 18);
  assert_int_equal(mixp_module_num_buffers(lin), 0);

  assert_int_equal(mixp_module_num_buffers(NULL), -1);
  assert_non_null(strstr(mixp_last_error(), "mixp_module_num_buffers: module is NULL"));
  assert_int_equal(mixp_module_num_parameter_elements(NULL), -1);
  assert_non_null(strstr(mixp_last_error(), "mixp_module_num_parameter_elements: module is NULL"));
  assert_null(mixp_module_buffer_name(NULL, 0));
  assert_non_null(strstr(mixp_last_error(), "mixp_module_buffer_name: module is NULL"));
  assert_null(mixp_module_buffer_name(m, 3));
  assert_non_null(strstr(mixp_last_error(), "index 3 is out of range [0, 3)"));
  assert_null(mixp_module_buffer_name(lin, 0));
  assert_non_null(strstr(mixp_last_error(), "index 0 is out of range [0, 0)"));
  mixp_tensor *t = (mixp_tensor *)0x1;
  MT_FAILS(mixp_module_buffer(NULL, 0, &t), MIXP_ERR_INVALID_ARGUMENT,
           "mixp_module_buffer: module is NULL");
  MT_FAILS(mixp_module_buffer(m, -1, &t), MIXP_ERR_INVALID_ARGUMENT,
           "index -1 is out of range [0, 3)");
  MT_FAILS(mixp_module_buffer(m, 0, NULL), MIXP_ERR_INVALID_ARGUMENT,
           "mixp_module_buffer: out is NULL");
  assert_ptr_equal(t, (mixp_tensor *)0x1);
  mixp_module_destroy(lin);
  mixp_module_destroy(m);
  mixp_session_destroy(s);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_conv2d_parameters_and_init),
      cmocka_unit_test(test_conv2d_forward),
      cmocka_unit_test(test_conv2d_misuse),
      cmocka_unit_test(test_batchnorm_parameters_buffers),
      cmocka_unit_test(test_batchnorm_train_eval),
      cmocka_unit_test(test_batchnorm_affine_backward),
      cmocka_unit_test(test_norm_layers_mixed_dtype),
      cmocka_unit_test(test_batchnorm_misuse),
      cmocka_unit_test(test_layernorm),
      cmocka_unit_test(test_embedding),
      cmocka_unit_test(test_mha_parameters_and_init),
      cmocka_unit_test(test_mha_forward),
      cmocka_unit_test(test_mha_dropout_modes),
      cmocka_unit_test(test_mha_gradcheck),
      cmocka_unit_test(test_mha_misuse),
      cmocka_unit_test(test_module_query_misuse),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
