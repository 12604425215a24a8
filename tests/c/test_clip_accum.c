/* Clipping by global norm (hand-computed norms, no-op below the bound,
 * non-finite norms skipping the next step, interplay with the scaler) and
 * gradient accumulation under a scaler (4 micro-batches = one 4x batch). */
#include "test_util.h"

/* Accumulates exactly g into p.grad (backward of sum(p * g)). */
static void add_grad(mixp_tensor *p, const double *g) {
  int64_t shape[1] = {mixp_tensor_numel(p)};
  mixp_tensor *gt = mt_tensor(mixp_tensor_session(p), mixp_tensor_dtype(p), g, shape, 1);
  mixp_tensor *prod = NULL, *loss = NULL;
  MT_OK(mixp_mul(p, gt, &prod));
  MT_OK(mixp_sum(prod, NULL, 0, 0, &loss));
  MT_OK(mixp_backward(loss, NULL));
  mixp_tensor_release(loss);
  mixp_tensor_release(prod);
  mixp_tensor_release(gt);
}

/* Exact equality that also accepts Inf == Inf and NaN == NaN. */
static void assert_same(const double *got, const double *want, int n) {
  for (int i = 0; i < n; ++i)
    if (!(got[i] == want[i]) && !(isnan(got[i]) && isnan(want[i]))) {
      print_error("element %d: got %.17g want %.17g\n", i, got[i], want[i]);
      fail();
    }
}

static double item(const mixp_tensor *t) {
  double v = 0;
  MT_OK(mixp_tensor_item(t, &v));
  return v;
}

static void test_clip_hand_norm(void **state) {
  (void)state;
  mixp_session *s = mt_session();
  const double z3[3] = {0, 0, 0}, z2[2] = {0, 0};
  mixp_tensor *p[2] = {mt_param(s, MIXP_F32, z3, 3), mt_param(s, MIXP_F16, z2, 2)};
  mixp_optimizer *opt = mt_sgd(s, p, 2, 0.1);
  const double g1[3] = {3, 4, 0}, g2[2] = {12, 0};
  add_grad(p[0], g1);
  add_grad(p[1], g2);
  mixp_tensor *norm = NULL;
  MT_OK(mixp_clip_grad_norm(opt, 6.5, &norm));
  assert_int_equal(mixp_tensor_dtype(norm), MIXP_F32);
  assert_int_equal(mixp_tensor_numel(norm), 1);
  assert_true(item(norm) == 13.0); /* sqrt(9 + 16 + 144) */
  const double coef = 6.5 / (13.0 + 1e-6);
  double w1[3], w2[2];
  for (int i = 0; i < 3; ++i) w1[i] = g1[i] * coef;
  for (int i = 0; i < 2; ++i) w2[i] = g2[i] * coef;
  double *a = mt_grad_values(p[0]), *b = mt_grad_values(p[1]);
  mt_assert_close(a, w1, 3, 1e-7, 1e-6);
  mt_assert_close(b, w2, 2, 0.0, 1e-3); /* fp16 rounding */
  free(a);
  free(b);
  mixp_tensor_release(norm);

  /* Below the bound: a no-op (coef exactly 1); total_norm may be NULL. */
  MT_OK(mixp_optimizer_zero_grad(opt));
  add_grad(p[0], g1);
  add_grad(p[1], g2);
  MT_OK(mixp_clip_grad_norm(opt, 100.0, NULL));
  a = mt_grad_values(p[0]);
  b = mt_grad_values(p[1]);
  mt_assert_close(a, g1, 3, 0.0, 0.0);
  mt_assert_close(b, g2, 2, 0.0, 0.0);
  free(a);
  free(b);

  /* No gradient at all: norm 0, nothing to do. */
  MT_OK(mixp_optimizer_zero_grad(opt));
  MT_OK(mixp_clip_grad_norm(opt, 1.0, &norm));
  assert_true(item(norm) == 0.0);
  mixp_tensor_release(norm);

  /* A larger tensor (many blocks, OpenMP) against a double reference. */
  enum { N = 100000 };
  double *big = (double *)malloc(N * sizeof(double)), *zero = (double *)calloc(N, sizeof(double));
  mt_fill(big, N, -1, 1, 42);
  mixp_tensor *pb = mt_param(s, MIXP_F32, zero, N);
  mixp_optimizer *ob = mt_sgd(s, &pb, 1, 0.1);
  add_grad(pb, big);
  double ss = 0;
  for (int i = 0; i < N; ++i) {
    float f = (float)big[i];
    ss += (double)f * f;
  }
  MT_OK(mixp_clip_grad_norm(ob, 1.0, &norm));
  const double want = sqrt(ss);
  mt_assert_close((double[]){item(norm)}, &want, 1, 0.0, 1e-6);
  double *gb = mt_grad_values(pb);
  double sumsq = 0;
  for (int i = 0; i < N; ++i) sumsq += gb[i] * gb[i];
  assert_true(fabs(sqrt(sumsq) - 1.0) < 1e-4);
  free(gb);
  free(big);
  free(zero);
  mixp_tensor_release(norm);
  mixp_optimizer_destroy(ob);
  mixp_tensor_release(pb);

  for (int i = 0; i < 2; ++i) mixp_tensor_release(p[i]);
  mixp_optimizer_destroy(opt);
  mixp_session_destroy(s);
}

