/* mixp_scaled_matmul: D = (scale_a * scale_b) * (A x B) + bias for fp8 A and
 * B, against an F64 reference of the dequantised operands. Integer-valued
 * operands make the fp32 sum exact (|sum| < 2^24), so D must equal the
 * reference exactly; random ones are held to the bound of fp32 recursive
 * summation, gamma_{K-1} = (K-1)u/(1-(K-1)u) times sum |a b| (u = 2^-24,
 * any blocked or tree order of oneDNN and cuBLASLt stays within it), plus one
 * u for the scaling, one for the bias and one unit roundoff of out_dtype for
 * the final rounding. With MIXP_TEST_DEVICE=cuda the same tests run on the
 * GPU (cuBLASLt FP8), and are skipped there when the GPU is older than
 * sm_89 (the call must then fail with MIXP_ERR_UNSUPPORTED). */
#include "test_util.h"

enum { M = 32, K = 64, N = 48 };

static mixp_tensor *scalar(mixp_session *s, float v) {
  int64_t one = 1;
  mixp_tensor *t = NULL;
  MT_OK(mixp_tensor_from_host(s, &v, sizeof v, MIXP_F32, &one, 1, &t));
  return t;
}

static float read_scalar(const mixp_tensor *t) {
  float v = 0;
  MT_OK(mixp_tensor_to_host(t, &v, sizeof v));
  return v;
}

/* n doubles: random multiples of 2^-3 in [-2, 2] (integer = 0), or integers in [-16, 16]. */
static void fill(double *v, int n, unsigned seed, int integer) {
  for (int i = 0; i < n; ++i) {
    seed = seed * 1103515245u + 12345u;
    int r = (int)((seed >> 8) % 33u) - 16;
    v[i] = integer ? r : ldexp((double)r, -3) * (1.0 + ((seed >> 20) % 8) / 8.0);
  }
}

/* The GPU refuses fp8 products below sm_89: then the suite's GPU run skips. */
static int fp8_unsupported_here(mixp_session *s) {
  int64_t sh[2] = {16, 16};
  mixp_tensor *a = NULL, *sa = scalar(s, 1.0f), *d = NULL;
  MT_OK(mixp_tensor_zeros(s, MIXP_F8E4M3, sh, 2, &a));
  mixp_status st = mixp_scaled_matmul(a, sa, a, sa, NULL, MIXP_F32, 0, NULL, &d);
  int unsupported = st == MIXP_ERR_UNSUPPORTED && strstr(mixp_last_error(), "sm_89");
  if (st == MIXP_OK) {
    mixp_tensor_release(d);
  } else if (!unsupported) {
    print_error("mixp_scaled_matmul failed: %s (%s)\n", mixp_status_string(st), mixp_last_error());
    fail();
  }
  mixp_tensor_release(a);
  mixp_tensor_release(sa);
  return unsupported;
}
#define SKIP_WITHOUT_FP8(s)                                                                 \
  do {                                                                                      \
    if (fp8_unsupported_here(s)) {                                                          \
      print_message("skipped: this GPU has no FP8 Tensor Cores (MIXP_ERR_UNSUPPORTED)\n"); \
      skip();                                                                               \
    }                                                                                       \
  } while (0)

