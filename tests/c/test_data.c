/* Datasets: IDX parsing (files written here, plain; the real gzip
 * Fashion-MNIST when installed), every corruption case, the Fashion-MNIST
 * layout, the synthetic set, and misuse of every dataset function. */
#define _POSIX_C_SOURCE 200809L
#include "test_data_util.h"

#define FASHION_DIR "/usr/share/datasets/fashion-mnist"

/* ---- IDX writers ----------------------------------------------------------------- */

static unsigned char pixel(uint32_t i, uint32_t k) { return (unsigned char)((i * 31u + k * 7u) & 255u); }

static const char *write_images(const char *name, uint32_t magic, uint32_t n, uint32_t rows,
                                uint32_t cols, size_t keep, size_t extra) {
  /* Forged headers may declare more than fits in memory: only the bytes
   * that are kept are materialised. */
  uint64_t per = (uint64_t)rows * cols;
  size_t total = per && n > (1u << 30) / per ? SIZE_MAX : 16 + (size_t)(n * per) + extra;
  size_t size = keep < total ? keep : total;
  assert_true(size < ((size_t)1 << 31));
  unsigned char *b = calloc(size + 16, 1);
  size_t o = put_u32(b, magic);
  o += put_u32(b + o, n);
  o += put_u32(b + o, rows);
  o += put_u32(b + o, cols);
  for (uint64_t j = 0; o < size && per && j < (uint64_t)n * per; ++j)
    b[o++] = pixel((uint32_t)(j / per), (uint32_t)(j % per));
  const char *p = write_file(name, b, size);
  free(b);
  return p;
}

static unsigned char label_of(uint32_t i) { return (unsigned char)((i * 3u) % 7u); }

static const char *write_labels(const char *name, uint32_t magic, uint32_t n, size_t keep) {
  size_t total = 8 + n;
  unsigned char *b = calloc(total, 1);
  size_t o = put_u32(b, magic);
  o += put_u32(b + o, n);
  for (uint32_t i = 0; i < n; ++i) b[o++] = label_of(i);
  const char *p = write_file(name, b, keep < total ? keep : total);
  free(b);
  return p;
}

/* ---- IDX ------------------------------------------------------------------------- */

static void test_idx_plain(void **state) {
  (void)state;
  mixp_session *s = mt_session();
  const char *img = write_images("ok-images", 0x803, 5, 3, 4, SIZE_MAX, 0);
  const char *lab = write_labels("ok-labels", 0x801, 5, SIZE_MAX);
  mixp_dataset *d = NULL;
  MT_OK(mixp_dataset_idx_open(s, img, lab, &d));
  assert_int_equal(mixp_dataset_size(d), 5);
  /* labels 0 3 6 2 5: classes = max + 1 */
  assert_int_equal(mixp_dataset_num_classes(d), 7);
  int64_t shape[MIXP_MAX_DIMS];
  int nd = 0;
  MT_OK(mixp_dataset_sample_shape(d, shape, &nd));
  assert_int_equal(nd, 3);
  assert_int_equal(shape[0], 1);
  assert_int_equal(shape[1], 3);
  assert_int_equal(shape[2], 4);

  double px[5 * 12];
  int64_t lab_v[5];
  dump(d, px, lab_v);
  for (uint32_t i = 0; i < 5; ++i) {
    assert_int_equal(lab_v[i], label_of(i));
    for (uint32_t k = 0; k < 12; ++k) assert_true(px[i * 12 + k] == (double)pixel(i, k));
  }
  mixp_dataset_destroy(d);
  mixp_session_destroy(s);
}

static void expect_corrupt(mixp_session *s, const char *img, const char *lab, const char *file,
                           const char *what) {
  mixp_dataset *d = (mixp_dataset *)&d; /* must stay untouched */
  mixp_dataset *const before = d;
  MT_FAILS(mixp_dataset_idx_open(s, img, lab, &d), MIXP_ERR_CORRUPT, what);
  if (!strstr(mixp_last_error(), file)) {
    print_error("message \"%s\" does not name %s\n", mixp_last_error(), file);
    fail();
  }
  assert_non_null(strstr(mixp_last_error(), "mixp_dataset_idx_open"));
  assert_ptr_equal(d, before);
}

