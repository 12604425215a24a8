/* The numerics checker (warn and error modes, forward and backward, the
 * report, the session option, op filters, step ranges, the fp16-overflow
 * check), the log callback, and the TF32 switch with
 * its MIXP_TF32_OVERRIDE environment variable. */
#include <stddef.h>
#include <unistd.h>

#include "test_util.h"

/* ---- a log sink that records what it receives ------------------------------------ */

typedef struct log_sink {
  int calls;
  int warnings;
  char last[1024];
  mixp_log_level last_level;
} log_sink;

static void sink_fn(void *user, mixp_log_level level, const char *message) {
  log_sink *k = (log_sink *)user;
  k->calls++;
  if (level == MIXP_LOG_WARNING) k->warnings++;
  k->last_level = level;
  snprintf(k->last, sizeof k->last, "%s", message);
}

static mixp_session *session_with(mixp_numerics_mode mode, log_sink *sink) {
  mixp_session *s = mt_session();
  MT_OK(mixp_session_set_numerics_check(s, mode));
  if (sink) {
    memset(sink, 0, sizeof *sink);
    MT_OK(mixp_session_set_log_callback(s, sink_fn, sink));
  }
  return s;
}

static void assert_contains(const char *hay, const char *needle) {
  if (!strstr(hay, needle)) {
    print_error("\"%s\" lacks \"%s\"\n", hay, needle);
    fail();
  }
}

/* [2,3] F32 with one negative entry: log gives exactly one NaN. */
static mixp_tensor *with_negative(mixp_session *s, mixp_dtype dt) {
  const double v[6] = {1, 2, -3, 4, 5, 6};
  const int64_t shape[2] = {2, 3};
  return mt_tensor(s, dt, v, shape, 2);
}

/* ---- warn mode ------------------------------------------------------------------------ */

static void test_warn_forward_nan(void **state) {
  (void)state;
  log_sink k;
  mixp_session *s = session_with(MIXP_NUMERICS_WARN, &k);
  mixp_tensor *x = with_negative(s, MIXP_F32), *y = NULL;
  assert_string_equal(mixp_session_numerics_report(s), "");
  MT_OK(mixp_log(x, &y)); /* warn mode: the op succeeds */
  assert_non_null(y);
  assert_int_equal(k.calls, 1);
  assert_int_equal(k.last_level, MIXP_LOG_WARNING);
  assert_contains(k.last, "'log'");
  assert_contains(k.last, "forward");
  assert_contains(k.last, "output 0");
  assert_contains(k.last, "f32");
  assert_contains(k.last, "[2,3]");
  assert_contains(k.last, "1 NaN, 0 Inf");
  assert_contains(k.last, "of 6 elements");
  assert_string_equal(mixp_session_numerics_report(s), k.last);
  double *v = mt_values(y);
  assert_true(isnan(v[2]));
  assert_true(fabs(v[1] - log(2.0)) < 1e-6);
  free(v);
  mixp_tensor_release(y);

  /* A finite op logs nothing and keeps the last report. */
  MT_OK(mixp_exp(x, &y));
  assert_int_equal(k.calls, 1);
  assert_contains(mixp_session_numerics_report(s), "'log'");
  mixp_tensor_release(y);

  /* Overflow to Inf, in f16, on a 1-D tensor. */
  const double big[3] = {1, 30000, -40000};
  const int64_t n3[1] = {3};
  mixp_tensor *h = mt_tensor(s, MIXP_F16, big, n3, 1);
  MT_OK(mixp_mul_scalar(h, 4.0, &y));
  assert_int_equal(k.calls, 2);
  assert_contains(k.last, "'mul_scalar'");
  assert_contains(k.last, "f16 [3]");
  assert_contains(k.last, "0 NaN, 2 Inf of 3 elements");
  mixp_tensor_release(y);

  /* Inf and NaN together, output 0 of a two-output op (max values). */
  const double mixed[4] = {INFINITY, 1, NAN, 2};
  const int64_t s22[2] = {2, 2};
  mixp_tensor *m = mt_tensor(s, MIXP_F64, mixed, s22, 2), *idx = NULL;
  MT_OK(mixp_max(m, 1, 0, &y, &idx));
  assert_int_equal(k.calls, 3);
  assert_contains(k.last, "'max'");
  assert_contains(k.last, "output 0");
  assert_contains(k.last, "f64 [2]");
  mixp_tensor_release(y);
  mixp_tensor_release(idx);
  mixp_tensor_release(m);
  mixp_tensor_release(h);
  mixp_tensor_release(x);
  mixp_session_destroy(s);
}

/* Only the op the user called is checked, not the ops it runs inside: an
 * mse_loss that overflows is reported as mse_loss (not as its mul). */
