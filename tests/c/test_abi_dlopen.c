/* The C ABI as a foreign runtime sees it: dlopen libmixp.so.0 by path,
 * resolve every entry point with dlsym, and train a small classifier through
 * the function pointers alone. No mixp function is called directly here;
 * the header is included only for its types and constants (__typeof__ is
 * unevaluated, so it references no symbol). */
#include <dlfcn.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "mixp/mixp.h"

#define FN(name) __typeof__(&mixp_##name) name

static struct api {
  void *handle;
  FN(version_number);
  FN(last_error);
  FN(last_status);
  FN(session_options_init);
  FN(session_create);
  FN(session_destroy);
  FN(tensor_from_host);
  FN(tensor_to_host);
  FN(tensor_release);
  FN(tensor_item);
  FN(tensor_numel);
  FN(linear_create);
  FN(module_forward);
  FN(module_num_parameters);
  FN(module_parameter);
  FN(module_destroy);
  FN(optimizer_options_init);
  FN(optimizer_create);
  FN(optimizer_step);
  FN(optimizer_zero_grad);
  FN(optimizer_destroy);
  FN(cross_entropy);
  FN(backward);
  FN(argmax);
} api;

#define CHECK_OK(call)                                                                   \
  do {                                                                                   \
    mixp_status st_ = (call);                                                            \
    if (st_ != MIXP_OK) {                                                                \
      print_error("%s failed: %d %s\n", #call, (int)st_, api.last_error());              \
      fail();                                                                            \
    }                                                                                    \
  } while (0)

static int ends_with(const char *s, const char *suffix) {
  size_t n = strlen(s), m = strlen(suffix);
  return n >= m && strcmp(s + n - m, suffix) == 0;
}

#define LOAD(name)                                                                  \
  do {                                                                              \
    void *p_ = dlsym(api.handle, "mixp_" #name);                                    \
    if (!p_) {                                                                      \
      print_error("dlsym(mixp_%s) failed: %s\n", #name, dlerror());                 \
      return -1;                                                                    \
    }                                                                               \
    memcpy(&api.name, &p_, sizeof p_);                                              \
  } while (0)

static int open_library(void **state) {
  (void)state;
  const char *path = MIXP_TEST_LIBRARY_PATH;
  if (!ends_with(path, "libmixp.so.0")) {
    print_error("MIXP_TEST_LIBRARY_PATH \"%s\" is not the SONAME file libmixp.so.0\n", path);
    return -1;
  }
  api.handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!api.handle) {
    print_error("dlopen(%s): %s\n", path, dlerror());
    return -1;
  }
  LOAD(version_number);
  LOAD(last_error);
  LOAD(last_status);
  LOAD(session_options_init);
  LOAD(session_create);
  LOAD(session_destroy);
  LOAD(tensor_from_host);
  LOAD(tensor_to_host);
  LOAD(tensor_release);
  LOAD(tensor_item);
  LOAD(tensor_numel);
  LOAD(linear_create);
  LOAD(module_forward);
  LOAD(module_num_parameters);
  LOAD(module_parameter);
  LOAD(module_destroy);
  LOAD(optimizer_options_init);
  LOAD(optimizer_create);
  LOAD(optimizer_step);
  LOAD(optimizer_zero_grad);
  LOAD(optimizer_destroy);
  LOAD(cross_entropy);
  LOAD(backward);
  LOAD(argmax);
  return 0;
}

static int close_library(void **state) {
  (void)state;
  if (api.handle) dlclose(api.handle);
  api.handle = NULL;
  return 0;
}

static void test_symbols_and_version(void **state) {
  (void)state;
  assert_int_equal(api.version_number(), MIXP_VERSION_NUMBER);
  /* Errors come back through the pointers too. */
  assert_int_equal(api.session_create(NULL, NULL), MIXP_ERR_INVALID_ARGUMENT);
  assert_int_equal(api.last_status(), MIXP_ERR_INVALID_ARGUMENT);
  assert_non_null(strstr(api.last_error(), "mixp_session_create"));
}

/* Two Gaussian-ish blobs in 2-D, labels 0/1, from a fixed LCG. */
static void make_data(float *x, int64_t *y, int n) {
  uint64_t st = 12345;
  for (int i = 0; i < n; ++i) {
    float noise[2];
    for (int k = 0; k < 2; ++k) {
      double u = 0;
      for (int r = 0; r < 4; ++r) { /* sum of uniforms: roughly normal */
        st = st * 6364136223846793005ull + 1442695040888963407ull;
        u += (double)(st >> 11) / 9007199254740992.0;
      }
      noise[k] = (float)(u - 2.0);
    }
    int label = i % 2;
    float c = label ? 1.5f : -1.5f;
    x[2 * i] = c + noise[0];
    x[2 * i + 1] = -c + noise[1];
    y[i] = label;
  }
}

static double step_loss(mixp_module *m, mixp_tensor *xb, mixp_tensor *yb, mixp_optimizer *opt,
                        int train) {
  mixp_tensor *logits = NULL, *loss = NULL;
  CHECK_OK(api.module_forward(m, xb, &logits));
  CHECK_OK(api.cross_entropy(logits, yb, MIXP_REDUCTION_MEAN, MIXP_IGNORE_INDEX_DEFAULT, &loss));
  double v = 0;
  CHECK_OK(api.tensor_item(loss, &v));
  if (train) {
    CHECK_OK(api.optimizer_zero_grad(opt));
    CHECK_OK(api.backward(loss, NULL));
    CHECK_OK(api.optimizer_step(opt));
  }
  api.tensor_release(loss);
  api.tensor_release(logits);
  return v;
}

static void test_train_classifier(void **state) {
  (void)state;
  enum { N = 128, STEPS = 50 };
  mixp_session_options so;
  api.session_options_init(&so);
  so.seed = 7;
  so.num_threads = 1;
  mixp_session *s = NULL;
  CHECK_OK(api.session_create(&so, &s));

  float xv[N * 2];
  int64_t yv[N];
  make_data(xv, yv, N);
  int64_t xs[2] = {N, 2}, ys[1] = {N};
  mixp_tensor *xb = NULL, *yb = NULL;
  CHECK_OK(api.tensor_from_host(s, xv, sizeof xv, MIXP_F32, xs, 2, &xb));
  CHECK_OK(api.tensor_from_host(s, yv, sizeof yv, MIXP_I64, ys, 1, &yb));

  mixp_module *m = NULL;
  CHECK_OK(api.linear_create(s, 2, 2, 1, MIXP_F32, &m));
  int np = api.module_num_parameters(m);
  assert_int_equal(np, 2);
  mixp_tensor *params[2] = {NULL, NULL};
  for (int i = 0; i < np; ++i) CHECK_OK(api.module_parameter(m, i, &params[i]));

  mixp_optimizer_options oo;
  api.optimizer_options_init(&oo, MIXP_OPTIM_SGD);
  oo.lr = 0.5;
  mixp_optimizer *opt = NULL;
  CHECK_OK(api.optimizer_create(s, params, np, &oo, &opt));

  double first = step_loss(m, xb, yb, opt, 0);
  double last = first;
  for (int i = 0; i < STEPS; ++i) last = step_loss(m, xb, yb, opt, 1);
  last = step_loss(m, xb, yb, opt, 0);
  print_message("dlopen training: loss %.4f -> %.4f after %d SGD steps\n", first, last, STEPS);
  assert_true(isfinite(last));
  assert_true(last < 0.5 * first);
  assert_true(last < 0.3);

  /* Accuracy on the training set. */
  mixp_tensor *logits = NULL, *pred = NULL;
  CHECK_OK(api.module_forward(m, xb, &logits));
  CHECK_OK(api.argmax(logits, 1, 0, &pred));
  assert_int_equal(api.tensor_numel(pred), N);
  int64_t pv[N];
  CHECK_OK(api.tensor_to_host(pred, pv, sizeof pv));
  int correct = 0;
  for (int i = 0; i < N; ++i) correct += pv[i] == yv[i];
  assert_true(correct >= N * 9 / 10);
  api.tensor_release(pred);
  api.tensor_release(logits);

  api.optimizer_destroy(opt);
  for (int i = 0; i < np; ++i) api.tensor_release(params[i]);
  api.module_destroy(m);
  api.tensor_release(xb);
  api.tensor_release(yb);
  api.session_destroy(s);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_symbols_and_version),
      cmocka_unit_test(test_train_classifier),
  };
  return cmocka_run_group_tests(tests, open_library, close_library);
}
