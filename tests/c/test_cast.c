/* mixp_cast: exhaustive checks of the 16-bit float formats against an
 * independent reference written here (values decoded with ldexp, rounding by
 * nearest-neighbour search over the enumerated format with ties to the even
 * pattern), plus integer conversions and casts of non-contiguous views. */
#include <float.h>

#include "test_util.h"

/* ---- reference ------------------------------------------------------------ */

typedef struct half_format {
  const char *name;
  mixp_dtype dtype;
  int mant_bits;       /* explicit mantissa bits */
  int exp_bits;
  uint16_t inf;        /* +inf pattern; patterns below it are the finite positives */
  double *values;      /* values[i] = value of pattern i for i < inf; values[inf] = 2^(emax+1) */
} half_format;

static double decode(const half_format *f, uint16_t h) {
  int sign = h >> 15;
  int e = (h >> f->mant_bits) & ((1 << f->exp_bits) - 1);
  int m = h & ((1 << f->mant_bits) - 1);
  int bias = (1 << (f->exp_bits - 1)) - 1;
  double v;
  if (e == (1 << f->exp_bits) - 1) {
    v = m ? NAN : INFINITY;
  } else if (e == 0) {
    v = ldexp((double)m, 1 - bias - f->mant_bits);
  } else {
    v = ldexp((double)(m + (1 << f->mant_bits)), e - bias - f->mant_bits);
  }
  return sign ? -v : v;
}

static half_format F16 = {"f16", MIXP_F16, 10, 5, 0x7C00, NULL};
static half_format BF16 = {"bf16", MIXP_BF16, 7, 8, 0x7F80, NULL};

static void build_table(half_format *f) {
  if (f->values) return;
  f->values = (double *)malloc(((size_t)f->inf + 1) * sizeof(double));
  for (unsigned i = 0; i < f->inf; ++i) f->values[i] = decode(f, (uint16_t)i);
  int bias = (1 << (f->exp_bits - 1)) - 1;
  f->values[f->inf] = ldexp(1.0, bias + 1); /* where the next binade would start */
}

/* The correctly rounded pattern of x (one rounding of the exact value). */
static uint16_t ref_round(const half_format *f, double x) {
  if (isnan(x)) return (uint16_t)((signbit(x) ? 0x8000 : 0) | f->inf | (1u << (f->mant_bits - 1)));
  uint16_t sign = signbit(x) ? 0x8000 : 0;
  double a = fabs(x);
  const double *v = f->values;
  if (a >= v[f->inf]) return sign | f->inf;
  unsigned lo = 0, hi = f->inf; /* v[lo] <= a < v[hi] */
  while (hi - lo > 1) {
    unsigned mid = (lo + hi) / 2;
    if (v[mid] <= a) lo = mid;
    else hi = mid;
  }
  unsigned r;
  if (v[lo] == a) {
    r = lo;
  } else {
    double m = 0.5 * (v[lo] + v[lo + 1]); /* exact: both have few significant bits */
    if (a < m) r = lo;
    else if (a > m) r = lo + 1;
    else r = (lo & 1) ? lo + 1 : lo;
  }
  return (uint16_t)(sign | r);
}

static int is_half_nan(const half_format *f, uint16_t h) {
  return (h & 0x7FFF) > f->inf;
}

/* ---- helpers ----------------------------------------------------------------- */

static int setup(void **state) {
  build_table(&F16);
  build_table(&BF16);
  *state = mt_session();
  return *state ? 0 : -1;
}
static int teardown(void **state) {
  mixp_session_destroy((mixp_session *)*state);
  free(F16.values);
  free(BF16.values);
  F16.values = BF16.values = NULL;
  return 0;
}