static void test_reports_the_called_op(void **state) {
  (void)state;
  log_sink k;
  mixp_session *s = session_with(MIXP_NUMERICS_WARN, &k);
  const double av[2] = {1e30, 0}, bv[2] = {-1e30, 0};
  const int64_t shape[1] = {2};
  mixp_tensor *a = mt_tensor(s, MIXP_F32, av, shape, 1), *b = mt_tensor(s, MIXP_F32, bv, shape, 1);
  mixp_tensor *l = NULL;
  MT_OK(mixp_mse_loss(a, b, MIXP_REDUCTION_MEAN, &l));
  assert_int_equal(k.calls, 1);
  assert_contains(k.last, "'mse_loss'");
  assert_contains(k.last, "f32 []");
  assert_contains(k.last, "0 NaN, 1 Inf of 1 elements");
  mixp_tensor_release(l);
  mixp_tensor_release(a);
  mixp_tensor_release(b);
  mixp_session_destroy(s);
}

/* A diverged run does not flood the log, but the report stays current. */
static void test_warn_throttles_the_log(void **state) {
  (void)state;
  log_sink k;
  mixp_session *s = session_with(MIXP_NUMERICS_WARN, &k);
  mixp_tensor *x = with_negative(s, MIXP_F32), *y = NULL;
  for (int i = 0; i < 40; ++i) {
    MT_OK(i % 2 ? mixp_log(x, &y) : mixp_sqrt(x, &y));
    mixp_tensor_release(y);
    assert_contains(mixp_session_numerics_report(s), i % 2 ? "'log'" : "'sqrt'");
  }
  assert_true(k.calls >= 1 && k.calls < 40);
  assert_int_equal(k.calls, k.warnings);
  /* The last message logged says that later ones are thinned out. */
  assert_contains(k.last, "further reports");
  /* Setting the mode again starts afresh. */
  MT_OK(mixp_session_set_numerics_check(s, MIXP_NUMERICS_WARN));
  assert_string_equal(mixp_session_numerics_report(s), "");
  const int before = k.calls;
  MT_OK(mixp_log(x, &y));
  mixp_tensor_release(y);
  assert_int_equal(k.calls, before + 1);
  mixp_tensor_release(x);
  mixp_session_destroy(s);
}

/* ---- error mode ------------------------------------------------------------------------ */

static uint64_t mem_now(mixp_session *s) {
  mixp_memory_stats st;
  st.struct_size = sizeof st;
  MT_OK(mixp_memory_stats_get(s, &st));
  return st.current_bytes;
}

static void test_error_forward(void **state) {
  (void)state;
  log_sink k;
  mixp_session *s = session_with(MIXP_NUMERICS_ERROR, &k);
  mixp_tensor *x = with_negative(s, MIXP_F32);
  MT_OK(mixp_tensor_set_requires_grad(x, 1));
  const uint64_t base = mem_now(s);
  mixp_tensor *sentinel = (mixp_tensor *)(uintptr_t)0x1234, *y = sentinel;
  MT_FAILS(mixp_log(x, &y), MIXP_ERR_NUMERIC, "'log'");
  assert_ptr_equal(y, sentinel); /* out untouched */
  const char *msg = mixp_last_error();
  assert_contains(msg, "forward");
  assert_contains(msg, "output 0");
  assert_contains(msg, "f32 [2,3]");
  assert_contains(msg, "1 NaN, 0 Inf");
  /* The same report, and no log message: the error is the report. */
  assert_contains(msg, mixp_session_numerics_report(s));
  assert_contains(mixp_session_numerics_report(s), "'log'");
  assert_int_equal(k.calls, 0);
  /* Nothing is left behind: no tensor, no gradient, x unchanged. */
  assert_int_equal(mem_now(s), base);
  mixp_tensor *g = sentinel;
  MT_OK(mixp_tensor_grad(x, &g));
  assert_null(g);
  double *v = mt_values(x);
  assert_true(v[2] == -3 && v[0] == 1);
  free(v);
  /* Finite ops still work. */
  MT_OK(mixp_exp(x, &y));
  mixp_tensor_release(y);
  mixp_tensor_release(x);
  mixp_session_destroy(s);
}

/* A failed random op does not consume random numbers: the next dropout
 * draws the mask a fresh session with the same seed draws. */
