/* Views: reshape, transpose, permute, slice, contiguous. Values against
 * index arithmetic done here, storage sharing, misuse, and gradient checks. */
#include "test_util.h"

#define SENTINEL ((mixp_tensor *)(uintptr_t)0x71e3)

/* x[i] = i as F64 with the given shape. */
static mixp_tensor *iota(mixp_session *s, const int64_t *shape, int ndim) {
  int64_t n = 1;
  for (int i = 0; i < ndim; ++i) n *= shape[i];
  double *v = (double *)malloc((size_t)n * sizeof(double));
  for (int64_t i = 0; i < n; ++i) v[i] = (double)i;
  mixp_tensor *t = NULL;
  MT_OK(mixp_tensor_from_host(s, v, (size_t)n * sizeof(double), MIXP_F64, shape, ndim, &t));
  free(v);
  return t;
}

static void expect_shape(const mixp_tensor *t, const int64_t *shape, int ndim) {
  int64_t got[MIXP_MAX_DIMS];
  int nd = 0;
  MT_OK(mixp_tensor_shape(t, got, MIXP_MAX_DIMS, &nd));
  assert_int_equal(nd, ndim);
  for (int i = 0; i < ndim; ++i) assert_int_equal(got[i], shape[i]);
}

static void expect_values(const mixp_tensor *t, const double *want, int64_t n) {
  assert_int_equal(mixp_tensor_numel(t), n);
  double *v = mt_values(t);
  mt_assert_close(v, want, n, 0, 0);
  free(v);
}

/* ---- reshape ---------------------------------------------------------------- */

static void test_reshape(void **state) {
  mixp_session *s = (mixp_session *)*state;
  int64_t shape[3] = {2, 3, 4};
  mixp_tensor *x = iota(s, shape, 3), *y = NULL;
  double want[24];
  for (int i = 0; i < 24; ++i) want[i] = i;

  int64_t s1[2] = {6, 4};
  MT_OK(mixp_reshape(x, s1, 2, &y));
  expect_shape(y, s1, 2);
  expect_values(y, want, 24);
  assert_int_equal(mixp_tensor_stride(y, 0), 4);
  mixp_tensor_release(y);

  int64_t s2[2] = {-1, 4}, s2w[2] = {6, 4};
  MT_OK(mixp_reshape(x, s2, 2, &y));
  expect_shape(y, s2w, 2);
  mixp_tensor_release(y);
  int64_t s3[3] = {2, -1, 3}, s3w[3] = {2, 4, 3};
  MT_OK(mixp_reshape(x, s3, 3, &y));
  expect_shape(y, s3w, 3);
  expect_values(y, want, 24);
  mixp_tensor_release(y);
  int64_t s4[1] = {-1}, s4w[1] = {24};
  MT_OK(mixp_reshape(x, s4, 1, &y));
  expect_shape(y, s4w, 1);
  mixp_tensor_release(y);
  int64_t s5[5] = {1, 2, 1, 12, 1};
  MT_OK(mixp_reshape(x, s5, 5, &y));
  expect_shape(y, s5, 5);
  expect_values(y, want, 24);
  mixp_tensor_release(y);

  /* A contiguous reshape is a view: writes through it reach x. */
  MT_OK(mixp_reshape(x, s1, 2, &y));
  mixp_tensor *row = NULL, *nine = NULL;
  int64_t one = 1;
  MT_OK(mixp_slice(y, 0, 5, 6, 1, &row));
  MT_OK(mixp_tensor_full(s, MIXP_F64, &one, 1, -9.0, &nine));
  MT_OK(mixp_tensor_copy_(row, nine));
  double *xv = mt_values(x);
  for (int i = 0; i < 24; ++i) assert_true(xv[i] == (i >= 20 ? -9.0 : (double)i));
  free(xv);
  mixp_tensor_release(nine);
  mixp_tensor_release(row);
  mixp_tensor_release(y);

  /* Reshaping a transposed tensor copies and keeps row-major order. */
  int64_t t2[2] = {4, 6};
  mixp_tensor *base = iota(s, t2, 2), *bt = NULL;
  MT_OK(mixp_transpose(base, 0, 1, &bt)); /* [6,4], bt[i][j] = 6*j + i */
  int64_t flat = 24;
  MT_OK(mixp_reshape(bt, &flat, 1, &y));
  double tw[24];
  for (int i = 0; i < 6; ++i)
    for (int j = 0; j < 4; ++j) tw[i * 4 + j] = 6 * j + i;
  expect_values(y, tw, 24);
  assert_int_equal(mixp_tensor_is_contiguous(y), 1);
  mixp_tensor_release(y);
  mixp_tensor_release(bt);
  mixp_tensor_release(base);

  /* Misuse. */
  y = SENTINEL;
  int64_t bad[2] = {5, 5};
  MT_FAILS2(mixp_reshape(x, bad, 2, &y), MIXP_ERR_SHAPE, "mixp_reshape", "[2,3,4]");
  assert_non_null(strstr(mixp_last_error(), "[5,5]"));
  int64_t bad2[2] = {-1, 5};
  MT_FAILS2(mixp_reshape(x, bad2, 2, &y), MIXP_ERR_SHAPE, "mixp_reshape", "[2,3,4]");
  int64_t two_neg[3] = {-1, -1, 6};
  mixp_status st = mixp_reshape(x, two_neg, 3, &y);
  assert_true(st == MIXP_ERR_INVALID_ARGUMENT || st == MIXP_ERR_SHAPE);
  assert_non_null(strstr(mixp_last_error(), "mixp_reshape"));
  assert_non_null(strstr(mixp_last_error(), "-1"));
  int64_t negdim[2] = {-2, -12};
  assert_int_not_equal(mixp_reshape(x, negdim, 2, &y), MIXP_OK);
  assert_non_null(strstr(mixp_last_error(), "mixp_reshape"));
  int64_t nine_d[9] = {1, 1, 1, 1, 1, 2, 3, 4, 1};
  MT_FAILS2(mixp_reshape(x, nine_d, 9, &y), MIXP_ERR_INVALID_ARGUMENT, "mixp_reshape", "ndim");
  MT_FAILS(mixp_reshape(NULL, s1, 2, &y), MIXP_ERR_INVALID_ARGUMENT, "mixp_reshape");
  MT_FAILS2(mixp_reshape(x, NULL, 2, &y), MIXP_ERR_INVALID_ARGUMENT, "mixp_reshape", "shape");
  MT_FAILS2(mixp_reshape(x, s1, 2, NULL), MIXP_ERR_INVALID_ARGUMENT, "mixp_reshape", "out");
  assert_ptr_equal(y, SENTINEL);
  mixp_tensor_release(x);
}

