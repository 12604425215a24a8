/* Tensor creation, host transfer, borrowing, random tensors, reference
 * counting, metadata getters, item() and in-place copy_. */
#include "test_util.h"

#define SENTINEL ((mixp_tensor *)(uintptr_t)0x7e57)

static uint16_t f16_bits_of(mixp_tensor *t) {
  uint16_t b = 0;
  MT_OK(mixp_tensor_to_host(t, &b, 2));
  return b;
}

/* ---- from_host / to_host ---------------------------------------------- */

static void test_from_host_copies(void **state) {
  mixp_session *s = (mixp_session *)*state;
  float src[6] = {1, 2, 3, 4, 5, 6};
  int64_t shape[2] = {2, 3};
  mixp_tensor *t = NULL;
  MT_OK(mixp_tensor_from_host(s, src, sizeof src, MIXP_F32, shape, 2, &t));
  src[0] = 100; /* the tensor has its own copy */
  float got[6];
  MT_OK(mixp_tensor_to_host(t, got, sizeof got));
  const float want[6] = {1, 2, 3, 4, 5, 6};
  assert_memory_equal(got, want, sizeof want);
  assert_int_equal(mixp_tensor_dtype(t), MIXP_F32);
  assert_int_equal(mixp_tensor_ndim(t), 2);
  assert_int_equal(mixp_tensor_numel(t), 6);
  assert_ptr_equal(mixp_tensor_session(t), s);
  assert_int_equal(mixp_tensor_requires_grad(t), 0);
  assert_int_equal(mixp_tensor_is_leaf(t), 1);
  mixp_tensor_release(t);

  /* Every dtype round-trips bit-exactly. */
  const mixp_dtype all[] = {MIXP_F32, MIXP_F16, MIXP_BF16, MIXP_F64,
                            MIXP_I32, MIXP_I64, MIXP_U8,   MIXP_BOOL};
  unsigned char bytes[64], back[64];
  for (int i = 0; i < 64; ++i) bytes[i] = (unsigned char)(i * 37 + 11);
  for (size_t d = 0; d < sizeof all / sizeof all[0]; ++d) {
    if (all[d] == MIXP_BOOL) {
      for (int i = 0; i < 64; ++i) bytes[i] = (unsigned char)(i % 3 == 0);
    }
    size_t es = mixp_dtype_size(all[d]);
    int64_t n = (int64_t)(64 / es);
    MT_OK(mixp_tensor_from_host(s, bytes, 64, all[d], &n, 1, &t));
    assert_int_equal(mixp_tensor_dtype(t), all[d]);
    memset(back, 0, sizeof back);
    MT_OK(mixp_tensor_to_host(t, back, 64));
    assert_memory_equal(back, bytes, 64);
    mixp_tensor_release(t);
  }

  /* A 0-d scalar. */
  double one = 3.25;
  int64_t dummy = 1;
  MT_OK(mixp_tensor_from_host(s, &one, sizeof one, MIXP_F64, &dummy, 0, &t));
  assert_int_equal(mixp_tensor_ndim(t), 0);
  assert_int_equal(mixp_tensor_numel(t), 1);
  double v = 0;
  MT_OK(mixp_tensor_item(t, &v));
  assert_true(v == 3.25);
  mixp_tensor_release(t);
}

static void test_from_host_misuse(void **state) {
  mixp_session *s = (mixp_session *)*state;
  float src[6] = {0};
  int64_t shape[2] = {2, 3};
  mixp_tensor *t = SENTINEL;
  MT_FAILS2(mixp_tensor_from_host(NULL, src, sizeof src, MIXP_F32, shape, 2, &t),
            MIXP_ERR_INVALID_ARGUMENT, "mixp_tensor_from_host", "session");
  MT_FAILS2(mixp_tensor_from_host(s, NULL, sizeof src, MIXP_F32, shape, 2, &t),
            MIXP_ERR_INVALID_ARGUMENT, "mixp_tensor_from_host", "data");
  MT_FAILS2(mixp_tensor_from_host(s, src, sizeof src - 4, MIXP_F32, shape, 2, &t),
            MIXP_ERR_INVALID_ARGUMENT, "mixp_tensor_from_host", "nbytes");
  /* Both the given and the expected sizes are named. */
  assert_non_null(strstr(mixp_last_error(), "20"));
  assert_non_null(strstr(mixp_last_error(), "24"));
  MT_FAILS2(mixp_tensor_from_host(s, src, sizeof src, (mixp_dtype)42, shape, 2, &t),
            MIXP_ERR_INVALID_ARGUMENT, "mixp_tensor_from_host", "dtype");
  MT_FAILS2(mixp_tensor_from_host(s, src, sizeof src, MIXP_F32, NULL, 2, &t),
            MIXP_ERR_INVALID_ARGUMENT, "mixp_tensor_from_host", "shape");
  MT_FAILS2(mixp_tensor_from_host(s, src, sizeof src, MIXP_F32, shape, -1, &t),
            MIXP_ERR_INVALID_ARGUMENT, "mixp_tensor_from_host", "ndim");
  int64_t neg[2] = {2, -3};
  MT_FAILS2(mixp_tensor_from_host(s, src, sizeof src, MIXP_F32, neg, 2, &t),
            MIXP_ERR_INVALID_ARGUMENT, "mixp_tensor_from_host", "-3");
  assert_ptr_equal(t, SENTINEL);
  MT_FAILS2(mixp_tensor_from_host(s, src, sizeof src, MIXP_F32, shape, 2, NULL),
            MIXP_ERR_INVALID_ARGUMENT, "mixp_tensor_from_host", "out");

  /* NULL data is fine when there are no elements. */
  int64_t empty[2] = {0, 5};
  MT_OK(mixp_tensor_from_host(s, NULL, 0, MIXP_F32, empty, 2, &t));
  assert_int_equal(mixp_tensor_numel(t), 0);
  mixp_tensor_release(t);
}

