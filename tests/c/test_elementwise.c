/* Elementwise operations: forward values against double formulas in every
 * float dtype, broadcasting, gradients, and misuse of every entry point. */
#include "op_rows.h"
#include "test_util.h"

/* ---- the unary ops under test ------------------------------------------------ */

enum { U_NEG, U_EXP, U_LOG, U_SQRT, U_RELU, U_GELU_ERF, U_GELU_TANH, U_SIGMOID, U_TANH,
       U_POW, U_ADDS, U_MULS, U_RSUBS, U_RDIVS, U_COUNT };

static const char *const unary_fn_names[U_COUNT] = {
    "mixp_neg", "mixp_exp", "mixp_log", "mixp_sqrt", "mixp_relu", "mixp_gelu", "mixp_gelu_tanh",
    "mixp_sigmoid", "mixp_tanh", "mixp_pow", "mixp_add_scalar", "mixp_mul_scalar",
    "mixp_rsub_scalar", "mixp_rdiv_scalar"};

static mixp_status call_unary(int op, const mixp_tensor *x, double s, mixp_tensor **out) {
  switch (op) {
    case U_NEG: return mixp_neg(x, out);
    case U_EXP: return mixp_exp(x, out);
    case U_LOG: return mixp_log(x, out);
    case U_SQRT: return mixp_sqrt(x, out);
    case U_RELU: return mixp_relu(x, out);
    case U_GELU_ERF: return mixp_gelu(x, MIXP_GELU_ERF, out);
    case U_GELU_TANH: return mixp_gelu_tanh(x, out);
    case U_SIGMOID: return mixp_sigmoid(x, out);
    case U_TANH: return mixp_tanh(x, out);
    case U_POW: return mixp_pow(x, s, out);
    case U_ADDS: return mixp_add_scalar(x, s, out);
    case U_MULS: return mixp_mul_scalar(x, s, out);
    case U_RSUBS: return mixp_rsub_scalar(x, s, out);
    default: return mixp_rdiv_scalar(x, s, out);
  }
}

static const double k_sqrt_2_over_pi = 0.79788456080286535588;

static double ref_unary(int op, double x, double s) {
  switch (op) {
    case U_NEG: return -x;
    case U_EXP: return exp(x);
    case U_LOG: return log(x);
    case U_SQRT: return sqrt(x);
    case U_RELU: return x > 0 ? x : 0.0;
    case U_GELU_ERF: return 0.5 * x * (1.0 + erf(x / sqrt(2.0)));
    case U_GELU_TANH: return 0.5 * x * (1.0 + tanh(k_sqrt_2_over_pi * (x + 0.044715 * x * x * x)));
    case U_SIGMOID: return 1.0 / (1.0 + exp(-x));
    case U_TANH: return tanh(x);
    case U_POW: return pow(x, s);
    case U_ADDS: return x + s;
    case U_MULS: return x * s;
    case U_RSUBS: return s - x;
    default: return s / x;
  }
}

/* Derivative by independent formulas (sech^2, the normal pdf, ...). */
static double ref_derivative(int op, double x, double s) {
  switch (op) {
    case U_NEG: return -1.0;
    case U_EXP: return exp(x);
    case U_LOG: return 1.0 / x;
    case U_SQRT: return 0.5 / sqrt(x);
    case U_RELU: return x > 0 ? 1.0 : 0.0;
    case U_GELU_ERF:
      return 0.5 * (1.0 + erf(x / sqrt(2.0))) + x * exp(-0.5 * x * x) / sqrt(2.0 * M_PI);
    case U_GELU_TANH: {
      double u = k_sqrt_2_over_pi * (x + 0.044715 * x * x * x);
      double sech = 1.0 / cosh(u);
      return 0.5 * (1.0 + tanh(u)) +
             0.5 * x * sech * sech * k_sqrt_2_over_pi * (1.0 + 3 * 0.044715 * x * x);
    }
    case U_SIGMOID: return exp(-x) / ((1.0 + exp(-x)) * (1.0 + exp(-x)));
    case U_TANH: return 1.0 / (cosh(x) * cosh(x));
    case U_POW: return s == 0.0 ? 0.0 : s * pow(x, s - 1.0);
    case U_ADDS: return 1.0;
    case U_MULS: return s;
    case U_RSUBS: return -1.0;
    default: return -s / (x * x);
  }
}

typedef struct unary_case {
  int op;
  double s;
  double lo, hi;  /* input range */
  int exact_half; /* the half-type result must be the correctly rounded one */
} unary_case;

static const unary_case unary_cases[] = {
    {U_NEG, 0, -3, 3, 1},         {U_EXP, 0, -3, 3, 0},       {U_LOG, 0, 0.05, 5, 0},
    {U_SQRT, 0, 0.0, 5, 0},       {U_RELU, 0, -3, 3, 1},      {U_GELU_ERF, 0, -4, 4, 0},
    {U_GELU_TANH, 0, -4, 4, 0},   {U_SIGMOID, 0, -6, 6, 0},   {U_TANH, 0, -3, 3, 0},
    {U_POW, 2.5, 0.1, 3, 0},      {U_POW, 3.0, -2, 2, 0},     {U_POW, -1.5, 0.2, 3, 0},
    {U_POW, 0.0, -1, 1, 1},       {U_ADDS, 0.75, -3, 3, 1},   {U_MULS, -1.5, -3, 3, 1},
    {U_RSUBS, 1.25, -3, 3, 1},    {U_RDIVS, 2.0, 0.5, 3, 0},  {U_RDIVS, -0.5, -3, -0.5, 0},
};
#define N_UNARY_CASES ((int)(sizeof unary_cases / sizeof unary_cases[0]))

