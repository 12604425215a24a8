/* CUDA fused attention (cuDNN's SDPA through the cuDNN frontend,
 * kernels/attention.cpp) against the composed path and an F64 reference.
 *
 * Values: F16 and BF16, causal and not, D in {16, 64, 80, 128}, T = 100 (not
 * a multiple of any tile), q, k and v as strided [B, H, T, D] views of one
 * [B, T, 3E] projection read in place; output and the projection's gradient
 * (dq, dk, dv interleaved) against the CPU's composed path in F64 on the
 * same rounded inputs. The output has an a-priori bound: with |v| <= 1 and
 * the probabilities summing to 1, rounding them to the half type before
 * the P.V product (unit roundoff u) moves an output by at most u, rounding
 * the output by u more, and fp32's exp, normaliser and S-term sums by
 * (S + 8) 2^-24. For the gradients such bounds are loose by sqrt(D) (their
 * terms cancel), so there the composed path in the same half type is
 * the yardstick. It rounds what the fused kernel rounds -- the probabilities
 * before the P.V product (and dS before dS.K in the backward) and the
 * result, to the half type's unit roundoff u -- and more (the scores), so
 * the fused error must stay within twice the composed path's own measured
 * error (the two paths' roundings do not cancel alike) plus 2u times the
 * largest reference value (each path's final rounding of the result).
 *
 * Dropout: cuDNN's mask is its own, not the CPU's bits, so what is checked
 * is the rate -- the number of kept probabilities within five standard
 * deviations of the binomial mean -- and that the backward drops the
 * elements the forward dropped (their counts agree exactly).
 *
 * Every fused call forces MIXP_ATTENTION=fused, so a case cuDNN declined
 * would fail with MIXP_ERR_UNSUPPORTED instead of passing composed.
 * Exits 77 (skipped) without a CUDA session or when the plugin was built
 * without the cuDNN frontend (its device note says so); MIXP_PARITY_HARNESS_CHECK=1
 * runs the device side on a second CPU session (the CPU's fused kernel) to
 * check this file's own logic where no GPU is. */
#include <string.h>

#include "test_util.h"

static mixp_session *g_ref, *g_dev; /* CPU (F64 reference), the device under test */

static mixp_session *make_session(const char *device) {
  mixp_session_options o;
  mixp_session_options_init(&o);
  o.seed = 4321;
  o.num_threads = 2;
  o.device = device;
  mixp_session *s = NULL;
  return mixp_session_create(&o, &s) == MIXP_OK ? s : NULL;
}

static void use_path(const char *path) { assert_int_equal(setenv("MIXP_ATTENTION", path, 1), 0); }

static double unit_roundoff(mixp_dtype dt) { return ldexp(1.0, dt == MIXP_F16 ? -11 : -8); }

typedef struct run {
  double *o, *grad; /* output [B, H, T, D], projection gradient [B, T, 3E] */
} run;

static void run_free(run *r) {
  free(r->o);
  free(r->grad);
}

/* Attention of the q, k, v views of projection values `proj` ([b, t, 3hd])
 * in dtype dt on session s, by path; back-propagates dout ([b, h, t, d]). */
static run attend_projection(mixp_session *s, mixp_dtype dt, const char *path, const double *proj,
                             const double *dout, int64_t b, int64_t t, int64_t h, int64_t d,
                             int causal) {
  const int64_t e = h * d, ps[3] = {b, t, 3 * e}, hs[4] = {b, t, h, d}, os[4] = {b, h, t, d};
  mixp_tensor *p = mt_tensor(s, dt, proj, ps, 3), *parts[3], *views[3], *o = NULL;
  MT_OK(mixp_tensor_set_requires_grad(p, 1));
  const int64_t sizes[3] = {e, e, e};
  MT_OK(mixp_split(p, sizes, 3, -1, parts));
  for (int i = 0; i < 3; ++i) {
    mixp_tensor *r = NULL;
    MT_OK(mixp_reshape(parts[i], hs, 4, &r));
    MT_OK(mixp_transpose(r, 1, 2, &views[i]));
    mixp_tensor_release(r);
    mixp_tensor_release(parts[i]);
  }
  use_path(path);
  MT_OK(mixp_scaled_dot_product_attention(views[0], views[1], views[2], causal, 0.0, 0.0, &o));
  if (strcmp(path, "fused") == 0) {
    /* o in q's layout: [b, t, h, d]-dense, so merging the heads is a view. */
    mixp_tensor *merged = NULL;
    MT_OK(mixp_transpose(o, 1, 2, &merged));
    assert_true(mixp_tensor_is_contiguous(merged));
    mixp_tensor_release(merged);
  }
  mixp_tensor *g = mt_tensor(s, dt, dout, os, 4);
  MT_OK(mixp_backward(o, g));
  use_path("auto");
  run r = {mt_values(o), mt_grad_values(p)};
  mixp_tensor *objs[6] = {p, views[0], views[1], views[2], o, g};
  for (int i = 0; i < 6; ++i) mixp_tensor_release(objs[i]);
  return r;
}

