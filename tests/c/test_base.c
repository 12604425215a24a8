/* Versions, build info, status strings, the thread-local error state and
 * dtype metadata: the functions that take no handle. */
#include <ctype.h>
#include <pthread.h>

#include "test_util.h"

/* Case-insensitive substring search (build info may say "CUDA" or "cuda"). */
static int contains_ci(const char *hay, const char *needle) {
  size_t n = strlen(needle);
  for (const char *p = hay; *p; ++p) {
    size_t i = 0;
    while (i < n && p[i] && tolower((unsigned char)p[i]) == tolower((unsigned char)needle[i])) ++i;
    if (i == n) return 1;
  }
  return 0;
}

/* A call that is sure to fail with MIXP_ERR_INVALID_ARGUMENT naming "out". */
static mixp_status fail_null_out(void) { return mixp_session_create(NULL, NULL); }

/* A different failure: an unknown device string. */
static mixp_status fail_bad_device(void) {
  mixp_session_options o;
  mixp_session_options_init(&o);
  o.device = "quantum-device-7";
  mixp_session *s = NULL;
  mixp_status st = mixp_session_create(&o, &s);
  if (st == MIXP_OK) mixp_session_destroy(s);
  return st;
}

static void test_version(void **state) {
  (void)state;
  assert_int_equal(mixp_version_number(), MIXP_VERSION_NUMBER);
  char want[64];
  snprintf(want, sizeof want, "%d.%d.%d", MIXP_VERSION_MAJOR, MIXP_VERSION_MINOR,
           MIXP_VERSION_PATCH);
  assert_non_null(mixp_version());
  assert_string_equal(mixp_version(), want);
  /* The pointer is static: calling twice gives the same string. */
  assert_ptr_equal(mixp_version(), mixp_version());
}

static void test_build_info(void **state) {
  (void)state;
  const char *info = mixp_build_info();
  assert_non_null(info);
  assert_true(strlen(info) > 0);
  if (strstr(info, mixp_version()) == NULL) {
    print_error("build info \"%s\" lacks the version %s\n", info, mixp_version());
    fail();
  }
  if (!contains_ci(info, "cuda")) {
    print_error("build info \"%s\" does not say whether CUDA was built\n", info);
    fail();
  }
  /* One line. */
  assert_null(strchr(info, '\n'));
}

static void test_status_strings(void **state) {
  (void)state;
  const mixp_status all[] = {MIXP_OK,           MIXP_DONE,          MIXP_ERR_INVALID_ARGUMENT,
                             MIXP_ERR_SHAPE,    MIXP_ERR_DTYPE,     MIXP_ERR_DEVICE,
                             MIXP_ERR_OUT_OF_MEMORY, MIXP_ERR_STATE, MIXP_ERR_CORRUPT,
                             MIXP_ERR_IO,       MIXP_ERR_NUMERIC,   MIXP_ERR_UNSUPPORTED,
                             MIXP_ERR_INTERNAL};
  const int n = (int)(sizeof all / sizeof all[0]);
  for (int i = 0; i < n; ++i) {
    const char *s = mixp_status_string(all[i]);
    assert_non_null(s);
    assert_true(strlen(s) > 0);
    if (strcmp(s, "unknown status") == 0) {
      print_error("status %d has no description\n", (int)all[i]);
      fail();
    }
    for (int j = 0; j < i; ++j) {
      if (strcmp(s, mixp_status_string(all[j])) == 0) {
        print_error("statuses %d and %d share the description \"%s\"\n", (int)all[i],
                    (int)all[j], s);
        fail();
      }
    }
  }
  assert_non_null(strstr(mixp_status_string(MIXP_ERR_SHAPE), "shape"));
  assert_string_equal(mixp_status_string((mixp_status)42), "unknown status");
  assert_string_equal(mixp_status_string((mixp_status)-99), "unknown status");
  assert_string_equal(mixp_status_string((mixp_status)2), "unknown status");
  assert_string_equal(mixp_status_string((mixp_status)-12), "unknown status");
}

/* A fresh thread has no error yet. */
static void *fresh_thread_error(void *arg) {
  int *ok = (int *)arg;
  const char *e = mixp_last_error();
  *ok = e != NULL && e[0] == '\0' && mixp_last_status() == MIXP_OK;
  return NULL;
}

static void test_last_error_initial(void **state) {
  (void)state;
  int ok = 0;
  pthread_t th;
  assert_int_equal(pthread_create(&th, NULL, fresh_thread_error, &ok), 0);
  assert_int_equal(pthread_join(th, NULL), 0);
  assert_true(ok);
  assert_non_null(mixp_last_error());
}

static void test_last_error_and_status(void **state) {
  (void)state;
  MT_FAILS(fail_null_out(), MIXP_ERR_INVALID_ARGUMENT, "mixp_session_create");
  assert_non_null(strstr(mixp_last_error(), "out"));
  assert_int_equal(mixp_last_status(), MIXP_ERR_INVALID_ARGUMENT);
  char saved[512];
  snprintf(saved, sizeof saved, "%s", mixp_last_error());

  /* Successful calls leave both untouched. */
  mixp_session *s = NULL;
  MT_OK(mixp_session_create(NULL, &s));
  assert_string_equal(mixp_last_error(), saved);
  assert_int_equal(mixp_last_status(), MIXP_ERR_INVALID_ARGUMENT);
  assert_int_equal(mixp_version_number(), MIXP_VERSION_NUMBER);
  assert_string_equal(mixp_last_error(), saved);

  /* A failure with another status replaces both. */
  int64_t shape[1] = {4};
  mixp_tensor *t = NULL;
  MT_OK(mixp_tensor_zeros(s, MIXP_F32, shape, 1, &t));
  double v = 0;
  MT_FAILS(mixp_tensor_item(t, &v), MIXP_ERR_SHAPE, "mixp_tensor_item");
  assert_int_equal(mixp_last_status(), MIXP_ERR_SHAPE);
  assert_string_not_equal(mixp_last_error(), saved);
  mixp_tensor_release(t);
  mixp_session_destroy(s);
}

