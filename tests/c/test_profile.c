/* The profiler (mixp_profile_*): which calls a training step records (the
 * caller's ops with autocast's casts, backward nodes nested in "backward",
 * the optimizer's step), self time against total time, the table, the
 * Chrome trace file; the memory statistics' device fields; misuse. */
#include <stdio.h>
#include <unistd.h>

#include "test_util.h"

static mixp_module *g_lin;

/* linear -> relu -> cross_entropy under bf16 autocast, backward, SGD step. */
static void one_step(mixp_session *s, mixp_optimizer *opt) {
  const int64_t xs[2] = {4, 8}, ts[1] = {4};
  double xv[32], tv[4] = {0, 1, 2, 0};
  mt_fill(xv, 32, -1.0, 1.0, 3);
  mixp_tensor *x = mt_tensor(s, MIXP_F32, xv, xs, 2), *t = mt_tensor(s, MIXP_I64, tv, ts, 1);
  mixp_tensor *h = NULL, *a = NULL, *loss = NULL;
  mixp_autocast_options o;
  mixp_autocast_options_init(&o);
  o.dtype = MIXP_BF16;
  MT_OK(mixp_autocast_push(s, &o));
  MT_OK(mixp_module_forward(g_lin, x, &h));
  MT_OK(mixp_relu(h, &a));
  MT_OK(mixp_cross_entropy(a, t, MIXP_REDUCTION_MEAN, MIXP_IGNORE_INDEX_DEFAULT, &loss));
  MT_OK(mixp_autocast_pop(s));
  MT_OK(mixp_optimizer_zero_grad(opt));
  MT_OK(mixp_backward(loss, NULL));
  MT_OK(mixp_optimizer_step(opt));
  mixp_tensor *all[] = {x, t, h, a, loss};
  for (size_t i = 0; i < sizeof all / sizeof *all; ++i) mixp_tensor_release(all[i]);
}

static mixp_optimizer *make_model(mixp_session *s) {
  MT_OK(mixp_linear_create(s, 8, 3, 1, MIXP_F32, &g_lin));
  mixp_tensor *params[2];
  MT_OK(mixp_module_parameter(g_lin, 0, &params[0]));
  MT_OK(mixp_module_parameter(g_lin, 1, &params[1]));
  mixp_optimizer *opt = mt_sgd(s, params, 2, 0.1);
  mixp_tensor_release(params[0]);
  mixp_tensor_release(params[1]);
  return opt;
}

/* The summary row of (op, pass), or a row with calls == 0. */
static mixp_profile_row row_of(const mixp_profile *p, const char *op, int backward) {
  mixp_profile_row r;
  for (int64_t i = 0; i < mixp_profile_summary_rows(p); ++i) {
    r.struct_size = sizeof r;
    MT_OK(mixp_profile_summary_get(p, i, &r));
    if (!strcmp(r.op, op) && r.backward == backward) return r;
  }
  memset(&r, 0, sizeof r);
  return r;
}