/* ---- transpose / permute ------------------------------------------------------ */

static void test_transpose(void **state) {
  mixp_session *s = (mixp_session *)*state;
  int64_t shape[3] = {2, 3, 4};
  mixp_tensor *x = iota(s, shape, 3), *y = NULL;
  MT_OK(mixp_transpose(x, 0, 2, &y));
  int64_t ws[3] = {4, 3, 2};
  expect_shape(y, ws, 3);
  assert_int_equal(mixp_tensor_is_contiguous(y), 0);
  assert_int_equal(mixp_tensor_stride(y, 0), 1);
  assert_int_equal(mixp_tensor_stride(y, 1), 4);
  assert_int_equal(mixp_tensor_stride(y, 2), 12);
  double want[24];
  for (int a = 0; a < 4; ++a)
    for (int b = 0; b < 3; ++b)
      for (int c = 0; c < 2; ++c) want[(a * 3 + b) * 2 + c] = c * 12 + b * 4 + a;
  expect_values(y, want, 24);
  mixp_tensor_release(y);

  /* Negative dims and a no-op swap. */
  MT_OK(mixp_transpose(x, -1, -3, &y));
  expect_values(y, want, 24);
  mixp_tensor_release(y);
  MT_OK(mixp_transpose(x, 1, 1, &y));
  expect_shape(y, shape, 3);
  assert_int_equal(mixp_tensor_is_contiguous(y), 1);
  mixp_tensor_release(y);

  y = SENTINEL;
  MT_FAILS2(mixp_transpose(x, 0, 3, &y), MIXP_ERR_INVALID_ARGUMENT, "mixp_transpose", "3");
  MT_FAILS2(mixp_transpose(x, -4, 0, &y), MIXP_ERR_INVALID_ARGUMENT, "mixp_transpose", "-4");
  MT_FAILS(mixp_transpose(NULL, 0, 1, &y), MIXP_ERR_INVALID_ARGUMENT, "mixp_transpose");
  MT_FAILS2(mixp_transpose(x, 0, 1, NULL), MIXP_ERR_INVALID_ARGUMENT, "mixp_transpose", "out");
  assert_ptr_equal(y, SENTINEL);
  mixp_tensor_release(x);
}

