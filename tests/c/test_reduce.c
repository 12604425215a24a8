/* Reductions (sum, mean, max, argmax), softmax/log_softmax, cat and dropout:
 * forward values against formulas evaluated here in double, gradient
 * checks in F64, dropout statistics and determinism, and misuse. */
#include "test_util.h"

static const mixp_dtype kFloatTypes[4] = {MIXP_F64, MIXP_F32, MIXP_F16, MIXP_BF16};

/* Relative tolerance of one rounding into each dtype (plus some slack). */
static double tol_of(mixp_dtype dt) {
  switch (dt) {
    case MIXP_F64: return 1e-12;
    case MIXP_F32: return 1e-6;
    case MIXP_F16: return 1.5e-3;
    default: return 1e-2;
  }
}

static int64_t numel_of(const int64_t *shape, int ndim) {
  int64_t n = 1;
  for (int i = 0; i < ndim; ++i) n *= shape[i];
  return n;
}

/* Reference sum over the dims flagged in `red` (row-major output over the kept dims). */
static void ref_sum(const double *x, const int64_t *shape, int ndim, const int *red, double *out,
                    int64_t *out_n) {
  int64_t on = 1;
  for (int d = 0; d < ndim; ++d)
    if (!red[d]) on *= shape[d];
  for (int64_t i = 0; i < on; ++i) out[i] = 0.0;
  int64_t n = numel_of(shape, ndim);
  for (int64_t i = 0; i < n; ++i) {
    int64_t rem = i, oi = 0, mul = 1;
    for (int d = ndim - 1; d >= 0; --d) {
      int64_t idx = rem % shape[d];
      rem /= shape[d];
      if (!red[d]) {
        oi += idx * mul;
        mul *= shape[d];
      }
    }
    out[oi] += x[i];
  }
  *out_n = on;
}

static void assert_shape(const mixp_tensor *t, const int64_t *want, int ndim) {
  int64_t got[MIXP_MAX_DIMS];
  int gn = -1;
  MT_OK(mixp_tensor_shape(t, got, MIXP_MAX_DIMS, &gn));
  assert_int_equal(gn, ndim);
  for (int i = 0; i < ndim; ++i) assert_int_equal(got[i], want[i]);
}

/* ---- sum / mean forward ------------------------------------------------- */

static void check_sum_case(mixp_session *s, mixp_dtype dt, const int *dims, int ndims, int keepdim,
                           int is_mean) {
  const int64_t shape[3] = {3, 4, 5};
  double v[60];
  mt_fill(v, 60, -1.0, 1.0, 7);
  mixp_tensor *x = mt_tensor(s, dt, v, shape, 3);
  double *xv = mt_values(x); /* the inputs as rounded into dt */
  int red[3] = {ndims == 0, ndims == 0, ndims == 0};
  for (int i = 0; i < ndims; ++i) red[(dims[i] + 3) % 3] = 1;
  double want[60];
  int64_t wn = 0;
  ref_sum(xv, shape, 3, red, want, &wn);
  double count = 1;
  for (int d = 0; d < 3; ++d)
    if (red[d]) count *= (double)shape[d];
  if (is_mean)
    for (int64_t i = 0; i < wn; ++i) want[i] /= count;

  mixp_tensor *y = NULL;
  if (is_mean)
    MT_OK(mixp_mean(x, dims, ndims, keepdim, &y));
  else
    MT_OK(mixp_sum(x, dims, ndims, keepdim, &y));
  assert_int_equal(mixp_tensor_dtype(y), dt);
  int64_t oshape[3];
  int on = 0;
  for (int d = 0; d < 3; ++d)
    if (!red[d] || keepdim) oshape[on++] = red[d] ? 1 : shape[d];
  assert_shape(y, oshape, on);
  double *yv = mt_values(y);
  mt_assert_close(yv, want, wn, tol_of(dt), tol_of(dt));
  free(yv);
  free(xv);
  mixp_tensor_release(y);
  mixp_tensor_release(x);
}

static void test_sum_mean_values(void **state) {
  (void)state;
  mixp_session *s = mt_session();
  const int d1[1] = {1}, d02[2] = {0, 2}, dneg[1] = {-1}, d20[2] = {2, 0};
  for (int t = 0; t < 4; ++t)
    for (int is_mean = 0; is_mean < 2; ++is_mean)
      for (int keep = 0; keep < 2; ++keep) {
        check_sum_case(s, kFloatTypes[t], d1, 1, keep, is_mean);
        check_sum_case(s, kFloatTypes[t], d02, 2, keep, is_mean);
        check_sum_case(s, kFloatTypes[t], d20, 2, keep, is_mean);
        check_sum_case(s, kFloatTypes[t], dneg, 1, keep, is_mean);
        check_sum_case(s, kFloatTypes[t], NULL, 0, keep, is_mean);
      }
  mixp_session_destroy(s);
}

/* A long row exercises the blocked, order-fixed summation; the result is
 * the same with 1 and 2 threads, bit for bit. */
