/* The character-level text dataset (vocabulary, windows, next-token
 * targets through a loader), dataset subsets, NCHW batches of synthetic
 * images of any shape, and misuse of these functions. */
#include <unistd.h>

#include "test_util.h"

static const char kText[] = "abracadabra, cab!\n";

/* Writes `text` to a fresh temporary file; returns its path (from a small
 * ring of buffers, so a few paths stay valid at once). */
static const char *write_temp(const char *text, size_t n) {
  static char paths[4][64];
  static int next = 0;
  char *path = paths[next++ % 4];
  strcpy(path, "/tmp/mixp_text_XXXXXX");
  int fd = mkstemp(path);
  assert_true(fd >= 0);
  assert_int_equal(write(fd, text, n), (ssize_t)n);
  close(fd);
  return path;
}

static mixp_loader *make_loader(mixp_dataset *d, int64_t batch, int shuffle) {
  mixp_loader_options o;
  mixp_loader_options_init(&o);
  o.batch_size = batch;
  o.shuffle = shuffle;
  mixp_loader *l = NULL;
  MT_OK(mixp_loader_create(d, &o, &l));
  return l;
}

static void expect_shape(const mixp_tensor *t, const int64_t *want, int ndim) {
  int64_t shape[MIXP_MAX_DIMS];
  int nd = -1;
  MT_OK(mixp_tensor_shape(t, shape, MIXP_MAX_DIMS, &nd));
  assert_int_equal(nd, ndim);
  for (int i = 0; i < ndim; ++i) assert_int_equal(shape[i], want[i]);
}

static void test_text_vocab_and_windows(void **state) {
  (void)state;
  mixp_session *s = mt_session();
  const size_t len = strlen(kText);
  const char *path = write_temp(kText, len);
  const int64_t T = 4;
  mixp_dataset *d = NULL;
  MT_OK(mixp_dataset_text(s, path, T, &d));
  assert_int_equal(mixp_dataset_size(d), (int64_t)len - T);

  /* distinct bytes, sorted: "\n", " ", "!", ",", "a", "b", "c", "d", "r" */
  unsigned char vocab[256];
  int nv = 0;
  MT_OK(mixp_dataset_vocab(d, vocab, 256, &nv));
  assert_int_equal(nv, 9);
  assert_int_equal(mixp_dataset_num_classes(d), 9);
  assert_memory_equal(vocab, "\n !,abcdr", 9);
  int64_t shape[MIXP_MAX_DIMS];
  int nd = 0;
  MT_OK(mixp_dataset_sample_shape(d, shape, &nd));
  assert_int_equal(nd, 1);
  assert_int_equal(shape[0], T);

  /* In order: batch i holds windows 3i..3i+2; decoding gives the text back. */
  mixp_loader *l = make_loader(d, 3, 0);
  int64_t seen = 0;
  mixp_tensor *x = NULL, *y = NULL;
  while (mixp_loader_next(l, &x, &y) == MIXP_OK) {
    assert_int_equal(mixp_tensor_dtype(x), MIXP_I64);
    assert_int_equal(mixp_tensor_dtype(y), MIXP_I64);
    const int64_t b = mixp_tensor_dim(x, 0);
    const int64_t want[2] = {b, T};
    expect_shape(x, want, 2);
    expect_shape(y, want, 2);
    int64_t xv[3 * 4], yv[3 * 4];
    MT_OK(mixp_tensor_to_host(x, xv, (size_t)(b * T) * sizeof(int64_t)));
    MT_OK(mixp_tensor_to_host(y, yv, (size_t)(b * T) * sizeof(int64_t)));
    for (int64_t i = 0; i < b; ++i)
      for (int64_t t = 0; t < T; ++t) {
        assert_true(xv[i * T + t] >= 0 && xv[i * T + t] < nv);
        assert_int_equal(vocab[xv[i * T + t]], (unsigned char)kText[seen + i + t]);
        assert_int_equal(vocab[yv[i * T + t]], (unsigned char)kText[seen + i + t + 1]);
      }
    seen += b;
    mixp_tensor_release(x);
    mixp_tensor_release(y);
  }
  assert_int_equal(seen, (int64_t)len - T);
  mixp_loader_destroy(l);

  /* A subset: windows 5..9, same vocabulary, same targets. */
  mixp_dataset *sub = NULL;
  MT_OK(mixp_dataset_subset(d, 5, 5, &sub));
  assert_int_equal(mixp_dataset_size(sub), 5);
  assert_int_equal(mixp_dataset_num_classes(sub), 9);
  unsigned char vocab2[256];
  MT_OK(mixp_dataset_vocab(sub, vocab2, 256, &nv));
  assert_memory_equal(vocab2, vocab, 9);
  l = make_loader(sub, 8, 0);
  MT_OK(mixp_loader_next(l, &x, &y));
  int64_t xv[5 * 4], yv[5 * 4];
  MT_OK(mixp_tensor_to_host(x, xv, sizeof xv));
  MT_OK(mixp_tensor_to_host(y, yv, sizeof yv));
  for (int64_t i = 0; i < 5; ++i) {
    assert_int_equal(vocab[xv[i * T]], (unsigned char)kText[5 + i]);
    assert_int_equal(vocab[yv[i * T + T - 1]], (unsigned char)kText[5 + i + T]);
  }
  mixp_tensor_release(x);
  mixp_tensor_release(y);
  mixp_loader_destroy(l);
  mixp_dataset_destroy(sub);

  /* Shuffled: every window once per epoch. */
  l = make_loader(d, 64, 1);
  MT_OK(mixp_loader_next(l, &x, &y));
  assert_int_equal(mixp_tensor_dim(x, 0), (int64_t)len - T);
  mixp_tensor_release(x);
  mixp_tensor_release(y);
  assert_int_equal(mixp_loader_next(l, &x, &y), MIXP_DONE);
  mixp_loader_destroy(l);

  /* block_size = L - 1 leaves exactly one sample */
  mixp_dataset *one = NULL;
  MT_OK(mixp_dataset_text(s, path, (int64_t)len - 1, &one));
  assert_int_equal(mixp_dataset_size(one), 1);
  mixp_dataset_destroy(one);

  mixp_dataset_destroy(d);
  unlink(path);
  mixp_session_destroy(s);
}

