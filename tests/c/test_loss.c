/* Losses: cross_entropy (reductions, ignore_index, target validation) and
 * mse_loss; forward values against double formulas in every float dtype,
 * F64 gradient checks, and misuse. */
#include "test_util.h"

static const mixp_dtype kFloatTypes[4] = {MIXP_F64, MIXP_F32, MIXP_F16, MIXP_BF16};

static double tol_of(mixp_dtype dt) {
  switch (dt) {
    case MIXP_F64: return 1e-12;
    case MIXP_F32: return 1e-6;
    case MIXP_F16: return 1.5e-3;
    default: return 1e-2;
  }
}

enum { N = 6, C = 5 };
static const double kTargets[N] = {2, -100, 0, 4, 1, -100};

static mixp_tensor *targets(mixp_session *s, const double *t, int64_t n) {
  return mt_tensor(s, MIXP_I64, t, &n, 1);
}

/* Per-row cross-entropy in double from the logits as stored. */
static void ref_ce(const double *x, const double *t, int64_t n, int64_t c, int64_t ignore,
                   double *rows, double *sum, int64_t *count) {
  *sum = 0.0;
  *count = 0;
  for (int64_t i = 0; i < n; ++i) {
    rows[i] = 0.0;
    if ((int64_t)t[i] == ignore) continue;
    double m = -INFINITY, z = 0.0;
    for (int64_t k = 0; k < c; ++k) m = fmax(m, x[i * c + k]);
    for (int64_t k = 0; k < c; ++k) z += exp(x[i * c + k] - m);
    rows[i] = m + log(z) - x[i * c + (int64_t)t[i]];
    *sum += rows[i];
    ++*count;
  }
}

static void test_cross_entropy_values(void **state) {
  (void)state;
  mixp_session *s = mt_session();
  const int64_t shape[2] = {N, C};
  double v[N * C];
  mt_fill(v, N * C, -3.0, 3.0, 21);
  v[3] = 60.0; /* a dominant logit must not overflow */
  mixp_tensor *tg = targets(s, kTargets, N);
  for (int t = 0; t < 4; ++t) {
    mixp_dtype dt = kFloatTypes[t];
    mixp_tensor *x = mt_tensor(s, dt, v, shape, 2);
    double *xv = mt_values(x);
    double rows[N], total;
    int64_t count;
    ref_ce(xv, kTargets, N, C, MIXP_IGNORE_INDEX_DEFAULT, rows, &total, &count);
    assert_int_equal(count, 4);
    for (int r = 0; r < 3; ++r) {
      mixp_tensor *y = NULL;
      MT_OK(mixp_cross_entropy(x, tg, (mixp_reduction)r, MIXP_IGNORE_INDEX_DEFAULT, &y));
      assert_int_equal(mixp_tensor_dtype(y), dt);
      double *yv = mt_values(y);
      if (r == MIXP_REDUCTION_NONE) {
        assert_int_equal(mixp_tensor_ndim(y), 1);
        assert_int_equal(mixp_tensor_dim(y, 0), N);
        mt_assert_close(yv, rows, N, tol_of(dt), tol_of(dt));
      } else {
        assert_int_equal(mixp_tensor_ndim(y), 0);
        double want = r == MIXP_REDUCTION_MEAN ? total / (double)count : total;
        mt_assert_close(yv, &want, 1, tol_of(dt), tol_of(dt));
      }
      free(yv);
      mixp_tensor_release(y);
    }
    free(xv);
    mixp_tensor_release(x);
  }
  mixp_tensor_release(tg);
  mixp_session_destroy(s);
}