static void test_error_keeps_rng(void **state) {
  (void)state;
  mixp_session *s = session_with(MIXP_NUMERICS_ERROR, NULL);
  mixp_session *ref = mt_session();
  const double nanv[4] = {NAN, 1, 1, 1};
  double ones[64];
  for (int i = 0; i < 64; ++i) ones[i] = 1;
  const int64_t s4[1] = {4}, s64[1] = {64};
  mixp_tensor *bad = mt_tensor(s, MIXP_F32, nanv, s4, 1), *y = NULL;
  MT_FAILS(mixp_dropout(bad, 0.5, 1, &y), MIXP_ERR_NUMERIC, "'dropout'");
  mixp_tensor *a = mt_tensor(s, MIXP_F32, ones, s64, 1), *b = mt_tensor(ref, MIXP_F32, ones, s64, 1);
  mixp_tensor *ya = NULL, *yb = NULL;
  MT_OK(mixp_dropout(a, 0.5, 1, &ya));
  MT_OK(mixp_dropout(b, 0.5, 1, &yb));
  double *va = mt_values(ya), *vb = mt_values(yb);
  mt_assert_close(va, vb, 64, 0, 0);
  free(va);
  free(vb);
  mixp_tensor *all[5] = {bad, a, b, ya, yb};
  for (int i = 0; i < 5; ++i) mixp_tensor_release(all[i]);
  mixp_session_destroy(ref);
  mixp_session_destroy(s);
}

/* ---- backward ----------------------------------------------------------------------------- */

/* sqrt at 0 is finite (0) but its gradient 1/(2 sqrt x) is +Inf there. */
static void sqrt_graph(mixp_session *s, mixp_tensor **x, mixp_tensor **loss) {
  const double v[2] = {0, 4};
  const int64_t shape[1] = {2};
  *x = mt_tensor(s, MIXP_F32, v, shape, 1);
  MT_OK(mixp_tensor_set_requires_grad(*x, 1));
  mixp_tensor *y = NULL;
  MT_OK(mixp_sqrt(*x, &y));
  MT_OK(mixp_sum(y, NULL, 0, 0, loss));
  mixp_tensor_release(y);
}

static void test_warn_backward_only(void **state) {
  (void)state;
  log_sink k;
  mixp_session *s = session_with(MIXP_NUMERICS_WARN, &k);
  mixp_tensor *x = NULL, *loss = NULL;
  sqrt_graph(s, &x, &loss);
  assert_int_equal(k.calls, 0); /* the forward pass is finite */
  MT_OK(mixp_backward(loss, NULL));
  assert_int_equal(k.calls, 1);
  assert_contains(k.last, "'sqrt'");
  assert_contains(k.last, "backward");
  assert_contains(k.last, "output 0");
  assert_contains(k.last, "f32 [2]");
  assert_contains(k.last, "0 NaN, 1 Inf of 2 elements");
  assert_string_equal(mixp_session_numerics_report(s), k.last);
  mixp_tensor *g = NULL;
  MT_OK(mixp_tensor_grad(x, &g));
  double gv[2];
  mixp_tensor *g32 = NULL;
  MT_OK(mixp_cast(g, MIXP_F64, &g32));
  MT_OK(mixp_tensor_to_host(g32, gv, sizeof gv));
  assert_true(isinf(gv[0]) && gv[0] > 0);
  assert_true(fabs(gv[1] - 0.25) < 1e-7);
  mixp_tensor_release(g32);
  mixp_tensor_release(g);
  mixp_tensor_release(loss);
  mixp_tensor_release(x);
  mixp_session_destroy(s);
}

static void test_error_backward(void **state) {
  (void)state;
  log_sink k;
  mixp_session *s = session_with(MIXP_NUMERICS_OFF, &k);
  mixp_tensor *x = NULL, *loss = NULL;
  sqrt_graph(s, &x, &loss);
  /* A gradient from an earlier pass must survive the failed one. */
  mixp_tensor *y = NULL, *l2 = NULL;
  MT_OK(mixp_mul_scalar(x, 3.0, &y));
  MT_OK(mixp_sum(y, NULL, 0, 0, &l2));
  MT_OK(mixp_backward(l2, NULL));

  MT_OK(mixp_session_set_numerics_check(s, MIXP_NUMERICS_ERROR));
  MT_FAILS(mixp_backward(loss, NULL), MIXP_ERR_NUMERIC, "'sqrt'");
  assert_contains(mixp_last_error(), "backward");
  assert_contains(mixp_last_error(), "0 NaN, 1 Inf");
  assert_contains(mixp_session_numerics_report(s), "backward");
  assert_int_equal(k.calls, 0);
  MT_OK(mixp_session_set_numerics_check(s, MIXP_NUMERICS_OFF));
  mixp_tensor *g = NULL;
  MT_OK(mixp_tensor_grad(x, &g));
  double *gv = mt_values(g);
  const double three[2] = {3, 3};
  mt_assert_close(gv, three, 2, 0, 0);
  free(gv);
  mixp_tensor_release(g);

  /* The failed pass kept the graph: with the checker off it runs. */
  MT_OK(mixp_backward(loss, NULL));
  MT_OK(mixp_tensor_grad(x, &g));
  gv = mt_values(g);
  assert_true(isinf(gv[0]) && fabs(gv[1] - 3.25) < 1e-6);
  free(gv);
  mixp_tensor_release(g);
  assert_int_equal(k.calls, 0);
  mixp_tensor *all[4] = {x, loss, y, l2};
  for (int i = 0; i < 4; ++i) mixp_tensor_release(all[i]);
  mixp_session_destroy(s);
}

