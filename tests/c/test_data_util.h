/* Shared helpers of the dataset and loader suites: a scratch directory for
 * files the tests write, loader and dataset builders, and readers. */
#ifndef MIXP_TEST_DATA_UTIL_H
#define MIXP_TEST_DATA_UTIL_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "test_util.h"

/* ---- a scratch directory and IDX writers ------------------------------------- */

static char g_dir[256];
static char g_files[64][320];
static int g_nfiles;

static inline int setup_dir(void **state) {
  (void)state;
  strcpy(g_dir, "/tmp/mixp_test_data_XXXXXX");
  return mkdtemp(g_dir) ? 0 : -1;
}

static inline int teardown_dir(void **state) {
  (void)state;
  for (int i = 0; i < g_nfiles; ++i) unlink(g_files[i]);
  rmdir(g_dir);
  return 0;
}

/* Writes `n` bytes to <dir>/<name> and returns the path (static storage). */
static inline const char *write_file(const char *name, const unsigned char *bytes, size_t n) {
  char path[320];
  snprintf(path, sizeof path, "%s/%s", g_dir, name);
  int known = 0;
  for (int i = 0; i < g_nfiles; ++i) known |= strcmp(g_files[i], path) == 0;
  if (!known) {
    assert_true(g_nfiles < 64);
    strcpy(g_files[g_nfiles++], path);
  }
  FILE *f = fopen(path, "wb");
  assert_non_null(f);
  if (n) assert_int_equal(fwrite(bytes, 1, n, f), n);
  fclose(f);
  for (int i = 0; i < g_nfiles; ++i)
    if (strcmp(g_files[i], path) == 0) return g_files[i];
  return NULL;
}

static inline size_t put_u32(unsigned char *p, uint32_t v) {
  p[0] = (unsigned char)(v >> 24);
  p[1] = (unsigned char)(v >> 16);
  p[2] = (unsigned char)(v >> 8);
  p[3] = (unsigned char)v;
  return 4;
}

/* An idx3 image file of n rows x cols images whose pixel k of image i is
 * pixel(i, k); `keep` truncates it (SIZE_MAX = whole). */
/* ---- small helpers --------------------------------------------------------------- */

static inline mixp_loader *make_loader(mixp_dataset *d, int64_t batch, int shuffle, int drop_last,
                                uint64_t seed, mixp_dtype dt, double scale, double mean,
                                double std) {
  mixp_loader_options o;
  mixp_loader_options_init(&o);
  o.batch_size = batch;
  o.shuffle = shuffle;
  o.drop_last = drop_last;
  o.seed = seed;
  o.dtype = dt;
  o.scale = scale;
  o.mean = mean;
  o.std = std;
  mixp_loader *l = NULL;
  MT_OK(mixp_loader_create(d, &o, &l));
  assert_non_null(l);
  return l;
}

static inline void expect_shape(const mixp_tensor *t, const int64_t *want, int ndim) {
  int64_t shape[MIXP_MAX_DIMS];
  int nd = -1;
  MT_OK(mixp_tensor_shape(t, shape, MIXP_MAX_DIMS, &nd));
  assert_int_equal(nd, ndim);
  for (int i = 0; i < ndim; ++i) assert_int_equal(shape[i], want[i]);
}

static inline void read_i64(const mixp_tensor *t, int64_t *dst, int64_t n) {
  assert_int_equal(mixp_tensor_dtype(t), MIXP_I64);
  assert_int_equal(mixp_tensor_numel(t), n);
  MT_OK(mixp_tensor_to_host(t, dst, (size_t)n * sizeof(int64_t)));
}

static inline mixp_dataset *synthetic(mixp_session *s, int64_t n, int64_t c, int64_t h, int64_t w,
                               int64_t classes, uint64_t seed, double noise) {
  mixp_synthetic_options o;
  mixp_synthetic_options_init(&o);
  o.num_samples = n;
  o.channels = c;
  o.height = h;
  o.width = w;
  o.num_classes = classes;
  o.seed = seed;
  o.noise = noise;
  mixp_dataset *d = NULL;
  MT_OK(mixp_dataset_synthetic(s, &o, &d));
  assert_non_null(d);
  return d;
}

/* All raw pixels (scale 1, mean 0, std 1, F64, in order) and labels. */
static inline void dump(mixp_dataset *d, double *pixels, int64_t *labels) {
  mixp_loader *l = make_loader(d, 1000000, 0, 0, 0, MIXP_F64, 1.0, 0.0, 1.0);
  mixp_tensor *x = NULL, *y = NULL;
  MT_OK(mixp_loader_next(l, &x, &y));
  int64_t n = mixp_dataset_size(d);
  MT_OK(mixp_tensor_to_host(x, pixels, (size_t)mixp_tensor_numel(x) * sizeof(double)));
  read_i64(y, labels, n);
  mixp_tensor_release(x);
  mixp_tensor_release(y);
  mixp_loader_destroy(l);
}

#endif /* MIXP_TEST_DATA_UTIL_H */