/* A class index can itself be the ignore_index; -100 is then an error. */
static void test_cross_entropy_custom_ignore(void **state) {
  (void)state;
  mixp_session *s = mt_session();
  const int64_t shape[2] = {3, 3};
  const double v[9] = {1, 2, 3, 0, 0, 5, -1, 4, 2};
  const double t[3] = {1, 2, 0};
  mixp_tensor *x = mt_tensor(s, MIXP_F64, v, shape, 2), *tg = targets(s, t, 3), *y = NULL;
  MT_OK(mixp_cross_entropy(x, tg, MIXP_REDUCTION_MEAN, 2, &y));
  double rows[3], total, got;
  int64_t count;
  ref_ce(v, t, 3, 3, 2, rows, &total, &count);
  assert_int_equal(count, 2);
  MT_OK(mixp_tensor_item(y, &got));
  double want = total / 2.0;
  mt_assert_close(&got, &want, 1, 1e-12, 1e-12);
  mixp_tensor_release(y);
  mixp_tensor_release(tg);
  mixp_tensor_release(x);
  mixp_session_destroy(s);
}

static void test_cross_entropy_all_ignored(void **state) {
  (void)state;
  mixp_session *s = mt_session();
  const int64_t shape[2] = {2, 3};
  const double v[6] = {1, 2, 3, 4, 5, 6}, t[2] = {-100, -100};
  mixp_tensor *x = mt_tensor(s, MIXP_F32, v, shape, 2), *tg = targets(s, t, 2);
  mixp_tensor *m = NULL, *sm = NULL, *g = NULL;
  MT_OK(mixp_tensor_set_requires_grad(x, 1));
  MT_OK(mixp_cross_entropy(x, tg, MIXP_REDUCTION_MEAN, -100, &m));
  MT_OK(mixp_cross_entropy(x, tg, MIXP_REDUCTION_SUM, -100, &sm));
  double mv = 0, sv = 1;
  MT_OK(mixp_tensor_item(m, &mv));
  MT_OK(mixp_tensor_item(sm, &sv));
  assert_true(isnan(mv)); /* 0/0, as in PyTorch */
  assert_true(sv == 0.0);
  MT_OK(mixp_backward(sm, NULL));
  MT_OK(mixp_tensor_grad(x, &g));
  double *gv = mt_values(g);
  const double zeros[6] = {0};
  mt_assert_close(gv, zeros, 6, 0, 0);
  free(gv);
  mixp_tensor_release(g);
  mixp_tensor_release(m);
  mixp_tensor_release(sm);
  mixp_tensor_release(tg);
  mixp_tensor_release(x);
  mixp_session_destroy(s);
}

typedef struct ce_ctx {
  mixp_reduction reduction;
  int64_t ignore;
} ce_ctx;

static mixp_status ce_fn(mixp_tensor **in, int n, void *ctx, mixp_tensor **out) {
  (void)n;
  ce_ctx *c = (ce_ctx *)ctx;
  return mixp_cross_entropy(in[0], in[1], c->reduction, c->ignore, out);
}

static void test_cross_entropy_gradcheck(void **state) {
  (void)state;
  mixp_session *s = mt_session();
  const int64_t shape[2] = {N, C}, tshape[1] = {N};
  double v[N * C];
  mt_fill(v, N * C, -2.0, 2.0, 8);
  for (int r = 0; r < 3; ++r) {
    ce_ctx c = {(mixp_reduction)r, MIXP_IGNORE_INDEX_DEFAULT};
    mt_input in[2] = {{v, shape, 2, 1, MIXP_F64}, {kTargets, tshape, 1, 0, MIXP_I64}};
    mt_gradcheck(s, ce_fn, &c, in, 2, 1e-7, 1e-5);
  }
  mixp_session_destroy(s);
}

/* A bad target fails the call on the CPU, which changes nothing; a device
 * checks the targets where they live and fails the next call that waits for
 * it anyway (here the read-back, before it writes), naming the same position
 * and value; the session stays usable and the bad row's loss is NaN
 * (Backend::check_indices). */
