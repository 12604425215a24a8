/* DLPack exchange (mixp_tensor_{from,to}_dlpack[_versioned]) against the
 * real dlpack.h (Debian's libdlpack-dev): zero-copy imports with strides and
 * byte offsets, the producer's deleter called exactly once and only when the
 * last view goes, every dtype, exports that outlive the mixp handle, round
 * trips that keep the same memory, and misuse (absurd sizes, bad devices,
 * dtypes, flags) that changes nothing and never calls the deleter. */
#include <dlpack/dlpack.h>

#include "test_util.h"

#ifndef DLPACK_FLAG_BITMASK_READ_ONLY
/* DLPack < 1.0 (Debian 12 ships 0.6) has no versioned struct: declared here
 * from the DLPack 1.0 specification, with the same tag mixp.h names. */
typedef struct {
  uint32_t major;
  uint32_t minor;
} DLPackVersion;
typedef struct DLManagedTensorVersioned {
  DLPackVersion version;
  void *manager_ctx;
  void (*deleter)(struct DLManagedTensorVersioned *self);
  uint64_t flags;
  DLTensor dl_tensor;
} DLManagedTensorVersioned;
#define DLPACK_FLAG_BITMASK_READ_ONLY (UINT64_C(1) << 0)
#endif
/* kDLBool arrived in DLPack 0.8; its value is 6 in every version. The
 * 8-bit floats arrived in DLPack 1.1: kDLFloat8_e4m3fn = 10, kDLFloat8_e5m2
 * = 12 (Debian's 0.6 header lacks them). */
enum { DL_BOOL_CODE = 6, DL_F8_E4M3FN = 10, DL_F8_E5M2 = 12 };

/* A cpu session always: the exchanges here are of host memory (a cuda
 * session refuses it; test_cuda_dlpack.c covers device memory). */
static int setup(void **state) {
  mixp_session_options o;
  mixp_session_options_init(&o);
  o.device = "cpu";
  o.num_threads = 2;
  mixp_session *s = NULL;
  *state = mixp_session_create(&o, &s) == MIXP_OK ? s : NULL;
  return *state ? 0 : -1;
}
static int teardown(void **state) {
  mixp_session_destroy((mixp_session *)*state);
  return 0;
}

/* ---- a producer: one buffer, a managed tensor, a deleter that counts ---- */

typedef struct producer {
  float data[64];
  int64_t shape[4];
  int64_t strides[4];
  int deleted;
  DLManagedTensor managed;
  DLManagedTensorVersioned versioned;
} producer;

static void legacy_deleter(DLManagedTensor *self) { ((producer *)self->manager_ctx)->deleted++; }
static void versioned_deleter(DLManagedTensorVersioned *self) {
  ((producer *)self->manager_ctx)->deleted++;
}

/* A [rows, cols] f32 tensor over p->data (values 0, 1, 2, ...). */
static void producer_init(producer *p, int64_t rows, int64_t cols) {
  memset(p, 0, sizeof *p);
  for (int i = 0; i < 64; ++i) p->data[i] = (float)i;
  p->shape[0] = rows;
  p->shape[1] = cols;
  DLTensor t;
  memset(&t, 0, sizeof t);
  t.data = p->data;
  t.device.device_type = kDLCPU;
  t.device.device_id = 0;
  t.ndim = 2;
  t.dtype.code = kDLFloat;
  t.dtype.bits = 32;
  t.dtype.lanes = 1;
  t.shape = p->shape;
  t.strides = NULL;
  t.byte_offset = 0;
  p->managed.dl_tensor = t;
  p->managed.manager_ctx = p;
  p->managed.deleter = legacy_deleter;
  p->versioned.version.major = 1;
  p->versioned.version.minor = 0;
  p->versioned.dl_tensor = t;
  p->versioned.manager_ctx = p;
  p->versioned.deleter = versioned_deleter;
}

