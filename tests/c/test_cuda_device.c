/* Choosing and loading the CUDA device: the plugin loader's error paths
 * (these run on every machine, GPU or not), the device strings, the ABI
 * check of the plugin's entry point and the host-sync counter. On a machine
 * without a GPU every "cuda" request must fail with MIXP_ERR_DEVICE saying
 * why; on a GPU machine it must succeed. */
#include <dlfcn.h>

#include "test_util.h"

#ifndef MIXP_TEST_CUDA_PLUGIN
#define MIXP_TEST_CUDA_PLUGIN ""
#endif

/* Whether this process can open cuda:0 at all (decided once). */
static int gpu_present(void) {
  static int known = -1;
  if (known < 0) {
    mixp_session *s = NULL;
    known = mt_open_device("cuda", &s) == MIXP_OK;
    mixp_session_destroy(s);
  }
  return known;
}

static int plugin_built(void) { return MIXP_TEST_CUDA_PLUGIN[0] != 0; }

/* These two must run before anything loads the plugin: the loader keeps the
 * first plugin it loads for the life of the process. */
static void test_backend_path_not_a_plugin(void **state) {
  (void)state;
  /* A real shared library without the entry point: libmixp.so itself. */
  setenv("MIXP_BACKEND_PATH", MIXP_TEST_LIBRARY_PATH, 1);
  mixp_session *s = NULL;
  MT_FAILS(mt_open_device("cuda", &s), MIXP_ERR_DEVICE, "has no entry point mixp_backend_plugin_v2");
  assert_null(s);
  assert_non_null(strstr(mixp_last_error(), MIXP_TEST_LIBRARY_PATH));
  unsetenv("MIXP_BACKEND_PATH");
}

static void test_backend_path_not_loadable(void **state) {
  (void)state;
  /* A file that is not a shared object: dlopen's own message is passed on. */
  setenv("MIXP_BACKEND_PATH", MIXP_TEST_SOURCE_DIR "/CMakeLists.txt", 1);
  mixp_session *s = NULL;
  MT_FAILS(mt_open_device("cuda:0", &s), MIXP_ERR_DEVICE, "exists but cannot be loaded");
  assert_non_null(strstr(mixp_last_error(), "mixp_session_create: device 'cuda:0' is unavailable"));
  assert_non_null(strstr(mixp_last_error(), "CMakeLists.txt"));
  /* "auto" falls back to the CPU and keeps the reason. */
  MT_OK(mt_open_device("auto", &s));
  assert_string_equal(mixp_session_device(s), "cpu");
  assert_non_null(strstr(mixp_session_device_note(s), "exists but cannot be loaded"));
  mixp_session_destroy(s);
  unsetenv("MIXP_BACKEND_PATH");
}

static void test_cuda_request(void **state) {
  (void)state;
  mixp_session *s = NULL;
  if (!plugin_built()) {
    /* No plugin beside libmixp.so: the message lists where it looked. */
    MT_FAILS(mt_open_device("cuda", &s), MIXP_ERR_DEVICE, "no CUDA backend plugin (libmixp_cuda.so)");
    assert_non_null(strstr(mixp_last_error(), "Tried: "));
    return;
  }
  if (!gpu_present()) {
    /* This is the message path a GPU-less CI machine takes. */
    MT_FAILS(mt_open_device("cuda", &s), MIXP_ERR_DEVICE, "no GPU");
    assert_non_null(strstr(mixp_last_error(), "mixp_session_create: device 'cuda' is unavailable"));
    assert_null(s);
    MT_FAILS(mt_open_device("cuda:3", &s), MIXP_ERR_DEVICE, "no GPU");
    return;
  }
  MT_OK(mt_open_device("cuda", &s));
  assert_string_equal(mixp_session_device(s), "cuda:0");
  /* The note describes the device (name, sm, memory, versions). */
  assert_non_null(strstr(mixp_session_device_note(s), "sm_"));
  mixp_session_destroy(s);
  MT_FAILS(mt_open_device("cuda:99", &s), MIXP_ERR_DEVICE, "device index out of range: cuda:99");
}

