/* Helpers shared by the layer suites (test_layers.c, test_layers_seq.c). */
#ifndef MIXP_TEST_LAYERS_UTIL_H
#define MIXP_TEST_LAYERS_UTIL_H

#include "test_util.h"

static inline mixp_tensor *param_named(const mixp_module *m, const char *name) {
  int n = mixp_module_num_parameters(m);
  for (int i = 0; i < n; ++i)
    if (strcmp(mixp_module_parameter_name(m, i), name) == 0) {
      mixp_tensor *t = NULL;
      MT_OK(mixp_module_parameter(m, i, &t));
      return t;
    }
  print_error("no parameter %s\n", name);
  fail();
  return NULL;
}

static inline mixp_tensor *buffer_named(const mixp_module *m, const char *name) {
  int n = mixp_module_num_buffers(m);
  for (int i = 0; i < n; ++i)
    if (strcmp(mixp_module_buffer_name(m, i), name) == 0) {
      mixp_tensor *t = NULL;
      MT_OK(mixp_module_buffer(m, i, &t));
      return t;
    }
  print_error("no buffer %s\n", name);
  fail();
  return NULL;
}

static inline void expect_shape(const mixp_tensor *t, const int64_t *want, int ndim) {
  int64_t shape[MIXP_MAX_DIMS];
  int nd = -1;
  MT_OK(mixp_tensor_shape(t, shape, MIXP_MAX_DIMS, &nd));
  assert_int_equal(nd, ndim);
  for (int i = 0; i < ndim; ++i) assert_int_equal(shape[i], want[i]);
}

static inline void expect_names(const mixp_module *m, const char *const *names, int n, int buffers) {
  assert_int_equal(buffers ? mixp_module_num_buffers(m) : mixp_module_num_parameters(m), n);
  for (int i = 0; i < n; ++i)
    assert_string_equal(buffers ? mixp_module_buffer_name(m, i) : mixp_module_parameter_name(m, i),
                        names[i]);
}

/* Every value in [-bound, bound], the extremes near the bounds, and (for
 * many values) the uniform's mean and variance. */
static inline void check_uniform(const mixp_tensor *t, double bound) {
  int64_t n = mixp_tensor_numel(t);
  double *v = mt_values(t), lo = 1e300, hi = -1e300, mean = 0, var = 0;
  for (int64_t i = 0; i < n; ++i) {
    assert_true(v[i] >= -bound && v[i] <= bound);
    lo = v[i] < lo ? v[i] : lo;
    hi = v[i] > hi ? v[i] : hi;
    mean += v[i] / (double)n;
  }
  for (int64_t i = 0; i < n; ++i) var += (v[i] - mean) * (v[i] - mean) / (double)n;
  assert_true(lo < -0.8 * bound && hi > 0.8 * bound);
  if (n >= 1000) {
    assert_true(fabs(mean) < 6.0 * bound / sqrt(3.0 * (double)n));
    assert_true(fabs(var / (bound * bound / 3.0) - 1.0) < 0.1);
  }
  free(v);
}

static inline void check_constant(const mixp_tensor *t, double c) {
  int64_t n = mixp_tensor_numel(t);
  double *v = mt_values(t);
  for (int64_t i = 0; i < n; ++i) assert_true(v[i] == c);
  free(v);
}

static inline mixp_tensor *forward(mixp_module *m, const mixp_tensor *x) {
  mixp_tensor *y = NULL;
  MT_OK(mixp_module_forward(m, x, &y));
  return y;
}

static inline void assert_same_values(const mixp_tensor *a, const mixp_tensor *b) {
  int64_t n = mixp_tensor_numel(a);
  assert_int_equal(n, mixp_tensor_numel(b));
  double *va = mt_values(a), *vb = mt_values(b);
  assert_memory_equal(va, vb, (size_t)n * sizeof(double));
  free(va);
  free(vb);
}

#endif /* MIXP_TEST_LAYERS_UTIL_H */