static void test_import_shares_memory_and_deletes_once(void **state) {
  mixp_session *s = *state;
  producer p;
  producer_init(&p, 3, 4);
  mixp_tensor *t = NULL, *v = NULL;
  MT_OK(mixp_tensor_from_dlpack(s, (struct DLManagedTensor *)&p.managed, &t));
  assert_int_equal(mixp_tensor_dtype(t), MIXP_F32);
  int64_t shape[MIXP_MAX_DIMS];
  int nd = 0;
  MT_OK(mixp_tensor_shape(t, shape, MIXP_MAX_DIMS, &nd));
  assert_int_equal(nd, 2);
  assert_int_equal(shape[0], 3);
  assert_int_equal(shape[1], 4);
  double *vals = mt_values(t);
  for (int i = 0; i < 12; ++i) assert_true(vals[i] == (double)i);
  free(vals);
  /* A write through mixp lands in the producer's buffer: no copy was made. */
  const int64_t one[2] = {3, 4};
  mixp_tensor *ones = NULL;
  MT_OK(mixp_tensor_full(s, MIXP_F32, one, 2, 7.0, &ones));
  MT_OK(mixp_tensor_copy_(t, ones));
  for (int i = 0; i < 12; ++i) assert_true(p.data[i] == 7.0f);
  /* A view keeps the memory: the deleter waits for the last user. */
  MT_OK(mixp_slice(t, 0, 1, 3, 1, &v));
  mixp_tensor_release(t);
  assert_int_equal(p.deleted, 0);
  mixp_tensor_release(v);
  assert_int_equal(p.deleted, 1);
  mixp_tensor_release(ones);
}

static void test_import_strides_and_offset(void **state) {
  mixp_session *s = *state;
  producer p;
  producer_init(&p, 4, 3);
  /* The transpose of a [3, 4] row-major block that starts one row into the
   * buffer (byte_offset = 4 floats): x[i][j] = data[4 + i + 4 j]. */
  p.strides[0] = 1;
  p.strides[1] = 4;
  p.versioned.dl_tensor.strides = p.strides;
  p.versioned.dl_tensor.byte_offset = 4 * sizeof(float);
  p.versioned.dl_tensor.shape[0] = 4;
  p.versioned.dl_tensor.shape[1] = 3;
  mixp_tensor *t = NULL;
  MT_OK(mixp_tensor_from_dlpack_versioned(s, (struct DLManagedTensorVersioned *)&p.versioned, &t));
  double *vals = mt_values(t);
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 3; ++j) assert_true(vals[i * 3 + j] == (double)(4 + j * 4 + i));
  free(vals);
  mixp_tensor_release(t);
  assert_int_equal(p.deleted, 1);
}