static void test_sum_long_rows_deterministic(void **state) {
  (void)state;
  const int64_t n = 100003;
  double *v = (double *)malloc((size_t)n * sizeof(double));
  mt_fill(v, n, -1.0, 1.0, 3);
  double want = 0.0;
  for (int64_t i = 0; i < n; ++i) want += (double)(float)v[i];
  double got[2];
  for (int threads = 1; threads <= 2; ++threads) {
    mixp_session *s = mt_session_threads(threads);
    mixp_tensor *x = mt_tensor(s, MIXP_F32, v, &n, 1), *y = NULL;
    MT_OK(mixp_sum(x, NULL, 0, 0, &y));
    MT_OK(mixp_tensor_item(y, &got[threads - 1]));
    mixp_tensor_release(x);
    mixp_tensor_release(y);
    mixp_session_destroy(s);
  }
  assert_true(got[0] == got[1]);
  assert_true(fabs(got[0] - want) <= 1e-6 * fabs(want) + 1e-6);
  free(v);
}

/* Column sums (sum over dim 0 of a row-major matrix: a bias gradient) split
 * the columns among the threads; each column is still summed down the rows
 * in one order, in double, so 1, 2 and 3 threads give the same bits, and the
 * result is the exact sum rounded once (the sums of these few hundred
 * dtype values are exact in double). */
static void test_sum_columns_thread_independent(void **state) {
  (void)state;
  const int64_t shape[2] = {400, 200};
  const int64_t n = shape[0] * shape[1];
  double *v = (double *)malloc((size_t)n * sizeof(double));
  mt_fill(v, n, -1.0, 1.0, 11);
  const mixp_dtype dts[3] = {MIXP_F32, MIXP_BF16, MIXP_F16};
  const double half_ulp[3] = {0x1p-24, 0x1p-8, 0x1p-11};
  const int d0 = 0;
  for (int t = 0; t < 3; ++t) {
    double *got[3] = {NULL, NULL, NULL};
    for (int threads = 1; threads <= 3; ++threads) {
      mixp_session *s = mt_session_threads(threads);
      mixp_tensor *x = mt_tensor(s, dts[t], v, shape, 2), *y = NULL;
      MT_OK(mixp_sum(x, &d0, 1, 0, &y));
      got[threads - 1] = mt_values(y);
      if (threads == 1) {
        double *xv = mt_values(x); /* the values as stored in dtype */
        for (int64_t c = 0; c < shape[1]; ++c) {
          double want = 0.0;
          for (int64_t r = 0; r < shape[0]; ++r) want += xv[r * shape[1] + c];
          assert_true(fabs(got[0][c] - want) <= half_ulp[t] * fabs(want) + 1e-30);
        }
        free(xv);
      }
      mixp_tensor_release(x);
      mixp_tensor_release(y);
      mixp_session_destroy(s);
    }
    for (int k = 1; k < 3; ++k) assert_memory_equal(got[0], got[k], (size_t)shape[1] * sizeof(double));
    for (int k = 0; k < 3; ++k) free(got[k]);
  }
  free(v);
}

static void test_mean_of_empty_is_nan(void **state) {
  (void)state;
  mixp_session *s = mt_session();
  const int64_t shape[2] = {0, 3};
  mixp_tensor *x = NULL, *m = NULL, *sm = NULL;
  MT_OK(mixp_tensor_zeros(s, MIXP_F32, shape, 2, &x));
  MT_OK(mixp_mean(x, NULL, 0, 0, &m));
  MT_OK(mixp_sum(x, NULL, 0, 0, &sm));
  double mv = 0, sv = 1;
  MT_OK(mixp_tensor_item(m, &mv));
  MT_OK(mixp_tensor_item(sm, &sv));
  assert_true(isnan(mv));
  assert_true(sv == 0.0);
  mixp_tensor_release(x);
  mixp_tensor_release(m);
  mixp_tensor_release(sm);
  mixp_session_destroy(s);
}

/* ---- max / argmax ----------------------------------------------------------- */

static void test_max_argmax_values(void **state) {
  (void)state;
  mixp_session *s = mt_session();
  /* [2,3,4] with ties: the first maximum wins. */
  const int64_t shape[3] = {2, 3, 4};
  double v[24];
  for (int i = 0; i < 24; ++i) v[i] = (double)((i * 7) % 5) - 2.0;
  for (int t = 0; t < 4; ++t) {
    mixp_dtype dt = kFloatTypes[t];
    mixp_tensor *x = mt_tensor(s, dt, v, shape, 3);
    for (int dim = -3; dim < 3; ++dim) {
      int d = (dim + 3) % 3;
      mixp_tensor *vals = NULL, *idx = NULL, *am = NULL;
      MT_OK(mixp_max(x, dim, 0, &vals, &idx));
      MT_OK(mixp_argmax(x, dim, 1, &am));
      assert_int_equal(mixp_tensor_dtype(vals), dt);
      assert_int_equal(mixp_tensor_dtype(idx), MIXP_I64);
      int64_t kshape[3] = {2, 3, 4};
      kshape[d] = 1;
      assert_shape(am, kshape, 3);
      double *gv = mt_values(vals);
      const size_t nout = (size_t)(24 / shape[d]);
      int64_t gi[12], ga[12];
      MT_OK(mixp_tensor_to_host(idx, gi, nout * sizeof(int64_t)));
      MT_OK(mixp_tensor_to_host(am, ga, nout * sizeof(int64_t)));
      int64_t strides[3] = {12, 4, 1};
      int64_t o = 0;
      for (int64_t i = 0; i < 24; ++i) {
        if ((i / strides[d]) % shape[d] != 0) continue; /* one visit per output */
        double best = v[i];
        int64_t arg = 0;
        for (int64_t k = 1; k < shape[d]; ++k)
          if (v[i + k * strides[d]] > best) {
            best = v[i + k * strides[d]];
            arg = k;
          }
        assert_true(gv[o] == best);
        assert_int_equal(gi[o], arg);
        assert_int_equal(ga[o], arg);
        ++o;
      }
      assert_int_equal(o, 24 / shape[d]);
      free(gv);
      mixp_tensor_release(vals);
      mixp_tensor_release(idx);
      mixp_tensor_release(am);
    }
    mixp_tensor_release(x);
  }
  mixp_session_destroy(s);
}