static void test_permute(void **state) {
  mixp_session *s = (mixp_session *)*state;
  int64_t shape[3] = {2, 3, 4};
  mixp_tensor *x = iota(s, shape, 3), *y = NULL;
  const int perm[3] = {2, 0, 1};
  MT_OK(mixp_permute(x, perm, 3, &y));
  int64_t ws[3] = {4, 2, 3};
  expect_shape(y, ws, 3);
  double want[24];
  for (int a = 0; a < 4; ++a)
    for (int b = 0; b < 2; ++b)
      for (int c = 0; c < 3; ++c) want[(a * 2 + b) * 3 + c] = b * 12 + c * 4 + a;
  expect_values(y, want, 24);
  assert_int_equal(mixp_tensor_stride(y, 0), 1);
  assert_int_equal(mixp_tensor_stride(y, 1), 12);
  assert_int_equal(mixp_tensor_stride(y, 2), 4);
  mixp_tensor_release(y);
  const int ident[3] = {0, 1, 2};
  MT_OK(mixp_permute(x, ident, 3, &y));
  assert_int_equal(mixp_tensor_is_contiguous(y), 1);
  mixp_tensor_release(y);

  y = SENTINEL;
  const int dup[3] = {0, 0, 1};
  MT_FAILS2(mixp_permute(x, dup, 3, &y), MIXP_ERR_INVALID_ARGUMENT, "mixp_permute", "dims");
  const int range[3] = {0, 1, 3};
  MT_FAILS2(mixp_permute(x, range, 3, &y), MIXP_ERR_INVALID_ARGUMENT, "mixp_permute", "3");
  const int two[2] = {1, 0};
  MT_FAILS2(mixp_permute(x, two, 2, &y), MIXP_ERR_INVALID_ARGUMENT, "mixp_permute", "dims");
  MT_FAILS(mixp_permute(x, NULL, 3, &y), MIXP_ERR_INVALID_ARGUMENT, "mixp_permute");
  MT_FAILS(mixp_permute(NULL, perm, 3, &y), MIXP_ERR_INVALID_ARGUMENT, "mixp_permute");
  MT_FAILS2(mixp_permute(x, perm, 3, NULL), MIXP_ERR_INVALID_ARGUMENT, "mixp_permute", "out");
  assert_ptr_equal(y, SENTINEL);
  mixp_tensor_release(x);
}

/* ---- slice ------------------------------------------------------------------------ */

static void check_slice1d(mixp_session *s, int64_t start, int64_t end, int64_t step,
                          const double *want, int64_t n) {
  int64_t ten = 10;
  mixp_tensor *x = iota(s, &ten, 1), *y = NULL;
  MT_OK(mixp_slice(x, 0, start, end, step, &y));
  if (mixp_tensor_numel(y) != n) {
    print_error("slice(%lld, %lld, %lld) of 10: %lld elements, want %lld\n", (long long)start,
                (long long)end, (long long)step, (long long)mixp_tensor_numel(y), (long long)n);
    fail();
  }
  if (n > 0) expect_values(y, want, n);
  if (n > 1) assert_int_equal(mixp_tensor_stride(y, 0), step);
  mixp_tensor_release(y);
  mixp_tensor_release(x);
}