/* Each DLPack element type mixp has maps to its dtype; others are refused. */
static void test_import_dtypes(void **state) {
  mixp_session *s = *state;
  static const struct {
    uint8_t code, bits;
    mixp_dtype dt;
  } ok[] = {
      {kDLFloat, 16, MIXP_F16}, {kDLFloat, 32, MIXP_F32}, {kDLFloat, 64, MIXP_F64},
      {kDLBfloat, 16, MIXP_BF16}, {kDLInt, 32, MIXP_I32}, {kDLInt, 64, MIXP_I64},
      {kDLUInt, 8, MIXP_U8}, {DL_BOOL_CODE, 8, MIXP_BOOL},
      {DL_F8_E4M3FN, 8, MIXP_F8E4M3}, {DL_F8_E5M2, 8, MIXP_F8E5M2},
  };
  for (size_t i = 0; i < sizeof ok / sizeof *ok; ++i) {
    producer p;
    producer_init(&p, 2, 2);
    p.managed.dl_tensor.dtype.code = ok[i].code;
    p.managed.dl_tensor.dtype.bits = ok[i].bits;
    mixp_tensor *t = NULL;
    MT_OK(mixp_tensor_from_dlpack(s, (struct DLManagedTensor *)&p.managed, &t));
    assert_int_equal(mixp_tensor_dtype(t), ok[i].dt);
    mixp_tensor_release(t);
    assert_int_equal(p.deleted, 1);
  }
  /* bf16 keeps its bits: 0x3f80 is 1.0. */
  {
    producer p;
    producer_init(&p, 1, 2);
    uint16_t bits[2] = {0x3f80, 0xc040}; /* 1.0, -3.0 */
    memcpy(p.data, bits, sizeof bits);
    p.managed.dl_tensor.dtype.code = kDLBfloat;
    p.managed.dl_tensor.dtype.bits = 16;
    mixp_tensor *t = NULL;
    MT_OK(mixp_tensor_from_dlpack(s, (struct DLManagedTensor *)&p.managed, &t));
    double *v = mt_values(t);
    assert_true(v[0] == 1.0 && v[1] == -3.0);
    free(v);
    mixp_tensor_release(t);
  }
  static const struct {
    uint8_t code, bits;
    uint16_t lanes;
  } bad[] = {{kDLFloat, 8, 1}, {kDLInt, 16, 1}, {kDLUInt, 32, 1}, {kDLComplex, 64, 1},
             {kDLFloat, 32, 4}, {kDLOpaqueHandle, 64, 1}, {kDLBfloat, 32, 1},
             {DL_F8_E4M3FN, 16, 1}, {11 /* e4m3fnuz */, 8, 1}, {DL_F8_E5M2, 8, 2}};
  for (size_t i = 0; i < sizeof bad / sizeof *bad; ++i) {
    producer p;
    producer_init(&p, 2, 2);
    p.managed.dl_tensor.dtype.code = bad[i].code;
    p.managed.dl_tensor.dtype.bits = bad[i].bits;
    p.managed.dl_tensor.dtype.lanes = bad[i].lanes;
    mixp_tensor *t = (mixp_tensor *)(uintptr_t)0x3a7;
    MT_FAILS(mixp_tensor_from_dlpack(s, (struct DLManagedTensor *)&p.managed, &t), MIXP_ERR_DTYPE,
             "mixp_tensor_from_dlpack:");
    assert_true(t == (mixp_tensor *)(uintptr_t)0x3a7); /* untouched */
    assert_int_equal(p.deleted, 0);
  }
}

/* Bad input fails naming the function and the argument, takes nothing and
 * leaves *out alone. */
static void expect_refused(mixp_session *s, producer *p, int versioned, mixp_status st, const char *what) {
  mixp_tensor *t = (mixp_tensor *)(uintptr_t)0x3a7;
  if (versioned)
    MT_FAILS(mixp_tensor_from_dlpack_versioned(s, (struct DLManagedTensorVersioned *)&p->versioned, &t), st,
             what);
  else
    MT_FAILS(mixp_tensor_from_dlpack(s, (struct DLManagedTensor *)&p->managed, &t), st, what);
  assert_true(t == (mixp_tensor *)(uintptr_t)0x3a7);
  assert_int_equal(p->deleted, 0);
}

