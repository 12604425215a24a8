/* Index validation through the backend (Backend::check_indices) and max's
 * gradient scatter (Backend::scatter_dim). On the CPU an out-of-range class
 * target or embedding index fails the call with a message naming the
 * function, the position and the value, and the call changes nothing: no
 * output, no recorded graph (the leaf gets no gradient), no memory kept.
 * Under MIXP_TEST_DEVICE=cuda the same bad inputs are reported by the next
 * call that synchronises (the deferred device check). max's backward routes
 * each gradient to the first maximum of its slice, dim in the middle. */
#include "test_util.h"

static mixp_tensor *i64_tensor(mixp_session *s, const int64_t *v, const int64_t *shape, int nd) {
  int64_t n = 1;
  for (int i = 0; i < nd; ++i) n *= shape[i];
  mixp_tensor *t = NULL;
  MT_OK(mixp_tensor_from_host(s, v, (size_t)n * sizeof(int64_t), MIXP_I64, shape, nd, &t));
  return t;
}

static void assert_no_grad(mixp_tensor *leaf) {
  mixp_tensor *g = (mixp_tensor *)leaf; /* overwritten only on success */
  MT_OK(mixp_tensor_grad(leaf, &g));
  assert_null(g);
}

static void test_bad_target_changes_nothing(void **state) {
  (void)state;
  mt_skip_unless_cpu();
  mixp_session *s = mt_session();
  const int64_t shape[2] = {4, 3}, tshape[1] = {4};
  double v[12];
  mt_fill(v, 12, -2, 2, 7);
  mixp_tensor *x = mt_tensor(s, MIXP_F32, v, shape, 2);
  MT_OK(mixp_tensor_set_requires_grad(x, 1));
  const int64_t bad[4] = {0, -100, 2, 3}, neg[4] = {1, -5, 0, -100};
  mixp_tensor *tb = i64_tensor(s, bad, tshape, 1), *tn = i64_tensor(s, neg, tshape, 1);
  const uint64_t before = mt_current_bytes(s);
  mixp_tensor *out = NULL;
  MT_FAILS(mixp_cross_entropy(x, tb, MIXP_REDUCTION_MEAN, -100, &out), MIXP_ERR_INVALID_ARGUMENT,
           "mixp_cross_entropy: target[3] = 3 is out of range [0, 3) and is not ignore_index (-100)");
  assert_null(out);
  /* -100 is legal only as the ignore_index: with another one it is named. */
  MT_FAILS(mixp_cross_entropy(x, tn, MIXP_REDUCTION_SUM, 7, &out), MIXP_ERR_INVALID_ARGUMENT,
           "mixp_cross_entropy: target[1] = -5 is out of range [0, 3) and is not ignore_index (7)");
  assert_null(out);
  assert_int_equal(mt_current_bytes(s), before);
  assert_no_grad(x);
  /* The same logits with valid targets still work, and their mean uses the
   * count of non-ignored targets (3 of 4). */
  const int64_t good[4] = {0, -100, 2, 1};
  mixp_tensor *tg = i64_tensor(s, good, tshape, 1), *sum = NULL;
  MT_OK(mixp_cross_entropy(x, tg, MIXP_REDUCTION_MEAN, -100, &out));
  MT_OK(mixp_cross_entropy(x, tg, MIXP_REDUCTION_SUM, -100, &sum));
  double m = 0, t = 0;
  MT_OK(mixp_tensor_item(out, &m));
  MT_OK(mixp_tensor_item(sum, &t));
  assert_true(fabs(m - t / 3.0) <= 1e-6 * fabs(t));
  MT_OK(mixp_backward(out, NULL));
  mixp_tensor *g = NULL;
  MT_OK(mixp_tensor_grad(x, &g));
  assert_non_null(g);
  double *gv = mt_values(g);
  double row1 = 0;
  for (int k = 0; k < 3; ++k) row1 += fabs(gv[3 + k]);
  assert_true(row1 == 0.0); /* the ignored row gets no gradient */
  free(gv);
  mixp_tensor *ts[] = {x, tb, tn, tg, out, sum, g};
  for (size_t i = 0; i < sizeof ts / sizeof *ts; ++i) mixp_tensor_release(ts[i]);
  mixp_session_destroy(s);
}

