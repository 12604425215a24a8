/* matmul / bmm / linear against a naive double reference written here, for
 * every float dtype, strided inputs, broadcast batches, misuse, gradients. */
#include "test_util.h"

/* ---- reference ---------------------------------------------------------------- */

/* c[M,N] = a[M,K] b[K,N]; also |a||b| sums for tolerances. */
static void ref_mm(const double *a, const double *b, int64_t M, int64_t K, int64_t N, double *c,
                   double *absc) {
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j) {
      double acc = 0, aacc = 0;
      for (int64_t l = 0; l < K; ++l) {
        acc += a[i * K + l] * b[l * N + j];
        aacc += fabs(a[i * K + l] * b[l * N + j]);
      }
      c[i * N + j] = acc;
      if (absc) absc[i * N + j] = aacc;
    }
}

/* Significand bits and smallest quantum exponent of each half type. */
static void half_params(mixp_dtype dt, int *p, int *qmin) {
  if (dt == MIXP_F16) {
    *p = 11;
    *qmin = -24;
  } else {
    *p = 8;
    *qmin = -133;
  }
}

/* The spacing of the type's values around x. */
static double ulp_of(mixp_dtype dt, double x) {
  int p, qmin, e;
  half_params(dt, &p, &qmin);
  frexp(x, &e); /* |x| in [2^(e-1), 2^e) */
  int q = e - p;
  if (q < qmin) q = qmin;
  return ldexp(1.0, q);
}

/* x rounded to the half type, ties to even (nearbyint in the default mode). */
static double round_to(mixp_dtype dt, double x) {
  if (x == 0) return x;
  double u = ulp_of(dt, x);
  return nearbyint(x / u) * u;
}

/* A [rows, cols] tensor of `dt` from doubles; `exact` receives the stored values. */
static mixp_tensor *make(mixp_session *s, mixp_dtype dt, const double *v, int64_t rows,
                         int64_t cols, double *exact) {
  int64_t shape[2] = {rows, cols};
  mixp_tensor *t = mt_tensor(s, dt, v, shape, 2);
  if (exact) {
    double *e = mt_values(t);
    memcpy(exact, e, (size_t)(rows * cols) * sizeof(double));
    free(e);
  }
  return t;
}

static double tol_for(mixp_dtype dt, double want, double absw) {
  switch (dt) {
    case MIXP_F64: return 1e-13 * absw + 1e-300;
    case MIXP_F32: return 2e-6 * absw + 1e-30;
    default: return ulp_of(dt, want) + 2e-6 * absw; /* one rounding + fp32 accumulation */
  }
}

static void check_against(const mixp_tensor *c, mixp_dtype dt, const double *want,
                          const double *absw, int64_t n, const char *what) {
  assert_int_equal(mixp_tensor_dtype(c), dt);
  assert_int_equal(mixp_tensor_numel(c), n);
  double *got = mt_values(c);
  for (int64_t i = 0; i < n; ++i) {
    double tol = tol_for(dt, want[i], absw[i]);
    if (!(fabs(got[i] - want[i]) <= tol)) {
      print_error("%s %s element %lld: got %.17g want %.17g (tol %.3g)\n", what,
                  mixp_dtype_name(dt), (long long)i, got[i], want[i], tol);
      fail();
    }
  }
  free(got);
}

static const mixp_dtype ALL_FLOAT[4] = {MIXP_F32, MIXP_F64, MIXP_F16, MIXP_BF16};

/* ---- 2-D ----------------------------------------------------------------------------- */

static void test_matmul_2d(void **state) {
  mixp_session *s = (mixp_session *)*state;
  enum { M = 5, K = 37, N = 3 };
  double av[M * K], bv[K * N], ae[M * K], be[K * N], want[M * N], absw[M * N];
  mt_fill(av, M * K, -1, 1, 1);
  mt_fill(bv, K * N, -1, 1, 2);
  for (int d = 0; d < 4; ++d) {
    mixp_tensor *a = make(s, ALL_FLOAT[d], av, M, K, ae), *b = make(s, ALL_FLOAT[d], bv, K, N, be),
                *c = NULL;
    MT_OK(mixp_matmul(a, b, &c));
    assert_int_equal(mixp_tensor_dim(c, 0), M);
    assert_int_equal(mixp_tensor_dim(c, 1), N);
    ref_mm(ae, be, M, K, N, want, absw);
    check_against(c, ALL_FLOAT[d], want, absw, M * N, "matmul");
    mixp_tensor_release(c);
    mixp_tensor_release(a);
    mixp_tensor_release(b);
  }
}

/* Inputs on a 1/8 grid: every product and partial sum is exact in fp32, so
 * the only rounding is the final one to the half type. */
static void test_matmul_half_exact(void **state) {
  mixp_session *s = (mixp_session *)*state;
  enum { M = 6, K = 13, N = 5 };
  double av[M * K], bv[K * N], want[M * N];
  for (int i = 0; i < M * K; ++i) av[i] = (double)(((i * 7 + 3) % 65) - 32) / 8.0;
  for (int i = 0; i < K * N; ++i) bv[i] = (double)(((i * 11 + 5) % 65) - 32) / 8.0;
  ref_mm(av, bv, M, K, N, want, NULL);
  int rounded = 0;
  for (int d = 2; d < 4; ++d) {
    mixp_dtype dt = ALL_FLOAT[d];
    mixp_tensor *a = make(s, dt, av, M, K, NULL), *b = make(s, dt, bv, K, N, NULL), *c = NULL;
    MT_OK(mixp_matmul(a, b, &c));
    double *got = mt_values(c);
    for (int i = 0; i < M * N; ++i) {
      double r = round_to(dt, want[i]);
      if (r != want[i]) ++rounded;
      double slack = dt == MIXP_BF16 ? ulp_of(dt, r) : 0.0; /* AMX order for bf16 */
      if (!(fabs(got[i] - r) <= slack)) {
        print_error("%s element %d: got %.17g, exact %.17g rounds to %.17g\n",
                    mixp_dtype_name(dt), i, got[i], want[i], r);
        fail();
      }
    }
    free(got);
    mixp_tensor_release(c);
    mixp_tensor_release(a);
    mixp_tensor_release(b);
  }
  assert_true(rounded > 5); /* the data does exercise rounding */
}

