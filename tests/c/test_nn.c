/* Modules: the Linear layer (initialisation, parameters, forward, backward,
 * training with an optimizer) and the generic module calls, with misuse. */
#include "test_util.h"

static mixp_module *make_linear(mixp_session *s, int64_t in, int64_t out, int bias,
                                mixp_dtype dt) {
  mixp_module *m = NULL;
  MT_OK(mixp_linear_create(s, in, out, bias, dt, &m));
  assert_non_null(m);
  return m;
}

static mixp_tensor *param(const mixp_module *m, int i) {
  mixp_tensor *t = NULL;
  MT_OK(mixp_module_parameter(m, i, &t));
  assert_non_null(t);
  return t;
}

static void expect_shape(const mixp_tensor *t, const int64_t *want, int ndim) {
  int64_t shape[MIXP_MAX_DIMS];
  int nd = -1;
  MT_OK(mixp_tensor_shape(t, shape, MIXP_MAX_DIMS, &nd));
  assert_int_equal(nd, ndim);
  for (int i = 0; i < ndim; ++i) assert_int_equal(shape[i], want[i]);
}

/* ---- parameters ------------------------------------------------------------------ */

static void test_linear_parameters(void **state) {
  (void)state;
  mixp_session *s = mt_session();
  mixp_module *m = make_linear(s, 5, 3, 1, MIXP_F32);
  assert_int_equal(mixp_module_num_parameters(m), 2);
  assert_string_equal(mixp_module_parameter_name(m, 0), "weight");
  assert_string_equal(mixp_module_parameter_name(m, 1), "bias");
  /* the name is borrowed from the module and stays put */
  assert_ptr_equal(mixp_module_parameter_name(m, 0), mixp_module_parameter_name(m, 0));
  mixp_tensor *w = param(m, 0), *b = param(m, 1);
  const int64_t ws[2] = {3, 5}, bs[1] = {3};
  expect_shape(w, ws, 2);
  expect_shape(b, bs, 1);
  for (int i = 0; i < 2; ++i) {
    mixp_tensor *t = i ? b : w;
    assert_int_equal(mixp_tensor_dtype(t), MIXP_F32);
    assert_int_equal(mixp_tensor_requires_grad(t), 1);
    assert_int_equal(mixp_tensor_is_leaf(t), 1);
    assert_int_equal(mixp_tensor_is_contiguous(t), 1);
    assert_ptr_equal(mixp_tensor_session(t), s);
  }
  /* the same tensor every time (a new reference to it) */
  mixp_tensor *w2 = param(m, 0);
  assert_ptr_equal(w2, w);
  mixp_tensor_release(w2);
  mixp_tensor_release(w);
  mixp_tensor_release(b);
  mixp_module_destroy(m);

  m = make_linear(s, 4, 2, 0, MIXP_F64);
  assert_int_equal(mixp_module_num_parameters(m), 1);
  assert_string_equal(mixp_module_parameter_name(m, 0), "weight");
  w = param(m, 0);
  assert_int_equal(mixp_tensor_dtype(w), MIXP_F64);
  const int64_t ws2[2] = {2, 4};
  expect_shape(w, ws2, 2);
  mixp_module_destroy(m);
  /* a parameter the caller holds outlives the module */
  double *v = mt_values(w);
  for (int i = 0; i < 8; ++i) assert_true(fabs(v[i]) <= 0.5);
  free(v);
  mixp_tensor_release(w);
  mixp_session_destroy(s);
}

/* ---- initialisation ----------------------------------------------------------- */

/* U(-1/sqrt(in), 1/sqrt(in)) for weight and bias: range, spread, mean, variance. */
static void check_uniform(const mixp_tensor *t, double bound, int check_moments) {
  int64_t n = mixp_tensor_numel(t);
  double *v = mt_values(t);
  double lo = 1e300, hi = -1e300, mean = 0, var = 0;
  for (int64_t i = 0; i < n; ++i) {
    assert_true(v[i] >= -bound && v[i] <= bound);
    if (v[i] < lo) lo = v[i];
    if (v[i] > hi) hi = v[i];
    mean += v[i] / (double)n;
  }
  for (int64_t i = 0; i < n; ++i) var += (v[i] - mean) * (v[i] - mean) / (double)n;
  assert_true(lo < -0.8 * bound && hi > 0.8 * bound);
  if (check_moments) {
    /* uniform: mean 0 (sd of the sample mean bound/sqrt(3n)), variance bound^2/3 */
    assert_true(fabs(mean) < 6.0 * bound / sqrt(3.0 * (double)n));
    assert_true(fabs(var / (bound * bound / 3.0) - 1.0) < 0.1);
  }
  free(v);
}

