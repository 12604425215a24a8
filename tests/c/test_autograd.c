/* Autograd: requires_grad rules, backward with and without seeds, grad
 * accumulation, zero_grad, detach, no-grad regions, freed graphs, diamonds.
 * Graphs are built from matmul, transpose and cast, whose gradients have
 * closed forms computed here. */
#include "test_util.h"

static mixp_tensor *tensor2(mixp_session *s, mixp_dtype dt, const double *v, int64_t r, int64_t c) {
  int64_t shape[2] = {r, c};
  return mt_tensor(s, dt, v, shape, 2);
}

/* The gradient of t as doubles (NULL when there is none). */
static double *grad_values(const mixp_tensor *t) {
  mixp_tensor *g = NULL;
  MT_OK(mixp_tensor_grad(t, &g));
  if (!g) return NULL;
  assert_int_equal(mixp_tensor_dtype(g), mixp_tensor_dtype(t));
  assert_int_equal(mixp_tensor_numel(g), mixp_tensor_numel(t));
  double *v = mt_values(g);
  mixp_tensor_release(g);
  return v;
}

static void expect_grad(const mixp_tensor *t, const double *want, int64_t n, double tol) {
  double *g = grad_values(t);
  if (!g) {
    print_error("expected a gradient, found none\n");
    fail();
  }
  mt_assert_close(g, want, n, tol, 0);
  free(g);
}

static void expect_no_grad(const mixp_tensor *t) {
  mixp_tensor *g = (mixp_tensor *)(uintptr_t)1;
  MT_OK(mixp_tensor_grad(t, &g));
  assert_null(g);
}

static const double XV[3] = {0.5, -1.25, 2.0};
static const double WV[3] = {3.0, 0.25, -1.5};

/* loss = x[1,3] @ w[3,1] (one element); d loss / dx = w^T. */
static mixp_tensor *dot_loss(mixp_tensor *x, mixp_tensor *w) {
  mixp_tensor *l = NULL;
  MT_OK(mixp_matmul(x, w, &l));
  return l;
}

/* ---- requires_grad ------------------------------------------------------------- */

static void test_requires_grad_rules(void **state) {
  mixp_session *s = (mixp_session *)*state;
  mixp_tensor *x = tensor2(s, MIXP_F32, XV, 1, 3), *w = tensor2(s, MIXP_F32, WV, 3, 1);
  assert_int_equal(mixp_tensor_requires_grad(x), 0);
  MT_OK(mixp_tensor_set_requires_grad(x, 1));
  assert_int_equal(mixp_tensor_requires_grad(x), 1);
  assert_int_equal(mixp_tensor_is_leaf(x), 1);
  MT_OK(mixp_tensor_set_requires_grad(x, 0));
  assert_int_equal(mixp_tensor_requires_grad(x), 0);
  MT_OK(mixp_tensor_set_requires_grad(x, 1));

  /* Results of recorded operations are non-leaves that require grad. */
  mixp_tensor *y = dot_loss(x, w);
  assert_int_equal(mixp_tensor_requires_grad(y), 1);
  assert_int_equal(mixp_tensor_is_leaf(y), 0);
  MT_FAILS2(mixp_tensor_set_requires_grad(y, 1), MIXP_ERR_STATE,
            "mixp_tensor_set_requires_grad", "leaf");
  MT_FAILS(mixp_tensor_set_requires_grad(y, 0), MIXP_ERR_STATE, "mixp_tensor_set_requires_grad");
  assert_int_equal(mixp_tensor_requires_grad(y), 1);
  mixp_tensor_release(y);

  /* Operations on tensors that need no grad record nothing. */
  mixp_tensor *z = dot_loss(w, x); /* [3,3]; w does not require grad but x does */
  assert_int_equal(mixp_tensor_requires_grad(z), 1);
  mixp_tensor_release(z);
  mixp_tensor *wt = NULL, *ww = NULL;
  MT_OK(mixp_transpose(w, 0, 1, &wt));
  MT_OK(mixp_matmul(wt, w, &ww));
  assert_int_equal(mixp_tensor_requires_grad(ww), 0);
  assert_int_equal(mixp_tensor_is_leaf(ww), 1);
  mixp_tensor_release(ww);
  mixp_tensor_release(wt);

  /* Integer tensors cannot require grad. */
  int64_t n = 3;
  mixp_tensor *xi = NULL;
  MT_OK(mixp_tensor_zeros(s, MIXP_I32, &n, 1, &xi));
  MT_FAILS2(mixp_tensor_set_requires_grad(xi, 1), MIXP_ERR_DTYPE,
            "mixp_tensor_set_requires_grad", "i32");
  assert_int_equal(mixp_tensor_requires_grad(xi), 0);
  mixp_tensor_release(xi);
  MT_OK(mixp_tensor_zeros(s, MIXP_I64, &n, 1, &xi));
  MT_FAILS(mixp_tensor_set_requires_grad(xi, 1), MIXP_ERR_DTYPE, "mixp_tensor_set_requires_grad");
  mixp_tensor_release(xi);
  /* Every float dtype can. */
  const mixp_dtype fl[4] = {MIXP_F32, MIXP_F64, MIXP_F16, MIXP_BF16};
  for (int d = 0; d < 4; ++d) {
    mixp_tensor *f = NULL;
    MT_OK(mixp_tensor_zeros(s, fl[d], &n, 1, &f));
    MT_OK(mixp_tensor_set_requires_grad(f, 1));
    mixp_tensor_release(f);
  }

  MT_FAILS(mixp_tensor_set_requires_grad(NULL, 1), MIXP_ERR_INVALID_ARGUMENT,
           "mixp_tensor_set_requires_grad");
  assert_int_equal(mixp_tensor_requires_grad(NULL), 0);
  assert_int_equal(mixp_tensor_is_leaf(NULL), 0);
  mixp_tensor_release(x);
  mixp_tensor_release(w);
}

