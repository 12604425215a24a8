/* split (views), flatten and pad (including cropping with negative pads):
 * shapes and values against index arithmetic, gradient checks, and misuse. */
#include "test_util.h"

static void expect_shape(const mixp_tensor *t, const int64_t *want, int nd) {
  int64_t shape[MIXP_MAX_DIMS];
  int got = 0;
  MT_OK(mixp_tensor_shape(t, shape, MIXP_MAX_DIMS, &got));
  assert_int_equal(got, nd);
  for (int i = 0; i < nd; ++i) assert_int_equal(shape[i], want[i]);
}

/* ---- split ---------------------------------------------------------------------------- */

static void test_split_values_and_views(void **state) {
  (void)state;
  mixp_session *s = mt_session();
  const int64_t shape[3] = {2, 6, 3}, sizes[4] = {1, 3, 0, 2};
  double x[36];
  for (int i = 0; i < 36; ++i) x[i] = i;
  const mixp_dtype dts[4] = {MIXP_F64, MIXP_F32, MIXP_F16, MIXP_BF16};
  for (int d = 0; d < 4; ++d)
    for (int neg = 0; neg <= 1; ++neg) {
      mixp_tensor *xt = mt_tensor(s, dts[d], x, shape, 3), *outs[4] = {0};
      MT_OK(mixp_split(xt, sizes, 4, neg ? -2 : 1, outs));
      int64_t start = 0;
      for (int p = 0; p < 4; ++p) {
        const int64_t want[3] = {2, sizes[p], 3};
        expect_shape(outs[p], want, 3);
        assert_int_equal(mixp_tensor_dtype(outs[p]), dts[d]);
        /* A view: x's strides. */
        for (int k = 0; k < 3; ++k) assert_int_equal(mixp_tensor_stride(outs[p], k), mixp_tensor_stride(xt, k));
        double *v = mt_values(outs[p]);
        for (int64_t a = 0; a < 2; ++a)
          for (int64_t b = 0; b < sizes[p]; ++b)
            for (int64_t c = 0; c < 3; ++c)
              assert_true(v[(a * sizes[p] + b) * 3 + c] == x[(a * 6 + start + b) * 3 + c]);
        free(v);
        start += sizes[p];
      }
      for (int p = 0; p < 4; ++p) mixp_tensor_release(outs[p]);
      mixp_tensor_release(xt);
    }
  /* Writing into a piece writes into x: they share storage. */
  mixp_tensor *xt = mt_tensor(s, MIXP_F32, x, shape, 3), *outs[4] = {0}, *z = NULL;
  MT_OK(mixp_split(xt, sizes, 4, 1, outs));
  const int64_t zs[3] = {2, 2, 3};
  MT_OK(mixp_tensor_zeros(s, MIXP_F32, zs, 3, &z));
  MT_OK(mixp_tensor_copy_(outs[3], z));
  double *xv = mt_values(xt);
  for (int64_t a = 0; a < 2; ++a)
    for (int64_t b = 0; b < 6; ++b)
      for (int64_t c = 0; c < 3; ++c)
        assert_true(xv[(a * 6 + b) * 3 + c] == (b >= 4 ? 0.0 : x[(a * 6 + b) * 3 + c]));
  free(xv);
  for (int p = 0; p < 4; ++p) mixp_tensor_release(outs[p]);
  mixp_tensor_release(z);
  mixp_tensor_release(xt);
  mixp_session_destroy(s);
}

/* Pieces recombined in another order (so every piece carries a gradient). */
static mixp_status split_fn(mixp_tensor **in, int n, void *ctx, mixp_tensor **out) {
  (void)n;
  const int dim = *(int *)ctx;
  const int64_t sizes[3] = {2, 1, 1};
  mixp_tensor *p[3] = {0}, *scaled = NULL;
  mixp_status st = mixp_split(in[0], sizes, 3, dim, p);
  if (st != MIXP_OK) return st;
  MT_OK(mixp_mul_scalar(p[1], 3.0, &scaled));
  const mixp_tensor *order[3] = {p[2], scaled, p[0]};
  st = mixp_cat(order, 3, dim, out);
  for (int i = 0; i < 3; ++i) mixp_tensor_release(p[i]);
  mixp_tensor_release(scaled);
  return st;
}