static void test_profile_records_a_step(void **state) {
  (void)state;
  mixp_session *s = mt_session();
  mixp_optimizer *opt = make_model(s);
  one_step(s, opt); /* before the profile: not recorded */
  MT_OK(mixp_profile_begin(s));
  one_step(s, opt);
  one_step(s, opt);
  mixp_profile *p = NULL;
  MT_OK(mixp_profile_end(s, &p));
  one_step(s, opt); /* after: not recorded */

  assert_true(mixp_profile_length(p) > 10);
  /* The caller's ops, each step's once; linear's matmul is its internal. */
  assert_int_equal(row_of(p, "linear", 0).calls, 2);
  assert_int_equal(row_of(p, "relu", 0).calls, 2);
  assert_int_equal(row_of(p, "cross_entropy", 0).calls, 2);
  assert_int_equal(row_of(p, "matmul", 0).calls, 0);
  assert_true(row_of(p, "cast", 0).calls >= 4); /* autocast's casts of x, W, b */
  assert_int_equal(row_of(p, "backward", 0).calls, 2);
  assert_int_equal(row_of(p, "optimizer_step", 0).calls, 2);
  /* Backward nodes are recorded inside "backward": its self time is its
   * time less theirs. */
  const mixp_profile_row lb = row_of(p, "linear", 1), bw = row_of(p, "backward", 0);
  assert_int_equal(lb.calls, 2);
  assert_true(row_of(p, "relu", 1).calls == 2);
  assert_true(bw.self_device_ms < bw.device_ms);
  assert_true(bw.self_host_ms < bw.host_ms);

  /* Every row: self <= total; the rows are sorted by self device time; the
   * self times add up to the device time of the outermost calls. */
  double prev = 1e300, self_sum = 0;
  for (int64_t i = 0; i < mixp_profile_summary_rows(p); ++i) {
    mixp_profile_row r;
    r.struct_size = sizeof r;
    MT_OK(mixp_profile_summary_get(p, i, &r));
    assert_true(r.calls > 0);
    assert_true(r.self_device_ms >= 0 && r.self_device_ms <= r.device_ms + 1e-9);
    assert_true(r.self_host_ms >= 0 && r.self_host_ms <= r.host_ms + 1e-9);
    assert_true(r.self_device_ms <= prev);
    prev = r.self_device_ms;
    self_sum += r.self_device_ms;
    /* On the CPU ops run during their calls: device time is host time. */
    if (mt_on_cpu()) assert_true(r.device_ms == r.host_ms);
  }
  assert_true(self_sum > 0);

  const char *table = mixp_profile_report(p, 5);
  assert_non_null(strstr(table, "self dev ms"));
  assert_non_null(strstr(table, "more rows)"));
  assert_non_null(strstr(table, " op calls recorded on "));
  table = mixp_profile_report(p, 0);
  assert_null(strstr(table, "more rows)"));
  assert_non_null(strstr(table, "optimizer_step"));
  assert_non_null(strstr(table, "backward "));

  mixp_profile_destroy(p);
  mixp_optimizer_destroy(opt);
  mixp_module_destroy(g_lin);
  mixp_session_destroy(s);
}

static char *read_all(const char *path) {
  FILE *f = fopen(path, "rb");
  assert_non_null(f);
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *b = malloc((size_t)n + 1);
  assert_int_equal(fread(b, 1, (size_t)n, f), (size_t)n);
  b[n] = 0;
  fclose(f);
  return b;
}

static int count_of(const char *hay, const char *needle) {
  int n = 0;
  for (const char *q = strstr(hay, needle); q; q = strstr(q + 1, needle)) ++n;
  return n;
}

/* The trace file: one complete event per recorded call on the host track
 * (and one per call on the device track where the device has a clock),
 * shapes and dtypes in args. Its structure is checked in full, against the
 * trace event format, by bindings/python/tests/test_profile.py. */
static void test_profile_trace_file(void **state) {
  (void)state;
  mixp_session *s = mt_session();
  mixp_optimizer *opt = make_model(s);
  MT_OK(mixp_profile_begin(s));
  one_step(s, opt);
  mixp_profile *p = NULL;
  MT_OK(mixp_profile_end(s, &p));
  char path[64];
  snprintf(path, sizeof path, "test_profile_%d.json", (int)getpid());
  MT_OK(mixp_profile_write_trace(p, path));
  char *json = read_all(path);
  assert_true(strncmp(json, "{\"traceEvents\":[", 16) == 0);
  const int events = count_of(json, "\"ph\":\"X\"");
  const int64_t n = mixp_profile_length(p);
  assert_true(events == n || events == 2 * n);
  if (mt_on_cpu()) assert_int_equal(events, n);
  assert_non_null(strstr(json, "\"name\":\"linear\",\"cat\":\"forward\""));
  assert_non_null(strstr(json, "\"name\":\"linear\",\"cat\":\"backward\""));
  assert_non_null(strstr(json, "\"inputs\":\"bf16[4,8] bf16[3,8] bf16[3]\""));
  assert_non_null(strstr(json, "\"displayTimeUnit\":\"ms\""));
  free(json);
  /* A file that cannot be written: MIXP_ERR_IO naming it; the old file stays. */
  MT_FAILS(mixp_profile_write_trace(p, "/nonexistent-dir/trace.json"), MIXP_ERR_IO, "mixp_profile_write_trace");
  unlink(path);
  mixp_profile_destroy(p);
  mixp_optimizer_destroy(opt);
  mixp_module_destroy(g_lin);
  mixp_session_destroy(s);
}