/* ---- backward ---------------------------------------------------------------------- */

static void test_backward_scalar(void **state) {
  mixp_session *s = (mixp_session *)*state;
  mixp_tensor *x = tensor2(s, MIXP_F32, XV, 1, 3), *w = tensor2(s, MIXP_F32, WV, 3, 1);
  MT_OK(mixp_tensor_set_requires_grad(x, 1));
  expect_no_grad(x);
  mixp_tensor *l = dot_loss(x, w);
  MT_OK(mixp_backward(l, NULL));
  expect_grad(x, WV, 3, 0);
  expect_no_grad(w); /* w does not require grad */
  /* The gradient is a new reference each time. */
  mixp_tensor *g1 = NULL, *g2 = NULL;
  MT_OK(mixp_tensor_grad(x, &g1));
  MT_OK(mixp_tensor_grad(x, &g2));
  mixp_tensor_release(g1);
  mixp_tensor_release(g2);
  expect_grad(x, WV, 3, 0);
  mixp_tensor_release(l);

  MT_FAILS(mixp_tensor_grad(NULL, &g1), MIXP_ERR_INVALID_ARGUMENT, "mixp_tensor_grad");
  MT_FAILS2(mixp_tensor_grad(x, NULL), MIXP_ERR_INVALID_ARGUMENT, "mixp_tensor_grad", "out");
  MT_FAILS(mixp_backward(NULL, NULL), MIXP_ERR_INVALID_ARGUMENT, "mixp_backward");
  mixp_tensor_release(x);
  mixp_tensor_release(w);
}

static void test_backward_leaf_itself(void **state) {
  mixp_session *s = (mixp_session *)*state;
  const double v = 4.0;
  mixp_tensor *x = tensor2(s, MIXP_F64, &v, 1, 1);
  MT_OK(mixp_tensor_set_requires_grad(x, 1));
  MT_OK(mixp_backward(x, NULL));
  const double one = 1.0;
  expect_grad(x, &one, 1, 0);
  mixp_tensor_release(x);
}

static void test_backward_not_requiring(void **state) {
  mixp_session *s = (mixp_session *)*state;
  mixp_tensor *x = tensor2(s, MIXP_F32, XV, 1, 3), *w = tensor2(s, MIXP_F32, WV, 3, 1);
  mixp_tensor *l = dot_loss(x, w);
  MT_FAILS2(mixp_backward(l, NULL), MIXP_ERR_STATE, "mixp_backward", "grad");
  MT_FAILS(mixp_backward(x, NULL), MIXP_ERR_STATE, "mixp_backward");
  mixp_tensor_release(l);
  mixp_tensor_release(x);
  mixp_tensor_release(w);
}

