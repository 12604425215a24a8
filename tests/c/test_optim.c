/* Optimizers (SGD, Adam, AdamW) and learning-rate schedules: hand-derived
 * values for the first steps, an independent double-precision reference for
 * longer runs, minimisation of a quadratic, and misuse of every function. */
#include "test_util.h"

#define MAXN 16

/* ---- helpers --------------------------------------------------------------- */

static mixp_tensor *make_param(mixp_session *s, mixp_dtype dt, const double *v, int64_t n) {
  int64_t shape[1] = {n};
  mixp_tensor *p = mt_tensor(s, dt, v, shape, 1);
  MT_OK(mixp_tensor_set_requires_grad(p, 1));
  return p;
}

/* Sets p.grad to exactly g (in p's dtype): drops the old gradient, then
 * back-propagates g through a recorded reshape of p. */
static void set_grad(mixp_tensor *p, const double *g) {
  int64_t n = mixp_tensor_numel(p);
  int64_t shape2[2] = {1, n};
  mixp_tensor *y = NULL, *seed = NULL;
  MT_OK(mixp_tensor_zero_grad(p));
  MT_OK(mixp_reshape(p, shape2, 2, &y));
  seed = mt_tensor(mixp_tensor_session(p), mixp_tensor_dtype(p), g, shape2, 2);
  MT_OK(mixp_backward(y, seed));
  mixp_tensor_release(seed);
  mixp_tensor_release(y);
}

static void expect_values(const mixp_tensor *t, const double *want, int64_t n, double atol,
                          double rtol) {
  assert_int_equal(mixp_tensor_numel(t), n);
  double *got = mt_values(t);
  mt_assert_close(got, want, n, atol, rtol);
  free(got);
}

static mixp_optimizer *make_opt(mixp_session *s, mixp_tensor **params, int n,
                                const mixp_optimizer_options *o) {
  mixp_optimizer *opt = NULL;
  MT_OK(mixp_optimizer_create(s, params, n, o, &opt));
  assert_non_null(opt);
  return opt;
}

/* ---- independent reference (double) ------------------------------------------- */

typedef struct ref_state {
  double p[MAXN], buf[MAXN], m[MAXN], v[MAXN];
  int has_buf;
  int t;
} ref_state;

/* torch.optim.SGD as documented: the first momentum buffer is the gradient. */
static void ref_sgd_step(ref_state *st, const mixp_optimizer_options *o, double lr,
                         const double *grad, int n) {
  for (int i = 0; i < n; ++i) {
    double d = grad[i] + o->weight_decay * st->p[i];
    if (o->momentum != 0.0) {
      st->buf[i] = st->has_buf ? o->momentum * st->buf[i] + (1.0 - o->dampening) * d : d;
      d = o->nesterov ? d + o->momentum * st->buf[i] : st->buf[i];
    }
    st->p[i] -= lr * d;
  }
  st->has_buf = 1;
}

/* Adam (L2 in the gradient) or AdamW (decoupled decay), bias-corrected
 * moments, eps added after the square root. */
static void ref_adam_step(ref_state *st, const mixp_optimizer_options *o, double lr,
                          const double *grad, int n) {
  st->t += 1;
  double bc1 = 1.0 - pow(o->beta1, st->t), bc2 = 1.0 - pow(o->beta2, st->t);
  for (int i = 0; i < n; ++i) {
    double g = grad[i];
    if (o->kind == MIXP_OPTIM_ADAMW)
      st->p[i] *= 1.0 - lr * o->weight_decay;
    else
      g += o->weight_decay * st->p[i];
    st->m[i] = o->beta1 * st->m[i] + (1.0 - o->beta1) * g;
    st->v[i] = o->beta2 * st->v[i] + (1.0 - o->beta2) * g * g;
    double m_hat = st->m[i] / bc1, v_hat = st->v[i] / bc2;
    st->p[i] -= lr * m_hat / (sqrt(v_hat) + o->eps);
  }
}

/* The schedule written from its definition (independent of the library). */
static double ref_lr(const mixp_optimizer_options *o, int64_t t) {
  if (o->schedule == MIXP_LR_CONSTANT) return o->lr;
  if (t < o->warmup_steps) return o->lr * (double)t / (double)o->warmup_steps;
  if (t >= o->total_steps) return o->min_lr;
  double frac = (double)(t - o->warmup_steps) / (double)(o->total_steps - o->warmup_steps);
  return o->min_lr + 0.5 * (o->lr - o->min_lr) * (1.0 + cos(3.14159265358979323846 * frac));
}

/* Runs `steps` steps of the library and of the reference on one parameter
 * with pseudo-random gradients and compares after every step. */
static void run_against_reference(mixp_dtype dt, const mixp_optimizer_options *o, int steps,
                                  double atol, double rtol) {
  enum { N = 7 };
  mixp_session *s = mt_session();
  ref_state st;
  memset(&st, 0, sizeof st);
  mt_fill(st.p, N, -1.5, 1.5, 11);
  if (dt != MIXP_F64) { /* start the reference from the rounded values */
    mixp_tensor *tmp = make_param(s, dt, st.p, N);
    double *r = mt_values(tmp);
    memcpy(st.p, r, sizeof(double) * N);
    free(r);
    mixp_tensor_release(tmp);
  }
  mixp_tensor *p = make_param(s, dt, st.p, N);
  mixp_optimizer *opt = make_opt(s, &p, 1, o);
  for (int k = 0; k < steps; ++k) {
    double g[N];
    mt_fill(g, N, -2.0, 2.0, 100 + (uint64_t)k);
    if (dt != MIXP_F64) { /* the library sees the gradient rounded to dt */
      int64_t shape[1] = {N};
      mixp_tensor *gt = mt_tensor(s, dt, g, shape, 1);
      double *r = mt_values(gt);
      memcpy(g, r, sizeof g);
      free(r);
      mixp_tensor_release(gt);
    }
    double lr_lib = -1.0;
    MT_OK(mixp_optimizer_get_lr(opt, &lr_lib));
    double lr = ref_lr(o, k);
    assert_true(fabs(lr_lib - lr) <= 1e-15 + 1e-12 * lr);
    set_grad(p, g);
    MT_OK(mixp_optimizer_step(opt));
    if (o->kind == MIXP_OPTIM_SGD)
      ref_sgd_step(&st, o, lr, g, N);
    else
      ref_adam_step(&st, o, lr, g, N);
    expect_values(p, st.p, N, atol, rtol);
    assert_int_equal(mixp_optimizer_step_count(opt), k + 1);
  }
  assert_int_equal(mixp_tensor_dtype(p), dt);
  mixp_optimizer_destroy(opt);
  mixp_tensor_release(p);
  mixp_session_destroy(s);
}

/* ---- hand-derived first steps --------------------------------------------------- */

/* One parameter p0 = 1 with the gradient g = 0.5 in both steps, lr = 0.1:
 *  plain:          p1 = 1 - 0.1*0.5 = 0.95,            p2 = 0.90
 *  momentum 0.9:   buf1 = 0.5, p1 = 0.95;   buf2 = 0.9*0.5 + 0.5 = 0.95, p2 = 0.855
 *  nesterov 0.9:   d1 = 0.5 + 0.9*0.5 = 0.95, p1 = 0.905;
 *                  buf2 = 0.95, d2 = 0.5 + 0.855 = 1.355, p2 = 0.7695
 *  wd 0.1:         d1 = 0.5 + 0.1 = 0.6, p1 = 0.94;   d2 = 0.5 + 0.094, p2 = 0.8806
 *  momentum 0.9, dampening 0.5: buf1 = 0.5 (no dampening on the first step),
 *                  p1 = 0.95; buf2 = 0.45 + 0.25 = 0.7, p2 = 0.88 */
