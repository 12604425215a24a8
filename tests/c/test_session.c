/* Sessions: creation and its misuse, device selection, threads, the RNG
 * seed, no-grad regions, memory statistics, and tensors that outlive their
 * session. */
#include "test_util.h"

static mixp_session *const SENTINEL = (mixp_session *)(uintptr_t)0x5e55;

static int cuda_requested(void) {
  const char *d = getenv("MIXP_TEST_DEVICE");
  return d && strncmp(d, "cuda", 4) == 0;
}

static mixp_session *make(const char *device, int threads, uint64_t seed) {
  mixp_session_options o;
  mixp_session_options_init(&o);
  o.device = device;
  o.num_threads = threads;
  o.seed = seed;
  mixp_session *s = NULL;
  MT_OK(mixp_session_create(&o, &s));
  assert_non_null(s);
  return s;
}

static void test_create_defaults(void **state) {
  (void)state;
  mixp_session *s = NULL;
  MT_OK(mixp_session_create(NULL, &s));
  assert_non_null(s);
  assert_string_equal(mixp_session_device(s), "cpu");
  assert_non_null(mixp_session_device_note(s));
  assert_true(mixp_session_num_threads(s) >= 1);
  assert_int_equal(mixp_grad_enabled(s), 1);
  mixp_session_destroy(s);

  /* Options from init are the defaults too. */
  mixp_session_options o;
  mixp_session_options_init(&o);
  MT_OK(mixp_session_create(&o, &s));
  assert_string_equal(mixp_session_device(s), "cpu");
  mixp_session_destroy(s);
}

static void test_create_cpu(void **state) {
  (void)state;
  mixp_session *s = make("cpu", 1, 7);
  assert_string_equal(mixp_session_device(s), "cpu");
  assert_int_equal(mixp_session_num_threads(s), 1);
  /* The note describes the CPU and the path of each precision, each ending
   * in the documented "(faster|not faster than fp32)". */
  const char *note = mixp_session_device_note(s);
  const char *parts[] = {"cpu: ", "; fp32: ", "; bf16: ", "; f16: "};
  for (int i = 0; i < 4; ++i)
    if (!strstr(note, parts[i])) {
      print_error("cpu device note \"%s\" lacks \"%s\"\n", note, parts[i]);
      fail();
    }
  const char *bf = strstr(note, "; bf16: ");
  const char *f16 = strstr(note, "; f16: ");
  assert_true(bf < f16);
  assert_true(strstr(bf, "than fp32)") < f16);
  assert_non_null(strstr(f16, "than fp32)"));
  mixp_session_destroy(s);
}

static void test_create_auto(void **state) {
  (void)state;
  mixp_session *s = make("auto", 0, 0);
  const char *dev = mixp_session_device(s);
  const char *note = mixp_session_device_note(s);
  assert_non_null(note);
  if (strncmp(dev, "cuda", 4) == 0) {
    /* A GPU machine: auto picked CUDA and says so. */
    assert_non_null(strstr(note, "cuda"));
  } else {
    assert_string_equal(dev, "cpu");
    if (strstr(note, "auto") == NULL || strstr(note, "cpu") == NULL) {
      print_error("device note \"%s\" should say that 'auto' fell back to cpu\n", note);
      fail();
    }
  }
  mixp_session_destroy(s);
}

/* Whether this machine can serve CUDA (then the errors below do not apply). */
static int cuda_available(void) {
  if (cuda_requested()) return 1;
  mixp_session *s = make("auto", 1, 0);
  int yes = strncmp(mixp_session_device(s), "cuda", 4) == 0;
  mixp_session_destroy(s);
  return yes;
}

static void test_create_cuda_unavailable(void **state) {
  (void)state;
  if (cuda_available()) skip();
  const char *devs[] = {"cuda", "cuda:0"};
  for (int i = 0; i < 2; ++i) {
    mixp_session_options o;
    mixp_session_options_init(&o);
    o.device = devs[i];
    mixp_session *s = SENTINEL;
    MT_FAILS2(mixp_session_create(&o, &s), MIXP_ERR_DEVICE, "mixp_session_create", "cuda");
    assert_ptr_equal(s, SENTINEL);
    /* The message explains itself: more than the bare function name. */
    assert_true(strlen(mixp_last_error()) > strlen("mixp_session_create: cuda") + 10);
  }
}