static void test_backward_seed(void **state) {
  mixp_session *s = (mixp_session *)*state;
  /* y = x[2,3] @ w[3,2]; with seed G, dx = G w^T. */
  const double xv[6] = {1, 2, 3, -1, 0.5, 2};
  const double wv[6] = {0.5, -1, 2, 0.25, -0.75, 1.5};
  const double gv[4] = {1, -2, 0.5, 3};
  mixp_tensor *x = tensor2(s, MIXP_F64, xv, 2, 3), *w = tensor2(s, MIXP_F64, wv, 3, 2);
  MT_OK(mixp_tensor_set_requires_grad(x, 1));
  MT_OK(mixp_tensor_set_requires_grad(w, 1));
  mixp_tensor *y = NULL;
  MT_OK(mixp_matmul(x, w, &y));

  MT_FAILS2(mixp_backward(y, NULL), MIXP_ERR_SHAPE, "mixp_backward", "[2,2]");
  expect_no_grad(x);
  int64_t bad = 4;
  mixp_tensor *seed_bad = NULL, *seed_bad2 = NULL;
  MT_OK(mixp_tensor_ones(s, MIXP_F64, &bad, 1, &seed_bad));
  MT_FAILS2(mixp_backward(y, seed_bad), MIXP_ERR_SHAPE, "mixp_backward", "[4]");
  assert_non_null(strstr(mixp_last_error(), "[2,2]"));
  seed_bad2 = tensor2(s, MIXP_F64, gv, 1, 4);
  MT_FAILS(mixp_backward(y, seed_bad2), MIXP_ERR_SHAPE, "mixp_backward");
  expect_no_grad(x);
  expect_no_grad(w);

  /* The failed calls left the graph intact; an F32 seed is converted. */
  mixp_tensor *seed = tensor2(s, MIXP_F32, gv, 2, 2);
  MT_OK(mixp_backward(y, seed));
  double want_x[6], want_w[6];
  for (int i = 0; i < 2; ++i)
    for (int k = 0; k < 3; ++k) {
      double acc = 0;
      for (int j = 0; j < 2; ++j) acc += gv[i * 2 + j] * wv[k * 2 + j];
      want_x[i * 3 + k] = acc;
    }
  for (int k = 0; k < 3; ++k)
    for (int j = 0; j < 2; ++j) {
      double acc = 0;
      for (int i = 0; i < 2; ++i) acc += xv[i * 3 + k] * gv[i * 2 + j];
      want_w[k * 2 + j] = acc;
    }
  expect_grad(x, want_x, 6, 1e-12);
  expect_grad(w, want_w, 6, 1e-12);

  mixp_tensor_release(seed);
  mixp_tensor_release(seed_bad);
  mixp_tensor_release(seed_bad2);
  mixp_tensor_release(y);
  mixp_tensor_release(x);
  mixp_tensor_release(w);
}

static void test_accumulate_and_zero_grad(void **state) {
  mixp_session *s = (mixp_session *)*state;
  mixp_tensor *x = tensor2(s, MIXP_F32, XV, 1, 3), *w = tensor2(s, MIXP_F32, WV, 3, 1);
  MT_OK(mixp_tensor_set_requires_grad(x, 1));
  for (int rep = 1; rep <= 3; ++rep) {
    mixp_tensor *l = dot_loss(x, w);
    MT_OK(mixp_backward(l, NULL));
    mixp_tensor_release(l);
    double want[3];
    for (int i = 0; i < 3; ++i) want[i] = rep * WV[i];
    expect_grad(x, want, 3, 0);
  }
  MT_OK(mixp_tensor_zero_grad(x));
  expect_no_grad(x);
  mixp_tensor *l = dot_loss(x, w);
  MT_OK(mixp_backward(l, NULL));
  mixp_tensor_release(l);
  expect_grad(x, WV, 3, 0);
  MT_OK(mixp_tensor_zero_grad(w)); /* no grad: harmless */
  MT_FAILS(mixp_tensor_zero_grad(NULL), MIXP_ERR_INVALID_ARGUMENT, "mixp_tensor_zero_grad");

  /* A gradient reference taken before zero_grad stays valid and unchanged. */
  mixp_tensor *g = NULL;
  MT_OK(mixp_tensor_grad(x, &g));
  MT_OK(mixp_tensor_zero_grad(x));
  double *gv = mt_values(g);
  mt_assert_close(gv, WV, 3, 0, 0);
  free(gv);
  mixp_tensor_release(g);
  mixp_tensor_release(x);
  mixp_tensor_release(w);
}

