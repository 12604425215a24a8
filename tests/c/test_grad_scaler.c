/* GradScaler: golden scale trajectories (PyTorch, Paddle decr_every_n,
 * Apex hysteresis, min/max bounds, static, disabled), the per-optimizer state
 * machine, save/load, overflow recovery with bit-identical skipped steps,
 * overflow flags combined across optimizers, AUTO mode, the below_one
 * warning/error, and misuse of every function. */
#include "test_util.h"

#include "../golden/grad_scaler_trajectories.h"

/* ---- helpers --------------------------------------------------------------- */

static mixp_grad_scaler *scaler_with(mixp_session *s, const mixp_grad_scaler_options *o) {
  mixp_grad_scaler *g = NULL;
  MT_OK(mixp_grad_scaler_create(s, o, &g));
  assert_non_null(g);
  return g;
}

static double get_scale(const mixp_grad_scaler *g) {
  double v = -1;
  MT_OK(mixp_grad_scaler_get_scale(g, &v));
  return v;
}

static int64_t get_growth(const mixp_grad_scaler *g) {
  int64_t v = -1;
  MT_OK(mixp_grad_scaler_growth_tracker(g, &v));
  return v;
}

static int get_found(const mixp_grad_scaler *g) {
  int v = -1;
  MT_OK(mixp_grad_scaler_found_inf(g, &v));
  return v;
}

/* Backward of scale(sum(p * c)) for a [2] parameter: grads c * scale, with
 * code 0 finite, 1 an Inf, 2 a NaN. */
static void scaled_backward(mixp_grad_scaler *g, mixp_tensor *p, int code) {
  mixp_session *s = mixp_tensor_session(p);
  double c[2] = {0.25, 0.25};
  if (code == 1) c[0] = INFINITY;
  if (code == 2) c[0] = NAN;
  int64_t shape[1] = {2};
  mixp_tensor *ct = mt_tensor(s, mixp_tensor_dtype(p), c, shape, 1);
  mixp_tensor *prod = NULL, *loss = NULL, *scaled = NULL;
  MT_OK(mixp_mul(p, ct, &prod));
  MT_OK(mixp_sum(prod, NULL, 0, 0, &loss));
  MT_OK(mixp_grad_scaler_scale(g, loss, &scaled));
  MT_OK(mixp_backward(scaled, NULL));
  mixp_tensor_release(scaled);
  mixp_tensor_release(loss);
  mixp_tensor_release(prod);
  mixp_tensor_release(ct);
}

static void one_iteration(mixp_grad_scaler *g, mixp_optimizer *opt, mixp_tensor *p, int code) {
  MT_OK(mixp_optimizer_zero_grad(opt));
  scaled_backward(g, p, code);
  MT_OK(mixp_grad_scaler_step(g, opt));
  MT_OK(mixp_grad_scaler_update(g));
}

static void options_of(const gs_golden *c, mixp_grad_scaler_options *o) {
  mixp_grad_scaler_options_init(o);
  o->mode = (mixp_scaler_mode)c->mode;
  o->init_scale = c->init_scale;
  o->growth_factor = c->growth_factor;
  o->backoff_factor = c->backoff_factor;
  o->growth_interval = c->growth_interval;
  o->decr_every_n_nan_or_inf = c->decr_every_n_nan_or_inf;
  o->hysteresis = c->hysteresis;
  o->min_scale = c->min_scale;
  o->max_scale = c->max_scale;
}

/* Bytes of a tensor (for bit-identity checks). */
static unsigned char *bytes_of(const mixp_tensor *t, size_t *n) {
  *n = (size_t)mixp_tensor_numel(t) * mixp_dtype_size(mixp_tensor_dtype(t));
  unsigned char *b = (unsigned char *)malloc(*n);
  MT_OK(mixp_tensor_to_host(t, b, *n));
  return b;
}

static void assert_same_bytes(const mixp_tensor *t, const unsigned char *want, size_t n) {
  size_t m = 0;
  unsigned char *got = bytes_of(t, &m);
  assert_int_equal(m, n);
  assert_memory_equal(got, want, n);
  free(got);
}

/* ---- golden trajectories ------------------------------------------------------- */

static void test_golden_trajectories(void **state) {
  (void)state;
  for (int k = 0; k < GS_GOLDEN_COUNT; ++k) {
    const gs_golden *c = &gs_golden_cases[k];
    mixp_session *s = mt_session();
    const double v[2] = {1.0, -1.0};
    mixp_tensor *p = mt_param(s, MIXP_F32, v, 2);
    mixp_optimizer *opt = mt_sgd(s, &p, 1, 0.0);
    mixp_grad_scaler_options o;
    options_of(c, &o);
    mixp_grad_scaler *g = scaler_with(s, &o);
    assert_int_equal(mixp_grad_scaler_mode(g), c->mode);
    assert_int_equal(get_found(g), 0);
    for (int i = 0; i < c->n; ++i) {
      one_iteration(g, opt, p, c->found[i]);
      const double scale = get_scale(g);
      const int64_t growth = get_growth(g);
      if (scale != c->scale[i] || growth != c->growth_tracker[i]) {
        print_error("%s: after update %d got scale %a tracker %lld, want %a tracker %lld\n",
                    c->name, i, scale, (long long)growth, c->scale[i],
                    (long long)c->growth_tracker[i]);
        fail();
      }
      assert_int_equal(get_found(g), c->mode == MIXP_SCALER_DISABLED ? 0 : c->found[i] != 0);
    }
    mixp_grad_scaler_destroy(g);
    mixp_optimizer_destroy(opt);
    mixp_tensor_release(p);
    mixp_session_destroy(s);
  }
}

/* ---- scale() -------------------------------------------------------------------- */