/* One product checked against the reference; returns nothing, fails on a mismatch. */
static void check_product(mixp_session *s, mixp_dtype ta, mixp_dtype tb, mixp_dtype out_dtype, int integer,
                          int with_bias, float sa_v, float sb_v) {
  double av[M * K], bv[K * N], biasv[N];
  fill(av, M * K, 7u + (unsigned)ta, integer);
  fill(bv, K * N, 11u + (unsigned)tb, integer);
  fill(biasv, N, 5u, 0);
  int64_t ash[2] = {M, K}, bsh[2] = {K, N}, nsh[1] = {N};
  mixp_tensor *a = mt_tensor(s, ta, av, ash, 2), *b = mt_tensor(s, tb, bv, bsh, 2);
  mixp_dtype bias_dtype = out_dtype == MIXP_F16 ? MIXP_F16 : MIXP_BF16;
  mixp_tensor *bias = with_bias ? mt_tensor(s, bias_dtype, biasv, nsh, 1) : NULL;
  mixp_tensor *sa = scalar(s, sa_v), *sb = scalar(s, sb_v), *amax = scalar(s, -1.0f), *d = NULL;
  MT_OK(mixp_scaled_matmul(a, sa, b, sb, bias, out_dtype, 0, amax, &d));
  assert_int_equal(mixp_tensor_dtype(d), out_dtype);
  /* The reference from the operands as stored (quantised) and read back exactly. */
  double *aq = mt_values(a), *bq = mt_values(b), *bias_q = bias ? mt_values(bias) : NULL, *dv = mt_values(d);
  const double u = ldexp(1, -24), scale = (double)(float)((double)sa_v * sb_v);
  const double u_out = out_dtype == MIXP_F32 ? u : out_dtype == MIXP_F16 ? ldexp(1, -11) : ldexp(1, -8);
  const double gamma = (K - 1) * u / (1 - (K - 1) * u);
  double amax_ref = 0;
  for (int i = 0; i < M; ++i)
    for (int j = 0; j < N; ++j) {
      double sum = 0, abs_sum = 0;
      for (int l = 0; l < K; ++l) {
        sum += aq[i * K + l] * bq[l * N + j];
        abs_sum += fabs(aq[i * K + l] * bq[l * N + j]);
      }
      const double bj = bias_q ? bias_q[j] : 0, want = scale * sum + bj, got = dv[i * N + j];
      double tol = scale * gamma * abs_sum + 2 * u * (scale * abs_sum + fabs(bj));
      tol += u_out * (fabs(want) + tol);
      if (integer && out_dtype == MIXP_F32 && !with_bias) tol = 0; /* exact: see the top of the file */
      if (!(fabs(got - want) <= tol)) {
        print_error("D[%d,%d] = %.9g, reference %.9g, tolerance %.3g\n", i, j, got, want, tol);
        fail();
      }
      amax_ref = fabs(got) > amax_ref ? fabs(got) : amax_ref;
    }
  assert_true(read_scalar(amax) == (float)amax_ref); /* max |D| of D as stored */
  free(aq);
  free(bq);
  free(bias_q);
  free(dv);
  mixp_tensor *ts[] = {a, b, bias, sa, sb, amax, d};
  for (size_t i = 0; i < sizeof ts / sizeof ts[0]; ++i) mixp_tensor_release(ts[i]);
}

static void test_exact_integers(void **state) {
  mixp_session *s = *state;
  SKIP_WITHOUT_FP8(s);
  check_product(s, MIXP_F8E4M3, MIXP_F8E4M3, MIXP_F32, 1, 0, 0.125f, 4.0f);
  check_product(s, MIXP_F8E5M2, MIXP_F8E4M3, MIXP_F32, 1, 0, 2.0f, 0.5f);
  check_product(s, MIXP_F8E4M3, MIXP_F8E5M2, MIXP_F32, 1, 0, 1.0f, 1.0f);
}

static void test_random_against_f64(void **state) {
  mixp_session *s = *state;
  SKIP_WITHOUT_FP8(s);
  const mixp_dtype outs[3] = {MIXP_F32, MIXP_BF16, MIXP_F16};
  for (int o = 0; o < 3; ++o) {
    check_product(s, MIXP_F8E4M3, MIXP_F8E4M3, outs[o], 0, 0, 0.3f, 1.7f);
    check_product(s, MIXP_F8E4M3, MIXP_F8E4M3, outs[o], 0, 1, 0.3f, 1.7f);
    check_product(s, MIXP_F8E5M2, MIXP_F8E4M3, outs[o], 0, 1, 3.0f, 0.01f);
  }
}

/* Operands as transposed views (b = transpose of an [N, K] tensor) and a
 * shape the GPU does not take (CPU only). */