/* Casts n elements of `src` (dtype `from`) to `to` and copies them to `dst`. */
static void cast_host(mixp_session *s, const void *src, int64_t n, mixp_dtype from, mixp_dtype to,
                      void *dst) {
  mixp_tensor *a = NULL, *b = NULL;
  MT_OK(mixp_tensor_from_host(s, src, (size_t)n * mixp_dtype_size(from), from, &n, 1, &a));
  MT_OK(mixp_cast(a, to, &b));
  assert_int_equal(mixp_tensor_dtype(b), to);
  assert_int_equal(mixp_tensor_numel(b), n);
  MT_OK(mixp_tensor_to_host(b, dst, (size_t)n * mixp_dtype_size(to)));
  mixp_tensor_release(a);
  mixp_tensor_release(b);
}

static int check_half_result(const half_format *f, const char *what, int64_t i, double input,
                             uint16_t got, uint16_t want) {
  if (is_half_nan(f, want)) {
    if (is_half_nan(f, got) && (got & 0x8000) == (want & 0x8000)) return 1;
  } else if (got == want) {
    return 1;
  }
  print_error("%s -> %s element %lld: input %.17g gave 0x%04X (%.17g), want 0x%04X (%.17g)\n",
              what, f->name, (long long)i, input, got, decode(f, got), want, decode(f, want));
  return 0;
}

/* ---- self-check of the reference -------------------------------------------- */

static void test_reference_sanity(void **state) {
  (void)state;
  assert_true(decode(&F16, 0x3C00) == 1.0);
  assert_true(decode(&F16, 0x7BFF) == 65504.0);
  assert_true(decode(&F16, 0x0001) == ldexp(1, -24));
  assert_true(decode(&F16, 0x2E66) == 0.0999755859375);
  assert_true(decode(&BF16, 0x3F80) == 1.0);
  assert_true(decode(&BF16, 0x0001) == ldexp(1, -133));
  assert_int_equal(ref_round(&F16, 65520.0), 0x7C00);
  assert_int_equal(ref_round(&F16, nextafter(65520.0, 0)), 0x7BFF);
  assert_int_equal(ref_round(&F16, ldexp(1, -25)), 0x0000);
  assert_int_equal(ref_round(&F16, -ldexp(1, -25)), 0x8000);
  assert_int_equal(ref_round(&F16, 3 * ldexp(1, -25)), 0x0002);
  assert_int_equal(ref_round(&F16, 0.1), 0x2E66);
  assert_int_equal(ref_round(&BF16, 1.00390625), 0x3F80);
  assert_int_equal(ref_round(&BF16, 1.01171875), 0x3F82); /* 1+3*2^-8: tie -> even */
}

/* ---- half -> f32 / f64 over all 65,536 patterns ------------------------------ */

static void widen_all(mixp_session *s, const half_format *f) {
  enum { N = 65536 };
  uint16_t *bits = (uint16_t *)malloc(N * sizeof(uint16_t));
  float *f32 = (float *)malloc(N * sizeof(float));
  double *f64 = (double *)malloc(N * sizeof(double));
  for (int i = 0; i < N; ++i) bits[i] = (uint16_t)i;
  cast_host(s, bits, N, f->dtype, MIXP_F32, f32);
  cast_host(s, bits, N, f->dtype, MIXP_F64, f64);
  int bad = 0;
  for (int i = 0; i < N && bad < 10; ++i) {
    double want = decode(f, (uint16_t)i);
    int ok32, ok64;
    if (isnan(want)) {
      ok32 = isnan(f32[i]) && !!signbit(f32[i]) == !!signbit(want);
      ok64 = isnan(f64[i]) && !!signbit(f64[i]) == !!signbit(want);
    } else {
      ok32 = (double)f32[i] == want && !!signbit(f32[i]) == !!signbit(want);
      ok64 = f64[i] == want && !!signbit(f64[i]) == !!signbit(want);
    }
    if (!ok32 || !ok64) {
      print_error("%s 0x%04X: want %.17g, f32 gave %.17g, f64 gave %.17g\n", f->name, i, want,
                  (double)f32[i], f64[i]);
      ++bad;
    }
  }
  free(bits);
  free(f32);
  free(f64);
  if (bad) fail();
}

static void test_f16_widen_all(void **state) { widen_all((mixp_session *)*state, &F16); }
static void test_bf16_widen_all(void **state) { widen_all((mixp_session *)*state, &BF16); }