static void test_to_host(void **state) {
  mixp_session *s = (mixp_session *)*state;
  double src[6] = {1, 2, 3, 4, 5, 6};
  int64_t shape[2] = {2, 3};
  mixp_tensor *t = NULL, *tt = NULL;
  MT_OK(mixp_tensor_from_host(s, src, sizeof src, MIXP_F64, shape, 2, &t));
  double got[6] = {0};
  MT_FAILS2(mixp_tensor_to_host(t, got, sizeof got - 1), MIXP_ERR_INVALID_ARGUMENT,
            "mixp_tensor_to_host", "nbytes");
  MT_FAILS2(mixp_tensor_to_host(t, got, sizeof got + 8), MIXP_ERR_INVALID_ARGUMENT,
            "mixp_tensor_to_host", "nbytes");
  for (int i = 0; i < 6; ++i) assert_true(got[i] == 0); /* untouched */
  MT_FAILS2(mixp_tensor_to_host(t, NULL, sizeof got), MIXP_ERR_INVALID_ARGUMENT,
            "mixp_tensor_to_host", "dst");
  MT_FAILS(mixp_tensor_to_host(NULL, got, sizeof got), MIXP_ERR_INVALID_ARGUMENT,
           "mixp_tensor_to_host");

  /* Any strides: a transposed view comes back in row-major order. */
  MT_OK(mixp_transpose(t, 0, 1, &tt));
  MT_OK(mixp_tensor_to_host(tt, got, sizeof got));
  const double want[6] = {1, 4, 2, 5, 3, 6};
  assert_memory_equal(got, want, sizeof want);
  mixp_tensor_release(tt);
  mixp_tensor_release(t);
}

/* ---- borrow_host -------------------------------------------------------- */

/* Borrowing is for CPU sessions: these tests make their own, whatever
 * MIXP_TEST_DEVICE says. */
static mixp_session *cpu_session(void) {
  mixp_session_options o;
  mixp_session_options_init(&o);
  o.device = "cpu";
  o.num_threads = 2;
  mixp_session *s = NULL;
  MT_OK(mixp_session_create(&o, &s));
  return s;
}

static int release_calls;
static void *release_arg;
static void on_release(void *user) {
  ++release_calls;
  release_arg = user;
}

static void test_borrow_host(void **state) {
  (void)state;
  mixp_session *s = cpu_session();
  float *buf = (float *)malloc(6 * sizeof(float));
  for (int i = 0; i < 6; ++i) buf[i] = (float)i;
  int64_t shape[2] = {2, 3};
  mixp_tensor *t = NULL, *v = NULL, *r = NULL;
  release_calls = 0;
  release_arg = NULL;
  int tag = 0;
  MT_OK(mixp_tensor_borrow_host(s, buf, 6 * sizeof(float), MIXP_F32, shape, 2, on_release, &tag,
                                &t));
  /* Zero-copy: host writes are visible. */
  buf[4] = 40.0f;
  float got[6];
  MT_OK(mixp_tensor_to_host(t, got, sizeof got));
  assert_true(got[4] == 40.0f);

  /* mixp writes land in the host buffer. */
  mixp_tensor *seven = NULL;
  int64_t one = 1;
  MT_OK(mixp_tensor_full(s, MIXP_F32, &one, 1, 7.0, &seven));
  MT_OK(mixp_transpose(t, 0, 1, &v));
  mixp_tensor *col = NULL;
  MT_OK(mixp_slice(v, 0, 1, 2, 1, &col)); /* row 1 of v = column 1 of t */
  MT_OK(mixp_tensor_copy_(col, seven));
  assert_true(buf[1] == 7.0f && buf[4] == 7.0f);
  assert_true(buf[0] == 0.0f && buf[2] == 2.0f);
  mixp_tensor_release(col);
  mixp_tensor_release(seven);

  /* The callback waits for the last view. */
  int64_t flat = 6;
  MT_OK(mixp_reshape(t, &flat, 1, &r));
  mixp_tensor_release(t);
  assert_int_equal(release_calls, 0);
  mixp_tensor_release(v);
  assert_int_equal(release_calls, 0);
  MT_OK(mixp_tensor_to_host(r, got, sizeof got));
  assert_true(got[5] == 5.0f);
  mixp_tensor_release(r);
  assert_int_equal(release_calls, 1);
  assert_ptr_equal(release_arg, &tag);

  /* Without a callback the buffer is simply used until the last release. */
  MT_OK(mixp_tensor_borrow_host(s, buf, 6 * sizeof(float), MIXP_F32, shape, 2, NULL, NULL, &t));
  MT_OK(mixp_tensor_to_host(t, got, sizeof got));
  assert_true(got[1] == 7.0f);
  mixp_tensor_release(t);
  assert_int_equal(release_calls, 1);
  free(buf);
  mixp_session_destroy(s);
}