static void expect_bad_target(mixp_tensor *x, mixp_tensor *t, mixp_reduction r,
                              const char *needle) {
  mixp_tensor *out = NULL;
  if (mt_on_cpu()) {
    MT_FAILS(mixp_cross_entropy(x, t, r, -100, &out), MIXP_ERR_INVALID_ARGUMENT, needle);
    assert_null(out);
    return;
  }
  MT_OK(mixp_cross_entropy(x, t, r, -100, &out));
  float buf[8] = {42, 42, 42, 42, 42, 42, 42, 42};
  const size_t nb = (size_t)mixp_tensor_numel(out) * sizeof(float);
  assert_true(nb <= sizeof buf);
  MT_FAILS(mixp_tensor_to_host(out, buf, nb), MIXP_ERR_INVALID_ARGUMENT, needle);
  assert_non_null(strstr(mixp_last_error(), "mixp_cross_entropy: "));
  assert_non_null(strstr(mixp_last_error(), "(detected on the device)"));
  assert_true(buf[0] == 42.0f); /* the failed read-back wrote nothing */
  MT_OK(mixp_tensor_to_host(out, buf, nb)); /* reported once; the session goes on */
  int any_nan = 0;
  for (size_t i = 0; i < nb / sizeof(float); ++i) any_nan |= isnan(buf[i]);
  assert_true(any_nan);
  mixp_tensor_release(out);
}

static void test_cross_entropy_bad_targets(void **state) {
  (void)state;
  mixp_session *s = mt_session();
  const int64_t shape[2] = {3, 4};
  double v[12];
  mt_fill(v, 12, -1, 1, 2);
  const double hi[3] = {0, 1, 7}, lo[3] = {-1, 0, 0}, four[3] = {3, 4, 0};
  mixp_tensor *x = mt_tensor(s, MIXP_F32, v, shape, 2), *out = NULL;
  mixp_tensor *t1 = targets(s, hi, 3), *t2 = targets(s, lo, 3), *t3 = targets(s, four, 3);
  expect_bad_target(x, t1, MIXP_REDUCTION_MEAN,
                    "mixp_cross_entropy: target[2] = 7 is out of range [0, 4) and is not "
                    "ignore_index (-100)");
  expect_bad_target(x, t2, MIXP_REDUCTION_SUM, "target[0] = -1 is out of range");
  expect_bad_target(x, t3, MIXP_REDUCTION_NONE, "target[1] = 4");
  /* Declaring the bad value the ignore_index makes it legal. */
  MT_OK(mixp_cross_entropy(x, t2, MIXP_REDUCTION_MEAN, -1, &out));
  double got = 0;
  MT_OK(mixp_tensor_item(out, &got));
  assert_false(isnan(got));
  mixp_tensor_release(out);
  mixp_tensor_release(t1);
  mixp_tensor_release(t2);
  mixp_tensor_release(t3);
  mixp_tensor_release(x);
  mixp_session_destroy(s);
}

/* ---- mse_loss ---------------------------------------------------------------- */

/* ---- label smoothing (mixp_cross_entropy_ex) ------------------------------ */

/* PyTorch's definition in double: (1 - e)(-log p_t) + e mean_k(-log p_k). */
static void ref_ce_smoothed(const double *x, const double *t, int64_t n, int64_t c, double e,
                            double *rows, double *sum, int64_t *count) {
  *sum = 0.0;
  *count = 0;
  for (int64_t i = 0; i < n; ++i) {
    rows[i] = 0.0;
    if ((int64_t)t[i] == MIXP_IGNORE_INDEX_DEFAULT) continue;
    double m = -INFINITY, z = 0.0, all = 0.0;
    for (int64_t k = 0; k < c; ++k) m = fmax(m, x[i * c + k]);
    for (int64_t k = 0; k < c; ++k) z += exp(x[i * c + k] - m);
    const double lse = m + log(z);
    for (int64_t k = 0; k < c; ++k) all += lse - x[i * c + k];
    rows[i] = (1.0 - e) * (lse - x[i * c + (int64_t)t[i]]) + e * all / (double)c;
    *sum += rows[i];
    ++*count;
  }
}