/* ---- the blocked half kernel --------------------------------------------------------- */

/* Shapes that reach every part of the CPU's blocked half GEMM (6x16 tiles,
 * taken two at a time as 12x16 where the kernels run AVX-512, so odd panel
 * counts leave a 6x16 one; k blocks of up to 1024, row blocks of 144, column blocks of 1024): full
 * and partial tiles, one and several k blocks (fp32 partial sums), several
 * row and column blocks, and each operand row-major or transposed (the in-register transposes while packing). The
 * bound is the rigorous one for fp32 accumulation, K * 2^-24 * sum|a||b|,
 * plus the one rounding to the half type. */
static void check_half_product(mixp_session *s, mixp_dtype dt, int64_t M, int64_t K, int64_t N, int ta,
                               int tb, uint64_t seed) {
  double *av = malloc((size_t)(M * K) * sizeof(double)), *bv = malloc((size_t)(K * N) * sizeof(double));
  double *a = malloc((size_t)(M * K) * sizeof(double)), *b = malloc((size_t)(K * N) * sizeof(double));
  double *want = malloc((size_t)(M * N) * sizeof(double)), *absw = malloc((size_t)(M * N) * sizeof(double));
  assert_non_null(av && bv && a && b && want && absw);
  mt_fill(av, M * K, -1, 1, seed);
  mt_fill(bv, K * N, -1, 1, seed + 1);
  /* Stored as [K,M] / [N,K] and transposed when asked. */
  mixp_tensor *as = ta ? make(s, dt, av, K, M, av) : make(s, dt, av, M, K, av);
  mixp_tensor *bs = tb ? make(s, dt, bv, N, K, bv) : make(s, dt, bv, K, N, bv);
  mixp_tensor *at = NULL, *bt = NULL, *c = NULL;
  if (ta) MT_OK(mixp_transpose(as, 0, 1, &at));
  if (tb) MT_OK(mixp_transpose(bs, 0, 1, &bt));
  for (int64_t i = 0; i < M; ++i)
    for (int64_t l = 0; l < K; ++l) a[i * K + l] = ta ? av[l * M + i] : av[i * K + l];
  for (int64_t l = 0; l < K; ++l)
    for (int64_t j = 0; j < N; ++j) b[l * N + j] = tb ? bv[j * K + l] : bv[l * N + j];
  ref_mm(a, b, M, K, N, want, absw);
  MT_OK(mixp_matmul(ta ? at : as, tb ? bt : bs, &c));
  double *got = mt_values(c);
  for (int64_t i = 0; i < M * N; ++i) {
    double acc = (double)K * ldexp(1.0, -24) * absw[i];
    double tol = acc + ulp_of(dt, fabs(want[i]) + acc);
    if (!(fabs(got[i] - want[i]) <= tol)) {
      print_error("%s [%lld,%lld]x[%lld,%lld] ta=%d tb=%d element (%lld,%lld): got %.9g want %.9g (tol %.3g)\n",
                  mixp_dtype_name(dt), (long long)M, (long long)K, (long long)K, (long long)N, ta, tb,
                  (long long)(i / N), (long long)(i % N), got[i], want[i], tol);
      fail();
    }
  }
  free(got);
  mixp_tensor_release(c);
  mixp_tensor_release(at);
  mixp_tensor_release(bt);
  mixp_tensor_release(as);
  mixp_tensor_release(bs);
  free(av), free(bv), free(a), free(b), free(want), free(absw);
}

static void test_matmul_half_blocked(void **state) {
  mixp_session *s = (mixp_session *)*state;
  static const int64_t shapes[][3] = {{1, 8, 16},  {6, 16, 32},   {13, 19, 37},  {64, 64, 64},
                                      {150, 40, 33}, {7, 1030, 20}, {30, 2100, 17}, {145, 9, 130},
                                      {7, 20, 1100}};
  for (int d = 2; d < 4; ++d)
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; ++i)
      for (int t = 0; t < 4; ++t)
        check_half_product(s, ALL_FLOAT[d], shapes[i][0], shapes[i][1], shapes[i][2], t & 1, t >> 1,
                           (uint64_t)(100 + i));
}

/* Where half products run on mixp's own kernel (build info: "converted while
 * packed"), a tile's arithmetic does not depend on which thread runs it:
 * 1 and 3 threads give the same bits, for a linear layer with bias (the
 * fused epilogue), a batched product of small matrices (one matrix per
 * thread) and a product split over threads. */