static void test_non_finite_norm_skips_step(void **state) {
  (void)state;
  mixp_session *s = mt_session();
  const double v[2] = {1.0, 2.0};
  mixp_tensor *p = mt_param(s, MIXP_F32, v, 2);
  mixp_optimizer *opt = mt_sgd(s, &p, 1, 0.5);
  const double cases[3][2] = {{INFINITY, 1.0}, {NAN, 1.0}, {0x1p66, 0x1p66} /* squares overflow fp32 */};
  for (int k = 0; k < 3; ++k) {
    MT_OK(mixp_optimizer_zero_grad(opt));
    add_grad(p, cases[k]);
    mixp_tensor *norm = NULL;
    MT_OK(mixp_clip_grad_norm(opt, 1.0, &norm));
    assert_false(isfinite(item(norm)));
    mixp_tensor_release(norm);
    double *g = mt_grad_values(p);
    assert_same(g, cases[k], 2); /* unchanged */
    free(g);
    MT_OK(mixp_optimizer_step(opt)); /* skipped on the device */
    double *pv = mt_values(p);
    mt_assert_close(pv, v, 2, 0.0, 0.0);
    free(pv);
  }
  /* The flag was consumed: the next step applies. */
  MT_OK(mixp_optimizer_zero_grad(opt));
  const double g[2] = {1.0, 1.0};
  add_grad(p, g);
  MT_OK(mixp_clip_grad_norm(opt, 1e6, NULL));
  MT_OK(mixp_optimizer_step(opt));
  double *pv = mt_values(p);
  const double want[2] = {0.5, 1.5};
  mt_assert_close(pv, want, 2, 0.0, 0.0);
  free(pv);
  mixp_optimizer_destroy(opt);
  mixp_tensor_release(p);
  mixp_session_destroy(s);
}

static void test_clip_with_scaler(void **state) {
  (void)state;
  mixp_session *s = mt_session();
  const double v[2] = {1.0, 2.0};
  mixp_tensor *p = mt_param(s, MIXP_F32, v, 2);
  mixp_optimizer *opt = mt_sgd(s, &p, 1, 0.5);
  mixp_grad_scaler_options so;
  mixp_grad_scaler_options_init(&so);
  so.init_scale = 1024.0;
  mixp_grad_scaler *g = NULL;
  MT_OK(mixp_grad_scaler_create(s, &so, &g));

  /* unscale, then clip: the true norm (5), not the scaled one. */
  const double c[2] = {3.0, 4.0};
  const int64_t shape[1] = {2};
  mixp_tensor *ct = mt_tensor(s, MIXP_F32, c, shape, 1), *prod = NULL, *loss = NULL,
              *scaled = NULL, *norm = NULL;
  MT_OK(mixp_mul(p, ct, &prod));
  MT_OK(mixp_sum(prod, NULL, 0, 0, &loss));
  MT_OK(mixp_grad_scaler_scale(g, loss, &scaled));
  MT_OK(mixp_backward(scaled, NULL));
  MT_OK(mixp_grad_scaler_unscale(g, opt));
  MT_OK(mixp_clip_grad_norm(opt, 1.0, &norm));
  assert_true(item(norm) == 5.0);
  MT_OK(mixp_grad_scaler_step(g, opt));
  MT_OK(mixp_grad_scaler_update(g));
  double *pv = mt_values(p);
  const double coef = (double)(1.0f / (5.0f + 1e-6f));
  const double want[2] = {1.0 - 0.5 * 3.0 * coef, 2.0 - 0.5 * 4.0 * coef};
  mt_assert_close(pv, want, 2, 1e-6, 0.0);
  free(pv);
  int found = -1;
  MT_OK(mixp_grad_scaler_found_inf(g, &found));
  assert_int_equal(found, 0);
  mixp_tensor_release(norm);
  mixp_tensor_release(scaled);
  mixp_tensor_release(loss);
  mixp_tensor_release(prod);
  mixp_tensor_release(ct);

  /* Finite gradients whose norm overflows fp32: unscale finds nothing, the
   * clip flags it, the step is skipped and the scaler backs off. */
  MT_OK(mixp_grad_scaler_update_to(g, 1.0));
  MT_OK(mixp_optimizer_zero_grad(opt));
  const double huge[2] = {3e19, 3e19};
  add_grad(p, huge);
  double *before = mt_values(p);
  MT_OK(mixp_grad_scaler_unscale(g, opt));
  MT_OK(mixp_clip_grad_norm(opt, 1.0, NULL));
  MT_OK(mixp_grad_scaler_step(g, opt));
  MT_OK(mixp_grad_scaler_update(g));
  pv = mt_values(p);
  mt_assert_close(pv, before, 2, 0.0, 0.0);
  free(pv);
  free(before);
  MT_OK(mixp_grad_scaler_found_inf(g, &found));
  assert_int_equal(found, 1);
  double scale = 0;
  MT_OK(mixp_grad_scaler_get_scale(g, &scale));
  assert_true(scale == 0.5);

  mixp_grad_scaler_destroy(g);
  mixp_optimizer_destroy(opt);
  mixp_tensor_release(p);
  mixp_session_destroy(s);
}