static const mixp_dtype float_dtypes[4] = {MIXP_F64, MIXP_F32, MIXP_F16, MIXP_BF16};

/* One unit in the last place of a half-type value of magnitude |v|. */
static double half_ulp(mixp_dtype dt, double v) {
  const int mant = dt == MIXP_F16 ? 10 : 7, emin = dt == MIXP_F16 ? -14 : -126;
  int e = emin + 1;
  if (v != 0.0 && isfinite(v)) frexp(fabs(v), &e);
  int ex = e - 1 < emin ? emin : e - 1;
  return ldexp(1.0, ex - mant);
}

/* `want` rounded to `dt` by the library's own (independently tested) cast
 * from F64, which rounds once, to nearest even. */
static double *round_to(mixp_session *s, mixp_dtype dt, const double *want, int64_t n) {
  int64_t shape[1] = {n};
  mixp_tensor *t = mt_tensor(s, dt, want, shape, 1);
  double *r = mt_values(t);
  mixp_tensor_release(t);
  return r;
}

/* Checks `got` (a tensor of dtype dt) against exact values `want`: F64 and F32
 * within their precision; F16/BF16 must hold the correctly rounded value
 * (exact_half) or be within one unit of it, and mostly equal to it. */
static void check_values(mixp_session *s, mixp_dtype dt, const mixp_tensor *got_t,
                         const double *want, int64_t n, int exact_half) {
  assert_int_equal(mixp_tensor_dtype(got_t), dt);
  assert_int_equal(mixp_tensor_numel(got_t), n);
  double *got = mt_values(got_t);
  if (dt == MIXP_F64) {
    mt_assert_close(got, want, n, 1e-14, 1e-13);
  } else if (dt == MIXP_F32) {
    mt_assert_close(got, want, n, 1e-6, 4e-6);
  } else {
    double *r = round_to(s, dt, want, n);
    int64_t equal = 0;
    for (int64_t i = 0; i < n; ++i) {
      int same = got[i] == r[i] || (isnan(got[i]) && isnan(r[i]));
      equal += same;
      if (!same && (exact_half || !(fabs(got[i] - r[i]) <= half_ulp(dt, r[i])))) {
        print_error("%s element %lld: got %.10g, correctly rounded %.10g (exact %.10g)\n",
                    mixp_dtype_name(dt), (long long)i, got[i], r[i], want[i]);
        fail();
      }
    }
    /* Truncation instead of rounding would miss about half of them. */
    assert_true(equal * 10 >= n * 9);
    free(r);
  }
  free(got);
}

/* ---- forward: unary --------------------------------------------------------- */

static void test_unary_forward_all_dtypes(void **state) {
  (void)state;
  mixp_session *s = mt_session();
  int64_t shape[2] = {4, 16};
  const int64_t n = 64;
  double vals[64], want[64];
  for (int c = 0; c < N_UNARY_CASES; ++c) {
    const unary_case *uc = &unary_cases[c];
    mt_fill(vals, n, uc->lo, uc->hi, 10 + (uint64_t)c);
    for (int d = 0; d < 4; ++d) {
      mixp_dtype dt = float_dtypes[d];
      mixp_tensor *x = mt_tensor(s, dt, vals, shape, 2), *y = NULL;
      double *xv = mt_values(x); /* the input as the dtype holds it */
      for (int64_t i = 0; i < n; ++i) want[i] = ref_unary(uc->op, xv[i], uc->s);
      MT_OK(call_unary(uc->op, x, uc->s, &y));
      int64_t oshape[MIXP_MAX_DIMS];
      int ondim = 0;
      MT_OK(mixp_tensor_shape(y, oshape, MIXP_MAX_DIMS, &ondim));
      assert_int_equal(ondim, 2);
      assert_int_equal(oshape[0], 4);
      assert_int_equal(oshape[1], 16);
      assert_int_equal(mixp_tensor_requires_grad(y), 0);
      check_values(s, dt, y, want, n, uc->exact_half);
      free(xv);
      mixp_tensor_release(x);
      mixp_tensor_release(y);
    }
  }
  mixp_session_destroy(s);
}

/* Large enough for several parallel chunks, and a strided (transposed) input. */
static void test_unary_large_and_strided(void **state) {
  (void)state;
  mixp_session *s = mt_session();
  const int64_t rows = 300, cols = 211, n = rows * cols;
  int64_t shape[2] = {rows, cols};
  double *vals = malloc((size_t)n * sizeof(double)), *want = malloc((size_t)n * sizeof(double));
  mt_fill(vals, n, -4, 4, 5);
  for (int d = 0; d < 4; ++d) {
    mixp_dtype dt = float_dtypes[d];
    mixp_tensor *x = mt_tensor(s, dt, vals, shape, 2), *y = NULL, *xt = NULL, *yt = NULL;
    double *xv = mt_values(x);
    for (int64_t i = 0; i < n; ++i) want[i] = ref_unary(U_GELU_TANH, xv[i], 0);
    MT_OK(mixp_gelu(x, MIXP_GELU_TANH, &y));
    check_values(s, dt, y, want, n, 0);

    /* x^T is a strided view: the result is in x^T's row-major order. */
    MT_OK(mixp_transpose(x, 0, 1, &xt));
    assert_int_equal(mixp_tensor_is_contiguous(xt), 0);
    MT_OK(mixp_exp(xt, &yt));
    assert_int_equal(mixp_tensor_dim(yt, 0), cols);
    assert_int_equal(mixp_tensor_dim(yt, 1), rows);
    for (int64_t i = 0; i < cols; ++i)
      for (int64_t j = 0; j < rows; ++j) want[i * rows + j] = exp(xv[j * cols + i]);
    check_values(s, dt, yt, want, n, 0);
    free(xv);
    mixp_tensor_release(x);
    mixp_tensor_release(y);
    mixp_tensor_release(xt);
    mixp_tensor_release(yt);
  }
  free(vals);
  free(want);
  mixp_session_destroy(s);
}