typedef struct thread_result {
  int status;
  char message[512];
} thread_result;

static void *fail_on_thread(void *arg) {
  thread_result *r = (thread_result *)arg;
  r->status = (int)fail_bad_device();
  snprintf(r->message, sizeof r->message, "%s", mixp_last_error());
  return NULL;
}

static void test_last_error_thread_local(void **state) {
  (void)state;
  MT_FAILS(fail_null_out(), MIXP_ERR_INVALID_ARGUMENT, "out");
  char mine[512];
  snprintf(mine, sizeof mine, "%s", mixp_last_error());
  assert_null(strstr(mine, "quantum-device-7"));

  thread_result r;
  memset(&r, 0, sizeof r);
  pthread_t th;
  assert_int_equal(pthread_create(&th, NULL, fail_on_thread, &r), 0);
  assert_int_equal(pthread_join(th, NULL), 0);
  /* The other thread saw its own failure... */
  assert_int_equal(r.status, MIXP_ERR_INVALID_ARGUMENT);
  assert_non_null(strstr(r.message, "quantum-device-7"));
  /* ...and this thread's message is unchanged. */
  assert_string_equal(mixp_last_error(), mine);
  assert_int_equal(mixp_last_status(), MIXP_ERR_INVALID_ARGUMENT);
}

/* Several threads fail concurrently, each on its own session state. */
static void *hammer_errors(void *arg) {
  int *ok = (int *)arg;
  *ok = 1;
  for (int i = 0; i < 200; ++i) {
    if (i % 2 == 0) {
      if (fail_null_out() != MIXP_ERR_INVALID_ARGUMENT || strstr(mixp_last_error(), "quantum"))
        *ok = 0;
    } else {
      if (fail_bad_device() != MIXP_ERR_INVALID_ARGUMENT ||
          !strstr(mixp_last_error(), "quantum-device-7"))
        *ok = 0;
    }
  }
  return NULL;
}

static void test_last_error_concurrent(void **state) {
  (void)state;
  pthread_t th[4];
  int ok[4] = {0, 0, 0, 0};
  for (int i = 0; i < 4; ++i) assert_int_equal(pthread_create(&th[i], NULL, hammer_errors, &ok[i]), 0);
  for (int i = 0; i < 4; ++i) assert_int_equal(pthread_join(th[i], NULL), 0);
  for (int i = 0; i < 4; ++i) assert_true(ok[i]);
}

static void test_dtype_meta(void **state) {
  (void)state;
  const struct {
    mixp_dtype t;
    size_t size;
    const char *name;
  } all[] = {{MIXP_F32, 4, "f32"}, {MIXP_F16, 2, "f16"}, {MIXP_BF16, 2, "bf16"},
             {MIXP_F64, 8, "f64"}, {MIXP_I32, 4, "i32"}, {MIXP_I64, 8, "i64"},
             {MIXP_U8, 1, "u8"},   {MIXP_BOOL, 1, "bool"}, {MIXP_F8E4M3, 1, "f8e4m3"},
             {MIXP_F8E5M2, 1, "f8e5m2"}};
  for (size_t i = 0; i < sizeof all / sizeof all[0]; ++i) {
    assert_int_equal(mixp_dtype_size(all[i].t), all[i].size);
    assert_string_equal(mixp_dtype_name(all[i].t), all[i].name);
  }
  assert_int_equal(mixp_dtype_size((mixp_dtype)10), 0);
  assert_int_equal(mixp_dtype_size((mixp_dtype)-1), 0);
  assert_int_equal(mixp_dtype_size((mixp_dtype)1000), 0);
  assert_string_equal(mixp_dtype_name((mixp_dtype)10), "unknown");
  assert_string_equal(mixp_dtype_name((mixp_dtype)-1), "unknown");
  assert_string_equal(mixp_dtype_name((mixp_dtype)1000), "unknown");
}

static void test_options_init(void **state) {
  (void)state;
  mixp_session_options o;
  memset(&o, 0xAB, sizeof o);
  mixp_session_options_init(&o);
  assert_int_equal(o.struct_size, sizeof(mixp_session_options));
  assert_true(o.device == NULL || strcmp(o.device, "cpu") == 0);
  assert_int_equal(o.seed, 0);
  assert_int_equal(o.num_threads, 0);
  mixp_session_options_init(NULL); /* harmless */
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_last_error_initial),
      cmocka_unit_test(test_version),
      cmocka_unit_test(test_build_info),
      cmocka_unit_test(test_status_strings),
      cmocka_unit_test(test_last_error_and_status),
      cmocka_unit_test(test_last_error_thread_local),
      cmocka_unit_test(test_last_error_concurrent),
      cmocka_unit_test(test_dtype_meta),
      cmocka_unit_test(test_options_init),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