static void test_views_and_odd_shapes(void **state) {
  mixp_session *s = *state;
  SKIP_WITHOUT_FP8(s);
  double bv[N * K], av[M * K];
  fill(bv, N * K, 3u, 1);
  fill(av, M * K, 9u, 1);
  int64_t btsh[2] = {N, K}, ash[2] = {M, K};
  mixp_tensor *bt = mt_tensor(s, MIXP_F8E4M3, bv, btsh, 2), *a = mt_tensor(s, MIXP_F8E4M3, av, ash, 2);
  mixp_tensor *b = NULL, *bc = NULL, *one = scalar(s, 1.0f), *d1 = NULL, *d2 = NULL;
  MT_OK(mixp_transpose(bt, 0, 1, &b));
  MT_OK(mixp_contiguous(b, &bc));
  MT_OK(mixp_scaled_matmul(a, one, b, one, NULL, MIXP_F32, 0, NULL, &d1));
  MT_OK(mixp_scaled_matmul(a, one, bc, one, NULL, MIXP_F32, MIXP_SCALED_MATMUL_FAST_ACCUM, NULL, &d2));
  double *v1 = mt_values(d1), *v2 = mt_values(d2);
  assert_memory_equal(v1, v2, sizeof(double) * M * N); /* integer sums: exact either way */
  free(v1);
  free(v2);
  int64_t osh_a[2] = {3, 5}, osh_b[2] = {5, 7};
  mixp_tensor *oa = NULL, *ob = NULL, *od = NULL;
  MT_OK(mixp_tensor_ones(s, MIXP_F8E4M3, osh_a, 2, &oa));
  MT_OK(mixp_tensor_ones(s, MIXP_F8E4M3, osh_b, 2, &ob));
  mixp_status st = mixp_scaled_matmul(oa, one, ob, one, NULL, MIXP_F32, 0, NULL, &od);
  if (mt_on_cpu()) {
    MT_OK(st);
    double *ov = mt_values(od);
    for (int i = 0; i < 21; ++i) assert_true(ov[i] == 5.0);
    free(ov);
    mixp_tensor_release(od);
  } else {
    assert_int_equal(st, MIXP_ERR_UNSUPPORTED);
    assert_non_null(strstr(mixp_last_error(), "multiples of 16"));
  }
  mixp_tensor *ts[] = {bt, a, b, bc, one, d1, d2, oa, ob};
  for (size_t i = 0; i < sizeof ts / sizeof ts[0]; ++i) mixp_tensor_release(ts[i]);
}

/* A scale that is not finite and positive: D and amax NaN, no host check. */
static void test_bad_scales_poison(void **state) {
  mixp_session *s = *state;
  SKIP_WITHOUT_FP8(s);
  int64_t sh[2] = {16, 16};
  mixp_tensor *a = NULL, *good = scalar(s, 1.0f), *amax = scalar(s, 0.0f);
  MT_OK(mixp_tensor_ones(s, MIXP_F8E4M3, sh, 2, &a));
  const float bad[4] = {0.0f, -1.0f, NAN, INFINITY};
  for (int i = 0; i < 4; ++i) {
    mixp_tensor *sb = scalar(s, bad[i]), *d = NULL;
    MT_OK(mixp_scaled_matmul(a, good, a, sb, NULL, MIXP_BF16, 0, amax, &d));
    double *v = mt_values(d);
    for (int k = 0; k < 256; ++k) assert_true(isnan(v[k]));
    assert_true(isnan(read_scalar(amax)));
    free(v);
    mixp_tensor_release(d);
    /* The numerics checker names the op. */
    MT_OK(mixp_session_set_numerics_check(s, MIXP_NUMERICS_ERROR));
    d = MT_SENTINEL;
    MT_FAILS(mixp_scaled_matmul(a, sb, a, good, NULL, MIXP_BF16, 0, NULL, &d), MIXP_ERR_NUMERIC, "scaled_matmul");
    assert_ptr_equal(d, MT_SENTINEL);
    MT_OK(mixp_session_set_numerics_check(s, MIXP_NUMERICS_OFF));
    mixp_tensor_release(sb);
  }
  mixp_tensor_release(a);
  mixp_tensor_release(good);
  mixp_tensor_release(amax);
}