static void test_max_nan_and_ints(void **state) {
  (void)state;
  mixp_session *s = mt_session();
  const int64_t n = 4;
  const double v[4] = {1.0, NAN, 5.0, NAN};
  mixp_tensor *x = mt_tensor(s, MIXP_F32, v, &n, 1), *vals = NULL, *idx = NULL;
  MT_OK(mixp_max(x, 0, 0, &vals, &idx));
  double mv = 0;
  int64_t mi = -1;
  MT_OK(mixp_tensor_item(vals, &mv));
  MT_OK(mixp_tensor_to_host(idx, &mi, sizeof mi));
  assert_true(isnan(mv));
  assert_int_equal(mi, 1);
  /* argmax also serves integer tensors (e.g. labels). */
  const int32_t iv[4] = {3, 9, -2, 9};
  mixp_tensor *xi = NULL, *ai = NULL;
  MT_OK(mixp_tensor_from_host(s, iv, sizeof iv, MIXP_I32, &n, 1, &xi));
  MT_OK(mixp_argmax(xi, 0, 0, &ai));
  MT_OK(mixp_tensor_to_host(ai, &mi, sizeof mi));
  assert_int_equal(mi, 1);
  mixp_tensor_release(x);
  mixp_tensor_release(vals);
  mixp_tensor_release(idx);
  mixp_tensor_release(xi);
  mixp_tensor_release(ai);
  mixp_session_destroy(s);
}

/* ---- softmax forward ---------------------------------------------------------- */

static void test_softmax_values(void **state) {
  (void)state;
  mixp_session *s = mt_session();
  const int64_t shape[3] = {3, 4, 5};
  double v[60];
  mt_fill(v, 60, -4.0, 4.0, 11);
  v[7] = 80.0; /* large logits must not overflow: the max is subtracted */
  for (int t = 0; t < 4; ++t) {
    mixp_dtype dt = kFloatTypes[t];
    mixp_tensor *x = mt_tensor(s, dt, v, shape, 3);
    double *xv = mt_values(x);
    for (int dim = 0; dim < 3; ++dim)
      for (int lg = 0; lg < 2; ++lg) {
        int64_t strides[3] = {20, 5, 1};
        double want[60];
        for (int64_t i = 0; i < 60; ++i) {
          int64_t base = i - ((i / strides[dim]) % shape[dim]) * strides[dim];
          double m = -INFINITY, z = 0.0;
          for (int64_t k = 0; k < shape[dim]; ++k) m = fmax(m, xv[base + k * strides[dim]]);
          for (int64_t k = 0; k < shape[dim]; ++k) z += exp(xv[base + k * strides[dim]] - m);
          want[i] = lg ? xv[i] - m - log(z) : exp(xv[i] - m) / z;
        }
        mixp_tensor *y = NULL;
        MT_OK(lg ? mixp_log_softmax(x, dim, &y) : mixp_softmax(x, dim - 3, &y));
        assert_int_equal(mixp_tensor_dtype(y), dt);
        assert_shape(y, shape, 3);
        double *yv = mt_values(y);
        mt_assert_close(yv, want, 60, tol_of(dt), tol_of(dt));
        free(yv);
        mixp_tensor_release(y);
      }
    free(xv);
    mixp_tensor_release(x);
  }
  mixp_session_destroy(s);
}

/* The CPU's f16 log_softmax backward, gx = gy - exp(y) * sum(gy), is formed
 * in double and rounded once to f16: the same bits as a direct double ->
 * _Float16 conversion. (Rounding to float first and then to f16 differs in
 * about one value in 8000, so the 40,000 values here would catch it; so
 * would a NaN or an inf rounded wrongly.) */