static void sgd_two_steps(mixp_dtype dt, double momentum, double dampening, int nesterov,
                          double wd, double want1, double want2, double tol) {
  mixp_session *s = mt_session();
  double p0 = 1.0, g = 0.5;
  mixp_tensor *p = make_param(s, dt, &p0, 1);
  mixp_optimizer_options o;
  mixp_optimizer_options_init(&o, MIXP_OPTIM_SGD);
  o.lr = 0.1;
  o.momentum = momentum;
  o.dampening = dampening;
  o.nesterov = nesterov;
  o.weight_decay = wd;
  mixp_optimizer *opt = make_opt(s, &p, 1, &o);
  set_grad(p, &g);
  MT_OK(mixp_optimizer_step(opt));
  expect_values(p, &want1, 1, tol, 0);
  set_grad(p, &g);
  MT_OK(mixp_optimizer_step(opt));
  expect_values(p, &want2, 1, tol, 0);
  mixp_optimizer_destroy(opt);
  mixp_tensor_release(p);
  mixp_session_destroy(s);
}

static void test_sgd_hand_values(void **state) {
  (void)state;
  const mixp_dtype dts[2] = {MIXP_F64, MIXP_F32};
  const double tols[2] = {1e-14, 1e-6};
  for (int i = 0; i < 2; ++i) {
    sgd_two_steps(dts[i], 0.0, 0.0, 0, 0.0, 0.95, 0.90, tols[i]);
    sgd_two_steps(dts[i], 0.9, 0.0, 0, 0.0, 0.95, 0.855, tols[i]);
    sgd_two_steps(dts[i], 0.9, 0.0, 1, 0.0, 0.905, 0.7695, tols[i]);
    sgd_two_steps(dts[i], 0.0, 0.0, 0, 0.1, 0.94, 0.8806, tols[i]);
    sgd_two_steps(dts[i], 0.9, 0.5, 0, 0.0, 0.95, 0.88, tols[i]);
  }
}

/* p0 = 1, lr = 0.1, beta (0.9, 0.999), eps = 0.1, gradients 0.5 then -1.
 * Step 1 (any Adam): m_hat = g, v_hat = g^2, so p1 = p0 - 0.1*0.5/(0.5+0.1)
 *   = 1 - 1/12 = 0.91666...
 * Step 2: m = 0.9*0.05 - 0.1 = -0.055, m_hat = -0.055/0.19 = -0.28947368;
 *   v = 0.999*0.00025 + 0.001 = 0.00124975, v_hat = v/0.001999 = 0.62518759,
 *   sqrt = 0.79068805; p2 = p1 + 0.1*0.28947368/0.89068805 = 0.94916667.
 * Adam with weight_decay 0.1: g1 = 0.5 + 0.1 = 0.6, p1 = 1 - 0.06/0.7 =
 *   0.91428571; g2 = -1 + 0.091428571, ..., p2 = 0.93658338.
 * AdamW with weight_decay 0.1: p1 = 0.99 - 1/12 = 0.90666667; p2 =
 *   0.90666667*0.99 + 0.0325 = 0.93010001. */
static void adam_two_steps(mixp_dtype dt, mixp_optimizer_kind kind, double wd, double want1,
                           double want2, double tol) {
  mixp_session *s = mt_session();
  double p0 = 1.0, g1 = 0.5, g2 = -1.0;
  mixp_tensor *p = make_param(s, dt, &p0, 1);
  mixp_optimizer_options o;
  mixp_optimizer_options_init(&o, kind);
  o.lr = 0.1;
  o.eps = 0.1;
  o.weight_decay = wd;
  mixp_optimizer *opt = make_opt(s, &p, 1, &o);
  set_grad(p, &g1);
  MT_OK(mixp_optimizer_step(opt));
  expect_values(p, &want1, 1, tol, 0);
  set_grad(p, &g2);
  MT_OK(mixp_optimizer_step(opt));
  expect_values(p, &want2, 1, tol, 0);
  mixp_optimizer_destroy(opt);
  mixp_tensor_release(p);
  mixp_session_destroy(s);
}

static void test_adam_hand_values(void **state) {
  (void)state;
  const mixp_dtype dts[2] = {MIXP_F64, MIXP_F32};
  const double tols[2] = {1e-8, 1e-6};
  for (int i = 0; i < 2; ++i) {
    adam_two_steps(dts[i], MIXP_OPTIM_ADAM, 0.0, 0.91666666666666667, 0.94916667426484520,
                   tols[i]);
    adam_two_steps(dts[i], MIXP_OPTIM_ADAM, 0.1, 0.91428571428571429, 0.93658337805436250,
                   tols[i]);
    adam_two_steps(dts[i], MIXP_OPTIM_ADAMW, 0.1, 0.90666666666666667, 0.93010000759817860,
                   tols[i]);
  }
}

/* ---- longer runs against the reference --------------------------------------- */

static void test_sgd_reference(void **state) {
  (void)state;
  mixp_optimizer_options o;
  mixp_optimizer_options_init(&o, MIXP_OPTIM_SGD);
  o.lr = 0.05;
  run_against_reference(MIXP_F64, &o, 6, 1e-13, 1e-13);
  run_against_reference(MIXP_F32, &o, 6, 1e-6, 1e-5);
  o.momentum = 0.9;
  o.dampening = 0.1;
  run_against_reference(MIXP_F64, &o, 6, 1e-13, 1e-13);
  run_against_reference(MIXP_F32, &o, 6, 1e-6, 1e-5);
  o.dampening = 0.0;
  o.nesterov = 1;
  o.weight_decay = 0.05;
  run_against_reference(MIXP_F64, &o, 6, 1e-13, 1e-13);
  run_against_reference(MIXP_F32, &o, 6, 1e-6, 1e-5);
  o.nesterov = 0;
  o.momentum = 0.5;
  o.weight_decay = 0.2;
  run_against_reference(MIXP_F64, &o, 6, 1e-13, 1e-13);
  /* Half parameters keep an fp32 momentum buffer; only p is rounded. */
  run_against_reference(MIXP_F16, &o, 4, 1e-2, 1e-2);
  run_against_reference(MIXP_BF16, &o, 4, 5e-2, 3e-2);
}

static void test_adam_reference(void **state) {
  (void)state;
  mixp_optimizer_options o;
  for (int kind = MIXP_OPTIM_ADAM; kind <= MIXP_OPTIM_ADAMW; ++kind) {
    mixp_optimizer_options_init(&o, (mixp_optimizer_kind)kind);
    o.lr = 0.02;
    run_against_reference(MIXP_F64, &o, 8, 1e-13, 1e-12);
    run_against_reference(MIXP_F32, &o, 8, 1e-6, 1e-5);
    o.weight_decay = 0.1;
    o.beta1 = 0.8;
    o.beta2 = 0.95;
    o.eps = 1e-3;
    run_against_reference(MIXP_F64, &o, 8, 1e-13, 1e-12);
    run_against_reference(MIXP_F32, &o, 8, 1e-6, 1e-5);
    run_against_reference(MIXP_F16, &o, 4, 1e-2, 1e-2);
    run_against_reference(MIXP_BF16, &o, 4, 5e-2, 3e-2);
    /* the learning rate of step t is used in step t */
    o.schedule = MIXP_LR_WARMUP_COSINE;
    o.warmup_steps = 3;
    o.total_steps = 7;
    o.min_lr = 0.001;
    run_against_reference(MIXP_F64, &o, 9, 1e-13, 1e-12);
  }
}

/* ---- minimising a quadratic ------------------------------------------------------ */