static void test_idx_corrupt(void **state) {
  (void)state;
  mixp_session *s = mt_session();
  const char *img = write_images("c-images", 0x803, 6, 2, 3, SIZE_MAX, 0);
  const char *lab = write_labels("c-labels", 0x801, 6, SIZE_MAX);

  /* bad magic: a label file given as images, and an image file as labels */
  expect_corrupt(s, lab, lab, lab, "bad magic number 0x00000801");
  expect_corrupt(s, img, img, img, "bad magic number 0x00000803");
  const char *m2 = write_images("c-magic2", 0x0c03, 6, 2, 3, SIZE_MAX, 0);
  expect_corrupt(s, m2, lab, m2, "bad magic");

  /* truncated headers */
  const char *h0 = write_images("c-head0", 0x803, 6, 2, 3, 0, 0);
  expect_corrupt(s, h0, lab, h0, "truncated");
  const char *h1 = write_images("c-head1", 0x803, 6, 2, 3, 3, 0);
  expect_corrupt(s, h1, lab, h1, "magic number");
  const char *h2 = write_images("c-head2", 0x803, 6, 2, 3, 10, 0);
  expect_corrupt(s, h2, lab, h2, "truncated");
  const char *lh = write_labels("c-lhead", 0x801, 6, 6);
  expect_corrupt(s, img, lh, lh, "truncated");

  /* truncated data */
  const char *td = write_images("c-data", 0x803, 6, 2, 3, 16 + 35, 0);
  expect_corrupt(s, td, lab, td, "truncated");
  expect_corrupt(s, td, lab, td, "36 bytes of pixels");
  const char *tl = write_labels("c-ldata", 0x801, 6, 8 + 5);
  expect_corrupt(s, img, tl, tl, "truncated");

  /* wrong dims */
  const char *z = write_images("c-zero-rows", 0x803, 6, 0, 3, SIZE_MAX, 0);
  expect_corrupt(s, z, lab, z, "wrong dims");
  const char *zn = write_images("c-zero-n", 0x803, 0, 2, 3, SIZE_MAX, 0);
  const char *zl = write_labels("c-zero-l", 0x801, 0, SIZE_MAX);
  expect_corrupt(s, zn, zl, zn, "wrong dims");
  const char *huge = write_images("c-huge", 0x803, 0xffffffffu, 0xffff, 0xffff, 64, 0);
  expect_corrupt(s, huge, lab, huge, "wrong dims");
  /* a header that promises far more than the file holds: truncated, not OOM */
  const char *big = write_images("c-big", 0x803, 1000000, 28, 28, 16 + 100, 0);
  const char *bigl = write_labels("c-bigl", 0x801, 1000000, SIZE_MAX);
  expect_corrupt(s, big, bigl, big, "truncated");

  /* count mismatch names both files */
  const char *l5 = write_labels("c-l5", 0x801, 5, SIZE_MAX);
  expect_corrupt(s, img, l5, "count mismatch", "holds 6 images");
  assert_non_null(strstr(mixp_last_error(), img));
  assert_non_null(strstr(mixp_last_error(), l5));

  /* trailing garbage */
  const char *tr = write_images("c-trail", 0x803, 6, 2, 3, SIZE_MAX, 3);
  expect_corrupt(s, tr, lab, tr, "3 unexpected bytes");
  mixp_session_destroy(s);
}

static void test_idx_missing(void **state) {
  (void)state;
  mixp_session *s = mt_session();
  const char *lab = write_labels("m-labels", 0x801, 4, SIZE_MAX);
  const char *img = write_images("m-images", 0x803, 4, 2, 2, SIZE_MAX, 0);
  char missing[320];
  snprintf(missing, sizeof missing, "%s/no-such-file", g_dir);
  mixp_dataset *d = NULL;
  MT_FAILS(mixp_dataset_idx_open(s, missing, lab, &d), MIXP_ERR_IO, missing);
  assert_non_null(strstr(mixp_last_error(), "No such file"));
  MT_FAILS(mixp_dataset_idx_open(s, img, missing, &d), MIXP_ERR_IO, missing);
  /* a directory cannot be read as a file */
  MT_FAILS(mixp_dataset_idx_open(s, g_dir, lab, &d), MIXP_ERR_IO, g_dir);
  assert_null(d);
  mixp_session_destroy(s);
}

