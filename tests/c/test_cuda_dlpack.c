/* DLPack with device memory: a cuda session exports kDLCUDA tensors of its
 * ordinal (after waiting for its queued work: one counted host sync),
 * re-imports them without a copy, and refuses host memory and other GPUs'
 * memory (and a cpu session refuses device memory), never calling the
 * producer's deleter on failure. Without a usable GPU the suite exits 77
 * (CTest: skipped). */
#include <dlpack/dlpack.h>

#include "test_util.h"

static mixp_session *g_gpu, *g_cpu;

static int deleted;
static void count_deleter(DLManagedTensor *self) {
  (void)self;
  deleted++;
}

static void test_export_import_device_memory(void **state) {
  (void)state;
  const int64_t shape[2] = {64, 33};
  mixp_tensor *t = NULL, *u = NULL;
  MT_OK(mixp_tensor_rand(g_gpu, MIXP_BF16, shape, 2, &t));
  uint64_t before = 0, after = 0;
  MT_OK(mixp_session_host_syncs(g_gpu, &before));
  DLManagedTensor *m = NULL, *m2 = NULL;
  MT_OK(mixp_tensor_to_dlpack(t, (struct DLManagedTensor **)&m));
  MT_OK(mixp_session_host_syncs(g_gpu, &after));
  assert_true(after == before + 1); /* the queued rand waited for, counted */
  assert_int_equal(m->dl_tensor.device.device_type, kDLCUDA);
  assert_int_equal(m->dl_tensor.device.device_id, 0);
  assert_int_equal(m->dl_tensor.dtype.code, kDLBfloat);
  assert_int_equal(m->dl_tensor.dtype.bits, 16);
  /* Device memory is not a cpu session's: refused, nothing taken. */
  mixp_tensor *bad = NULL;
  MT_FAILS(mixp_tensor_from_dlpack(g_cpu, (struct DLManagedTensor *)m, &bad), MIXP_ERR_DEVICE,
           "the tensor is on kDLCUDA");
  /* Back into the cuda session: the same memory, the same values. */
  MT_OK(mixp_tensor_from_dlpack(g_gpu, (struct DLManagedTensor *)m, &u));
  MT_OK(mixp_tensor_to_dlpack(u, (struct DLManagedTensor **)&m2));
  assert_ptr_equal(m2->dl_tensor.data, m->dl_tensor.data);
  double *a = mt_values(t), *b = mt_values(u);
  for (int64_t i = 0; i < 64 * 33; ++i) assert_true(a[i] == b[i]);
  free(a);
  free(b);
  mixp_dlpack_release((struct DLManagedTensor *)m2);
  mixp_tensor_release(u); /* runs m's deleter */
  mixp_tensor_release(t);
}

static void test_refused_memory(void **state) {
  (void)state;
  float host[4] = {1, 2, 3, 4};
  int64_t shape[1] = {4};
  DLManagedTensor m;
  memset(&m, 0, sizeof m);
  m.dl_tensor.data = host;
  m.dl_tensor.device.device_type = kDLCPU;
  m.dl_tensor.ndim = 1;
  m.dl_tensor.dtype.code = kDLFloat;
  m.dl_tensor.dtype.bits = 32;
  m.dl_tensor.dtype.lanes = 1;
  m.dl_tensor.shape = shape;
  m.deleter = count_deleter;
  mixp_tensor *t = NULL;
  deleted = 0;
  MT_FAILS(mixp_tensor_from_dlpack(g_gpu, (struct DLManagedTensor *)&m, &t), MIXP_ERR_DEVICE,
           "the tensor is on kDLCPU");
  m.dl_tensor.device.device_type = kDLCUDA;
  m.dl_tensor.device.device_id = 7; /* another GPU's memory */
  MT_FAILS(mixp_tensor_from_dlpack(g_gpu, (struct DLManagedTensor *)&m, &t), MIXP_ERR_DEVICE,
           "device_id 7");
  assert_null(t);
  assert_int_equal(deleted, 0);
}

static mixp_session *open_dev(const char *dev) {
  mixp_session_options o;
  mixp_session_options_init(&o);
  o.device = dev;
  o.num_threads = 2;
  mixp_session *s = NULL;
  return mixp_session_create(&o, &s) == MIXP_OK ? s : NULL;
}

int main(void) {
  g_gpu = open_dev("cuda:0");
  if (!g_gpu) {
    printf("SKIPPED: no CUDA session: %s\n", mixp_last_error());
    return mixp_last_status() == MIXP_ERR_DEVICE ? 77 : 1;
  }
  g_cpu = open_dev("cpu");
  if (!g_cpu) return 1;
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_export_import_device_memory),
      cmocka_unit_test(test_refused_memory),
  };
  int rc = cmocka_run_group_tests(tests, NULL, NULL);
  mixp_session_destroy(g_cpu);
  mixp_session_destroy(g_gpu);
  return rc;
}