static void test_import_misuse(void **state) {
  mixp_session *s = *state;
  producer p;
  mixp_tensor *t = NULL;
  producer_init(&p, 2, 2);
  MT_FAILS(mixp_tensor_from_dlpack(NULL, (struct DLManagedTensor *)&p.managed, &t), MIXP_ERR_INVALID_ARGUMENT,
           "mixp_tensor_from_dlpack: session is NULL");
  MT_FAILS(mixp_tensor_from_dlpack(s, NULL, &t), MIXP_ERR_INVALID_ARGUMENT,
           "mixp_tensor_from_dlpack: managed is NULL");
  MT_FAILS(mixp_tensor_from_dlpack(s, (struct DLManagedTensor *)&p.managed, NULL), MIXP_ERR_INVALID_ARGUMENT,
           "mixp_tensor_from_dlpack: out is NULL");
  MT_FAILS(mixp_tensor_from_dlpack_versioned(s, NULL, &t), MIXP_ERR_INVALID_ARGUMENT,
           "mixp_tensor_from_dlpack_versioned: managed is NULL");
  assert_int_equal(p.deleted, 0);

  static const int64_t absurd[] = {-1, INT64_C(1) << 62, INT64_MAX, INT64_MIN};
  for (size_t i = 0; i < sizeof absurd / sizeof *absurd; ++i) {
    producer_init(&p, 2, absurd[i]);
    expect_refused(s, &p, 0, MIXP_ERR_INVALID_ARGUMENT, "mixp_tensor_from_dlpack: dl_tensor.shape");
  }
  /* Each size fits, the product does not. */
  producer_init(&p, INT64_C(1) << 31, INT64_C(1) << 31);
  p.shape[2] = INT64_C(1) << 31;
  p.managed.dl_tensor.ndim = 3;
  expect_refused(s, &p, 0, MIXP_ERR_INVALID_ARGUMENT, "mixp_tensor_from_dlpack:");
  producer_init(&p, 2, 2);
  p.managed.dl_tensor.ndim = -1;
  expect_refused(s, &p, 0, MIXP_ERR_INVALID_ARGUMENT, "ndim");
  p.managed.dl_tensor.ndim = MIXP_MAX_DIMS + 1;
  expect_refused(s, &p, 0, MIXP_ERR_INVALID_ARGUMENT, "ndim");
  producer_init(&p, 2, 2);
  p.managed.dl_tensor.shape = NULL;
  expect_refused(s, &p, 0, MIXP_ERR_INVALID_ARGUMENT, "dl_tensor.shape is NULL");
  producer_init(&p, 2, 2);
  p.managed.dl_tensor.data = NULL;
  expect_refused(s, &p, 0, MIXP_ERR_INVALID_ARGUMENT, "dl_tensor.data is NULL");
  producer_init(&p, 2, 2);
  p.managed.dl_tensor.byte_offset = 2; /* half a float */
  expect_refused(s, &p, 0, MIXP_ERR_INVALID_ARGUMENT, "not aligned");
  producer_init(&p, 2, 2);
  p.managed.dl_tensor.byte_offset = UINT64_MAX;
  expect_refused(s, &p, 0, MIXP_ERR_INVALID_ARGUMENT, "byte_offset");
  producer_init(&p, 2, 2);
  p.strides[0] = -2;
  p.strides[1] = 1;
  p.managed.dl_tensor.strides = p.strides;
  expect_refused(s, &p, 0, MIXP_ERR_INVALID_ARGUMENT, "dl_tensor.strides[0] is negative");
  p.strides[0] = INT64_MAX;
  expect_refused(s, &p, 0, MIXP_ERR_INVALID_ARGUMENT, "dl_tensor.strides[0]");
  p.strides[0] = INT64_C(1) << 62;
  expect_refused(s, &p, 0, MIXP_ERR_INVALID_ARGUMENT, "past 2^62");

  /* Devices: CUDA memory is not a cpu session's; unknown types are named. */
  producer_init(&p, 2, 2);
  p.managed.dl_tensor.device.device_type = kDLCUDA;
  expect_refused(s, &p, 0, MIXP_ERR_DEVICE, "the tensor is on kDLCUDA");
  p.managed.dl_tensor.device.device_type = kDLROCM;
  expect_refused(s, &p, 0, MIXP_ERR_DEVICE, "the tensor is on kDLROCM");
  p.managed.dl_tensor.device.device_type = 99;
  expect_refused(s, &p, 0, MIXP_ERR_DEVICE, "unknown device type");

  /* Versioned: another major version, read-only memory. */
  producer_init(&p, 2, 2);
  p.versioned.version.major = 2;
  expect_refused(s, &p, 1, MIXP_ERR_UNSUPPORTED, "DLPack version 2.0 is not supported");
  producer_init(&p, 2, 2);
  p.versioned.flags = DLPACK_FLAG_BITMASK_READ_ONLY;
  expect_refused(s, &p, 1, MIXP_ERR_INVALID_ARGUMENT, "read-only");

  /* pinned host memory (kDLCUDAHost) is host memory: accepted. */
  producer_init(&p, 2, 2);
  p.managed.dl_tensor.device.device_type = kDLCUDAHost;
  MT_OK(mixp_tensor_from_dlpack(s, (struct DLManagedTensor *)&p.managed, &t));
  mixp_tensor_release(t);
  assert_int_equal(p.deleted, 1);
  /* An empty tensor may have a NULL data pointer. */
  producer_init(&p, 0, 5);
  p.managed.dl_tensor.data = NULL;
  MT_OK(mixp_tensor_from_dlpack(s, (struct DLManagedTensor *)&p.managed, &t));
  assert_int_equal(mixp_tensor_numel(t), 0);
  mixp_tensor_release(t);
  assert_int_equal(p.deleted, 1);
  /* A NULL deleter is allowed (the producer keeps the memory forever). */
  producer_init(&p, 2, 2);
  p.managed.deleter = NULL;
  MT_OK(mixp_tensor_from_dlpack(s, (struct DLManagedTensor *)&p.managed, &t));
  mixp_tensor_release(t);
  assert_int_equal(p.deleted, 0);
}