static void test_scale_values_and_gradient(void **state) {
  (void)state;
  mixp_session *s = mt_session();
  mixp_grad_scaler_options o;
  mixp_grad_scaler_options_init(&o);
  o.init_scale = 1024.0;
  mixp_grad_scaler *g = scaler_with(s, &o);
  const int64_t shape[1] = {3};
  const double v[3] = {0.5, -1.25, 3.0};
  /* F32 and F64: exact products; the gradient of the scaled loss is the scale. */
  const mixp_dtype dts[2] = {MIXP_F32, MIXP_F64};
  for (int k = 0; k < 2; ++k) {
    mixp_tensor *x = mt_tensor(s, dts[k], v, shape, 1), *y = NULL, *gx = NULL;
    MT_OK(mixp_tensor_set_requires_grad(x, 1));
    MT_OK(mixp_grad_scaler_scale(g, x, &y));
    assert_int_equal(mixp_tensor_dtype(y), dts[k]);
    const double want[3] = {512.0, -1280.0, 3072.0};
    double *got = mt_values(y);
    mt_assert_close(got, want, 3, 0.0, 0.0);
    free(got);
    const double seed[3] = {1.0, 2.0, -1.0};
    mixp_tensor *st = mt_tensor(s, dts[k], seed, shape, 1);
    MT_OK(mixp_backward(y, st));
    MT_OK(mixp_tensor_grad(x, &gx));
    const double wantg[3] = {1024.0, 2048.0, -1024.0};
    got = mt_values(gx);
    mt_assert_close(got, wantg, 3, 0.0, 0.0);
    free(got);
    mixp_tensor_release(gx);
    mixp_tensor_release(st);
    mixp_tensor_release(y);
    mixp_tensor_release(x);
  }
  /* A half loss keeps its dtype (as in PyTorch) and overflows past 65504. */
  MT_OK(mixp_grad_scaler_update_to(g, 65536.0));
  const double h[2] = {0.5, 2.0};
  const int64_t shape2[1] = {2};
  mixp_tensor *x = mt_tensor(s, MIXP_F16, h, shape2, 1), *y = NULL;
  MT_OK(mixp_grad_scaler_scale(g, x, &y));
  assert_int_equal(mixp_tensor_dtype(y), MIXP_F16);
  double *got = mt_values(y);
  assert_true(got[0] == 32768.0);
  assert_true(isinf(got[1]) && got[1] > 0);
  free(got);
  mixp_tensor_release(y);
  /* BF16 has fp32's range. */
  mixp_tensor *xb = mt_tensor(s, MIXP_BF16, h, shape2, 1);
  MT_OK(mixp_grad_scaler_scale(g, xb, &y));
  got = mt_values(y);
  assert_true(got[0] == 32768.0 && got[1] == 131072.0);
  free(got);
  mixp_tensor_release(y);
  mixp_tensor_release(xb);

  /* DISABLED hands back the loss itself. */
  mixp_grad_scaler_options d;
  mixp_grad_scaler_options_init(&d);
  d.mode = MIXP_SCALER_DISABLED;
  mixp_grad_scaler *gd = scaler_with(s, &d);
  MT_OK(mixp_grad_scaler_scale(gd, x, &y));
  assert_ptr_equal(y, x);
  mixp_tensor_release(y);
  assert_true(get_scale(gd) == 1.0);
  assert_int_equal(get_growth(gd), 0);
  mixp_grad_scaler_destroy(gd);
  mixp_tensor_release(x);
  mixp_grad_scaler_destroy(g);
  mixp_session_destroy(s);
}

static void test_unscale_divides_in_place(void **state) {
  (void)state;
  mixp_session *s = mt_session();
  mixp_grad_scaler_options o;
  mixp_grad_scaler_options_init(&o);
  o.init_scale = 8.0;
  mixp_grad_scaler *g = scaler_with(s, &o);
  const double v[2] = {1.0, 2.0};
  /* A mix of grad dtypes in one fused pass. */
  mixp_tensor *p[3] = {mt_param(s, MIXP_F32, v, 2), mt_param(s, MIXP_F16, v, 2),
                       mt_param(s, MIXP_BF16, v, 2)};
  mixp_optimizer *opt = mt_sgd(s, p, 3, 0.1);
  for (int k = 0; k < 3; ++k) scaled_backward(g, p[k], 0);
  MT_OK(mixp_grad_scaler_unscale(g, opt));
  for (int k = 0; k < 3; ++k) {
    mixp_tensor *gr = NULL;
    MT_OK(mixp_tensor_grad(p[k], &gr));
    double *got = mt_values(gr);
    const double want[2] = {0.25, 0.25};
    mt_assert_close(got, want, 2, 0.0, 0.0);
    free(got);
    mixp_tensor_release(gr);
  }
  /* step() after unscale() does not unscale again: p -= 0.1 * 0.25. */
  MT_OK(mixp_grad_scaler_step(g, opt));
  MT_OK(mixp_grad_scaler_update(g));
  double *got = mt_values(p[0]);
  const double want[2] = {1.0 - 0.025, 2.0 - 0.025};
  mt_assert_close(got, want, 2, 1e-7, 0.0);
  free(got);
  assert_int_equal(get_found(g), 0);
  for (int k = 0; k < 3; ++k) mixp_tensor_release(p[k]);
  mixp_optimizer_destroy(opt);
  mixp_grad_scaler_destroy(g);
  mixp_session_destroy(s);
}

/* ---- state machine -------------------------------------------------------------- */

static void test_state_machine(void **state) {
  (void)state;
  mixp_session *s = mt_session();
  const double v[2] = {1.0, 2.0};
  mixp_tensor *p = mt_param(s, MIXP_F32, v, 2);
  mixp_optimizer *opt = mt_sgd(s, &p, 1, 0.1);
  mixp_grad_scaler *g = scaler_with(s, NULL);
  assert_int_equal(mixp_grad_scaler_mode(g), MIXP_SCALER_DYNAMIC);
  MT_FAILS(mixp_grad_scaler_update(g), MIXP_ERR_STATE, "no unscale() or step() was recorded");

  scaled_backward(g, p, 0);
  MT_OK(mixp_grad_scaler_unscale(g, opt));
  MT_FAILS(mixp_grad_scaler_unscale(g, opt), MIXP_ERR_STATE,
           "unscale() has already been called on this optimizer since the last update()");
  MT_OK(mixp_grad_scaler_step(g, opt));
  MT_FAILS(mixp_grad_scaler_unscale(g, opt), MIXP_ERR_STATE,
           "unscale() is being called after step()");
  MT_FAILS(mixp_grad_scaler_step(g, opt), MIXP_ERR_STATE,
           "step() has already been called since the last update()");
  unsigned char buf[256];
  size_t n = 0;
  MT_OK(mixp_grad_scaler_save_state(g, buf, sizeof buf, &n));
  MT_FAILS(mixp_grad_scaler_load_state(g, buf, n), MIXP_ERR_STATE, "between unscale()/step()");
  MT_OK(mixp_grad_scaler_update(g));
  /* Back to READY: the whole cycle works again, and load is allowed. */
  MT_OK(mixp_grad_scaler_load_state(g, buf, n));
  MT_OK(mixp_optimizer_zero_grad(opt));
  scaled_backward(g, p, 0);
  MT_OK(mixp_grad_scaler_step(g, opt));
  MT_OK(mixp_grad_scaler_update(g));
  assert_int_equal(get_growth(g), 1); /* the loaded tracker was 0 */

  /* unscale() then update() without a step: the iteration ends, and an
   * overflow found by that unscale still backs off but does not leak into
   * the next step's skip flag. */
  MT_OK(mixp_optimizer_zero_grad(opt));
  scaled_backward(g, p, 1);
  MT_OK(mixp_grad_scaler_unscale(g, opt));
  MT_OK(mixp_grad_scaler_update(g));
  assert_true(get_scale(g) == 32768.0);
  assert_int_equal(get_found(g), 1);
  double *before = mt_values(p);
  MT_OK(mixp_optimizer_zero_grad(opt));
  scaled_backward(g, p, 0);
  MT_OK(mixp_optimizer_step(opt)); /* plain step: must not be skipped */
  double *after = mt_values(p);
  assert_true(after[0] != before[0]);
  free(before);
  free(after);

  /* A disabled scaler has no state machine. */
  mixp_grad_scaler_options d;
  mixp_grad_scaler_options_init(&d);
  d.mode = MIXP_SCALER_DISABLED;
  mixp_grad_scaler *gd = scaler_with(s, &d);
  MT_OK(mixp_grad_scaler_unscale(gd, opt));
  MT_OK(mixp_grad_scaler_unscale(gd, opt));
  MT_OK(mixp_grad_scaler_update(gd));
  MT_OK(mixp_grad_scaler_update_to(gd, 4.0));
  assert_true(get_scale(gd) == 1.0);
  mixp_grad_scaler_destroy(gd);

  mixp_grad_scaler_destroy(g);
  mixp_optimizer_destroy(opt);
  mixp_tensor_release(p);
  mixp_session_destroy(s);
}