static void test_unary_special_values(void **state) {
  (void)state;
  mixp_session *s = mt_session();
  double vals[4] = {NAN, INFINITY, -INFINITY, 0.0};
  int64_t shape[1] = {4};
  mixp_tensor *x = mt_tensor(s, MIXP_F32, vals, shape, 1), *y = NULL;
  MT_OK(mixp_relu(x, &y));
  double *v = mt_values(y);
  assert_true(isnan(v[0])); /* NaN propagates through relu */
  assert_true(v[1] == INFINITY && v[2] == 0.0 && v[3] == 0.0);
  free(v);
  mixp_tensor_release(y);
  MT_OK(mixp_sigmoid(x, &y));
  v = mt_values(y);
  assert_true(isnan(v[0]) && v[1] == 1.0 && v[2] == 0.0 && v[3] == 0.5);
  free(v);
  mixp_tensor_release(y);
  mixp_tensor_release(x);

  /* Empty tensors are fine. */
  int64_t eshape[2] = {0, 3};
  mixp_tensor *e = NULL, *ey = NULL;
  MT_OK(mixp_tensor_zeros(s, MIXP_F16, eshape, 2, &e));
  MT_OK(mixp_exp(e, &ey));
  assert_int_equal(mixp_tensor_numel(ey), 0);
  mixp_tensor_release(ey);
  MT_OK(mixp_add(e, e, &ey));
  assert_int_equal(mixp_tensor_numel(ey), 0);
  mixp_tensor_release(ey);
  mixp_tensor_release(e);
  mixp_session_destroy(s);
}

/* ---- forward: binary and broadcasting ----------------------------------------- */

enum { B_ADD, B_SUB, B_MUL, B_DIV };
static const char *const binary_fn_names[4] = {"mixp_add", "mixp_sub", "mixp_mul", "mixp_div"};

static mixp_status call_binary(int op, const mixp_tensor *a, const mixp_tensor *b,
                               mixp_tensor **out) {
  switch (op) {
    case B_ADD: return mixp_add(a, b, out);
    case B_SUB: return mixp_sub(a, b, out);
    case B_MUL: return mixp_mul(a, b, out);
    default: return mixp_div(a, b, out);
  }
}

static double ref_binary(int op, double a, double b) {
  switch (op) {
    case B_ADD: return a + b;
    case B_SUB: return a - b;
    case B_MUL: return a * b;
    default: return a / b;
  }
}

/* numpy broadcasting computed directly on indices. */
static void ref_broadcast(int op, const double *a, const int64_t *as, int an, const double *b,
                          const int64_t *bs, int bn, double *out, int64_t *os, int *on) {
  int nd = an > bn ? an : bn;
  int64_t n = 1;
  for (int i = 0; i < nd; ++i) {
    int64_t da = i - (nd - an) >= 0 ? as[i - (nd - an)] : 1;
    int64_t db = i - (nd - bn) >= 0 ? bs[i - (nd - bn)] : 1;
    os[i] = da == 1 ? db : da;
    n *= os[i];
  }
  *on = nd;
  for (int64_t f = 0; f < n; ++f) {
    int64_t rem = f, ia = 0, ib = 0, sa = 1, sb = 1;
    for (int i = nd - 1; i >= 0; --i) {
      int64_t idx = rem % os[i];
      rem /= os[i];
      int ka = i - (nd - an), kb = i - (nd - bn);
      if (ka >= 0) {
        if (as[ka] != 1) ia += idx * sa;
        sa *= as[ka];
      }
      if (kb >= 0) {
        if (bs[kb] != 1) ib += idx * sb;
        sb *= bs[kb];
      }
    }
    out[f] = ref_binary(op, a[ia], b[ib]);
  }
}

typedef struct bcast_case {
  int64_t as[4];
  int an;
  int64_t bs[4];
  int bn;
} bcast_case;

static const bcast_case bcast_cases[] = {
    {{2, 3}, 2, {2, 3}, 2},       {{2, 3}, 2, {3}, 1},         {{2, 1}, 2, {1, 3}, 2},
    {{0}, 0, {2, 2}, 2},          {{2, 2}, 2, {0}, 0},         {{0}, 0, {0}, 0},
    {{4, 1, 5}, 3, {3, 1}, 2},    {{2, 3}, 2, {2, 1}, 2},      {{300, 257}, 2, {257}, 1},
    {{300, 1}, 2, {1, 257}, 2},   {{300, 257}, 2, {300, 257}, 2}, {{0}, 0, {300, 257}, 2},
    {{3, 1, 200, 70}, 4, {2, 1, 70}, 3},
};
#define N_BCAST_CASES ((int)(sizeof bcast_cases / sizeof bcast_cases[0]))