static void test_linear_init_range(void **state) {
  (void)state;
  const mixp_dtype dts[4] = {MIXP_F32, MIXP_F64, MIXP_F16, MIXP_BF16};
  mixp_session *s = mt_session();
  for (int d = 0; d < 4; ++d) {
    mixp_module *m = make_linear(s, 64, 48, 1, dts[d]);
    mixp_tensor *w = param(m, 0), *b = param(m, 1);
    assert_int_equal(mixp_tensor_dtype(w), dts[d]);
    assert_int_equal(mixp_tensor_dtype(b), dts[d]);
    check_uniform(w, 1.0 / 8.0, 1);
    check_uniform(b, 1.0 / 8.0, 0);
    mixp_tensor_release(w);
    mixp_tensor_release(b);
    mixp_module_destroy(m);
  }
  /* a different fan-in gives a different bound */
  mixp_module *m = make_linear(s, 400, 10, 1, MIXP_F32);
  mixp_tensor *w = param(m, 0);
  check_uniform(w, 1.0 / 20.0, 1);
  mixp_tensor_release(w);
  mixp_module_destroy(m);
  mixp_session_destroy(s);
}

/* The weights come from the session's Philox stream: weight first, then
 * bias, each u in [0,1) mapped to (2u - 1) * bound. */
static void test_linear_init_from_session_stream(void **state) {
  (void)state;
  mixp_session *s = mt_session();
  const int64_t ws[2] = {3, 5}, bs[1] = {3};
  MT_OK(mixp_session_set_seed(s, 77));
  mixp_tensor *uw = NULL, *ub = NULL;
  MT_OK(mixp_tensor_rand(s, MIXP_F32, ws, 2, &uw));
  MT_OK(mixp_tensor_rand(s, MIXP_F32, bs, 1, &ub));
  MT_OK(mixp_session_set_seed(s, 77));
  mixp_module *m = make_linear(s, 5, 3, 1, MIXP_F32);
  mixp_tensor *w = param(m, 0), *b = param(m, 1);
  const double bound = 1.0 / sqrt(5.0);
  double *u = mt_values(uw), *got = mt_values(w), want[15];
  for (int i = 0; i < 15; ++i) want[i] = (2.0 * u[i] - 1.0) * bound;
  mt_assert_close(got, want, 15, 1e-6, 0);
  free(u);
  free(got);
  u = mt_values(ub);
  got = mt_values(b);
  for (int i = 0; i < 3; ++i) want[i] = (2.0 * u[i] - 1.0) * bound;
  mt_assert_close(got, want, 3, 1e-6, 0);
  free(u);
  free(got);

  /* the same seed gives the same layer, bit for bit; the stream advances */
  MT_OK(mixp_session_set_seed(s, 77));
  mixp_module *m2 = make_linear(s, 5, 3, 1, MIXP_F32);
  mixp_module *m3 = make_linear(s, 5, 3, 1, MIXP_F32);
  mixp_tensor *w2 = param(m2, 0), *w3 = param(m3, 0);
  float a[15], c[15], d[15];
  MT_OK(mixp_tensor_to_host(w, a, sizeof a));
  MT_OK(mixp_tensor_to_host(w2, c, sizeof c));
  MT_OK(mixp_tensor_to_host(w3, d, sizeof d));
  assert_memory_equal(a, c, sizeof a);
  assert_memory_not_equal(a, d, sizeof a);
  mixp_tensor_release(w2);
  mixp_tensor_release(w3);
  mixp_module_destroy(m2);
  mixp_module_destroy(m3);

  mixp_tensor_release(uw);
  mixp_tensor_release(ub);
  mixp_tensor_release(w);
  mixp_tensor_release(b);
  mixp_module_destroy(m);
  mixp_session_destroy(s);
}

/* ---- forward and backward ---------------------------------------------------------- */

/* y[r][o] = sum_i x[r][i] W[o][i] + b[o] for rows r of a [rows, in] input. */
static void manual_linear(const double *x, const double *w, const double *b, int64_t rows,
                          int64_t in, int64_t out, double *y) {
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t o = 0; o < out; ++o) {
      double acc = b ? b[o] : 0.0;
      for (int64_t i = 0; i < in; ++i) acc += x[r * in + i] * w[o * in + i];
      y[r * out + o] = acc;
    }
}