static void test_borrow_host_misuse(void **state) {
  mixp_session *dev = (mixp_session *)*state;
  mixp_session *s = cpu_session();
  double *buf = (double *)malloc(8 * sizeof(double));
  int64_t shape[1] = {4};
  mixp_tensor *t = SENTINEL;
  release_calls = 0;
  /* Misaligned for F32. */
  MT_FAILS2(mixp_tensor_borrow_host(s, (char *)buf + 1, 4 * sizeof(float), MIXP_F32, shape, 1,
                                    on_release, NULL, &t),
            MIXP_ERR_INVALID_ARGUMENT, "mixp_tensor_borrow_host", "align");
  /* Misaligned for F64 (4-byte aligned only). */
  MT_FAILS2(mixp_tensor_borrow_host(s, (char *)buf + 4, 4 * sizeof(double), MIXP_F64, shape, 1,
                                    on_release, NULL, &t),
            MIXP_ERR_INVALID_ARGUMENT, "mixp_tensor_borrow_host", "align");
  MT_FAILS2(mixp_tensor_borrow_host(s, buf, 3, MIXP_F64, shape, 1, on_release, NULL, &t),
            MIXP_ERR_INVALID_ARGUMENT, "mixp_tensor_borrow_host", "nbytes");
  MT_FAILS2(mixp_tensor_borrow_host(s, NULL, 32, MIXP_F64, shape, 1, on_release, NULL, &t),
            MIXP_ERR_INVALID_ARGUMENT, "mixp_tensor_borrow_host", "data");
  MT_FAILS2(mixp_tensor_borrow_host(NULL, buf, 32, MIXP_F64, shape, 1, on_release, NULL, &t),
            MIXP_ERR_INVALID_ARGUMENT, "mixp_tensor_borrow_host", "session");
  MT_FAILS2(mixp_tensor_borrow_host(s, buf, 32, (mixp_dtype)99, shape, 1, on_release, NULL, &t),
            MIXP_ERR_INVALID_ARGUMENT, "mixp_tensor_borrow_host", "dtype");
  MT_FAILS2(mixp_tensor_borrow_host(s, buf, 32, MIXP_F64, shape, 1, on_release, NULL, NULL),
            MIXP_ERR_INVALID_ARGUMENT, "mixp_tensor_borrow_host", "out");
  assert_ptr_equal(t, SENTINEL);
  assert_int_equal(release_calls, 0); /* never called on failure */
  /* Aligned to 2 is enough for F16. */
  MT_OK(mixp_tensor_borrow_host(s, (char *)buf + 2, 4 * 2, MIXP_F16, shape, 1, on_release, NULL,
                                &t));
  mixp_tensor_release(t);
  assert_int_equal(release_calls, 1);
  /* A GPU session cannot borrow host memory. */
  if (strcmp(mixp_session_device(dev), "cpu") != 0) {
    t = SENTINEL;
    MT_FAILS(mixp_tensor_borrow_host(dev, buf, 32, MIXP_F64, shape, 1, on_release, NULL, &t),
             MIXP_ERR_DEVICE, "mixp_tensor_borrow_host");
    assert_ptr_equal(t, SENTINEL);
    assert_int_equal(release_calls, 1);
  }
  free(buf);
  mixp_session_destroy(s);
}

/* ---- zeros / ones / full / arange -------------------------------------- */

static void test_fill_constructors(void **state) {
  mixp_session *s = (mixp_session *)*state;
  int64_t shape[3] = {2, 3, 4};
  const mixp_dtype all[] = {MIXP_F32, MIXP_F16, MIXP_BF16, MIXP_F64, MIXP_I32, MIXP_I64, MIXP_U8};
  for (size_t d = 0; d < sizeof all / sizeof all[0]; ++d) {
    mixp_tensor *z = NULL, *o = NULL, *f = NULL;
    MT_OK(mixp_tensor_zeros(s, all[d], shape, 3, &z));
    MT_OK(mixp_tensor_ones(s, all[d], shape, 3, &o));
    MT_OK(mixp_tensor_full(s, all[d], shape, 3, 3.0, &f));
    assert_int_equal(mixp_tensor_numel(z), 24);
    assert_int_equal(mixp_tensor_dtype(o), all[d]);
    assert_int_equal(mixp_tensor_is_contiguous(f), 1);
    double *zv = mt_values(z), *ov = mt_values(o), *fv = mt_values(f);
    for (int i = 0; i < 24; ++i) {
      assert_true(zv[i] == 0.0);
      assert_true(ov[i] == 1.0);
      assert_true(fv[i] == 3.0);
    }
    free(zv);
    free(ov);
    free(fv);
    mixp_tensor_release(z);
    mixp_tensor_release(o);
    mixp_tensor_release(f);
  }
  /* full rounds to nearest even (0.1 in f16 is 0x2E66) and truncates ints. */
  int64_t one = 1;
  mixp_tensor *t = NULL;
  MT_OK(mixp_tensor_full(s, MIXP_F16, &one, 1, 0.1, &t));
  assert_int_equal(f16_bits_of(t), 0x2E66);
  mixp_tensor_release(t);
  MT_OK(mixp_tensor_full(s, MIXP_F16, &one, 1, 2049.0, &t)); /* tie -> even 2048 */
  assert_int_equal(f16_bits_of(t), 0x6800);
  mixp_tensor_release(t);
  MT_OK(mixp_tensor_full(s, MIXP_F16, &one, 1, 1e6, &t)); /* overflow -> inf */
  assert_int_equal(f16_bits_of(t), 0x7C00);
  mixp_tensor_release(t);
  MT_OK(mixp_tensor_full(s, MIXP_BF16, &one, 1, 1.00390625, &t)); /* 1 + 2^-8: tie -> 1 */
  assert_int_equal(f16_bits_of(t), 0x3F80);
  mixp_tensor_release(t);
  const double ivals[4] = {2.7, -2.7, 0.99, -0.99};
  const int32_t iwant[4] = {2, -2, 0, 0};
  for (int i = 0; i < 4; ++i) {
    int32_t got = 99;
    MT_OK(mixp_tensor_full(s, MIXP_I32, &one, 1, ivals[i], &t));
    MT_OK(mixp_tensor_to_host(t, &got, 4));
    assert_int_equal(got, iwant[i]);
    mixp_tensor_release(t);
    int64_t got64 = 99;
    MT_OK(mixp_tensor_full(s, MIXP_I64, &one, 1, ivals[i], &t));
    MT_OK(mixp_tensor_to_host(t, &got64, 8));
    assert_int_equal(got64, iwant[i]);
    mixp_tensor_release(t);
  }
  uint8_t u = 0;
  MT_OK(mixp_tensor_full(s, MIXP_U8, &one, 1, 200.9, &t));
  MT_OK(mixp_tensor_to_host(t, &u, 1));
  assert_int_equal(u, 200);
  mixp_tensor_release(t);

  /* Misuse. */
  t = SENTINEL;
  MT_FAILS2(mixp_tensor_zeros(NULL, MIXP_F32, shape, 3, &t), MIXP_ERR_INVALID_ARGUMENT,
            "mixp_tensor_zeros", "session");
  MT_FAILS2(mixp_tensor_zeros(s, (mixp_dtype)17, shape, 3, &t), MIXP_ERR_INVALID_ARGUMENT,
            "mixp_tensor_zeros", "dtype");
  MT_FAILS2(mixp_tensor_zeros(s, MIXP_F32, shape, 3, NULL), MIXP_ERR_INVALID_ARGUMENT,
            "mixp_tensor_zeros", "out");
  MT_FAILS2(mixp_tensor_ones(s, MIXP_F32, NULL, 3, &t), MIXP_ERR_INVALID_ARGUMENT,
            "mixp_tensor_ones", "shape");
  MT_FAILS2(mixp_tensor_ones(s, MIXP_F32, shape, 3, NULL), MIXP_ERR_INVALID_ARGUMENT,
            "mixp_tensor_ones", "out");
  int64_t neg[2] = {-1, 4};
  MT_FAILS2(mixp_tensor_full(s, MIXP_F32, neg, 2, 1.0, &t), MIXP_ERR_INVALID_ARGUMENT,
            "mixp_tensor_full", "-1");
  MT_FAILS2(mixp_tensor_full(s, MIXP_F32, shape, 3, 1.0, NULL), MIXP_ERR_INVALID_ARGUMENT,
            "mixp_tensor_full", "out");
  assert_ptr_equal(t, SENTINEL);
}