static void test_create_bad_devices(void **state) {
  (void)state;
  const char *bad[] = {"gpu", "cuda:x", "cuda:-1", "cpu:0x", "cuda:", "tpu:1"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; ++i) {
    mixp_session_options o;
    mixp_session_options_init(&o);
    o.device = bad[i];
    mixp_session *s = SENTINEL;
    char quoted[64];
    snprintf(quoted, sizeof quoted, "%s", bad[i]);
    MT_FAILS2(mixp_session_create(&o, &s), MIXP_ERR_INVALID_ARGUMENT, "mixp_session_create",
              quoted);
    assert_ptr_equal(s, SENTINEL);
  }
  mixp_session_options o;
  mixp_session_options_init(&o);
  o.device = "";
  mixp_session *s = SENTINEL;
  MT_FAILS2(mixp_session_create(&o, &s), MIXP_ERR_INVALID_ARGUMENT, "mixp_session_create",
            "device");
  assert_ptr_equal(s, SENTINEL);
}

static void test_create_misuse(void **state) {
  (void)state;
  mixp_session_options o;
  mixp_session_options_init(&o);
  MT_FAILS2(mixp_session_create(&o, NULL), MIXP_ERR_INVALID_ARGUMENT, "mixp_session_create",
            "out");

  mixp_session *s = SENTINEL;
  o.struct_size = 0;
  MT_FAILS2(mixp_session_create(&o, &s), MIXP_ERR_INVALID_ARGUMENT, "mixp_session_create",
            "struct_size");
  o.struct_size = 3;
  MT_FAILS2(mixp_session_create(&o, &s), MIXP_ERR_INVALID_ARGUMENT, "mixp_session_create",
            "struct_size");
  assert_ptr_equal(s, SENTINEL);

  mixp_session_options_init(&o);
  o.num_threads = -1;
  MT_FAILS2(mixp_session_create(&o, &s), MIXP_ERR_INVALID_ARGUMENT, "mixp_session_create",
            "num_threads");
  o.num_threads = -100;
  MT_FAILS2(mixp_session_create(&o, &s), MIXP_ERR_INVALID_ARGUMENT, "mixp_session_create",
            "-100");
  assert_ptr_equal(s, SENTINEL);

  mixp_session_destroy(NULL); /* harmless */
  assert_string_equal(mixp_session_device(NULL), "");
  assert_string_equal(mixp_session_device_note(NULL), "");
  assert_int_equal(mixp_session_num_threads(NULL), 0);
  assert_int_equal(mixp_grad_enabled(NULL), 0);
}

static void test_num_threads(void **state) {
  (void)state;
  mixp_session *s = make("cpu", 3, 0);
  assert_int_equal(mixp_session_num_threads(s), 3);
  mixp_session_destroy(s);
  s = make("cpu", 0, 0);
  assert_true(mixp_session_num_threads(s) >= 1);
  mixp_session_destroy(s);
}

static void rand_values(mixp_session *s, float *v, int64_t n) {
  mixp_tensor *t = NULL;
  MT_OK(mixp_tensor_rand(s, MIXP_F32, &n, 1, &t));
  MT_OK(mixp_tensor_to_host(t, v, (size_t)n * sizeof(float)));
  mixp_tensor_release(t);
}

static void test_set_seed(void **state) {
  (void)state;
  enum { N = 257 };
  float a[N], b[N], c[N], d[N];
  mixp_session *s = make("cpu", 1, 99);
  rand_values(s, a, N);
  rand_values(s, b, N);
  assert_memory_not_equal(a, b, sizeof a); /* the stream advances */
  MT_OK(mixp_session_set_seed(s, 99));
  rand_values(s, c, N);
  rand_values(s, d, N);
  assert_memory_equal(a, c, sizeof a);
  assert_memory_equal(b, d, sizeof b);
  MT_OK(mixp_session_set_seed(s, 100));
  rand_values(s, c, N);
  assert_memory_not_equal(a, c, sizeof a);

  /* A session created with a seed equals one re-seeded to it, on any thread count. */
  mixp_session *s2 = make("cpu", 2, 0);
  MT_OK(mixp_session_set_seed(s2, 99));
  rand_values(s2, c, N);
  assert_memory_equal(a, c, sizeof a);
  mixp_session_destroy(s2);

  MT_FAILS(mixp_session_set_seed(NULL, 1), MIXP_ERR_INVALID_ARGUMENT, "mixp_session_set_seed");
  mixp_session_destroy(s);
}

