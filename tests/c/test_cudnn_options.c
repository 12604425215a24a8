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

/* One convolution forward and backward (seed gradient 1) under the
 * session's current mode, in `layout`: y, gx and gw as doubles (exact for
 * F32). x [2, 3, 9, 9] and w [4, 3, 3, 3] in [-1, 1], padding 1. */
enum { NY = 2 * 4 * 9 * 9, NX = 2 * 3 * 9 * 9, NW = 4 * 3 * 3 * 3 };
typedef struct conv_out {
  double y[NY], gx[NX], gw[NW];
} conv_out;

static void conv_once(mixp_session *s, mixp_dtype dt, mixp_layout layout, conv_out *r) {
  double xv[NX], wv[NW];
  mt_fill(xv, NX, -1, 1, 31); /* the same values in either layout's order: compared per layout */
  mt_fill(wv, NW, -1, 1, 32);
  const int64_t xs_nchw[4] = {2, 3, 9, 9}, xs_nhwc[4] = {2, 9, 9, 3}, ws[4] = {4, 3, 3, 3};
  mixp_tensor *x = mt_tensor(s, dt, xv, layout == MIXP_NHWC ? xs_nhwc : xs_nchw, 4);
  mixp_tensor *w = mt_tensor(s, dt, wv, ws, 4), *y = NULL, *seed = NULL, *gx = NULL, *gw = NULL;
  MT_OK(mixp_tensor_set_requires_grad(x, 1));
  MT_OK(mixp_tensor_set_requires_grad(w, 1));
  mixp_conv2d_options o;
  mixp_conv2d_options_init(&o);
  o.pad_h = o.pad_w = 1;
  o.layout = layout;
  MT_OK(mixp_conv2d(x, w, NULL, &o, &y));
  int64_t ys[4];
  for (int i = 0; i < 4; ++i) ys[i] = mixp_tensor_dim(y, i);
  MT_OK(mixp_tensor_ones(s, dt, ys, 4, &seed));
  MT_OK(mixp_backward(y, seed));
  MT_OK(mixp_tensor_grad(x, &gx));
  MT_OK(mixp_tensor_grad(w, &gw));
  double *v[3] = {mt_values(y), mt_values(gx), mt_values(gw)};
  memcpy(r->y, v[0], sizeof r->y);
  memcpy(r->gx, v[1], sizeof r->gx);
  memcpy(r->gw, v[2], sizeof r->gw);
  for (int i = 0; i < 3; ++i) free(v[i]);
  mixp_tensor *all[6] = {x, w, y, seed, gx, gw};
  for (int i = 0; i < 6; ++i) mixp_tensor_release(all[i]);
}

/* Within 2 k gamma_k-ish of the F64 reference: k terms bounded by 1 each
 * (u = 2^-24; the factor 2 for transform-based algorithms' constants). */
static void assert_near(const double *got, const double *want, int n, int k) {
  const double atol = 2.0 * k * k * ldexp(1.0, -24);
  for (int i = 0; i < n; ++i) assert_true(fabs(got[i] - want[i]) <= atol);
}

/* Every mode computes the convolution and both its gradients (forward
 * sums 27 products, backward data 36, backward weights 162); a
 * deterministic mode repeats its bits; on the CPU every mode gives the
 * same bits. On a GPU this runs cuDNN's heuristic and timed (Find)
 * choices in NCHW and NHWC. */
static void test_modes_compute_the_convolution(void **state) {
  (void)state;
  clear_env();
  mixp_session *s = mt_session();
  static conv_out ref, base, first, again;
  for (int l = 0; l < 2; ++l) {
    const mixp_layout layout = l ? MIXP_NHWC : MIXP_NCHW;
    MT_OK(mixp_session_set_cudnn(s, 0, 1));
    conv_once(s, MIXP_F64, layout, &ref);
    conv_once(s, MIXP_F32, layout, &base);
    for (int b = 0; b < 2; ++b)
      for (int d = 0; d < 2; ++d) {
        MT_OK(mixp_session_set_cudnn(s, b, d));
        conv_once(s, MIXP_F32, layout, &first);
        conv_once(s, MIXP_F32, layout, &again);
        assert_near(first.y, ref.y, NY, 27);
        assert_near(first.gx, ref.gx, NX, 36);
        assert_near(first.gw, ref.gw, NW, 162);
        if (d) assert_memory_equal(&first, &again, sizeof first);
        if (mt_on_cpu()) assert_memory_equal(&first, &base, sizeof first);
      }
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