/* ---- f32 / f64 -> half at every value, midpoint and its neighbours ----------- */

/* Inputs: every finite value, every midpoint to the next value (the last one
 * is the overflow threshold), the neighbours of each midpoint in the source
 * precision, all with both signs, and a few specials. */
static int64_t narrow_inputs(const half_format *f, int f32_source, double *out) {
  int64_t n = 0;
  for (unsigned i = 0; i < f->inf; ++i) {
    double v = f->values[i], m = 0.5 * (f->values[i] + f->values[i + 1]);
    double below = f32_source ? (double)nextafterf((float)m, 0.0f) : nextafter(m, 0.0);
    double above = f32_source ? (double)nextafterf((float)m, INFINITY) : nextafter(m, INFINITY);
    const double pts[4] = {v, m, below, above};
    for (int k = 0; k < 4; ++k) {
      out[n++] = pts[k];
      out[n++] = -pts[k];
    }
  }
  const double specials[] = {INFINITY, -INFINITY, 1e10, -1e10, 1e300 * (f32_source ? 0 : 1),
                             (double)FLT_MAX, -(double)FLT_MAX, (double)FLT_TRUE_MIN,
                             -(double)FLT_TRUE_MIN, 1e-300, -1e-300, 0.1, -0.1, 1.0 / 3.0};
  for (size_t k = 0; k < sizeof specials / sizeof specials[0]; ++k) {
    double x = specials[k];
    out[n++] = f32_source ? (double)(float)x : x;
  }
  return n;
}

static void narrow_all(mixp_session *s, const half_format *f, int f32_source) {
  int64_t cap = (int64_t)f->inf * 8 + 64;
  double *in = (double *)malloc((size_t)cap * sizeof(double));
  int64_t n = narrow_inputs(f, f32_source, in);
  uint16_t *got = (uint16_t *)malloc((size_t)n * sizeof(uint16_t));
  if (f32_source) {
    float *in32 = (float *)malloc((size_t)n * sizeof(float));
    for (int64_t i = 0; i < n; ++i) {
      in32[i] = (float)in[i];
      assert_true((double)in32[i] == in[i] || isnan(in[i])); /* all exact in f32 */
    }
    cast_host(s, in32, n, MIXP_F32, f->dtype, got);
    free(in32);
  } else {
    cast_host(s, in, n, MIXP_F64, f->dtype, got);
  }
  int bad = 0;
  for (int64_t i = 0; i < n && bad < 10; ++i)
    if (!check_half_result(f, f32_source ? "f32" : "f64", i, in[i], got[i], ref_round(f, in[i])))
      ++bad;
  free(in);
  free(got);
  if (bad) fail();
}

static void test_f32_to_f16(void **state) { narrow_all((mixp_session *)*state, &F16, 1); }
static void test_f64_to_f16(void **state) { narrow_all((mixp_session *)*state, &F16, 0); }
static void test_f32_to_bf16(void **state) { narrow_all((mixp_session *)*state, &BF16, 1); }
static void test_f64_to_bf16(void **state) { narrow_all((mixp_session *)*state, &BF16, 0); }

/* A value just above a midpoint by less than an f32 ulp: rounding through f32
 * first would land on the midpoint and then round to even (down). */
static void test_f64_no_double_rounding(void **state) {
  mixp_session *s = (mixp_session *)*state;
  /* f16: 1 + 2^-11 is the midpoint of 1 and 1+2^-10; add 2^-40. */
  const double h_in[4] = {1.0 + ldexp(1, -11) + ldexp(1, -40), -(1.0 + ldexp(1, -11) + ldexp(1, -40)),
                          2048.0 + 1.0 + ldexp(1, -30), 65520.0 - ldexp(1, -20)};
  const uint16_t h_want[4] = {0x3C01, 0xBC01, 0x6801, 0x7BFF};
  uint16_t got[4];
  cast_host(s, h_in, 4, MIXP_F64, MIXP_F16, got);
  for (int i = 0; i < 4; ++i) {
    if (got[i] != h_want[i]) {
      print_error("f64 %.17g -> f16 0x%04X, want 0x%04X\n", h_in[i], got[i], h_want[i]);
      fail();
    }
  }
  /* bf16: 1 + 2^-8 is the midpoint of 1 and 1+2^-7; add 2^-40. */
  const double b_in[2] = {1.0 + ldexp(1, -8) + ldexp(1, -40), 1.0 + ldexp(1, -8) - ldexp(1, -40)};
  const uint16_t b_want[2] = {0x3F81, 0x3F80};
  cast_host(s, b_in, 2, MIXP_F64, MIXP_BF16, got);
  for (int i = 0; i < 2; ++i) {
    if (got[i] != b_want[i]) {
      print_error("f64 %.17g -> bf16 0x%04X, want 0x%04X\n", b_in[i], got[i], b_want[i]);
      fail();
    }
  }
}

