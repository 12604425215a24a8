/* Op traces (mixp_trace_*): two runs of the same batch recorded and compared
 * op by op - identical runs, O0 against bf16 autocast (casts left out of the
 * alignment), runs that call different ops, a non-finite value on one side,
 * and misuse. */
#include "test_util.h"

/* y = relu(x @ w); loss = sum(y); backward. With `autocast`, under O1 bf16. */
static void run_batch(mixp_session *s, int autocast, mixp_tensor **x_out) {
  const double xv[6] = {0.5, -1.25, 2.0, 0.75, 1.5, -0.3};
  const double wv[6] = {0.1, -0.7, 0.33, 0.9, -0.45, 0.2};
  mixp_tensor *x = mt_tensor(s, MIXP_F32, xv, (int64_t[]){2, 3}, 2);
  mixp_tensor *w = mt_tensor(s, MIXP_F32, wv, (int64_t[]){3, 2}, 2);
  MT_OK(mixp_tensor_set_requires_grad(w, 1));
  if (autocast) {
    mixp_autocast_options o;
    mixp_autocast_options_init(&o);
    o.dtype = MIXP_BF16;
    MT_OK(mixp_autocast_push(s, &o));
  }
  mixp_tensor *h = NULL, *y = NULL, *loss = NULL;
  MT_OK(mixp_matmul(x, w, &h));
  MT_OK(mixp_relu(h, &y));
  MT_OK(mixp_sum(y, NULL, 0, 0, &loss));
  if (autocast) MT_OK(mixp_autocast_pop(s));
  MT_OK(mixp_backward(loss, NULL));
  mixp_tensor *tmp[] = {w, h, y, loss};
  for (int i = 0; i < 4; ++i) mixp_tensor_release(tmp[i]);
  if (x_out) *x_out = x;
  else mixp_tensor_release(x);
}

static mixp_trace *traced(int autocast) {
  mixp_session *s = mt_session();
  MT_OK(mixp_trace_begin(s));
  run_batch(s, autocast, NULL);
  mixp_trace *t = NULL;
  MT_OK(mixp_trace_end(s, &t));
  assert_non_null(t);
  mixp_session_destroy(s); /* the trace lives on its own */
  return t;
}

static void test_identical_runs(void **state) {
  (void)state;
  mixp_trace *a = traced(0), *b = traced(0);
  assert_true(mixp_trace_length(a) >= 4); /* matmul, relu, sum, and backward gradients */
  int64_t first = 7;
  const char *report = NULL;
  MT_OK(mixp_trace_compare(a, b, 0.0, &first, &report));
  assert_int_equal(first, -1);
  assert_non_null(strstr(report, "matmul"));
  assert_non_null(strstr(report, "relu"));
  assert_non_null(strstr(report, "backward"));
  assert_non_null(strstr(report, "no op above the relative tolerance"));
  assert_string_equal(mixp_trace_report(b), report);
  assert_string_equal(mixp_trace_report(a), ""); /* a was the reference */
  mixp_trace_destroy(a);
  mixp_trace_destroy(b);
}

/* O0 against O1 bf16: the casts autocast adds do not shift the alignment;
 * the matmul (entry 0, rounded to bf16) is the first op above a tight
 * tolerance, and no op is above a loose one. */
static void test_o0_against_bf16(void **state) {
  (void)state;
  mixp_trace *ref = traced(0), *test = traced(1);
  assert_true(mixp_trace_length(test) > mixp_trace_length(ref)); /* the casts */
  int64_t first = 7;
  const char *report = NULL;
  MT_OK(mixp_trace_compare(ref, test, 1e-6, &first, &report));
  assert_int_equal(first, 0);
  assert_non_null(strstr(report, "<- first above the tolerance"));
  assert_non_null(strstr(report, "'matmul'"));
  assert_non_null(strstr(report, "bf16"));
  MT_OK(mixp_trace_compare(ref, test, 0.05, &first, NULL));
  assert_int_equal(first, -1);
  mixp_trace_destroy(ref);
  mixp_trace_destroy(test);
}