static int64_t numel_of(const int64_t *shape, int nd) {
  int64_t n = 1;
  for (int i = 0; i < nd; ++i) n *= shape[i];
  return n;
}

static int64_t bcast_numel(const bcast_case *bc) {
  int nd = bc->an > bc->bn ? bc->an : bc->bn;
  int64_t n = 1;
  for (int i = 0; i < nd; ++i) {
    int ka = i - (nd - bc->an), kb = i - (nd - bc->bn);
    int64_t da = ka >= 0 ? bc->as[ka] : 1, db = kb >= 0 ? bc->bs[kb] : 1;
    n *= da == 1 ? db : da;
  }
  return n;
}

static void test_binary_forward_broadcast(void **state) {
  (void)state;
  mixp_session *s = mt_session();
  for (int c = 0; c < N_BCAST_CASES; ++c) {
    const bcast_case *bc = &bcast_cases[c];
    int64_t na = numel_of(bc->as, bc->an), nb = numel_of(bc->bs, bc->bn);
    double *av = malloc((size_t)na * sizeof(double)), *bv = malloc((size_t)nb * sizeof(double));
    mt_fill(av, na, -3, 3, 40 + (uint64_t)c);
    mt_fill(bv, nb, 0.5, 3, 80 + (uint64_t)c); /* positive: safe divisors */
    for (int d = 0; d < 4; ++d) {
      mixp_dtype dt = float_dtypes[d];
      mixp_tensor *a = mt_tensor(s, dt, av, bc->as, bc->an);
      mixp_tensor *b = mt_tensor(s, dt, bv, bc->bs, bc->bn);
      double *ar = mt_values(a), *br = mt_values(b);
      for (int op = B_ADD; op <= B_DIV; ++op) {
        int64_t os[MIXP_MAX_DIMS], gs[MIXP_MAX_DIMS];
        int on = 0, gn = 0;
        double *want = malloc((size_t)bcast_numel(bc) * sizeof(double));
        ref_broadcast(op, ar, bc->as, bc->an, br, bc->bs, bc->bn, want, os, &on);
        mixp_tensor *y = NULL;
        MT_OK(call_binary(op, a, b, &y));
        MT_OK(mixp_tensor_shape(y, gs, MIXP_MAX_DIMS, &gn));
        assert_int_equal(gn, on);
        for (int i = 0; i < on; ++i) assert_int_equal(gs[i], os[i]);
        check_values(s, dt, y, want, numel_of(os, on), op != B_DIV);
        free(want);
        mixp_tensor_release(y);
      }
      free(ar);
      free(br);
      mixp_tensor_release(a);
      mixp_tensor_release(b);
    }
    free(av);
    free(bv);
  }
  mixp_session_destroy(s);
}

/* Operands that are strided views (transposed, sliced) take the generic path. */
static void test_binary_strided_operands(void **state) {
  (void)state;
  mixp_session *s = mt_session();
  double av[12], bv[12], want[12];
  mt_fill(av, 12, -2, 2, 3);
  mt_fill(bv, 12, -2, 2, 4);
  int64_t as[2] = {3, 4}, bs[2] = {4, 3};
  mixp_tensor *a = mt_tensor(s, MIXP_F64, av, as, 2), *b = mt_tensor(s, MIXP_F64, bv, bs, 2);
  mixp_tensor *at = NULL, *y = NULL, *bsl = NULL, *y2 = NULL;
  MT_OK(mixp_transpose(a, 0, 1, &at)); /* [4,3], at[i][j] = a[j][i] */
  MT_OK(mixp_sub(at, b, &y));
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 3; ++j) want[i * 3 + j] = av[j * 4 + i] - bv[i * 3 + j];
  check_values(s, MIXP_F64, y, want, 12, 1);
  /* b[:, ::2] is [4,2]; at[:, 0:1] broadcasts over it: [4,1] * [4,2]. */
  mixp_tensor *acol = NULL;
  MT_OK(mixp_slice(b, 1, 0, 3, 2, &bsl));
  MT_OK(mixp_slice(at, 1, 0, 1, 1, &acol));
  MT_OK(mixp_mul(acol, bsl, &y2));
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 2; ++j) want[i * 2 + j] = av[0 * 4 + i] * bv[i * 3 + 2 * j];
  check_values(s, MIXP_F64, y2, want, 8, 1);
  mixp_tensor_release(a);
  mixp_tensor_release(b);
  mixp_tensor_release(at);
  mixp_tensor_release(y);
  mixp_tensor_release(bsl);
  mixp_tensor_release(acol);
  mixp_tensor_release(y2);
  mixp_session_destroy(s);
}

/* Contiguous half operands run through float tiles (F16C for f16 in the
 * AVX2/AVX-512 kernels), strided ones element by element with the software
 * conversion: both must give the same bits, NaNs and infinities included. */