/* Random doubles over the whole range, including subnormal and overflowing. */
static void test_f64_random_to_half(void **state) {
  mixp_session *s = (mixp_session *)*state;
  enum { N = 100000 };
  double *u = (double *)malloc(N * 2 * sizeof(double));
  double *in = (double *)malloc(N * sizeof(double));
  uint16_t *got = (uint16_t *)malloc(N * sizeof(uint16_t));
  mt_fill(u, 2 * N, 0.0, 1.0, 77);
  const half_format *fs[2] = {&F16, &BF16};
  const int emin[2] = {-27, -136}, emax[2] = {17, 129};
  for (int k = 0; k < 2; ++k) {
    for (int i = 0; i < N; ++i) {
      int e = emin[k] + (int)(u[2 * i] * (emax[k] - emin[k] + 1));
      double m = 1.0 + u[2 * i + 1];
      in[i] = ldexp(i % 2 ? -m : m, e);
    }
    cast_host(s, in, N, MIXP_F64, fs[k]->dtype, got);
    int bad = 0;
    for (int i = 0; i < N && bad < 10; ++i)
      if (!check_half_result(fs[k], "f64", i, in[i], got[i], ref_round(fs[k], in[i]))) ++bad;
    if (bad) fail();
    /* f32 sources: the same values rounded to f32 first. */
    float *in32 = (float *)malloc(N * sizeof(float));
    for (int i = 0; i < N; ++i) in32[i] = (float)in[i];
    cast_host(s, in32, N, MIXP_F32, fs[k]->dtype, got);
    for (int i = 0; i < N && bad < 10; ++i)
      if (!check_half_result(fs[k], "f32", i, in32[i], got[i], ref_round(fs[k], (double)in32[i])))
        ++bad;
    free(in32);
    if (bad) fail();
  }
  free(u);
  free(in);
  free(got);
}

static void test_nan_to_half(void **state) {
  mixp_session *s = (mixp_session *)*state;
  const uint32_t f32_nans[] = {0x7fc00000u, 0xffc00000u, 0x7f800001u, 0xff800001u, 0x7fbfffffu,
                               0x7f802000u, 0x7fffffffu, 0xffffffffu, 0x7f800100u, 0xff801000u};
  enum { NF = sizeof f32_nans / sizeof f32_nans[0] };
  uint16_t got[16];
  const half_format *fs[2] = {&F16, &BF16};
  for (int k = 0; k < 2; ++k) {
    cast_host(s, f32_nans, NF, MIXP_F32, fs[k]->dtype, got);
    for (int i = 0; i < NF; ++i) {
      if (!is_half_nan(fs[k], got[i]) || (got[i] >> 15) != (f32_nans[i] >> 31)) {
        print_error("f32 NaN 0x%08X -> %s 0x%04X (want a NaN with the same sign)\n", f32_nans[i],
                    fs[k]->name, got[i]);
        fail();
      }
    }
  }
  const uint64_t f64_nans[] = {0x7ff8000000000000ull, 0xfff8000000000000ull,
                               0x7ff0000000000001ull, 0xfff0000000000001ull,
                               0x7ff0000020000000ull, 0x7ff0000000100000ull};
  enum { ND = sizeof f64_nans / sizeof f64_nans[0] };
  for (int k = 0; k < 2; ++k) {
    cast_host(s, f64_nans, ND, MIXP_F64, fs[k]->dtype, got);
    for (int i = 0; i < ND; ++i) {
      if (!is_half_nan(fs[k], got[i]) || (got[i] >> 15) != (uint16_t)(f64_nans[i] >> 63)) {
        print_error("f64 NaN 0x%016llX -> %s 0x%04X (want a NaN with the same sign)\n",
                    (unsigned long long)f64_nans[i], fs[k]->name, got[i]);
        fail();
      }
    }
  }
  float f32got[ND];
  cast_host(s, f64_nans, ND, MIXP_F64, MIXP_F32, f32got);
  for (int i = 0; i < ND; ++i) {
    assert_true(isnan(f32got[i]));
    assert_int_equal(!!signbit(f32got[i]), (int)(f64_nans[i] >> 63));
  }
}