static void test_no_grad(void **state) {
  (void)state;
  mixp_session *s = make("cpu", 1, 0);
  assert_int_equal(mixp_grad_enabled(s), 1);
  MT_OK(mixp_no_grad_begin(s));
  assert_int_equal(mixp_grad_enabled(s), 0);
  MT_OK(mixp_no_grad_begin(s));
  assert_int_equal(mixp_grad_enabled(s), 0);
  MT_OK(mixp_no_grad_end(s));
  assert_int_equal(mixp_grad_enabled(s), 0);
  MT_OK(mixp_no_grad_end(s));
  assert_int_equal(mixp_grad_enabled(s), 1);
  MT_FAILS(mixp_no_grad_end(s), MIXP_ERR_STATE, "mixp_no_grad_end");
  assert_int_equal(mixp_grad_enabled(s), 1);
  /* Still usable after the misuse. */
  MT_OK(mixp_no_grad_begin(s));
  assert_int_equal(mixp_grad_enabled(s), 0);
  MT_OK(mixp_no_grad_end(s));
  assert_int_equal(mixp_grad_enabled(s), 1);

  MT_FAILS2(mixp_no_grad_begin(NULL), MIXP_ERR_INVALID_ARGUMENT, "mixp_no_grad_begin", "session");
  MT_FAILS2(mixp_no_grad_end(NULL), MIXP_ERR_INVALID_ARGUMENT, "mixp_no_grad_end", "session");
  mixp_session_destroy(s);
}

static mixp_memory_stats stats_of(mixp_session *s) {
  mixp_memory_stats m;
  memset(&m, 0, sizeof m);
  m.struct_size = sizeof m;
  MT_OK(mixp_memory_stats_get(s, &m));
  return m;
}

static void test_memory_stats(void **state) {
  (void)state;
  mixp_session *s = make("cpu", 1, 0);
  mixp_memory_stats m0 = stats_of(s);
  assert_true(m0.peak_bytes >= m0.current_bytes);

  int64_t shape[2] = {100, 250};
  const uint64_t bytes = 100 * 250 * 4;
  mixp_tensor *t = NULL;
  MT_OK(mixp_tensor_zeros(s, MIXP_F32, shape, 2, &t));
  mixp_memory_stats m1 = stats_of(s);
  assert_true(m1.current_bytes >= m0.current_bytes + bytes);
  assert_true(m1.peak_bytes >= m1.current_bytes);

  mixp_tensor_release(t);
  mixp_memory_stats m2 = stats_of(s);
  assert_true(m2.current_bytes + bytes <= m1.current_bytes);
  assert_true(m2.peak_bytes >= m1.current_bytes); /* peak remembers */

  MT_OK(mixp_memory_stats_reset_peak(s));
  mixp_memory_stats m3 = stats_of(s);
  assert_int_equal(m3.peak_bytes, m3.current_bytes);

  /* A view shares storage and allocates no tensor memory. */
  MT_OK(mixp_tensor_zeros(s, MIXP_F64, shape, 2, &t));
  mixp_memory_stats m4 = stats_of(s);
  mixp_tensor *v = NULL;
  MT_OK(mixp_transpose(t, 0, 1, &v));
  mixp_memory_stats m5 = stats_of(s);
  assert_int_equal(m5.current_bytes, m4.current_bytes);
  mixp_tensor_release(t); /* the view keeps the storage */
  mixp_memory_stats m6 = stats_of(s);
  assert_int_equal(m6.current_bytes, m4.current_bytes);
  mixp_tensor_release(v);
  mixp_memory_stats m7 = stats_of(s);
  assert_true(m7.current_bytes + 100 * 250 * 8 <= m6.current_bytes);

  /* Misuse. */
  mixp_memory_stats m;
  m.struct_size = sizeof m;
  m.current_bytes = 12345;
  MT_FAILS2(mixp_memory_stats_get(NULL, &m), MIXP_ERR_INVALID_ARGUMENT, "mixp_memory_stats_get",
            "session");
  assert_int_equal(m.current_bytes, 12345);
  MT_FAILS2(mixp_memory_stats_get(s, NULL), MIXP_ERR_INVALID_ARGUMENT, "mixp_memory_stats_get",
            "stats");
  m.struct_size = 0;
  MT_FAILS2(mixp_memory_stats_get(s, &m), MIXP_ERR_INVALID_ARGUMENT, "mixp_memory_stats_get",
            "struct_size");
  assert_int_equal(m.current_bytes, 12345);
  MT_FAILS(mixp_memory_stats_reset_peak(NULL), MIXP_ERR_INVALID_ARGUMENT,
           "mixp_memory_stats_reset_peak");
  mixp_session_destroy(s);
}