static void test_bad_index_changes_nothing(void **state) {
  (void)state;
  mt_skip_unless_cpu();
  mixp_session *s = mt_session();
  const int64_t wshape[2] = {5, 2}, ishape[2] = {2, 3};
  double w[10];
  mt_fill(w, 10, -1, 1, 3);
  mixp_tensor *wt = mt_tensor(s, MIXP_F32, w, wshape, 2);
  MT_OK(mixp_tensor_set_requires_grad(wt, 1));
  const int64_t bad[6] = {0, 1, 2, 3, 4, 5};
  mixp_tensor *ib = i64_tensor(s, bad, ishape, 2), *out = NULL;
  const uint64_t before = mt_current_bytes(s);
  MT_FAILS(mixp_embedding(wt, ib, -1, &out), MIXP_ERR_INVALID_ARGUMENT,
           "mixp_embedding: indices[5] = 5 is out of range [0, 5) (flat position in indices of "
           "shape [2,3])");
  assert_null(out);
  assert_int_equal(mt_current_bytes(s), before);
  assert_no_grad(wt);
  mixp_tensor_release(ib);
  mixp_tensor_release(wt);
  mixp_session_destroy(s);
}

/* Runs on every device: the deferred check of a device reports the same
 * position and value at the read-back, and the session goes on. */
static void test_bad_target_reported(void **state) {
  (void)state;
  mixp_session *s = mt_session();
  const int64_t shape[2] = {3, 10}, tshape[1] = {3};
  double v[30];
  mt_fill(v, 30, -1, 1, 11);
  mixp_tensor *x = mt_tensor(s, MIXP_F32, v, shape, 2), *out = NULL;
  const int64_t bad[3] = {1, 57, 99};
  mixp_tensor *tb = i64_tensor(s, bad, tshape, 1);
  const char *needle = "mixp_cross_entropy: target[1] = 57 is out of range [0, 10)";
  if (mt_on_cpu()) {
    MT_FAILS(mixp_cross_entropy(x, tb, MIXP_REDUCTION_MEAN, -100, &out),
             MIXP_ERR_INVALID_ARGUMENT, needle);
  } else {
    MT_OK(mixp_cross_entropy(x, tb, MIXP_REDUCTION_MEAN, -100, &out));
    double got = 0;
    MT_FAILS(mixp_tensor_item(out, &got), MIXP_ERR_INVALID_ARGUMENT, needle);
    MT_OK(mixp_tensor_item(out, &got));
    assert_true(isnan(got));
    mixp_tensor_release(out);
  }
  mixp_tensor_release(tb);
  mixp_tensor_release(x);
  mixp_session_destroy(s);
}

static void test_max_backward_scatter(void **state) {
  (void)state;
  mixp_session *s = mt_session();
  /* [2, 3, 2]; maxima along dim 1, with a tie (first wins) and a NaN-free
   * negative slice. */
  const double v[12] = {1, -4, 5, -2, 5, -3,   /* o = 0: (i=0) 1,5,5 -> k=1; (i=1) -4,-2,-3 -> k=1 */
                        9, 0, 2, 0, 9, 7};     /* o = 1: (i=0) 9,2,9 -> k=0; (i=1) 0,0,7 -> k=2 */
  const int64_t shape[3] = {2, 3, 2};
  const mixp_dtype dts[3] = {MIXP_F64, MIXP_F32, MIXP_F16};
  for (int d = 0; d < 3; ++d) {
    mixp_tensor *x = mt_tensor(s, dts[d], v, shape, 3), *vals = NULL, *idx = NULL, *loss = NULL,
                *w = NULL, *prod = NULL, *g = NULL;
    MT_OK(mixp_tensor_set_requires_grad(x, 1));
    MT_OK(mixp_max(x, 1, 0, &vals, &idx));
    /* Distinct upstream gradients per output: 1, 2, 3, 4. */
    const double wv[4] = {1, 2, 3, 4};
    const int64_t wshape[2] = {2, 2};
    w = mt_tensor(s, dts[d], wv, wshape, 2);
    MT_OK(mixp_mul(vals, w, &prod));
    MT_OK(mixp_sum(prod, NULL, 0, 0, &loss));
    MT_OK(mixp_backward(loss, NULL));
    MT_OK(mixp_tensor_grad(x, &g));
    double *gv = mt_values(g);
    const double want[12] = {0, 0, 1, 2, 0, 0, 3, 0, 0, 0, 0, 4};
    mt_assert_close(gv, want, 12, 0, 0);
    free(gv);
    mixp_tensor *ts[] = {x, vals, idx, loss, w, prod, g};
    for (size_t i = 0; i < sizeof ts / sizeof *ts; ++i) mixp_tensor_release(ts[i]);
  }
  mixp_session_destroy(s);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_bad_target_changes_nothing),
      cmocka_unit_test(test_bad_index_changes_nothing),
      cmocka_unit_test(test_bad_target_reported),
      cmocka_unit_test(test_max_backward_scatter),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