static void test_log_softmax_backward_f16_rounds_once(void **state) {
  (void)state;
#ifdef __FLT16_MAX__
  if (!mt_on_cpu()) skip();
  mixp_session *s = mt_session();
  const int64_t shape[2] = {40, 1000}, n = shape[0] * shape[1];
  double *xv = (double *)malloc((size_t)n * sizeof(double));
  double *gv = (double *)malloc((size_t)n * sizeof(double));
  mt_fill(xv, n, -4.0, 4.0, 21);
  mt_fill(gv, n, -1.0, 1.0, 22);
  gv[5] = INFINITY; /* row 0: an inf seed makes the row's sum inf */
  gv[1000 + 7] = NAN; /* row 1: NaN */
  mixp_tensor *x = mt_tensor(s, MIXP_F16, xv, shape, 2), *g = mt_tensor(s, MIXP_F16, gv, shape, 2);
  mixp_tensor *y = NULL, *gx = NULL;
  MT_OK(mixp_tensor_set_requires_grad(x, 1));
  MT_OK(mixp_log_softmax(x, 1, &y));
  MT_OK(mixp_backward(y, g));
  MT_OK(mixp_tensor_grad(x, &gx));
  double *yd = mt_values(y), *gd = mt_values(g);
  uint16_t *got = (uint16_t *)malloc((size_t)n * 2);
  MT_OK(mixp_tensor_to_host(gx, got, (size_t)n * 2));
  for (int64_t r = 0; r < shape[0]; ++r) {
    double sum = 0.0; /* exact: 1000 f16 values */
    for (int64_t k = 0; k < shape[1]; ++k) sum += gd[r * shape[1] + k];
    for (int64_t k = 0; k < shape[1]; ++k) {
      const int64_t i = r * shape[1] + k;
      const _Float16 want = (_Float16)(gd[i] - exp(yd[i]) * sum);
      uint16_t wb;
      memcpy(&wb, &want, 2);
      if (want != want) { /* any NaN: its sign is not specified */
        assert_true((got[i] & 0x7c00u) == 0x7c00u && (got[i] & 0x3ffu) != 0);
        continue;
      }
      if (got[i] != wb) fail_msg("row %lld col %lld: got 0x%04x, want 0x%04x", (long long)r, (long long)k, got[i], wb);
    }
  }
  free(got);
  free(yd);
  free(gd);
  free(xv);
  free(gv);
  mixp_tensor_release(x);
  mixp_tensor_release(g);
  mixp_tensor_release(y);
  mixp_tensor_release(gx);
  mixp_session_destroy(s);
#else
  skip();
#endif
}

/* Shapes large enough for the threaded paths, with the reduced axis strided
 * and an inner size that is not a multiple of the kernels' chunk. */
static void test_large_strided_axis(void **state) {
  (void)state;
  mixp_session *s = mt_session();
  enum { A = 4, B = 70, Cc = 130 };
  const int64_t shape[3] = {A, B, Cc};
  const int64_t n = (int64_t)A * B * Cc;
  double *v = (double *)malloc((size_t)n * sizeof(double));
  mt_fill(v, n, -3.0, 3.0, 17);
  mixp_tensor *x = mt_tensor(s, MIXP_F32, v, shape, 3);
  double *xv = mt_values(x);
  double *want_sm = (double *)malloc((size_t)n * sizeof(double));
  double want_max[A * Cc], want_sum[A * Cc];
  int64_t want_arg[A * Cc], got_arg[A * Cc];
  for (int a = 0; a < A; ++a)
    for (int c = 0; c < Cc; ++c) {
      double m = -INFINITY, z = 0.0, sm = 0.0;
      int64_t arg = 0;
      for (int b = 0; b < B; ++b) {
        double e = xv[((int64_t)a * B + b) * Cc + c];
        if (e > m) {
          m = e;
          arg = b;
        }
        sm += e;
      }
      for (int b = 0; b < B; ++b) z += exp(xv[((int64_t)a * B + b) * Cc + c] - m);
      for (int b = 0; b < B; ++b) {
        int64_t i = ((int64_t)a * B + b) * Cc + c;
        want_sm[i] = exp(xv[i] - m) / z;
      }
      want_max[a * Cc + c] = m;
      want_sum[a * Cc + c] = sm;
      want_arg[a * Cc + c] = arg;
    }
  mixp_tensor *y = NULL, *mv = NULL, *mi = NULL, *sv = NULL;
  const int d1[1] = {1};
  MT_OK(mixp_softmax(x, 1, &y));
  MT_OK(mixp_max(x, 1, 0, &mv, &mi));
  MT_OK(mixp_sum(x, d1, 1, 0, &sv));
  double *yv = mt_values(y), *mvv = mt_values(mv), *svv = mt_values(sv);
  MT_OK(mixp_tensor_to_host(mi, got_arg, sizeof got_arg));
  mt_assert_close(yv, want_sm, n, 1e-7, 1e-6);
  mt_assert_close(mvv, want_max, A * Cc, 0, 0);
  /* An fp32 sum of B terms in any order is within (B-1) u sum|x_i| of the exact
   * sum (u = 2^-24); a wrong index is off by whole units. */
  for (int i = 0; i < A * Cc; ++i) {
    double abs_sum = 0.0;
    for (int b = 0; b < B; ++b) abs_sum += fabs(xv[((int64_t)(i / Cc) * B + b) * Cc + i % Cc]);
    const double bound = (B - 1) * ldexp(1.0, -24) * abs_sum;
    if (!(fabs(svv[i] - want_sum[i]) <= bound)) {
      print_error("sum %d: got %.17g want %.17g (bound %.3g)\n", i, svv[i], want_sum[i], bound);
      fail();
    }
  }
  for (int i = 0; i < A * Cc; ++i) assert_int_equal(got_arg[i], want_arg[i]);
  free(yv);
  free(mvv);
  free(svv);
  free(want_sm);
  free(xv);
  free(v);
  mixp_tensor_release(y);
  mixp_tensor_release(mv);
  mixp_tensor_release(mi);
  mixp_tensor_release(sv);
  mixp_tensor_release(x);
  mixp_session_destroy(s);
}

/* ---- gradient checks --------------------------------------------------------- */

typedef struct red_ctx {
  int kind; /* 0 sum, 1 mean, 2 max, 3 softmax, 4 log_softmax */
  int dims[3];
  int ndims;
  int keepdim;
} red_ctx;