static void test_matmul_half_thread_invariant(void **state) {
  (void)state;
  mt_skip_unless_cpu();
  const char *info = mixp_build_info();
  for (int d = 2; d < 4; ++d) {
    mixp_dtype dt = ALL_FLOAT[d];
    char want_path[64];
    snprintf(want_path, sizeof want_path, "%s: converted while packed", dt == MIXP_F16 ? "f16" : "bf16");
    if (!strstr(info, want_path)) continue; /* oneDNN's path: no such promise */
    double *bits[2] = {NULL, NULL};
    int64_t total = 0;
    for (int run = 0; run < 2; ++run) {
      mixp_session_options o;
      mixp_session_options_init(&o);
      o.num_threads = run ? 3 : 1;
      o.device = mt_device();
      mixp_session *s = NULL;
      MT_OK(mixp_session_create(&o, &s));
      enum { B = 9, M = 37, K = 70, N = 50 };
      static double xv[M * K], wv[N * K], bv[N], p[B * M * K], q[B * K * N];
      mt_fill(xv, M * K, -1, 1, 31);
      mt_fill(wv, N * K, -1, 1, 32);
      mt_fill(bv, N, -1, 1, 33);
      mt_fill(p, B * M * K, -1, 1, 34);
      mt_fill(q, B * K * N, -1, 1, 35);
      int64_t ps[3] = {B, M, K}, qs[3] = {B, K, N}, bs[1] = {N};
      mixp_tensor *x = make(s, dt, xv, M, K, NULL), *w = make(s, dt, wv, N, K, NULL);
      mixp_tensor *bias = mt_tensor(s, dt, bv, bs, 1), *pt = mt_tensor(s, dt, p, ps, 3), *qt = mt_tensor(s, dt, q, qs, 3);
      mixp_tensor *y = NULL, *z = NULL;
      MT_OK(mixp_linear(x, w, bias, &y));
      MT_OK(mixp_matmul(pt, qt, &z));
      double *yv = mt_values(y), *zv = mt_values(z);
      total = M * N + B * M * N;
      bits[run] = malloc((size_t)total * sizeof(double));
      memcpy(bits[run], yv, (size_t)(M * N) * sizeof(double));
      memcpy(bits[run] + M * N, zv, (size_t)(B * M * N) * sizeof(double));
      free(yv), free(zv);
      mixp_tensor_release(y), mixp_tensor_release(z), mixp_tensor_release(x), mixp_tensor_release(w);
      mixp_tensor_release(bias), mixp_tensor_release(pt), mixp_tensor_release(qt);
      mixp_session_destroy(s);
    }
    for (int64_t i = 0; i < total; ++i)
      if (bits[0][i] != bits[1][i]) {
        print_error("%s element %lld: %.9g with 1 thread, %.9g with 3\n", mixp_dtype_name(dt), (long long)i,
                    bits[0][i], bits[1][i]);
        fail();
      }
    free(bits[0]), free(bits[1]);
  }
}

/* ---- strided inputs ------------------------------------------------------------------ */

static void test_matmul_strided(void **state) {
  mixp_session *s = (mixp_session *)*state;
  enum { M = 6, K = 9, N = 4 };
  double atv[K * M], btv[N * K], ate[K * M], bte[N * K], a[M * K], b[K * N];
  double wide[M * 2 * K], widee[M * 2 * K];
  double want[M * N], absw[M * N];
  mt_fill(atv, K * M, -1, 1, 3);
  mt_fill(btv, N * K, -1, 1, 4);
  mt_fill(wide, M * 2 * K, -1, 1, 5);
  for (int d = 0; d < 4; ++d) {
    mixp_dtype dt = ALL_FLOAT[d];
    /* a = transpose of a [K,M] tensor, b = transpose of an [N,K] tensor. */
    mixp_tensor *at = make(s, dt, atv, K, M, ate), *bt = make(s, dt, btv, N, K, bte);
    mixp_tensor *av = NULL, *bv = NULL, *c = NULL;
    MT_OK(mixp_transpose(at, 0, 1, &av));
    MT_OK(mixp_transpose(bt, 0, 1, &bv));
    assert_int_equal(mixp_tensor_is_contiguous(av), 0);
    for (int i = 0; i < M; ++i)
      for (int l = 0; l < K; ++l) a[i * K + l] = ate[l * M + i];
    for (int l = 0; l < K; ++l)
      for (int j = 0; j < N; ++j) b[l * N + j] = bte[j * K + l];
    ref_mm(a, b, M, K, N, want, absw);
    MT_OK(mixp_matmul(av, bv, &c));
    check_against(c, dt, want, absw, M * N, "matmul(a^T, b^T)");
    mixp_tensor_release(c);

    /* Every other column of a [M, 2K] tensor: no unit stride at all. */
    mixp_tensor *w = make(s, dt, wide, M, 2 * K, widee), *ws = NULL;
    MT_OK(mixp_slice(w, 1, 1, 2 * K, 2, &ws));
    for (int i = 0; i < M; ++i)
      for (int l = 0; l < K; ++l) a[i * K + l] = widee[i * 2 * K + 2 * l + 1];
    ref_mm(a, b, M, K, N, want, absw);
    MT_OK(mixp_matmul(ws, bv, &c));
    check_against(c, dt, want, absw, M * N, "matmul(strided, b^T)");
    mixp_tensor_release(c);
    mixp_tensor_release(ws);
    mixp_tensor_release(w);
    mixp_tensor_release(av);
    mixp_tensor_release(bv);
    mixp_tensor_release(at);
    mixp_tensor_release(bt);
  }
}

/* ---- batched ------------------------------------------------------------------------- */