static void test_idx_misuse(void **state) {
  (void)state;
  mixp_session *s = mt_session();
  const char *img = write_images("u-images", 0x803, 4, 2, 2, SIZE_MAX, 0);
  const char *lab = write_labels("u-labels", 0x801, 4, SIZE_MAX);
  mixp_dataset *d = NULL;
  MT_FAILS(mixp_dataset_idx_open(NULL, img, lab, &d), MIXP_ERR_INVALID_ARGUMENT, "session is NULL");
  MT_FAILS(mixp_dataset_idx_open(s, NULL, lab, &d), MIXP_ERR_INVALID_ARGUMENT, "images_path is NULL");
  MT_FAILS(mixp_dataset_idx_open(s, img, NULL, &d), MIXP_ERR_INVALID_ARGUMENT, "labels_path is NULL");
  MT_FAILS(mixp_dataset_idx_open(s, img, lab, NULL), MIXP_ERR_INVALID_ARGUMENT, "out is NULL");
  assert_null(d);
  /* a destroyed session refuses new datasets (the live one keeps its
   * internals, so the handle can still be checked) */
  mixp_dataset *keep = NULL;
  MT_OK(mixp_dataset_idx_open(s, img, lab, &keep));
  mixp_session_destroy(s);
  MT_FAILS(mixp_dataset_idx_open(s, img, lab, &d), MIXP_ERR_STATE, "mixp_dataset_idx_open");
  MT_FAILS(mixp_dataset_synthetic(s, NULL, &d), MIXP_ERR_STATE, "mixp_dataset_synthetic");
  MT_FAILS(mixp_dataset_fashion_mnist(s, g_dir, 1, &d), MIXP_ERR_STATE, "mixp_dataset_fashion_mnist");
  assert_null(d);
  /* the dataset outlives its session handle and can still be queried */
  assert_int_equal(mixp_dataset_size(keep), 4);
  mixp_dataset_destroy(keep);
}

/* ---- Fashion-MNIST ------------------------------------------------------------------ */

static void test_fashion_mnist_layout(void **state) {
  (void)state;
  mixp_session *s = mt_session();
  /* plain (uncompressed) files in the expected layout */
  write_images("train-images-idx3-ubyte", 0x803, 8, 2, 2, SIZE_MAX, 0);
  write_labels("train-labels-idx1-ubyte", 0x801, 8, SIZE_MAX);
  write_images("t10k-images-idx3-ubyte", 0x803, 3, 2, 2, SIZE_MAX, 0);
  write_labels("t10k-labels-idx1-ubyte", 0x801, 3, SIZE_MAX);
  mixp_dataset *tr = NULL, *te = NULL;
  MT_OK(mixp_dataset_fashion_mnist(s, g_dir, 1, &tr));
  MT_OK(mixp_dataset_fashion_mnist(s, g_dir, 0, &te));
  assert_int_equal(mixp_dataset_size(tr), 8);
  assert_int_equal(mixp_dataset_size(te), 3);
  mixp_dataset_destroy(tr);
  mixp_dataset_destroy(te);

  char missing[320];
  snprintf(missing, sizeof missing, "%s/nowhere", g_dir);
  mixp_dataset *d = NULL;
  MT_FAILS(mixp_dataset_fashion_mnist(s, missing, 1, &d), MIXP_ERR_IO,
           "apt-get install dataset-fashion-mnist");
  assert_non_null(strstr(mixp_last_error(), missing));
  assert_non_null(strstr(mixp_last_error(), "train-images-idx3-ubyte"));
  MT_FAILS(mixp_dataset_fashion_mnist(s, missing, 0, &d), MIXP_ERR_IO, "t10k-images-idx3-ubyte");
  MT_FAILS(mixp_dataset_fashion_mnist(NULL, g_dir, 1, &d), MIXP_ERR_INVALID_ARGUMENT,
           "session is NULL");
  MT_FAILS(mixp_dataset_fashion_mnist(s, g_dir, 2, &d), MIXP_ERR_INVALID_ARGUMENT,
           "train must be 1");
  MT_FAILS(mixp_dataset_fashion_mnist(s, g_dir, 1, NULL), MIXP_ERR_INVALID_ARGUMENT, "out is NULL");
  assert_null(d);
  mixp_session_destroy(s);
}