/* vals rounded to dt (the bits both sides start from). */
static double *rounded(mixp_dtype dt, const double *vals, int64_t n) {
  const int64_t shape[1] = {n};
  mixp_tensor *t = mt_tensor(g_ref, dt, vals, shape, 1);
  double *r = mt_values(t);
  mixp_tensor_release(t);
  return r;
}

static double max_abs(const double *v, int64_t n) {
  double m = 0.0;
  for (int64_t i = 0; i < n; ++i) m = fmax(m, fabs(v[i]));
  return m;
}
static double max_err(const double *got, const double *want, int64_t n) {
  double m = 0.0;
  for (int64_t i = 0; i < n; ++i) {
    const double e = fabs(got[i] - want[i]);
    m = isnan(e) ? INFINITY : fmax(m, e);
  }
  return m;
}

/* fused within 2 * (composed's error) + 2u * max|ref| of ref (see the top). */
static void expect_as_accurate(const char *what, const double *fused, const double *composed,
                               const double *ref, int64_t n, double u) {
  const double err = max_err(fused, ref, n), yard = max_err(composed, ref, n);
  const double tol = 2.0 * yard + 2.0 * u * max_abs(ref, n);
  print_message("  %s: fused error %.3g, composed %.3g, tolerance %.3g\n", what, err, yard, tol);
  if (!(err <= tol)) {
    print_error("%s: fused error %.3g > %.3g (composed error %.3g, max |ref| %.3g)\n", what, err, tol,
                yard, max_abs(ref, n));
    fail();
  }
}

static void test_fused_matches_composed_and_f64(void **state) {
  (void)state;
  const int64_t b = 2, t = 100, h = 3, dims[4] = {16, 64, 80, 128};
  const mixp_dtype dts[2] = {MIXP_F16, MIXP_BF16};
  for (int di = 0; di < 4; ++di)
    for (int ti = 0; ti < 2; ++ti)
      for (int causal = 0; causal <= 1; ++causal) {
        const int64_t d = dims[di], np = b * t * 3 * h * d, no = b * h * t * d;
        double *pv = malloc((size_t)np * sizeof(double)), *gv = malloc((size_t)no * sizeof(double));
        mt_fill(pv, np, -1.0, 1.0, 10 + (uint64_t)di);
        mt_fill(gv, no, -1.0, 1.0, 20 + (uint64_t)di);
        double *pr = rounded(dts[ti], pv, np), *gr = rounded(dts[ti], gv, no);
        run ref = attend_projection(g_ref, MIXP_F64, "composed", pr, gr, b, t, h, d, causal);
        run comp = attend_projection(g_dev, dts[ti], "composed", pr, gr, b, t, h, d, causal);
        run fused = attend_projection(g_dev, dts[ti], "fused", pr, gr, b, t, h, d, causal);
        print_message("D=%lld %s causal=%d\n", (long long)d, dts[ti] == MIXP_F16 ? "f16" : "bf16",
                      causal);
        const double bound = 2.0 * unit_roundoff(dts[ti]) + (double)(t + 8) * ldexp(1.0, -24);
        mt_assert_close(fused.o, ref.o, no, bound * max_abs(pr, np), 0.0);
        expect_as_accurate("output", fused.o, comp.o, ref.o, no, unit_roundoff(dts[ti]));
        expect_as_accurate("gradient", fused.grad, comp.grad, ref.grad, np, unit_roundoff(dts[ti]));
        run_free(&ref);
        run_free(&comp);
        run_free(&fused);
        free(pv);
        free(gv);
        free(pr);
        free(gr);
      }
}

/* round(x) where x must be within 1/4 of an integer (a count read back). */
static int64_t count_of(double x) {
  const double r = nearbyint(x);
  assert_true(fabs(x - r) < 0.25);
  return (int64_t)r;
}

/* q = k = 0 makes every probability 1/S; with v = 1 the output of row i is
 * kept_i / (S (1 - p)), and with dO = 1 the gradient of v at key j is
 * kept_j / (S (1 - p)) (kept among the column's probabilities): both
 * count the mask, forward and backward. */