/* ---- update_to ---------------------------------------------------------------------- */

static void test_update_to(void **state) {
  (void)state;
  mixp_session *s = mt_session();
  const double v[2] = {1.0, 2.0};
  mixp_tensor *p = mt_param(s, MIXP_F32, v, 2);
  mixp_optimizer *opt = mt_sgd(s, &p, 1, 0.0);
  mixp_grad_scaler_options o;
  mixp_grad_scaler_options_init(&o);
  o.growth_interval = 3;
  mixp_grad_scaler *g = scaler_with(s, &o);
  one_iteration(g, opt, p, 0);
  assert_int_equal(get_growth(g), 1);
  /* Mid-iteration: ends it (READY again), keeps the tracker. */
  MT_OK(mixp_optimizer_zero_grad(opt));
  scaled_backward(g, p, 1);
  MT_OK(mixp_grad_scaler_step(g, opt));
  MT_OK(mixp_grad_scaler_update_to(g, 3.0));
  assert_true(get_scale(g) == 3.0);
  assert_int_equal(get_growth(g), 1);
  assert_int_equal(get_found(g), 1);
  MT_OK(mixp_grad_scaler_unscale(g, opt)); /* READY again */
  MT_OK(mixp_grad_scaler_update(g));
  MT_FAILS(mixp_grad_scaler_update_to(g, 0.0), MIXP_ERR_INVALID_ARGUMENT, "new_scale");
  MT_FAILS(mixp_grad_scaler_update_to(g, -2.0), MIXP_ERR_INVALID_ARGUMENT, "new_scale");
  MT_FAILS(mixp_grad_scaler_update_to(g, INFINITY), MIXP_ERR_INVALID_ARGUMENT, "new_scale");
  MT_FAILS(mixp_grad_scaler_update_to(g, NAN), MIXP_ERR_INVALID_ARGUMENT, "new_scale");
  MT_FAILS(mixp_grad_scaler_update_to(g, 1e300), MIXP_ERR_INVALID_ARGUMENT, "fp32");
  MT_FAILS(mixp_grad_scaler_update_to(NULL, 2.0), MIXP_ERR_INVALID_ARGUMENT, "scaler is NULL");
  mixp_grad_scaler_destroy(g);
  mixp_optimizer_destroy(opt);
  mixp_tensor_release(p);
  mixp_session_destroy(s);
}

/* ---- save / load ---------------------------------------------------------------- */

static uint32_t fnv1a(const unsigned char *p, size_t n) {
  uint32_t h = 2166136261u;
  for (size_t i = 0; i < n; ++i) h = (h ^ p[i]) * 16777619u;
  return h;
}

static void put_u32(unsigned char *p, uint32_t v) {
  for (int i = 0; i < 4; ++i) p[i] = (unsigned char)(v >> (8 * i));
}

static void reseal(unsigned char *buf, size_t n) { put_u32(buf + n - 4, fnv1a(buf, n - 4)); }

static void test_save_load_continuation(void **state) {
  (void)state;
  mixp_session *s = mt_session();
  const double v[2] = {1.0, 2.0};
  mixp_tensor *p = mt_param(s, MIXP_F32, v, 2);
  mixp_optimizer *opt = mt_sgd(s, &p, 1, 0.0);
  mixp_grad_scaler_options o;
  mixp_grad_scaler_options_init(&o);
  o.growth_interval = 3;
  o.decr_every_n_nan_or_inf = 2;
  o.hysteresis = 2;
  o.backoff_factor = 0.25;
  mixp_grad_scaler *a = scaler_with(s, &o);
  /* Stop with counters mid-way: growth 1 after a clean step preceded by
   * overflows that consumed hysteresis and one backoff credit. */
  const int head[] = {0, 0, 0, 0, 1, 1, 1, 0, 1};
  for (size_t i = 0; i < sizeof head / sizeof head[0]; ++i) one_iteration(a, opt, p, head[i]);

  size_t size = 0, written = 0;
  MT_OK(mixp_grad_scaler_state_size(a, &size));
  assert_int_equal(size, 104);
  unsigned char buf[128];
  memset(buf, 0xAB, sizeof buf);
  MT_OK(mixp_grad_scaler_save_state(a, buf, sizeof buf, &written));
  assert_int_equal(written, size);
  assert_memory_equal(buf, "MXGS", 4);
  assert_int_equal(buf[104], 0xAB); /* nothing past the state */

  /* A scaler made with other options (and mode) continues identically. */
  mixp_grad_scaler_options other;
  mixp_grad_scaler_options_init(&other);
  other.mode = MIXP_SCALER_STATIC;
  other.init_scale = 2.0;
  mixp_grad_scaler *b = scaler_with(s, &other);
  MT_OK(mixp_grad_scaler_load_state(b, buf, written));
  assert_int_equal(mixp_grad_scaler_mode(b), MIXP_SCALER_DYNAMIC);
  assert_true(get_scale(a) == get_scale(b));
  assert_int_equal(get_growth(a), get_growth(b));
  assert_int_equal(get_found(a), get_found(b));
  const int tail[] = {1, 1, 0, 0, 0, 1, 0, 1, 1, 1, 0, 0, 0, 0, 0, 0, 2, 0};
  for (size_t i = 0; i < sizeof tail / sizeof tail[0]; ++i) {
    one_iteration(a, opt, p, tail[i]);
    one_iteration(b, opt, p, tail[i]);
    assert_true(get_scale(a) == get_scale(b));
    assert_int_equal(get_growth(a), get_growth(b));
    assert_int_equal(get_found(a), get_found(b));
  }
  /* Saved twice, the same bytes. */
  unsigned char buf2[128];
  MT_OK(mixp_grad_scaler_save_state(a, buf, sizeof buf, &written));
  MT_OK(mixp_grad_scaler_save_state(b, buf2, sizeof buf2, &written));
  assert_memory_equal(buf, buf2, written);

  mixp_grad_scaler_destroy(a);
  mixp_grad_scaler_destroy(b);
  mixp_optimizer_destroy(opt);
  mixp_tensor_release(p);
  mixp_session_destroy(s);
}