static void test_fashion_mnist_real(void **state) {
  (void)state;
  if (access(FASHION_DIR "/train-images-idx3-ubyte.gz", R_OK) != 0) {
    print_message("Fashion-MNIST is not installed (apt-get install dataset-fashion-mnist)\n");
    skip();
  }
  mixp_session *s = mt_session();
  mixp_dataset *tr = NULL, *te = NULL;
  MT_OK(mixp_dataset_fashion_mnist(s, NULL, 1, &tr));
  MT_OK(mixp_dataset_fashion_mnist(s, FASHION_DIR, 0, &te));
  assert_int_equal(mixp_dataset_size(tr), 60000);
  assert_int_equal(mixp_dataset_size(te), 10000);
  assert_int_equal(mixp_dataset_num_classes(tr), 10);
  assert_int_equal(mixp_dataset_num_classes(te), 10);
  int64_t shape[MIXP_MAX_DIMS];
  int nd = 0;
  MT_OK(mixp_dataset_sample_shape(te, shape, &nd));
  assert_int_equal(nd, 3);
  assert_int_equal(shape[1], 28);
  assert_int_equal(shape[2], 28);
  /* the test split is balanced: 1000 of each class */
  mixp_loader *l = make_loader(te, 10000, 0, 0, 0, MIXP_F32, 1.0 / 255, 0, 1);
  mixp_tensor *x = NULL, *y = NULL;
  MT_OK(mixp_loader_next(l, &x, &y));
  int64_t *lab = malloc(10000 * sizeof(int64_t));
  read_i64(y, lab, 10000);
  int64_t count[10] = {0};
  for (int i = 0; i < 10000; ++i) count[lab[i]]++;
  for (int c = 0; c < 10; ++c) assert_int_equal(count[c], 1000);
  free(lab);
  mixp_tensor_release(x);
  mixp_tensor_release(y);
  mixp_loader_destroy(l);

  /* a gzip stream cut short is reported as corrupt, naming the file */
  FILE *f = fopen(FASHION_DIR "/t10k-images-idx3-ubyte.gz", "rb");
  assert_non_null(f);
  unsigned char head[4000];
  size_t got = fread(head, 1, sizeof head, f);
  fclose(f);
  assert_int_equal(got, sizeof head);
  const char *cut = write_file("cut-images.gz", head, sizeof head);
  mixp_dataset *d = NULL;
  MT_FAILS(mixp_dataset_idx_open(s, cut, FASHION_DIR "/t10k-labels-idx1-ubyte.gz", &d),
           MIXP_ERR_CORRUPT, cut);
  assert_non_null(strstr(mixp_last_error(), "truncated"));
  /* a damaged gzip stream too */
  head[3000] ^= 0xff;
  head[3001] ^= 0x55;
  const char *bad = write_file("bad-images.gz", head, sizeof head);
  MT_FAILS(mixp_dataset_idx_open(s, bad, FASHION_DIR "/t10k-labels-idx1-ubyte.gz", &d),
           MIXP_ERR_CORRUPT, bad);
  assert_null(d);
  mixp_dataset_destroy(tr);
  mixp_dataset_destroy(te);
  mixp_session_destroy(s);
}

/* ---- synthetic ------------------------------------------------------------------------ */

static void test_synthetic_defaults(void **state) {
  (void)state;
  mixp_synthetic_options o;
  memset(&o, 0, sizeof o);
  mixp_synthetic_options_init(&o);
  assert_int_equal(o.struct_size, sizeof o);
  assert_int_equal(o.num_samples, 4096);
  assert_int_equal(o.channels, 1);
  assert_int_equal(o.height, 28);
  assert_int_equal(o.width, 28);
  assert_int_equal(o.num_classes, 10);
  assert_int_equal(o.seed, 1);
  assert_true(o.noise == 0.35);
  mixp_synthetic_options_init(NULL);

  mixp_session *s = mt_session();
  mixp_dataset *d = NULL;
  MT_OK(mixp_dataset_synthetic(s, &o, &d));
  assert_int_equal(mixp_dataset_size(d), 4096);
  assert_int_equal(mixp_dataset_num_classes(d), 10);
  int64_t shape[MIXP_MAX_DIMS];
  int nd = 0;
  MT_OK(mixp_dataset_sample_shape(d, shape, &nd));
  assert_int_equal(nd, 3);
  assert_int_equal(shape[0], 1);
  assert_int_equal(shape[1], 28);
  assert_int_equal(shape[2], 28);
  mixp_dataset_destroy(d);
  /* NULL options mean the defaults */
  MT_OK(mixp_dataset_synthetic(s, NULL, &d));
  assert_int_equal(mixp_dataset_size(d), 4096);
  mixp_dataset_destroy(d);
  mixp_session_destroy(s);
}