static void check_forward(mixp_dtype dt, int bias, const int64_t *xshape, int xndim,
                          double atol, double rtol) {
  enum { IN = 5, OUT = 3 };
  mixp_session *s = mt_session();
  mixp_module *m = make_linear(s, IN, OUT, bias, dt);
  int64_t rows = 1;
  for (int i = 0; i < xndim - 1; ++i) rows *= xshape[i];
  double *xv = malloc(sizeof(double) * (size_t)(rows * IN));
  mt_fill(xv, rows * IN, -2.0, 2.0, 5);
  mixp_tensor *x = mt_tensor(s, dt, xv, xshape, xndim), *y = NULL;
  free(xv);
  MT_OK(mixp_module_forward(m, x, &y));
  assert_int_equal(mixp_tensor_dtype(y), dt);
  int64_t yshape[MIXP_MAX_DIMS];
  memcpy(yshape, xshape, sizeof(int64_t) * (size_t)xndim);
  yshape[xndim - 1] = OUT;
  expect_shape(y, yshape, xndim);
  /* the reference uses the values as stored (rounded to dt) */
  mixp_tensor *w = param(m, 0), *b = bias ? param(m, 1) : NULL;
  double *xr = mt_values(x), *wr = mt_values(w), *br = b ? mt_values(b) : NULL;
  double *want = malloc(sizeof(double) * (size_t)(rows * OUT)), *got = mt_values(y);
  manual_linear(xr, wr, br, rows, IN, OUT, want);
  mt_assert_close(got, want, rows * OUT, atol, rtol);
  free(want);
  free(got);
  free(xr);
  free(wr);
  free(br);
  mixp_tensor_release(w);
  mixp_tensor_release(b);
  mixp_tensor_release(x);
  mixp_tensor_release(y);
  mixp_module_destroy(m);
  mixp_session_destroy(s);
}

static void test_linear_forward(void **state) {
  (void)state;
  const int64_t x2[2] = {4, 5}, x3[3] = {2, 3, 5}, x1[1] = {5};
  check_forward(MIXP_F64, 1, x2, 2, 1e-13, 1e-13);
  check_forward(MIXP_F64, 0, x2, 2, 1e-13, 1e-13);
  check_forward(MIXP_F64, 1, x3, 3, 1e-13, 1e-13);
  check_forward(MIXP_F32, 1, x2, 2, 1e-5, 1e-5);
  check_forward(MIXP_F32, 0, x3, 3, 1e-5, 1e-5);
  check_forward(MIXP_F32, 1, x1, 1, 1e-5, 1e-5);
  check_forward(MIXP_F16, 1, x2, 2, 4e-3, 4e-3);
  check_forward(MIXP_BF16, 1, x2, 2, 3e-2, 2e-2);
}

/* dW = S^T X and db = sum_rows S for y = x W^T + b seeded with S. */
static void test_linear_backward(void **state) {
  (void)state;
  enum { N = 4, IN = 3, OUT = 2 };
  mixp_session *s = mt_session();
  mixp_module *m = make_linear(s, IN, OUT, 1, MIXP_F64);
  double xv[N * IN], sv[N * OUT];
  mt_fill(xv, N * IN, -1.0, 1.0, 8);
  mt_fill(sv, N * OUT, -1.0, 1.0, 9);
  const int64_t xs[2] = {N, IN}, ys[2] = {N, OUT};
  mixp_tensor *x = mt_tensor(s, MIXP_F64, xv, xs, 2), *seed = mt_tensor(s, MIXP_F64, sv, ys, 2);
  mixp_tensor *y = NULL;
  MT_OK(mixp_module_forward(m, x, &y));
  assert_int_equal(mixp_tensor_requires_grad(y), 1);
  MT_OK(mixp_backward(y, seed));
  mixp_tensor *w = param(m, 0), *b = param(m, 1), *gw = NULL, *gb = NULL;
  MT_OK(mixp_tensor_grad(w, &gw));
  MT_OK(mixp_tensor_grad(b, &gb));
  assert_non_null(gw);
  assert_non_null(gb);
  double want_w[OUT * IN] = {0}, want_b[OUT] = {0};
  for (int r = 0; r < N; ++r)
    for (int o = 0; o < OUT; ++o) {
      want_b[o] += sv[r * OUT + o];
      for (int i = 0; i < IN; ++i) want_w[o * IN + i] += sv[r * OUT + o] * xv[r * IN + i];
    }
  double *got = mt_values(gw);
  mt_assert_close(got, want_w, OUT * IN, 1e-13, 1e-13);
  free(got);
  got = mt_values(gb);
  mt_assert_close(got, want_b, OUT, 1e-13, 1e-13);
  free(got);
  mixp_tensor_release(gw);
  mixp_tensor_release(gb);
  mixp_tensor_release(w);
  mixp_tensor_release(b);
  mixp_tensor_release(y);
  mixp_tensor_release(seed);
  mixp_tensor_release(x);
  mixp_module_destroy(m);
  mixp_session_destroy(s);
}