static void test_cross_entropy_label_smoothing(void **state) {
  (void)state;
  mixp_session *s = mt_session();
  const int64_t shape[2] = {N, C};
  double v[N * C];
  mt_fill(v, N * C, -3.0, 3.0, 23);
  mixp_tensor *tg = targets(s, kTargets, N);
  static const double eps[] = {0.1, 0.5, 1.0};
  for (int t = 0; t < 4; ++t) {
    mixp_dtype dt = kFloatTypes[t];
    mixp_tensor *x = mt_tensor(s, dt, v, shape, 2);
    double *xv = mt_values(x);
    for (size_t e = 0; e < sizeof eps / sizeof *eps; ++e) {
      double rows[N], total;
      int64_t count;
      ref_ce_smoothed(xv, kTargets, N, C, eps[e], rows, &total, &count);
      for (int r = 0; r < 3; ++r) {
        mixp_cross_entropy_options o;
        mixp_cross_entropy_options_init(&o);
        o.reduction = (mixp_reduction)r;
        o.label_smoothing = eps[e];
        mixp_tensor *y = NULL;
        MT_OK(mixp_cross_entropy_ex(x, tg, &o, &y));
        assert_int_equal(mixp_tensor_dtype(y), dt);
        double *yv = mt_values(y);
        if (r == MIXP_REDUCTION_NONE) {
          for (int i = 0; i < N; ++i) assert_true(fabs(yv[i] - rows[i]) <= tol_of(dt) * (1 + fabs(rows[i])));
        } else {
          const double want = r == MIXP_REDUCTION_SUM ? total : total / (double)count;
          assert_true(fabs(yv[0] - want) <= tol_of(dt) * (1 + fabs(want)));
        }
        free(yv);
        mixp_tensor_release(y);
      }
    }
    /* e = 0 is mixp_cross_entropy bit for bit (NULL options: the defaults). */
    mixp_tensor *a = NULL, *b = NULL;
    MT_OK(mixp_cross_entropy(x, tg, MIXP_REDUCTION_MEAN, MIXP_IGNORE_INDEX_DEFAULT, &a));
    MT_OK(mixp_cross_entropy_ex(x, tg, NULL, &b));
    double *av = mt_values(a), *bv = mt_values(b);
    assert_memory_equal(av, bv, sizeof(double));
    free(av);
    free(bv);
    mixp_tensor_release(a);
    mixp_tensor_release(b);
    free(xv);
    mixp_tensor_release(x);
  }
  mixp_tensor_release(tg);
  mixp_session_destroy(s);
}

static mixp_status ce_smoothed_fn(mixp_tensor **in, int n, void *ctx, mixp_tensor **out) {
  (void)n;
  mixp_cross_entropy_options o;
  mixp_cross_entropy_options_init(&o);
  o.label_smoothing = *(const double *)ctx;
  return mixp_cross_entropy_ex(in[0], in[1], &o, out);
}

static void test_cross_entropy_label_smoothing_gradcheck(void **state) {
  (void)state;
  mixp_session *s = mt_session();
  double v[N * C];
  mt_fill(v, N * C, -2.0, 2.0, 29);
  const int64_t shape[2] = {N, C}, tshape[1] = {N};
  const mt_input in[2] = {{v, shape, 2, 1, MIXP_F64}, {kTargets, tshape, 1, 0, MIXP_I64}};
  static const double eps[] = {0.2, 1.0};
  for (size_t e = 0; e < 2; ++e) mt_gradcheck(s, ce_smoothed_fn, (void *)&eps[e], in, 2, 1e-7, 1e-5);
  mixp_session_destroy(s);
}