static void test_freed_graph(void **state) {
  mixp_session *s = (mixp_session *)*state;
  mixp_tensor *x = tensor2(s, MIXP_F32, XV, 1, 3), *w = tensor2(s, MIXP_F32, WV, 3, 1);
  MT_OK(mixp_tensor_set_requires_grad(x, 1));
  mixp_tensor *l = dot_loss(x, w);
  MT_OK(mixp_backward(l, NULL));
  MT_FAILS2(mixp_backward(l, NULL), MIXP_ERR_STATE, "mixp_backward", "freed");
  expect_grad(x, WV, 3, 0); /* unchanged by the failed call */
  /* A graph sharing a freed part fails too, accumulating nothing. */
  mixp_tensor *two = NULL;
  MT_OK(mixp_matmul(l, l, &two));
  MT_FAILS2(mixp_backward(two, NULL), MIXP_ERR_STATE, "mixp_backward", "freed");
  expect_grad(x, WV, 3, 0);
  mixp_tensor_release(two);
  mixp_tensor_release(l);
  mixp_tensor_release(x);
  mixp_tensor_release(w);
}

static void test_diamond(void **state) {
  mixp_session *s = (mixp_session *)*state;
  /* y = x x^T = sum x_i^2: dy/dx = 2x. */
  mixp_tensor *x = tensor2(s, MIXP_F64, XV, 1, 3), *xt = NULL, *y = NULL;
  MT_OK(mixp_tensor_set_requires_grad(x, 1));
  MT_OK(mixp_transpose(x, 0, 1, &xt));
  MT_OK(mixp_matmul(x, xt, &y));
  double v = 0;
  MT_OK(mixp_tensor_item(y, &v));
  assert_true(fabs(v - (0.25 + 1.5625 + 4.0)) < 1e-12);
  MT_OK(mixp_backward(y, NULL));
  double want[3] = {2 * XV[0], 2 * XV[1], 2 * XV[2]};
  expect_grad(x, want, 3, 1e-12);
  mixp_tensor_release(y);
  mixp_tensor_release(xt);
  MT_OK(mixp_tensor_zero_grad(x));

  /* A shared non-leaf: h = cast(x, f32) used twice, then back to f64. */
  mixp_tensor *h = NULL, *ht = NULL, *hh = NULL, *out = NULL;
  MT_OK(mixp_cast(x, MIXP_F32, &h));
  MT_OK(mixp_transpose(h, 0, 1, &ht));
  MT_OK(mixp_matmul(ht, h, &hh)); /* [3,3] = h^T h */
  int64_t flat[2] = {1, 9};
  mixp_tensor *hf = NULL, *ones = NULL, *o64 = NULL;
  MT_OK(mixp_reshape(hh, flat, 2, &hf));
  int64_t os[2] = {9, 1};
  MT_OK(mixp_tensor_ones(s, MIXP_F32, os, 2, &ones));
  MT_OK(mixp_matmul(hf, ones, &out)); /* sum_ij x_i x_j = (sum x)^2 */
  MT_OK(mixp_cast(out, MIXP_F64, &o64));
  MT_OK(mixp_backward(o64, NULL));
  double sx = XV[0] + XV[1] + XV[2];
  double want2[3] = {2 * sx, 2 * sx, 2 * sx};
  expect_grad(x, want2, 3, 1e-5);
  mixp_tensor_release(o64);
  mixp_tensor_release(out);
  mixp_tensor_release(ones);
  mixp_tensor_release(hf);
  mixp_tensor_release(hh);
  mixp_tensor_release(ht);
  mixp_tensor_release(h);
  mixp_tensor_release(x);
}