static void check_arange(mixp_session *s, mixp_dtype dt, double start, double end, double step,
                         int64_t n_want) {
  mixp_tensor *t = NULL;
  MT_OK(mixp_tensor_arange(s, dt, start, end, step, &t));
  assert_int_equal(mixp_tensor_ndim(t), 1);
  if (mixp_tensor_numel(t) != n_want) {
    print_error("arange(%g, %g, %g): %lld elements, want %lld\n", start, end, step,
                (long long)mixp_tensor_numel(t), (long long)n_want);
    fail();
  }
  double *v = mt_values(t);
  for (int64_t i = 0; i < n_want; ++i) {
    double want = start + (double)i * step;
    double tol = dt == MIXP_F32 ? 1e-6 * (1 + fabs(want)) : 1e-12 * (1 + fabs(want));
    if (!(fabs(v[i] - want) <= tol)) {
      print_error("arange(%g, %g, %g)[%lld] = %.17g, want %.17g\n", start, end, step,
                  (long long)i, v[i], want);
      fail();
    }
  }
  free(v);
  mixp_tensor_release(t);
}

static void test_arange(void **state) {
  mixp_session *s = (mixp_session *)*state;
  check_arange(s, MIXP_F32, 0, 5, 1, 5);
  check_arange(s, MIXP_F64, 0, 1, 0.25, 4);
  check_arange(s, MIXP_F64, 0, 1, 0.3, 4); /* 0, .3, .6, .9 */
  check_arange(s, MIXP_F64, 5, 0, -1, 5);  /* 5 4 3 2 1 */
  check_arange(s, MIXP_F64, 1, -1, -0.5, 4);
  check_arange(s, MIXP_I64, 0, 10, 3, 4); /* 0 3 6 9 */
  check_arange(s, MIXP_I32, -3, 3, 2, 3);
  check_arange(s, MIXP_F64, 3, 3, 1, 0); /* empty, like numpy */

  mixp_tensor *t = SENTINEL;
  MT_FAILS2(mixp_tensor_arange(s, MIXP_F32, 0, 5, 0, &t), MIXP_ERR_INVALID_ARGUMENT,
            "mixp_tensor_arange", "step");
  MT_FAILS2(mixp_tensor_arange(s, MIXP_F32, 0, 5, -1, &t), MIXP_ERR_INVALID_ARGUMENT,
            "mixp_tensor_arange", "step");
  MT_FAILS2(mixp_tensor_arange(s, MIXP_F32, 5, 0, 1, &t), MIXP_ERR_INVALID_ARGUMENT,
            "mixp_tensor_arange", "step");
  MT_FAILS(mixp_tensor_arange(s, MIXP_F32, 0, INFINITY, 1, &t), MIXP_ERR_INVALID_ARGUMENT,
           "mixp_tensor_arange");
  MT_FAILS(mixp_tensor_arange(s, MIXP_F32, NAN, 5, 1, &t), MIXP_ERR_INVALID_ARGUMENT,
           "mixp_tensor_arange");
  MT_FAILS(mixp_tensor_arange(s, MIXP_F32, 0, 5, NAN, &t), MIXP_ERR_INVALID_ARGUMENT,
           "mixp_tensor_arange");
  MT_FAILS2(mixp_tensor_arange(NULL, MIXP_F32, 0, 5, 1, &t), MIXP_ERR_INVALID_ARGUMENT,
            "mixp_tensor_arange", "session");
  MT_FAILS2(mixp_tensor_arange(s, MIXP_F32, 0, 5, 1, NULL), MIXP_ERR_INVALID_ARGUMENT,
            "mixp_tensor_arange", "out");
  MT_FAILS2(mixp_tensor_arange(s, (mixp_dtype)55, 0, 5, 1, &t), MIXP_ERR_INVALID_ARGUMENT,
            "mixp_tensor_arange", "dtype");
  assert_ptr_equal(t, SENTINEL);
}

/* ---- rand / randn -------------------------------------------------------- */