/* ---- off mode, the session option, misuse ---------------------------------------------- */

static void test_off_mode(void **state) {
  (void)state;
  log_sink k;
  mixp_session *s = session_with(MIXP_NUMERICS_WARN, &k);
  mixp_tensor *x = with_negative(s, MIXP_F32), *y = NULL;
  MT_OK(mixp_log(x, &y));
  mixp_tensor_release(y);
  assert_int_equal(k.calls, 1);
  /* Switching off clears the report; non-finite values pass silently. */
  MT_OK(mixp_session_set_numerics_check(s, MIXP_NUMERICS_OFF));
  assert_string_equal(mixp_session_numerics_report(s), "");
  MT_OK(mixp_log(x, &y));
  mixp_tensor *x2 = NULL, *loss = NULL;
  sqrt_graph(s, &x2, &loss);
  MT_OK(mixp_backward(loss, NULL));
  assert_int_equal(k.calls, 1);
  assert_string_equal(mixp_session_numerics_report(s), "");
  mixp_tensor_release(y);
  mixp_tensor_release(x2);
  mixp_tensor_release(loss);
  mixp_tensor_release(x);
  mixp_session_destroy(s);

  /* The default of a new session is off. */
  s = mt_session();
  memset(&k, 0, sizeof k);
  MT_OK(mixp_session_set_log_callback(s, sink_fn, &k));
  x = with_negative(s, MIXP_F32);
  MT_OK(mixp_log(x, &y));
  assert_int_equal(k.calls, 0);
  assert_string_equal(mixp_session_numerics_report(s), "");
  mixp_tensor_release(y);
  mixp_tensor_release(x);
  mixp_session_destroy(s);
}

static mixp_session *create_with(mixp_numerics_mode mode, int tf32) {
  mixp_session_options o;
  mixp_session_options_init(&o);
  o.num_threads = 2;
  o.check_numerics = mode;
  o.allow_tf32 = tf32;
  mixp_session *s = NULL;
  MT_OK(mixp_session_create(&o, &s));
  return s;
}

static void test_option_at_create(void **state) {
  (void)state;
  mixp_session_options o;
  mixp_session_options_init(&o);
  assert_int_equal(o.check_numerics, MIXP_NUMERICS_OFF);
  assert_int_equal(o.allow_tf32, 0);

  mixp_session *s = create_with(MIXP_NUMERICS_ERROR, 0);
  mixp_tensor *x = with_negative(s, MIXP_F32), *y = NULL;
  MT_FAILS(mixp_log(x, &y), MIXP_ERR_NUMERIC, "'log'");
  assert_null(y);
  mixp_tensor_release(x);
  mixp_session_destroy(s);

  log_sink k;
  memset(&k, 0, sizeof k);
  s = create_with(MIXP_NUMERICS_WARN, 0);
  MT_OK(mixp_session_set_log_callback(s, sink_fn, &k));
  x = with_negative(s, MIXP_F32);
  MT_OK(mixp_log(x, &y));
  assert_int_equal(k.calls, 1);
  mixp_tensor_release(y);
  mixp_tensor_release(x);
  mixp_session_destroy(s);

  /* Invalid modes are refused, and nothing is created. */
  const int bad[3] = {-1, 3, 1 << 20};
  for (int i = 0; i < 3; ++i) {
    mixp_session_options_init(&o);
    o.check_numerics = (mixp_numerics_mode)bad[i];
    mixp_session *out = (mixp_session *)(uintptr_t)0x77;
    MT_FAILS(mixp_session_create(&o, &out), MIXP_ERR_INVALID_ARGUMENT, "check_numerics");
    assert_ptr_equal(out, (mixp_session *)(uintptr_t)0x77);
  }

  /* An older caller's struct, without the new fields: their defaults apply,
   * whatever lies in memory after it. */
  memset(&o, 0, sizeof o);
  mixp_session_options_init(&o);
  o.allow_tf32 = 1;
  o.check_numerics = (mixp_numerics_mode)99;
  o.struct_size = (uint32_t)offsetof(mixp_session_options, allow_tf32);
  s = NULL;
  MT_OK(mixp_session_create(&o, &s));
  assert_int_equal(mixp_session_tf32(s), 0);
  x = with_negative(s, MIXP_F32);
  MT_OK(mixp_log(x, &y));
  assert_string_equal(mixp_session_numerics_report(s), "");
  mixp_tensor_release(y);
  mixp_tensor_release(x);
  mixp_session_destroy(s);
}