static void test_matmul_batched(void **state) {
  mixp_session *s = (mixp_session *)*state;
  /* a [2,1,3,4] x b [5,4,2] -> [2,5,3,2] */
  double av[2 * 3 * 4], bv[5 * 4 * 2], want[2 * 5 * 3 * 2], absw[2 * 5 * 3 * 2];
  mt_fill(av, 24, -1, 1, 6);
  mt_fill(bv, 40, -1, 1, 7);
  for (int d = 0; d < 4; ++d) {
    mixp_dtype dt = ALL_FLOAT[d];
    int64_t as[4] = {2, 1, 3, 4}, bs[3] = {5, 4, 2};
    mixp_tensor *a = mt_tensor(s, dt, av, as, 4), *b = mt_tensor(s, dt, bv, bs, 3), *c = NULL;
    double *ae = mt_values(a), *be = mt_values(b);
    for (int i = 0; i < 2; ++i)
      for (int j = 0; j < 5; ++j) ref_mm(ae + i * 12, be + j * 8, 3, 4, 2, want + (i * 5 + j) * 6, absw + (i * 5 + j) * 6);
    MT_OK(mixp_matmul(a, b, &c));
    int64_t got[MIXP_MAX_DIMS];
    int nd = 0;
    MT_OK(mixp_tensor_shape(c, got, MIXP_MAX_DIMS, &nd));
    assert_int_equal(nd, 4);
    assert_true(got[0] == 2 && got[1] == 5 && got[2] == 3 && got[3] == 2);
    check_against(c, dt, want, absw, 60, "batched matmul");
    mixp_tensor_release(c);

    /* 3-D x 2-D: [2,3,4] view of a x [4,2] (b's first matrix). */
    int64_t a3s[3] = {2, 3, 4}, b2s[2] = {4, 2};
    mixp_tensor *a3 = NULL, *b2 = NULL;
    MT_OK(mixp_reshape(a, a3s, 3, &a3));
    MT_OK(mixp_slice(b, 0, 0, 1, 1, &c));
    MT_OK(mixp_reshape(c, b2s, 2, &b2));
    mixp_tensor_release(c);
    MT_OK(mixp_matmul(a3, b2, &c));
    for (int i = 0; i < 2; ++i) ref_mm(ae + i * 12, be, 3, 4, 2, want + i * 6, absw + i * 6);
    assert_int_equal(mixp_tensor_ndim(c), 3);
    check_against(c, dt, want, absw, 12, "[2,3,4] x [4,2]");
    mixp_tensor_release(c);
    /* 2-D x 3-D: [3,4] (a's first matrix) x b [5,4,2] -> [5,3,2]. */
    mixp_tensor *a2 = NULL;
    int64_t a2s[2] = {3, 4};
    MT_OK(mixp_slice(a3, 0, 0, 1, 1, &c));
    MT_OK(mixp_reshape(c, a2s, 2, &a2));
    mixp_tensor_release(c);
    MT_OK(mixp_matmul(a2, b, &c));
    for (int j = 0; j < 5; ++j) ref_mm(ae, be + j * 8, 3, 4, 2, want + j * 6, absw + j * 6);
    assert_int_equal(mixp_tensor_dim(c, 0), 5);
    check_against(c, dt, want, absw, 30, "[3,4] x [5,4,2]");
    mixp_tensor_release(c);

    /* Incompatible batch dims. */
    int64_t bad[3] = {3, 4, 2};
    mixp_tensor *bb = NULL;
    MT_OK(mixp_tensor_zeros(s, dt, bad, 3, &bb));
    c = MT_SENTINEL;
    MT_FAILS2(mixp_matmul(a3, bb, &c), MIXP_ERR_SHAPE, "mixp_matmul", "[2,3,4]");
    assert_non_null(strstr(mixp_last_error(), "[3,4,2]"));
    assert_ptr_equal(c, MT_SENTINEL);
    mixp_tensor_release(bb);

    mixp_tensor_release(a2);
    mixp_tensor_release(a3);
    mixp_tensor_release(b2);
    free(ae);
    free(be);
    mixp_tensor_release(a);
    mixp_tensor_release(b);
  }
}