/* f(p) = 1/2 sum a_i (p_i - c_i)^2, gradient a_i (p_i - c_i). */
static double minimise_quadratic(const mixp_optimizer_options *o, int steps) {
  enum { N = 5 };
  const double a[N] = {1.0, 2.0, 0.5, 3.0, 1.5};
  const double c[N] = {0.3, -1.2, 2.0, 0.7, -0.4};
  double p0[N] = {0};
  mixp_session *s = mt_session();
  mixp_tensor *p = make_param(s, MIXP_F64, p0, N);
  mixp_optimizer *opt = make_opt(s, &p, 1, o);
  double worst = 0.0;
  for (int k = 0; k <= steps; ++k) {
    double *v = mt_values(p), g[N];
    worst = 0.0;
    for (int i = 0; i < N; ++i) {
      g[i] = a[i] * (v[i] - c[i]);
      if (fabs(v[i] - c[i]) > worst) worst = fabs(v[i] - c[i]);
    }
    free(v);
    if (k == steps) break;
    set_grad(p, g);
    MT_OK(mixp_optimizer_step(opt));
  }
  mixp_optimizer_destroy(opt);
  mixp_tensor_release(p);
  mixp_session_destroy(s);
  return worst;
}

static void test_quadratic(void **state) {
  (void)state;
  mixp_optimizer_options o;
  mixp_optimizer_options_init(&o, MIXP_OPTIM_SGD);
  o.lr = 0.3;
  assert_true(minimise_quadratic(&o, 200) < 1e-9);
  o.momentum = 0.5;
  o.nesterov = 1;
  assert_true(minimise_quadratic(&o, 200) < 1e-9);
  o.lr = 0.2;
  o.momentum = 0.7;
  o.nesterov = 0;
  assert_true(minimise_quadratic(&o, 200) < 1e-9);
  mixp_optimizer_options_init(&o, MIXP_OPTIM_ADAM);
  o.lr = 0.1;
  o.schedule = MIXP_LR_WARMUP_COSINE;
  o.warmup_steps = 10;
  o.total_steps = 400;
  assert_true(minimise_quadratic(&o, 400) < 1e-5);
  mixp_optimizer_options_init(&o, MIXP_OPTIM_ADAMW);
  o.weight_decay = 0.0;
  o.lr = 0.1;
  o.schedule = MIXP_LR_WARMUP_COSINE;
  o.warmup_steps = 10;
  o.total_steps = 400;
  assert_true(minimise_quadratic(&o, 400) < 1e-5);
}

/* ---- gradients that are missing, dropped, non-contiguous parameters -------------- */

static void test_skip_params_without_grad(void **state) {
  (void)state;
  mixp_session *s = mt_session();
  double va[3] = {1.0, 2.0, 3.0}, vb[2] = {-1.0, 0.5}, ga[3] = {0.5, -0.5, 1.0},
         gb[2] = {0.25, -2.0};
  mixp_tensor *ps[2];
  ps[0] = make_param(s, MIXP_F32, va, 3);
  ps[1] = make_param(s, MIXP_F32, vb, 2);
  mixp_optimizer_options o;
  mixp_optimizer_options_init(&o, MIXP_OPTIM_ADAM);
  o.lr = 0.1;
  o.eps = 0.1;
  mixp_optimizer *opt = make_opt(s, ps, 2, &o);

  ref_state ra, rb;
  memset(&ra, 0, sizeof ra);
  memset(&rb, 0, sizeof rb);
  memcpy(ra.p, va, sizeof va);
  memcpy(rb.p, vb, sizeof vb);

  /* step 0: only a has a gradient; b stays bitwise unchanged */
  set_grad(ps[0], ga);
  MT_OK(mixp_optimizer_step(opt));
  ref_adam_step(&ra, &o, o.lr, ga, 3);
  expect_values(ps[0], ra.p, 3, 1e-6, 1e-6);
  expect_values(ps[1], vb, 2, 0, 0);

  /* step 1: both; b's bias correction is that of its own first update */
  set_grad(ps[0], ga);
  set_grad(ps[1], gb);
  MT_OK(mixp_optimizer_step(opt));
  ref_adam_step(&ra, &o, o.lr, ga, 3);
  ref_adam_step(&rb, &o, o.lr, gb, 2);
  expect_values(ps[0], ra.p, 3, 1e-6, 1e-6);
  expect_values(ps[1], rb.p, 2, 1e-6, 1e-6);

  /* zero_grad drops every gradient; the next step changes nothing */
  double *before_a = mt_values(ps[0]), *before_b = mt_values(ps[1]);
  MT_OK(mixp_optimizer_zero_grad(opt));
  for (int i = 0; i < 2; ++i) {
    mixp_tensor *g = (mixp_tensor *)1;
    MT_OK(mixp_tensor_grad(ps[i], &g));
    assert_null(g);
  }
  MT_OK(mixp_optimizer_step(opt));
  expect_values(ps[0], before_a, 3, 0, 0);
  expect_values(ps[1], before_b, 2, 0, 0);
  free(before_a);
  free(before_b);
  assert_int_equal(mixp_optimizer_step_count(opt), 3);

  /* the optimizer keeps its own references to the parameters */
  mixp_tensor *keep = mixp_tensor_retain(ps[0]);
  mixp_tensor_release(ps[0]);
  mixp_tensor_release(ps[1]);
  set_grad(keep, ga);
  MT_OK(mixp_optimizer_step(opt));
  ref_adam_step(&ra, &o, o.lr, ga, 3);
  expect_values(keep, ra.p, 3, 1e-6, 1e-6);
  mixp_optimizer_destroy(opt);
  mixp_tensor_release(keep);
  mixp_session_destroy(s);
}

/* A parameter that is a transposed view: the update lands in the base's
 * storage at the transposed positions. */
static void test_non_contiguous_param(void **state) {
  (void)state;
  mixp_session *s = mt_session();
  double base_v[6] = {1, 2, 3, 4, 5, 6};
  int64_t shape[2] = {2, 3};
  mixp_tensor *base = mt_tensor(s, MIXP_F32, base_v, shape, 2);
  mixp_tensor *pt = NULL;
  MT_OK(mixp_transpose(base, 0, 1, &pt)); /* [3,2], pt[i][j] = base[j][i] */
  assert_int_equal(mixp_tensor_is_contiguous(pt), 0);
  MT_OK(mixp_tensor_set_requires_grad(pt, 1));
  mixp_optimizer_options o;
  mixp_optimizer_options_init(&o, MIXP_OPTIM_SGD);
  o.lr = 0.5;
  mixp_optimizer *opt = make_opt(s, &pt, 1, &o);
  /* gradient of pt (row-major [3,2]) */
  double g[6] = {1, 2, 3, 4, 5, 6};
  int64_t gshape[2] = {3, 2};
  mixp_tensor *seed = mt_tensor(s, MIXP_F32, g, gshape, 2);
  mixp_tensor *y = NULL;
  MT_OK(mixp_mul_scalar(pt, 1.0, &y));
  MT_OK(mixp_backward(y, seed));
  MT_OK(mixp_optimizer_step(opt));
  /* base[j][i] -= 0.5 * g[i][j] */
  double want[6];
  for (int j = 0; j < 2; ++j)
    for (int i = 0; i < 3; ++i) want[j * 3 + i] = base_v[j * 3 + i] - 0.5 * g[i * 2 + j];
  expect_values(base, want, 6, 0, 0);
  mixp_tensor_release(y);
  mixp_tensor_release(seed);
  mixp_optimizer_destroy(opt);
  mixp_tensor_release(pt);
  mixp_tensor_release(base);
  mixp_session_destroy(s);
}