static void test_tensor_outlives_session(void **state) {
  (void)state;
  mixp_session *s = make("cpu", 1, 0);
  const float vals[6] = {1, 2, 3, 4, 5, 6};
  int64_t shape[2] = {2, 3};
  mixp_tensor *t = NULL, *v = NULL;
  MT_OK(mixp_tensor_from_host(s, vals, sizeof vals, MIXP_F32, shape, 2, &t));
  MT_OK(mixp_transpose(t, 0, 1, &v));
  mixp_session_destroy(s);

  /* Reading still works. */
  float got[6];
  MT_OK(mixp_tensor_to_host(t, got, sizeof got));
  assert_memory_equal(got, vals, sizeof vals);
  assert_int_equal(mixp_tensor_numel(t), 6);
  assert_int_equal(mixp_tensor_dim(v, 0), 3);
  const float want_t[6] = {1, 4, 2, 5, 3, 6};
  MT_OK(mixp_tensor_to_host(v, got, sizeof got));
  assert_memory_equal(got, want_t, sizeof want_t);

  /* New operations are refused. */
  mixp_tensor *out = (mixp_tensor *)(uintptr_t)0x1234;
  MT_FAILS(mixp_cast(t, MIXP_F64, &out), MIXP_ERR_STATE, "mixp_cast");
  assert_ptr_equal(out, (mixp_tensor *)(uintptr_t)0x1234);
  MT_FAILS(mixp_matmul(t, v, &out), MIXP_ERR_STATE, "mixp_matmul");
  MT_FAILS(mixp_contiguous(v, &out), MIXP_ERR_STATE, "mixp_contiguous");
  assert_ptr_equal(out, (mixp_tensor *)(uintptr_t)0x1234);

  /* The destroyed handle itself refuses to create tensors while the
   * internals are kept alive by t. */
  mixp_tensor *z = NULL;
  assert_int_not_equal(mixp_tensor_zeros(s, MIXP_F32, shape, 2, &z), MIXP_OK);
  assert_null(z);

  mixp_tensor_release(v);
  mixp_tensor_release(t);
}

/* Distinct sessions may be used from different threads at once. */
#include <pthread.h>
static void *session_worker(void *arg) {
  int *ok = (int *)arg;
  mixp_session_options o;
  mixp_session_options_init(&o);
  o.num_threads = 1;
  o.seed = 5;
  mixp_session *s = NULL;
  *ok = 0;
  if (mixp_session_create(&o, &s) != MIXP_OK) return NULL;
  int good = 1;
  for (int i = 0; i < 50 && good; ++i) {
    int64_t n = 64;
    mixp_tensor *t = NULL;
    float v[64];
    if (mixp_tensor_rand(s, MIXP_F32, &n, 1, &t) != MIXP_OK) good = 0;
    else if (mixp_tensor_to_host(t, v, sizeof v) != MIXP_OK) good = 0;
    mixp_tensor_release(t);
  }
  mixp_session_destroy(s);
  *ok = good;
  return NULL;
}

static void test_sessions_concurrent(void **state) {
  (void)state;
  pthread_t th[3];
  int ok[3] = {0, 0, 0};
  for (int i = 0; i < 3; ++i) assert_int_equal(pthread_create(&th[i], NULL, session_worker, &ok[i]), 0);
  for (int i = 0; i < 3; ++i) assert_int_equal(pthread_join(th[i], NULL), 0);
  for (int i = 0; i < 3; ++i) assert_true(ok[i]);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_create_defaults),
      cmocka_unit_test(test_create_cpu),
      cmocka_unit_test(test_create_auto),
      cmocka_unit_test(test_create_cuda_unavailable),
      cmocka_unit_test(test_create_bad_devices),
      cmocka_unit_test(test_create_misuse),
      cmocka_unit_test(test_num_threads),
      cmocka_unit_test(test_set_seed),
      cmocka_unit_test(test_no_grad),
      cmocka_unit_test(test_memory_stats),
      cmocka_unit_test(test_tensor_outlives_session),
      cmocka_unit_test(test_sessions_concurrent),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