static void test_bmm(void **state) {
  mixp_session *s = (mixp_session *)*state;
  double av[3 * 4 * 5], bv[3 * 5 * 2], want[3 * 4 * 2], absw[3 * 4 * 2];
  mt_fill(av, 60, -1, 1, 8);
  mt_fill(bv, 30, -1, 1, 9);
  int64_t as[3] = {3, 4, 5}, bs[3] = {3, 5, 2};
  for (int d = 0; d < 4; ++d) {
    mixp_dtype dt = ALL_FLOAT[d];
    mixp_tensor *a = mt_tensor(s, dt, av, as, 3), *b = mt_tensor(s, dt, bv, bs, 3), *c = NULL;
    double *ae = mt_values(a), *be = mt_values(b);
    for (int i = 0; i < 3; ++i) ref_mm(ae + i * 20, be + i * 10, 4, 5, 2, want + i * 8, absw + i * 8);
    MT_OK(mixp_bmm(a, b, &c));
    assert_int_equal(mixp_tensor_ndim(c), 3);
    assert_int_equal(mixp_tensor_dim(c, 1), 4);
    check_against(c, dt, want, absw, 24, "bmm");
    mixp_tensor_release(c);
    free(ae);
    free(be);
    mixp_tensor_release(a);
    mixp_tensor_release(b);
  }
  mixp_tensor *a = mt_tensor(s, MIXP_F32, av, as, 3), *b = mt_tensor(s, MIXP_F32, bv, bs, 3);
  mixp_tensor *c = MT_SENTINEL, *b2 = NULL, *a2 = NULL, *b64 = NULL;
  /* Batch mismatch: bmm does not broadcast. */
  int64_t b2s[3] = {1, 5, 2};
  MT_OK(mixp_tensor_zeros(s, MIXP_F32, b2s, 3, &b2));
  MT_FAILS2(mixp_bmm(a, b2, &c), MIXP_ERR_SHAPE, "mixp_bmm", "[3,4,5]");
  assert_non_null(strstr(mixp_last_error(), "[1,5,2]"));
  /* Inner mismatch. */
  MT_FAILS2(mixp_bmm(a, a, &c), MIXP_ERR_SHAPE, "mixp_bmm", "[3,4,5]");
  /* Not 3-D. */
  int64_t a2s[2] = {4, 5};
  MT_OK(mixp_tensor_zeros(s, MIXP_F32, a2s, 2, &a2));
  mixp_status st = mixp_bmm(a2, b, &c);
  assert_true(st == MIXP_ERR_SHAPE || st == MIXP_ERR_INVALID_ARGUMENT);
  assert_non_null(strstr(mixp_last_error(), "mixp_bmm"));
  assert_non_null(strstr(mixp_last_error(), "[4,5]"));
  b64 = mt_tensor(s, MIXP_F64, bv, bs, 3);
  MT_FAILS2(mixp_bmm(a, b64, &c), MIXP_ERR_DTYPE, "mixp_bmm", "f64");
  MT_FAILS(mixp_bmm(NULL, b, &c), MIXP_ERR_INVALID_ARGUMENT, "mixp_bmm");
  MT_FAILS(mixp_bmm(a, NULL, &c), MIXP_ERR_INVALID_ARGUMENT, "mixp_bmm");
  MT_FAILS2(mixp_bmm(a, b, NULL), MIXP_ERR_INVALID_ARGUMENT, "mixp_bmm", "out");
  assert_ptr_equal(c, MT_SENTINEL);
  mixp_tensor_release(b64);
  mixp_tensor_release(a2);
  mixp_tensor_release(b2);
  mixp_tensor_release(a);
  mixp_tensor_release(b);
}

/* ---- linear ------------------------------------------------------------------------------ */

static void test_linear(void **state) {
  mixp_session *s = (mixp_session *)*state;
  enum { B = 2, R = 4, IN = 3, OUT = 5 };
  double xv[B * R * IN], wv[OUT * IN], bv[OUT];
  mt_fill(xv, B * R * IN, -1, 1, 10);
  mt_fill(wv, OUT * IN, -1, 1, 11);
  mt_fill(bv, OUT, -1, 1, 12);
  for (int d = 0; d < 4; ++d) {
    mixp_dtype dt = ALL_FLOAT[d];
    int64_t xs[3] = {B, R, IN}, ws[2] = {OUT, IN}, bs[1] = {OUT};
    mixp_tensor *x3 = mt_tensor(s, dt, xv, xs, 3), *w = mt_tensor(s, dt, wv, ws, 2),
                *b = mt_tensor(s, dt, bv, bs, 1), *x2 = NULL, *y = NULL;
    double *xe = mt_values(x3), *we = mt_values(w), *be = mt_values(b);
    double wt[IN * OUT], want[B * R * OUT], absw[B * R * OUT];
    for (int o = 0; o < OUT; ++o)
      for (int i = 0; i < IN; ++i) wt[i * OUT + o] = we[o * IN + i];
    ref_mm(xe, wt, B * R, IN, OUT, want, absw);

    /* 2-D without bias. */
    MT_OK(mixp_slice(x3, 0, 0, 1, 1, &y));
    int64_t x2s[2] = {R, IN};
    MT_OK(mixp_reshape(y, x2s, 2, &x2));
    mixp_tensor_release(y);
    MT_OK(mixp_linear(x2, w, NULL, &y));
    assert_int_equal(mixp_tensor_ndim(y), 2);
    assert_int_equal(mixp_tensor_dim(y, 1), OUT);
    check_against(y, dt, want, absw, R * OUT, "linear (no bias)");
    mixp_tensor_release(y);

    /* 3-D with bias. */
    for (int r = 0; r < B * R; ++r)
      for (int o = 0; o < OUT; ++o) {
        want[r * OUT + o] += be[o];
        absw[r * OUT + o] += fabs(be[o]);
      }
    MT_OK(mixp_linear(x3, w, b, &y));
    int64_t got[MIXP_MAX_DIMS];
    int nd = 0;
    MT_OK(mixp_tensor_shape(y, got, MIXP_MAX_DIMS, &nd));
    assert_int_equal(nd, 3);
    assert_true(got[0] == B && got[1] == R && got[2] == OUT);
    check_against(y, dt, want, absw, B * R * OUT, "linear (3-D, bias)");
    mixp_tensor_release(y);

    free(xe);
    free(we);
    free(be);
    mixp_tensor_release(x2);
    mixp_tensor_release(x3);
    mixp_tensor_release(w);
    mixp_tensor_release(b);
  }

  /* Misuse. */
  int64_t xs[2] = {4, 3}, ws[2] = {5, 3}, wbad[2] = {5, 4}, bbad[1] = {4}, bs[1] = {5};
  mixp_tensor *x = NULL, *w = NULL, *b = NULL, *w2 = NULL, *b2 = NULL, *w64 = NULL, *xi = NULL;
  MT_OK(mixp_tensor_ones(s, MIXP_F32, xs, 2, &x));
  MT_OK(mixp_tensor_ones(s, MIXP_F32, ws, 2, &w));
  MT_OK(mixp_tensor_ones(s, MIXP_F32, bs, 1, &b));
  MT_OK(mixp_tensor_ones(s, MIXP_F32, wbad, 2, &w2));
  MT_OK(mixp_tensor_ones(s, MIXP_F32, bbad, 1, &b2));
  MT_OK(mixp_tensor_ones(s, MIXP_F64, ws, 2, &w64));
  MT_OK(mixp_tensor_ones(s, MIXP_I32, xs, 2, &xi));
  mixp_tensor *y = MT_SENTINEL;
  MT_FAILS2(mixp_linear(x, w2, b, &y), MIXP_ERR_SHAPE, "mixp_linear", "[4,3]");
  assert_non_null(strstr(mixp_last_error(), "[5,4]"));
  MT_FAILS2(mixp_linear(x, w, b2, &y), MIXP_ERR_SHAPE, "mixp_linear", "[4]");
  MT_FAILS(mixp_linear(x, w64, b, &y), MIXP_ERR_DTYPE, "mixp_linear");
  MT_FAILS(mixp_linear(xi, w, NULL, &y), MIXP_ERR_DTYPE, "mixp_linear");
  MT_FAILS(mixp_linear(NULL, w, b, &y), MIXP_ERR_INVALID_ARGUMENT, "mixp_linear");
  MT_FAILS(mixp_linear(x, NULL, b, &y), MIXP_ERR_INVALID_ARGUMENT, "mixp_linear");
  MT_FAILS2(mixp_linear(x, w, b, NULL), MIXP_ERR_INVALID_ARGUMENT, "mixp_linear", "out");
  assert_ptr_equal(y, MT_SENTINEL);
  mixp_tensor_release(x);
  mixp_tensor_release(w);
  mixp_tensor_release(b);
  mixp_tensor_release(w2);
  mixp_tensor_release(b2);
  mixp_tensor_release(w64);
  mixp_tensor_release(xi);
}