static void test_synthetic_determinism(void **state) {
  (void)state;
  mixp_session *s = mt_session();
  enum { N = 300, C = 2, H = 3, W = 5, NUMEL = C * H * W };
  mixp_dataset *a = synthetic(s, N, C, H, W, 4, 7, 0.2);
  mixp_dataset *b = synthetic(s, N, C, H, W, 4, 7, 0.2);
  mixp_dataset *c = synthetic(s, N, C, H, W, 4, 8, 0.2);
  double *pa = malloc(N * NUMEL * sizeof(double)), *pb = malloc(N * NUMEL * sizeof(double)),
         *pc = malloc(N * NUMEL * sizeof(double));
  int64_t la[N], lb[N], lc[N];
  dump(a, pa, la);
  dump(b, pb, lb);
  dump(c, pc, lc);
  assert_memory_equal(pa, pb, N * NUMEL * sizeof(double));
  assert_memory_equal(la, lb, sizeof la);
  assert_memory_not_equal(pa, pc, N * NUMEL * sizeof(double));
  assert_memory_not_equal(la, lc, sizeof la);
  /* U8 pixels, labels in range, every class present */
  int seen[4] = {0};
  for (int i = 0; i < N; ++i) {
    assert_in_range(la[i], 0, 3);
    seen[la[i]] = 1;
  }
  for (int k = 0; k < 4; ++k) assert_true(seen[k]);
  for (int i = 0; i < N * NUMEL; ++i) {
    assert_true(pa[i] >= 0 && pa[i] <= 255);
    assert_true(pa[i] == floor(pa[i]));
  }
  /* the same with a different thread count */
  mixp_session_options so;
  mixp_session_options_init(&so);
  so.num_threads = 1;
  mixp_session *s1 = NULL;
  MT_OK(mixp_session_create(&so, &s1));
  mixp_dataset *a1 = synthetic(s1, N, C, H, W, 4, 7, 0.2);
  dump(a1, pb, lb);
  assert_memory_equal(pa, pb, N * NUMEL * sizeof(double));
  assert_memory_equal(la, lb, sizeof la);
  mixp_dataset_destroy(a1);
  mixp_session_destroy(s1);
  free(pa);
  free(pb);
  free(pc);
  mixp_dataset_destroy(a);
  mixp_dataset_destroy(b);
  mixp_dataset_destroy(c);
  mixp_session_destroy(s);
}

static void test_synthetic_structure(void **state) {
  (void)state;
  mixp_session *s = mt_session();
  enum { N = 200, NUMEL = 16 };
  /* without noise every sample is exactly its class prototype, and the
   * prototypes are shared between seeds (a train/test split of one task) */
  mixp_dataset *a = synthetic(s, N, 1, 4, 4, 3, 11, 0.0);
  mixp_dataset *b = synthetic(s, N, 1, 4, 4, 3, 12, 0.0);
  double pa[N * NUMEL], pb[N * NUMEL];
  int64_t la[N], lb[N];
  dump(a, pa, la);
  dump(b, pb, lb);
  double proto[3][NUMEL];
  int have[3] = {0};
  for (int i = 0; i < N; ++i) {
    int k = (int)la[i];
    if (!have[k]) memcpy(proto[k], pa + i * NUMEL, sizeof proto[k]);
    have[k] = 1;
    assert_memory_equal(proto[k], pa + i * NUMEL, sizeof proto[k]);
  }
  for (int i = 0; i < N; ++i)
    if (have[lb[i]]) assert_memory_equal(proto[lb[i]], pb + i * NUMEL, sizeof proto[0]);
  assert_memory_not_equal(proto[0], proto[1], sizeof proto[0]);
  /* with noise the samples spread around the prototype: mean absolute
   * deviation of clamped N(0, (0.1*255)^2) noise is about 20 */
  mixp_dataset *n = synthetic(s, N, 1, 4, 4, 3, 11, 0.1);
  double pn[N * NUMEL];
  int64_t ln[N];
  dump(n, pn, ln);
  assert_memory_equal(la, ln, sizeof la);
  double dev = 0;
  for (int i = 0; i < N * NUMEL; ++i) dev += fabs(pn[i] - pa[i]);
  dev /= N * NUMEL;
  assert_true(dev > 10 && dev < 25);
  mixp_dataset_destroy(a);
  mixp_dataset_destroy(b);
  mixp_dataset_destroy(n);
  mixp_session_destroy(s);
}