/* A parameter large enough for the multi-threaded path of the kernels:
 * first steps have closed forms (SGD: p - lr*g; Adam: p - lr*g/(|g|+eps)). */
static void test_large_param(void **state) {
  (void)state;
  enum { N = 70000 };
  mixp_session *s = mt_session();
  double *v = malloc(sizeof(double) * N), *g = malloc(sizeof(double) * N),
         *want = malloc(sizeof(double) * N);
  mt_fill(v, N, -1.0, 1.0, 3);
  mt_fill(g, N, -1.0, 1.0, 4);
  for (int kind = MIXP_OPTIM_SGD; kind <= MIXP_OPTIM_ADAM; ++kind) {
    mixp_tensor *p = make_param(s, MIXP_F32, v, N);
    double *p0 = mt_values(p);
    mixp_optimizer_options o;
    mixp_optimizer_options_init(&o, (mixp_optimizer_kind)kind);
    o.lr = 0.1;
    o.eps = 0.01;
    o.momentum = 0.9;
    mixp_optimizer *opt = make_opt(s, &p, 1, &o);
    set_grad(p, g);
    double *gr = NULL;
    mixp_tensor *gt = NULL;
    MT_OK(mixp_tensor_grad(p, &gt));
    gr = mt_values(gt);
    mixp_tensor_release(gt);
    MT_OK(mixp_optimizer_step(opt));
    for (int i = 0; i < N; ++i)
      want[i] = kind == MIXP_OPTIM_SGD ? p0[i] - 0.1 * gr[i]
                                       : p0[i] - 0.1 * gr[i] / (fabs(gr[i]) + 0.01);
    expect_values(p, want, N, 1e-6, 1e-6);
    free(gr);
    free(p0);
    mixp_optimizer_destroy(opt);
    mixp_tensor_release(p);
  }
  free(v);
  free(g);
  free(want);
  mixp_session_destroy(s);
}

/* ---- schedules ----------------------------------------------------------------- */

static double sched(const mixp_optimizer_options *o, int64_t step) {
  double lr = -1;
  MT_OK(mixp_lr_schedule_value(o, step, &lr));
  return lr;
}

static void test_lr_schedule_values(void **state) {
  (void)state;
  mixp_optimizer_options o;
  mixp_optimizer_options_init(&o, MIXP_OPTIM_ADAMW);
  o.lr = 0.5;
  assert_true(sched(&o, 0) == 0.5);
  assert_true(sched(&o, 123456) == 0.5);

  o.lr = 1.0;
  o.schedule = MIXP_LR_WARMUP_COSINE;
  o.warmup_steps = 10;
  o.total_steps = 110;
  o.min_lr = 0.1;
  assert_true(sched(&o, 0) == 0.0);                  /* warmup starts at 0 */
  assert_true(fabs(sched(&o, 5) - 0.5) < 1e-15);     /* halfway up */
  assert_true(fabs(sched(&o, 9) - 0.9) < 1e-15);
  assert_true(fabs(sched(&o, 10) - 1.0) < 1e-15);    /* peak */
  assert_true(fabs(sched(&o, 60) - 0.55) < 1e-15);   /* cosine midpoint: (1 + 0.1) / 2 */
  /* a quarter of the way: 0.1 + 0.9 * (1 + cos(pi/4)) / 2 */
  assert_true(fabs(sched(&o, 35) - (0.1 + 0.45 * (1.0 + sqrt(0.5)))) < 1e-14);
  assert_true(fabs(sched(&o, 109) - 0.1) < 1e-3 && sched(&o, 109) > 0.1);
  assert_true(sched(&o, 110) == 0.1);                /* end */
  assert_true(sched(&o, 100000) == 0.1);             /* clamped after */

  /* no warmup: the first step already uses the full rate */
  o.warmup_steps = 0;
  o.total_steps = 4;
  o.min_lr = 0.0;
  assert_true(sched(&o, 0) == 1.0);
  assert_true(fabs(sched(&o, 2) - 0.5) < 1e-15);
  assert_true(sched(&o, 4) == 0.0);
  /* warmup as long as the run: ramp, then min_lr */
  o.warmup_steps = 4;
  assert_true(fabs(sched(&o, 2) - 0.5) < 1e-15);
  assert_true(sched(&o, 4) == 0.0);
}

static void test_optimizer_lr_and_step_count(void **state) {
  (void)state;
  mixp_session *s = mt_session();
  double v[2] = {1.0, -1.0}, g[2] = {1.0, 1.0};
  mixp_tensor *p = make_param(s, MIXP_F64, v, 2);
  mixp_optimizer_options o;
  mixp_optimizer_options_init(&o, MIXP_OPTIM_SGD);
  o.lr = 0.4;
  o.schedule = MIXP_LR_WARMUP_COSINE;
  o.warmup_steps = 2;
  o.total_steps = 4;
  mixp_optimizer *opt = make_opt(s, &p, 1, &o);
  /* lr of steps 0..4: 0, 0.2, 0.4, 0.2, 0 */
  const double want_lr[5] = {0.0, 0.2, 0.4, 0.2, 0.0};
  double sum_lr = 0.0;
  for (int k = 0; k < 5; ++k) {
    double lr = -1;
    assert_int_equal(mixp_optimizer_step_count(opt), k);
    MT_OK(mixp_optimizer_get_lr(opt, &lr));
    assert_true(fabs(lr - want_lr[k]) < 1e-15);
    set_grad(p, g);
    MT_OK(mixp_optimizer_step(opt));
    sum_lr += want_lr[k];
  }
  double want[2] = {1.0 - sum_lr, -1.0 - sum_lr};
  expect_values(p, want, 2, 1e-14, 0);
  /* set_lr changes the base rate: past total_steps the schedule gives min_lr */
  MT_OK(mixp_optimizer_set_lr(opt, 2.0));
  double lr = -1;
  MT_OK(mixp_optimizer_get_lr(opt, &lr));
  assert_true(lr == 0.0);
  mixp_optimizer_destroy(opt);

  /* with a constant schedule set_lr is the rate itself */
  mixp_optimizer_options_init(&o, MIXP_OPTIM_SGD);
  opt = make_opt(s, &p, 1, &o);
  MT_OK(mixp_optimizer_get_lr(opt, &lr));
  assert_true(lr == 0.01);
  MT_OK(mixp_optimizer_set_lr(opt, 0.25));
  MT_OK(mixp_optimizer_get_lr(opt, &lr));
  assert_true(lr == 0.25);
  MT_OK(mixp_optimizer_set_lr(opt, 0.0));
  mixp_optimizer_destroy(opt);
  mixp_tensor_release(p);
  mixp_session_destroy(s);
}

/* ---- memory options: BF16 state, stochastic rounding ------------------------------------ */

static mixp_session *session_seeded(uint64_t seed) {
  mixp_session_options so;
  mixp_session_options_init(&so);
  so.seed = seed;
  so.num_threads = 2;
  so.device = mt_device();
  mixp_session *s = NULL;
  MT_OK(mixp_session_create(&so, &s));
  return s;
}

/* Bytes the first step allocates (the state) for an Adam(W) over one F32
 * parameter of n elements, and its values after `steps` steps. */