static void test_cross_entropy_ex_misuse(void **state) {
  (void)state;
  mixp_session *s = mt_session();
  const int64_t shape[2] = {2, 3};
  const double v[6] = {0, 1, 2, 3, 4, 5}, t[2] = {0, 2};
  mixp_tensor *x = mt_tensor(s, MIXP_F32, v, shape, 2), *tg = targets(s, t, 2), *y = NULL;
  mixp_cross_entropy_options o;
  mixp_cross_entropy_options_init(NULL); /* ignored */
  static const double bad[] = {-0.1, 1.5, NAN, INFINITY, -INFINITY, 1e300};
  for (size_t i = 0; i < sizeof bad / sizeof *bad; ++i) {
    mixp_cross_entropy_options_init(&o);
    o.label_smoothing = bad[i];
    MT_FAILS(mixp_cross_entropy_ex(x, tg, &o, &y), MIXP_ERR_INVALID_ARGUMENT,
             "mixp_cross_entropy_ex: label_smoothing");
    assert_null(y);
  }
  mixp_cross_entropy_options_init(&o);
  o.struct_size = 3;
  MT_FAILS(mixp_cross_entropy_ex(x, tg, &o, &y), MIXP_ERR_INVALID_ARGUMENT, "mixp_cross_entropy_ex");
  mixp_cross_entropy_options_init(&o);
  o.reduction = (mixp_reduction)7;
  MT_FAILS(mixp_cross_entropy_ex(x, tg, &o, &y), MIXP_ERR_INVALID_ARGUMENT, "reduction = 7");
  mixp_cross_entropy_options_init(&o);
  MT_FAILS(mixp_cross_entropy_ex(NULL, tg, &o, &y), MIXP_ERR_INVALID_ARGUMENT, "logits is NULL");
  MT_FAILS(mixp_cross_entropy_ex(x, NULL, &o, &y), MIXP_ERR_INVALID_ARGUMENT, "target is NULL");
  MT_FAILS(mixp_cross_entropy_ex(x, tg, &o, NULL), MIXP_ERR_INVALID_ARGUMENT, "out is NULL");
  /* Absurd ignore_index values are plain values: nothing matches them. */
  static const int64_t ign[] = {INT64_MAX, INT64_MIN, INT64_C(1) << 62};
  for (size_t i = 0; i < sizeof ign / sizeof *ign; ++i) {
    o.ignore_index = ign[i];
    MT_OK(mixp_cross_entropy_ex(x, tg, &o, &y));
    mixp_tensor_release(y);
    y = NULL;
  }
  /* A bad target names the function the caller called. */
  const double badt[2] = {0, 3};
  mixp_tensor *tb = targets(s, badt, 2);
  mixp_cross_entropy_options_init(&o);
  o.label_smoothing = 0.1;
  if (strcmp(mt_device(), "cpu") == 0)
    MT_FAILS(mixp_cross_entropy_ex(x, tb, &o, &y), MIXP_ERR_INVALID_ARGUMENT,
             "mixp_cross_entropy_ex: target[1] = 3 is out of range [0, 3)");
  mixp_tensor_release(y);
  mixp_tensor_release(tb);
  mixp_tensor_release(x);
  mixp_tensor_release(tg);
  mixp_session_destroy(s);
}