static void test_misuse(void **state) {
  mixp_session *s = *state;
  int64_t sh[2] = {16, 16}, sh3[3] = {2, 16, 16}, bad_k[2] = {8, 16}, two[1] = {2}, n16[1] = {16}, n8[1] = {8};
  mixp_tensor *a = NULL, *e5 = NULL, *f32 = NULL, *a3 = NULL, *ak = NULL, *one = scalar(s, 1.0f);
  mixp_tensor *s2 = NULL, *s16 = NULL, *bias_f32 = NULL, *bias8 = NULL, *bias16 = NULL, *amax = scalar(s, 7.0f);
  MT_OK(mixp_tensor_zeros(s, MIXP_F8E4M3, sh, 2, &a));
  MT_OK(mixp_tensor_zeros(s, MIXP_F8E5M2, sh, 2, &e5));
  MT_OK(mixp_tensor_zeros(s, MIXP_F32, sh, 2, &f32));
  MT_OK(mixp_tensor_zeros(s, MIXP_F8E4M3, sh3, 3, &a3));
  MT_OK(mixp_tensor_zeros(s, MIXP_F8E4M3, bad_k, 2, &ak));
  MT_OK(mixp_tensor_zeros(s, MIXP_F32, two, 1, &s2));
  MT_OK(mixp_tensor_zeros(s, MIXP_F16, two, 1, &s16));
  MT_OK(mixp_tensor_zeros(s, MIXP_F32, n16, 1, &bias_f32));
  MT_OK(mixp_tensor_zeros(s, MIXP_BF16, n8, 1, &bias8));
  MT_OK(mixp_tensor_zeros(s, MIXP_BF16, n16, 1, &bias16));
  mixp_tensor *d = MT_SENTINEL;
  const char *fn = "mixp_scaled_matmul";
  MT_FAILS2(mixp_scaled_matmul(NULL, one, a, one, NULL, MIXP_F32, 0, NULL, &d), MIXP_ERR_INVALID_ARGUMENT, fn, "a");
  MT_FAILS2(mixp_scaled_matmul(a, NULL, a, one, NULL, MIXP_F32, 0, NULL, &d), MIXP_ERR_INVALID_ARGUMENT, fn, "scale_a");
  MT_FAILS2(mixp_scaled_matmul(a, one, NULL, one, NULL, MIXP_F32, 0, NULL, &d), MIXP_ERR_INVALID_ARGUMENT, fn, "b");
  MT_FAILS2(mixp_scaled_matmul(a, one, a, NULL, NULL, MIXP_F32, 0, NULL, &d), MIXP_ERR_INVALID_ARGUMENT, fn, "scale_b");
  MT_FAILS2(mixp_scaled_matmul(a, one, a, one, NULL, MIXP_F32, 0, NULL, NULL), MIXP_ERR_INVALID_ARGUMENT, fn, "out");
  MT_FAILS2(mixp_scaled_matmul(f32, one, a, one, NULL, MIXP_F32, 0, NULL, &d), MIXP_ERR_DTYPE, fn, "a must be");
  MT_FAILS2(mixp_scaled_matmul(e5, one, e5, one, NULL, MIXP_F32, 0, NULL, &d), MIXP_ERR_DTYPE, fn, "both f8e5m2");
  MT_FAILS2(mixp_scaled_matmul(a3, one, a, one, NULL, MIXP_F32, 0, NULL, &d), MIXP_ERR_SHAPE, fn, "2-D");
  MT_FAILS2(mixp_scaled_matmul(a, one, ak, one, NULL, MIXP_F32, 0, NULL, &d), MIXP_ERR_SHAPE, fn, "inner dimensions");
  MT_FAILS2(mixp_scaled_matmul(a, s2, a, one, NULL, MIXP_F32, 0, NULL, &d), MIXP_ERR_SHAPE, fn, "scale_a");
  MT_FAILS2(mixp_scaled_matmul(a, one, a, s16, NULL, MIXP_F32, 0, NULL, &d), MIXP_ERR_DTYPE, fn, "scale_b must be F32");
  MT_FAILS2(mixp_scaled_matmul(a, one, a, one, bias_f32, MIXP_F32, 0, NULL, &d), MIXP_ERR_DTYPE, fn, "bias must be bf16");
  MT_FAILS2(mixp_scaled_matmul(a, one, a, one, bias16, MIXP_F16, 0, NULL, &d), MIXP_ERR_DTYPE, fn, "bias must be f16");
  MT_FAILS2(mixp_scaled_matmul(a, one, a, one, bias8, MIXP_BF16, 0, NULL, &d), MIXP_ERR_SHAPE, fn, "bias must be [16]");
  MT_FAILS2(mixp_scaled_matmul(a, one, a, one, NULL, MIXP_F64, 0, NULL, &d), MIXP_ERR_DTYPE, fn, "out_dtype");
  MT_FAILS2(mixp_scaled_matmul(a, one, a, one, NULL, (mixp_dtype)INT32_MAX, 0, NULL, &d), MIXP_ERR_DTYPE, fn,
            "2147483647");
  MT_FAILS2(mixp_scaled_matmul(a, one, a, one, NULL, MIXP_F32, 2u, NULL, &d), MIXP_ERR_INVALID_ARGUMENT, fn, "flags");
  MT_FAILS2(mixp_scaled_matmul(a, one, a, one, NULL, MIXP_F32, UINT32_MAX, amax, &d), MIXP_ERR_INVALID_ARGUMENT, fn,
            "flags");
  MT_FAILS2(mixp_scaled_matmul(a, one, a, one, NULL, MIXP_F32, 0, s2, &d), MIXP_ERR_SHAPE, fn, "amax");
  MT_FAILS2(mixp_scaled_matmul(a, one, a, one, NULL, MIXP_F32, 0, bias16, &d), MIXP_ERR_DTYPE, fn, "amax");
  /* Another session's tensor. */
  mixp_session *other = mt_session();
  mixp_tensor *foreign = scalar(other, 1.0f);
  MT_FAILS2(mixp_scaled_matmul(a, one, a, foreign, NULL, MIXP_F32, 0, NULL, &d), MIXP_ERR_DEVICE, fn, "sessions");
  /* A scale that requires grad: no gradient would flow, so it is refused. */
  mixp_tensor *sg = scalar(s, 1.0f);
  MT_OK(mixp_tensor_set_requires_grad(sg, 1));
  MT_FAILS2(mixp_scaled_matmul(a, sg, a, one, NULL, MIXP_F32, 0, amax, &d), MIXP_ERR_UNSUPPORTED, fn, "requires grad");
  assert_ptr_equal(d, MT_SENTINEL);
  assert_true(read_scalar(amax) == 7.0f); /* nothing written on failure */
  mixp_tensor *ts[] = {a, e5, f32, a3, ak, one, s2, s16, bias_f32, bias8, bias16, amax, foreign, sg};
  for (size_t i = 0; i < sizeof ts / sizeof ts[0]; ++i) mixp_tensor_release(ts[i]);
  mixp_session_destroy(other);
}