static mixp_status red_fn(mixp_tensor **in, int n, void *ctx, mixp_tensor **out) {
  (void)n;
  red_ctx *c = (red_ctx *)ctx;
  switch (c->kind) {
    case 0: return mixp_sum(in[0], c->dims, c->ndims, c->keepdim, out);
    case 1: return mixp_mean(in[0], c->dims, c->ndims, c->keepdim, out);
    case 2: return mixp_max(in[0], c->dims[0], c->keepdim, out, NULL);
    case 3: return mixp_softmax(in[0], c->dims[0], out);
    default: return mixp_log_softmax(in[0], c->dims[0], out);
  }
}

static void gradcheck_red(mixp_session *s, red_ctx c) {
  const int64_t shape[3] = {2, 3, 4};
  double v[24];
  mt_fill(v, 24, -2.0, 2.0, 5); /* distinct values: max has a unique argmax */
  mt_input in = {v, shape, 3, 1, MIXP_F64};
  mt_gradcheck(s, red_fn, &c, &in, 1, 1e-7, 1e-5);
}

static void test_gradcheck_sum_mean(void **state) {
  (void)state;
  mixp_session *s = mt_session();
  for (int kind = 0; kind < 2; ++kind)
    for (int keep = 0; keep < 2; ++keep) {
      gradcheck_red(s, (red_ctx){kind, {1}, 1, keep});
      gradcheck_red(s, (red_ctx){kind, {2, 0}, 2, keep});
      gradcheck_red(s, (red_ctx){kind, {0, 1, 2}, 3, keep});
      gradcheck_red(s, (red_ctx){kind, {0}, 0, keep});
    }
  mixp_session_destroy(s);
}

static void test_gradcheck_max_softmax(void **state) {
  (void)state;
  mixp_session *s = mt_session();
  for (int dim = -1; dim < 3; ++dim) {
    gradcheck_red(s, (red_ctx){2, {dim}, 0, dim == 1});
    gradcheck_red(s, (red_ctx){3, {dim}, 0, 0});
    gradcheck_red(s, (red_ctx){4, {dim}, 0, 0});
  }
  mixp_session_destroy(s);
}

/* The gradient of max goes to the first maximal element only. */
static void test_max_grad_ties(void **state) {
  (void)state;
  mixp_session *s = mt_session();
  const int64_t shape[2] = {2, 3};
  const double v[6] = {1, 4, 4, 2, 2, 0};
  mixp_tensor *x = mt_tensor(s, MIXP_F32, v, shape, 2), *vals = NULL, *loss = NULL, *g = NULL;
  MT_OK(mixp_tensor_set_requires_grad(x, 1));
  MT_OK(mixp_max(x, 1, 0, &vals, NULL));
  MT_OK(mixp_sum(vals, NULL, 0, 0, &loss));
  MT_OK(mixp_backward(loss, NULL));
  MT_OK(mixp_tensor_grad(x, &g));
  double *gv = mt_values(g);
  const double want[6] = {0, 1, 0, 1, 0, 0};
  mt_assert_close(gv, want, 6, 0, 0);
  free(gv);
  mixp_tensor_release(g);
  mixp_tensor_release(loss);
  mixp_tensor_release(vals);
  mixp_tensor_release(x);
  mixp_session_destroy(s);
}

/* ---- cat ----------------------------------------------------------------------- */

static mixp_status cat_fn(mixp_tensor **in, int n, void *ctx, mixp_tensor **out) {
  return mixp_cat((const mixp_tensor *const *)in, n, *(int *)ctx, out);
}

static void test_cat_values_and_grad(void **state) {
  (void)state;
  mixp_session *s = mt_session();
  double a[24], b[24], c[24];
  mt_fill(a, 24, -1, 1, 1);
  mt_fill(b, 24, -1, 1, 2);
  mt_fill(c, 24, -1, 1, 3);
  for (int dim = 0; dim < 2; ++dim) {
    /* Sizes along `dim` are 1, 2 and 3; the other dim is 4. */
    int64_t sh[3][2];
    for (int i = 0; i < 3; ++i) {
      sh[i][dim] = i + 1;
      sh[i][1 - dim] = 4;
    }
    const double *src[3] = {a, b, c};
    for (int t = 0; t < 4; ++t) {
      mixp_dtype dt = kFloatTypes[t];
      mixp_tensor *xs[3];
      double *xv[3];
      for (int i = 0; i < 3; ++i) {
        xs[i] = mt_tensor(s, dt, src[i], sh[i], 2);
        xv[i] = mt_values(xs[i]);
      }
      mixp_tensor *y = NULL;
      MT_OK(mixp_cat((const mixp_tensor *const *)xs, 3, dim - 2, &y));
      int64_t ys[2] = {4, 4};
      ys[dim] = 6;
      assert_shape(y, ys, 2);
      double want[24];
      for (int64_t r = 0; r < ys[0]; ++r)
        for (int64_t q = 0; q < ys[1]; ++q) {
          int64_t pos = dim == 0 ? r : q, i = pos == 0 ? 0 : (pos < 3 ? 1 : 2);
          int64_t off = i == 0 ? 0 : (i == 1 ? 1 : 3);
          int64_t rr = dim == 0 ? r - off : r, qq = dim == 1 ? q - off : q;
          want[r * ys[1] + q] = xv[i][rr * sh[i][1] + qq];
        }
      double *yv = mt_values(y);
      mt_assert_close(yv, want, 24, 0, 0);
      free(yv);
      mixp_tensor_release(y);
      for (int i = 0; i < 3; ++i) {
        free(xv[i]);
        mixp_tensor_release(xs[i]);
      }
    }
    mt_input in[3] = {{a, sh[0], 2, 1, MIXP_F64}, {b, sh[1], 2, 1, MIXP_F64}, {c, sh[2], 2, 1, MIXP_F64}};
    mt_gradcheck(s, cat_fn, &dim, in, 3, 1e-7, 1e-6);
  }
  mixp_session_destroy(s);
}