static void expect_same_bits(const mixp_tensor *a, const mixp_tensor *b, const char *what) {
  const int64_t n = mixp_tensor_numel(a);
  assert_int_equal(n, mixp_tensor_numel(b));
  double *x = mt_values(a), *y = mt_values(b);
  for (int64_t i = 0; i < n; ++i)
    if (!(x[i] == y[i] && signbit(x[i]) == signbit(y[i])) && !(isnan(x[i]) && isnan(y[i]))) {
      print_error("%s %s element %lld: %.9g strided, %.9g contiguous\n", what,
                  mixp_dtype_name(mixp_tensor_dtype(a)), (long long)i, x[i], y[i]);
      fail();
    }
  free(x);
  free(y);
}

static void test_half_layouts_same_bits(void **state) {
  (void)state;
  mixp_session *s = mt_session();
  const int64_t rows = 37, cols = 1031, n = rows * cols; /* odd sizes reach the tiles' tails */
  int64_t shape[2] = {rows, cols}, tshape[2] = {cols, rows};
  double *v = malloc((size_t)n * sizeof(double)), *w = malloc((size_t)n * sizeof(double));
  mt_fill(v, n, -12, 12, 21);
  mt_fill(w, n, -3, 3, 22);
  v[5] = NAN, v[77] = INFINITY, v[901] = -INFINITY, v[1000] = -0.0, v[2000] = 1e-7, v[3000] = 70000.0;
  for (int d = 2; d < 4; ++d) {
    mixp_dtype dt = float_dtypes[d];
    mixp_tensor *x = mt_tensor(s, dt, v, shape, 2), *other = mt_tensor(s, dt, w, tshape, 2);
    mixp_tensor *xt = NULL, *xc = NULL;
    MT_OK(mixp_transpose(x, 0, 1, &xt));
    MT_OK(mixp_contiguous(xt, &xc));
    mixp_tensor *a = NULL, *b = NULL;
    MT_OK(mixp_gelu(xt, MIXP_GELU_TANH, &a));
    MT_OK(mixp_gelu(xc, MIXP_GELU_TANH, &b));
    expect_same_bits(a, b, "gelu");
    mixp_tensor_release(a), mixp_tensor_release(b);
    MT_OK(mixp_exp(xt, &a));
    MT_OK(mixp_exp(xc, &b));
    expect_same_bits(a, b, "exp");
    mixp_tensor_release(a), mixp_tensor_release(b);
    MT_OK(mixp_mul(xt, other, &a));
    MT_OK(mixp_mul(xc, other, &b));
    expect_same_bits(a, b, "mul");
    mixp_tensor_release(a), mixp_tensor_release(b);
    mixp_tensor_release(x), mixp_tensor_release(other), mixp_tensor_release(xt), mixp_tensor_release(xc);
  }
  free(v);
  free(w);
  mixp_session_destroy(s);
}

/* ---- gradients ----------------------------------------------------------------- */

/* Every unary row of the op table (op_rows.h) is gradchecked; this is the
 * op-specific part: where, and with which scalar, when not on [-3, 3] with
 * s = 1.5. An op listed more than once is checked at each entry. */
static const struct {
  const char *name;
  double s, lo, hi;
} grad_domains[] = {
    {"log", 0, 0.05, 5},           {"sqrt", 0, 0.1, 5},         {"pow", 2.5, 0.1, 3},
    {"pow", 3.0, -2, 2},           {"pow", -1.5, 0.2, 3},       {"pow", 0.0, -1, 1},
    {"add_scalar", 0.75, -3, 3},   {"mul_scalar", -1.5, -3, 3}, {"rsub_scalar", 1.25, -3, 3},
    {"rdiv_scalar", 2.0, 0.5, 3},  {"rdiv_scalar", -0.5, -3, -0.5},
};
#define N_GRAD_DOMAINS ((int)(sizeof grad_domains / sizeof grad_domains[0]))

/* The Custom rows of the table: their C signatures. */
static mixp_status call_custom_unary(const char *name, const mixp_tensor *x, mixp_tensor **out) {
  if (strcmp(name, "gelu") == 0) return mixp_gelu(x, MIXP_GELU_ERF, out);
  print_error("op '%s' has c_args Custom in src/core/ops.def: give it a call here\n", name);
  fail();
  return MIXP_ERR_INTERNAL;
}

typedef struct unary_ctx {
  const mt_unary_row *row;
  double s;
} unary_ctx;

static mixp_status unary_fn(mixp_tensor **in, int n, void *ctx, mixp_tensor **out) {
  (void)n;
  const unary_ctx *c = (const unary_ctx *)ctx;
  return mt_unary_row_call(c->row, in[0], c->s, call_custom_unary, out);
}

static void gradcheck_unary_on(mixp_session *s, const mt_unary_row *row, double sc, double lo,
                               double hi, uint64_t seed) {
  int64_t shape[2] = {2, 3};
  double vals[6];
  mt_fill(vals, 6, lo, hi, seed);
  /* Keep clear of the kinks at 0 and of the sqrt/log boundary. */
  for (int i = 0; i < 6; ++i)
    if (fabs(vals[i]) < 0.05) vals[i] = vals[i] < 0 ? -0.3 : 0.3;
  unary_ctx ctx = {row, sc};
  mt_input in = {vals, shape, 2, 1, MIXP_F64};
  mt_gradcheck(s, unary_fn, &ctx, &in, 1, 1e-6, 1e-6);
}

