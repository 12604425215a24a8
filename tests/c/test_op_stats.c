/* Op statistics (mixp_session_op_stats_*): which op ran in which dtype over
 * a region, forward and backward apart, autocast's casts counted, an op's
 * internals not; start clears, stop freezes; the table; misuse. */
#include "test_util.h"

static int64_t count_of(mixp_session *s, const char *op, int backward, mixp_dtype dt) {
  int64_t n = -1;
  MT_OK(mixp_session_op_stats_count(s, op, backward, dt, &n));
  return n;
}

/* linear -> relu -> cross_entropy under bf16 autocast, then backward. */
static void one_step(mixp_session *s, mixp_module *lin, int amp) {
  const int64_t xs[2] = {4, 8}, ts[1] = {4};
  double xv[32], tv[4] = {0, 1, 2, 0};
  mt_fill(xv, 32, -1.0, 1.0, 3);
  mixp_tensor *x = mt_tensor(s, MIXP_F32, xv, xs, 2), *t = mt_tensor(s, MIXP_I64, tv, ts, 1);
  mixp_tensor *h = NULL, *a = NULL, *loss = NULL;
  if (amp) {
    mixp_autocast_options o;
    mixp_autocast_options_init(&o);
    o.dtype = MIXP_BF16;
    MT_OK(mixp_autocast_push(s, &o));
  }
  MT_OK(mixp_module_forward(lin, x, &h));
  MT_OK(mixp_relu(h, &a));
  MT_OK(mixp_cross_entropy(a, t, MIXP_REDUCTION_MEAN, MIXP_IGNORE_INDEX_DEFAULT, &loss));
  if (amp) MT_OK(mixp_autocast_pop(s));
  MT_OK(mixp_backward(loss, NULL));
  mixp_tensor *all[] = {x, t, h, a, loss};
  for (size_t i = 0; i < sizeof all / sizeof *all; ++i) mixp_tensor_release(all[i]);
}

static void test_counts_by_dtype_and_pass(void **state) {
  (void)state;
  mixp_session *s = mt_session();
  mixp_module *lin = NULL;
  MT_OK(mixp_linear_create(s, 8, 3, 1, MIXP_F32, &lin));
  one_step(s, lin, 1); /* before the start: not counted */
  MT_OK(mixp_session_op_stats_start(s));
  one_step(s, lin, 1);
  one_step(s, lin, 1);
  /* The forward: linear and relu in bf16 (the autocast lists), the loss in fp32. */
  assert_int_equal(count_of(s, "linear", 0, MIXP_BF16), 2);
  assert_int_equal(count_of(s, "linear", 0, MIXP_F32), 0);
  assert_int_equal(count_of(s, "relu", 0, MIXP_BF16), 2);
  assert_int_equal(count_of(s, "cross_entropy", 0, MIXP_F32), 2);
  /* autocast's casts of x, W and b are the caller's ops too. */
  assert_true(count_of(s, "cast", 0, MIXP_BF16) >= 2);
  /* matmul inside linear is an internal: not counted. */
  assert_int_equal(count_of(s, "matmul", 0, MIXP_BF16), 0);
  /* The backward pass's ops are counted apart. */
  int64_t backward_calls = 0;
  for (int i = 0; i < mixp_op_count(); ++i)
    for (int d = 0; d <= MIXP_F8E5M2; ++d) backward_calls += count_of(s, mixp_op_name(i), 1, (mixp_dtype)d);
  assert_true(backward_calls > 0);
  /* Stopped: nothing more is counted, and the counts stay. */
  MT_OK(mixp_session_op_stats_stop(s));
  one_step(s, lin, 0);
  assert_int_equal(count_of(s, "linear", 0, MIXP_BF16), 2);
  assert_int_equal(count_of(s, "linear", 0, MIXP_F32), 0);
  const char *table = mixp_session_op_stats_report(s);
  assert_non_null(strstr(table, "fp16 calls"));
  assert_non_null(strstr(table, "linear "));
  assert_non_null(strstr(table, "(backward)"));
  assert_non_null(strstr(table, " calls\n"));
  /* A new start clears; without autocast linear runs in fp32. */
  MT_OK(mixp_session_op_stats_start(s));
  one_step(s, lin, 0);
  assert_int_equal(count_of(s, "linear", 0, MIXP_BF16), 0);
  assert_int_equal(count_of(s, "linear", 0, MIXP_F32), 1);
  assert_int_equal(count_of(s, "cast", 0, MIXP_BF16), 0);
  mixp_module_destroy(lin);
  mixp_session_destroy(s);
}

static void test_op_stats_misuse(void **state) {
  (void)state;
  mixp_session *s = mt_session();
  int64_t n = 42;
  MT_FAILS(mixp_session_op_stats_start(NULL), MIXP_ERR_INVALID_ARGUMENT, "mixp_session_op_stats_start: session");
  MT_FAILS(mixp_session_op_stats_stop(NULL), MIXP_ERR_INVALID_ARGUMENT, "mixp_session_op_stats_stop: session");
  MT_FAILS(mixp_session_op_stats_count(NULL, "relu", 0, MIXP_F32, &n), MIXP_ERR_INVALID_ARGUMENT,
           "mixp_session_op_stats_count: session");
  MT_FAILS(mixp_session_op_stats_count(s, NULL, 0, MIXP_F32, &n), MIXP_ERR_INVALID_ARGUMENT, "op is NULL");
  MT_FAILS(mixp_session_op_stats_count(s, "no_such_op", 0, MIXP_F32, &n), MIXP_ERR_INVALID_ARGUMENT,
           "unknown op 'no_such_op'");
  MT_FAILS(mixp_session_op_stats_count(s, "relu", 2, MIXP_F32, &n), MIXP_ERR_INVALID_ARGUMENT, "backward = 2");
  MT_FAILS(mixp_session_op_stats_count(s, "relu", -1, MIXP_F32, &n), MIXP_ERR_INVALID_ARGUMENT, "backward = -1");
  MT_FAILS(mixp_session_op_stats_count(s, "relu", 0, (mixp_dtype)99, &n), MIXP_ERR_INVALID_ARGUMENT,
           "dtype = 99");
  MT_FAILS(mixp_session_op_stats_count(s, "relu", 0, (mixp_dtype)-1, &n), MIXP_ERR_INVALID_ARGUMENT,
           "dtype = -1");
  MT_FAILS(mixp_session_op_stats_count(s, "relu", 0, MIXP_F32, NULL), MIXP_ERR_INVALID_ARGUMENT, "count is NULL");
  assert_int_equal(n, 42); /* failed calls wrote nothing */
  /* Never started: every count is 0, the table is empty but well formed. */
  MT_OK(mixp_session_op_stats_count(s, "relu", 0, MIXP_F32, &n));
  assert_int_equal(n, 0);
  assert_non_null(strstr(mixp_session_op_stats_report(s), "0 ops, 0 calls"));
  assert_string_equal(mixp_session_op_stats_report(NULL), "");
  MT_OK(mixp_session_op_stats_stop(s)); /* stopping what never started is fine */
  mixp_session_destroy(s);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_counts_by_dtype_and_pass),
      cmocka_unit_test(test_op_stats_misuse),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