static void test_set_mode_misuse(void **state) {
  (void)state;
  mixp_session *s = session_with(MIXP_NUMERICS_WARN, NULL);
  MT_FAILS(mixp_session_set_numerics_check(NULL, MIXP_NUMERICS_WARN), MIXP_ERR_INVALID_ARGUMENT,
           "session is NULL");
  MT_FAILS(mixp_session_set_numerics_check(s, (mixp_numerics_mode)3), MIXP_ERR_INVALID_ARGUMENT,
           "mode is 3");
  MT_FAILS(mixp_session_set_numerics_check(s, (mixp_numerics_mode)-1), MIXP_ERR_INVALID_ARGUMENT,
           "mode is -1");
  /* The mode is unchanged (still warn: the op succeeds and reports). */
  mixp_tensor *x = with_negative(s, MIXP_F32), *y = NULL;
  log_sink k;
  memset(&k, 0, sizeof k);
  MT_OK(mixp_session_set_log_callback(s, sink_fn, &k));
  MT_OK(mixp_log(x, &y));
  assert_int_equal(k.calls, 1);
  mixp_tensor_release(y);
  mixp_tensor_release(x);
  assert_string_equal(mixp_session_numerics_report(NULL), "");
  MT_FAILS(mixp_session_set_log_callback(NULL, sink_fn, &k), MIXP_ERR_INVALID_ARGUMENT,
           "session is NULL");
  mixp_session_destroy(s);
}

/* ---- the log callback ------------------------------------------------------------------ */

/* Runs log(negative) with stderr redirected to a file; returns what it got. */
static void warn_to_stderr(mixp_session *s, char *buf, size_t cap) {
  fflush(stderr);
  FILE *tmp = tmpfile();
  assert_non_null(tmp);
  const int saved = dup(2);
  assert_true(saved >= 0);
  assert_true(dup2(fileno(tmp), 2) >= 0);
  mixp_tensor *x = with_negative(s, MIXP_F32), *y = NULL;
  MT_OK(mixp_log(x, &y));
  fflush(stderr);
  assert_true(dup2(saved, 2) >= 0);
  close(saved);
  rewind(tmp);
  size_t n = fread(buf, 1, cap - 1, tmp);
  buf[n] = '\0';
  fclose(tmp);
  mixp_tensor_release(y);
  mixp_tensor_release(x);
}

/* ---- filters, steps and the fp16-overflow check (mixp_session_set_numerics_options) ---- */

static mixp_session *session_opts(const mixp_numerics_options *o, log_sink *sink) {
  mixp_session *s = mt_session();
  MT_OK(mixp_session_set_numerics_options(s, o));
  memset(sink, 0, sizeof *sink);
  MT_OK(mixp_session_set_log_callback(s, sink_fn, sink));
  return s;
}

/* A session whose checker warns, with the fp16-overflow check. */
static mixp_session *overflow_checker(log_sink *sink) {
  mixp_numerics_options o;
  mixp_numerics_options_init(&o);
  o.mode = MIXP_NUMERICS_WARN;
  o.fp16_overflow = 1;
  return session_opts(&o, sink);
}

/* Only the listed ops are looked at; excluded ones never. */
static void test_op_filters(void **state) {
  (void)state;
  log_sink k;
  mixp_numerics_options o;
  mixp_numerics_options_init(&o);
  o.mode = MIXP_NUMERICS_WARN;
  const char *only[1] = {"exp"};
  o.include_ops = only;
  o.n_include = 1;
  mixp_session *s = session_opts(&o, &k);
  mixp_tensor *x = with_negative(s, MIXP_F32), *y = NULL, *z = NULL;
  MT_OK(mixp_log(x, &y)); /* NaN, but log is not in the list */
  assert_int_equal(k.calls, 0);
  const double big[2] = {100, 1000};
  const int64_t n2[1] = {2};
  mixp_tensor *b = mt_tensor(s, MIXP_F32, big, n2, 1);
  MT_OK(mixp_exp(b, &z)); /* exp(1000) = Inf */
  assert_int_equal(k.calls, 1);
  assert_contains(k.last, "'exp'");
  mixp_tensor_release(y);
  mixp_tensor_release(z);
  mixp_session_destroy(s);

  mixp_numerics_options_init(&o);
  o.mode = MIXP_NUMERICS_ERROR;
  const char *never[2] = {"log", "sqrt"};
  o.exclude_ops = never;
  o.n_exclude = 2;
  s = session_opts(&o, &k);
  mixp_tensor *x2 = with_negative(s, MIXP_F32);
  MT_OK(mixp_log(x2, &y)); /* excluded: no error */
  mixp_tensor *b2 = mt_tensor(s, MIXP_F32, big, n2, 1);
  MT_FAILS(mixp_exp(b2, &z), MIXP_ERR_NUMERIC, "'exp'");
  mixp_tensor_release(y);
  mixp_tensor_release(x);
  mixp_tensor_release(b);
  mixp_tensor_release(x2);
  mixp_tensor_release(b2);
  mixp_session_destroy(s);
}