static void test_unary_gradcheck(void **state) {
  (void)state;
  mixp_session *s = mt_session();
  for (int r = 0; r < MT_UNARY_ROWS; ++r) {
    const mt_unary_row *row = &mt_unary_rows[r];
    int listed = 0;
    for (int d = 0; d < N_GRAD_DOMAINS; ++d)
      if (strcmp(grad_domains[d].name, row->name) == 0) {
        gradcheck_unary_on(s, row, grad_domains[d].s, grad_domains[d].lo, grad_domains[d].hi,
                           200 + (uint64_t)(r * 8 + listed++));
      }
    if (!listed) gradcheck_unary_on(s, row, 1.5, -3, 3, 200 + (uint64_t)r * 8);
  }
  /* mixp_gelu's second formula is the gelu_tanh row, checked above. */
  mixp_session_destroy(s);
}

static mixp_status binary_fn(mixp_tensor **in, int n, void *ctx, mixp_tensor **out) {
  (void)n;
  return ((const mt_binary_row *)ctx)->f(in[0], in[1], out);
}

static void test_binary_gradcheck(void **state) {
  (void)state;
  mixp_session *s = mt_session();
  static const bcast_case cases[] = {
      {{2, 3}, 2, {2, 3}, 2}, {{2, 3}, 2, {3}, 1},  {{2, 1}, 2, {1, 3}, 2},
      {{0}, 0, {2, 2}, 2},    {{2, 2}, 2, {0}, 0},  {{2, 1, 3}, 3, {2, 1}, 2},
  };
  double av[12], bv[12];
  for (int c = 0; c < (int)(sizeof cases / sizeof cases[0]); ++c) {
    mt_fill(av, 12, -2, 2, 300 + (uint64_t)c);
    mt_fill(bv, 12, 0.5, 2, 400 + (uint64_t)c);
    for (int r = 0; r < MT_BINARY_ROWS; ++r) { /* every binary row of the op table */
      void *row = (void *)&mt_binary_rows[r];
      mt_input in[2] = {{av, cases[c].as, cases[c].an, 1, MIXP_F64},
                        {bv, cases[c].bs, cases[c].bn, 1, MIXP_F64}};
      mt_gradcheck(s, binary_fn, row, in, 2, 1e-6, 1e-6);
      /* Only one side requiring grad. */
      in[0].requires_grad = 0;
      mt_gradcheck(s, binary_fn, row, in, 2, 1e-6, 1e-6);
      in[0].requires_grad = 1;
      in[1].requires_grad = 0;
      mt_gradcheck(s, binary_fn, row, in, 2, 1e-6, 1e-6);
    }
  }
  mixp_session_destroy(s);
}

/* d/dx of op(x) by backward in every dtype, against the double derivative. */
static void test_unary_backward_all_dtypes(void **state) {
  (void)state;
  mixp_session *s = mt_session();
  int64_t shape[1] = {32};
  double vals[32], want[32];
  for (int c = 0; c < N_UNARY_CASES; ++c) {
    const unary_case *uc = &unary_cases[c];
    mt_fill(vals, 32, uc->lo, uc->hi, 500 + (uint64_t)c);
    for (int i = 0; i < 32; ++i)
      if (fabs(vals[i]) < 0.05) vals[i] = 0.3;
    if (uc->op == U_SQRT)
      for (int i = 0; i < 32; ++i) vals[i] += 0.1;
    for (int d = 0; d < 4; ++d) {
      mixp_dtype dt = float_dtypes[d];
      mixp_tensor *x = mt_tensor(s, dt, vals, shape, 1), *y = NULL, *seed = NULL, *g = NULL;
      MT_OK(mixp_tensor_set_requires_grad(x, 1));
      double *xv = mt_values(x);
      for (int i = 0; i < 32; ++i) want[i] = ref_derivative(uc->op, xv[i], uc->s);
      MT_OK(call_unary(uc->op, x, uc->s, &y));
      assert_int_equal(mixp_tensor_requires_grad(y), 1);
      assert_int_equal(mixp_tensor_is_leaf(y), 0);
      MT_OK(mixp_tensor_ones(s, dt, shape, 1, &seed));
      MT_OK(mixp_backward(y, seed));
      MT_OK(mixp_tensor_grad(x, &g));
      assert_non_null(g);
      assert_int_equal(mixp_tensor_dtype(g), dt);
      double *gv = mt_values(g);
      /* Half types: the saved values and the result are each rounded. */
      double tol = dt == MIXP_F64 ? 1e-12 : dt == MIXP_F32 ? 1e-5 : dt == MIXP_F16 ? 4e-3 : 3e-2;
      mt_assert_close(gv, want, 32, tol, tol);
      free(gv);
      free(xv);
      mixp_tensor_release(g);
      mixp_tensor_release(seed);
      mixp_tensor_release(y);
      mixp_tensor_release(x);
    }
  }
  mixp_session_destroy(s);
}

/* relu's backward reads its output: y > 0 exactly where x > 0, so the
 * gradient is g where x > 0 and 0 elsewhere, at NaN, -0, +0, tiny values
 * (zero in f16) and the infinities too, in every float dtype (bit for bit:
 * +0 or g itself).
 * And relu keeps no reference to its input: an intermediate that only relu
 * read is freed when the caller releases it (a conv-BN-ReLU keeps one
 * activation less). */