/* ---- errors and edge shapes ------------------------------------------------------------ */

static void test_matmul_errors(void **state) {
  mixp_session *s = (mixp_session *)*state;
  int64_t as[2] = {64, 784}, bs[2] = {512, 10};
  mixp_tensor *a = NULL, *b = NULL, *c = MT_SENTINEL;
  MT_OK(mixp_tensor_zeros(s, MIXP_F32, as, 2, &a));
  MT_OK(mixp_tensor_zeros(s, MIXP_F32, bs, 2, &b));
  MT_FAILS2(mixp_matmul(a, b, &c), MIXP_ERR_SHAPE, "mixp_matmul", "[64,784]");
  assert_non_null(strstr(mixp_last_error(), "[512,10]"));
  mixp_tensor_release(b);

  int64_t ok[2] = {784, 10};
  mixp_tensor *b64 = NULL, *ai = NULL, *bi = NULL;
  MT_OK(mixp_tensor_zeros(s, MIXP_F64, ok, 2, &b64));
  MT_FAILS2(mixp_matmul(a, b64, &c), MIXP_ERR_DTYPE, "mixp_matmul", "f32");
  assert_non_null(strstr(mixp_last_error(), "f64"));
  MT_OK(mixp_tensor_zeros(s, MIXP_I32, as, 2, &ai));
  MT_OK(mixp_tensor_zeros(s, MIXP_I32, ok, 2, &bi));
  MT_FAILS2(mixp_matmul(ai, bi, &c), MIXP_ERR_DTYPE, "mixp_matmul", "i32");
  MT_FAILS(mixp_matmul(NULL, b64, &c), MIXP_ERR_INVALID_ARGUMENT, "mixp_matmul");
  MT_FAILS(mixp_matmul(a, NULL, &c), MIXP_ERR_INVALID_ARGUMENT, "mixp_matmul");
  MT_FAILS2(mixp_matmul(a, a, NULL), MIXP_ERR_INVALID_ARGUMENT, "mixp_matmul", "out");

  /* Different sessions. */
  mixp_session *s2 = mt_session();
  mixp_tensor *other = NULL;
  MT_OK(mixp_tensor_zeros(s2, MIXP_F32, ok, 2, &other));
  MT_FAILS(mixp_matmul(a, other, &c), MIXP_ERR_DEVICE, "mixp_matmul");
  mixp_tensor_release(other);
  mixp_session_destroy(s2);
  assert_ptr_equal(c, MT_SENTINEL);

  mixp_tensor_release(ai);
  mixp_tensor_release(bi);
  mixp_tensor_release(b64);
  mixp_tensor_release(a);
}

static void test_matmul_empty(void **state) {
  mixp_session *s = (mixp_session *)*state;
  /* K = 0: the product is all zeros. */
  int64_t as[2] = {2, 0}, bs[2] = {0, 3};
  mixp_tensor *a = NULL, *b = NULL, *c = NULL;
  MT_OK(mixp_tensor_zeros(s, MIXP_F32, as, 2, &a));
  MT_OK(mixp_tensor_zeros(s, MIXP_F32, bs, 2, &b));
  MT_OK(mixp_matmul(a, b, &c));
  assert_int_equal(mixp_tensor_numel(c), 6);
  float v[6] = {1, 1, 1, 1, 1, 1};
  MT_OK(mixp_tensor_to_host(c, v, sizeof v));
  for (int i = 0; i < 6; ++i) assert_true(v[i] == 0.0f);
  mixp_tensor_release(c);
  mixp_tensor_release(a);
  mixp_tensor_release(b);
  /* M = 0. */
  int64_t as2[2] = {0, 4}, bs2[2] = {4, 3};
  MT_OK(mixp_tensor_zeros(s, MIXP_F64, as2, 2, &a));
  MT_OK(mixp_tensor_ones(s, MIXP_F64, bs2, 2, &b));
  MT_OK(mixp_matmul(a, b, &c));
  assert_int_equal(mixp_tensor_dim(c, 0), 0);
  assert_int_equal(mixp_tensor_dim(c, 1), 3);
  mixp_tensor_release(c);
  mixp_tensor_release(a);
  mixp_tensor_release(b);
}