static void test_slice(void **state) {
  mixp_session *s = (mixp_session *)*state;
  const double a[] = {2, 3, 4, 5, 6, 7};
  check_slice1d(s, 2, 8, 1, a, 6);
  const double b[] = {0, 3, 6, 9};
  check_slice1d(s, 0, 10, 3, b, 4);
  const double c[] = {7, 8, 9};
  check_slice1d(s, -3, 10, 1, c, 3);
  check_slice1d(s, 7, 100, 1, c, 3);   /* end clamped */
  check_slice1d(s, -3, 1000, 1, c, 3); /* negative start, clamped end */
  const double d[] = {0, 1, 2};
  check_slice1d(s, -100, 3, 1, d, 3); /* start clamped */
  check_slice1d(s, 0, -7, 1, d, 3);   /* negative end */
  const double e[] = {1, 5};
  check_slice1d(s, 1, -4, 4, e, 2);
  check_slice1d(s, 6, 2, 1, NULL, 0); /* empty */
  check_slice1d(s, 10, 12, 1, NULL, 0);

  /* 2-D: columns 1, 3 of a [3,5]; the result is a strided view of x. */
  int64_t shape[2] = {3, 5};
  mixp_tensor *x = iota(s, shape, 2), *y = NULL;
  MT_OK(mixp_slice(x, -1, 1, 5, 2, &y));
  int64_t ws[2] = {3, 2};
  expect_shape(y, ws, 2);
  assert_int_equal(mixp_tensor_stride(y, 0), 5);
  assert_int_equal(mixp_tensor_stride(y, 1), 2);
  assert_int_equal(mixp_tensor_is_contiguous(y), 0);
  const double w2[6] = {1, 3, 6, 8, 11, 13};
  expect_values(y, w2, 6);
  /* Slicing a slice. */
  mixp_tensor *z = NULL;
  MT_OK(mixp_slice(y, 0, 1, 3, 1, &z));
  const double w3[4] = {6, 8, 11, 13};
  expect_values(z, w3, 4);
  mixp_tensor_release(z);

  mixp_tensor *keep = y;
  y = SENTINEL;
  MT_FAILS2(mixp_slice(x, 0, 0, 3, 0, &y), MIXP_ERR_INVALID_ARGUMENT, "mixp_slice", "step");
  MT_FAILS2(mixp_slice(x, 0, 3, 0, -1, &y), MIXP_ERR_INVALID_ARGUMENT, "mixp_slice", "step");
  MT_FAILS2(mixp_slice(x, 2, 0, 1, 1, &y), MIXP_ERR_INVALID_ARGUMENT, "mixp_slice", "dim");
  MT_FAILS2(mixp_slice(x, -3, 0, 1, 1, &y), MIXP_ERR_INVALID_ARGUMENT, "mixp_slice", "dim");
  MT_FAILS(mixp_slice(NULL, 0, 0, 1, 1, &y), MIXP_ERR_INVALID_ARGUMENT, "mixp_slice");
  MT_FAILS2(mixp_slice(x, 0, 0, 1, 1, NULL), MIXP_ERR_INVALID_ARGUMENT, "mixp_slice", "out");
  assert_ptr_equal(y, SENTINEL);
  mixp_tensor_release(keep);
  mixp_tensor_release(x);
}

/* ---- contiguous and shared storage ------------------------------------------------ */

static void test_contiguous(void **state) {
  mixp_session *s = (mixp_session *)*state;
  int64_t shape[2] = {3, 4};
  mixp_tensor *x = iota(s, shape, 2), *c = NULL, *t = NULL, *ct = NULL;
  MT_OK(mixp_contiguous(x, &c));
  assert_int_equal(mixp_tensor_is_contiguous(c), 1);
  double want[12];
  for (int i = 0; i < 12; ++i) want[i] = i;
  expect_values(c, want, 12);
  mixp_tensor_release(c);
  assert_int_equal(mixp_tensor_numel(x), 12); /* x survives releasing the result */

  MT_OK(mixp_transpose(x, 0, 1, &t));
  MT_OK(mixp_contiguous(t, &ct));
  assert_int_equal(mixp_tensor_is_contiguous(ct), 1);
  assert_int_equal(mixp_tensor_stride(ct, 0), 3);
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 3; ++j) want[i * 3 + j] = j * 4 + i;
  expect_values(ct, want, 12);
  /* The copy does not share storage with x. */
  mixp_tensor *zero = NULL;
  int64_t one = 1;
  MT_OK(mixp_tensor_zeros(s, MIXP_F64, &one, 1, &zero));
  MT_OK(mixp_tensor_copy_(ct, zero));
  double *xv = mt_values(x);
  for (int i = 0; i < 12; ++i) assert_true(xv[i] == i);
  free(xv);
  mixp_tensor_release(zero);
  mixp_tensor_release(ct);
  mixp_tensor_release(t);

  mixp_tensor *y = SENTINEL;
  MT_FAILS(mixp_contiguous(NULL, &y), MIXP_ERR_INVALID_ARGUMENT, "mixp_contiguous");
  MT_FAILS2(mixp_contiguous(x, NULL), MIXP_ERR_INVALID_ARGUMENT, "mixp_contiguous", "out");
  assert_ptr_equal(y, SENTINEL);
  mixp_tensor_release(x);
}