static void test_split_gradcheck(void **state) {
  (void)state;
  mixp_session *s = mt_session();
  const int64_t shape[3] = {4, 4, 2};
  double x[32];
  mt_fill(x, 32, -1, 1, 1);
  for (int dim = 0; dim <= 1; ++dim) {
    mt_input in = {x, shape, 3, 1, MIXP_F64};
    mt_gradcheck(s, split_fn, &dim, &in, 1, 1e-8, 1e-7);
  }
  mixp_session_destroy(s);
}

/* Pieces without a gradient contribute zeros, pieces used twice the sum of
 * their uses; one split node writes them all into x's gradient. */
static void test_split_partial_gradients(void **state) {
  (void)state;
  mixp_session *s = mt_session();
  const int64_t shape[2] = {3, 5}, sizes[3] = {1, 2, 2};
  double x[15];
  for (int i = 0; i < 15; ++i) x[i] = i + 1;
  const mixp_dtype dts[3] = {MIXP_F64, MIXP_F32, MIXP_BF16};
  for (int d = 0; d < 3; ++d) {
    mixp_tensor *xt = mt_tensor(s, dts[d], x, shape, 2), *p[3] = {0}, *a = NULL, *b = NULL, *ab = NULL,
                *loss = NULL;
    MT_OK(mixp_tensor_set_requires_grad(xt, 1));
    MT_OK(mixp_split(xt, sizes, 3, 1, p));
    /* loss = sum(3 * p[2]) + sum(p[2] * p[2]); p[0] and p[1] unused. */
    MT_OK(mixp_mul_scalar(p[2], 3.0, &a));
    MT_OK(mixp_mul(p[2], p[2], &b));
    MT_OK(mixp_add(a, b, &ab));
    MT_OK(mixp_sum(ab, NULL, 0, 0, &loss));
    MT_OK(mixp_backward(loss, NULL));
    double *g = mt_grad_values(xt);
    for (int r = 0; r < 3; ++r)
      for (int c = 0; c < 5; ++c)
        assert_true(g[r * 5 + c] == (c >= 3 ? 3.0 + 2.0 * x[r * 5 + c] : 0.0));
    free(g);
    mixp_tensor *list[7] = {xt, p[0], p[1], p[2], a, b, ab};
    for (int i = 0; i < 7; ++i) mixp_tensor_release(list[i]);
    mixp_tensor_release(loss);
  }
  mixp_session_destroy(s);
}

static void test_split_misuse(void **state) {
  (void)state;
  mixp_session *s = mt_session();
  const int64_t shape[2] = {3, 4}, good[2] = {1, 3}, bad_sum[2] = {1, 2}, negs[2] = {-1, 5};
  double x[12] = {0};
  mixp_tensor *xt = mt_tensor(s, MIXP_F32, x, shape, 2), *outs[2] = {NULL, NULL}, *sc = NULL;
  const double one = 1.0;
  MT_OK(mixp_tensor_from_host(s, &one, sizeof one, MIXP_F64, NULL, 0, &sc));
  MT_FAILS(mixp_split(NULL, good, 2, 1, outs), MIXP_ERR_INVALID_ARGUMENT, "x is NULL");
  MT_FAILS(mixp_split(xt, good, 2, 1, NULL), MIXP_ERR_INVALID_ARGUMENT, "outs is NULL");
  MT_FAILS(mixp_split(xt, NULL, 2, 1, outs), MIXP_ERR_INVALID_ARGUMENT, "sizes is NULL");
  MT_FAILS(mixp_split(xt, good, 0, 1, outs), MIXP_ERR_INVALID_ARGUMENT, "n must be >= 1");
  MT_FAILS(mixp_split(xt, bad_sum, 2, 1, outs), MIXP_ERR_SHAPE, "add up to 3");
  MT_FAILS(mixp_split(xt, negs, 2, 1, outs), MIXP_ERR_INVALID_ARGUMENT, "sizes[0] = -1");
  MT_FAILS(mixp_split(xt, good, 2, 2, outs), MIXP_ERR_INVALID_ARGUMENT, "dim 2 is out of range");
  MT_FAILS(mixp_split(xt, good, 2, -3, outs), MIXP_ERR_INVALID_ARGUMENT, "dim -3");
  MT_FAILS(mixp_split(sc, good, 2, 0, outs), MIXP_ERR_SHAPE, "0-d");
  assert_null(outs[0]);
  assert_null(outs[1]);
  mixp_tensor_release(sc);
  mixp_tensor_release(xt);
  mixp_session_destroy(s);
}

