/* How convolutions choose their algorithm: the session options
 * cudnn_benchmark / cudnn_deterministic, mixp_session_set_cudnn(), the
 * getter mixp_session_cudnn() and the environment overrides
 * MIXP_CUDNN_BENCHMARK / MIXP_CUDNN_DETERMINISTIC. On the CPU the options
 * are recorded and the convolution is the same either way; under
 * MIXP_TEST_DEVICE=cuda (cuda_test_cudnn_options) the same tests check that
 * a deterministic choice repeats bit for bit and that every mode computes
 * the convolution within its rounding bound. */
#include "test_util.h"

static void clear_env(void) {
  unsetenv("MIXP_CUDNN_BENCHMARK");
  unsetenv("MIXP_CUDNN_DETERMINISTIC");
}

static mixp_status create_with(int benchmark, int deterministic, mixp_session **out) {
  mixp_session_options o;
  mixp_session_options_init(&o);
  o.device = mt_device();
  o.num_threads = 2;
  o.cudnn_benchmark = benchmark;
  o.cudnn_deterministic = deterministic;
  return mixp_session_create(&o, out);
}

static void assert_mode(const mixp_session *s, int benchmark, int deterministic) {
  int b = -1, d = -1;
  MT_OK(mixp_session_cudnn(s, &b, &d));
  assert_int_equal(b, benchmark);
  assert_int_equal(d, deterministic);
}

/* Deterministic is the default: mixp promises bitwise-reproducible runs. */
static void test_defaults(void **state) {
  (void)state;
  clear_env();
  mixp_session_options o;
  mixp_session_options_init(&o);
  assert_int_equal(o.cudnn_benchmark, 0);
  assert_int_equal(o.cudnn_deterministic, 1);
  mixp_session *s = mt_session();
  assert_mode(s, 0, 1);
  mixp_session_destroy(s);
}

static void test_options_at_create(void **state) {
  (void)state;
  clear_env();
  for (int b = 0; b < 2; ++b)
    for (int d = 0; d < 2; ++d) {
      mixp_session *s = NULL;
      MT_OK(create_with(b, d, &s));
      assert_mode(s, b, d);
      mixp_session_destroy(s);
    }
  const int bad[4] = {-1, 2, 1 << 20, INT32_MIN};
  for (int i = 0; i < 4; ++i) {
    mixp_session *out = (mixp_session *)(uintptr_t)0x77;
    MT_FAILS2(create_with(bad[i], 1, &out), MIXP_ERR_INVALID_ARGUMENT, "mixp_session_create", "cudnn_benchmark");
    assert_ptr_equal(out, (mixp_session *)(uintptr_t)0x77);
    MT_FAILS2(create_with(0, bad[i], &out), MIXP_ERR_INVALID_ARGUMENT, "mixp_session_create", "cudnn_deterministic");
    assert_ptr_equal(out, (mixp_session *)(uintptr_t)0x77);
  }
  /* A 0.8 program's struct ends before the new fields: they read as their
   * defaults, whatever lies in memory after it. */
  mixp_session_options o;
  memset(&o, 0x5a, sizeof o);
  mixp_session_options_init(&o);
  o.device = mt_device();
  o.cudnn_benchmark = 7;
  o.cudnn_deterministic = 7;
  o.struct_size = (uint32_t)((offsetof(mixp_session_options, cudnn_benchmark) + _Alignof(mixp_session_options) - 1) /
                             _Alignof(mixp_session_options) * _Alignof(mixp_session_options));
  mixp_session *s = NULL;
  MT_OK(mixp_session_create(&o, &s));
  assert_mode(s, 0, 1);
  mixp_session_destroy(s);
}

static void test_setter_and_misuse(void **state) {
  (void)state;
  clear_env();
  mixp_session *s = mt_session();
  MT_OK(mixp_session_set_cudnn(s, 1, 0));
  assert_mode(s, 1, 0);
  MT_OK(mixp_session_set_cudnn(s, 0, 1));
  assert_mode(s, 0, 1);
  const int bad[4] = {-1, 2, INT32_MAX, INT32_MIN};
  for (int i = 0; i < 4; ++i) {
    MT_FAILS2(mixp_session_set_cudnn(s, bad[i], 0), MIXP_ERR_INVALID_ARGUMENT, "mixp_session_set_cudnn",
              "benchmark must be 0 or 1");
    MT_FAILS2(mixp_session_set_cudnn(s, 1, bad[i]), MIXP_ERR_INVALID_ARGUMENT, "mixp_session_set_cudnn",
              "deterministic must be 0 or 1");
    assert_mode(s, 0, 1); /* a refused call changes nothing */
  }
  MT_FAILS(mixp_session_set_cudnn(NULL, 0, 1), MIXP_ERR_INVALID_ARGUMENT, "session is NULL");
  int b = 9, d = 9;
  MT_FAILS(mixp_session_cudnn(NULL, &b, &d), MIXP_ERR_INVALID_ARGUMENT, "session is NULL");
  MT_FAILS(mixp_session_cudnn(s, NULL, &d), MIXP_ERR_INVALID_ARGUMENT, "benchmark");
  MT_FAILS(mixp_session_cudnn(s, &b, NULL), MIXP_ERR_INVALID_ARGUMENT, "deterministic");
  assert_int_equal(b, 9);
  assert_int_equal(d, 9);
  mixp_session_destroy(s);
}