static void test_dropout_rate_and_backward_mask(void **state) {
  (void)state;
  const int64_t b = 2, h = 3, n = 100, d = 16, total = b * h * n * n;
  const int64_t shape[4] = {b, h, n, d}, numel = b * h * n * d;
  const double p = 0.25, per_kept = 1.0 / ((double)n * (1.0 - p));
  double *zeros = calloc((size_t)numel, sizeof(double)), *ones = malloc((size_t)numel * sizeof(double));
  for (int64_t i = 0; i < numel; ++i) ones[i] = 1.0;
  mixp_tensor *q = mt_tensor(g_dev, MIXP_F16, zeros, shape, 4), *k = mt_tensor(g_dev, MIXP_F16, zeros, shape, 4);
  mixp_tensor *v = mt_tensor(g_dev, MIXP_F16, ones, shape, 4), *dout = mt_tensor(g_dev, MIXP_F16, ones, shape, 4);
  MT_OK(mixp_tensor_set_requires_grad(v, 1));
  mixp_tensor *o = NULL;
  use_path("fused");
  MT_OK(mixp_scaled_dot_product_attention(q, k, v, 0, p, 0.0, &o));
  MT_OK(mixp_backward(o, dout));
  use_path("auto");
  double *ov = mt_values(o), *gv = mt_grad_values(v);
  int64_t kept_fwd = 0, kept_bwd = 0;
  for (int64_t row = 0; row < b * h * n; ++row) {
    for (int64_t c = 1; c < d; ++c) assert_true(ov[row * d + c] == ov[row * d]); /* one mask per row */
    kept_fwd += count_of(ov[row * d] / per_kept);
    kept_bwd += count_of(gv[row * d] / per_kept);
  }
  const double mean = (double)total * (1.0 - p), sd = sqrt((double)total * p * (1.0 - p));
  print_message("kept %lld of %lld (expected %.0f +- %.0f)\n", (long long)kept_fwd, (long long)total,
                mean, sd);
  assert_true(fabs((double)kept_fwd - mean) <= 5.0 * sd);
  assert_int_equal(kept_fwd, kept_bwd);
  free(ov);
  free(gv);
  free(zeros);
  free(ones);
  mixp_tensor *objs[5] = {q, k, v, dout, o};
  for (int i = 0; i < 5; ++i) mixp_tensor_release(objs[i]);
}

/* F32 is not cuDNN's: forced fused, the device names the case it declines;
 * on auto the composed path runs it. */
static void test_f32_declined_unless_cpu(void **state) {
  (void)state;
  const int64_t shape[4] = {1, 2, 9, 16};
  double vals[288];
  mt_fill(vals, 288, -1.0, 1.0, 5);
  mixp_tensor *q = mt_tensor(g_dev, MIXP_F32, vals, shape, 4), *o = NULL;
  use_path("auto");
  MT_OK(mixp_scaled_dot_product_attention(q, q, q, 1, 0.0, 0.0, &o));
  mixp_tensor_release(o);
  o = NULL;
  use_path("fused");
  const mixp_status st = mixp_scaled_dot_product_attention(q, q, q, 1, 0.0, 0.0, &o);
  use_path("auto");
  if (strcmp(mixp_session_device(g_dev), "cpu") == 0) {
    assert_int_equal(st, MIXP_OK); /* harness check: the CPU runs F32 fused */
  } else {
    assert_int_equal(st, MIXP_ERR_UNSUPPORTED);
    assert_non_null(strstr(mixp_last_error(), "MIXP_ATTENTION=fused"));
  }
  mixp_tensor_release(o);
  mixp_tensor_release(q);
}

int main(void) {
  const char *harness = getenv("MIXP_PARITY_HARNESS_CHECK");
  const int harness_check = harness && strcmp(harness, "1") == 0;
  if (harness_check) printf("harness check: the device side runs on the CPU\n");
  g_dev = make_session(harness_check ? "cpu" : "cuda");
  if (!g_dev) {
    printf("SKIPPED: no CUDA session: %s\n", mixp_last_error());
    return mixp_last_status() == MIXP_ERR_DEVICE ? 77 : 1;
  }
  printf("device: %s\n", mixp_session_device_note(g_dev));
  if (strstr(mixp_session_device_note(g_dev), "fused attention: none")) {
    printf("SKIPPED: the CUDA plugin was built without the cuDNN frontend headers\n");
    mixp_session_destroy(g_dev);
    return 77;
  }
  g_ref = make_session("cpu");
  if (!g_ref) return 1;
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_fused_matches_composed_and_f64),
      cmocka_unit_test(test_dropout_rate_and_backward_mask),
      cmocka_unit_test(test_f32_declined_unless_cpu),
  };
  const int rc = cmocka_run_group_tests(tests, NULL, NULL);
  mixp_session_destroy(g_ref);
  mixp_session_destroy(g_dev);
  return rc;
}