static void test_relu_saves_output(void **state) {
  (void)state;
  mixp_session *s = mt_session();
  enum { N = 9 };
  const double vals[N] = {NAN, -0.0, 0.0, -1.0, 1.0, 1e-30, -1e-30, INFINITY, -INFINITY};
  const int64_t shape[1] = {N};
  for (int d = 0; d < 4; ++d) {
    const mixp_dtype dt = float_dtypes[d];
    mixp_tensor *p = mt_tensor(s, dt, vals, shape, 1), *h = NULL, *y = NULL, *seed = NULL, *g = NULL;
    MT_OK(mixp_tensor_set_requires_grad(p, 1));
    MT_OK(mixp_mul_scalar(p, 1.0, &h)); /* saves nothing */
    double *hv = mt_values(h);
    MT_OK(mixp_relu(h, &y));
    const uint64_t before = mt_current_bytes(s);
    mixp_tensor_release(h);
    assert_int_equal(mt_current_bytes(s), before - (uint64_t)N * (uint64_t)mixp_dtype_size(dt));
    double gs[N];
    for (int i = 0; i < N; ++i) gs[i] = 1.5 + i;
    MT_OK(mixp_backward(y, (seed = mt_tensor(s, dt, gs, shape, 1))));
    MT_OK(mixp_tensor_grad(p, &g));
    double *gv = mt_values(g), *sv = mt_values(seed);
    for (int i = 0; i < N; ++i) {
      const double want = hv[i] > 0 ? sv[i] : 0.0;
      assert_memory_equal(&gv[i], &want, sizeof want); /* +0, never -0 or NaN */
    }
    free(gv);
    free(sv);
    free(hv);
    mixp_tensor_release(g);
    mixp_tensor_release(seed);
    mixp_tensor_release(y);
    mixp_tensor_release(p);
  }
  mixp_session_destroy(s);
}

static void test_no_grad_records_nothing(void **state) {
  (void)state;
  mixp_session *s = mt_session();
  double v[3] = {1, 2, 3};
  int64_t shape[1] = {3};
  mixp_tensor *x = mt_tensor(s, MIXP_F32, v, shape, 1), *y = NULL, *z = NULL;
  MT_OK(mixp_tensor_set_requires_grad(x, 1));
  MT_OK(mixp_no_grad_begin(s));
  MT_OK(mixp_exp(x, &y));
  MT_OK(mixp_mul(x, x, &z));
  MT_OK(mixp_no_grad_end(s));
  assert_int_equal(mixp_tensor_requires_grad(y), 0);
  assert_int_equal(mixp_tensor_requires_grad(z), 0);
  mixp_tensor_release(y);
  mixp_tensor_release(z);
  /* x*x outside: both edges feed the same leaf, gradient 2x. */
  mixp_tensor *loss = NULL, *g = NULL;
  MT_OK(mixp_mul(x, x, &z));
  MT_OK(mixp_sum(z, NULL, 0, 0, &loss));
  MT_OK(mixp_backward(loss, NULL));
  MT_OK(mixp_tensor_grad(x, &g));
  double *gv = mt_values(g), want[3] = {2, 4, 6};
  mt_assert_close(gv, want, 3, 0, 0);
  free(gv);
  mixp_tensor_release(g);
  mixp_tensor_release(loss);
  mixp_tensor_release(z);
  mixp_tensor_release(x);
  mixp_session_destroy(s);
}

/* ---- misuse ---------------------------------------------------------------------- */

static char sentinel_storage;
#define SENTINEL ((mixp_tensor *)(void *)&sentinel_storage)

/* Asserts the call fails as described and leaves *out untouched. */
#define FAILS_UNTOUCHED(call_with_out, status, needle)    \
  do {                                                    \
    out = SENTINEL;                                       \
    MT_FAILS(call_with_out, status, needle);              \
    assert_ptr_equal(out, SENTINEL);                      \
  } while (0)

static void assert_error_mentions(const char *needle) {
  if (strstr(mixp_last_error(), needle) == NULL) {
    print_error("message \"%s\" lacks \"%s\"\n", mixp_last_error(), needle);
    fail();
  }
}

static void test_binary_misuse(void **state) {
  (void)state;
  mixp_session *s = mt_session(), *s2 = mt_session();
  int64_t s23[2] = {2, 3}, s4[1] = {4};
  mixp_tensor *f32 = NULL, *f64 = NULL, *f32b = NULL, *i32 = NULL, *other = NULL, *out = NULL;
  MT_OK(mixp_tensor_ones(s, MIXP_F32, s23, 2, &f32));
  MT_OK(mixp_tensor_ones(s, MIXP_F64, s23, 2, &f64));
  MT_OK(mixp_tensor_ones(s, MIXP_F32, s4, 1, &f32b));
  MT_OK(mixp_tensor_zeros(s, MIXP_I32, s23, 2, &i32));
  MT_OK(mixp_tensor_ones(s2, MIXP_F32, s23, 2, &other));
  for (int op = B_ADD; op <= B_DIV; ++op) {
    const char *fn = binary_fn_names[op];
    FAILS_UNTOUCHED(call_binary(op, NULL, f32, &out), MIXP_ERR_INVALID_ARGUMENT, "a is NULL");
    assert_error_mentions(fn);
    FAILS_UNTOUCHED(call_binary(op, f32, NULL, &out), MIXP_ERR_INVALID_ARGUMENT, "b is NULL");
    assert_error_mentions(fn);
    MT_FAILS(call_binary(op, f32, f32, NULL), MIXP_ERR_INVALID_ARGUMENT, "out is NULL");
    assert_error_mentions(fn);
    FAILS_UNTOUCHED(call_binary(op, f32, f64, &out), MIXP_ERR_DTYPE, "a is f32");
    assert_error_mentions("b is f64");
    assert_error_mentions(fn);
    FAILS_UNTOUCHED(call_binary(op, f32, f32b, &out), MIXP_ERR_SHAPE, "[2,3]");
    assert_error_mentions("[4]");
    assert_error_mentions(fn);
    FAILS_UNTOUCHED(call_binary(op, i32, i32, &out), MIXP_ERR_DTYPE, "i32");
    assert_error_mentions(fn);
    FAILS_UNTOUCHED(call_binary(op, f32, i32, &out), MIXP_ERR_DTYPE, "b must be a float");
    FAILS_UNTOUCHED(call_binary(op, f32, other, &out), MIXP_ERR_DEVICE, "different sessions");
    assert_error_mentions(fn);
  }
  mixp_tensor_release(f32);
  mixp_tensor_release(f64);
  mixp_tensor_release(f32b);
  mixp_tensor_release(i32);
  mixp_tensor_release(other);
  mixp_session_destroy(s);
  mixp_session_destroy(s2);
}