/* fp8 tensors export under DLPack 1.1's codes and come back as themselves. */
static void test_fp8_round_trip(void **state) {
  mixp_session *s = *state;
  const uint8_t codes[4] = {0x38, 0xC4, 0x7E, 0x7F};
  const int64_t n = 4;
  const mixp_dtype dts[2] = {MIXP_F8E4M3, MIXP_F8E5M2};
  const uint8_t want_code[2] = {DL_F8_E4M3FN, DL_F8_E5M2};
  for (int k = 0; k < 2; ++k) {
    mixp_tensor *t = NULL, *back = NULL;
    MT_OK(mixp_tensor_from_host(s, codes, 4, dts[k], &n, 1, &t));
    DLManagedTensor *m = NULL;
    MT_OK(mixp_tensor_to_dlpack(t, (struct DLManagedTensor **)&m));
    assert_int_equal(m->dl_tensor.dtype.code, want_code[k]);
    assert_int_equal(m->dl_tensor.dtype.bits, 8);
    assert_int_equal(m->dl_tensor.dtype.lanes, 1);
    MT_OK(mixp_tensor_from_dlpack(s, (struct DLManagedTensor *)m, &back));
    assert_int_equal(mixp_tensor_dtype(back), dts[k]);
    uint8_t got[4];
    MT_OK(mixp_tensor_to_host(back, got, 4));
    assert_memory_equal(got, codes, 4);
    mixp_tensor_release(back);
    mixp_tensor_release(t);
  }
}