/* The step range counts optimizer steps from the call that set it. */
static void test_step_range(void **state) {
  (void)state;
  log_sink k;
  mixp_numerics_options o;
  mixp_numerics_options_init(&o);
  o.mode = MIXP_NUMERICS_WARN;
  o.start_step = 1;
  o.end_step = 2;
  mixp_session *s = session_opts(&o, &k);
  const double v[2] = {1, 2};
  const int64_t n2[1] = {2};
  mixp_tensor *p = mt_tensor(s, MIXP_F32, v, n2, 1);
  MT_OK(mixp_tensor_set_requires_grad(p, 1));
  mixp_optimizer *opt = NULL;
  mixp_optimizer_options oo;
  mixp_optimizer_options_init(&oo, MIXP_OPTIM_SGD);
  MT_OK(mixp_optimizer_create(s, &p, 1, &oo, &opt));
  int seen[3];
  for (int step = 0; step < 3; ++step) {
    mixp_tensor *x = with_negative(s, MIXP_F32), *y = NULL, *l = NULL, *sum = NULL;
    const int before = k.calls;
    MT_OK(mixp_log(x, &y)); /* NaN every step */
    seen[step] = k.calls - before;
    MT_OK(mixp_sum(p, NULL, 0, 0, &sum));
    MT_OK(mixp_backward(sum, NULL));
    MT_OK(mixp_optimizer_step(opt));
    mixp_tensor *tmp[] = {x, y, l, sum};
    for (int i = 0; i < 4; ++i) mixp_tensor_release(tmp[i]);
  }
  assert_int_equal(seen[0], 0);
  assert_int_equal(seen[1], 1);
  assert_int_equal(seen[2], 0);
  mixp_optimizer_destroy(opt);
  mixp_tensor_release(p);
  mixp_session_destroy(s);
}

/* fp16_overflow: finite fp32 (and bf16) values an fp16 cannot hold are
 * reported, counted exactly from the boundary 65520 (65519 rounds to 65504). */
static void test_fp16_overflow(void **state) {
  (void)state;
  log_sink k;
  mixp_session *s = overflow_checker(&k);
  const double v[5] = {65519, -65520, 1e30, 3, -70000};
  const int64_t n5[1] = {5};
  for (int d = 0; d < 3; ++d) {
    const mixp_dtype dt = d == 0 ? MIXP_F32 : d == 1 ? MIXP_F64 : MIXP_BF16;
    mixp_tensor *x = mt_tensor(s, dt, v, n5, 1), *y = NULL;
    const int before = k.calls;
    MT_OK(mixp_mul_scalar(x, 1.0, &y));
    assert_int_equal(k.calls, before + 1);
    assert_contains(k.last, "would overflow fp16");
    assert_contains(k.last, "'mul_scalar'");
    /* bf16 rounds 65519 up to 65536: four values then */
    assert_contains(k.last, d == 2 ? "4 of 5 elements" : "3 of 5 elements");
    mixp_tensor_release(x);
    mixp_tensor_release(y);
  }
  /* Non-finite values come first, with the overflow count beside them. */
  const double w[3] = {NAN, 1e6, 1};
  const int64_t n3[1] = {3};
  mixp_tensor *x = mt_tensor(s, MIXP_F32, w, n3, 1), *y = NULL;
  MT_OK(mixp_mul_scalar(x, 1.0, &y));
  assert_contains(k.last, "1 NaN, 0 Inf of 3 elements; 1 finite values would overflow fp16");
  mixp_tensor_release(x);
  mixp_tensor_release(y);
  /* Without the option, the same values pass silently. */
  MT_OK(mixp_session_set_numerics_check(s, MIXP_NUMERICS_OFF));
  mixp_numerics_options o;
  mixp_numerics_options_init(&o);
  o.mode = MIXP_NUMERICS_WARN;
  MT_OK(mixp_session_set_numerics_options(s, &o));
  const int before = k.calls;
  mixp_tensor *big = mt_tensor(s, MIXP_F32, v, n5, 1);
  MT_OK(mixp_mul_scalar(big, 1.0, &y));
  assert_int_equal(k.calls, before);
  mixp_tensor_release(big);
  mixp_tensor_release(y);
  mixp_session_destroy(s);
}