static void test_set_training(void **state) {
  (void)state;
  mixp_session *s = mt_session();
  mixp_module *m = make_linear(s, 2, 2, 1, MIXP_F32);
  MT_OK(mixp_module_set_training(m, 0));
  MT_OK(mixp_module_set_training(m, 1));
  /* Linear behaves the same in both modes */
  const int64_t xs[2] = {1, 2};
  const double xv[2] = {0.5, -1.0};
  mixp_tensor *x = mt_tensor(s, MIXP_F32, xv, xs, 2), *y1 = NULL, *y0 = NULL;
  MT_OK(mixp_module_forward(m, x, &y1));
  MT_OK(mixp_module_set_training(m, 0));
  MT_OK(mixp_module_forward(m, x, &y0));
  float a[2], b[2];
  MT_OK(mixp_tensor_to_host(y1, a, sizeof a));
  MT_OK(mixp_tensor_to_host(y0, b, sizeof b));
  assert_memory_equal(a, b, sizeof a);
  mixp_tensor_release(x);
  mixp_tensor_release(y0);
  mixp_tensor_release(y1);
  mixp_module_destroy(m);
  mixp_session_destroy(s);
}

/* ---- training with an optimizer -------------------------------------------------------------- */

/* Fits a Linear layer to y = x A^T + c with the optimizer updating the
 * module's parameters (gradient of the mean squared error fed as the seed). */
static double fit_linear(mixp_optimizer_kind kind, double lr, int steps) {
  enum { B = 16, IN = 3, OUT = 2 };
  const double A[OUT][IN] = {{0.5, -1.0, 2.0}, {1.5, 0.25, -0.75}};
  const double c[OUT] = {0.3, -0.6};
  mixp_session *s = mt_session();
  mixp_module *lin = NULL;
  MT_OK(mixp_linear_create(s, IN, OUT, 1, MIXP_F32, &lin));
  mixp_tensor *ps[2];
  MT_OK(mixp_module_parameter(lin, 0, &ps[0]));
  MT_OK(mixp_module_parameter(lin, 1, &ps[1]));
  mixp_optimizer_options o;
  mixp_optimizer_options_init(&o, kind);
  o.lr = lr;
  if (kind == MIXP_OPTIM_SGD) o.momentum = 0.9;
  if (kind == MIXP_OPTIM_ADAMW) o.weight_decay = 1e-3; /* biases the fit only slightly */
  mixp_optimizer *opt = NULL;
  MT_OK(mixp_optimizer_create(s, ps, 2, &o, &opt));
  double x[B * IN], t[B * OUT], seed[B * OUT], mse = 0.0;
  int64_t xs[2] = {B, IN}, ys[2] = {B, OUT};
  for (int k = 0; k <= steps; ++k) {
    mt_fill(x, B * IN, -1.0, 1.0, 500 + (uint64_t)k);
    for (int b = 0; b < B; ++b)
      for (int j = 0; j < OUT; ++j) {
        t[b * OUT + j] = c[j];
        for (int i = 0; i < IN; ++i) t[b * OUT + j] += x[b * IN + i] * A[j][i];
      }
    mixp_tensor *xt = mt_tensor(s, MIXP_F32, x, xs, 2), *y = NULL;
    MT_OK(mixp_module_forward(lin, xt, &y));
    double *yv = mt_values(y);
    mse = 0.0;
    for (int e = 0; e < B * OUT; ++e) {
      double d = yv[e] - t[e];
      mse += d * d / (B * OUT);
      seed[e] = 2.0 * d / (B * OUT);
    }
    free(yv);
    if (k < steps) {
      mixp_tensor *st = mt_tensor(s, MIXP_F32, seed, ys, 2);
      MT_OK(mixp_optimizer_zero_grad(opt));
      MT_OK(mixp_backward(y, st));
      MT_OK(mixp_optimizer_step(opt));
      mixp_tensor_release(st);
    }
    mixp_tensor_release(y);
    mixp_tensor_release(xt);
  }
  mixp_optimizer_destroy(opt);
  mixp_tensor_release(ps[0]);
  mixp_tensor_release(ps[1]);
  mixp_module_destroy(lin);
  mixp_session_destroy(s);
  return mse;
}

