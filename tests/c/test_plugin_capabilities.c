/* A device that declines every optional backend capability (device
 * collectives, a device clock, device memory statistics): the fake plugin
 * tests/plugin/bare_device_plugin.cpp, loaded as "cuda". Every real device
 * backend has all three and the CPU is handled as host memory, so only such
 * a device shows what the callers do with a decline: mixp_dist_create
 * refuses it with MIXP_ERR_UNSUPPORTED naming the function and the device
 * and changes nothing; the profiler times it with the host clock; the
 * memory statistics report the session's tensor counts. Runs on every
 * machine: no GPU, no CUDA. */
#define _POSIX_C_SOURCE 200809L

#include "test_util.h"

#ifndef MIXP_TEST_BARE_PLUGIN
#error "tests/plugin_capabilities.cmake passes the bare device plugin's path"
#endif

static int open_bare(void **state) {
  setenv("MIXP_BACKEND_PATH", MIXP_TEST_BARE_PLUGIN, 1);
  mixp_session_options o;
  mixp_session_options_init(&o);
  o.device = "cuda";
  o.num_threads = 1;
  mixp_session *s = NULL;
  if (mixp_session_create(&o, &s) != MIXP_OK) {
    fprintf(stderr, "the bare device plugin did not open: %s\n", mixp_last_error());
    return -1;
  }
  *state = s;
  return 0;
}

static int close_bare(void **state) {
  mixp_session_destroy((mixp_session *)*state);
  return 0;
}

/* A contiguous F32 tensor of n values (host memory on this device: only
 * allocation and copies run). */
static mixp_tensor *host_values(mixp_session *s, int64_t n) {
  float v[64];
  assert_true(n <= 64);
  for (int64_t i = 0; i < n; ++i) v[i] = (float)i;
  mixp_tensor *t = NULL;
  MT_OK(mixp_tensor_from_host(s, v, (size_t)n * sizeof(float), MIXP_F32, &n, 1, &t));
  return t;
}

static void test_device_is_the_plugin(void **state) {
  mixp_session *s = (mixp_session *)*state;
  assert_string_equal(mixp_session_device(s), "cuda:0");
  assert_non_null(strstr(mixp_session_device_note(s), "bare device plugin"));
}

/* No device collectives, and memory the host transport must not read: the
 * communicator refuses the session, names the function and the device,
 * leaves *out alone and the session without a communicator (so asking
 * again gives the same answer, not "already has one"). */
static void test_dist_refuses_a_device_without_collectives(void **state) {
  mixp_session *s = (mixp_session *)*state;
  mixp_dist_options o;
  mixp_dist_options_init(&o);
  o.transport = MIXP_DIST_SINGLE;
  for (int attempt = 0; attempt < 2; ++attempt) {
    mixp_dist *d = (mixp_dist *)(uintptr_t)0x3a7;
    MT_FAILS(mixp_dist_create(s, &o, &d), MIXP_ERR_UNSUPPORTED, "mixp_dist_create: cuda:0 tensors");
    assert_non_null(strstr(mixp_last_error(), "device collectives"));
    assert_non_null(strstr(mixp_last_error(), "bare backend"));
    assert_ptr_equal(d, (mixp_dist *)(uintptr_t)0x3a7);
  }
  /* The session still works. */
  mixp_tensor *t = host_values(s, 4);
  float back[4] = {0};
  MT_OK(mixp_tensor_to_host(t, back, sizeof back));
  assert_true(back[3] == 3.0f);
  mixp_tensor_release(t);
}

/* No device clock: the profile records the op with host time as its
 * device time, as on the CPU. */
static void test_profile_uses_the_host_clock(void **state) {
  mixp_session *s = (mixp_session *)*state;
  mixp_tensor *t = host_values(s, 6);
  MT_OK(mixp_profile_begin(s));
  const int64_t shape[2] = {2, 3};
  mixp_tensor *v = NULL;
  MT_OK(mixp_reshape(t, shape, 2, &v)); /* a view: no kernel runs */
  mixp_profile *p = NULL;
  MT_OK(mixp_profile_end(s, &p));
  assert_int_equal(mixp_profile_length(p), 1);
  assert_int_equal(mixp_profile_summary_rows(p), 1);
  mixp_profile_row r;
  memset(&r, 0, sizeof r);
  r.struct_size = sizeof r;
  MT_OK(mixp_profile_summary_get(p, 0, &r));
  assert_string_equal(r.op, "reshape");
  assert_int_equal(r.calls, 1);
  assert_true(r.device_ms == r.host_ms);
  mixp_profile_destroy(p);
  mixp_tensor_release(v);
  mixp_tensor_release(t);
}

/* No device memory statistics: the device figures are the tensor counts,
 * and resetting the peaks resets those. */
static void test_memory_stats_fall_back_to_tensor_counts(void **state) {
  mixp_session *s = (mixp_session *)*state;
  mixp_tensor *t = host_values(s, 64);
  mixp_memory_stats st;
  memset(&st, 0, sizeof st);
  st.struct_size = sizeof st;
  MT_OK(mixp_memory_stats_get(s, &st));
  assert_true(st.current_bytes >= 64 * sizeof(float));
  assert_true(st.device_bytes == st.current_bytes && st.reserved_bytes == st.current_bytes);
  assert_true(st.device_peak_bytes == st.peak_bytes && st.reserved_peak_bytes == st.peak_bytes);
  mixp_tensor_release(t);
  MT_OK(mixp_memory_stats_reset_peak(s));
  MT_OK(mixp_memory_stats_get(s, &st));
  assert_true(st.peak_bytes == st.current_bytes);
  assert_true(st.device_peak_bytes == st.current_bytes && st.reserved_peak_bytes == st.current_bytes);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_device_is_the_plugin),
      cmocka_unit_test(test_dist_refuses_a_device_without_collectives),
      cmocka_unit_test(test_profile_uses_the_host_clock),
      cmocka_unit_test(test_memory_stats_fall_back_to_tensor_counts),
  };
  return cmocka_run_group_tests(tests, open_bare, close_bare);
}