/* ---- flatten --------------------------------------------------------------------------- */

static void test_flatten(void **state) {
  (void)state;
  mixp_session *s = mt_session();
  const int64_t shape[4] = {2, 3, 4, 5};
  double x[120];
  for (int i = 0; i < 120; ++i) x[i] = i;
  mixp_tensor *xt = mt_tensor(s, MIXP_F32, x, shape, 4), *out = NULL;
  struct {
    int s, e, nd;
    int64_t want[4];
  } cases[5] = {{1, -1, 2, {2, 60}},
                {0, -1, 1, {120}},
                {1, 2, 3, {2, 12, 5}},
                {-2, -2, 4, {2, 3, 4, 5}},
                {0, 1, 3, {6, 4, 5}}};
  for (int c = 0; c < 5; ++c) {
    MT_OK(mixp_flatten(xt, cases[c].s, cases[c].e, &out));
    expect_shape(out, cases[c].want, cases[c].nd);
    double *v = mt_values(out);
    mt_assert_close(v, x, 120, 0, 0);
    free(v);
    mixp_tensor_release(out);
  }
  /* A transposed input still flattens in logical order. */
  mixp_tensor *tt = NULL;
  MT_OK(mixp_transpose(xt, 0, 3, &tt));
  MT_OK(mixp_flatten(tt, 0, -1, &out));
  double *v = mt_values(out);
  for (int a = 0; a < 5; ++a)
    for (int b = 0; b < 3; ++b)
      for (int c = 0; c < 4; ++c)
        for (int d = 0; d < 2; ++d) assert_true(v[((a * 3 + b) * 4 + c) * 2 + d] == x[((d * 3 + b) * 4 + c) * 5 + a]);
  free(v);
  mixp_tensor_release(out);
  mixp_tensor_release(tt);
  /* A 0-d tensor flattens to [1]. */
  mixp_tensor *sc = NULL;
  const double one = 2.5;
  const int64_t w1[1] = {1};
  MT_OK(mixp_tensor_from_host(s, &one, sizeof one, MIXP_F64, NULL, 0, &sc));
  MT_OK(mixp_flatten(sc, 0, -1, &out));
  expect_shape(out, w1, 1);
  mixp_tensor_release(out);
  MT_FAILS(mixp_flatten(sc, 1, -1, &out), MIXP_ERR_INVALID_ARGUMENT, "0-d");
  mixp_tensor_release(sc);
  mixp_tensor_release(xt);
  mixp_session_destroy(s);
}

static mixp_status flatten_fn(mixp_tensor **in, int n, void *ctx, mixp_tensor **out) {
  (void)n;
  (void)ctx;
  mixp_tensor *t = NULL;
  mixp_status st = mixp_transpose(in[0], 0, 2, &t);
  if (st == MIXP_OK) st = mixp_flatten(t, 1, 2, out);
  mixp_tensor_release(t);
  return st;
}