static void test_synthetic_misuse(void **state) {
  (void)state;
  mixp_session *s = mt_session();
  mixp_synthetic_options o;
  mixp_dataset *d = NULL;
  mixp_synthetic_options_init(&o);
  MT_FAILS(mixp_dataset_synthetic(NULL, &o, &d), MIXP_ERR_INVALID_ARGUMENT, "session is NULL");
  MT_FAILS(mixp_dataset_synthetic(s, &o, NULL), MIXP_ERR_INVALID_ARGUMENT, "out is NULL");
#define BAD(field, value, needle)                                                        \
  do {                                                                                   \
    mixp_synthetic_options_init(&o);                                                     \
    o.field = value;                                                                     \
    MT_FAILS(mixp_dataset_synthetic(s, &o, &d), MIXP_ERR_INVALID_ARGUMENT, needle);      \
  } while (0)
  BAD(num_samples, 0, "num_samples must be >= 1, got 0");
  BAD(num_samples, -5, "num_samples");
  BAD(channels, 0, "channels");
  BAD(height, -1, "height");
  BAD(width, 0, "width");
  BAD(num_classes, 0, "num_classes");
  BAD(noise, -0.5, "noise must be finite and >= 0");
  BAD(noise, NAN, "noise");
  BAD(noise, INFINITY, "noise");
  BAD(num_samples, INT64_MAX / 2, "limit");
  BAD(struct_size, 0, "struct_size is 0");
  BAD(struct_size, sizeof(o) + 8, "mixp_synthetic_options_init");
#undef BAD
  assert_null(d);
  mixp_session_destroy(s);
}

static void test_dataset_query_misuse(void **state) {
  (void)state;
  mixp_session *s = mt_session();
  mixp_dataset *d = synthetic(s, 4, 1, 2, 2, 2, 5, 0.1);
  int64_t shape[MIXP_MAX_DIMS];
  int nd = 0;
  assert_int_equal(mixp_dataset_size(NULL), -1);
  assert_non_null(strstr(mixp_last_error(), "mixp_dataset_size: dataset is NULL"));
  assert_int_equal(mixp_dataset_num_classes(NULL), -1);
  assert_non_null(strstr(mixp_last_error(), "mixp_dataset_num_classes: dataset is NULL"));
  MT_FAILS(mixp_dataset_sample_shape(NULL, shape, &nd), MIXP_ERR_INVALID_ARGUMENT,
           "dataset is NULL");
  MT_FAILS(mixp_dataset_sample_shape(d, NULL, &nd), MIXP_ERR_INVALID_ARGUMENT, "shape is NULL");
  MT_FAILS(mixp_dataset_sample_shape(d, shape, NULL), MIXP_ERR_INVALID_ARGUMENT, "ndim is NULL");
  /* a pointer that is not a dataset */
  uint64_t junk[8] = {0};
  assert_int_equal(mixp_dataset_size((const mixp_dataset *)junk), -1);
  assert_non_null(strstr(mixp_last_error(), "not a live mixp_dataset"));
  mixp_dataset_destroy(NULL);
  mixp_dataset_destroy(d);
  mixp_session_destroy(s);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_idx_plain),
      cmocka_unit_test(test_idx_corrupt),
      cmocka_unit_test(test_idx_missing),
      cmocka_unit_test(test_idx_misuse),
      cmocka_unit_test(test_fashion_mnist_layout),
      cmocka_unit_test(test_fashion_mnist_real),
      cmocka_unit_test(test_synthetic_defaults),
      cmocka_unit_test(test_synthetic_determinism),
      cmocka_unit_test(test_synthetic_structure),
      cmocka_unit_test(test_synthetic_misuse),
      cmocka_unit_test(test_dataset_query_misuse),
  };
  return cmocka_run_group_tests(tests, setup_dir, teardown_dir);
}