/* A failing op inside a profile is recorded and closed; recording goes on. */
static void test_profile_failed_op(void **state) {
  (void)state;
  mixp_session *s = mt_session();
  const int64_t sa[2] = {2, 3}, sb[2] = {4, 5};
  mixp_tensor *a = NULL, *b = NULL, *c = NULL;
  MT_OK(mixp_tensor_zeros(s, MIXP_F32, sa, 2, &a));
  MT_OK(mixp_tensor_zeros(s, MIXP_F32, sb, 2, &b));
  MT_OK(mixp_profile_begin(s));
  MT_FAILS(mixp_matmul(a, b, &c), MIXP_ERR_SHAPE, "mixp_matmul");
  MT_OK(mixp_add(a, a, &c));
  mixp_profile *p = NULL;
  MT_OK(mixp_profile_end(s, &p));
  assert_int_equal(row_of(p, "matmul", 0).calls, 1);
  assert_int_equal(row_of(p, "add", 0).calls, 1);
  /* add ran after matmul closed, not inside it. */
  assert_true(row_of(p, "matmul", 0).self_host_ms == row_of(p, "matmul", 0).host_ms);
  mixp_profile_destroy(p);
  mixp_tensor_release(a);
  mixp_tensor_release(b);
  mixp_tensor_release(c);
  /* A session destroyed while recording frees the profile with it. */
  MT_OK(mixp_profile_begin(s));
  mixp_session_destroy(s);
}

static void test_profile_misuse(void **state) {
  (void)state;
  mixp_session *s = mt_session();
  mixp_profile *p = (mixp_profile *)0x1;
  MT_FAILS(mixp_profile_begin(NULL), MIXP_ERR_INVALID_ARGUMENT, "mixp_profile_begin: session");
  MT_FAILS(mixp_profile_end(NULL, &p), MIXP_ERR_INVALID_ARGUMENT, "mixp_profile_end: session");
  MT_FAILS(mixp_profile_end(s, &p), MIXP_ERR_STATE, "no profile is being recorded");
  assert_ptr_equal(p, (mixp_profile *)0x1); /* failed calls wrote nothing */
  MT_OK(mixp_profile_begin(s));
  MT_FAILS(mixp_profile_begin(s), MIXP_ERR_STATE, "already being recorded");
  MT_FAILS(mixp_profile_end(s, NULL), MIXP_ERR_INVALID_ARGUMENT, "out is NULL");
  MT_OK(mixp_profile_end(s, &p)); /* still recording after the failed end */
  assert_int_equal(mixp_profile_length(p), 0);
  assert_int_equal(mixp_profile_summary_rows(p), 0);
  assert_non_null(strstr(mixp_profile_report(p, 0), "0 op calls recorded"));

  mixp_profile_row r;
  memset(&r, 0x5a, sizeof r);
  r.struct_size = sizeof r;
  const int64_t bad[] = {-1, 0, INT64_MAX, (int64_t)1 << 62, INT64_MIN};
  for (size_t i = 0; i < sizeof bad / sizeof *bad; ++i)
    MT_FAILS(mixp_profile_summary_get(p, bad[i], &r), MIXP_ERR_INVALID_ARGUMENT, "is out of [0, 0)");
  assert_int_equal(r.calls, 0x5a5a5a5a5a5a5a5a);
  MT_FAILS(mixp_profile_summary_get(NULL, 0, &r), MIXP_ERR_INVALID_ARGUMENT, "profile is NULL");
  MT_FAILS(mixp_profile_summary_get(p, 0, NULL), MIXP_ERR_INVALID_ARGUMENT, "row is NULL");
  r.struct_size = 8;
  MT_FAILS(mixp_profile_summary_get(p, 0, &r), MIXP_ERR_INVALID_ARGUMENT, "row->struct_size is 8");
  MT_FAILS(mixp_profile_write_trace(NULL, "x.json"), MIXP_ERR_INVALID_ARGUMENT, "profile is NULL");
  MT_FAILS(mixp_profile_write_trace(p, NULL), MIXP_ERR_INVALID_ARGUMENT, "path is NULL");
  MT_FAILS(mixp_profile_write_trace(p, ""), MIXP_ERR_INVALID_ARGUMENT, "path is empty");
  assert_int_equal(mixp_profile_length(NULL), -1);
  assert_int_equal(mixp_profile_summary_rows(NULL), -1);
  assert_string_equal(mixp_profile_report(NULL, 0), "");
  mixp_profile_destroy(p);
  mixp_profile_destroy(NULL);
  /* A destroyed session refuses to start one. */
  mixp_tensor *t = NULL;
  const int64_t one[1] = {1};
  MT_OK(mixp_tensor_zeros(s, MIXP_F32, one, 1, &t)); /* keeps the session alive */
  mixp_session_destroy(s);
  MT_FAILS(mixp_profile_begin(mixp_tensor_session(t)), MIXP_ERR_STATE, "mixp_profile_begin");
  mixp_tensor_release(t);
}