/* The exact NaN bits of f16 <-> f32, which the software conversions and
 * F16C's instructions (used by the AVX2 and AVX-512 kernel versions) must
 * share so that results never depend on the CPU: a NaN keeps its sign and the
 * top bits of its payload and comes out quiet, signalling ones included. The
 * suite also runs with MIXP_CPU_KERNELS=baseline and avx2 (CMake). Odd
 * lengths reach the vector loops' tails. */
static void test_f16_nan_bits(void **state) {
  mixp_session *s = (mixp_session *)*state;
  enum { N = 2048 + 5 };
  uint16_t h[N];
  float f32[N];
  for (int i = 0; i < N; ++i) {
    const uint16_t m = (uint16_t)(1 + i % 1023); /* every NaN payload */
    h[i] = (uint16_t)((i >= 1024 ? 0x8000 : 0) | 0x7C00 | m);
  }
  cast_host(s, h, N, MIXP_F16, MIXP_F32, f32);
  for (int i = 0; i < N; ++i) {
    uint32_t got, want = ((uint32_t)(h[i] & 0x8000) << 16) | 0x7F800000u | ((uint32_t)(h[i] & 0x3FF) << 13) |
                         0x00400000u;
    memcpy(&got, &f32[i], 4);
    if (got != want) {
      print_error("f16 0x%04X -> f32 0x%08X, want 0x%08X\n", h[i], got, want);
      fail();
    }
  }
  uint32_t u[N];
  for (int i = 0; i < N; ++i) u[i] = (i & 1 ? 0xFF800000u : 0x7F800000u) | (uint32_t)(1 + (i * 4099u) % 0x7FFFFFu);
  memcpy(f32, u, sizeof u);
  uint16_t got[N];
  cast_host(s, f32, N, MIXP_F32, MIXP_F16, got);
  for (int i = 0; i < N; ++i) {
    const uint16_t want = (uint16_t)(((u[i] >> 16) & 0x8000) | 0x7E00 | ((u[i] >> 13) & 0x3FF));
    if (got[i] != want) {
      print_error("f32 0x%08X -> f16 0x%04X, want 0x%04X\n", u[i], got[i], want);
      fail();
    }
  }
}

/* ---- half <-> half directly: one rounding of the exact value ---------------- */

static void half_to_half(mixp_session *s, const half_format *from, const half_format *to) {
  enum { N = 65536 };
  uint16_t *bits = (uint16_t *)malloc(N * sizeof(uint16_t));
  uint16_t *got = (uint16_t *)malloc(N * sizeof(uint16_t));
  for (int i = 0; i < N; ++i) bits[i] = (uint16_t)i;
  cast_host(s, bits, N, from->dtype, to->dtype, got);
  int bad = 0;
  for (int i = 0; i < N && bad < 10; ++i) {
    double x = decode(from, (uint16_t)i);
    if (!check_half_result(to, from->name, i, x, got[i], ref_round(to, x))) ++bad;
  }
  free(bits);
  free(got);
  if (bad) fail();
}

static void test_f16_to_bf16_all(void **state) { half_to_half((mixp_session *)*state, &F16, &BF16); }
static void test_bf16_to_f16_all(void **state) { half_to_half((mixp_session *)*state, &BF16, &F16); }