/* ---- accumulation ------------------------------------------------------------ */

typedef struct run {
  mixp_session *s;
  mixp_module *m;
  mixp_optimizer *opt;
  mixp_grad_scaler *g;
  mixp_tensor *x, *y;
} run;

static void run_setup(run *r) {
  r->s = mt_session(); /* same seed: same initial weights in both runs */
  MT_OK(mixp_linear_create(r->s, 4, 3, 1, MIXP_F32, &r->m));
  mixp_tensor *params[2];
  for (int i = 0; i < 2; ++i) MT_OK(mixp_module_parameter(r->m, i, &params[i]));
  mixp_optimizer_options oo;
  mixp_optimizer_options_init(&oo, MIXP_OPTIM_SGD);
  oo.lr = 0.1;
  oo.momentum = 0.9;
  MT_OK(mixp_optimizer_create(r->s, params, 2, &oo, &r->opt));
  for (int i = 0; i < 2; ++i) mixp_tensor_release(params[i]);
  mixp_grad_scaler_options so;
  mixp_grad_scaler_options_init(&so);
  so.growth_interval = 2;
  MT_OK(mixp_grad_scaler_create(r->s, &so, &r->g));
  double xv[16 * 4], yv[16 * 3];
  mt_fill(xv, 64, -1, 1, 11);
  mt_fill(yv, 48, -1, 1, 12);
  const int64_t xs[2] = {16, 4}, ys[2] = {16, 3};
  r->x = mt_tensor(r->s, MIXP_F32, xv, xs, 2);
  r->y = mt_tensor(r->s, MIXP_F32, yv, ys, 2);
}

static void run_teardown(run *r) {
  mixp_tensor_release(r->x);
  mixp_tensor_release(r->y);
  mixp_grad_scaler_destroy(r->g);
  mixp_optimizer_destroy(r->opt);
  mixp_module_destroy(r->m);
  mixp_session_destroy(r->s);
}

/* Backward of scale(mse(rows [lo, hi)) * weight). */
static void micro_batch(run *r, int64_t lo, int64_t hi, double weight) {
  mixp_tensor *xs = NULL, *ys = NULL, *out = NULL, *loss = NULL, *wl = NULL, *scaled = NULL;
  MT_OK(mixp_slice(r->x, 0, lo, hi, 1, &xs));
  MT_OK(mixp_slice(r->y, 0, lo, hi, 1, &ys));
  MT_OK(mixp_module_forward(r->m, xs, &out));
  MT_OK(mixp_mse_loss(out, ys, MIXP_REDUCTION_MEAN, &loss));
  MT_OK(mixp_mul_scalar(loss, weight, &wl));
  MT_OK(mixp_grad_scaler_scale(r->g, wl, &scaled));
  MT_OK(mixp_backward(scaled, NULL));
  mixp_tensor *all[] = {xs, ys, out, loss, wl, scaled};
  for (int i = 0; i < 6; ++i) mixp_tensor_release(all[i]);
}