static void test_flatten_gradcheck_and_misuse(void **state) {
  (void)state;
  mixp_session *s = mt_session();
  const int64_t shape[3] = {2, 3, 4};
  double x[24];
  mt_fill(x, 24, -1, 1, 3);
  mt_input in = {x, shape, 3, 1, MIXP_F64};
  mt_gradcheck(s, flatten_fn, NULL, &in, 1, 1e-8, 1e-7);

  mixp_tensor *xt = mt_tensor(s, MIXP_F32, x, shape, 3), *out = NULL;
  MT_FAILS(mixp_flatten(NULL, 0, 1, &out), MIXP_ERR_INVALID_ARGUMENT, "x is NULL");
  MT_FAILS(mixp_flatten(xt, 0, 1, NULL), MIXP_ERR_INVALID_ARGUMENT, "out is NULL");
  MT_FAILS(mixp_flatten(xt, 2, 1, &out), MIXP_ERR_INVALID_ARGUMENT, "comes after end_dim");
  MT_FAILS(mixp_flatten(xt, 3, 3, &out), MIXP_ERR_INVALID_ARGUMENT, "start_dim 3");
  MT_FAILS(mixp_flatten(xt, 0, -4, &out), MIXP_ERR_INVALID_ARGUMENT, "end_dim -4");
  assert_null(out);
  mixp_tensor_release(xt);
  mixp_session_destroy(s);
}

/* ---- pad --------------------------------------------------------------------------------- */

/* Reference constant pad of x [a, b, c] with up to three (before, after) pairs from the last dim. */
static void ref_pad3(const double *x, const int64_t *shape, const int64_t *pads, int npads,
                     double value, double *out, int64_t *oshape) {
  int64_t before[3] = {0, 0, 0};
  for (int j = 0; j < npads / 2; ++j) before[2 - j] = pads[2 * j];
  for (int d = 0; d < 3; ++d) {
    int j = 2 - d;
    oshape[d] = shape[d] + (j < npads / 2 ? pads[2 * j] + pads[2 * j + 1] : 0);
  }
  for (int64_t a = 0; a < oshape[0]; ++a)
    for (int64_t b = 0; b < oshape[1]; ++b)
      for (int64_t c = 0; c < oshape[2]; ++c) {
        int64_t ia = a - before[0], ib = b - before[1], ic = c - before[2];
        int inside = ia >= 0 && ia < shape[0] && ib >= 0 && ib < shape[1] && ic >= 0 && ic < shape[2];
        out[(a * oshape[1] + b) * oshape[2] + c] = inside ? x[(ia * shape[1] + ib) * shape[2] + ic] : value;
      }
}

static const int64_t PADS[5][6] = {{1, 2, 0, 0, 0, 0},   {0, 1, 2, 0, 1, 1}, {-1, 1, 1, -2, 0, 0},
                                    {-2, -1, -1, 0, 0, 0}, {2, -3, 0, 1, 0, 0}};
static const int PADN[5] = {2, 6, 4, 4, 4};

static void test_pad_values(void **state) {
  (void)state;
  mixp_session *s = mt_session();
  const int64_t shape[3] = {2, 3, 4};
  double x[24], want[256];
  mt_fill(x, 24, -2, 2, 5);
  const mixp_dtype dts[4] = {MIXP_F64, MIXP_F32, MIXP_F16, MIXP_BF16};
  for (int c = 0; c < 5; ++c)
    for (int d = 0; d < 4; ++d) {
      mixp_tensor *xt = mt_tensor(s, dts[d], x, shape, 3), *out = NULL;
      double *xv = mt_values(xt);
      int64_t oshape[3];
      ref_pad3(xv, shape, PADS[c], PADN[c], -1.5, want, oshape);
      MT_OK(mixp_pad(xt, PADS[c], PADN[c], -1.5, &out));
      assert_int_equal(mixp_tensor_dtype(out), dts[d]);
      expect_shape(out, oshape, 3);
      double *v = mt_values(out);
      mt_assert_close(v, want, oshape[0] * oshape[1] * oshape[2], 0, 0);
      free(v);
      free(xv);
      mixp_tensor_release(out);
      mixp_tensor_release(xt);
    }
  /* No pads: a copy of the same shape. */
  mixp_tensor *xt = mt_tensor(s, MIXP_F32, x, shape, 3), *out = NULL;
  MT_OK(mixp_pad(xt, NULL, 0, 0.0, &out));
  expect_shape(out, shape, 3);
  mixp_tensor_release(out);
  /* Cropping a dim to nothing gives an empty result. */
  const int64_t crop_all[2] = {-2, -2}, empty_shape[3] = {2, 3, 0};
  MT_OK(mixp_pad(xt, crop_all, 2, 0.0, &out));
  expect_shape(out, empty_shape, 3);
  mixp_tensor_release(out);
  mixp_tensor_release(xt);
  mixp_session_destroy(s);
}