/* The environment, read when a session is created, wins over the options
 * and the setter; a value other than 0 and 1 fails the creation, naming
 * the variable; an empty one counts as unset. */
static void test_env_overrides(void **state) {
  (void)state;
  clear_env();
  setenv("MIXP_CUDNN_BENCHMARK", "1", 1);
  setenv("MIXP_CUDNN_DETERMINISTIC", "0", 1);
  mixp_session *s = NULL;
  MT_OK(create_with(0, 1, &s));
  assert_mode(s, 1, 0);
  MT_OK(mixp_session_set_cudnn(s, 0, 1));
  assert_mode(s, 1, 0);
  mixp_session_destroy(s);

  setenv("MIXP_CUDNN_BENCHMARK", "", 1);
  unsetenv("MIXP_CUDNN_DETERMINISTIC");
  MT_OK(create_with(1, 0, &s));
  assert_mode(s, 1, 0);
  mixp_session_destroy(s);

  const char *bad[4] = {"yes", "2", "01", " 1"};
  const char *vars[2] = {"MIXP_CUDNN_BENCHMARK", "MIXP_CUDNN_DETERMINISTIC"};
  for (int v = 0; v < 2; ++v)
    for (int i = 0; i < 4; ++i) {
      clear_env();
      setenv(vars[v], bad[i], 1);
      mixp_session *out = (mixp_session *)(uintptr_t)0x77;
      MT_FAILS2(create_with(0, 1, &out), MIXP_ERR_INVALID_ARGUMENT, vars[v], "expected 0 or 1");
      assert_ptr_equal(out, (mixp_session *)(uintptr_t)0x77);
    }
  clear_env();
}

/* y = conv(x, w) of F32 data in [-1, 1] under the session's current mode. */
static void conv_once(mixp_session *s, mixp_dtype dt, float *out, size_t bytes, double *ref) {
  double xv[2 * 3 * 9 * 9], wv[4 * 3 * 3 * 3];
  mt_fill(xv, 2 * 3 * 9 * 9, -1, 1, 31);
  mt_fill(wv, 4 * 3 * 3 * 3, -1, 1, 32);
  const int64_t xs[4] = {2, 3, 9, 9}, ws[4] = {4, 3, 3, 3};
  mixp_tensor *x = mt_tensor(s, dt, xv, xs, 4), *w = mt_tensor(s, dt, wv, ws, 4), *y = NULL;
  mixp_conv2d_options o;
  mixp_conv2d_options_init(&o);
  o.pad_h = o.pad_w = 1;
  MT_OK(mixp_conv2d(x, w, NULL, &o, &y));
  if (out) MT_OK(mixp_tensor_to_host(y, out, bytes));
  if (ref) {
    double *v = mt_values(y);
    memcpy(ref, v, sizeof(double) * 2 * 4 * 9 * 9);
    free(v);
  }
  mixp_tensor_release(x);
  mixp_tensor_release(w);
  mixp_tensor_release(y);
}

/* Every mode computes the convolution: within k * gamma_k of an F64
 * reference (k = 27 products of terms bounded by 1, u = 2^-24; a factor 2
 * for transform-based algorithms' constants). A deterministic mode repeats
 * its bits; on the CPU every mode gives the same bits. */
static void test_modes_compute_the_convolution(void **state) {
  (void)state;
  clear_env();
  mixp_session *s = mt_session();
  enum { N = 2 * 4 * 9 * 9 };
  static double ref[N];
  conv_once(s, MIXP_F64, NULL, 0, ref);
  static float first[N], again[N], base[N];
  const double atol = 2.0 * 27.0 * 27.0 * ldexp(1.0, -24);
  conv_once(s, MIXP_F32, base, sizeof base, NULL);
  for (int b = 0; b < 2; ++b)
    for (int d = 0; d < 2; ++d) {
      MT_OK(mixp_session_set_cudnn(s, b, d));
      conv_once(s, MIXP_F32, first, sizeof first, NULL);
      conv_once(s, MIXP_F32, again, sizeof again, NULL);
      for (int i = 0; i < N; ++i) assert_true(fabs((double)first[i] - ref[i]) <= atol);
      if (d) assert_memory_equal(first, again, sizeof first);
      if (mt_on_cpu()) assert_memory_equal(first, base, sizeof first);
    }
  mixp_session_destroy(s);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_defaults),
      cmocka_unit_test(test_options_at_create),
      cmocka_unit_test(test_setter_and_misuse),
      cmocka_unit_test(test_env_overrides),
      cmocka_unit_test(test_modes_compute_the_convolution),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