static void test_train_linear(void **state) {
  (void)state;
  assert_true(fit_linear(MIXP_OPTIM_SGD, 0.1, 250) < 1e-9);
  assert_true(fit_linear(MIXP_OPTIM_ADAM, 0.05, 300) < 1e-9);
  assert_true(fit_linear(MIXP_OPTIM_ADAMW, 0.05, 300) < 1e-5);
}

/* ---- misuse ------------------------------------------------------------------------ */

static void test_create_misuse(void **state) {
  (void)state;
  mixp_session *s = mt_session();
  mixp_module *m = (mixp_module *)0x1;
  MT_FAILS(mixp_linear_create(NULL, 2, 2, 1, MIXP_F32, &m), MIXP_ERR_INVALID_ARGUMENT,
           "mixp_linear_create: session is NULL");
  MT_FAILS(mixp_linear_create(s, 2, 2, 1, MIXP_F32, NULL), MIXP_ERR_INVALID_ARGUMENT,
           "mixp_linear_create: out is NULL");
  MT_FAILS(mixp_linear_create(s, 0, 2, 1, MIXP_F32, &m), MIXP_ERR_INVALID_ARGUMENT,
           "in_features must be >= 1, got 0");
  MT_FAILS(mixp_linear_create(s, 2, -4, 1, MIXP_F32, &m), MIXP_ERR_INVALID_ARGUMENT,
           "out_features must be >= 1, got -4");
  MT_FAILS(mixp_linear_create(s, INT64_MAX / 2, 4, 1, MIXP_F32, &m), MIXP_ERR_INVALID_ARGUMENT,
           "mixp_linear_create: the weight, in_features x out_features");
  /* in x out fits the element limit but not the byte limit, or not int64 at all */
  MT_FAILS(mixp_linear_create(s, (int64_t)1 << 62, 1, 1, MIXP_F32, &m), MIXP_ERR_INVALID_ARGUMENT,
           "mixp_linear_create: the weight of 4611686018427387904 f32 elements is too large");
  MT_FAILS(mixp_linear_create(s, 1, (int64_t)1 << 62, 1, MIXP_F32, &m), MIXP_ERR_INVALID_ARGUMENT,
           "too large");
  MT_FAILS(mixp_linear_create(s, INT64_MAX, 1, 1, MIXP_F32, &m), MIXP_ERR_INVALID_ARGUMENT, "too large");
  MT_FAILS(mixp_linear_create(s, INT64_MAX, INT64_MAX, 1, MIXP_F32, &m), MIXP_ERR_INVALID_ARGUMENT,
           "too large");
  MT_FAILS(mixp_linear_create(s, 2, 2, 2, MIXP_F32, &m), MIXP_ERR_INVALID_ARGUMENT,
           "bias must be 0 or 1, got 2");
  MT_FAILS(mixp_linear_create(s, 2, 2, 1, MIXP_I32, &m), MIXP_ERR_DTYPE,
           "dtype must be a float dtype (f32, f16, bf16, f64), got i32");
  MT_FAILS(mixp_linear_create(s, 2, 2, 1, MIXP_BOOL, &m), MIXP_ERR_DTYPE, "got bool");
  MT_FAILS(mixp_linear_create(s, 2, 2, 1, (mixp_dtype)42, &m), MIXP_ERR_DTYPE, "got 42");
  assert_ptr_equal(m, (mixp_module *)0x1); /* untouched on failure */
  mixp_module_destroy(NULL);                /* no-op */
  mixp_session_destroy(s);
}