static void test_unary_misuse(void **state) {
  (void)state;
  mixp_session *s = mt_session();
  int64_t s23[2] = {2, 3};
  mixp_tensor *f32 = NULL, *i64 = NULL, *u8 = NULL, *out = NULL;
  MT_OK(mixp_tensor_ones(s, MIXP_F32, s23, 2, &f32));
  MT_OK(mixp_tensor_zeros(s, MIXP_I64, s23, 2, &i64));
  MT_OK(mixp_tensor_zeros(s, MIXP_U8, s23, 2, &u8));
  for (int op = 0; op < U_COUNT; ++op) {
    const char *fn = unary_fn_names[op];
    FAILS_UNTOUCHED(call_unary(op, NULL, 2.0, &out), MIXP_ERR_INVALID_ARGUMENT, "x is NULL");
    assert_error_mentions(fn);
    MT_FAILS(call_unary(op, f32, 2.0, NULL), MIXP_ERR_INVALID_ARGUMENT, "out is NULL");
    assert_error_mentions(fn);
    FAILS_UNTOUCHED(call_unary(op, i64, 2.0, &out), MIXP_ERR_DTYPE, "got i64");
    assert_error_mentions(fn);
    FAILS_UNTOUCHED(call_unary(op, u8, 2.0, &out), MIXP_ERR_DTYPE, "got u8");
  }
  /* Every unary row of the op table, named by its C function. */
  for (int r = 0; r < MT_UNARY_ROWS; ++r) {
    const mt_unary_row *row = &mt_unary_rows[r];
    FAILS_UNTOUCHED(mt_unary_row_call(row, NULL, 2.0, call_custom_unary, &out),
                    MIXP_ERR_INVALID_ARGUMENT, "x is NULL");
    assert_error_mentions(row->c_function);
    MT_FAILS(mt_unary_row_call(row, f32, 2.0, call_custom_unary, NULL), MIXP_ERR_INVALID_ARGUMENT,
             "out is NULL");
    FAILS_UNTOUCHED(mt_unary_row_call(row, i64, 2.0, call_custom_unary, &out), MIXP_ERR_DTYPE,
                    "got i64");
    assert_error_mentions(row->c_function);
  }
  FAILS_UNTOUCHED(mixp_gelu(f32, (mixp_gelu_approx)7, &out), MIXP_ERR_INVALID_ARGUMENT,
                  "approx is 7");
  assert_error_mentions("mixp_gelu");
  FAILS_UNTOUCHED(mixp_gelu(f32, (mixp_gelu_approx)-1, &out), MIXP_ERR_INVALID_ARGUMENT,
                  "approx is -1");
  mixp_tensor_release(f32);
  mixp_tensor_release(i64);
  mixp_tensor_release(u8);
  mixp_session_destroy(s);
}

/* A tensor whose session was destroyed can be read but not computed on. */
static void test_closed_session(void **state) {
  (void)state;
  mixp_session *s = mt_session();
  int64_t s2[1] = {2};
  mixp_tensor *x = NULL, *out = NULL;
  MT_OK(mixp_tensor_ones(s, MIXP_F32, s2, 1, &x));
  mixp_session_destroy(s);
  FAILS_UNTOUCHED(mixp_exp(x, &out), MIXP_ERR_STATE, "mixp_exp");
  FAILS_UNTOUCHED(mixp_add(x, x, &out), MIXP_ERR_STATE, "mixp_add");
  mixp_tensor_release(x);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_unary_forward_all_dtypes),
      cmocka_unit_test(test_unary_large_and_strided),
      cmocka_unit_test(test_unary_special_values),
      cmocka_unit_test(test_binary_forward_broadcast),
      cmocka_unit_test(test_binary_strided_operands),
      cmocka_unit_test(test_half_layouts_same_bits),
      cmocka_unit_test(test_unary_gradcheck),
      cmocka_unit_test(test_binary_gradcheck),
      cmocka_unit_test(test_unary_backward_all_dtypes),
      cmocka_unit_test(test_relu_saves_output),
      cmocka_unit_test(test_no_grad_records_nothing),
      cmocka_unit_test(test_binary_misuse),
      cmocka_unit_test(test_unary_misuse),
      cmocka_unit_test(test_closed_session),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
