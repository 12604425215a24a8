/* The loader refuses a CUDA plugin built from another op table: a fake
 * plugin (tests/plugin/fake_cuda_plugin.cpp) reports a chosen table and
 * every "cuda" request must fail naming both tables and the remedy, ahead
 * of whatever else the plugin answered; a plugin with this build's table
 * gets past the check. Runs on every machine: no GPU, no CUDA. The loader
 * keeps the first plugin a process loads, so each case runs in a child. */
#define _POSIX_C_SOURCE 200809L
#include <sys/wait.h>
#include <unistd.h>

#include "test_util.h"

#ifndef MIXP_TEST_FAKE_PLUGIN
#error "tests/plugin_table.cmake passes the fake plugin's path"
#endif

/* In a child: "cuda" fails with MIXP_ERR_DEVICE, the message holds each of
 * `want` and not `unwanted`; "auto" falls back to the CPU keeping that
 * reason. Exits 0 when all holds. */
static void child_case(const char *table, const char *const *want, int n_want, const char *unwanted) {
  setenv("MIXP_BACKEND_PATH", MIXP_TEST_FAKE_PLUGIN, 1);
  setenv("MIXP_FAKE_PLUGIN_TABLE", table, 1);
  mixp_session *s = NULL;
  mixp_status st = mt_open_device("cuda", &s);
  const char *msg = mixp_last_error();
  int ok = st == MIXP_ERR_DEVICE && s == NULL;
  for (int i = 0; i < n_want; ++i) ok = ok && strstr(msg, want[i]) != NULL;
  ok = ok && strstr(msg, unwanted) == NULL;
  if (!ok) fprintf(stderr, "table '%s': status %d, message: %s\n", table, (int)st, msg);
  if (ok) {
    ok = mt_open_device("auto", &s) == MIXP_OK && strcmp(mixp_session_device(s), "cpu") == 0 &&
         strstr(mixp_session_device_note(s), want[0]) != NULL;
    if (!ok) fprintf(stderr, "table '%s': auto did not fall back with the reason\n", table);
    mixp_session_destroy(s);
  }
  fflush(stderr);
  _exit(ok ? 0 : 1);
}

static void run_case(const char *table, const char *const *want, int n_want, const char *unwanted) {
  fflush(stdout);
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) child_case(table, want, n_want, unwanted);
  int status = 0;
  assert_int_equal(waitpid(pid, &status, 0), pid);
  assert_true(WIFEXITED(status));
  assert_int_equal(WEXITSTATUS(status), 0);
}

static void test_plugin_with_one_more_op_is_refused(void **state) {
  (void)state;
  const char *const want[] = {"libmixp_cuda.so was built with ", "a different number of ops",
                              "rebuild the plugin", "mixp_session_create"};
  run_case("one_more_op", want, 4, "fake plugin: no device");
}

static void test_plugin_with_renamed_ops_is_refused(void **state) {
  (void)state;
  const char *const want[] = {"the same number of ops under other names or in another order",
                              "(op table hash ", "rebuild the plugin"};
  run_case("renamed", want, 3, "fake plugin: no device");
}

static void test_plugin_with_this_table_passes_the_check(void **state) {
  (void)state;
  /* The loader passes on the plugin's own reason: the table check let it by. */
  const char *const want[] = {"fake plugin: no device (table same)"};
  run_case("same", want, 1, "rebuild the plugin");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_plugin_with_one_more_op_is_refused),
      cmocka_unit_test(test_plugin_with_renamed_ops_is_refused),
      cmocka_unit_test(test_plugin_with_this_table_passes_the_check),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