static void test_views_share_storage(void **state) {
  mixp_session *s = (mixp_session *)*state;
  int64_t shape[2] = {3, 4};
  mixp_tensor *x = iota(s, shape, 2), *t = NULL, *p = NULL, *sl = NULL, *val = NULL;
  int64_t one = 1;
  MT_OK(mixp_tensor_full(s, MIXP_F64, &one, 1, 100.0, &val));
  /* Column 2 through transpose + slice. */
  MT_OK(mixp_transpose(x, 0, 1, &t));
  MT_OK(mixp_slice(t, 0, 2, 3, 1, &sl));
  MT_OK(mixp_tensor_copy_(sl, val));
  mixp_tensor_release(sl);
  /* Element (2,0) through permute + slices. */
  const int perm[2] = {1, 0};
  MT_OK(mixp_permute(x, perm, 2, &p));
  mixp_tensor *a = NULL, *b = NULL;
  MT_OK(mixp_slice(p, 0, 0, 1, 1, &a));
  MT_OK(mixp_slice(a, 1, 2, 3, 1, &b));
  mixp_tensor *m1 = NULL;
  MT_OK(mixp_tensor_full(s, MIXP_F64, &one, 1, -1.0, &m1));
  MT_OK(mixp_tensor_copy_(b, m1));
  double *xv = mt_values(x);
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 4; ++j) {
      double want = (j == 2) ? 100.0 : (i == 2 && j == 0) ? -1.0 : (double)(i * 4 + j);
      assert_true(xv[i * 4 + j] == want);
    }
  free(xv);
  /* And the views see the new values. */
  double *tv = mt_values(t);
  assert_true(tv[2 * 3 + 1] == 100.0 && tv[0 * 3 + 2] == -1.0);
  free(tv);
  mixp_tensor_release(m1);
  mixp_tensor_release(b);
  mixp_tensor_release(a);
  mixp_tensor_release(p);
  mixp_tensor_release(t);
  mixp_tensor_release(val);
  mixp_tensor_release(x);
}

/* ---- gradients ---------------------------------------------------------------------- */

typedef struct reshape_ctx {
  int64_t shape[MIXP_MAX_DIMS];
  int ndim;
  int transpose_first;
} reshape_ctx;

static mixp_status f_reshape(mixp_tensor **in, int n, void *ctx, mixp_tensor **out) {
  (void)n;
  reshape_ctx *c = (reshape_ctx *)ctx;
  if (!c->transpose_first) return mixp_reshape(in[0], c->shape, c->ndim, out);
  mixp_tensor *t = NULL;
  mixp_status st = mixp_transpose(in[0], 0, 1, &t);
  if (st == MIXP_OK) st = mixp_reshape(t, c->shape, c->ndim, out);
  mixp_tensor_release(t);
  return st;
}

static mixp_status f_transpose(mixp_tensor **in, int n, void *ctx, mixp_tensor **out) {
  (void)n;
  const int *d = (const int *)ctx;
  return mixp_transpose(in[0], d[0], d[1], out);
}

static mixp_status f_permute(mixp_tensor **in, int n, void *ctx, mixp_tensor **out) {
  (void)n;
  return mixp_permute(in[0], (const int *)ctx, mixp_tensor_ndim(in[0]), out);
}

static mixp_status f_slice(mixp_tensor **in, int n, void *ctx, mixp_tensor **out) {
  (void)n;
  const int64_t *a = (const int64_t *)ctx; /* dim, start, end, step */
  return mixp_slice(in[0], (int)a[0], a[1], a[2], a[3], out);
}

/* Two overlapping slices of the same input, multiplied: gradients from both
 * views must add up in the shared base. */
static mixp_status f_two_slices(mixp_tensor **in, int n, void *ctx, mixp_tensor **out) {
  (void)n;
  (void)ctx;
  mixp_tensor *a = NULL, *b = NULL;
  mixp_status st = mixp_slice(in[0], 1, 0, 3, 1, &a);
  if (st == MIXP_OK) st = mixp_slice(in[0], 1, 1, 4, 1, &b);
  if (st == MIXP_OK) st = mixp_mul(a, b, out);
  mixp_tensor_release(a);
  mixp_tensor_release(b);
  return st;
}

static mixp_status f_contiguous(mixp_tensor **in, int n, void *ctx, mixp_tensor **out) {
  (void)n;
  (void)ctx;
  mixp_tensor *t = NULL;
  mixp_status st = mixp_transpose(in[0], 0, 1, &t);
  if (st == MIXP_OK) st = mixp_contiguous(t, out);
  mixp_tensor_release(t);
  return st;
}