static mixp_status pad_fn(mixp_tensor **in, int n, void *ctx, mixp_tensor **out) {
  (void)n;
  const int c = *(int *)ctx;
  return mixp_pad(in[0], PADS[c], PADN[c], 0.75, out);
}

static void test_pad_gradcheck(void **state) {
  (void)state;
  mixp_session *s = mt_session();
  const int64_t shape[3] = {2, 3, 4};
  double x[24];
  mt_fill(x, 24, -1, 1, 6);
  for (int c = 0; c < 5; ++c) {
    mt_input in = {x, shape, 3, 1, MIXP_F64};
    mt_gradcheck(s, pad_fn, &c, &in, 1, 1e-8, 1e-7);
  }
  mixp_session_destroy(s);
}

static void test_pad_misuse(void **state) {
  (void)state;
  mixp_session *s = mt_session();
  const int64_t shape[2] = {2, 3}, p2[2] = {1, 1}, p3[3] = {1, 1, 1}, p6[6] = {1, 1, 1, 1, 1, 1},
                crop[2] = {-2, -2};
  double x[6] = {0};
  mixp_tensor *xt = mt_tensor(s, MIXP_F32, x, shape, 2), *xi = NULL, *out = NULL;
  MT_OK(mixp_cast(xt, MIXP_I64, &xi));
  MT_FAILS(mixp_pad(NULL, p2, 2, 0, &out), MIXP_ERR_INVALID_ARGUMENT, "x is NULL");
  MT_FAILS(mixp_pad(xt, p2, 2, 0, NULL), MIXP_ERR_INVALID_ARGUMENT, "out is NULL");
  MT_FAILS(mixp_pad(xt, NULL, 2, 0, &out), MIXP_ERR_INVALID_ARGUMENT, "pads is NULL");
  MT_FAILS(mixp_pad(xt, p2, -2, 0, &out), MIXP_ERR_INVALID_ARGUMENT, "npads");
  MT_FAILS(mixp_pad(xt, p3, 3, 0, &out), MIXP_ERR_INVALID_ARGUMENT, "even");
  MT_FAILS(mixp_pad(xt, p6, 6, 0, &out), MIXP_ERR_INVALID_ARGUMENT, "at most 2*ndim = 4");
  MT_FAILS(mixp_pad(xt, crop, 2, 0, &out), MIXP_ERR_SHAPE, "crop 2 + 2 elements from dim 1 of size 3");
  /* Two cuts of 2^62 each: each is in range, their sum is not an int64 (the
   * API fuzzer's find: it once overflowed). */
  const int64_t huge_crop[2] = {-(INT64_C(1) << 62), -(INT64_C(1) << 62)};
  MT_FAILS(mixp_pad(xt, huge_crop, 2, 0, &out), MIXP_ERR_SHAPE,
           "crop 4611686018427387904 + 4611686018427387904 elements from dim 1");
  MT_FAILS(mixp_pad(xi, p2, 2, 0, &out), MIXP_ERR_DTYPE, "x must be a float");
  assert_null(out);
  mixp_tensor_release(xi);
  mixp_tensor_release(xt);
  mixp_session_destroy(s);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_split_values_and_views),
      cmocka_unit_test(test_split_gradcheck),
      cmocka_unit_test(test_split_partial_gradients),
      cmocka_unit_test(test_split_misuse),
      cmocka_unit_test(test_flatten),
      cmocka_unit_test(test_flatten_gradcheck_and_misuse),
      cmocka_unit_test(test_pad_values),
      cmocka_unit_test(test_pad_gradcheck),
      cmocka_unit_test(test_pad_misuse),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