/* ---- gradients ----------------------------------------------------------------------------- */

static mixp_status f_matmul(mixp_tensor **in, int n, void *ctx, mixp_tensor **out) {
  (void)n;
  (void)ctx;
  return mixp_matmul(in[0], in[1], out);
}
static mixp_status f_matmul_t(mixp_tensor **in, int n, void *ctx, mixp_tensor **out) {
  (void)n;
  (void)ctx;
  mixp_tensor *bt = NULL;
  mixp_status st = mixp_transpose(in[1], 0, 1, &bt);
  if (st == MIXP_OK) st = mixp_matmul(in[0], bt, out);
  mixp_tensor_release(bt);
  return st;
}
static mixp_status f_bmm(mixp_tensor **in, int n, void *ctx, mixp_tensor **out) {
  (void)n;
  (void)ctx;
  return mixp_bmm(in[0], in[1], out);
}
static mixp_status f_linear(mixp_tensor **in, int n, void *ctx, mixp_tensor **out) {
  (void)ctx;
  return mixp_linear(in[0], in[1], n > 2 ? in[2] : NULL, out);
}

static void test_gradients(void **state) {
  mixp_session *s = (mixp_session *)*state;
  double v1[64], v2[64], v3[8];
  mt_fill(v1, 64, -1, 1, 21);
  mt_fill(v2, 64, -1, 1, 22);
  mt_fill(v3, 8, -1, 1, 23);
  int64_t a34[2] = {3, 4}, b42[2] = {4, 2}, b24[2] = {2, 4};
  mt_input mm[2] = {{v1, a34, 2, 1, MIXP_F64}, {v2, b42, 2, 1, MIXP_F64}};
  mt_gradcheck(s, f_matmul, NULL, mm, 2, 1e-7, 1e-6);
  mt_input mmt[2] = {{v1, a34, 2, 1, MIXP_F64}, {v2, b24, 2, 1, MIXP_F64}};
  mt_gradcheck(s, f_matmul_t, NULL, mmt, 2, 1e-7, 1e-6);
  /* Broadcast batches: the gradient of b sums over a's batch. */
  int64_t ab[4] = {2, 1, 2, 3}, bb[3] = {3, 3, 2};
  mt_input mb[2] = {{v1, ab, 4, 1, MIXP_F64}, {v2, bb, 3, 1, MIXP_F64}};
  mt_gradcheck(s, f_matmul, NULL, mb, 2, 1e-7, 1e-6);
  int64_t a3[3] = {2, 3, 4}, b3[3] = {2, 4, 2};
  mt_input bm[2] = {{v1, a3, 3, 1, MIXP_F64}, {v2, b3, 3, 1, MIXP_F64}};
  mt_gradcheck(s, f_bmm, NULL, bm, 2, 1e-7, 1e-6);
  /* [2,3,4] x [4,2]: the 2-D weight gets gradients from every batch. */
  mt_input m32[2] = {{v1, a3, 3, 1, MIXP_F64}, {v2, b42, 2, 1, MIXP_F64}};
  mt_gradcheck(s, f_matmul, NULL, m32, 2, 1e-7, 1e-6);

  int64_t w[2] = {2, 4}, bias[1] = {2};
  mt_input lin[3] = {{v1, a34, 2, 1, MIXP_F64}, {v2, w, 2, 1, MIXP_F64}, {v3, bias, 1, 1, MIXP_F64}};
  mt_gradcheck(s, f_linear, NULL, lin, 3, 1e-7, 1e-6);
  mt_input lin3[3] = {{v1, a3, 3, 1, MIXP_F64}, {v2, w, 2, 1, MIXP_F64}, {v3, bias, 1, 1, MIXP_F64}};
  mt_gradcheck(s, f_linear, NULL, lin3, 3, 1e-7, 1e-6);
  mt_gradcheck(s, f_linear, NULL, lin3, 2, 1e-7, 1e-6); /* no bias */
  /* Only the weight requires grad. */
  mt_input part[2] = {{v1, a34, 2, 0, MIXP_F64}, {v2, w, 2, 1, MIXP_F64}};
  mt_gradcheck(s, f_linear, NULL, part, 2, 1e-7, 1e-6);
}

/* ---- a large product --------------------------------------------------------------------- */