static void test_rand(void **state) {
  mixp_session *s = (mixp_session *)*state;
  const int64_t n = 100000;
  const mixp_dtype fl[] = {MIXP_F32, MIXP_F64, MIXP_F16, MIXP_BF16};
  for (int d = 0; d < 4; ++d) {
    mixp_tensor *t = NULL;
    MT_OK(mixp_tensor_rand(s, fl[d], &n, 1, &t));
    assert_int_equal(mixp_tensor_dtype(t), fl[d]);
    double *v = mt_values(t);
    double sum = 0;
    for (int64_t i = 0; i < n; ++i) {
      if (!(v[i] >= 0.0 && v[i] < 1.0)) {
        print_error("rand %s element %lld = %.17g outside [0,1)\n", mixp_dtype_name(fl[d]),
                    (long long)i, v[i]);
        fail();
      }
      sum += v[i];
    }
    double mean = sum / (double)n;
    if (fabs(mean - 0.5) > 0.005) {
      print_error("rand %s mean %.6f\n", mixp_dtype_name(fl[d]), mean);
      fail();
    }
    free(v);
    mixp_tensor_release(t);
  }

  /* Same seed, same values; a new seed, new values; the stream advances. */
  int64_t shape[2] = {37, 29};
  float a[37 * 29], b[37 * 29], c[37 * 29];
  mixp_tensor *t = NULL;
  MT_OK(mixp_session_set_seed(s, 2024));
  MT_OK(mixp_tensor_rand(s, MIXP_F32, shape, 2, &t));
  MT_OK(mixp_tensor_to_host(t, a, sizeof a));
  mixp_tensor_release(t);
  MT_OK(mixp_tensor_rand(s, MIXP_F32, shape, 2, &t));
  MT_OK(mixp_tensor_to_host(t, c, sizeof c));
  mixp_tensor_release(t);
  assert_memory_not_equal(a, c, sizeof a);
  MT_OK(mixp_session_set_seed(s, 2024));
  MT_OK(mixp_tensor_rand(s, MIXP_F32, shape, 2, &t));
  MT_OK(mixp_tensor_to_host(t, b, sizeof b));
  mixp_tensor_release(t);
  assert_memory_equal(a, b, sizeof a);
  MT_OK(mixp_session_set_seed(s, 2025));
  MT_OK(mixp_tensor_rand(s, MIXP_F32, shape, 2, &t));
  MT_OK(mixp_tensor_to_host(t, b, sizeof b));
  mixp_tensor_release(t);
  assert_memory_not_equal(a, b, sizeof a);

  t = SENTINEL;
  MT_FAILS2(mixp_tensor_rand(s, MIXP_I32, shape, 2, &t), MIXP_ERR_DTYPE, "mixp_tensor_rand",
            "i32");
  MT_FAILS(mixp_tensor_rand(s, MIXP_U8, shape, 2, &t), MIXP_ERR_DTYPE, "mixp_tensor_rand");
  MT_FAILS2(mixp_tensor_rand(NULL, MIXP_F32, shape, 2, &t), MIXP_ERR_INVALID_ARGUMENT,
            "mixp_tensor_rand", "session");
  MT_FAILS2(mixp_tensor_rand(s, MIXP_F32, shape, 2, NULL), MIXP_ERR_INVALID_ARGUMENT,
            "mixp_tensor_rand", "out");
  MT_FAILS2(mixp_tensor_rand(s, MIXP_F32, shape, 9, &t), MIXP_ERR_INVALID_ARGUMENT,
            "mixp_tensor_rand", "ndim");
  assert_ptr_equal(t, SENTINEL);
}

static void test_randn(void **state) {
  mixp_session *s = (mixp_session *)*state;
  const int64_t n = 100000;
  const mixp_dtype fl[] = {MIXP_F32, MIXP_F64, MIXP_BF16};
  for (int d = 0; d < 3; ++d) {
    mixp_tensor *t = NULL;
    MT_OK(mixp_tensor_randn(s, fl[d], &n, 1, &t));
    double *v = mt_values(t);
    double sum = 0, sq = 0;
    int far = 0;
    for (int64_t i = 0; i < n; ++i) {
      assert_true(isfinite(v[i]));
      sum += v[i];
      sq += v[i] * v[i];
      if (fabs(v[i]) > 3) ++far;
    }
    double mean = sum / (double)n, sd = sqrt(sq / (double)n - mean * mean);
    if (fabs(mean) > 0.02 || fabs(sd - 1.0) > 0.02) {
      print_error("randn %s: mean %.5f std %.5f\n", mixp_dtype_name(fl[d]), mean, sd);
      fail();
    }
    /* Tails: P(|z| > 3) = 0.0027. */
    assert_true(far > 150 && far < 400);
    free(v);
    mixp_tensor_release(t);
  }
  int64_t shape[1] = {8};
  mixp_tensor *t = SENTINEL;
  MT_FAILS2(mixp_tensor_randn(s, MIXP_I64, shape, 1, &t), MIXP_ERR_DTYPE, "mixp_tensor_randn",
            "i64");
  MT_FAILS2(mixp_tensor_randn(s, MIXP_F32, shape, 1, NULL), MIXP_ERR_INVALID_ARGUMENT,
            "mixp_tensor_randn", "out");
  MT_FAILS2(mixp_tensor_randn(NULL, MIXP_F32, shape, 1, &t), MIXP_ERR_INVALID_ARGUMENT,
            "mixp_tensor_randn", "session");
  assert_ptr_equal(t, SENTINEL);
}

/* ---- reference counting ------------------------------------------------- */

static void test_retain_release(void **state) {
  (void)state;
  mixp_session *s = cpu_session();
  float buf[4] = {1, 2, 3, 4};
  int64_t shape[1] = {4};
  mixp_tensor *t = NULL;
  release_calls = 0;
  MT_OK(mixp_tensor_borrow_host(s, buf, sizeof buf, MIXP_F32, shape, 1, on_release, NULL, &t));
  assert_ptr_equal(mixp_tensor_retain(t), t);
  assert_ptr_equal(mixp_tensor_retain(t), t);
  mixp_tensor_release(t);
  mixp_tensor_release(t);
  assert_int_equal(release_calls, 0);
  assert_int_equal(mixp_tensor_numel(t), 4); /* still alive */
  mixp_tensor_release(t);
  assert_int_equal(release_calls, 1);
  assert_null(mixp_tensor_retain(NULL));
  mixp_tensor_release(NULL);
  mixp_session_destroy(s);
}

/* retain/release from several threads at once (a GC finalizer's pattern). */
#include <pthread.h>
static void *retain_release_many(void *arg) {
  mixp_tensor *t = (mixp_tensor *)arg;
  for (int i = 0; i < 20000; ++i) {
    mixp_tensor_retain(t);
    mixp_tensor_release(t);
  }
  for (int i = 0; i < 500; ++i) mixp_tensor_retain(t);
  for (int i = 0; i < 500; ++i) mixp_tensor_release(t);
  return NULL;
}