static void test_export_outlives_the_handle(void **state) {
  mixp_session *s = *state;
  const double v[6] = {1, 2, 3, 4, 5, 6};
  const int64_t shape[2] = {2, 3};
  mixp_tensor *t = mt_tensor(s, MIXP_F32, v, shape, 2), *tt = NULL;
  DLManagedTensor *m = NULL;
  MT_OK(mixp_tensor_to_dlpack(t, (struct DLManagedTensor **)&m));
  assert_non_null(m);
  assert_non_null(m->deleter);
  assert_int_equal(m->dl_tensor.device.device_type, kDLCPU);
  assert_int_equal(m->dl_tensor.ndim, 2);
  assert_int_equal(m->dl_tensor.dtype.code, kDLFloat);
  assert_int_equal(m->dl_tensor.dtype.bits, 32);
  assert_int_equal(m->dl_tensor.dtype.lanes, 1);
  assert_int_equal(m->dl_tensor.shape[0], 2);
  assert_int_equal(m->dl_tensor.shape[1], 3);
  assert_int_equal(m->dl_tensor.strides[0], 3);
  assert_int_equal(m->dl_tensor.strides[1], 1);
  float *d = (float *)((char *)m->dl_tensor.data + m->dl_tensor.byte_offset);
  /* Writes through the consumer are seen by mixp: shared memory. */
  d[4] = 50.0f;
  double *back = mt_values(t);
  assert_true(back[4] == 50.0);
  free(back);
  /* A transposed view exports its strides. */
  MT_OK(mixp_transpose(t, 0, 1, &tt));
  DLManagedTensorVersioned *mv = NULL;
  MT_OK(mixp_tensor_to_dlpack_versioned(tt, (struct DLManagedTensorVersioned **)&mv));
  assert_int_equal(mv->version.major, 1);
  assert_int_equal(mv->version.minor, 0);
  assert_true(mv->flags == 0);
  assert_int_equal(mv->dl_tensor.shape[0], 3);
  assert_int_equal(mv->dl_tensor.strides[0], 1);
  assert_int_equal(mv->dl_tensor.strides[1], 3);
  assert_ptr_equal(mv->dl_tensor.data, m->dl_tensor.data);
  /* The memory stays alive after the mixp handles are gone. */
  mixp_tensor_release(t);
  mixp_tensor_release(tt);
  assert_true(d[0] == 1.0f && d[4] == 50.0f && d[5] == 6.0f);
  mixp_dlpack_release((struct DLManagedTensor *)m);
  mixp_dlpack_release_versioned((struct DLManagedTensorVersioned *)mv);
  mixp_dlpack_release(NULL); /* no-op */
  mixp_dlpack_release_versioned(NULL);
  {
    producer q;
    producer_init(&q, 2, 2);
    mixp_dlpack_release((struct DLManagedTensor *)&q.managed);
    mixp_dlpack_release_versioned((struct DLManagedTensorVersioned *)&q.versioned);
    assert_int_equal(q.deleted, 2);
  }

  {
    MT_FAILS(mixp_tensor_to_dlpack(NULL, (struct DLManagedTensor **)&m), MIXP_ERR_INVALID_ARGUMENT,
             "mixp_tensor_to_dlpack: tensor is NULL");
    mixp_tensor *u = mt_tensor(s, MIXP_F32, v, shape, 2);
    MT_FAILS(mixp_tensor_to_dlpack(u, NULL), MIXP_ERR_INVALID_ARGUMENT, "mixp_tensor_to_dlpack: out is NULL");
    MT_FAILS(mixp_tensor_to_dlpack_versioned(u, NULL), MIXP_ERR_INVALID_ARGUMENT,
             "mixp_tensor_to_dlpack_versioned: out is NULL");
    mixp_tensor_release(u);
  }
}

/* mixp -> DLPack -> mixp keeps the memory: the second export points at the
 * same bytes, and the first export's deleter runs when the re-import goes. */
static void test_round_trip_keeps_memory(void **state) {
  mixp_session *s = *state;
  static const mixp_dtype dts[] = {MIXP_F32, MIXP_F16, MIXP_BF16, MIXP_F64, MIXP_I64, MIXP_I32, MIXP_U8, MIXP_BOOL};
  for (size_t k = 0; k < sizeof dts / sizeof *dts; ++k) {
    const double v[4] = {1, 0, 1, 1};
    const int64_t shape[2] = {2, 2};
    mixp_tensor *a = mt_tensor(s, dts[k], v, shape, 2), *b = NULL;
    DLManagedTensor *m1 = NULL, *m2 = NULL;
    MT_OK(mixp_tensor_to_dlpack(a, (struct DLManagedTensor **)&m1));
    MT_OK(mixp_tensor_from_dlpack(s, (struct DLManagedTensor *)m1, &b));
    assert_int_equal(mixp_tensor_dtype(b), dts[k]);
    MT_OK(mixp_tensor_to_dlpack(b, (struct DLManagedTensor **)&m2));
    assert_ptr_equal(m1->dl_tensor.data, m2->dl_tensor.data);
    double *vb = mt_values(b);
    for (int i = 0; i < 4; ++i) assert_true(vb[i] == v[i]);
    free(vb);
    m2->deleter(m2);
    mixp_tensor_release(b); /* calls m1's deleter */
    mixp_tensor_release(a);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_import_shares_memory_and_deletes_once, setup, teardown),
      cmocka_unit_test_setup_teardown(test_import_strides_and_offset, setup, teardown),
      cmocka_unit_test_setup_teardown(test_import_dtypes, setup, teardown),
      cmocka_unit_test_setup_teardown(test_fp8_round_trip, setup, teardown),
      cmocka_unit_test_setup_teardown(test_import_misuse, setup, teardown),
      cmocka_unit_test_setup_teardown(test_export_outlives_the_handle, setup, teardown),
      cmocka_unit_test_setup_teardown(test_round_trip_keeps_memory, setup, teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
