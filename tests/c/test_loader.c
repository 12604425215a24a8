/* Loaders: batch shapes and counts, drop_last and the last partial batch,
 * epochs and MIXP_DONE, shuffling (per seed and epoch, each sample once),
 * normalisation in every float dtype, lifetimes, and misuse. */
#define _POSIX_C_SOURCE 200809L
#include "test_data_util.h"

/* ---- loader: batches --------------------------------------------------------------------- */

static void test_loader_defaults(void **state) {
  (void)state;
  mixp_loader_options o;
  memset(&o, 0, sizeof o);
  mixp_loader_options_init(&o);
  assert_int_equal(o.struct_size, sizeof o);
  assert_int_equal(o.batch_size, 64);
  assert_int_equal(o.shuffle, 1);
  assert_int_equal(o.drop_last, 0);
  assert_int_equal(o.seed, 0);
  assert_int_equal(o.dtype, MIXP_F32);
  assert_true(o.scale == 1.0 / 255.0);
  assert_true(o.mean == 0.0);
  assert_true(o.std == 1.0);
  mixp_loader_options_init(NULL);
  /* NULL options mean the defaults */
  mixp_session *s = mt_session();
  mixp_dataset *d = synthetic(s, 130, 1, 2, 2, 3, 1, 0.1);
  mixp_loader *l = NULL;
  MT_OK(mixp_loader_create(d, NULL, &l));
  assert_int_equal(mixp_loader_num_batches(l), 3);
  mixp_loader_destroy(l);
  mixp_dataset_destroy(d);
  mixp_session_destroy(s);
}

static void test_loader_batches(void **state) {
  (void)state;
  mixp_session *s = mt_session();
  mixp_dataset *d = synthetic(s, 10, 2, 3, 4, 5, 3, 0.3);
  for (int drop = 0; drop <= 1; ++drop) {
    mixp_loader *l = make_loader(d, 4, 1, drop, 9, MIXP_F32, 1.0 / 255, 0, 1);
    assert_int_equal(mixp_loader_num_batches(l), drop ? 2 : 3);
    assert_int_equal(mixp_loader_epoch(l), 0);
    for (int epoch = 0; epoch < 3; ++epoch) {
      int64_t sizes[4] = {0}, nb = 0;
      mixp_tensor *const sentinel = (mixp_tensor *)&sizes;
      mixp_tensor *x, *y;
      mixp_status st;
      for (;;) {
        x = y = sentinel;
        st = mixp_loader_next(l, &x, &y);
        if (st != MIXP_OK) break;
        assert_int_equal(mixp_loader_epoch(l), epoch);
        int64_t b = mixp_tensor_dim(x, 0);
        const int64_t xs[4] = {b, 2, 3, 4}, ys[1] = {b};
        expect_shape(x, xs, 4);
        expect_shape(y, ys, 1);
        assert_int_equal(mixp_tensor_dtype(x), MIXP_F32);
        assert_int_equal(mixp_tensor_dtype(y), MIXP_I64);
        assert_int_equal(mixp_tensor_is_contiguous(x), 1);
        assert_int_equal(mixp_tensor_requires_grad(x), 0);
        assert_ptr_equal(mixp_tensor_session(x), s);
        assert_true(nb < 4);
        sizes[nb++] = b;
        mixp_tensor_release(x);
        mixp_tensor_release(y);
      }
      assert_int_equal(st, MIXP_DONE);
      /* outputs untouched on MIXP_DONE; the epoch counter moves only when
       * the next epoch starts */
      assert_ptr_equal(x, sentinel);
      assert_ptr_equal(y, sentinel);
      assert_int_equal(mixp_loader_epoch(l), epoch);
      assert_int_equal(nb, drop ? 2 : 3);
      assert_int_equal(sizes[0], 4);
      assert_int_equal(sizes[1], 4);
      if (!drop) assert_int_equal(sizes[2], 2); /* the last, partial batch */
    }
    /* the call after MIXP_DONE starts the next epoch */
    mixp_tensor *x = NULL, *y = NULL;
    MT_OK(mixp_loader_next(l, &x, &y));
    assert_int_equal(mixp_loader_epoch(l), 3);
    mixp_tensor_release(x);
    mixp_tensor_release(y);
    mixp_loader_destroy(l);
  }

  /* a batch larger than the dataset: one partial batch, or none with drop_last */
  mixp_loader *l = make_loader(d, 64, 0, 0, 0, MIXP_F32, 1, 0, 1);
  mixp_tensor *x = NULL, *y = NULL;
  assert_int_equal(mixp_loader_num_batches(l), 1);
  MT_OK(mixp_loader_next(l, &x, &y));
  assert_int_equal(mixp_tensor_dim(x, 0), 10);
  mixp_tensor_release(x);
  mixp_tensor_release(y);
  x = y = NULL;
  assert_int_equal(mixp_loader_next(l, &x, &y), MIXP_DONE);
  assert_null(x);
  assert_null(y);
  mixp_loader_destroy(l);
  l = make_loader(d, 64, 0, 1, 0, MIXP_F32, 1, 0, 1);
  assert_int_equal(mixp_loader_num_batches(l), 0);
  assert_int_equal(mixp_loader_next(l, &x, &y), MIXP_DONE);
  assert_int_equal(mixp_loader_next(l, &x, &y), MIXP_DONE);
  assert_int_equal(mixp_loader_epoch(l), 1);
  assert_null(x);
  mixp_loader_destroy(l);
  mixp_dataset_destroy(d);
  mixp_session_destroy(s);
}