static double *adam_run_state(mixp_dtype state_dtype, int n, int steps, uint64_t *state_bytes) {
  mixp_session *s = mt_session();
  double *v = (double *)malloc((size_t)n * sizeof(double)), *g = (double *)malloc((size_t)n * sizeof(double));
  mt_fill(v, n, -1.0, 1.0, 5);
  mixp_tensor *p = make_param(s, MIXP_F32, v, n);
  mixp_optimizer_options o;
  mixp_optimizer_options_init(&o, MIXP_OPTIM_ADAMW);
  o.lr = 1e-2;
  o.state_dtype = state_dtype;
  mixp_optimizer *opt = make_opt(s, &p, 1, &o);
  for (int k = 0; k < steps; ++k) {
    mt_fill(g, n, -1.0, 1.0, 50 + (uint64_t)k);
    set_grad(p, g);
    mixp_memory_stats before, after;
    memset(&before, 0, sizeof before);
    memset(&after, 0, sizeof after);
    before.struct_size = after.struct_size = sizeof(mixp_memory_stats);
    MT_OK(mixp_memory_stats_get(s, &before));
    MT_OK(mixp_optimizer_step(opt));
    MT_OK(mixp_memory_stats_get(s, &after));
    if (k == 0) *state_bytes = after.current_bytes - before.current_bytes;
  }
  double *out = mt_values(p);
  mixp_optimizer_destroy(opt);
  mixp_tensor_release(p);
  mixp_session_destroy(s);
  free(v);
  free(g);
  return out;
}

/* BF16 state takes half the bytes of F32 state (exp_avg and exp_avg_sq: 2 x
 * n x 2 bytes saved) and is really stored rounded: the parameters differ from
 * the F32-state run, by at most what a moment's rounding (2^-8 relative) can
 * move lr-sized updates: 5 steps x lr x 2^-6. */
static void test_bf16_state(void **state) {
  (void)state;
  enum { N = 4096, STEPS = 5 };
  uint64_t bytes32 = 0, bytes16 = 0;
  double *a = adam_run_state(MIXP_F32, N, STEPS, &bytes32);
  double *b = adam_run_state(MIXP_BF16, N, STEPS, &bytes16);
  assert_true(bytes32 >= 2 * N * 4);
  assert_int_equal(bytes32 - bytes16, 2 * N * 2);
  int differ = 0;
  for (int i = 0; i < N; ++i) {
    differ += a[i] != b[i];
    if (!(fabs(a[i] - b[i]) <= STEPS * 1e-2 * 0x1p-6)) {
      print_error("element %d: F32 state %.9g, BF16 state %.9g\n", i, a[i], b[i]);
      fail();
    }
  }
  assert_true(differ > N / 10);
  free(a);
  free(b);
}

/* SGD steps of 2^-12 on BF16 parameters at 1.0: rounding to nearest loses
 * every one (the step below 1.0 is 2^-8), stochastic rounding keeps their
 * sum on average. 16 steps move the mean by 2^-8; its standard error over
 * 4096 elements is below 2^-13, so |mean - (1 - 2^-8)| < 2^-11 holds by a
 * wide margin on any fair random stream. */
static double *sgd_bf16_run(mixp_session *s, int stochastic, int steps) {
  enum { N = 4096 };
  double *ones = (double *)malloc(N * sizeof(double)), *g = (double *)malloc(N * sizeof(double));
  for (int i = 0; i < N; ++i) ones[i] = 1.0, g[i] = 0x1p-12;
  mixp_tensor *p = make_param(s, MIXP_BF16, ones, N);
  mixp_optimizer_options o;
  mixp_optimizer_options_init(&o, MIXP_OPTIM_SGD);
  o.lr = 1.0;
  o.stochastic_rounding = stochastic;
  mixp_optimizer *opt = make_opt(s, &p, 1, &o);
  for (int k = 0; k < steps; ++k) {
    set_grad(p, g);
    MT_OK(mixp_optimizer_step(opt));
  }
  double *out = mt_values(p);
  mixp_optimizer_destroy(opt);
  mixp_tensor_release(p);
  free(ones);
  free(g);
  return out;
}

static void test_stochastic_rounding(void **state) {
  (void)state;
  enum { N = 4096, STEPS = 16 };
  mixp_session *s = session_seeded(7);
  double *nearest = sgd_bf16_run(s, 0, STEPS);
  double *sr = sgd_bf16_run(s, 1, STEPS);
  double mean = 0.0;
  for (int i = 0; i < N; ++i) {
    assert_true(nearest[i] == 1.0);
    /* each step moves an element down by one bf16 step (2^-8) or not at all */
    assert_true(sr[i] <= 1.0 && sr[i] >= 1.0 - STEPS * 0x1p-8);
    assert_true(ldexp(1.0 - sr[i], 8) == floor(ldexp(1.0 - sr[i], 8)));
    mean += sr[i] / N;
  }
  if (!(fabs(mean - (1.0 - 0x1p-8)) < 0x1p-11)) {
    print_error("mean after %d stochastic steps %.9g, expected %.9g\n", STEPS, mean, 1.0 - 0x1p-8);
    fail();
  }
  /* The same seed draws the same roundings; another seed others. */
  mixp_session *same = session_seeded(7), *other = session_seeded(8);
  double *nearest2 = sgd_bf16_run(same, 0, STEPS); /* keeps the stream in step with s */
  double *again = sgd_bf16_run(same, 1, STEPS);
  double *diff = sgd_bf16_run(other, 1, STEPS);
  int differ = 0;
  for (int i = 0; i < N; ++i) {
    assert_true(again[i] == sr[i]);
    differ += diff[i] != sr[i];
  }
  assert_true(differ > 0);
  free(nearest);
  free(nearest2);
  free(sr);
  free(again);
  free(diff);
  mixp_session_destroy(s);
  mixp_session_destroy(same);
  mixp_session_destroy(other);
}

/* Stochastic rounding leaves parameters that are not BF16 alone. */
static void test_stochastic_rounding_other_dtypes(void **state) {
  (void)state;
  static const mixp_dtype dts[3] = {MIXP_F32, MIXP_F16, MIXP_F64};
  for (int d = 0; d < 3; ++d) {
    double *res[2];
    for (int sr = 0; sr < 2; ++sr) {
      mixp_session *s = mt_session();
      double v[64], g[64];
      mt_fill(v, 64, -1.0, 1.0, 3);
      mt_fill(g, 64, -1.0, 1.0, 4);
      mixp_tensor *p = make_param(s, dts[d], v, 64);
      mixp_optimizer_options o;
      mixp_optimizer_options_init(&o, MIXP_OPTIM_ADAMW);
      o.stochastic_rounding = sr;
      mixp_optimizer *opt = make_opt(s, &p, 1, &o);
      set_grad(p, g);
      MT_OK(mixp_optimizer_step(opt));
      res[sr] = mt_values(p);
      mixp_optimizer_destroy(opt);
      mixp_tensor_release(p);
      mixp_session_destroy(s);
    }
    for (int i = 0; i < 64; ++i) assert_true(res[0][i] == res[1][i]);
    free(res[0]);
    free(res[1]);
  }
}

/* A 0.3-sized options struct (before state_dtype) is accepted, with F32
 * state and no stochastic rounding. */
static void test_options_v03(void **state) {
  (void)state;
  mixp_session *s = mt_session();
  double v[4] = {1, 2, 3, 4}, g[4] = {1, 1, 1, 1};
  mixp_tensor *p = make_param(s, MIXP_BF16, v, 4);
  mixp_optimizer_options o;
  memset(&o, 0x5a, sizeof o); /* garbage past the old end must not be read */
  mixp_optimizer_options_init(&o, MIXP_OPTIM_SGD);
  o.struct_size = (uint32_t)offsetof(mixp_optimizer_options, state_dtype);
  o.state_dtype = (mixp_dtype)99;
  o.stochastic_rounding = 99;
  mixp_optimizer *opt = make_opt(s, &p, 1, &o);
  set_grad(p, g);
  MT_OK(mixp_optimizer_step(opt));
  const double want[4] = {0.98828125, 1.9921875, 2.984375, 3.984375}; /* p - 0.01, to nearest bf16 */
  expect_values(p, want, 4, 0, 0);
  mixp_optimizer_destroy(opt);
  mixp_tensor_release(p);
  mixp_session_destroy(s);
}

