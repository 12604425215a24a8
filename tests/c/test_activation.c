/* hardswish, hardsigmoid and silu: forward values against double formulas
 * in every float dtype, gradients around the kinks (checked numerically) and
 * at them (PyTorch's one-sided choices), NaN propagation, and misuse. */
#include "test_util.h"

enum { A_HARDSWISH, A_HARDSIGMOID, A_SILU, A_COUNT };

static const char *const act_names[A_COUNT] = {"mixp_hardswish", "mixp_hardsigmoid", "mixp_silu"};

static mixp_status call_act(int op, const mixp_tensor *x, mixp_tensor **out) {
  switch (op) {
    case A_HARDSWISH: return mixp_hardswish(x, out);
    case A_HARDSIGMOID: return mixp_hardsigmoid(x, out);
    default: return mixp_silu(x, out);
  }
}

static double relu6(double v) { return v < 0 ? 0 : v > 6 ? 6 : v; }

static double ref_act(int op, double x) {
  switch (op) {
    case A_HARDSWISH: return x * relu6(x + 3) / 6;
    case A_HARDSIGMOID: return relu6(x + 3) / 6;
    default: return x / (1 + exp(-x));
  }
}

/* Points on both sides of the kinks at -3 and 3, plus the flat and far regions. */
static const double POINTS[] = {-7.5, -3.5, -3.02, -2.98, -2.5, -1.0, -0.3, 0.0,
                                0.4,  1.7,  2.97,  3.03,  4.0,  9.0,  -30.0, 25.0};
#define N_POINTS ((int64_t)(sizeof POINTS / sizeof POINTS[0]))

static void test_forward_all_dtypes(void **state) {
  (void)state;
  mixp_session *s = mt_session();
  const mixp_dtype dts[4] = {MIXP_F64, MIXP_F32, MIXP_F16, MIXP_BF16};
  const double tols[4] = {1e-15, 1e-6, 1e-3, 8e-3};
  const int64_t shape[2] = {4, 4};
  for (int op = 0; op < A_COUNT; ++op)
    for (int d = 0; d < 4; ++d) {
      mixp_tensor *x = mt_tensor(s, dts[d], POINTS, shape, 2), *y = NULL;
      MT_OK(call_act(op, x, &y));
      assert_int_equal(mixp_tensor_dtype(y), dts[d]);
      double *xv = mt_values(x), *yv = mt_values(y), want[N_POINTS];
      for (int64_t i = 0; i < N_POINTS; ++i) want[i] = ref_act(op, xv[i]);
      mt_assert_close(yv, want, N_POINTS, tols[d], tols[d]);
      free(xv);
      free(yv);
      mixp_tensor_release(x);
      mixp_tensor_release(y);
    }
  mixp_session_destroy(s);
}

static mixp_status act_fn(mixp_tensor **in, int n, void *ctx, mixp_tensor **out) {
  (void)n;
  return call_act(*(int *)ctx, in[0], out);
}

static void test_gradcheck_around_kinks(void **state) {
  (void)state;
  mixp_session *s = mt_session();
  const int64_t shape[1] = {N_POINTS};
  for (int op = 0; op < A_COUNT; ++op) {
    mt_input in = {POINTS, shape, 1, 1, MIXP_F64};
    mt_gradcheck(s, act_fn, &op, &in, 1, 1e-7, 1e-6);
  }
  mixp_session_destroy(s);
}

/* Gradient of sum(act(x)) at given points, in dtype dt. */
static double *grad_at(mixp_session *s, int op, mixp_dtype dt, const double *pts, int64_t n) {
  mixp_tensor *x = mt_tensor(s, dt, pts, &n, 1), *y = NULL, *l = NULL, *g = NULL;
  MT_OK(mixp_tensor_set_requires_grad(x, 1));
  MT_OK(call_act(op, x, &y));
  MT_OK(mixp_sum(y, NULL, 0, 0, &l));
  MT_OK(mixp_backward(l, NULL));
  MT_OK(mixp_tensor_grad(x, &g));
  assert_int_equal(mixp_tensor_dtype(g), dt);
  double *v = mt_values(g);
  mixp_tensor_release(g);
  mixp_tensor_release(l);
  mixp_tensor_release(y);
  mixp_tensor_release(x);
  return v;
}