static mixp_status f_cast_chain(mixp_tensor **in, int n, void *ctx, mixp_tensor **out) {
  (void)n;
  mixp_dtype mid = *(const mixp_dtype *)ctx;
  mixp_tensor *t = NULL;
  mixp_status st = mixp_cast(in[0], mid, &t);
  if (st == MIXP_OK) st = mixp_cast(t, MIXP_F64, out);
  mixp_tensor_release(t);
  return st;
}

static void test_gradients(void **state) {
  mixp_session *s = (mixp_session *)*state;
  double v[24];
  mt_fill(v, 24, -1.0, 1.0, 11);
  int64_t s234[3] = {2, 3, 4}, s46[2] = {4, 6};

  mt_input in3 = {v, s234, 3, 1, MIXP_F64};
  reshape_ctx rc = {{6, -1}, 2, 0};
  mt_gradcheck(s, f_reshape, &rc, &in3, 1, 1e-7, 1e-6);
  mt_input in2 = {v, s46, 2, 1, MIXP_F64};
  reshape_ctx rc2 = {{3, 8}, 2, 1}; /* non-contiguous input: the copying path */
  mt_gradcheck(s, f_reshape, &rc2, &in2, 1, 1e-7, 1e-6);

  int td[2] = {0, 2};
  mt_gradcheck(s, f_transpose, td, &in3, 1, 1e-7, 1e-6);
  int perm[3] = {1, 2, 0};
  mt_gradcheck(s, f_permute, perm, &in3, 1, 1e-7, 1e-6);
  int64_t sl[4] = {2, 1, 4, 2};
  mt_gradcheck(s, f_slice, sl, &in3, 1, 1e-7, 1e-6);
  int64_t sl2[4] = {-2, -2, 100, 1};
  mt_gradcheck(s, f_slice, sl2, &in3, 1, 1e-7, 1e-6);
  mt_gradcheck(s, f_contiguous, NULL, &in2, 1, 1e-7, 1e-6);
  mt_gradcheck(s, f_two_slices, NULL, &in2, 1, 1e-7, 1e-6);

  /* Through f32: loose tolerance (f32 resolution over a 1e-6 step). */
  double small[24];
  for (int i = 0; i < 24; ++i) small[i] = 0.01 + 0.05 * fabs(v[i]);
  mt_input ins = {small, s46, 2, 1, MIXP_F64};
  mixp_dtype mid = MIXP_F32;
  mt_gradcheck(s, f_cast_chain, &mid, &ins, 1, 5e-2, 1e-2);
  /* And check the cast's backward exactly: the gradient of sum(w * cast(x))
   * is w rounded to f32, within f32 precision. */
  mixp_tensor *x = mt_tensor(s, MIXP_F64, small, s46, 2), *y = NULL, *w = NULL, *p = NULL,
              *l = NULL, *g = NULL;
  MT_OK(mixp_tensor_set_requires_grad(x, 1));
  MT_OK(mixp_cast(x, MIXP_F32, &y));
  assert_int_equal(mixp_tensor_dtype(y), MIXP_F32);
  double wv[24];
  mt_fill(wv, 24, -2.0, 2.0, 4);
  w = mt_tensor(s, MIXP_F32, wv, s46, 2);
  MT_OK(mixp_mul(y, w, &p));
  MT_OK(mixp_sum(p, NULL, 0, 0, &l));
  MT_OK(mixp_backward(l, NULL));
  MT_OK(mixp_tensor_grad(x, &g));
  assert_non_null(g);
  assert_int_equal(mixp_tensor_dtype(g), MIXP_F64);
  double *gv = mt_values(g);
  mt_assert_close(gv, wv, 24, 0, 1e-6);
  free(gv);
  mixp_tensor_release(g);
  mixp_tensor_release(l);
  mixp_tensor_release(p);
  mixp_tensor_release(w);
  mixp_tensor_release(y);
  mixp_tensor_release(x);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_reshape),
      cmocka_unit_test(test_transpose),
      cmocka_unit_test(test_permute),
      cmocka_unit_test(test_slice),
      cmocka_unit_test(test_contiguous),
      cmocka_unit_test(test_views_share_storage),
      cmocka_unit_test(test_gradients),
  };
  return cmocka_run_group_tests(tests, mt_setup_session, mt_teardown_session);
}