static void test_load_corrupt(void **state) {
  (void)state;
  mixp_session *s = mt_session();
  mixp_grad_scaler_options o;
  mixp_grad_scaler_options_init(&o);
  o.init_scale = 512.0;
  mixp_grad_scaler *src = scaler_with(s, &o);
  unsigned char good[104], bad[200];
  size_t n = 0;
  MT_OK(mixp_grad_scaler_save_state(src, good, sizeof good, &n));
  mixp_grad_scaler *g = scaler_with(s, NULL); /* scale 65536, tracker 0 */

  MT_FAILS(mixp_grad_scaler_load_state(g, good, 0), MIXP_ERR_CORRUPT, "truncated");
  MT_FAILS(mixp_grad_scaler_load_state(g, good, 11), MIXP_ERR_CORRUPT, "truncated");
  MT_FAILS(mixp_grad_scaler_load_state(g, good, n - 1), MIXP_ERR_CORRUPT, "truncated");
  memcpy(bad, good, n);
  bad[n] = 0;
  MT_FAILS(mixp_grad_scaler_load_state(g, bad, n + 1), MIXP_ERR_CORRUPT, "trailing");
  memcpy(bad, good, n);
  bad[0] = 'X';
  MT_FAILS(mixp_grad_scaler_load_state(g, bad, n), MIXP_ERR_CORRUPT, "magic");
  memcpy(bad, good, n);
  put_u32(bad + 4, 2);
  reseal(bad, n);
  MT_FAILS(mixp_grad_scaler_load_state(g, bad, n), MIXP_ERR_CORRUPT, "version 2");
  memcpy(bad, good, n);
  bad[50] ^= 0x10;
  MT_FAILS(mixp_grad_scaler_load_state(g, bad, n), MIXP_ERR_CORRUPT, "checksum");
  /* Sealed but invalid fields. Layout: mode at 12, growth_factor at 24,
   * growth_interval at 40, scale at 80, growth_tracker at 84. */
  memcpy(bad, good, n);
  put_u32(bad + 12, 0);
  reseal(bad, n);
  MT_FAILS(mixp_grad_scaler_load_state(g, bad, n), MIXP_ERR_CORRUPT, "saved mode");
  memcpy(bad, good, n);
  memset(bad + 24, 0, 8); /* growth_factor 0.0 */
  reseal(bad, n);
  MT_FAILS(mixp_grad_scaler_load_state(g, bad, n), MIXP_ERR_CORRUPT, "growth_factor");
  memcpy(bad, good, n);
  put_u32(bad + 80, 0x7f800000u); /* scale +Inf */
  reseal(bad, n);
  MT_FAILS(mixp_grad_scaler_load_state(g, bad, n), MIXP_ERR_CORRUPT, "saved scale");
  memcpy(bad, good, n);
  put_u32(bad + 84, 5000); /* tracker >= growth_interval (2000) */
  reseal(bad, n);
  MT_FAILS(mixp_grad_scaler_load_state(g, bad, n), MIXP_ERR_CORRUPT, "growth_tracker");
  /* Nothing changed. */
  assert_true(get_scale(g) == 65536.0);
  assert_int_equal(get_growth(g), 0);
  MT_OK(mixp_grad_scaler_load_state(g, good, n));
  assert_true(get_scale(g) == 512.0);
  mixp_grad_scaler_destroy(g);
  mixp_grad_scaler_destroy(src);
  mixp_session_destroy(s);
}

/* ---- overflow recovery -------------------------------------------------------------- */

/* One training iteration of a decorated fp16 Linear with AdamW and a scaler;
 * `huge` first sets a scale that overflows fp16 gradients. */
typedef struct o2_run {
  mixp_session *s;
  mixp_module *m;
  mixp_optimizer *opt;
  mixp_grad_scaler *g;
  mixp_tensor *x, *y;
} o2_run;

static void o2_setup(o2_run *r) {
  r->s = mt_session();
  MT_OK(mixp_linear_create(r->s, 4, 3, 1, MIXP_F32, &r->m));
  mixp_tensor *params[2];
  for (int i = 0; i < 2; ++i) MT_OK(mixp_module_parameter(r->m, i, &params[i]));
  mixp_optimizer_options oo;
  mixp_optimizer_options_init(&oo, MIXP_OPTIM_ADAMW);
  oo.lr = 1e-2;
  MT_OK(mixp_optimizer_create(r->s, params, 2, &oo, &r->opt));
  for (int i = 0; i < 2; ++i) mixp_tensor_release(params[i]);
  mixp_decorate_options d;
  mixp_decorate_options_init(&d);
  MT_OK(mixp_amp_decorate(r->m, r->opt, &d));
  mixp_grad_scaler_options so;
  mixp_grad_scaler_options_init(&so);
  so.init_scale = 1024.0;
  r->g = scaler_with(r->s, &so);
  double xv[8 * 4], yv[8 * 3];
  mt_fill(xv, 32, -1, 1, 5);
  mt_fill(yv, 24, -1, 1, 6);
  const int64_t xs[2] = {8, 4}, ys[2] = {8, 3};
  r->x = mt_tensor(r->s, MIXP_F16, xv, xs, 2);
  r->y = mt_tensor(r->s, MIXP_F16, yv, ys, 2);
}

static void o2_iteration(o2_run *r) {
  mixp_tensor *out = NULL, *loss = NULL, *scaled = NULL;
  MT_OK(mixp_optimizer_zero_grad(r->opt));
  MT_OK(mixp_module_forward(r->m, r->x, &out));
  MT_OK(mixp_mse_loss(out, r->y, MIXP_REDUCTION_MEAN, &loss));
  MT_OK(mixp_grad_scaler_scale(r->g, loss, &scaled));
  MT_OK(mixp_backward(scaled, NULL));
  MT_OK(mixp_grad_scaler_step(r->g, r->opt));
  MT_OK(mixp_grad_scaler_update(r->g));
  mixp_tensor_release(scaled);
  mixp_tensor_release(loss);
  mixp_tensor_release(out);
}

static void o2_teardown(o2_run *r) {
  mixp_tensor_release(r->x);
  mixp_tensor_release(r->y);
  mixp_grad_scaler_destroy(r->g);
  mixp_optimizer_destroy(r->opt);
  mixp_module_destroy(r->m);
  mixp_session_destroy(r->s);
}

static void test_overflow_recovery(void **state) {
  (void)state;
  o2_run a, b;
  o2_setup(&a);
  o2_setup(&b);
  for (int i = 0; i < 3; ++i) {
    o2_iteration(&a);
    o2_iteration(&b);
  }
  /* Run a: a forced overflow (scale 1e30 makes every fp16 gradient Inf). */
  unsigned char *w[2];
  size_t wn[2];
  mixp_tensor *pa[2];
  for (int i = 0; i < 2; ++i) {
    MT_OK(mixp_module_parameter(a.m, i, &pa[i]));
    assert_int_equal(mixp_tensor_dtype(pa[i]), MIXP_F16);
    w[i] = bytes_of(pa[i], &wn[i]);
  }
  MT_OK(mixp_grad_scaler_update_to(a.g, 1e30));
  o2_iteration(&a);
  assert_int_equal(get_found(a.g), 1);
  assert_true(get_scale(a.g) == (double)(float)1e30 * 0.5);
  for (int i = 0; i < 2; ++i) assert_same_bytes(pa[i], w[i], wn[i]);
  /* Training continues: from the same scale, run a must now follow run b
   * bit for bit, which holds only if masters, moments and step counts were
   * left exactly as they were by the skipped step. */
  MT_OK(mixp_grad_scaler_update_to(a.g, get_scale(b.g)));
  for (int i = 0; i < 4; ++i) {
    o2_iteration(&a);
    o2_iteration(&b);
    assert_int_equal(get_found(a.g), 0);
  }
  for (int i = 0; i < 2; ++i) {
    mixp_tensor *pb = NULL;
    MT_OK(mixp_module_parameter(b.m, i, &pb));
    size_t n = 0;
    unsigned char *wb = bytes_of(pb, &n);
    assert_same_bytes(pa[i], wb, n);
    assert_memory_not_equal(wb, w[i], n); /* and training did move them */
    free(wb);
    mixp_tensor_release(pb);
    mixp_tensor_release(pa[i]);
    free(w[i]);
  }
  o2_teardown(&a);
  o2_teardown(&b);
}