/* ---- loader: order ---------------------------------------------------------------------- */

enum { ORD_N = 300 };

/* A dataset whose sample i has pixels (i % 256, i / 256): the index can be
 * read back from a batch. */
static mixp_dataset *indexed_dataset(mixp_session *s) {
  unsigned char img[16 + ORD_N * 2], lab[8 + ORD_N];
  size_t o = put_u32(img, 0x803);
  o += put_u32(img + o, ORD_N);
  o += put_u32(img + o, 1);
  o += put_u32(img + o, 2);
  for (int i = 0; i < ORD_N; ++i) {
    img[o++] = (unsigned char)(i % 256);
    img[o++] = (unsigned char)(i / 256);
  }
  size_t p = put_u32(lab, 0x801);
  p += put_u32(lab + p, ORD_N);
  for (int i = 0; i < ORD_N; ++i) lab[p++] = (unsigned char)(i % 10);
  const char *ip = write_file("ord-images", img, sizeof img);
  const char *lp = write_file("ord-labels", lab, sizeof lab);
  mixp_dataset *d = NULL;
  MT_OK(mixp_dataset_idx_open(s, ip, lp, &d));
  return d;
}

/* Reads one epoch: the sample indices in the order served. */
static void read_epoch(mixp_loader *l, int64_t *order, int64_t *n) {
  mixp_tensor *x = NULL, *y = NULL;
  mixp_status st;
  *n = 0;
  while ((st = mixp_loader_next(l, &x, &y)) == MIXP_OK) {
    int64_t b = mixp_tensor_dim(x, 0);
    double v[2 * 64];
    int64_t lab[64];
    assert_true(b <= 64);
    MT_OK(mixp_tensor_to_host(x, v, (size_t)b * 2 * sizeof(double)));
    read_i64(y, lab, b);
    for (int64_t i = 0; i < b; ++i) {
      int64_t idx = (int64_t)v[2 * i] + 256 * (int64_t)v[2 * i + 1];
      assert_int_equal(lab[i], idx % 10); /* labels travel with their sample */
      order[(*n)++] = idx;
    }
    mixp_tensor_release(x);
    mixp_tensor_release(y);
  }
  assert_int_equal(st, MIXP_DONE);
}