static void test_detach(void **state) {
  mixp_session *s = (mixp_session *)*state;
  mixp_tensor *x = tensor2(s, MIXP_F32, XV, 1, 3), *w = tensor2(s, MIXP_F32, WV, 3, 1);
  MT_OK(mixp_tensor_set_requires_grad(x, 1));
  mixp_tensor *y = NULL, *d = NULL, *dx = NULL;
  MT_OK(mixp_matmul(w, x, &y)); /* [3,3], non-leaf */
  MT_OK(mixp_tensor_detach(y, &d));
  assert_int_equal(mixp_tensor_requires_grad(d), 0);
  assert_int_equal(mixp_tensor_is_leaf(d), 1);
  assert_int_equal(mixp_tensor_dim(d, 0), 3);
  /* Shares storage: writing through the detached tensor changes y. */
  int64_t one = 1;
  mixp_tensor *seven = NULL;
  MT_OK(mixp_tensor_full(s, MIXP_F32, &one, 1, 7.0, &seven));
  MT_OK(mixp_tensor_copy_(d, seven));
  double *yv = mt_values(y);
  for (int i = 0; i < 9; ++i) assert_true(yv[i] == 7.0);
  free(yv);
  /* Operations on it record nothing. */
  mixp_tensor *z = NULL;
  MT_OK(mixp_matmul(d, w, &z));
  assert_int_equal(mixp_tensor_requires_grad(z), 0);
  mixp_tensor_release(z);
  /* Detaching a leaf gives a leaf that does not require grad. */
  MT_OK(mixp_tensor_detach(x, &dx));
  assert_int_equal(mixp_tensor_requires_grad(dx), 0);
  assert_int_equal(mixp_tensor_requires_grad(x), 1);

  mixp_tensor *o = (mixp_tensor *)(uintptr_t)9;
  MT_FAILS(mixp_tensor_detach(NULL, &o), MIXP_ERR_INVALID_ARGUMENT, "mixp_tensor_detach");
  MT_FAILS2(mixp_tensor_detach(y, NULL), MIXP_ERR_INVALID_ARGUMENT, "mixp_tensor_detach", "out");
  assert_ptr_equal(o, (mixp_tensor *)(uintptr_t)9);
  mixp_tensor_release(seven);
  mixp_tensor_release(dx);
  mixp_tensor_release(d);
  mixp_tensor_release(y);
  mixp_tensor_release(x);
  mixp_tensor_release(w);
}

static void test_no_grad_region(void **state) {
  mixp_session *s = (mixp_session *)*state;
  mixp_tensor *x = tensor2(s, MIXP_F32, XV, 1, 3), *w = tensor2(s, MIXP_F32, WV, 3, 1);
  MT_OK(mixp_tensor_set_requires_grad(x, 1));
  MT_OK(mixp_no_grad_begin(s));
  mixp_tensor *l = dot_loss(x, w), *c = NULL, *t = NULL;
  assert_int_equal(mixp_tensor_requires_grad(l), 0);
  assert_int_equal(mixp_tensor_is_leaf(l), 1);
  MT_OK(mixp_cast(x, MIXP_F64, &c));
  assert_int_equal(mixp_tensor_requires_grad(c), 0);
  MT_OK(mixp_transpose(x, 0, 1, &t));
  assert_int_equal(mixp_tensor_requires_grad(t), 0);
  MT_FAILS(mixp_backward(l, NULL), MIXP_ERR_STATE, "mixp_backward");
  /* Leaves may still be marked inside the region. */
  MT_OK(mixp_tensor_set_requires_grad(w, 1));
  MT_OK(mixp_no_grad_end(s));
  mixp_tensor_release(t);
  mixp_tensor_release(c);
  mixp_tensor_release(l);
  expect_no_grad(x);

  /* After the region, recording resumes; the region's result is a constant. */
  l = dot_loss(x, w);
  assert_int_equal(mixp_tensor_requires_grad(l), 1);
  MT_OK(mixp_backward(l, NULL));
  expect_grad(x, WV, 3, 0);
  expect_grad(w, XV, 3, 0);
  mixp_tensor_release(l);
  mixp_tensor_release(x);
  mixp_tensor_release(w);
}

/* Half-precision leaves get gradients of their own dtype. */
static void test_half_grads(void **state) {
  mixp_session *s = (mixp_session *)*state;
  const mixp_dtype hs[2] = {MIXP_F16, MIXP_BF16};
  for (int d = 0; d < 2; ++d) {
    mixp_tensor *x = tensor2(s, hs[d], XV, 1, 3), *w = tensor2(s, hs[d], WV, 3, 1);
    MT_OK(mixp_tensor_set_requires_grad(x, 1));
    mixp_tensor *l = dot_loss(x, w);
    assert_int_equal(mixp_tensor_dtype(l), hs[d]);
    MT_OK(mixp_backward(l, NULL));
    expect_grad(x, WV, 3, 0); /* WV values are exact in both types */
    mixp_tensor_release(l);
    mixp_tensor_release(x);
    mixp_tensor_release(w);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_requires_grad_rules),
      cmocka_unit_test(test_backward_scalar),
      cmocka_unit_test(test_backward_leaf_itself),
      cmocka_unit_test(test_backward_not_requiring),
      cmocka_unit_test(test_backward_seed),
      cmocka_unit_test(test_accumulate_and_zero_grad),
      cmocka_unit_test(test_freed_graph),
      cmocka_unit_test(test_diamond),
      cmocka_unit_test(test_detach),
      cmocka_unit_test(test_no_grad_region),
      cmocka_unit_test(test_half_grads),
  };
  return cmocka_run_group_tests(tests, mt_setup_session, mt_teardown_session);
}