static void test_op_stats(void **state) {
  mixp_session *s = *state;
  SKIP_WITHOUT_FP8(s);
  int64_t sh[2] = {16, 16};
  mixp_tensor *a = NULL, *one = scalar(s, 1.0f), *d = NULL;
  MT_OK(mixp_tensor_ones(s, MIXP_F8E4M3, sh, 2, &a));
  MT_OK(mixp_session_op_stats_start(s));
  MT_OK(mixp_scaled_matmul(a, one, a, one, NULL, MIXP_BF16, 0, NULL, &d));
  int64_t count = 0;
  MT_OK(mixp_session_op_stats_count(s, "scaled_matmul", 0, MIXP_BF16, &count));
  assert_int_equal(count, 1);
  MT_OK(mixp_session_op_stats_stop(s));
  mixp_tensor_release(a);
  mixp_tensor_release(one);
  mixp_tensor_release(d);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_exact_integers, mt_setup_session, mt_teardown_session),
      cmocka_unit_test_setup_teardown(test_random_against_f64, mt_setup_session, mt_teardown_session),
      cmocka_unit_test_setup_teardown(test_views_and_odd_shapes, mt_setup_session, mt_teardown_session),
      cmocka_unit_test_setup_teardown(test_bad_scales_poison, mt_setup_session, mt_teardown_session),
      cmocka_unit_test_setup_teardown(test_misuse, mt_setup_session, mt_teardown_session),
      cmocka_unit_test_setup_teardown(test_op_stats, mt_setup_session, mt_teardown_session),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