static pthread_t releaser;
static int release_on_thread;
static void on_release_thread(void *user) {
  (void)user;
  ++release_calls;
  release_on_thread = pthread_equal(pthread_self(), releaser);
}
static void *release_once(void *arg) {
  releaser = pthread_self();
  mixp_tensor_release((mixp_tensor *)arg);
  return NULL;
}

static void test_retain_release_threads(void **state) {
  (void)state;
  mixp_session *s = cpu_session();
  float buf[4] = {1, 2, 3, 4};
  int64_t shape[1] = {4};
  mixp_tensor *t = NULL;
  release_calls = 0;
  MT_OK(mixp_tensor_borrow_host(s, buf, sizeof buf, MIXP_F32, shape, 1, on_release_thread, NULL,
                                &t));
  pthread_t th[4];
  for (int i = 0; i < 4; ++i) assert_int_equal(pthread_create(&th[i], NULL, retain_release_many, t), 0);
  for (int i = 0; i < 4; ++i) assert_int_equal(pthread_join(th[i], NULL), 0);
  assert_int_equal(release_calls, 0);
  float got[4];
  MT_OK(mixp_tensor_to_host(t, got, sizeof got));
  assert_memory_equal(got, buf, sizeof buf);
  /* The last reference dropped on another thread: the callback runs there. */
  release_on_thread = 0;
  pthread_t th1;
  assert_int_equal(pthread_create(&th1, NULL, release_once, t), 0);
  assert_int_equal(pthread_join(th1, NULL), 0);
  assert_int_equal(release_calls, 1);
  assert_true(release_on_thread);
  mixp_session_destroy(s);
}

/* ---- getters ----------------------------------------------------------- */

static void test_getters(void **state) {
  mixp_session *s = (mixp_session *)*state;
  int64_t shape[3] = {2, 3, 4};
  mixp_tensor *t = NULL, *tt = NULL;
  MT_OK(mixp_tensor_zeros(s, MIXP_BF16, shape, 3, &t));
  assert_int_equal(mixp_tensor_dtype(t), MIXP_BF16);
  assert_int_equal(mixp_tensor_ndim(t), 3);
  assert_int_equal(mixp_tensor_dim(t, 0), 2);
  assert_int_equal(mixp_tensor_dim(t, 2), 4);
  assert_int_equal(mixp_tensor_dim(t, -1), 4);
  assert_int_equal(mixp_tensor_dim(t, -3), 2);
  assert_int_equal(mixp_tensor_stride(t, 0), 12);
  assert_int_equal(mixp_tensor_stride(t, 1), 4);
  assert_int_equal(mixp_tensor_stride(t, -1), 1);
  assert_int_equal(mixp_tensor_numel(t), 24);
  assert_int_equal(mixp_tensor_is_contiguous(t), 1);
  int64_t got[MIXP_MAX_DIMS];
  int nd = -5;
  MT_OK(mixp_tensor_shape(t, got, MIXP_MAX_DIMS, &nd));
  assert_int_equal(nd, 3);
  assert_memory_equal(got, shape, sizeof shape);
  MT_OK(mixp_tensor_shape(t, got, 3, &nd)); /* exactly enough */

  MT_OK(mixp_transpose(t, 0, 2, &tt));
  assert_int_equal(mixp_tensor_is_contiguous(tt), 0);
  assert_int_equal(mixp_tensor_stride(tt, 0), 1);
  assert_int_equal(mixp_tensor_stride(tt, 2), 12);
  assert_int_equal(mixp_tensor_dim(tt, 0), 4);

  /* Out-of-range dims: -1 / 0 and the error names the dim. */
  assert_int_equal(mixp_tensor_dim(t, 3), -1);
  assert_int_equal(mixp_last_status(), MIXP_ERR_INVALID_ARGUMENT);
  assert_non_null(strstr(mixp_last_error(), "mixp_tensor_dim"));
  assert_non_null(strstr(mixp_last_error(), "3"));
  assert_int_equal(mixp_tensor_dim(t, -4), -1);
  assert_non_null(strstr(mixp_last_error(), "-4"));
  assert_int_equal(mixp_tensor_stride(t, 7), 0);
  assert_non_null(strstr(mixp_last_error(), "mixp_tensor_stride"));
  assert_non_null(strstr(mixp_last_error(), "7"));
  assert_int_equal(mixp_tensor_stride(t, -9), 0);
  assert_non_null(strstr(mixp_last_error(), "-9"));

  /* Too small a buffer, NULLs. */
  nd = -5;
  MT_FAILS2(mixp_tensor_shape(t, got, 2, &nd), MIXP_ERR_INVALID_ARGUMENT, "mixp_tensor_shape",
            "capacity");
  assert_int_equal(nd, -5);
  MT_FAILS(mixp_tensor_shape(t, NULL, 8, &nd), MIXP_ERR_INVALID_ARGUMENT, "mixp_tensor_shape");
  MT_FAILS2(mixp_tensor_shape(t, got, 8, NULL), MIXP_ERR_INVALID_ARGUMENT, "mixp_tensor_shape",
            "ndim");
  MT_FAILS(mixp_tensor_shape(NULL, got, 8, &nd), MIXP_ERR_INVALID_ARGUMENT, "mixp_tensor_shape");

  /* NULL handles. */
  assert_int_equal(mixp_tensor_dtype(NULL), MIXP_F32);
  assert_non_null(strstr(mixp_last_error(), "mixp_tensor_dtype"));
  assert_int_equal(mixp_tensor_ndim(NULL), -1);
  assert_int_equal(mixp_tensor_dim(NULL, 0), -1);
  assert_non_null(strstr(mixp_last_error(), "mixp_tensor_dim"));
  assert_int_equal(mixp_tensor_stride(NULL, 0), 0);
  assert_int_equal(mixp_tensor_numel(NULL), -1);
  assert_int_equal(mixp_tensor_is_contiguous(NULL), 0);
  assert_null(mixp_tensor_session(NULL));
  assert_int_equal(mixp_tensor_requires_grad(NULL), 0);
  assert_int_equal(mixp_tensor_is_leaf(NULL), 0);

  mixp_tensor_release(tt);
  mixp_tensor_release(t);
}