/* Runs that call different ops: the comparison stops there and says so. */
static void test_different_paths(void **state) {
  (void)state;
  mixp_trace *a = traced(0);
  mixp_session *s = mt_session();
  MT_OK(mixp_trace_begin(s));
  const double v[2] = {1, 2};
  mixp_tensor *x = mt_tensor(s, MIXP_F32, v, (int64_t[]){2}, 1), *y = NULL;
  MT_OK(mixp_exp(x, &y));
  mixp_trace *b = NULL;
  MT_OK(mixp_trace_end(s, &b));
  int64_t first = 7;
  const char *report = NULL;
  MT_OK(mixp_trace_compare(a, b, 1.0, &first, &report));
  assert_int_equal(first, 0);
  assert_non_null(strstr(report, "took different paths"));
  mixp_tensor_release(x);
  mixp_tensor_release(y);
  mixp_trace_destroy(a);
  mixp_trace_destroy(b);
  mixp_session_destroy(s);
}

/* A NaN on one side only is an infinite relative error. */
static void test_nonfinite_on_one_side(void **state) {
  (void)state;
  mixp_trace *t[2];
  for (int k = 0; k < 2; ++k) {
    mixp_session *s = mt_session();
    MT_OK(mixp_trace_begin(s));
    const double v[3] = {1, k ? -1 : 1, 4};
    mixp_tensor *x = mt_tensor(s, MIXP_F32, v, (int64_t[]){3}, 1), *y = NULL;
    MT_OK(mixp_sqrt(x, &y));
    MT_OK(mixp_trace_end(s, &t[k]));
    mixp_tensor_release(x);
    mixp_tensor_release(y);
    mixp_session_destroy(s);
  }
  int64_t first = 7;
  const char *report = NULL;
  MT_OK(mixp_trace_compare(t[0], t[1], 1e3, &first, &report));
  assert_int_equal(first, 0);
  assert_non_null(strstr(report, "inf"));
  mixp_trace_destroy(t[0]);
  mixp_trace_destroy(t[1]);
}

static void test_misuse(void **state) {
  (void)state;
  mixp_session *s = mt_session();
  mixp_trace *t = (mixp_trace *)0x1;
  MT_FAILS(mixp_trace_begin(NULL), MIXP_ERR_INVALID_ARGUMENT, "mixp_trace_begin");
  MT_FAILS(mixp_trace_end(s, &t), MIXP_ERR_STATE, "mixp_trace_end: no trace is being recorded");
  assert_ptr_equal(t, (mixp_trace *)0x1);
  MT_OK(mixp_trace_begin(s));
  MT_FAILS(mixp_trace_begin(s), MIXP_ERR_STATE, "already being recorded");
  MT_FAILS(mixp_trace_end(s, NULL), MIXP_ERR_INVALID_ARGUMENT, "out");
  MT_FAILS(mixp_trace_end(NULL, &t), MIXP_ERR_INVALID_ARGUMENT, "session");
  MT_OK(mixp_trace_end(s, &t)); /* still recording after the failed calls */
  assert_int_equal(mixp_trace_length(t), 0);
  assert_int_equal(mixp_trace_length(NULL), -1);
  assert_string_equal(mixp_trace_report(NULL), "");
  MT_FAILS(mixp_trace_compare(NULL, t, 0.1, NULL, NULL), MIXP_ERR_INVALID_ARGUMENT, "reference is NULL");
  MT_FAILS(mixp_trace_compare(t, NULL, 0.1, NULL, NULL), MIXP_ERR_INVALID_ARGUMENT, "test is NULL");
  MT_FAILS(mixp_trace_compare(t, t, -1.0, NULL, NULL), MIXP_ERR_INVALID_ARGUMENT, "rel_tol");
  MT_FAILS(mixp_trace_compare(t, t, NAN, NULL, NULL), MIXP_ERR_INVALID_ARGUMENT, "rel_tol");
  MT_FAILS(mixp_trace_compare(t, t, -INFINITY, NULL, NULL), MIXP_ERR_INVALID_ARGUMENT, "rel_tol");
  MT_OK(mixp_trace_compare(t, t, INFINITY, NULL, NULL));
  mixp_trace_destroy(t);
  mixp_trace_destroy(NULL);
  mixp_session_destroy(s);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_identical_runs),
      cmocka_unit_test(test_o0_against_bf16),
      cmocka_unit_test(test_different_paths),
      cmocka_unit_test(test_nonfinite_on_one_side),
      cmocka_unit_test(test_misuse),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