static void test_auto(void **state) {
  (void)state;
  mixp_session *s = NULL;
  MT_OK(mt_open_device("auto", &s));
  if (gpu_present()) {
    assert_string_equal(mixp_session_device(s), "cuda:0");
    assert_non_null(strstr(mixp_session_device_note(s), "using cuda:0"));
  } else {
    assert_string_equal(mixp_session_device(s), "cpu");
    assert_non_null(strstr(mixp_session_device_note(s), "cuda is unavailable, using cpu"));
  }
  mixp_session_destroy(s);
}

/* (abi_version, op_table, device, out, msg, msglen); the op table is
 * struct { uint32_t op_count, map_count; uint64_t name_hash; }. */
typedef struct { uint32_t op_count, map_count; uint64_t name_hash; } op_table_identity;
typedef int (*plugin_entry)(uint32_t, op_table_identity *, int, void **, char *, size_t);

static void test_plugin_abi_mismatch(void **state) {
  (void)state;
  if (!plugin_built()) skip();
  void *h = dlopen(MIXP_TEST_CUDA_PLUGIN, RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    print_error("dlopen %s: %s\n", MIXP_TEST_CUDA_PLUGIN, dlerror());
    fail();
  }
  plugin_entry entry = (plugin_entry)dlsym(h, "mixp_backend_plugin_v2");
  assert_non_null(entry);
  void *out = (void *)0x1;
  char msg[256] = {0};
  op_table_identity table = {0, 0, 0};
  assert_int_equal(entry(999999u, &table, 0, &out, msg, sizeof msg), MIXP_ERR_DEVICE);
  assert_ptr_equal(out, (void *)0x1); /* untouched on failure */
  assert_int_equal(table.op_count, 0); /* nothing read past a wrong ABI */
  assert_non_null(strstr(msg, "plugin ABI v"));
  assert_non_null(strstr(msg, "libmixp expects v999999"));
  /* A message buffer too small is cut, never overrun. */
  char tiny[8];
  memset(tiny, 'x', sizeof tiny);
  assert_int_equal(entry(999999u, &table, 0, &out, tiny, 4), MIXP_ERR_DEVICE);
  assert_int_equal(tiny[3], 0);
  assert_int_equal(tiny[4], 'x');
  dlclose(h);
}

static void test_host_syncs(void **state) {
  (void)state;
  mixp_session *s = NULL;
  MT_OK(mt_open_device("cpu", &s));
  uint64_t n = 12345;
  MT_OK(mixp_session_host_syncs(s, &n));
  assert_int_equal(n, 0); /* nothing is queued on the CPU */
  int64_t shape[1] = {4};
  mixp_tensor *t = NULL;
  MT_OK(mixp_tensor_ones(s, MIXP_F32, shape, 1, &t));
  float v[4];
  MT_OK(mixp_tensor_to_host(t, v, sizeof v));
  MT_OK(mixp_session_host_syncs(s, &n));
  assert_int_equal(n, 0);

  n = 7;
  MT_FAILS(mixp_session_host_syncs(NULL, &n), MIXP_ERR_INVALID_ARGUMENT, "mixp_session_host_syncs: session");
  assert_int_equal(n, 7);
  MT_FAILS(mixp_session_host_syncs(s, NULL), MIXP_ERR_INVALID_ARGUMENT, "mixp_session_host_syncs: count");
  mixp_session_destroy(s); /* t keeps the session's memory alive */
  MT_FAILS(mixp_session_host_syncs(s, &n), MIXP_ERR_STATE, "destroyed");
  mixp_tensor_release(t);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_backend_path_not_a_plugin),
      cmocka_unit_test(test_backend_path_not_loadable),
      cmocka_unit_test(test_cuda_request),
      cmocka_unit_test(test_auto),
      cmocka_unit_test(test_plugin_abi_mismatch),
      cmocka_unit_test(test_host_syncs),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