/* Exactly at the kinks: hardswish' is 0 below -3, (2x+3)/6 on [-3, 3], 1
 * above; hardsigmoid' is 1/6 strictly inside (-3, 3) only (PyTorch). */
static void test_gradient_at_kinks(void **state) {
  (void)state;
  mixp_session *s = mt_session();
  const double pts[5] = {-3.0, 3.0, -3.5, 0.0, 3.5};
  const double hs[5] = {-0.5, 1.5, 0.0, 0.5, 1.0};
  const double hsig[5] = {0.0, 0.0, 0.0, 1.0 / 6, 0.0};
  const mixp_dtype dts[4] = {MIXP_F64, MIXP_F32, MIXP_F16, MIXP_BF16};
  for (int d = 0; d < 4; ++d) {
    const double tol = d == 0 ? 1e-15 : d == 1 ? 1e-7 : 4e-3;
    double *g = grad_at(s, A_HARDSWISH, dts[d], pts, 5);
    mt_assert_close(g, hs, 5, tol, tol);
    free(g);
    g = grad_at(s, A_HARDSIGMOID, dts[d], pts, 5);
    mt_assert_close(g, hsig, 5, tol, tol);
    free(g);
    /* silu' = s(x) (1 + x (1 - s(x))) by the independent formula. */
    g = grad_at(s, A_SILU, dts[d], pts, 5);
    double want[5];
    for (int i = 0; i < 5; ++i) {
      double sg = 1.0 / (1.0 + exp(-pts[i]));
      want[i] = sg * (1 + pts[i] * (1 - sg));
    }
    mt_assert_close(g, want, 5, tol, tol);
    free(g);
  }
  mixp_session_destroy(s);
}

static void test_nan_propagates(void **state) {
  (void)state;
  mixp_session *s = mt_session();
  const double v[3] = {NAN, 1.0, -INFINITY};
  const int64_t n = 3;
  for (int op = 0; op < A_COUNT; ++op) {
    mixp_tensor *x = mt_tensor(s, MIXP_F32, v, &n, 1), *y = NULL;
    MT_OK(call_act(op, x, &y));
    double *yv = mt_values(y);
    assert_true(isnan(yv[0]));
    assert_true(fabs(yv[1] - ref_act(op, 1.0)) < 1e-6);
    /* -inf: the hard ones clamp to 0; silu is -inf * 0 = NaN, as in PyTorch. */
    if (op == A_SILU) assert_true(isnan(yv[2]));
    else assert_true(yv[2] == 0.0);
    free(yv);
    mixp_tensor_release(x);
    mixp_tensor_release(y);
  }
  mixp_session_destroy(s);
}

static void test_misuse(void **state) {
  (void)state;
  mixp_session *s = mt_session();
  const double v[2] = {1, 2};
  const int64_t n = 2;
  mixp_tensor *x = mt_tensor(s, MIXP_F32, v, &n, 1), *xi = NULL, *out = NULL;
  MT_OK(mixp_cast(x, MIXP_I32, &xi));
  for (int op = 0; op < A_COUNT; ++op) {
    MT_FAILS(call_act(op, NULL, &out), MIXP_ERR_INVALID_ARGUMENT, "x is NULL");
    MT_FAILS(call_act(op, x, NULL), MIXP_ERR_INVALID_ARGUMENT, "out is NULL");
    MT_FAILS(call_act(op, xi, &out), MIXP_ERR_DTYPE, "float");
    assert_non_null(strstr(mixp_last_error(), act_names[op]));
    assert_null(out);
  }
  mixp_tensor_release(xi);
  mixp_tensor_release(x);
  mixp_session_destroy(s);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_forward_all_dtypes),
      cmocka_unit_test(test_gradcheck_around_kinks),
      cmocka_unit_test(test_gradient_at_kinks),
      cmocka_unit_test(test_nan_propagates),
      cmocka_unit_test(test_misuse),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