/* Every byte value is a token; ids follow byte order. */
static void test_text_all_bytes(void **state) {
  (void)state;
  mixp_session *s = mt_session();
  unsigned char all[512];
  for (int i = 0; i < 512; ++i) all[i] = (unsigned char)(255 - i % 256);
  const char *path = write_temp((const char *)all, sizeof all);
  mixp_dataset *d = NULL;
  MT_OK(mixp_dataset_text(s, path, 16, &d));
  assert_int_equal(mixp_dataset_num_classes(d), 256);
  unsigned char vocab[256];
  int nv = 0;
  MT_OK(mixp_dataset_vocab(d, vocab, 256, &nv));
  for (int i = 0; i < 256; ++i) assert_int_equal(vocab[i], i);
  MT_FAILS(mixp_dataset_vocab(d, vocab, 255, &nv), MIXP_ERR_INVALID_ARGUMENT, "capacity 255");
  mixp_dataset_destroy(d);
  unlink(path);
  mixp_session_destroy(s);
}

/* Synthetic images of any C x H x W come out as NCHW batches; subsets of
 * image datasets keep samples and labels together. */
static void test_synthetic_images_nchw_and_subset(void **state) {
  (void)state;
  mixp_session *s = mt_session();
  mixp_synthetic_options o;
  mixp_synthetic_options_init(&o);
  o.num_samples = 10;
  o.channels = 3;
  o.height = 8;
  o.width = 5;
  mixp_dataset *d = NULL, *sub = NULL;
  MT_OK(mixp_dataset_synthetic(s, &o, &d));
  mixp_loader *l = make_loader(d, 4, 0);
  mixp_tensor *x = NULL, *y = NULL;
  MT_OK(mixp_loader_next(l, &x, &y));
  const int64_t want[4] = {4, 3, 8, 5}, wy[1] = {4};
  expect_shape(x, want, 4);
  expect_shape(y, wy, 1);
  float full[4 * 120];
  int64_t full_y[4];
  MT_OK(mixp_tensor_to_host(x, full, sizeof full));
  MT_OK(mixp_tensor_to_host(y, full_y, sizeof full_y));
  mixp_tensor_release(x);
  mixp_tensor_release(y);
  mixp_loader_destroy(l);

  MT_OK(mixp_dataset_subset(d, 2, 3, &sub));
  assert_int_equal(mixp_dataset_size(sub), 3);
  l = make_loader(sub, 4, 0);
  MT_OK(mixp_loader_next(l, &x, &y));
  const int64_t want3[4] = {3, 3, 8, 5};
  expect_shape(x, want3, 4);
  float part[3 * 120];
  int64_t part_y[3];
  MT_OK(mixp_tensor_to_host(x, part, sizeof part));
  MT_OK(mixp_tensor_to_host(y, part_y, sizeof part_y));
  assert_memory_equal(part, full + 2 * 120, 2 * 120 * sizeof(float));
  assert_int_equal(part_y[0], full_y[2]);
  assert_int_equal(part_y[1], full_y[3]);
  mixp_tensor_release(x);
  mixp_tensor_release(y);
  mixp_loader_destroy(l);
  mixp_dataset_destroy(sub);
  mixp_dataset_destroy(d);
  mixp_session_destroy(s);
}