static void test_mse_values(void **state) {
  (void)state;
  mixp_session *s = mt_session();
  const int64_t shape[2] = {3, 4};
  double a[12], b[12];
  mt_fill(a, 12, -2, 2, 5);
  mt_fill(b, 12, -2, 2, 6);
  for (int t = 0; t < 4; ++t) {
    mixp_dtype dt = kFloatTypes[t];
    mixp_tensor *ta = mt_tensor(s, dt, a, shape, 2), *tb = mt_tensor(s, dt, b, shape, 2);
    double *av = mt_values(ta), *bv = mt_values(tb);
    double sq[12], total = 0;
    for (int i = 0; i < 12; ++i) {
      sq[i] = (av[i] - bv[i]) * (av[i] - bv[i]);
      total += sq[i];
    }
    /* sub, mul and the reduction each round once in the low types. */
    const double tol = 3 * tol_of(dt);
    for (int r = 0; r < 3; ++r) {
      mixp_tensor *y = NULL;
      MT_OK(mixp_mse_loss(ta, tb, (mixp_reduction)r, &y));
      assert_int_equal(mixp_tensor_dtype(y), dt);
      double *yv = mt_values(y);
      if (r == MIXP_REDUCTION_NONE) {
        assert_int_equal(mixp_tensor_numel(y), 12);
        mt_assert_close(yv, sq, 12, tol, tol);
      } else {
        assert_int_equal(mixp_tensor_ndim(y), 0);
        double want = r == MIXP_REDUCTION_MEAN ? total / 12.0 : total;
        mt_assert_close(yv, &want, 1, tol, tol);
      }
      free(yv);
      mixp_tensor_release(y);
    }
    free(av);
    free(bv);
    mixp_tensor_release(ta);
    mixp_tensor_release(tb);
  }
  mixp_session_destroy(s);
}

static mixp_status mse_fn(mixp_tensor **in, int n, void *ctx, mixp_tensor **out) {
  (void)n;
  return mixp_mse_loss(in[0], in[1], *(mixp_reduction *)ctx, out);
}

static void test_mse_gradcheck(void **state) {
  (void)state;
  mixp_session *s = mt_session();
  const int64_t shape[2] = {3, 4};
  double a[12], b[12];
  mt_fill(a, 12, -2, 2, 5);
  mt_fill(b, 12, -2, 2, 6);
  for (int r = 0; r < 3; ++r) {
    mixp_reduction red = (mixp_reduction)r;
    mt_input in[2] = {{a, shape, 2, 1, MIXP_F64}, {b, shape, 2, 1, MIXP_F64}};
    mt_gradcheck(s, mse_fn, &red, in, 2, 1e-7, 1e-6);
  }
  mixp_session_destroy(s);
}

/* ---- misuse ------------------------------------------------------------------- */