/* Gradient underflow statistics: zeros and values below the low type's
 * smallest normal (2^-14 for f16, 2^-126 for bf16), per parameter; NaN for a
 * parameter without a gradient. */
static void test_grad_underflow(void **state) {
  (void)state;
  mixp_session *s = mt_session();
  const double v[8] = {1, 1, 1, 1, 1, 1, 1, 1};
  const double g[8] = {0, 1e-6, 1e-5, 0x1p-14, 1.0, -3e-5, 65504, -0.5};
  mixp_tensor *p[2] = {make_param(s, MIXP_F32, v, 8), make_param(s, MIXP_F32, v, 3)};
  mixp_optimizer_options o;
  mixp_optimizer_options_init(&o, MIXP_OPTIM_SGD);
  mixp_optimizer *opt = make_opt(s, p, 2, &o);
  set_grad(p[0], g); /* p[1] has no gradient */
  double f[4] = {-1, -1, -1, -1};
  int n = -1;
  MT_OK(mixp_optimizer_grad_underflow(opt, MIXP_F16, f, 4, &n));
  assert_int_equal(n, 2);
  assert_true(f[0] == 4.0 / 8); /* 0, 1e-6, 1e-5, -3e-5; 2^-14 is normal */
  assert_true(isnan(f[1]));
  assert_true(f[2] == -1); /* past n: untouched */
  MT_OK(mixp_optimizer_grad_underflow(opt, MIXP_BF16, f, 1, &n));
  assert_true(f[0] == 1.0 / 8 && n == 2);
  MT_OK(mixp_optimizer_grad_underflow(opt, MIXP_F32, NULL, 0, &n));
  assert_int_equal(n, 2);
  /* misuse */
  MT_FAILS(mixp_optimizer_grad_underflow(NULL, MIXP_F16, f, 4, &n), MIXP_ERR_INVALID_ARGUMENT, "optimizer");
  MT_FAILS(mixp_optimizer_grad_underflow(opt, MIXP_F16, f, 4, NULL), MIXP_ERR_INVALID_ARGUMENT, "count");
  MT_FAILS(mixp_optimizer_grad_underflow(opt, MIXP_F16, f, -1, &n), MIXP_ERR_INVALID_ARGUMENT, "capacity");
  MT_FAILS(mixp_optimizer_grad_underflow(opt, MIXP_F16, f, INT32_MIN, &n), MIXP_ERR_INVALID_ARGUMENT, "capacity");
  MT_FAILS(mixp_optimizer_grad_underflow(opt, MIXP_F16, NULL, 4, &n), MIXP_ERR_INVALID_ARGUMENT, "fractions is NULL");
  MT_FAILS(mixp_optimizer_grad_underflow(opt, MIXP_F64, f, 4, &n), MIXP_ERR_INVALID_ARGUMENT, "low is 3");
  MT_FAILS(mixp_optimizer_grad_underflow(opt, (mixp_dtype)-7, f, 4, &n), MIXP_ERR_INVALID_ARGUMENT, "low");
  mixp_optimizer_destroy(opt);
  mixp_tensor_release(p[0]);
  mixp_tensor_release(p[1]);
  mixp_session_destroy(s);
}

static void test_options_init_defaults(void **state) {
  (void)state;
  mixp_optimizer_options o;
  memset(&o, 0x7f, sizeof o);
  mixp_optimizer_options_init(&o, MIXP_OPTIM_SGD);
  assert_int_equal(o.struct_size, sizeof(mixp_optimizer_options));
  assert_int_equal(o.kind, MIXP_OPTIM_SGD);
  assert_true(o.lr == 0.01 && o.momentum == 0.0 && o.dampening == 0.0 && o.nesterov == 0);
  assert_true(o.weight_decay == 0.0 && o.schedule == MIXP_LR_CONSTANT);
  mixp_optimizer_options_init(&o, MIXP_OPTIM_ADAM);
  assert_int_equal(o.kind, MIXP_OPTIM_ADAM);
  assert_true(o.lr == 1e-3 && o.beta1 == 0.9 && o.beta2 == 0.999 && o.eps == 1e-8);
  assert_true(o.weight_decay == 0.0);
  mixp_optimizer_options_init(&o, MIXP_OPTIM_ADAMW);
  assert_true(o.lr == 1e-3 && o.weight_decay == 0.01);
  assert_true(o.warmup_steps == 0 && o.total_steps == 0 && o.min_lr == 0.0);
  assert_true(o.state_dtype == MIXP_F32 && o.stochastic_rounding == 0);
  mixp_optimizer_options_init(NULL, MIXP_OPTIM_SGD); /* ignored */
}

/* ---- misuse ---------------------------------------------------------------------- */

static void expect_create_fails(mixp_session *s, mixp_tensor **ps, int n,
                                const mixp_optimizer_options *o, mixp_status st,
                                const char *needle) {
  mixp_optimizer *opt = (mixp_optimizer *)0x1;
  MT_FAILS(mixp_optimizer_create(s, ps, n, o, &opt), st, needle);
  assert_ptr_equal(opt, (mixp_optimizer *)0x1); /* untouched on failure */
}