/* ---- dropout ------------------------------------------------------------------ */

static void test_dropout_statistics_and_grad(void **state) {
  (void)state;
  mixp_session *s = mt_session();
  const int64_t n = 100000;
  const double p = 0.3;
  mixp_tensor *x = NULL, *y = NULL, *loss = NULL, *g = NULL;
  MT_OK(mixp_tensor_ones(s, MIXP_F32, &n, 1, &x));
  MT_OK(mixp_tensor_set_requires_grad(x, 1));
  MT_OK(mixp_dropout(x, p, 1, &y));
  MT_OK(mixp_sum(y, NULL, 0, 0, &loss));
  MT_OK(mixp_backward(loss, NULL));
  MT_OK(mixp_tensor_grad(x, &g));
  double *yv = mt_values(y), *gv = mt_values(g);
  const double kept_val = (double)(float)(1.0 / (1.0 - p));
  int64_t kept = 0;
  for (int64_t i = 0; i < n; ++i) {
    assert_true(yv[i] == 0.0 || yv[i] == kept_val);
    /* The gradient is mask / (1 - p): the pattern of the output. */
    assert_true(gv[i] == yv[i]);
    kept += yv[i] != 0.0;
  }
  double frac = (double)kept / (double)n;
  /* Binomial standard deviation is ~0.0014; allow 5 sigma. */
  assert_true(fabs(frac - (1.0 - p)) < 0.0075);
  free(yv);
  free(gv);
  mixp_tensor_release(g);
  mixp_tensor_release(loss);
  mixp_tensor_release(y);
  mixp_tensor_release(x);
  mixp_session_destroy(s);
}

static double *dropout_once(mixp_session *s, mixp_dtype dt, const double *v, int64_t n, double p) {
  mixp_tensor *x = mt_tensor(s, dt, v, &n, 1), *y = NULL;
  MT_OK(mixp_dropout(x, p, 1, &y));
  double *yv = mt_values(y);
  mixp_tensor_release(x);
  mixp_tensor_release(y);
  return yv;
}

static void test_dropout_determinism_and_dtypes(void **state) {
  (void)state;
  mixp_session *s = mt_session();
  const int64_t n = 4096;
  double v[4096];
  mt_fill(v, n, 0.5, 2.0, 9);
  for (int t = 0; t < 4; ++t) {
    mixp_dtype dt = kFloatTypes[t];
    MT_OK(mixp_session_set_seed(s, 77));
    double *y1 = dropout_once(s, dt, v, n, 0.5);
    double *y2 = dropout_once(s, dt, v, n, 0.5); /* the stream advanced: a new mask */
    MT_OK(mixp_session_set_seed(s, 77));
    double *y3 = dropout_once(s, dt, v, n, 0.5);
    mixp_tensor *x = mt_tensor(s, dt, v, &n, 1);
    double *xv = mt_values(x);
    mixp_tensor_release(x);
    int differ = 0;
    for (int64_t i = 0; i < n; ++i) {
      assert_true(y1[i] == y3[i]);
      differ += (y1[i] != 0.0) != (y2[i] != 0.0);
      double want = y1[i] == 0.0 ? 0.0 : xv[i] * 2.0;
      assert_true(fabs(y1[i] - want) <= tol_of(dt) * fabs(want));
    }
    assert_true(differ > 100);
    free(y1);
    free(y2);
    free(y3);
    free(xv);
  }
  mixp_session_destroy(s);
}

static void test_dropout_identity_cases(void **state) {
  (void)state;
  mixp_session *s = mt_session();
  const int64_t n = 8;
  double v[8];
  mt_fill(v, n, -1, 1, 4);
  mixp_tensor *x = mt_tensor(s, MIXP_F32, v, &n, 1), *y = NULL, *z = NULL;
  MT_OK(mixp_dropout(x, 0.7, 0, &y));
  MT_OK(mixp_dropout(x, 0.0, 1, &z));
  double *xv = mt_values(x), *yv = mt_values(y), *zv = mt_values(z);
  mt_assert_close(yv, xv, n, 0, 0);
  mt_assert_close(zv, xv, n, 0, 0);
  free(xv);
  free(yv);
  free(zv);
  mixp_tensor_release(x);
  mixp_tensor_release(y);
  mixp_tensor_release(z);
  mixp_session_destroy(s);
}

/* ---- misuse ----------------------------------------------------------------------- */