/* The device fields of mixp_memory_stats: on the CPU the tensors; a caller
 * compiled against the 0.6 struct (two counters) gets nothing past it. */
static void test_memory_stats_device_fields(void **state) {
  (void)state;
  mixp_session *s = mt_session();
  mixp_memory_stats st;
  memset(&st, 0, sizeof st);
  st.struct_size = sizeof st;
  const int64_t shape[1] = {1 << 20};
  mixp_tensor *t = NULL;
  MT_OK(mixp_tensor_zeros(s, MIXP_F32, shape, 1, &t));
  MT_OK(mixp_memory_stats_get(s, &st));
  assert_true(st.device_bytes >= 4u << 20);
  assert_true(st.device_peak_bytes >= st.device_bytes);
  assert_true(st.reserved_bytes >= st.device_bytes);
  assert_true(st.reserved_peak_bytes >= st.reserved_bytes);
  if (mt_on_cpu()) { /* no device memory statistics: the tensor counts stand in */
    assert_true(st.device_bytes == st.current_bytes);
    assert_true(st.device_peak_bytes == st.peak_bytes);
    assert_true(st.reserved_bytes == st.current_bytes);
    assert_true(st.reserved_peak_bytes == st.peak_bytes);
  }
  mixp_tensor_release(t);
  MT_OK(mixp_memory_stats_reset_peak(s));
  MT_OK(mixp_memory_stats_get(s, &st));
  assert_true(st.device_peak_bytes >= st.device_bytes);
  assert_true(st.reserved_peak_bytes >= st.reserved_bytes);
  /* The peak restarted without the tensor (a cuda pool frees in stream
   * order and keeps a fixed workspace: checked on the CPU). */
  if (mt_on_cpu()) {
    assert_true(st.device_peak_bytes < 4u << 20);
    assert_true(st.device_peak_bytes == st.peak_bytes && st.reserved_peak_bytes == st.peak_bytes);
  }

  /* The 0.6 layout: struct_size, current, peak; guard bytes after it. */
  unsigned char buf[sizeof(mixp_memory_stats)];
  memset(buf, 0xa5, sizeof buf);
  const uint32_t old_size = (uint32_t)(offsetof(mixp_memory_stats, peak_bytes) + sizeof(uint64_t));
  memcpy(buf, &old_size, sizeof old_size);
  MT_OK(mixp_memory_stats_get(s, (mixp_memory_stats *)buf));
  for (size_t i = old_size; i < sizeof buf; ++i) assert_int_equal(buf[i], 0xa5);
  mixp_session_destroy(s);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_profile_records_a_step),
      cmocka_unit_test(test_profile_trace_file),
      cmocka_unit_test(test_profile_failed_op),
      cmocka_unit_test(test_profile_misuse),
      cmocka_unit_test(test_memory_stats_device_fields),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