static void test_loader_shuffle(void **state) {
  (void)state;
  mixp_session *s = mt_session();
  mixp_dataset *d = indexed_dataset(s);
  mixp_loader *a = make_loader(d, 64, 1, 0, 42, MIXP_F64, 1, 0, 1);
  mixp_loader *b = make_loader(d, 64, 1, 0, 42, MIXP_F64, 1, 0, 1);
  mixp_loader *c = make_loader(d, 64, 1, 0, 43, MIXP_F64, 1, 0, 1);
  mixp_loader *plain = make_loader(d, 64, 0, 0, 42, MIXP_F64, 1, 0, 1);
  int64_t oa[3][ORD_N], ob[ORD_N], oc[ORD_N], op[ORD_N], n;
  for (int e = 0; e < 3; ++e) {
    read_epoch(a, oa[e], &n);
    assert_int_equal(n, ORD_N);
    /* each sample exactly once per epoch */
    int seen[ORD_N] = {0};
    for (int i = 0; i < ORD_N; ++i) {
      assert_in_range(oa[e][i], 0, ORD_N - 1);
      seen[oa[e][i]]++;
    }
    for (int i = 0; i < ORD_N; ++i) assert_int_equal(seen[i], 1);
    /* the same seed and epoch give the same order */
    read_epoch(b, ob, &n);
    assert_memory_equal(oa[e], ob, sizeof ob);
    /* another seed another order */
    read_epoch(c, oc, &n);
    assert_memory_not_equal(oa[e], oc, sizeof oc);
    /* no shuffle: in file order every epoch */
    read_epoch(plain, op, &n);
    for (int i = 0; i < ORD_N; ++i) assert_int_equal(op[i], i);
  }
  /* epochs differ from each other and from the file order */
  assert_memory_not_equal(oa[0], oa[1], sizeof oa[0]);
  assert_memory_not_equal(oa[1], oa[2], sizeof oa[0]);
  assert_memory_not_equal(oa[0], op, sizeof op);
  /* the order of epoch e depends on (seed, e) only, not on the batch size */
  mixp_loader *other = make_loader(d, 7, 1, 0, 42, MIXP_F64, 1, 0, 1);
  int64_t ot[ORD_N];
  mixp_tensor *x = NULL, *y = NULL;
  int64_t k = 0;
  while (mixp_loader_next(other, &x, &y) == MIXP_OK) {
    int64_t bsz = mixp_tensor_dim(x, 0);
    double v[14];
    MT_OK(mixp_tensor_to_host(x, v, (size_t)bsz * 2 * sizeof(double)));
    for (int64_t i = 0; i < bsz; ++i) ot[k++] = (int64_t)v[2 * i] + 256 * (int64_t)v[2 * i + 1];
    mixp_tensor_release(x);
    mixp_tensor_release(y);
  }
  assert_int_equal(k, ORD_N);
  assert_memory_equal(ot, oa[0], sizeof ot);
  /* drop_last leaves out the tail of the shuffled order */
  mixp_loader *dl = make_loader(d, 64, 1, 1, 42, MIXP_F64, 1, 0, 1);
  read_epoch(dl, ob, &n);
  assert_int_equal(n, 256);
  assert_memory_equal(ob, oa[0], 256 * sizeof(int64_t));
  mixp_loader_destroy(dl);
  mixp_loader_destroy(other);
  mixp_loader_destroy(a);
  mixp_loader_destroy(b);
  mixp_loader_destroy(c);
  mixp_loader_destroy(plain);
  mixp_dataset_destroy(d);
  mixp_session_destroy(s);
}

/* ---- loader: normalisation --------------------------------------------------------------- */

static void test_loader_normalisation(void **state) {
  (void)state;
  mixp_session *s = mt_session();
  mixp_dataset *d = indexed_dataset(s); /* pixels i % 256 cover all 256 values */
  const mixp_dtype dts[4] = {MIXP_F64, MIXP_F32, MIXP_F16, MIXP_BF16};
  const double rtol[4] = {1e-15, 1e-7, 1e-3, 8e-3};
  for (int t = 0; t < 4; ++t) {
    const double scale = 1.0 / 255, mean = 0.2860, std = 0.3530;
    mixp_loader *l = make_loader(d, 64, 0, 0, 0, dts[t], scale, mean, std);
    mixp_tensor *x = NULL, *y = NULL;
    int64_t base = 0;
    while (mixp_loader_next(l, &x, &y) == MIXP_OK) {
      assert_int_equal(mixp_tensor_dtype(x), dts[t]);
      int64_t b = mixp_tensor_dim(x, 0);
      double *got = mt_values(x);
      double want[128];
      for (int64_t i = 0; i < b; ++i) {
        int64_t idx = base + i;
        want[2 * i] = ((double)(idx % 256) * scale - mean) / std;
        want[2 * i + 1] = ((double)(idx / 256) * scale - mean) / std;
      }
      mt_assert_close(got, want, 2 * b, 1e-300, rtol[t]);
      free(got);
      base += b;
      mixp_tensor_release(x);
      mixp_tensor_release(y);
    }
    assert_int_equal(base, ORD_N);
    mixp_loader_destroy(l);
  }
  /* raw pixels with scale 1, mean 0, std 1 */
  mixp_loader *l = make_loader(d, 300, 0, 0, 0, MIXP_F32, 1, 0, 1);
  mixp_tensor *x = NULL, *y = NULL;
  MT_OK(mixp_loader_next(l, &x, &y));
  float v[600];
  MT_OK(mixp_tensor_to_host(x, v, sizeof v));
  for (int i = 0; i < ORD_N; ++i) {
    assert_true(v[2 * i] == (float)(i % 256));
    assert_true(v[2 * i + 1] == (float)(i / 256));
  }
  mixp_tensor_release(x);
  mixp_tensor_release(y);
  mixp_loader_destroy(l);
  mixp_dataset_destroy(d);
  mixp_session_destroy(s);
}

/* ---- lifetimes -------------------------------------------------------------------------- */