static void test_misuse(void **state) {
  (void)state;
  mixp_session *s = mt_session();
  const int64_t shape[2] = {2, 3};
  double v[6] = {1, 2, 3, 4, 5, 6};
  mixp_tensor *x = mt_tensor(s, MIXP_F32, v, shape, 2), *xi = NULL, *y = NULL, *i2 = NULL;
  mixp_tensor *sentinel = (mixp_tensor *)&v; /* must stay untouched on failure */
  mixp_tensor *out = sentinel;
  MT_OK(mixp_tensor_zeros(s, MIXP_I64, shape, 2, &xi));
  const int d1[1] = {1}, bad[1] = {2}, neg[1] = {-3}, dup[2] = {1, -1};

  MT_FAILS(mixp_sum(NULL, d1, 1, 0, &out), MIXP_ERR_INVALID_ARGUMENT, "mixp_sum: x is NULL");
  MT_FAILS(mixp_sum(x, d1, 1, 0, NULL), MIXP_ERR_INVALID_ARGUMENT, "mixp_sum: out is NULL");
  MT_FAILS(mixp_sum(x, NULL, 1, 0, &out), MIXP_ERR_INVALID_ARGUMENT, "dims is NULL");
  MT_FAILS(mixp_sum(x, d1, -1, 0, &out), MIXP_ERR_INVALID_ARGUMENT, "ndims = -1");
  MT_FAILS(mixp_sum(x, bad, 1, 0, &out), MIXP_ERR_INVALID_ARGUMENT, "dims[0] = 2 is out of range");
  MT_FAILS(mixp_sum(x, neg, 1, 0, &out), MIXP_ERR_INVALID_ARGUMENT, "dims[0] = -3");
  MT_FAILS(mixp_sum(x, dup, 2, 0, &out), MIXP_ERR_INVALID_ARGUMENT, "dims[1] = -1 repeats dim 1");
  MT_FAILS(mixp_sum(xi, NULL, 0, 0, &out), MIXP_ERR_DTYPE, "mixp_sum: x must be a float");
  MT_FAILS(mixp_mean(NULL, NULL, 0, 0, &out), MIXP_ERR_INVALID_ARGUMENT, "mixp_mean: x is NULL");
  MT_FAILS(mixp_mean(x, NULL, 0, 0, NULL), MIXP_ERR_INVALID_ARGUMENT, "mixp_mean: out is NULL");
  MT_FAILS(mixp_mean(x, NULL, 2, 0, &out), MIXP_ERR_INVALID_ARGUMENT, "dims is NULL");
  MT_FAILS(mixp_mean(x, dup, 2, 1, &out), MIXP_ERR_INVALID_ARGUMENT, "mixp_mean: dims[1]");
  MT_FAILS(mixp_mean(xi, NULL, 0, 0, &out), MIXP_ERR_DTYPE, "mixp_mean: x must be a float");

  MT_FAILS(mixp_max(NULL, 0, 0, &out, NULL), MIXP_ERR_INVALID_ARGUMENT, "mixp_max: x is NULL");
  MT_FAILS(mixp_max(x, 0, 0, NULL, &out), MIXP_ERR_INVALID_ARGUMENT, "mixp_max: values is NULL");
  MT_FAILS(mixp_max(x, 2, 0, &out, &i2), MIXP_ERR_INVALID_ARGUMENT, "mixp_max: dim 2 is out of range");
  assert_null(i2);
  MT_FAILS(mixp_argmax(NULL, 0, 0, &out), MIXP_ERR_INVALID_ARGUMENT, "mixp_argmax: x is NULL");
  MT_FAILS(mixp_argmax(x, 0, 0, NULL), MIXP_ERR_INVALID_ARGUMENT, "mixp_argmax: out is NULL");
  MT_FAILS(mixp_argmax(x, -3, 0, &out), MIXP_ERR_INVALID_ARGUMENT, "mixp_argmax: dim -3");
  {
    const int64_t es[2] = {2, 0};
    mixp_tensor *e = NULL;
    MT_OK(mixp_tensor_zeros(s, MIXP_F32, es, 2, &e));
    MT_FAILS(mixp_max(e, 1, 0, &out, NULL), MIXP_ERR_SHAPE, "mixp_max: dim 1 has size 0");
    MT_FAILS(mixp_argmax(e, 1, 0, &out), MIXP_ERR_SHAPE, "mixp_argmax: dim 1 has size 0");
    mixp_tensor_release(e);
  }
  {
    mixp_tensor *b = NULL;
    MT_OK(mixp_tensor_zeros(s, MIXP_BOOL, shape, 2, &b));
    MT_FAILS(mixp_max(b, 1, 0, &out, NULL), MIXP_ERR_DTYPE, "mixp_max: x has dtype bool");
    mixp_tensor_release(b);
  }

  MT_FAILS(mixp_softmax(NULL, 0, &out), MIXP_ERR_INVALID_ARGUMENT, "mixp_softmax: x is NULL");
  MT_FAILS(mixp_softmax(x, 0, NULL), MIXP_ERR_INVALID_ARGUMENT, "mixp_softmax: out is NULL");
  MT_FAILS(mixp_softmax(x, 5, &out), MIXP_ERR_INVALID_ARGUMENT, "mixp_softmax: dim 5");
  MT_FAILS(mixp_softmax(xi, 1, &out), MIXP_ERR_DTYPE, "mixp_softmax: x must be a float");
  MT_FAILS(mixp_log_softmax(NULL, 0, &out), MIXP_ERR_INVALID_ARGUMENT, "mixp_log_softmax: x is NULL");
  MT_FAILS(mixp_log_softmax(x, 0, NULL), MIXP_ERR_INVALID_ARGUMENT, "mixp_log_softmax: out is NULL");
  MT_FAILS(mixp_log_softmax(x, -3, &out), MIXP_ERR_INVALID_ARGUMENT, "mixp_log_softmax: dim -3");
  MT_FAILS(mixp_log_softmax(xi, 1, &out), MIXP_ERR_DTYPE, "mixp_log_softmax: x must be a float");

  MT_FAILS(mixp_dropout(NULL, 0.5, 1, &out), MIXP_ERR_INVALID_ARGUMENT, "mixp_dropout: x is NULL");
  MT_FAILS(mixp_dropout(x, 0.5, 1, NULL), MIXP_ERR_INVALID_ARGUMENT, "mixp_dropout: out is NULL");
  MT_FAILS(mixp_dropout(x, 1.0, 1, &out), MIXP_ERR_INVALID_ARGUMENT, "p = 1 is outside [0, 1)");
  MT_FAILS(mixp_dropout(x, -0.1, 1, &out), MIXP_ERR_INVALID_ARGUMENT, "p = -0.1");
  MT_FAILS(mixp_dropout(x, NAN, 0, &out), MIXP_ERR_INVALID_ARGUMENT, "mixp_dropout: p = nan");
  MT_FAILS(mixp_dropout(xi, 0.5, 1, &out), MIXP_ERR_DTYPE, "mixp_dropout: x must be a float");

  {
    const int64_t s3[2] = {2, 4}, s1[1] = {2};
    mixp_tensor *w = NULL, *r1 = NULL, *h = NULL;
    MT_OK(mixp_tensor_zeros(s, MIXP_F32, s3, 2, &w));
    MT_OK(mixp_tensor_zeros(s, MIXP_F32, s1, 1, &r1));
    MT_OK(mixp_tensor_zeros(s, MIXP_F16, shape, 2, &h));
    const mixp_tensor *ok2[2] = {x, w};
    const mixp_tensor *with_null[2] = {x, NULL};
    const mixp_tensor *mixed[2] = {x, h};
    const mixp_tensor *ranks[2] = {x, r1};
    MT_FAILS(mixp_cat(NULL, 2, 0, &out), MIXP_ERR_INVALID_ARGUMENT, "mixp_cat: tensors is NULL");
    MT_FAILS(mixp_cat(ok2, 0, 0, &out), MIXP_ERR_INVALID_ARGUMENT, "mixp_cat: n = 0");
    MT_FAILS(mixp_cat(ok2, 2, 1, NULL), MIXP_ERR_INVALID_ARGUMENT, "mixp_cat: out is NULL");
    MT_FAILS(mixp_cat(with_null, 2, 0, &out), MIXP_ERR_INVALID_ARGUMENT, "mixp_cat: tensors[1] is NULL");
    MT_FAILS(mixp_cat(mixed, 2, 0, &out), MIXP_ERR_DTYPE, "tensors[1] has dtype f16");
    MT_FAILS(mixp_cat(ranks, 2, 0, &out), MIXP_ERR_SHAPE, "tensors[1] is [2]");
    MT_FAILS(mixp_cat(ok2, 2, 0, &out), MIXP_ERR_SHAPE, "all dims but dim 0 must match");
    MT_FAILS(mixp_cat(ok2, 2, 2, &out), MIXP_ERR_INVALID_ARGUMENT, "mixp_cat: dim 2 is out of range");
    MT_OK(mixp_cat(ok2, 2, 1, &y)); /* [2,3] ++ [2,4] along dim 1 */
    const int64_t ys[2] = {2, 7};
    assert_shape(y, ys, 2);
    mixp_tensor_release(y);
    mixp_tensor_release(w);
    mixp_tensor_release(r1);
    mixp_tensor_release(h);
  }
  {
    mixp_session *s2 = mt_session();
    mixp_tensor *other = NULL;
    MT_OK(mixp_tensor_zeros(s2, MIXP_F32, shape, 2, &other));
    const mixp_tensor *two[2] = {x, other};
    MT_FAILS(mixp_cat(two, 2, 0, &out), MIXP_ERR_DEVICE, "mixp_cat: tensors[1] belongs to another session");
    mixp_tensor_release(other);
    mixp_session_destroy(s2);
  }
  assert_ptr_equal(out, sentinel);

  mixp_tensor_release(xi);
  mixp_tensor_release(x);
  mixp_session_destroy(s);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_sum_mean_values),
      cmocka_unit_test(test_sum_long_rows_deterministic),
      cmocka_unit_test(test_sum_columns_thread_independent),
      cmocka_unit_test(test_mean_of_empty_is_nan),
      cmocka_unit_test(test_max_argmax_values),
      cmocka_unit_test(test_max_nan_and_ints),
      cmocka_unit_test(test_softmax_values),
      cmocka_unit_test(test_log_softmax_backward_f16_rounds_once),
      cmocka_unit_test(test_large_strided_axis),
      cmocka_unit_test(test_gradcheck_sum_mean),
      cmocka_unit_test(test_gradcheck_max_softmax),
      cmocka_unit_test(test_max_grad_ties),
      cmocka_unit_test(test_cat_values_and_grad),
      cmocka_unit_test(test_dropout_statistics_and_grad),
      cmocka_unit_test(test_dropout_determinism_and_dtypes),
      cmocka_unit_test(test_dropout_identity_cases),
      cmocka_unit_test(test_misuse),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
