/* Shared helpers of the CMocka suites: status assertions, tensor builders,
 * and a central-difference gradient checker that uses only the public API. */
#ifndef MIXP_TEST_UTIL_H
#define MIXP_TEST_UTIL_H

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

/* Asserts a call succeeds, printing mixp_last_error() when it does not. */
#define MT_OK(call)                                                              \
  do {                                                                           \
    mixp_status mt_st_ = (call);                                                 \
    if (mt_st_ != MIXP_OK) {                                                     \
      print_error("%s failed: %d %s\n", #call, (int)mt_st_, mixp_last_error()); \
      fail();                                                                    \
    }                                                                            \
  } while (0)

/* Asserts a call fails with `status` and that the message contains `needle`. */
#define MT_FAILS(call, status, needle)                                                   \
  do {                                                                                   \
    mixp_status mt_st_ = (call);                                                         \
    if (mt_st_ != (status)) {                                                            \
      print_error("%s returned %d, expected %d (%s)\n", #call, (int)mt_st_, (int)(status), \
                  mixp_last_error());                                                    \
      fail();                                                                            \
    }                                                                                    \
    if (strstr(mixp_last_error(), (needle)) == NULL) {                                   \
      print_error("%s: message \"%s\" lacks \"%s\"\n", #call, mixp_last_error(), (needle)); \
      fail();                                                                            \
    }                                                                                    \
  } while (0)

/* MT_FAILS, and the message also contains `n2`. */
#define MT_FAILS2(call, status, n1, n2)                                                  \
  do {                                                                                   \
    MT_FAILS(call, status, n1);                                                          \
    if (strstr(mixp_last_error(), (n2)) == NULL) {                                       \
      print_error("%s: message \"%s\" lacks \"%s\"\n", #call, mixp_last_error(), (n2)); \
      fail();                                                                            \
    }                                                                                    \
  } while (0)

/* The device the suite runs on: MIXP_TEST_DEVICE ("cpu" when unset). */
static inline const char *mt_device(void) {
  const char *dev = getenv("MIXP_TEST_DEVICE");
  return (dev && *dev) ? dev : "cpu";
}
static inline int mt_on_cpu(void) { return strcmp(mt_device(), "cpu") == 0; }

/* For tests that only make sense on the CPU backend (zero-copy host
 * borrowing, CPU-only checks): reported as skipped on any other device. */
#define mt_skip_unless_cpu()                                                    \
  do {                                                                          \
    if (!mt_on_cpu()) {                                                         \
      print_message("[  SKIPPED ] cpu only, suite runs on %s\n", mt_device()); \
      skip();                                                                   \
    }                                                                           \
  } while (0)

/* Under MIXP_TEST_DEVICE=cuda[:N] a suite whose device cannot be opened (no
 * plugin, driver or GPU) exits with 77 before any test runs, which CTest
 * reports as skipped (SKIP_RETURN_CODE 77 in tests/cuda.cmake): a GPU suite
 * must never pass by running on the CPU. */
__attribute__((constructor)) static void mt_device_gate(void) {
  if (mt_on_cpu()) return;
  mixp_session_options o;
  mixp_session_options_init(&o);
  o.device = mt_device();
  mixp_session *s = NULL;
  if (mixp_session_create(&o, &s) == MIXP_ERR_DEVICE) {
    printf("SKIPPED: device %s is unavailable: %s\n", o.device, mixp_last_error());
    fflush(stdout);
    exit(77);
  }
  mixp_session_destroy(s);
}

/* Opens a one-thread session on `dev` and returns the status (*out is NULL
 * on failure): for the suites that test device selection itself. */
static inline mixp_status mt_open_device(const char *dev, mixp_session **out) {
  mixp_session_options o;
  mixp_session_options_init(&o);
  o.device = dev;
  o.num_threads = 1;
  *out = NULL;
  return mixp_session_create(&o, out);
}

static inline mixp_session *mt_session(void) {
  mixp_session_options o;
  mixp_session_options_init(&o);
  o.seed = 1234;
  /* MIXP_TEST_THREADS lets a margin check run the suites at other thread
   * counts (results may depend on it; assertions must not). */
  const char *threads = getenv("MIXP_TEST_THREADS");
  o.num_threads = threads && *threads ? atoi(threads) : 2;
  o.device = mt_device();
  mixp_session *s = NULL;
  MT_OK(mixp_session_create(&o, &s));
  return s;
}

/* The fixtures of a suite whose tests share one mt_session() in *state
 * (cmocka_unit_test_setup_teardown or cmocka_run_group_tests). */
static inline int mt_setup_session(void **state) {
  *state = mt_session();
  return *state ? 0 : -1;
}
static inline int mt_teardown_session(void **state) {
  mixp_session_destroy((mixp_session *)*state);
  return 0;
}

/* An address no call hands out: a failed call must leave an out-parameter
 * set to it untouched. */
#define MT_SENTINEL ((mixp_tensor *)(uintptr_t)0x3a7)

/* A CPU session of exactly `threads` threads (the default device, any seed),
 * for tests that compare results across thread counts. */
static inline mixp_session *mt_session_threads(int threads) {
  mixp_session_options o;
  mixp_session_options_init(&o);
  o.num_threads = threads;
  mixp_session *s = NULL;
  MT_OK(mixp_session_create(&o, &s));
  return s;
}

/* The session's tensor bytes now (mixp_memory_stats_get). */
static inline uint64_t mt_current_bytes(mixp_session *s) {
  mixp_memory_stats st;
  memset(&st, 0, sizeof st);
  st.struct_size = sizeof st;
  MT_OK(mixp_memory_stats_get(s, &st));
  return st.current_bytes;
}

/* A tensor of dtype `dt` holding `vals` (doubles converted by a cast). */
static inline mixp_tensor *mt_tensor(mixp_session *s, mixp_dtype dt, const double *vals,
                                     const int64_t *shape, int ndim) {
  int64_t n = 1;
  for (int i = 0; i < ndim; ++i) n *= shape[i];
  mixp_tensor *t64 = NULL, *t = NULL;
  MT_OK(mixp_tensor_from_host(s, vals, (size_t)n * sizeof(double), MIXP_F64, shape, ndim, &t64));
  if (dt == MIXP_F64) return t64;
  MT_OK(mixp_cast(t64, dt, &t));
  mixp_tensor_release(t64);
  return t;
}

/* A 1-D leaf of n values that requires grad. */
static inline mixp_tensor *mt_param(mixp_session *s, mixp_dtype dt, const double *v, int64_t n) {
  int64_t shape[1] = {n};
  mixp_tensor *p = mt_tensor(s, dt, v, shape, 1);
  MT_OK(mixp_tensor_set_requires_grad(p, 1));
  return p;
}

/* Plain SGD (no momentum, no weight decay) over n parameters. */
static inline mixp_optimizer *mt_sgd(mixp_session *s, mixp_tensor **params, int n, double lr) {
  mixp_optimizer_options o;
  mixp_optimizer_options_init(&o, MIXP_OPTIM_SGD);
  o.lr = lr;
  mixp_optimizer *opt = NULL;
  MT_OK(mixp_optimizer_create(s, params, n, &o, &opt));
  return opt;
}

/* Reads any float tensor as doubles into a malloc'd array (caller frees). */
static inline double *mt_values(const mixp_tensor *t) {
  int64_t n = mixp_tensor_numel(t);
  mixp_tensor *t64 = NULL;
  MT_OK(mixp_cast(t, MIXP_F64, &t64));
  double *v = (double *)malloc((size_t)(n > 0 ? n : 1) * sizeof(double));
  MT_OK(mixp_tensor_to_host(t64, v, (size_t)n * sizeof(double)));
  mixp_tensor_release(t64);
  return v;
}

/* The values of p's gradient as doubles (malloc'd; p must have one). */
static inline double *mt_grad_values(const mixp_tensor *p) {
  mixp_tensor *g = NULL;
  MT_OK(mixp_tensor_grad(p, &g));
  assert_non_null(g);
  double *v = mt_values(g);
  mixp_tensor_release(g);
  return v;
}

static inline void mt_assert_close(const double *got, const double *want, int64_t n, double atol,
                                   double rtol) {
  for (int64_t i = 0; i < n; ++i) {
    double tol = atol + rtol * fabs(want[i]);
    if (!(fabs(got[i] - want[i]) <= tol) && !(isnan(got[i]) && isnan(want[i]))) {
      print_error("element %lld: got %.17g want %.17g (tol %.3g)\n", (long long)i, got[i], want[i], tol);
      fail();
    }
  }
}

/* Deterministic pseudo-random doubles in [lo, hi) (xorshift; for test data). */
static inline void mt_fill(double *v, int64_t n, double lo, double hi, uint64_t seed) {
  uint64_t x = seed * 0x9E3779B97F4A7C15ull + 1;
  for (int64_t i = 0; i < n; ++i) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    v[i] = lo + (hi - lo) * (double)(x >> 11) / 9007199254740992.0;
  }
}

/* ---- gradient checking ---------------------------------------------------
 * mt_fn computes an output tensor from n input tensors. mt_gradcheck builds
 * F64 leaves from `inputs`, runs f, reduces the output with fixed random
 * weights to a scalar, back-propagates, and compares every input gradient
 * with central differences (eps 1e-6). Inputs with requires_grad = 0 (e.g.
 * I64 targets) are passed as given (their dtype is kept). */
typedef mixp_status (*mt_fn)(mixp_tensor **inputs, int n, void *ctx, mixp_tensor **out);

typedef struct mt_input {
  const double *values;
  const int64_t *shape;
  int ndim;
  int requires_grad;
  mixp_dtype dtype; /* used when requires_grad == 0; F64 otherwise */
} mt_input;

static inline double mt_eval_loss(mixp_session *s, mt_fn f, void *ctx, const mt_input *in, int n,
                                  int perturb_input, int64_t perturb_index, double delta,
                                  int do_backward, double **grads_out) {
  mixp_tensor *ts[8] = {0};
  for (int i = 0; i < n; ++i) {
    int64_t cnt = 1;
    for (int d = 0; d < in[i].ndim; ++d) cnt *= in[i].shape[d];
    double *v = (double *)malloc((size_t)(cnt > 0 ? cnt : 1) * sizeof(double));
    memcpy(v, in[i].values, (size_t)cnt * sizeof(double));
    if (i == perturb_input) v[perturb_index] += delta;
    ts[i] = mt_tensor(s, in[i].requires_grad ? MIXP_F64 : in[i].dtype, v, in[i].shape, in[i].ndim);
    if (in[i].requires_grad) MT_OK(mixp_tensor_set_requires_grad(ts[i], 1));
    free(v);
  }
  mixp_tensor *out = NULL;
  MT_OK(f(ts, n, ctx, &out));
  int64_t on = mixp_tensor_numel(out);
  double *w = (double *)malloc((size_t)(on > 0 ? on : 1) * sizeof(double));
  mt_fill(w, on, -1.0, 1.0, 99);
  int64_t oshape[MIXP_MAX_DIMS];
  int ondim = 0;
  MT_OK(mixp_tensor_shape(out, oshape, MIXP_MAX_DIMS, &ondim));
  mixp_tensor *wt = mt_tensor(s, mixp_tensor_dtype(out), w, oshape, ondim);
  mixp_tensor *prod = NULL, *loss = NULL;
  MT_OK(mixp_mul(out, wt, &prod));
  MT_OK(mixp_sum(prod, NULL, 0, 0, &loss));
  double lv = 0;
  MT_OK(mixp_tensor_item(loss, &lv));
  if (do_backward) {
    MT_OK(mixp_backward(loss, NULL));
    for (int i = 0; i < n; ++i) {
      grads_out[i] = NULL;
      if (!in[i].requires_grad) continue;
      mixp_tensor *g = NULL;
      MT_OK(mixp_tensor_grad(ts[i], &g));
      assert_non_null(g);
      grads_out[i] = mt_values(g);
      mixp_tensor_release(g);
    }
  }
  free(w);
  mixp_tensor_release(wt);
  mixp_tensor_release(prod);
  mixp_tensor_release(loss);
  mixp_tensor_release(out);
  for (int i = 0; i < n; ++i) mixp_tensor_release(ts[i]);
  return lv;
}

static inline void mt_gradcheck(mixp_session *s, mt_fn f, void *ctx, const mt_input *in, int n,
                                double atol, double rtol) {
  double *grads[8] = {0};
  mt_eval_loss(s, f, ctx, in, n, -1, 0, 0.0, 1, grads);
  const double eps = 1e-6;
  for (int i = 0; i < n; ++i) {
    if (!in[i].requires_grad) continue;
    int64_t cnt = 1;
    for (int d = 0; d < in[i].ndim; ++d) cnt *= in[i].shape[d];
    for (int64_t j = 0; j < cnt; ++j) {
      double lp = mt_eval_loss(s, f, ctx, in, n, i, j, eps, 0, NULL);
      double lm = mt_eval_loss(s, f, ctx, in, n, i, j, -eps, 0, NULL);
      double num = (lp - lm) / (2 * eps);
      double tol = atol + rtol * fabs(num);
      if (!(fabs(grads[i][j] - num) <= tol)) {
        print_error("gradcheck: input %d element %lld: analytic %.12g numeric %.12g\n", i,
                    (long long)j, grads[i][j], num);
        fail();
      }
    }
    free(grads[i]);
  }
}

#endif /* MIXP_TEST_UTIL_H */