static void test_large_f32(void **state) {
  mixp_session *s = (mixp_session *)*state;
  enum { N = 1024 };
  const size_t nn = (size_t)N * N;
  float *av = (float *)malloc(nn * sizeof(float)), *bv = (float *)malloc(nn * sizeof(float));
  float *cv = (float *)malloc(nn * sizeof(float));
  double *tmp = (double *)malloc(nn * sizeof(double));
  mt_fill(tmp, (int64_t)nn, -1, 1, 31);
  for (size_t i = 0; i < nn; ++i) av[i] = (float)tmp[i];
  mt_fill(tmp, (int64_t)nn, -1, 1, 32);
  for (size_t i = 0; i < nn; ++i) bv[i] = (float)tmp[i];
  int64_t shape[2] = {N, N};
  mixp_tensor *a = NULL, *b = NULL, *c = NULL, *eye = NULL;
  MT_OK(mixp_tensor_from_host(s, av, nn * sizeof(float), MIXP_F32, shape, 2, &a));
  MT_OK(mixp_tensor_from_host(s, bv, nn * sizeof(float), MIXP_F32, shape, 2, &b));

  /* A x I == A exactly. */
  memset(cv, 0, nn * sizeof(float));
  for (int i = 0; i < N; ++i) cv[(size_t)i * N + i] = 1.0f;
  MT_OK(mixp_tensor_from_host(s, cv, nn * sizeof(float), MIXP_F32, shape, 2, &eye));
  MT_OK(mixp_matmul(a, eye, &c));
  MT_OK(mixp_tensor_to_host(c, cv, nn * sizeof(float)));
  assert_memory_equal(cv, av, nn * sizeof(float));
  mixp_tensor_release(c);

  /* A x B at sampled entries. */
  MT_OK(mixp_matmul(a, b, &c));
  MT_OK(mixp_tensor_to_host(c, cv, nn * sizeof(float)));
  for (int k = 0; k < 256; ++k) {
    int i = (k * 389) % N, j = (k * 797 + 13) % N;
    double acc = 0, aacc = 0;
    for (int l = 0; l < N; ++l) {
      double p = (double)av[(size_t)i * N + l] * (double)bv[(size_t)l * N + j];
      acc += p;
      aacc += fabs(p);
    }
    double got = cv[(size_t)i * N + j];
    if (!(fabs(got - acc) <= 1e-5 * aacc)) {
      print_error("1024^2 product (%d,%d): got %.9g want %.9g\n", i, j, got, acc);
      fail();
    }
  }
  mixp_tensor_release(c);
  mixp_tensor_release(eye);
  mixp_tensor_release(a);
  mixp_tensor_release(b);
  free(av);
  free(bv);
  free(cv);
  free(tmp);
}

/* linear's weight and bias gradients. On the CPU, which declines folding
 * the bias gradient into the weight gradient's GEMM (gemm_row_sums), they
 * are bit for bit the separate product gy^T x and column sum of gy; a
 * device that folds them (CUDA: cuBLASLt's BGRADB epilogue) may add in
 * another order: each is an N-term fp32 sum of products of values in
 * [-1, 1], rounded once to the dtype, so within N^2 2^-24 + 2u |want|. */
static void test_linear_weight_bias_grads(void **state) {
  mixp_session *s = (mixp_session *)*state;
  enum { N = 37, IN = 24, OUT = 16 };
  double xv[N * IN], wv[OUT * IN], bv[OUT], gv[N * OUT];
  mt_fill(xv, N * IN, -1, 1, 40);
  mt_fill(wv, OUT * IN, -1, 1, 41);
  mt_fill(bv, OUT, -1, 1, 42);
  mt_fill(gv, N * OUT, -1, 1, 43);
  const mixp_dtype dts[3] = {MIXP_F32, MIXP_BF16, MIXP_F16};
  for (int d = 0; d < 3; ++d) {
    const int64_t xs[2] = {N, IN}, ws[2] = {OUT, IN}, bs[1] = {OUT}, gs[2] = {N, OUT};
    mixp_tensor *x = mt_tensor(s, dts[d], xv, xs, 2), *w = mt_tensor(s, dts[d], wv, ws, 2);
    mixp_tensor *b = mt_tensor(s, dts[d], bv, bs, 1), *gy = mt_tensor(s, dts[d], gv, gs, 2);
    MT_OK(mixp_tensor_set_requires_grad(w, 1));
    MT_OK(mixp_tensor_set_requires_grad(b, 1));
    mixp_tensor *y = NULL, *gyt = NULL, *rw = NULL, *rb = NULL;
    MT_OK(mixp_linear(x, w, b, &y));
    MT_OK(mixp_backward(y, gy));
    MT_OK(mixp_transpose(gy, 0, 1, &gyt));
    MT_OK(mixp_matmul(gyt, x, &rw));
    const int dim0 = 0;
    MT_OK(mixp_sum(gy, &dim0, 1, 0, &rb));
    double *gw = mt_grad_values(w), *gb = mt_grad_values(b), *ww = mt_values(rw), *wb = mt_values(rb);
    if (mt_on_cpu()) {
      assert_memory_equal(gw, ww, sizeof(double) * OUT * IN);
      assert_memory_equal(gb, wb, sizeof(double) * OUT);
    } else {
      const double u = dts[d] == MIXP_F32 ? ldexp(1.0, -24) : ldexp(1.0, dts[d] == MIXP_F16 ? -11 : -8);
      mt_assert_close(gw, ww, OUT * IN, N * N * ldexp(1.0, -24), 2.0 * u);
      mt_assert_close(gb, wb, OUT, N * N * ldexp(1.0, -24), 2.0 * u);
    }
    free(gw);
    free(gb);
    free(ww);
    free(wb);
    mixp_tensor *objs[8] = {x, w, b, gy, y, gyt, rw, rb};
    for (int i = 0; i < 8; ++i) mixp_tensor_release(objs[i]);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_matmul_2d),
      cmocka_unit_test(test_matmul_half_exact),
      cmocka_unit_test(test_matmul_strided),
      cmocka_unit_test(test_matmul_half_blocked),
      cmocka_unit_test(test_matmul_half_thread_invariant),
      cmocka_unit_test(test_matmul_batched),
      cmocka_unit_test(test_bmm),
      cmocka_unit_test(test_linear),
      cmocka_unit_test(test_linear_weight_bias_grads),
      cmocka_unit_test(test_matmul_errors),
      cmocka_unit_test(test_matmul_empty),
      cmocka_unit_test(test_gradients),
      cmocka_unit_test(test_large_f32),
  };
  return cmocka_run_group_tests(tests, mt_setup_session, mt_teardown_session);
}