/* Counting is exact on large tensors (split over threads) and strided views. */
static void test_counts_large_and_strided(void **state) {
  (void)state;
  log_sink k;
  mixp_session *s = overflow_checker(&k);
  enum { N = 300001 };
  double *v = (double *)malloc(N * sizeof(double));
  for (int i = 0; i < N; ++i) v[i] = (i % 7 == 0) ? NAN : (i % 11 == 0) ? INFINITY : (i % 13 == 0) ? 1e5 : 1.0;
  int nan = 0, inf = 0, huge = 0;
  for (int i = 0; i < N; ++i) nan += isnan(v[i]), inf += isinf(v[i]), huge += v[i] == 1e5;
  const int64_t n[1] = {N};
  mixp_tensor *x = mt_tensor(s, MIXP_F32, v, n, 1), *y = NULL;
  MT_OK(mixp_mul_scalar(x, 1.0, &y));
  char want[128];
  snprintf(want, sizeof want, "%d NaN, %d Inf of %d elements; %d finite", nan, inf, N, huge);
  assert_contains(k.last, want);
  mixp_tensor_release(y);
  /* a transposed view: every element once */
  const int64_t shape[2] = {3, 5};
  double w[15];
  for (int i = 0; i < 15; ++i) w[i] = i == 4 || i == 9 ? NAN : 1.0;
  mixp_tensor *m = mt_tensor(s, MIXP_F32, w, shape, 2), *t = NULL;
  MT_OK(mixp_transpose(m, 0, 1, &t));
  MT_OK(mixp_mul_scalar(t, 1.0, &y));
  assert_contains(k.last, "2 NaN, 0 Inf of 15 elements");
  mixp_tensor_release(y);
  mixp_tensor_release(t);
  mixp_tensor_release(m);
  mixp_tensor_release(x);
  free(v);
  mixp_session_destroy(s);
}

static void test_options_misuse(void **state) {
  (void)state;
  mixp_session *s = mt_session();
  mixp_numerics_options o, bad;
  mixp_numerics_options_init(&o);
  assert_int_equal(o.struct_size, sizeof o);
  assert_true(o.mode == MIXP_NUMERICS_OFF && o.start_step == 0 && o.end_step == -1 && o.fp16_overflow == 0);
  mixp_numerics_options_init(NULL);
  MT_FAILS(mixp_session_set_numerics_options(NULL, &o), MIXP_ERR_INVALID_ARGUMENT, "session");
  MT_FAILS(mixp_session_set_numerics_options(s, NULL), MIXP_ERR_INVALID_ARGUMENT, "options is NULL");
  const char *names[2] = {"exp", "no_such_op"};
  const char *holes[1] = {NULL};
#define BAD(stmt, needle)                                                                   \
  do {                                                                                      \
    mixp_numerics_options_init(&bad);                                                       \
    stmt;                                                                                   \
    MT_FAILS(mixp_session_set_numerics_options(s, &bad), MIXP_ERR_INVALID_ARGUMENT, needle); \
  } while (0)
  BAD(bad.struct_size = 4, "struct_size");
  BAD(bad.struct_size = UINT32_MAX, "struct_size");
  BAD(bad.mode = (mixp_numerics_mode)9, "options->mode");
  BAD(bad.n_include = -1, "n_include is negative");
  BAD(bad.n_include = 3, "include_ops is NULL");
  BAD((bad.include_ops = names, bad.n_include = 2), "unknown op 'no_such_op'");
  BAD((bad.exclude_ops = holes, bad.n_exclude = 1), "exclude_ops[0] is NULL");
  BAD(bad.n_exclude = INT32_MIN, "n_exclude is negative");
  BAD(bad.start_step = -1, "start_step");
  BAD(bad.start_step = INT64_MIN, "start_step");
  BAD((bad.start_step = 5, bad.end_step = 4), "end_step");
  BAD(bad.end_step = -2, "end_step");
  BAD(bad.fp16_overflow = 2, "fp16_overflow");
#undef BAD
  /* A failed call changed nothing: the checker is still off. */
  mixp_tensor *x = with_negative(s, MIXP_F32), *y = NULL;
  MT_OK(mixp_log(x, &y));
  assert_string_equal(mixp_session_numerics_report(s), "");
  mixp_tensor_release(x);
  mixp_tensor_release(y);
  mixp_session_destroy(s);
}

static void test_log_callback_null_restores_default(void **state) {
  (void)state;
  char buf[2048];
  mixp_session *s = session_with(MIXP_NUMERICS_WARN, NULL);
  /* Default: warnings go to stderr. */
  warn_to_stderr(s, buf, sizeof buf);
  assert_contains(buf, "warning");
  assert_contains(buf, "'log'");
  /* With a callback: to the callback, with its user data, not to stderr. */
  log_sink k;
  memset(&k, 0, sizeof k);
  MT_OK(mixp_session_set_log_callback(s, sink_fn, &k));
  warn_to_stderr(s, buf, sizeof buf);
  assert_string_equal(buf, "");
  assert_int_equal(k.calls, 1);
  assert_contains(k.last, "'log'");
  /* NULL: back to stderr, the old callback is not called any more. */
  MT_OK(mixp_session_set_log_callback(s, NULL, &k));
  warn_to_stderr(s, buf, sizeof buf);
  assert_contains(buf, "'log'");
  assert_int_equal(k.calls, 1);
  mixp_session_destroy(s);
}