static void test_item(void **state) {
  mixp_session *s = (mixp_session *)*state;
  int64_t one[2] = {1, 1};
  mixp_tensor *t = NULL;
  double v = -1;
  MT_OK(mixp_tensor_full(s, MIXP_F32, one, 2, 2.5, &t));
  MT_OK(mixp_tensor_item(t, &v));
  assert_true(v == 2.5);
  MT_FAILS2(mixp_tensor_item(t, NULL), MIXP_ERR_INVALID_ARGUMENT, "mixp_tensor_item", "value");
  mixp_tensor_release(t);
  MT_OK(mixp_tensor_full(s, MIXP_I64, one, 1, -7, &t));
  MT_OK(mixp_tensor_item(t, &v));
  assert_true(v == -7);
  mixp_tensor_release(t);
  MT_OK(mixp_tensor_full(s, MIXP_F16, one, 1, 0.1, &t));
  MT_OK(mixp_tensor_item(t, &v));
  assert_true(v == 0.0999755859375); /* the f16 value, not 0.1 */
  mixp_tensor_release(t);

  int64_t many[1] = {3};
  MT_OK(mixp_tensor_zeros(s, MIXP_F32, many, 1, &t));
  v = 123;
  MT_FAILS2(mixp_tensor_item(t, &v), MIXP_ERR_SHAPE, "mixp_tensor_item", "3");
  assert_true(v == 123);
  mixp_tensor_release(t);
  int64_t none[1] = {0};
  MT_OK(mixp_tensor_zeros(s, MIXP_F32, none, 1, &t));
  assert_int_not_equal(mixp_tensor_item(t, &v), MIXP_OK);
  assert_true(v == 123);
  mixp_tensor_release(t);
  MT_FAILS(mixp_tensor_item(NULL, &v), MIXP_ERR_INVALID_ARGUMENT, "mixp_tensor_item");
}

static void test_dims_limits(void **state) {
  mixp_session *s = (mixp_session *)*state;
  int64_t eight[9] = {1, 2, 1, 2, 1, 2, 1, 2, 1};
  mixp_tensor *t = NULL;
  MT_OK(mixp_tensor_zeros(s, MIXP_F32, eight, 8, &t));
  assert_int_equal(mixp_tensor_ndim(t), 8);
  assert_int_equal(mixp_tensor_numel(t), 16);
  assert_int_equal(mixp_tensor_stride(t, 0), 16);
  mixp_tensor_release(t);
  t = SENTINEL;
  MT_FAILS2(mixp_tensor_zeros(s, MIXP_F32, eight, 9, &t), MIXP_ERR_INVALID_ARGUMENT,
            "mixp_tensor_zeros", "ndim");
  assert_non_null(strstr(mixp_last_error(), "9"));
  float buf[16] = {0};
  MT_FAILS2(mixp_tensor_from_host(s, buf, sizeof buf, MIXP_F32, eight, 9, &t),
            MIXP_ERR_INVALID_ARGUMENT, "mixp_tensor_from_host", "ndim");
  assert_ptr_equal(t, SENTINEL);

  /* Zero-size dims. */
  int64_t zs[3] = {3, 0, 2};
  MT_OK(mixp_tensor_zeros(s, MIXP_F32, zs, 3, &t));
  assert_int_equal(mixp_tensor_numel(t), 0);
  assert_int_equal(mixp_tensor_dim(t, 1), 0);
  MT_OK(mixp_tensor_to_host(t, buf, 0));
  mixp_tensor *u = NULL;
  MT_OK(mixp_cast(t, MIXP_F64, &u));
  assert_int_equal(mixp_tensor_numel(u), 0);
  assert_int_equal(mixp_tensor_dim(u, 2), 2);
  mixp_tensor_release(u);
  MT_OK(mixp_transpose(t, 0, 2, &u));
  assert_int_equal(mixp_tensor_dim(u, 0), 2);
  mixp_tensor_release(u);
  mixp_tensor_release(t);
}

/* ---- copy_ ---------------------------------------------------------------- */