static void test_create_misuse(void **state) {
  (void)state;
  mixp_session *s = mt_session();
  double v[4] = {1, 2, 3, 4};
  mixp_tensor *p = make_param(s, MIXP_F32, v, 4);
  mixp_optimizer_options o, bad;
  mixp_optimizer_options_init(&o, MIXP_OPTIM_SGD);
  mixp_optimizer *opt = NULL;

  MT_FAILS(mixp_optimizer_create(NULL, &p, 1, &o, &opt), MIXP_ERR_INVALID_ARGUMENT, "session");
  MT_FAILS(mixp_optimizer_create(s, &p, 1, &o, NULL), MIXP_ERR_INVALID_ARGUMENT, "out");
  expect_create_fails(s, &p, 1, NULL, MIXP_ERR_INVALID_ARGUMENT, "options is NULL");
  expect_create_fails(s, NULL, 1, &o, MIXP_ERR_INVALID_ARGUMENT, "params is NULL");
  expect_create_fails(s, &p, 0, &o, MIXP_ERR_INVALID_ARGUMENT, "n must be >= 1");
  expect_create_fails(s, &p, -3, &o, MIXP_ERR_INVALID_ARGUMENT, "n must be >= 1");

  /* hyper-parameters, each named in the message */
#define BAD_FIELD(kind, stmt, needle)                                         \
  do {                                                                        \
    mixp_optimizer_options_init(&bad, kind);                                  \
    stmt;                                                                     \
    expect_create_fails(s, &p, 1, &bad, MIXP_ERR_INVALID_ARGUMENT, needle);   \
  } while (0)
  BAD_FIELD(MIXP_OPTIM_SGD, bad.struct_size = 8, "struct_size");
  BAD_FIELD(MIXP_OPTIM_SGD, bad.struct_size = UINT32_MAX, "struct_size");
  BAD_FIELD(MIXP_OPTIM_ADAM, bad.state_dtype = MIXP_F16, "options->state_dtype");
  BAD_FIELD(MIXP_OPTIM_ADAM, bad.state_dtype = MIXP_F64, "options->state_dtype");
  BAD_FIELD(MIXP_OPTIM_ADAM, bad.state_dtype = (mixp_dtype)-1, "options->state_dtype");
  BAD_FIELD(MIXP_OPTIM_SGD, bad.stochastic_rounding = 2, "options->stochastic_rounding");
  BAD_FIELD(MIXP_OPTIM_SGD, bad.stochastic_rounding = -1, "options->stochastic_rounding");
  BAD_FIELD(MIXP_OPTIM_SGD, bad.kind = (mixp_optimizer_kind)7, "options->kind");
  BAD_FIELD(MIXP_OPTIM_SGD, bad.lr = -0.1, "options->lr");
  BAD_FIELD(MIXP_OPTIM_ADAM, bad.lr = NAN, "options->lr");
  BAD_FIELD(MIXP_OPTIM_ADAM, bad.lr = INFINITY, "options->lr");
  BAD_FIELD(MIXP_OPTIM_SGD, bad.momentum = -0.5, "options->momentum");
  BAD_FIELD(MIXP_OPTIM_SGD, bad.dampening = NAN, "options->dampening");
  BAD_FIELD(MIXP_OPTIM_SGD, bad.weight_decay = -1e-4, "options->weight_decay");
  BAD_FIELD(MIXP_OPTIM_ADAMW, bad.weight_decay = NAN, "options->weight_decay");
  BAD_FIELD(MIXP_OPTIM_SGD, bad.nesterov = 1, "options->nesterov requires momentum > 0");
  BAD_FIELD(MIXP_OPTIM_SGD, (bad.nesterov = 1, bad.momentum = 0.9, bad.dampening = 0.1),
            "dampening == 0");
  BAD_FIELD(MIXP_OPTIM_SGD, (bad.nesterov = 2, bad.momentum = 0.9), "options->nesterov");
  BAD_FIELD(MIXP_OPTIM_ADAM, bad.beta1 = 1.0, "options->beta1");
  BAD_FIELD(MIXP_OPTIM_ADAM, bad.beta1 = -0.1, "options->beta1");
  BAD_FIELD(MIXP_OPTIM_ADAMW, bad.beta2 = 1.0, "options->beta2");
  BAD_FIELD(MIXP_OPTIM_ADAMW, bad.beta2 = NAN, "options->beta2");
  BAD_FIELD(MIXP_OPTIM_ADAM, bad.eps = 0.0, "options->eps");
  BAD_FIELD(MIXP_OPTIM_ADAM, bad.eps = -1e-8, "options->eps");
  BAD_FIELD(MIXP_OPTIM_SGD, bad.schedule = (mixp_lr_schedule_kind)5, "options->schedule");
  BAD_FIELD(MIXP_OPTIM_SGD, (bad.schedule = MIXP_LR_WARMUP_COSINE, bad.total_steps = 10,
                             bad.warmup_steps = -1), "options->warmup_steps");
  BAD_FIELD(MIXP_OPTIM_SGD, (bad.schedule = MIXP_LR_WARMUP_COSINE, bad.total_steps = 5,
                             bad.warmup_steps = 6), "options->total_steps");
  BAD_FIELD(MIXP_OPTIM_SGD, (bad.schedule = MIXP_LR_WARMUP_COSINE, bad.total_steps = 0),
            "options->total_steps");
  BAD_FIELD(MIXP_OPTIM_SGD, (bad.schedule = MIXP_LR_WARMUP_COSINE, bad.total_steps = 10,
                             bad.min_lr = -1.0), "options->min_lr");
#undef BAD_FIELD

  /* parameters */
  mixp_tensor *list[3];
  list[0] = p;
  list[1] = NULL;
  expect_create_fails(s, list, 2, &o, MIXP_ERR_INVALID_ARGUMENT, "params[1] is NULL");
  list[1] = p;
  expect_create_fails(s, list, 2, &o, MIXP_ERR_INVALID_ARGUMENT, "params[1] duplicates params[0]");

  int64_t shape[1] = {4};
  mixp_tensor *plain = mt_tensor(s, MIXP_F32, v, shape, 1); /* requires_grad = 0 */
  list[1] = plain;
  expect_create_fails(s, list, 2, &o, MIXP_ERR_STATE, "params[1] does not require grad");

  mixp_tensor *nonleaf = NULL;
  MT_OK(mixp_mul_scalar(p, 2.0, &nonleaf));
  assert_int_equal(mixp_tensor_is_leaf(nonleaf), 0);
  list[1] = nonleaf;
  expect_create_fails(s, list, 2, &o, MIXP_ERR_STATE, "params[1] is not a leaf");

  int32_t iv[4] = {1, 2, 3, 4};
  mixp_tensor *ints = NULL;
  MT_OK(mixp_tensor_from_host(s, iv, sizeof iv, MIXP_I32, shape, 1, &ints));
  list[1] = ints;
  expect_create_fails(s, list, 2, &o, MIXP_ERR_DTYPE, "params[1] must be a float tensor");

  mixp_session *s2 = mt_session();
  mixp_tensor *other = make_param(s2, MIXP_F32, v, 4);
  list[1] = other;
  expect_create_fails(s, list, 2, &o, MIXP_ERR_DEVICE, "params[1] belongs to a different session");
  expect_create_fails(s, &other, 1, &o, MIXP_ERR_DEVICE, "params[0]");

  /* two views over overlapping memory would be updated twice */
  int64_t shape8[1] = {8};
  double v8[8] = {0};
  mixp_tensor *flat = mt_tensor(s, MIXP_F32, v8, shape8, 1);
  mixp_tensor *lo = NULL, *mid = NULL, *hi = NULL;
  MT_OK(mixp_slice(flat, 0, 0, 4, 1, &lo));
  MT_OK(mixp_slice(flat, 0, 2, 6, 1, &mid));
  MT_OK(mixp_slice(flat, 0, 4, 8, 1, &hi));
  MT_OK(mixp_tensor_set_requires_grad(lo, 1));
  MT_OK(mixp_tensor_set_requires_grad(mid, 1));
  MT_OK(mixp_tensor_set_requires_grad(hi, 1));
  list[0] = lo;
  list[1] = hi;
  list[2] = mid;
  expect_create_fails(s, list, 3, &o, MIXP_ERR_INVALID_ARGUMENT, "params[2] shares memory");
  /* disjoint views of one buffer are fine */
  opt = make_opt(s, list, 2, &o);
  mixp_optimizer_destroy(opt);

  mixp_tensor_release(lo);
  mixp_tensor_release(mid);
  mixp_tensor_release(hi);
  mixp_tensor_release(flat);
  mixp_tensor_release(other);
  mixp_session_destroy(s2);
  mixp_tensor_release(ints);
  mixp_tensor_release(nonleaf);
  mixp_tensor_release(plain);
  mixp_tensor_release(p);
  mixp_session_destroy(s);
}

/* Which parameters hold a NaN or Inf gradient (to name what overflowed):
 * every float dtype, parameters without a gradient skipped, a short buffer,
 * and misuse. */