/* ---- TF32 -------------------------------------------------------------------------------- */

static void test_tf32_switch(void **state) {
  (void)state;
  unsetenv("MIXP_TF32_OVERRIDE");
  mixp_session *s = mt_session();
  assert_int_equal(mixp_session_tf32(s), 0);
  MT_OK(mixp_session_set_tf32(s, 1));
  assert_int_equal(mixp_session_tf32(s), 1);
  MT_OK(mixp_session_set_tf32(s, 0));
  assert_int_equal(mixp_session_tf32(s), 0);
  MT_OK(mixp_session_set_tf32(s, 7)); /* any non-zero allows */
  assert_int_equal(mixp_session_tf32(s), 1);
  MT_FAILS(mixp_session_set_tf32(NULL, 1), MIXP_ERR_INVALID_ARGUMENT, "session is NULL");
  assert_int_equal(mixp_session_tf32(NULL), 0);

  mixp_session *t = create_with(MIXP_NUMERICS_OFF, 1);
  assert_int_equal(mixp_session_tf32(t), 1);

  /* On the CPU an F32 product is full fp32 either way: the same bits. */
  if (strcmp(mixp_session_device(s), "cpu") == 0) {
    double av[64], bv[64];
    mt_fill(av, 64, -1, 1, 11);
    mt_fill(bv, 64, -1, 1, 12);
    const int64_t shape[2] = {8, 8};
    mixp_tensor *a = mt_tensor(s, MIXP_F32, av, shape, 2), *b = mt_tensor(s, MIXP_F32, bv, shape, 2);
    mixp_tensor *y1 = NULL, *y0 = NULL;
    MT_OK(mixp_matmul(a, b, &y1));
    MT_OK(mixp_session_set_tf32(s, 0));
    MT_OK(mixp_matmul(a, b, &y0));
    float f1[64], f0[64];
    MT_OK(mixp_tensor_to_host(y1, f1, sizeof f1));
    MT_OK(mixp_tensor_to_host(y0, f0, sizeof f0));
    assert_memory_equal(f1, f0, sizeof f1);
    mixp_tensor *all[4] = {a, b, y1, y0};
    for (int i = 0; i < 4; ++i) mixp_tensor_release(all[i]);
  }
  mixp_session_destroy(t);
  mixp_session_destroy(s);
}

static void test_tf32_override_env(void **state) {
  (void)state;
  mixp_session *s = mt_session();
  mixp_session *t = create_with(MIXP_NUMERICS_OFF, 1);
  setenv("MIXP_TF32_OVERRIDE", "0", 1);
  assert_int_equal(mixp_session_tf32(t), 0);
  MT_OK(mixp_session_set_tf32(s, 1));
  assert_int_equal(mixp_session_tf32(s), 0);
  setenv("MIXP_TF32_OVERRIDE", "1", 1);
  MT_OK(mixp_session_set_tf32(s, 0));
  assert_int_equal(mixp_session_tf32(s), 1);
  assert_int_equal(mixp_session_tf32(t), 1);
  /* Other values are ignored: the session's switch decides. */
  const char *ignored[3] = {"", "yes", "10"};
  for (int i = 0; i < 3; ++i) {
    setenv("MIXP_TF32_OVERRIDE", ignored[i], 1);
    assert_int_equal(mixp_session_tf32(s), 0);
    assert_int_equal(mixp_session_tf32(t), 1);
  }
  unsetenv("MIXP_TF32_OVERRIDE");
  assert_int_equal(mixp_session_tf32(s), 0);
  assert_int_equal(mixp_session_tf32(t), 1);
  mixp_session_destroy(t);
  mixp_session_destroy(s);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_warn_forward_nan),
      cmocka_unit_test(test_reports_the_called_op),
      cmocka_unit_test(test_warn_throttles_the_log),
      cmocka_unit_test(test_error_forward),
      cmocka_unit_test(test_error_keeps_rng),
      cmocka_unit_test(test_warn_backward_only),
      cmocka_unit_test(test_error_backward),
      cmocka_unit_test(test_off_mode),
      cmocka_unit_test(test_option_at_create),
      cmocka_unit_test(test_set_mode_misuse),
      cmocka_unit_test(test_op_filters),
      cmocka_unit_test(test_step_range),
      cmocka_unit_test(test_fp16_overflow),
      cmocka_unit_test(test_counts_large_and_strided),
      cmocka_unit_test(test_options_misuse),
      cmocka_unit_test(test_log_callback_null_restores_default),
      cmocka_unit_test(test_tf32_switch),
      cmocka_unit_test(test_tf32_override_env),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
