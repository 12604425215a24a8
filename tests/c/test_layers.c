/* Layers: Conv2d, BatchNorm2d and LayerNorm — parameters and buffers,
 * PyTorch's initialisations, forward passes against the public ops or
 * formulas in double, train/eval, and misuse; plus the module buffer and size
 * queries. Embedding and MultiheadAttention are in test_layers_seq.c. */
#include "test_layers_util.h"

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
      cmocka_unit_test(test_module_query_misuse),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