/* ---- several optimizers -------------------------------------------------------------- */

static void test_two_optimizers_one_backoff(void **state) {
  (void)state;
  mixp_session *s = mt_session();
  const double v[2] = {1.0, 2.0};
  mixp_tensor *p1 = mt_param(s, MIXP_F32, v, 2), *p2 = mt_param(s, MIXP_F32, v, 2);
  mixp_optimizer *o1 = mt_sgd(s, &p1, 1, 0.5), *o2 = mt_sgd(s, &p2, 1, 0.5);
  mixp_grad_scaler_options so;
  mixp_grad_scaler_options_init(&so);
  so.growth_interval = 2;
  mixp_grad_scaler *g = scaler_with(s, &so);
  scaled_backward(g, p1, 0);
  scaled_backward(g, p2, 1);
  MT_OK(mixp_grad_scaler_step(g, o1));
  MT_OK(mixp_grad_scaler_step(g, o2));
  MT_OK(mixp_grad_scaler_update(g));
  assert_true(get_scale(g) == 32768.0); /* backed off once, not twice */
  assert_int_equal(get_growth(g), 0);
  assert_int_equal(get_found(g), 1);
  double *a = mt_values(p1), *b = mt_values(p2);
  const double want1[2] = {1.0 - 0.125, 2.0 - 0.125};
  mt_assert_close(a, want1, 2, 0.0, 0.0); /* its own grads were finite */
  mt_assert_close(b, v, 2, 0.0, 0.0);     /* skipped */
  free(a);
  free(b);

  /* An optimizer destroyed between step and update still counts, and a new
   * optimizer (perhaps at the same address) starts READY. */
  MT_OK(mixp_optimizer_zero_grad(o1));
  MT_OK(mixp_optimizer_zero_grad(o2));
  scaled_backward(g, p1, 0);
  scaled_backward(g, p2, 2);
  MT_OK(mixp_grad_scaler_step(g, o1));
  MT_OK(mixp_grad_scaler_step(g, o2));
  mixp_optimizer_destroy(o2);
  mixp_optimizer *o3 = mt_sgd(s, &p2, 1, 0.5);
  MT_OK(mixp_grad_scaler_unscale(g, o3));
  MT_OK(mixp_grad_scaler_update(g));
  assert_true(get_scale(g) == 16384.0);
  assert_int_equal(get_found(g), 1);

  /* Two clean iterations over both optimizers: one growth. */
  for (int it = 0; it < 2; ++it) {
    MT_OK(mixp_optimizer_zero_grad(o1));
    MT_OK(mixp_optimizer_zero_grad(o3));
    scaled_backward(g, p1, 0);
    scaled_backward(g, p2, 0);
    MT_OK(mixp_grad_scaler_step(g, o1));
    MT_OK(mixp_grad_scaler_step(g, o3));
    MT_OK(mixp_grad_scaler_update(g));
  }
  assert_true(get_scale(g) == 32768.0);
  mixp_grad_scaler_destroy(g);
  mixp_optimizer_destroy(o1);
  mixp_optimizer_destroy(o3);
  mixp_tensor_release(p1);
  mixp_tensor_release(p2);
  mixp_session_destroy(s);
}

/* A static scaler skips overflowing steps without touching the scale. */
static void test_static_skips(void **state) {
  (void)state;
  mixp_session *s = mt_session();
  const double v[2] = {1.0, 2.0};
  mixp_tensor *p = mt_param(s, MIXP_F32, v, 2);
  mixp_optimizer *opt = mt_sgd(s, &p, 1, 1.0);
  mixp_grad_scaler_options so;
  mixp_grad_scaler_options_init(&so);
  so.mode = MIXP_SCALER_STATIC;
  so.init_scale = 128.0;
  mixp_grad_scaler *g = scaler_with(s, &so);
  one_iteration(g, opt, p, 1);
  double *got = mt_values(p);
  mt_assert_close(got, v, 2, 0.0, 0.0);
  free(got);
  assert_true(get_scale(g) == 128.0);
  one_iteration(g, opt, p, 0);
  got = mt_values(p);
  const double want[2] = {0.75, 1.75};
  mt_assert_close(got, want, 2, 0.0, 0.0);
  free(got);
  assert_true(get_scale(g) == 128.0);
  mixp_grad_scaler_destroy(g);
  mixp_optimizer_destroy(opt);
  mixp_tensor_release(p);
  mixp_session_destroy(s);
}

/* The skipped-step counter: every update whose iteration overflowed (Inf or
 * NaN, in dynamic and static mode, one or several optimizers), counted on the
 * device without a wait. */
static int64_t get_skipped(const mixp_grad_scaler *g) {
  int64_t v = -1;
  MT_OK(mixp_grad_scaler_skipped_steps(g, &v));
  return v;
}

static void test_skipped_steps(void **state) {
  (void)state;
  mixp_session *s = mt_session();
  const double v[2] = {1.0, 2.0};
  mixp_tensor *p = mt_param(s, MIXP_F32, v, 2);
  mixp_optimizer *opt = mt_sgd(s, &p, 1, 0.5);
  for (int mode = 0; mode < 2; ++mode) {
    mixp_grad_scaler_options so;
    mixp_grad_scaler_options_init(&so);
    so.mode = mode ? MIXP_SCALER_STATIC : MIXP_SCALER_DYNAMIC;
    so.init_scale = 256.0;
    mixp_grad_scaler *g = scaler_with(s, &so);
    assert_int_equal(get_skipped(g), 0);
    static const int codes[] = {0, 1, 2, 0, 1, 0, 0};  /* clean, Inf, NaN, ... */
    int64_t want = 0;
    uint64_t syncs_before = 0, syncs_after = 0;
    for (size_t i = 0; i < sizeof codes / sizeof *codes; ++i) {
      MT_OK(mixp_session_host_syncs(s, &syncs_before));
      one_iteration(g, opt, p, codes[i]);
      MT_OK(mixp_session_host_syncs(s, &syncs_after));
      assert_true(syncs_after == syncs_before); /* counting never waits */
      want += codes[i] != 0;
      assert_int_equal(get_skipped(g), want);
      assert_int_equal(get_found(g), codes[i] != 0);
    }
    assert_int_equal(want, 3);
    mixp_grad_scaler_destroy(g);
  }
  /* Disabled: nothing is ever skipped. */
  mixp_grad_scaler_options so;
  mixp_grad_scaler_options_init(&so);
  so.mode = MIXP_SCALER_DISABLED;
  mixp_grad_scaler *g = scaler_with(s, &so);
  one_iteration(g, opt, p, 1);
  assert_int_equal(get_skipped(g), 0);
  int64_t n = 7;
  MT_FAILS(mixp_grad_scaler_skipped_steps(NULL, &n), MIXP_ERR_INVALID_ARGUMENT,
           "mixp_grad_scaler_skipped_steps: scaler is NULL");
  MT_FAILS(mixp_grad_scaler_skipped_steps(g, NULL), MIXP_ERR_INVALID_ARGUMENT, "count is NULL");
  assert_int_equal(n, 7);
  mixp_grad_scaler_destroy(g);
  mixp_optimizer_destroy(opt);
  mixp_tensor_release(p);
  mixp_session_destroy(s);
}