/* ---- f32 <-> f64 ------------------------------------------------------------- */

static void test_f32_f64(void **state) {
  mixp_session *s = (mixp_session *)*state;
  enum { N = 4096 };
  double in[N], back[N];
  float got[N];
  mt_fill(in, N, -1.0, 1.0, 5);
  for (int i = 0; i < N; ++i) in[i] = ldexp(in[i], (i % 300) - 150);
  in[0] = 1e300;
  in[1] = -1e300;
  in[2] = 1e-320;
  in[3] = -0.0;
  in[4] = (double)FLT_MAX * (1 + ldexp(1, -25)); /* rounds to FLT_MAX */
  in[5] = (double)FLT_MAX * (1 + ldexp(1, -24)); /* midpoint to 2^128: inf */
  cast_host(s, in, N, MIXP_F64, MIXP_F32, got);
  for (int i = 0; i < N; ++i) {
    float want = (float)in[i]; /* the C conversion rounds to nearest even */
    if (memcmp(&want, &got[i], sizeof want) != 0) {
      print_error("f64 %.17g -> f32 %.9g, want %.9g\n", in[i], (double)got[i], (double)want);
      fail();
    }
  }
  cast_host(s, got, N, MIXP_F32, MIXP_F64, back);
  for (int i = 0; i < N; ++i) assert_true(back[i] == (double)got[i] || isnan(back[i]));
  assert_true(isinf(got[5]) && isinf(back[1]) && back[1] < 0);
}

/* ---- integers ------------------------------------------------------------------ */

static void test_float_to_int(void **state) {
  mixp_session *s = (mixp_session *)*state;
  const double vals[8] = {2.7, -2.7, 0.5, -0.5, 100.99, -100.99, 0.0, -0.0};
  const mixp_dtype fl[4] = {MIXP_F64, MIXP_F32, MIXP_F16, MIXP_BF16};
  int64_t n = 8;
  for (int k = 0; k < 4; ++k) {
    mixp_tensor *x = mt_tensor(s, fl[k], vals, &n, 1), *y = NULL;
    /* Truncate the value as stored in the source type (100.99 is 101 in f16). */
    double *stored = mt_values(x);
    int64_t want[8];
    for (int i = 0; i < 8; ++i) want[i] = (int64_t)stored[i];
    free(stored);
    if (k <= 1) assert_true(want[0] == 2 && want[1] == -2 && want[4] == 100 && want[5] == -100);
    int32_t g32[8];
    int64_t g64[8];
    MT_OK(mixp_cast(x, MIXP_I32, &y));
    MT_OK(mixp_tensor_to_host(y, g32, sizeof g32));
    mixp_tensor_release(y);
    MT_OK(mixp_cast(x, MIXP_I64, &y));
    MT_OK(mixp_tensor_to_host(y, g64, sizeof g64));
    mixp_tensor_release(y);
    for (int i = 0; i < 8; ++i) {
      if (g32[i] != want[i] || g64[i] != want[i]) {
        print_error("%s %.17g -> i32 %d, i64 %lld; want %lld\n", mixp_dtype_name(fl[k]), vals[i],
                    g32[i], (long long)g64[i], (long long)want[i]);
        fail();
      }
    }
    mixp_tensor_release(x);
  }
  const double uvals[4] = {2.7, 200.5, 0.99, 255.0};
  const uint8_t uwant[4] = {2, 200, 0, 255};
  int64_t n4 = 4;
  mixp_tensor *x = mt_tensor(s, MIXP_F32, uvals, &n4, 1), *y = NULL;
  uint8_t ug[4];
  MT_OK(mixp_cast(x, MIXP_U8, &y));
  MT_OK(mixp_tensor_to_host(y, ug, sizeof ug));
  assert_memory_equal(ug, uwant, sizeof uwant);
  mixp_tensor_release(y);
  mixp_tensor_release(x);
}