static void test_module_misuse(void **state) {
  (void)state;
  mixp_session *s = mt_session();
  mixp_session *s2 = mt_session();
  mixp_module *m = make_linear(s, 3, 2, 1, MIXP_F32);
  const int64_t good[2] = {4, 3}, wrong[2] = {4, 5};
  double xv[20] = {0};
  mixp_tensor *x = mt_tensor(s, MIXP_F32, xv, good, 2);
  mixp_tensor *y = (mixp_tensor *)0x1;

  MT_FAILS(mixp_module_forward(NULL, x, &y), MIXP_ERR_INVALID_ARGUMENT,
           "mixp_module_forward: module is NULL");
  MT_FAILS(mixp_module_forward(m, NULL, &y), MIXP_ERR_INVALID_ARGUMENT,
           "mixp_module_forward: x is NULL");
  MT_FAILS(mixp_module_forward(m, x, NULL), MIXP_ERR_INVALID_ARGUMENT,
           "mixp_module_forward: out is NULL");
  mixp_tensor *xw = mt_tensor(s, MIXP_F32, xv, wrong, 2);
  MT_FAILS(mixp_module_forward(m, xw, &y), MIXP_ERR_SHAPE, "mixp_linear");
  mixp_tensor *x64 = mt_tensor(s, MIXP_F64, xv, good, 2);
  MT_FAILS(mixp_module_forward(m, x64, &y), MIXP_ERR_DTYPE, "mixp_linear");
  mixp_tensor *xo = mt_tensor(s2, MIXP_F32, xv, good, 2);
  MT_FAILS(mixp_module_forward(m, xo, &y), MIXP_ERR_DEVICE, "different sessions");
  assert_ptr_equal(y, (mixp_tensor *)0x1);

  assert_int_equal(mixp_module_num_parameters(NULL), -1);
  assert_non_null(strstr(mixp_last_error(), "mixp_module_num_parameters: module is NULL"));

  mixp_tensor *p = (mixp_tensor *)0x1;
  MT_FAILS(mixp_module_parameter(NULL, 0, &p), MIXP_ERR_INVALID_ARGUMENT,
           "mixp_module_parameter: module is NULL");
  MT_FAILS(mixp_module_parameter(m, -1, &p), MIXP_ERR_INVALID_ARGUMENT,
           "index -1 is out of range [0, 2)");
  MT_FAILS(mixp_module_parameter(m, 2, &p), MIXP_ERR_INVALID_ARGUMENT,
           "index 2 is out of range [0, 2)");
  MT_FAILS(mixp_module_parameter(m, 0, NULL), MIXP_ERR_INVALID_ARGUMENT,
           "mixp_module_parameter: out is NULL");
  assert_ptr_equal(p, (mixp_tensor *)0x1);

  assert_null(mixp_module_parameter_name(NULL, 0));
  assert_non_null(strstr(mixp_last_error(), "mixp_module_parameter_name: module is NULL"));
  assert_null(mixp_module_parameter_name(m, 7));
  assert_non_null(strstr(mixp_last_error(), "index 7 is out of range [0, 2)"));
  assert_null(mixp_module_parameter_name(m, -2));
  assert_non_null(strstr(mixp_last_error(), "index -2"));

  MT_FAILS(mixp_module_set_training(NULL, 1), MIXP_ERR_INVALID_ARGUMENT,
           "mixp_module_set_training: module is NULL");
  MT_FAILS(mixp_module_set_training(m, 2), MIXP_ERR_INVALID_ARGUMENT,
           "training must be 0 or 1, got 2");
  MT_FAILS(mixp_module_set_training(m, -1), MIXP_ERR_INVALID_ARGUMENT, "got -1");

  /* after its session is destroyed a module refuses to run */
  mixp_session_destroy(s);
  MT_FAILS(mixp_module_forward(m, x, &y), MIXP_ERR_STATE, "destroyed");
  assert_ptr_equal(y, (mixp_tensor *)0x1);
  mixp_module_destroy(m);

  mixp_tensor_release(x);
  mixp_tensor_release(xw);
  mixp_tensor_release(x64);
  mixp_tensor_release(xo);
  mixp_session_destroy(s2);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_linear_parameters),
      cmocka_unit_test(test_linear_init_range),
      cmocka_unit_test(test_linear_init_from_session_stream),
      cmocka_unit_test(test_linear_forward),
      cmocka_unit_test(test_linear_backward),
      cmocka_unit_test(test_set_training),
      cmocka_unit_test(test_train_linear),
      cmocka_unit_test(test_create_misuse),
      cmocka_unit_test(test_module_misuse),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