/* ---- AUTO mode -------------------------------------------------------------------------- */

static void test_auto_mode(void **state) {
  (void)state;
  mixp_session *s = mt_session();
  mixp_grad_scaler *g = scaler_with(s, NULL);
  assert_int_equal(mixp_grad_scaler_mode(g), MIXP_SCALER_DYNAMIC);
  mixp_grad_scaler_destroy(g);
  const mixp_dtype dts[2] = {MIXP_BF16, MIXP_F16};
  const mixp_scaler_mode want[2] = {MIXP_SCALER_DISABLED, MIXP_SCALER_DYNAMIC};
  for (int k = 0; k < 2; ++k) {
    mixp_autocast_options ao;
    mixp_autocast_options_init(&ao);
    ao.dtype = dts[k];
    MT_OK(mixp_autocast_push(s, &ao));
    g = scaler_with(s, NULL);
    assert_int_equal(mixp_grad_scaler_mode(g), want[k]);
    MT_OK(mixp_autocast_pop(s));
    /* Resolved once: leaving the region does not change it. */
    assert_int_equal(mixp_grad_scaler_mode(g), want[k]);
    mixp_grad_scaler_destroy(g);
  }
  /* Explicit modes win over the region. */
  mixp_autocast_options ao;
  mixp_autocast_options_init(&ao);
  ao.dtype = MIXP_BF16;
  MT_OK(mixp_autocast_push(s, &ao));
  mixp_grad_scaler_options so;
  mixp_grad_scaler_options_init(&so);
  so.mode = MIXP_SCALER_DYNAMIC;
  g = scaler_with(s, &so);
  assert_int_equal(mixp_grad_scaler_mode(g), MIXP_SCALER_DYNAMIC);
  /* scale() inside an O2 region still multiplies in fp32. */
  const double v[1] = {3.0};
  const int64_t shape[1] = {1};
  mixp_tensor *x = mt_tensor(s, MIXP_F32, v, shape, 1), *y = NULL;
  MT_OK(mixp_autocast_pop(s));
  ao.level = MIXP_AMP_O2;
  ao.dtype = MIXP_F16;
  MT_OK(mixp_autocast_push(s, &ao));
  MT_OK(mixp_grad_scaler_scale(g, x, &y));
  MT_OK(mixp_autocast_pop(s));
  assert_int_equal(mixp_tensor_dtype(y), MIXP_F32);
  double out = 0;
  MT_OK(mixp_tensor_item(y, &out));
  assert_true(out == 3.0 * 65536.0);
  mixp_tensor_release(y);
  mixp_tensor_release(x);
  mixp_grad_scaler_destroy(g);
  mixp_session_destroy(s);
}

/* ---- misuse ------------------------------------------------------------------------------- */

/* ---- below_one: the scale falling below 1 ----------------------------------------- */

typedef struct low_sink {
  int warnings;
  char last[512];
} low_sink;

static void low_sink_fn(void *user, mixp_log_level level, const char *message) {
  low_sink *k = (low_sink *)user;
  if (level == MIXP_LOG_WARNING) k->warnings++;
  snprintf(k->last, sizeof k->last, "%s", message);
}

/* Every step overflows (an Inf gradient): from scale 4 the backoff reaches
 * 2, 1, 0.5, 0.25. WARN logs once when it passes below 1; ERROR makes the
 * next scale() fail with MIXP_ERR_NUMERIC, naming the scale, until the
 * scale is 1 or more again; IGNORE does neither. */
static void test_below_one(void **state) {
  (void)state;
  for (int action = 0; action < 3; ++action) {
    mixp_session *s = mt_session();
    low_sink k = {0, ""};
    MT_OK(mixp_session_set_log_callback(s, low_sink_fn, &k));
    const double v[2] = {1, 2};
    mixp_tensor *p = mt_tensor(s, MIXP_F32, v, (int64_t[]){2}, 1);
    MT_OK(mixp_tensor_set_requires_grad(p, 1));
    mixp_optimizer *opt = NULL;
    mixp_optimizer_options oo;
    mixp_optimizer_options_init(&oo, MIXP_OPTIM_SGD);
    MT_OK(mixp_optimizer_create(s, &p, 1, &oo, &opt));
    mixp_grad_scaler_options o;
    mixp_grad_scaler_options_init(&o);
    assert_int_equal(o.below_one, MIXP_LOW_SCALE_IGNORE);
    o.mode = MIXP_SCALER_DYNAMIC;
    o.init_scale = 4.0;
    o.below_one = (mixp_low_scale_action)action;
    mixp_grad_scaler *g = scaler_with(s, &o);
    for (int i = 0; i < 2; ++i) one_iteration(g, opt, p, 1); /* 4 -> 2 -> 1 */
    assert_true(get_scale(g) == 1.0);
    assert_int_equal(k.warnings, 0);
    one_iteration(g, opt, p, 1); /* 1 -> 0.5 */
    assert_true(get_scale(g) == 0.5);
    assert_int_equal(k.warnings, action == MIXP_LOW_SCALE_WARN ? 1 : 0);
    if (action == MIXP_LOW_SCALE_WARN) assert_non_null(strstr(k.last, "fell to 0.5, below 1"));
    mixp_tensor *loss = NULL, *scaled = NULL;
    MT_OK(mixp_sum(p, NULL, 0, 0, &loss));
    if (action == MIXP_LOW_SCALE_ERROR) {
      scaled = (mixp_tensor *)0x1;
      MT_FAILS(mixp_grad_scaler_scale(g, loss, &scaled), MIXP_ERR_NUMERIC, "mixp_grad_scaler_scale: the loss scale fell to 0.5");
      assert_ptr_equal(scaled, (mixp_tensor *)0x1); /* nothing produced */
      assert_true(get_scale(g) == 0.5);             /* nothing changed */
      /* Back to 1 or more: scale() works again. */
      MT_OK(mixp_grad_scaler_update_to(g, 2.0));
      MT_OK(mixp_grad_scaler_scale(g, loss, &scaled));
      mixp_tensor_release(scaled);
      MT_OK(mixp_grad_scaler_update_to(g, 0.25));
      MT_FAILS(mixp_grad_scaler_scale(g, loss, &scaled), MIXP_ERR_NUMERIC, "fell to 0.25");
    } else {
      /* training goes on; WARN does not repeat */
      MT_OK(mixp_grad_scaler_scale(g, loss, &scaled));
      mixp_tensor_release(scaled);
      MT_OK(mixp_grad_scaler_update_to(g, 1.0));
      one_iteration(g, opt, p, 1);
      assert_int_equal(k.warnings, action == MIXP_LOW_SCALE_WARN ? 1 : 0);
    }
    mixp_tensor_release(loss);
    mixp_grad_scaler_destroy(g);
    mixp_optimizer_destroy(opt);
    mixp_tensor_release(p);
    mixp_session_destroy(s);
  }
}

/* A 0.3-sized options struct (before below_one) is accepted with IGNORE;
 * below_one survives load_state (it is the scaler's, not the state's). */