static void test_int_to_float(void **state) {
  mixp_session *s = (mixp_session *)*state;
  const int32_t i32[6] = {16777217, 16777219, -16777217, 2049, 2051, 70000};
  float f32[6];
  uint16_t h[6];
  cast_host(s, i32, 6, MIXP_I32, MIXP_F32, f32);
  assert_true(f32[0] == 16777216.0f);
  assert_true(f32[1] == 16777220.0f);
  assert_true(f32[2] == -16777216.0f);
  assert_true(f32[3] == 2049.0f);
  cast_host(s, i32, 6, MIXP_I32, MIXP_F16, h);
  assert_int_equal(h[3], ref_round(&F16, 2049)); /* 2048 */
  assert_int_equal(h[3], 0x6800);
  assert_int_equal(h[4], 0x6802); /* 2052 */
  assert_int_equal(h[5], 0x7C00); /* overflow */
  assert_int_equal(h[0], 0x7C00);
  assert_int_equal(h[2], 0xFC00);
  const int64_t i64[4] = {((int64_t)1 << 53) + 1, 257, 259, -3};
  double d[4];
  cast_host(s, i64, 4, MIXP_I64, MIXP_F64, d);
  assert_true(d[0] == 9007199254740992.0);
  assert_true(d[1] == 257.0 && d[3] == -3.0);
  cast_host(s, i64, 4, MIXP_I64, MIXP_BF16, h);
  assert_int_equal(h[1], ref_round(&BF16, 257)); /* 256 */
  assert_int_equal(h[2], ref_round(&BF16, 259)); /* 260 */
  assert_int_equal(h[3], ref_round(&BF16, -3));
  const uint8_t u8[3] = {0, 7, 255};
  cast_host(s, u8, 3, MIXP_U8, MIXP_F64, d);
  assert_true(d[0] == 0 && d[1] == 7 && d[2] == 255);
  int32_t back[3];
  cast_host(s, u8, 3, MIXP_U8, MIXP_I32, back);
  assert_true(back[0] == 0 && back[1] == 7 && back[2] == 255);
}

/* ---- non-contiguous views ---------------------------------------------------- */

static void test_cast_views(void **state) {
  mixp_session *s = (mixp_session *)*state;
  enum { R = 5, C = 7 };
  float base[R * C];
  double d[R * C];
  mt_fill(d, R * C, -70000.0, 70000.0, 3); /* some overflow f16 */
  for (int i = 0; i < R * C; ++i) base[i] = (float)(d[i] * (i % 3 == 0 ? 1e-6 : 1.0));
  int64_t shape[2] = {R, C};
  mixp_tensor *x = NULL, *xt = NULL, *y = NULL, *sl = NULL;
  MT_OK(mixp_tensor_from_host(s, base, sizeof base, MIXP_F32, shape, 2, &x));
  MT_OK(mixp_transpose(x, 0, 1, &xt));
  assert_int_equal(mixp_tensor_is_contiguous(xt), 0);
  MT_OK(mixp_cast(xt, MIXP_F16, &y));
  assert_int_equal(mixp_tensor_dim(y, 0), C);
  assert_int_equal(mixp_tensor_dim(y, 1), R);
  uint16_t got[R * C];
  MT_OK(mixp_tensor_to_host(y, got, sizeof got));
  for (int j = 0; j < C; ++j)
    for (int i = 0; i < R; ++i)
      assert_true(check_half_result(&F16, "f32 view", j * R + i, base[i * C + j], got[j * R + i],
                                    ref_round(&F16, base[i * C + j])));
  mixp_tensor_release(y);

  /* Every other column, to bf16, then back to f32 through a transposed view. */
  MT_OK(mixp_slice(x, 1, 0, C, 2, &sl)); /* [R, 4] */
  assert_int_equal(mixp_tensor_dim(sl, 1), 4);
  MT_OK(mixp_cast(sl, MIXP_BF16, &y));
  MT_OK(mixp_tensor_to_host(y, got, (size_t)R * 4 * 2));
  for (int i = 0; i < R; ++i)
    for (int j = 0; j < 4; ++j)
      assert_true(check_half_result(&BF16, "f32 slice", i * 4 + j, base[i * C + 2 * j],
                                    got[i * 4 + j], ref_round(&BF16, base[i * C + 2 * j])));
  mixp_tensor *yt = NULL, *z = NULL;
  MT_OK(mixp_transpose(y, 0, 1, &yt));
  MT_OK(mixp_cast(yt, MIXP_F32, &z));
  float zf[R * 4];
  MT_OK(mixp_tensor_to_host(z, zf, sizeof zf));
  for (int j = 0; j < 4; ++j)
    for (int i = 0; i < R; ++i)
      assert_true((double)zf[j * R + i] == decode(&BF16, got[i * 4 + j]));
  mixp_tensor_release(z);
  mixp_tensor_release(yt);
  mixp_tensor_release(y);
  mixp_tensor_release(sl);
  mixp_tensor_release(xt);

  /* The source is not modified by casting. */
  float again[R * C];
  MT_OK(mixp_tensor_to_host(x, again, sizeof again));
  assert_memory_equal(again, base, sizeof base);
  mixp_tensor_release(x);
}