static void test_copy_(void **state) {
  mixp_session *s = (mixp_session *)*state;
  int64_t dshape[2] = {2, 3};
  mixp_tensor *dst = NULL, *src = NULL;
  MT_OK(mixp_tensor_zeros(s, MIXP_F32, dshape, 2, &dst));
  /* Broadcast a [3] F64 row and convert to F32. */
  const double row[3] = {1.5, -2.25, 3.0};
  int64_t rshape[1] = {3};
  MT_OK(mixp_tensor_from_host(s, row, sizeof row, MIXP_F64, rshape, 1, &src));
  MT_OK(mixp_tensor_copy_(dst, src));
  float got[6];
  MT_OK(mixp_tensor_to_host(dst, got, sizeof got));
  const float want[6] = {1.5f, -2.25f, 3.0f, 1.5f, -2.25f, 3.0f};
  assert_memory_equal(got, want, sizeof want);
  mixp_tensor_release(src);

  /* Into an I32 tensor: truncation. */
  mixp_tensor *idst = NULL;
  MT_OK(mixp_tensor_zeros(s, MIXP_I32, dshape, 2, &idst));
  const double vals[6] = {1.9, -1.9, 2.5, -0.5, 7, 100.99};
  MT_OK(mixp_tensor_from_host(s, vals, sizeof vals, MIXP_F64, dshape, 2, &src));
  MT_OK(mixp_tensor_copy_(idst, src));
  int32_t ig[6];
  MT_OK(mixp_tensor_to_host(idst, ig, sizeof ig));
  const int32_t iw[6] = {1, -1, 2, 0, 7, 100};
  assert_memory_equal(ig, iw, sizeof iw);
  mixp_tensor_release(idst);

  /* Into F16: rounding. */
  mixp_tensor *hdst = NULL;
  int64_t one = 1;
  MT_OK(mixp_tensor_zeros(s, MIXP_F16, &one, 1, &hdst));
  mixp_tensor *tenth = NULL;
  MT_OK(mixp_tensor_full(s, MIXP_F64, &one, 1, 0.1, &tenth));
  MT_OK(mixp_tensor_copy_(hdst, tenth));
  assert_int_equal(f16_bits_of(hdst), 0x2E66);
  mixp_tensor_release(hdst);
  mixp_tensor_release(tenth);

  /* Into a transposed (non-contiguous) destination. */
  mixp_tensor *base = NULL, *view = NULL;
  int64_t bshape[2] = {3, 2};
  MT_OK(mixp_tensor_zeros(s, MIXP_F64, bshape, 2, &base));
  MT_OK(mixp_transpose(base, 0, 1, &view)); /* [2,3] */
  MT_OK(mixp_tensor_copy_(view, src));
  double bg[6];
  MT_OK(mixp_tensor_to_host(base, bg, sizeof bg));
  const double bw[6] = {1.9, -0.5, -1.9, 7, 2.5, 100.99};
  assert_memory_equal(bg, bw, sizeof bw);
  mixp_tensor_release(view);
  mixp_tensor_release(base);

  /* Shape mismatch names both shapes; dst untouched. */
  mixp_tensor *bad = NULL;
  int64_t two = 2;
  MT_OK(mixp_tensor_ones(s, MIXP_F32, &two, 1, &bad));
  MT_FAILS2(mixp_tensor_copy_(dst, bad), MIXP_ERR_SHAPE, "mixp_tensor_copy_", "[2,3]");
  assert_non_null(strstr(mixp_last_error(), "[2]"));
  MT_OK(mixp_tensor_to_host(dst, got, sizeof got));
  assert_memory_equal(got, want, sizeof want);
  /* src larger than dst does not broadcast. */
  mixp_tensor *small = NULL;
  MT_OK(mixp_tensor_zeros(s, MIXP_F32, rshape, 1, &small));
  MT_FAILS(mixp_tensor_copy_(small, dst), MIXP_ERR_SHAPE, "mixp_tensor_copy_");
  mixp_tensor_release(small);
  mixp_tensor_release(bad);

  MT_FAILS2(mixp_tensor_copy_(NULL, src), MIXP_ERR_INVALID_ARGUMENT, "mixp_tensor_copy_", "dst");
  MT_FAILS2(mixp_tensor_copy_(dst, NULL), MIXP_ERR_INVALID_ARGUMENT, "mixp_tensor_copy_", "src");

  /* A leaf that requires grad: refused with grad mode on, fine under no_grad. */
  MT_OK(mixp_tensor_set_requires_grad(dst, 1));
  MT_FAILS2(mixp_tensor_copy_(dst, src), MIXP_ERR_STATE, "mixp_tensor_copy_", "grad");
  MT_OK(mixp_tensor_to_host(dst, got, sizeof got));
  assert_memory_equal(got, want, sizeof want);
  MT_OK(mixp_no_grad_begin(s));
  MT_OK(mixp_tensor_copy_(dst, src));
  MT_OK(mixp_no_grad_end(s));
  MT_OK(mixp_tensor_to_host(dst, got, sizeof got));
  for (int i = 0; i < 6; ++i) assert_true(got[i] == (float)vals[i]);
  assert_int_equal(mixp_tensor_requires_grad(dst), 1);

  /* Across sessions. */
  mixp_session *s2 = mt_session();
  mixp_tensor *other = NULL;
  MT_OK(mixp_tensor_zeros(s2, MIXP_F32, dshape, 2, &other));
  MT_FAILS(mixp_tensor_copy_(other, src), MIXP_ERR_DEVICE, "mixp_tensor_copy_");
  mixp_tensor_release(other);
  mixp_session_destroy(s2);

  mixp_tensor_release(src);
  mixp_tensor_release(dst);
}

/* An allocation the machine cannot serve fails with MIXP_ERR_OUT_OF_MEMORY,
 * names the public function (not just the backend), and leaves the session
 * usable. 2^45 F32 elements are 128 TiB. */
static void test_out_of_memory_names_function(void **state) {
  (void)state;
  mixp_session *s = mt_session();
  const int64_t huge[1] = {(int64_t)1 << 45};
  mixp_tensor *t = NULL;
  /* Each backend words the failure its own way; both name the function first. */
  MT_FAILS(mixp_tensor_zeros(s, MIXP_F32, huge, 1, &t), MIXP_ERR_OUT_OF_MEMORY,
           mt_on_cpu() ? "mixp_tensor_zeros: cpu: cannot allocate"
                       : "mixp_tensor_zeros: cuda: out of memory allocating 140737488355328 bytes");
  assert_null(t);
  const int64_t small[1] = {4};
  MT_OK(mixp_tensor_zeros(s, MIXP_F32, small, 1, &t));
  mixp_tensor_release(t);
  mixp_session_destroy(s);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_from_host_copies),
      cmocka_unit_test(test_out_of_memory_names_function),
      cmocka_unit_test(test_from_host_misuse),
      cmocka_unit_test(test_to_host),
      cmocka_unit_test(test_borrow_host),
      cmocka_unit_test(test_borrow_host_misuse),
      cmocka_unit_test(test_fill_constructors),
      cmocka_unit_test(test_arange),
      cmocka_unit_test(test_rand),
      cmocka_unit_test(test_randn),
      cmocka_unit_test(test_retain_release),
      cmocka_unit_test(test_retain_release_threads),
      cmocka_unit_test(test_getters),
      cmocka_unit_test(test_item),
      cmocka_unit_test(test_dims_limits),
      cmocka_unit_test(test_copy_),
  };
  return cmocka_run_group_tests(tests, mt_setup_session, mt_teardown_session);
}