static void test_below_one_versions_and_state(void **state) {
  (void)state;
  mixp_session *s = mt_session();
  mixp_grad_scaler_options o;
  memset(&o, 0x5a, sizeof o);
  mixp_grad_scaler_options_init(&o);
  o.struct_size = (uint32_t)offsetof(mixp_grad_scaler_options, below_one);
  o.below_one = (mixp_low_scale_action)77; /* past the old end: not read */
  o.mode = MIXP_SCALER_DYNAMIC;
  mixp_grad_scaler *old = scaler_with(s, &o);
  mixp_grad_scaler_options_init(&o);
  o.mode = MIXP_SCALER_DYNAMIC;
  o.init_scale = 0.5;
  o.min_scale = 0.0;
  mixp_grad_scaler *low = scaler_with(s, &o); /* IGNORE: a low scale is fine */
  size_t n = 0;
  MT_OK(mixp_grad_scaler_state_size(low, &n));
  unsigned char *buf = (unsigned char *)malloc(n);
  size_t written = 0;
  MT_OK(mixp_grad_scaler_save_state(low, buf, n, &written));
  assert_int_equal(written, n);
  mixp_grad_scaler_options_init(&o);
  o.mode = MIXP_SCALER_DYNAMIC;
  o.below_one = MIXP_LOW_SCALE_ERROR;
  mixp_grad_scaler *strict = scaler_with(s, &o);
  MT_OK(mixp_grad_scaler_load_state(strict, buf, n)); /* scale 0.5 now, ERROR kept */
  const double v[1] = {1};
  mixp_tensor *loss = mt_tensor(s, MIXP_F32, v, (int64_t[]){1}, 1), *scaled = NULL;
  MT_FAILS(mixp_grad_scaler_scale(strict, loss, &scaled), MIXP_ERR_NUMERIC, "fell to 0.5");
  MT_OK(mixp_grad_scaler_scale(old, loss, &scaled));
  mixp_tensor_release(scaled);
  mixp_tensor_release(loss);
  free(buf);
  mixp_grad_scaler_destroy(old);
  mixp_grad_scaler_destroy(low);
  mixp_grad_scaler_destroy(strict);
  mixp_session_destroy(s);
}

static void test_create_misuse(void **state) {
  (void)state;
  mixp_session *s = mt_session();
  mixp_grad_scaler *g = (mixp_grad_scaler *)0x1;
  mixp_grad_scaler_options o;
  mixp_grad_scaler_options_init(&o);
  MT_FAILS(mixp_grad_scaler_create(NULL, &o, &g), MIXP_ERR_INVALID_ARGUMENT, "session is NULL");
  MT_FAILS(mixp_grad_scaler_create(s, &o, NULL), MIXP_ERR_INVALID_ARGUMENT, "out is NULL");
  assert_ptr_equal(g, (mixp_grad_scaler *)0x1);

#define BAD(field, value, needle)                                                   \
  do {                                                                              \
    mixp_grad_scaler_options_init(&o);                                              \
    o.field = value;                                                                \
    MT_FAILS(mixp_grad_scaler_create(s, &o, &g), MIXP_ERR_INVALID_ARGUMENT, needle); \
    assert_ptr_equal(g, (mixp_grad_scaler *)0x1);                                   \
  } while (0)
  BAD(struct_size, 8, "struct_size");
  BAD(struct_size, UINT32_MAX, "struct_size");
  BAD(below_one, (mixp_low_scale_action)3, "options->below_one is 3");
  BAD(below_one, (mixp_low_scale_action)-1, "options->below_one");
  BAD(mode, (mixp_scaler_mode)7, "options->mode is 7");
  BAD(mode, (mixp_scaler_mode)-1, "options->mode");
  BAD(init_scale, 0.0, "init_scale");
  BAD(init_scale, -1.0, "init_scale");
  BAD(init_scale, INFINITY, "init_scale");
  BAD(init_scale, NAN, "init_scale");
  BAD(init_scale, 1e300, "init_scale");
  BAD(growth_factor, 1.0, "growth_factor");
  BAD(growth_factor, INFINITY, "growth_factor");
  BAD(growth_factor, NAN, "growth_factor");
  BAD(backoff_factor, 1.0, "backoff_factor");
  BAD(backoff_factor, 0.0, "backoff_factor");
  BAD(backoff_factor, NAN, "backoff_factor");
  BAD(growth_interval, 0, "growth_interval");
  BAD(growth_interval, (int64_t)1 << 40, "growth_interval");
  BAD(decr_every_n_nan_or_inf, 0, "decr_every_n_nan_or_inf");
  BAD(hysteresis, -3, "hysteresis");
  BAD(min_scale, -1.0, "min_scale");
  BAD(min_scale, INFINITY, "min_scale");
  BAD(max_scale, 0.0, "max_scale");
  BAD(max_scale, NAN, "max_scale");
  BAD(max_scale, 100.0, "init_scale"); /* init 65536 above max */
  BAD(min_scale, 1e6, "init_scale");   /* fine bound, but init below min */
#undef BAD
  mixp_grad_scaler_options_init(&o);
  o.min_scale = 1e6;
  o.max_scale = 10.0;
  MT_FAILS(mixp_grad_scaler_create(s, &o, &g), MIXP_ERR_INVALID_ARGUMENT, "max_scale");

  /* Defaults, and NULL options = defaults. */
  mixp_grad_scaler_options_init(&o);
  assert_int_equal(o.struct_size, sizeof o);
  assert_int_equal(o.mode, MIXP_SCALER_AUTO);
  assert_true(o.init_scale == 65536.0 && o.growth_factor == 2.0 && o.backoff_factor == 0.5);
  assert_int_equal(o.growth_interval, 2000);
  assert_int_equal(o.decr_every_n_nan_or_inf, 1);
  assert_int_equal(o.hysteresis, 1);
  assert_true(o.min_scale == 0.0 && isinf(o.max_scale));
  mixp_grad_scaler_options_init(NULL);
  g = scaler_with(s, NULL);
  assert_true(get_scale(g) == 65536.0);
  mixp_grad_scaler_destroy(g);
  mixp_grad_scaler_destroy(NULL);

  /* A destroyed session kept alive by a tensor refuses new scalers. */
  const double v[1] = {1.0};
  const int64_t shape[1] = {1};
  mixp_tensor *keep = mt_tensor(s, MIXP_F32, v, shape, 1);
  mixp_session_destroy(s);
  g = (mixp_grad_scaler *)0x1;
  MT_FAILS(mixp_grad_scaler_create(s, NULL, &g), MIXP_ERR_STATE, "session was destroyed");
  assert_ptr_equal(g, (mixp_grad_scaler *)0x1);
  mixp_tensor_release(keep);
}