static void test_nonfinite_grads(void **state) {
  (void)state;
  mixp_session *s = mt_session();
  const double v[3] = {1, 2, 3};
  const mixp_dtype dts[5] = {MIXP_F32, MIXP_F16, MIXP_BF16, MIXP_F64, MIXP_F32};
  mixp_tensor *params[5];
  for (int i = 0; i < 5; ++i) params[i] = make_param(s, dts[i], v, 3);
  mixp_optimizer_options o;
  mixp_optimizer_options_init(&o, MIXP_OPTIM_SGD);
  mixp_optimizer *opt = make_opt(s, params, 5, &o);
  int idx[5] = {-1, -1, -1, -1, -1}, count = -1;
  MT_OK(mixp_optimizer_nonfinite_grads(opt, idx, 5, &count));
  assert_int_equal(count, 0); /* no gradients yet */
  const double fine[3] = {0.5, -1, 2}, nan_g[3] = {0, NAN, 1}, inf_g[3] = {-INFINITY, 0, 0};
  set_grad(params[0], fine);
  set_grad(params[1], inf_g);  /* f16 */
  set_grad(params[2], fine);
  set_grad(params[3], nan_g);  /* f64 */
  /* params[4] has no gradient */
  MT_OK(mixp_optimizer_nonfinite_grads(opt, idx, 5, &count));
  assert_int_equal(count, 2);
  assert_int_equal(idx[0], 1);
  assert_int_equal(idx[1], 3);
  idx[0] = -1;
  MT_OK(mixp_optimizer_nonfinite_grads(opt, idx, 1, &count)); /* room for one: the count is still 2 */
  assert_int_equal(count, 2);
  assert_int_equal(idx[0], 1);
  MT_OK(mixp_optimizer_nonfinite_grads(opt, NULL, 0, &count));
  assert_int_equal(count, 2);
  MT_OK(mixp_optimizer_zero_grad(opt));
  MT_OK(mixp_optimizer_nonfinite_grads(opt, idx, 5, &count));
  assert_int_equal(count, 0);
  MT_FAILS(mixp_optimizer_nonfinite_grads(NULL, idx, 5, &count), MIXP_ERR_INVALID_ARGUMENT, "optimizer");
  MT_FAILS(mixp_optimizer_nonfinite_grads(opt, idx, 5, NULL), MIXP_ERR_INVALID_ARGUMENT, "count");
  MT_FAILS(mixp_optimizer_nonfinite_grads(opt, idx, -1, &count), MIXP_ERR_INVALID_ARGUMENT, "capacity");
  /* An absurd capacity is only room: at most count entries are written. */
  MT_OK(mixp_optimizer_nonfinite_grads(opt, idx, INT32_MAX, &count));
  assert_int_equal(count, 0);
  MT_FAILS(mixp_optimizer_nonfinite_grads(opt, NULL, 2, &count), MIXP_ERR_INVALID_ARGUMENT, "indices is NULL");
  mixp_optimizer_destroy(opt);
  for (int i = 0; i < 5; ++i) mixp_tensor_release(params[i]);
  mixp_session_destroy(s);
}

static void test_handle_misuse(void **state) {
  (void)state;
  mixp_session *s = mt_session();
  double v[2] = {1, 2};
  mixp_tensor *p = make_param(s, MIXP_F32, v, 2);
  mixp_optimizer_options o;
  mixp_optimizer_options_init(&o, MIXP_OPTIM_ADAMW);
  mixp_optimizer *opt = make_opt(s, &p, 1, &o);
  double lr = 42.0;

  MT_FAILS(mixp_optimizer_step(NULL), MIXP_ERR_INVALID_ARGUMENT, "mixp_optimizer_step: optimizer is NULL");
  MT_FAILS(mixp_optimizer_zero_grad(NULL), MIXP_ERR_INVALID_ARGUMENT, "mixp_optimizer_zero_grad: optimizer is NULL");
  MT_FAILS(mixp_optimizer_get_lr(NULL, &lr), MIXP_ERR_INVALID_ARGUMENT, "mixp_optimizer_get_lr: optimizer is NULL");
  MT_FAILS(mixp_optimizer_get_lr(opt, NULL), MIXP_ERR_INVALID_ARGUMENT, "lr is NULL");
  assert_true(lr == 42.0);
  MT_FAILS(mixp_optimizer_set_lr(NULL, 0.1), MIXP_ERR_INVALID_ARGUMENT, "mixp_optimizer_set_lr: optimizer is NULL");
  MT_FAILS(mixp_optimizer_set_lr(opt, -0.1), MIXP_ERR_INVALID_ARGUMENT, "lr must be finite and >= 0");
  MT_FAILS(mixp_optimizer_set_lr(opt, NAN), MIXP_ERR_INVALID_ARGUMENT, "lr must be finite");
  MT_FAILS(mixp_optimizer_set_lr(opt, INFINITY), MIXP_ERR_INVALID_ARGUMENT, "lr must be finite");
  MT_OK(mixp_optimizer_get_lr(opt, &lr));
  assert_true(lr == 1e-3); /* the failed set_lr changed nothing */
  assert_int_equal(mixp_optimizer_step_count(NULL), -1);
  assert_non_null(strstr(mixp_last_error(), "mixp_optimizer_step_count"));
  mixp_optimizer_destroy(NULL); /* no-op */

  /* a step after the session was destroyed is refused and changes nothing */
  double g[2] = {1, 1};
  set_grad(p, g);
  mixp_session_destroy(s);
  MT_FAILS(mixp_optimizer_step(opt), MIXP_ERR_STATE, "mixp_optimizer_step");
  assert_int_equal(mixp_optimizer_step_count(opt), 0);
  float now[2] = {0, 0}; /* operations are refused now; reading still works */
  MT_OK(mixp_tensor_to_host(p, now, sizeof now));
  assert_true(now[0] == 1.0f && now[1] == 2.0f);
  mixp_optimizer_destroy(opt);
  mixp_tensor_release(p);
}

static void test_schedule_misuse(void **state) {
  (void)state;
  mixp_optimizer_options o;
  mixp_optimizer_options_init(&o, MIXP_OPTIM_SGD);
  double lr = 42.0;
  MT_FAILS(mixp_lr_schedule_value(NULL, 0, &lr), MIXP_ERR_INVALID_ARGUMENT, "options is NULL");
  MT_FAILS(mixp_lr_schedule_value(&o, 0, NULL), MIXP_ERR_INVALID_ARGUMENT, "lr is NULL");
  MT_FAILS(mixp_lr_schedule_value(&o, -1, &lr), MIXP_ERR_INVALID_ARGUMENT, "step must be >= 0");
  o.struct_size = 4;
  MT_FAILS(mixp_lr_schedule_value(&o, 0, &lr), MIXP_ERR_INVALID_ARGUMENT, "struct_size");
  mixp_optimizer_options_init(&o, MIXP_OPTIM_SGD);
  o.lr = -1;
  MT_FAILS(mixp_lr_schedule_value(&o, 0, &lr), MIXP_ERR_INVALID_ARGUMENT, "options->lr");
  mixp_optimizer_options_init(&o, MIXP_OPTIM_SGD);
  o.schedule = MIXP_LR_WARMUP_COSINE;
  o.warmup_steps = 3;
  o.total_steps = 2;
  MT_FAILS(mixp_lr_schedule_value(&o, 0, &lr), MIXP_ERR_INVALID_ARGUMENT, "options->total_steps");
  o.total_steps = 10;
  o.min_lr = NAN;
  MT_FAILS(mixp_lr_schedule_value(&o, 0, &lr), MIXP_ERR_INVALID_ARGUMENT, "options->min_lr");
  assert_true(lr == 42.0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_sgd_hand_values),
      cmocka_unit_test(test_adam_hand_values),
      cmocka_unit_test(test_sgd_reference),
      cmocka_unit_test(test_adam_reference),
      cmocka_unit_test(test_quadratic),
      cmocka_unit_test(test_skip_params_without_grad),
      cmocka_unit_test(test_non_contiguous_param),
      cmocka_unit_test(test_large_param),
      cmocka_unit_test(test_lr_schedule_values),
      cmocka_unit_test(test_optimizer_lr_and_step_count),
      cmocka_unit_test(test_bf16_state),
      cmocka_unit_test(test_stochastic_rounding),
      cmocka_unit_test(test_stochastic_rounding_other_dtypes),
      cmocka_unit_test(test_options_v03),
      cmocka_unit_test(test_grad_underflow),
      cmocka_unit_test(test_options_init_defaults),
      cmocka_unit_test(test_create_misuse),
      cmocka_unit_test(test_nonfinite_grads),
      cmocka_unit_test(test_handle_misuse),
      cmocka_unit_test(test_schedule_misuse),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