static double finish_step(run *r) {
  mixp_tensor *norm = NULL;
  MT_OK(mixp_grad_scaler_unscale(r->g, r->opt));
  MT_OK(mixp_clip_grad_norm(r->opt, 0.5, &norm));
  MT_OK(mixp_grad_scaler_step(r->g, r->opt));
  MT_OK(mixp_grad_scaler_update(r->g));
  const double n = item(norm);
  mixp_tensor_release(norm);
  return n;
}

static void test_accumulation_equals_big_batch(void **state) {
  (void)state;
  run a, b;
  run_setup(&a);
  run_setup(&b);
  for (int it = 0; it < 4; ++it) {
    MT_OK(mixp_optimizer_zero_grad(a.opt));
    for (int k = 0; k < 4; ++k) micro_batch(&a, 4 * k, 4 * k + 4, 0.25);
    const double na = finish_step(&a);
    MT_OK(mixp_optimizer_zero_grad(b.opt));
    micro_batch(&b, 0, 16, 1.0);
    const double nb = finish_step(&b);
    mt_assert_close(&na, &nb, 1, 1e-6, 1e-5);
  }
  double sa = 0, sb = 0;
  MT_OK(mixp_grad_scaler_get_scale(a.g, &sa));
  MT_OK(mixp_grad_scaler_get_scale(b.g, &sb));
  assert_true(sa == sb && sa == 65536.0 * 4);
  for (int i = 0; i < 2; ++i) {
    mixp_tensor *pa = NULL, *pb = NULL;
    MT_OK(mixp_module_parameter(a.m, i, &pa));
    MT_OK(mixp_module_parameter(b.m, i, &pb));
    double *va = mt_values(pa), *vb = mt_values(pb);
    mt_assert_close(va, vb, mixp_tensor_numel(pa), 1e-6, 1e-5);
    free(va);
    free(vb);
    mixp_tensor_release(pa);
    mixp_tensor_release(pb);
  }
  run_teardown(&a);
  run_teardown(&b);
}

static void test_clip_misuse(void **state) {
  (void)state;
  mixp_session *s = mt_session();
  const double v[2] = {1.0, 2.0};
  mixp_tensor *p = mt_param(s, MIXP_F32, v, 2);
  mixp_optimizer *opt = mt_sgd(s, &p, 1, 0.5);
  add_grad(p, v);
  mixp_tensor *norm = (mixp_tensor *)0x1;
  MT_FAILS(mixp_clip_grad_norm(NULL, 1.0, &norm), MIXP_ERR_INVALID_ARGUMENT, "optimizer is NULL");
  MT_FAILS(mixp_clip_grad_norm(opt, 0.0, &norm), MIXP_ERR_INVALID_ARGUMENT, "max_norm");
  MT_FAILS(mixp_clip_grad_norm(opt, -1.0, &norm), MIXP_ERR_INVALID_ARGUMENT, "max_norm");
  MT_FAILS(mixp_clip_grad_norm(opt, NAN, &norm), MIXP_ERR_INVALID_ARGUMENT, "max_norm");
  MT_FAILS(mixp_clip_grad_norm(opt, INFINITY, &norm), MIXP_ERR_INVALID_ARGUMENT, "max_norm");
  assert_ptr_equal(norm, (mixp_tensor *)0x1);
  double *g = mt_grad_values(p);
  mt_assert_close(g, v, 2, 0.0, 0.0);
  free(g);
  uint64_t junk[16] = {0}; /* not an optimizer */
  MT_FAILS(mixp_clip_grad_norm((mixp_optimizer *)junk, 1.0, NULL), MIXP_ERR_INVALID_ARGUMENT,
           "not a live optimizer");
  mixp_session_destroy(s);
  MT_FAILS(mixp_clip_grad_norm(opt, 1.0, NULL), MIXP_ERR_STATE, "session was destroyed");
  mixp_optimizer_destroy(opt);
  mixp_tensor_release(p);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_clip_hand_norm),
      cmocka_unit_test(test_non_finite_norm_skips_step),
      cmocka_unit_test(test_clip_with_scaler),
      cmocka_unit_test(test_accumulation_equals_big_batch),
      cmocka_unit_test(test_clip_misuse),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