/* ---- misuse and autograd flags ------------------------------------------------ */

static void test_cast_misuse(void **state) {
  mixp_session *s = (mixp_session *)*state;
  int64_t n = 3;
  mixp_tensor *x = NULL, *y = (mixp_tensor *)(uintptr_t)0xCA57;
  MT_OK(mixp_tensor_ones(s, MIXP_F32, &n, 1, &x));
  MT_FAILS(mixp_cast(NULL, MIXP_F16, &y), MIXP_ERR_INVALID_ARGUMENT, "mixp_cast");
  MT_FAILS2(mixp_cast(x, MIXP_F16, NULL), MIXP_ERR_INVALID_ARGUMENT, "mixp_cast", "out");
  MT_FAILS2(mixp_cast(x, (mixp_dtype)99, &y), MIXP_ERR_INVALID_ARGUMENT, "mixp_cast", "dtype");
  MT_FAILS2(mixp_cast(x, (mixp_dtype)-1, &y), MIXP_ERR_INVALID_ARGUMENT, "mixp_cast", "dtype");
  assert_ptr_equal(y, (mixp_tensor *)(uintptr_t)0xCA57);

  /* Same dtype: equal values; the result does not alias-write the source. */
  MT_OK(mixp_cast(x, MIXP_F32, &y));
  float v[3];
  MT_OK(mixp_tensor_to_host(y, v, sizeof v));
  assert_true(v[0] == 1 && v[1] == 1 && v[2] == 1);
  mixp_tensor_release(y);

  /* Differentiable between floats; integer results do not require grad. */
  MT_OK(mixp_tensor_set_requires_grad(x, 1));
  MT_OK(mixp_cast(x, MIXP_BF16, &y));
  assert_int_equal(mixp_tensor_requires_grad(y), 1);
  assert_int_equal(mixp_tensor_is_leaf(y), 0);
  mixp_tensor_release(y);
  MT_OK(mixp_cast(x, MIXP_I32, &y));
  assert_int_equal(mixp_tensor_requires_grad(y), 0);
  mixp_tensor_release(y);
  mixp_tensor_release(x);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_reference_sanity),
      cmocka_unit_test(test_f16_widen_all),
      cmocka_unit_test(test_bf16_widen_all),
      cmocka_unit_test(test_f32_to_f16),
      cmocka_unit_test(test_f64_to_f16),
      cmocka_unit_test(test_f32_to_bf16),
      cmocka_unit_test(test_f64_to_bf16),
      cmocka_unit_test(test_f64_no_double_rounding),
      cmocka_unit_test(test_f64_random_to_half),
      cmocka_unit_test(test_nan_to_half),
      cmocka_unit_test(test_f16_nan_bits),
      cmocka_unit_test(test_f16_to_bf16_all),
      cmocka_unit_test(test_bf16_to_f16_all),
      cmocka_unit_test(test_f32_f64),
      cmocka_unit_test(test_float_to_int),
      cmocka_unit_test(test_int_to_float),
      cmocka_unit_test(test_cast_views),
      cmocka_unit_test(test_cast_misuse),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