static void test_keep_alive(void **state) {
  (void)state;
  mixp_session *s = mt_session();
  mixp_dataset *d = synthetic(s, 20, 1, 2, 2, 2, 5, 0.1);
  mixp_loader *l = make_loader(d, 8, 1, 0, 1, MIXP_F32, 1, 0, 1);
  mixp_dataset_destroy(d); /* the loader keeps the data */
  mixp_tensor *x = NULL, *y = NULL;
  int n = 0;
  while (mixp_loader_next(l, &x, &y) == MIXP_OK) {
    n += (int)mixp_tensor_dim(x, 0);
    mixp_tensor_release(x);
    mixp_tensor_release(y);
  }
  assert_int_equal(n, 20);
  /* a destroyed session refuses new batches; the loader can still be freed */
  mixp_session_destroy(s);
  x = y = NULL;
  MT_FAILS(mixp_loader_next(l, &x, &y), MIXP_ERR_STATE, "mixp_loader_next");
  assert_null(x);
  assert_int_equal(mixp_loader_num_batches(l), 3);
  mixp_loader_destroy(l);
}

/* ---- misuse ----------------------------------------------------------------------------- */

static void test_loader_misuse(void **state) {
  (void)state;
  mixp_session *s = mt_session();
  mixp_dataset *d = synthetic(s, 4, 1, 2, 2, 2, 5, 0.1);
  mixp_loader_options o;
  mixp_loader *l = NULL;
  mixp_loader_options_init(&o);
  MT_FAILS(mixp_loader_create(NULL, &o, &l), MIXP_ERR_INVALID_ARGUMENT, "dataset is NULL");
  MT_FAILS(mixp_loader_create(d, &o, NULL), MIXP_ERR_INVALID_ARGUMENT, "out is NULL");
#define BAD(field, value, needle)                                                  \
  do {                                                                             \
    mixp_loader_options_init(&o);                                                  \
    o.field = value;                                                               \
    MT_FAILS(mixp_loader_create(d, &o, &l), MIXP_ERR_INVALID_ARGUMENT, needle);    \
  } while (0)
  BAD(batch_size, 0, "batch_size must be >= 1, got 0");
  BAD(batch_size, -3, "batch_size");
  BAD(std, 0.0, "std must be finite and > 0");
  BAD(std, -1.0, "std");
  BAD(std, NAN, "std");
  BAD(mean, INFINITY, "mean must be finite");
  BAD(scale, NAN, "scale must be finite");
  BAD(dtype, MIXP_I64, "dtype must be a float dtype");
  BAD(dtype, MIXP_U8, "got u8");
  BAD(dtype, (mixp_dtype)99, "unknown dtype");
  BAD(struct_size, 3, "struct_size is 3");
#undef BAD
  assert_null(l);

  l = make_loader(d, 2, 1, 0, 0, MIXP_F32, 1, 0, 1);
  mixp_tensor *x = NULL, *y = NULL;
  MT_FAILS(mixp_loader_next(NULL, &x, &y), MIXP_ERR_INVALID_ARGUMENT, "loader is NULL");
  MT_FAILS(mixp_loader_next(l, NULL, &y), MIXP_ERR_INVALID_ARGUMENT, "inputs is NULL");
  MT_FAILS(mixp_loader_next(l, &x, NULL), MIXP_ERR_INVALID_ARGUMENT, "labels is NULL");
  assert_null(x);
  assert_null(y);
  /* failed calls consumed nothing: the epoch still has both batches */
  int n = 0;
  while (mixp_loader_next(l, &x, &y) == MIXP_OK) {
    ++n;
    mixp_tensor_release(x);
    mixp_tensor_release(y);
  }
  assert_int_equal(n, 2);
  assert_int_equal(mixp_loader_num_batches(NULL), -1);
  assert_non_null(strstr(mixp_last_error(), "mixp_loader_num_batches: loader is NULL"));
  assert_int_equal(mixp_loader_epoch(NULL), -1);
  assert_non_null(strstr(mixp_last_error(), "mixp_loader_epoch: loader is NULL"));
  uint64_t junk[8] = {0};
  assert_int_equal(mixp_loader_epoch((const mixp_loader *)junk), -1);
  assert_non_null(strstr(mixp_last_error(), "not a live mixp_loader"));
  mixp_loader_destroy(NULL);
  mixp_loader_destroy(l);

  /* a dataset whose session was destroyed gives no new loader */
  mixp_session_destroy(s);
  MT_FAILS(mixp_loader_create(d, NULL, &l), MIXP_ERR_STATE, "mixp_loader_create");
  mixp_dataset_destroy(d);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_loader_defaults),
      cmocka_unit_test(test_loader_batches),
      cmocka_unit_test(test_loader_shuffle),
      cmocka_unit_test(test_loader_normalisation),
      cmocka_unit_test(test_keep_alive),
      cmocka_unit_test(test_loader_misuse),
  };
  return cmocka_run_group_tests(tests, setup_dir, teardown_dir);
}