static void test_misuse(void **state) {
  (void)state;
  mixp_session *s = mt_session();
  const char *path = write_temp(kText, strlen(kText));
  mixp_dataset *d = NULL;
  MT_FAILS(mixp_dataset_text(NULL, path, 4, &d), MIXP_ERR_INVALID_ARGUMENT, "session");
  MT_FAILS(mixp_dataset_text(s, NULL, 4, &d), MIXP_ERR_INVALID_ARGUMENT, "path is NULL");
  MT_FAILS(mixp_dataset_text(s, path, 0, &d), MIXP_ERR_INVALID_ARGUMENT, "block_size must be >= 1");
  MT_FAILS(mixp_dataset_text(s, path, 4, NULL), MIXP_ERR_INVALID_ARGUMENT, "out is NULL");
  MT_FAILS(mixp_dataset_text(s, path, (int64_t)strlen(kText), &d), MIXP_ERR_INVALID_ARGUMENT,
           "needs more than that many");
  MT_FAILS(mixp_dataset_text(s, "/nonexistent/mixp.txt", 4, &d), MIXP_ERR_IO, "cannot open");
  const char *empty = write_temp("", 0);
  MT_FAILS(mixp_dataset_text(s, empty, 1, &d), MIXP_ERR_INVALID_ARGUMENT, "has 0 bytes");
  unlink(empty);
  assert_null(d);

  MT_OK(mixp_dataset_text(s, path, 4, &d));
  unsigned char vocab[256];
  int nv = -1;
  MT_FAILS(mixp_dataset_vocab(NULL, vocab, 256, &nv), MIXP_ERR_INVALID_ARGUMENT, "dataset is NULL");
  MT_FAILS(mixp_dataset_vocab(d, NULL, 256, &nv), MIXP_ERR_INVALID_ARGUMENT, "bytes is NULL");
  MT_FAILS(mixp_dataset_vocab(d, vocab, 256, NULL), MIXP_ERR_INVALID_ARGUMENT, "size is NULL");
  assert_int_equal(nv, -1);

  mixp_dataset *sub = NULL;
  const int64_t n = mixp_dataset_size(d);
  MT_FAILS(mixp_dataset_subset(NULL, 0, 1, &sub), MIXP_ERR_INVALID_ARGUMENT, "dataset is NULL");
  MT_FAILS(mixp_dataset_subset(d, -1, 1, &sub), MIXP_ERR_INVALID_ARGUMENT, "start -1");
  MT_FAILS(mixp_dataset_subset(d, n, 1, &sub), MIXP_ERR_INVALID_ARGUMENT, "is outside");
  MT_FAILS(mixp_dataset_subset(d, 0, 0, &sub), MIXP_ERR_INVALID_ARGUMENT, "count 0");
  MT_FAILS(mixp_dataset_subset(d, 1, n, &sub), MIXP_ERR_INVALID_ARGUMENT, "count");
  MT_FAILS(mixp_dataset_subset(d, 0, 1, NULL), MIXP_ERR_INVALID_ARGUMENT, "out is NULL");
  assert_null(sub);

  mixp_synthetic_options o;
  mixp_synthetic_options_init(&o);
  o.num_samples = 4;
  mixp_dataset *img = NULL;
  MT_OK(mixp_dataset_synthetic(s, &o, &img));
  MT_FAILS(mixp_dataset_vocab(img, vocab, 256, &nv), MIXP_ERR_INVALID_ARGUMENT, "not a text dataset");
  mixp_dataset_destroy(img);
  mixp_dataset_destroy(d);
  unlink(path);
  mixp_session_destroy(s);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_text_vocab_and_windows),
      cmocka_unit_test(test_text_all_bytes),
      cmocka_unit_test(test_synthetic_images_nchw_and_subset),
      cmocka_unit_test(test_misuse),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