static void test_loss_misuse(void **state) {
  (void)state;
  mixp_session *s = mt_session(), *s2 = mt_session();
  const int64_t shape[2] = {2, 3}, n2 = 2, n3 = 3;
  const double v[6] = {1, 2, 3, 4, 5, 6}, t[3] = {0, 1, 2};
  mixp_tensor *x = mt_tensor(s, MIXP_F32, v, shape, 2), *tg = targets(s, t, 2);
  mixp_tensor *t3 = targets(s, t, 3), *tf = mt_tensor(s, MIXP_F32, t, &n2, 1);
  mixp_tensor *xi = mt_tensor(s, MIXP_I64, v, shape, 2), *x1 = mt_tensor(s, MIXP_F32, v, &n3, 1);
  mixp_tensor *xh = mt_tensor(s, MIXP_F16, v, shape, 2), *xo = mt_tensor(s2, MIXP_F32, v, shape, 2);
  mixp_tensor *to = targets(s2, t, 2);
  mixp_tensor *sentinel = (mixp_tensor *)&s, *out = sentinel;

  MT_FAILS(mixp_cross_entropy(NULL, tg, MIXP_REDUCTION_MEAN, -100, &out), MIXP_ERR_INVALID_ARGUMENT,
           "mixp_cross_entropy: logits is NULL");
  MT_FAILS(mixp_cross_entropy(x, NULL, MIXP_REDUCTION_MEAN, -100, &out), MIXP_ERR_INVALID_ARGUMENT,
           "mixp_cross_entropy: target is NULL");
  MT_FAILS(mixp_cross_entropy(x, tg, MIXP_REDUCTION_MEAN, -100, NULL), MIXP_ERR_INVALID_ARGUMENT,
           "mixp_cross_entropy: out is NULL");
  MT_FAILS(mixp_cross_entropy(x, tg, (mixp_reduction)7, -100, &out), MIXP_ERR_INVALID_ARGUMENT,
           "reduction = 7 is not a mixp_reduction");
  MT_FAILS(mixp_cross_entropy(xi, tg, MIXP_REDUCTION_MEAN, -100, &out), MIXP_ERR_DTYPE,
           "mixp_cross_entropy: logits must be a float");
  MT_FAILS(mixp_cross_entropy(x, tf, MIXP_REDUCTION_MEAN, -100, &out), MIXP_ERR_DTYPE,
           "target must have dtype i64");
  MT_FAILS(mixp_cross_entropy(x1, t3, MIXP_REDUCTION_MEAN, -100, &out), MIXP_ERR_SHAPE,
           "logits must be 2-D [N, C], got [3]");
  MT_FAILS(mixp_cross_entropy(x, t3, MIXP_REDUCTION_MEAN, -100, &out), MIXP_ERR_SHAPE,
           "target must be [2] for logits [2,3], got [3]");
  MT_FAILS(mixp_cross_entropy(xo, tg, MIXP_REDUCTION_MEAN, -100, &out), MIXP_ERR_DEVICE,
           "mixp_cross_entropy: tensors belong to different sessions");
  MT_FAILS(mixp_cross_entropy(x, to, MIXP_REDUCTION_MEAN, -100, &out), MIXP_ERR_DEVICE,
           "different sessions");

  MT_FAILS(mixp_mse_loss(NULL, x, MIXP_REDUCTION_MEAN, &out), MIXP_ERR_INVALID_ARGUMENT,
           "mixp_mse_loss: a is NULL");
  MT_FAILS(mixp_mse_loss(x, NULL, MIXP_REDUCTION_MEAN, &out), MIXP_ERR_INVALID_ARGUMENT,
           "mixp_mse_loss: b is NULL");
  MT_FAILS(mixp_mse_loss(x, x, MIXP_REDUCTION_MEAN, NULL), MIXP_ERR_INVALID_ARGUMENT,
           "mixp_mse_loss: out is NULL");
  MT_FAILS(mixp_mse_loss(x, x, (mixp_reduction)-1, &out), MIXP_ERR_INVALID_ARGUMENT,
           "reduction = -1");
  MT_FAILS(mixp_mse_loss(xi, xi, MIXP_REDUCTION_SUM, &out), MIXP_ERR_DTYPE,
           "mixp_mse_loss: a must be a float");
  MT_FAILS(mixp_mse_loss(x, xh, MIXP_REDUCTION_SUM, &out), MIXP_ERR_DTYPE,
           "mixp_mse_loss: dtypes differ");
  MT_FAILS(mixp_mse_loss(x, x1, MIXP_REDUCTION_NONE, &out), MIXP_ERR_SHAPE,
           "shapes differ: a is [2,3], b is [3]");
  MT_FAILS(mixp_mse_loss(x, xo, MIXP_REDUCTION_NONE, &out), MIXP_ERR_DEVICE,
           "mixp_mse_loss: tensors belong to different sessions");
  assert_ptr_equal(out, sentinel);

  mixp_tensor *all[] = {x, tg, t3, tf, xi, x1, xh, xo, to};
  for (size_t i = 0; i < sizeof all / sizeof all[0]; ++i) mixp_tensor_release(all[i]);
  mixp_session_destroy(s2);
  mixp_session_destroy(s);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_cross_entropy_values),
      cmocka_unit_test(test_cross_entropy_custom_ignore),
      cmocka_unit_test(test_cross_entropy_all_ignored),
      cmocka_unit_test(test_cross_entropy_gradcheck),
      cmocka_unit_test(test_cross_entropy_bad_targets),
      cmocka_unit_test(test_cross_entropy_label_smoothing),
      cmocka_unit_test(test_cross_entropy_label_smoothing_gradcheck),
      cmocka_unit_test(test_cross_entropy_ex_misuse),
      cmocka_unit_test(test_mse_values),
      cmocka_unit_test(test_mse_gradcheck),
      cmocka_unit_test(test_loss_misuse),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