static void test_call_misuse(void **state) {
  (void)state;
  mixp_session *s = mt_session(), *s2 = mt_session();
  mixp_grad_scaler *g = scaler_with(s, NULL);
  const double v[2] = {1.0, 2.0};
  mixp_tensor *p = mt_param(s, MIXP_F32, v, 2), *p2 = mt_param(s2, MIXP_F32, v, 2);
  mixp_optimizer *opt = mt_sgd(s, &p, 1, 0.1), *opt2 = mt_sgd(s2, &p2, 1, 0.1);
  mixp_tensor *out = (mixp_tensor *)0x1;

  MT_FAILS(mixp_grad_scaler_scale(NULL, p, &out), MIXP_ERR_INVALID_ARGUMENT, "scaler is NULL");
  MT_FAILS(mixp_grad_scaler_scale(g, NULL, &out), MIXP_ERR_INVALID_ARGUMENT, "loss");
  MT_FAILS(mixp_grad_scaler_scale(g, p, NULL), MIXP_ERR_INVALID_ARGUMENT, "out is NULL");
  MT_FAILS(mixp_grad_scaler_scale(g, p2, &out), MIXP_ERR_DEVICE, "different session");
  const int64_t shape[1] = {2};
  const int32_t iv[2] = {1, 2};
  mixp_tensor *it = NULL;
  MT_OK(mixp_tensor_from_host(s, iv, sizeof iv, MIXP_I32, shape, 1, &it));
  MT_FAILS(mixp_grad_scaler_scale(g, it, &out), MIXP_ERR_DTYPE, "float");
  assert_ptr_equal(out, (mixp_tensor *)0x1);
  mixp_tensor_release(it);

  MT_FAILS(mixp_grad_scaler_unscale(NULL, opt), MIXP_ERR_INVALID_ARGUMENT, "scaler is NULL");
  MT_FAILS(mixp_grad_scaler_unscale(g, NULL), MIXP_ERR_INVALID_ARGUMENT, "optimizer is NULL");
  MT_FAILS(mixp_grad_scaler_unscale(g, opt2), MIXP_ERR_DEVICE, "different session");
  MT_FAILS(mixp_grad_scaler_step(NULL, opt), MIXP_ERR_INVALID_ARGUMENT, "scaler is NULL");
  MT_FAILS(mixp_grad_scaler_step(g, NULL), MIXP_ERR_INVALID_ARGUMENT, "optimizer is NULL");
  MT_FAILS(mixp_grad_scaler_step(g, opt2), MIXP_ERR_DEVICE, "different session");
  MT_FAILS(mixp_grad_scaler_update(NULL), MIXP_ERR_INVALID_ARGUMENT, "scaler is NULL");

  double d = -7;
  int fi = -7;
  int64_t gt = -7;
  size_t sz = 7;
  MT_FAILS(mixp_grad_scaler_get_scale(NULL, &d), MIXP_ERR_INVALID_ARGUMENT, "scaler is NULL");
  MT_FAILS(mixp_grad_scaler_get_scale(g, NULL), MIXP_ERR_INVALID_ARGUMENT, "scale is NULL");
  MT_FAILS(mixp_grad_scaler_found_inf(NULL, &fi), MIXP_ERR_INVALID_ARGUMENT, "scaler is NULL");
  MT_FAILS(mixp_grad_scaler_found_inf(g, NULL), MIXP_ERR_INVALID_ARGUMENT, "found_inf is NULL");
  MT_FAILS(mixp_grad_scaler_growth_tracker(NULL, &gt), MIXP_ERR_INVALID_ARGUMENT,
           "scaler is NULL");
  MT_FAILS(mixp_grad_scaler_growth_tracker(g, NULL), MIXP_ERR_INVALID_ARGUMENT,
           "growth_tracker is NULL");
  MT_FAILS(mixp_grad_scaler_state_size(NULL, &sz), MIXP_ERR_INVALID_ARGUMENT, "scaler is NULL");
  MT_FAILS(mixp_grad_scaler_state_size(g, NULL), MIXP_ERR_INVALID_ARGUMENT, "size is NULL");
  assert_true(d == -7 && fi == -7 && gt == -7 && sz == 7);
  assert_int_equal(mixp_grad_scaler_mode(NULL), MIXP_SCALER_AUTO);
  assert_non_null(strstr(mixp_last_error(), "scaler is NULL"));

  unsigned char buf[104];
  size_t w = 7;
  MT_FAILS(mixp_grad_scaler_save_state(NULL, buf, sizeof buf, &w), MIXP_ERR_INVALID_ARGUMENT,
           "scaler is NULL");
  MT_FAILS(mixp_grad_scaler_save_state(g, NULL, sizeof buf, &w), MIXP_ERR_INVALID_ARGUMENT,
           "buf is NULL");
  MT_FAILS(mixp_grad_scaler_save_state(g, buf, sizeof buf, NULL), MIXP_ERR_INVALID_ARGUMENT,
           "written is NULL");
  MT_FAILS(mixp_grad_scaler_save_state(g, buf, 103, &w), MIXP_ERR_INVALID_ARGUMENT,
           "capacity is 103");
  assert_int_equal(w, 7);
  MT_OK(mixp_grad_scaler_save_state(g, buf, sizeof buf, &w));
  MT_FAILS(mixp_grad_scaler_load_state(NULL, buf, w), MIXP_ERR_INVALID_ARGUMENT,
           "scaler is NULL");
  MT_FAILS(mixp_grad_scaler_load_state(g, NULL, w), MIXP_ERR_INVALID_ARGUMENT, "buf is NULL");

  /* A foreign handle is recognised and left alone. */
  uint64_t junk[16] = {0};
  MT_FAILS(mixp_grad_scaler_update((mixp_grad_scaler *)junk), MIXP_ERR_INVALID_ARGUMENT,
           "not a live grad scaler");
  mixp_grad_scaler_destroy((mixp_grad_scaler *)junk); /* ignored */

  mixp_grad_scaler_destroy(g);
  mixp_optimizer_destroy(opt);
  mixp_optimizer_destroy(opt2);
  mixp_tensor_release(p);
  mixp_tensor_release(p2);
  mixp_session_destroy(s);
  mixp_session_destroy(s2);
}

static void test_closed_session(void **state) {
  (void)state;
  mixp_session *s = mt_session();
  mixp_grad_scaler *g = scaler_with(s, NULL);
  const double v[2] = {1.0, 2.0};
  mixp_tensor *p = mt_param(s, MIXP_F32, v, 2);
  mixp_optimizer *opt = mt_sgd(s, &p, 1, 0.1);
  mixp_session_destroy(s);
  mixp_tensor *out = NULL;
  MT_FAILS(mixp_grad_scaler_scale(g, p, &out), MIXP_ERR_STATE, "session was destroyed");
  MT_FAILS(mixp_grad_scaler_unscale(g, opt), MIXP_ERR_STATE, "session was destroyed");
  MT_FAILS(mixp_grad_scaler_update(g), MIXP_ERR_STATE, "session was destroyed");
  double d = 0;
  MT_OK(mixp_grad_scaler_get_scale(g, &d)); /* reading stays possible */
  assert_true(d == 65536.0);
  mixp_grad_scaler_destroy(g);
  mixp_optimizer_destroy(opt);
  mixp_tensor_release(p);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_golden_trajectories),
      cmocka_unit_test(test_scale_values_and_gradient),
      cmocka_unit_test(test_unscale_divides_in_place),
      cmocka_unit_test(test_state_machine),
      cmocka_unit_test(test_update_to),
      cmocka_unit_test(test_save_load_continuation),
      cmocka_unit_test(test_load_corrupt),
      cmocka_unit_test(test_overflow_recovery),
      cmocka_unit_test(test_two_optimizers_one_backoff),
      cmocka_unit_test(test_static_skips),
      cmocka_unit_test(test_skipped_steps),
      cmocka_unit_test(test_auto_mode),
      cmocka_unit_test(test_below_one),
      cmocka_unit_test(test_below_one_versions_and_state),
      cmocka_unit_test(test_create_misuse),
      cmocka_unit_test(test_call_misuse),
      cmocka_unit_test(test_closed_session),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
