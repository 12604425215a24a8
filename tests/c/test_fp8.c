/* The 8-bit float storage types (MIXP_F8E4M3, MIXP_F8E5M2): mixp_cast in
 * both directions checked exhaustively against an independent reference
 * written here -- every code decoded with ldexp from its fields, rounding by
 * a search for the nearest of the 256 decoded values with ties to the even
 * code (E5M2 with 2^16 standing for inf, which makes IEEE's overflow rule
 * fall out; E4M3 with its finite values only, which is saturation) -- over
 * all 256 codes, every f16 and bf16 pattern, and the f32 and f64
 * neighbourhoods of every value and midpoint. Then what fp8 is elsewhere:
 * copies and views move it, ops without an fp8 kernel refuse it, the
 * numerics checker and op statistics see it. */
#define _POSIX_C_SOURCE 200809L /* mkstemp, fdopen */
#include <float.h>
#include <unistd.h>

#include "test_util.h"

/* ---- reference ------------------------------------------------------------ */

typedef struct fp8_format {
  const char *name;
  mixp_dtype dtype;
  int mant_bits, exp_bits;
  int has_inf;         /* E5M2: 0x7C is inf; E4M3: only 0x7F is NaN */
  unsigned n_finite;   /* codes 0 .. n_finite-1 are the finite non-negative values */
  double values[128];  /* values[c] for finite c; values[n_finite] = 2^(emax+1) for E5M2 */
} fp8_format;

static fp8_format E4M3 = {"e4m3", MIXP_F8E4M3, 3, 4, 0, 0x7F, {0}};
static fp8_format E5M2 = {"e5m2", MIXP_F8E5M2, 2, 5, 1, 0x7C, {0}};

static double decode(const fp8_format *f, uint8_t b) {
  int sign = b >> 7, e = (b >> f->mant_bits) & ((1 << f->exp_bits) - 1), m = b & ((1 << f->mant_bits) - 1);
  int bias = (1 << (f->exp_bits - 1)) - 1;
  double v;
  if ((b & 0x7F) >= f->n_finite) v = (f->has_inf && (b & 0x7F) == f->n_finite) ? INFINITY : NAN;
  else if (e == 0) v = ldexp((double)m, 1 - bias - f->mant_bits);
  else v = ldexp((double)(m + (1 << f->mant_bits)), e - bias - f->mant_bits);
  return sign ? -v : v;
}

static void build_table(fp8_format *f) {
  for (unsigned c = 0; c < f->n_finite; ++c) f->values[c] = decode(f, (uint8_t)c);
  if (f->has_inf) f->values[f->n_finite] = 65536.0; /* where the next binade would start */
}

/* The code nearest to x, ties to the even code; NaN -> S.1111111. */
static uint8_t ref_round(const fp8_format *f, double x) {
  uint8_t sign = signbit(x) ? 0x80 : 0;
  if (isnan(x)) return sign | 0x7F;
  double a = fabs(x);
  unsigned candidates = f->n_finite + (f->has_inf ? 1 : 0), best = 0;
  for (unsigned c = 1; c < candidates; ++c) {
    double dc = fabs(f->values[c] - a), db = fabs(f->values[best] - a);
    if (isinf(a)) dc = db = 0; /* inf: the largest candidate (inf, or 448 saturating) */
    if (dc < db || (dc == db && (c & 1) == 0) || (isinf(a) && c == candidates - 1)) best = c;
  }
  return (uint8_t)(sign | best);
}

static int is_nan8(const fp8_format *f, uint8_t b) { return isnan(decode(f, b)); }

/* ---- helpers ----------------------------------------------------------------- */

static int setup(void **state) {
  build_table(&E4M3);
  build_table(&E5M2);
  *state = mt_session();
  return *state ? 0 : -1;
}
static int teardown(void **state) {
  mixp_session_destroy((mixp_session *)*state);
  return 0;
}

static void cast_host(mixp_session *s, const void *src, int64_t n, mixp_dtype from, mixp_dtype to, void *dst) {
  mixp_tensor *a = NULL, *b = NULL;
  MT_OK(mixp_tensor_from_host(s, src, (size_t)n * mixp_dtype_size(from), from, &n, 1, &a));
  MT_OK(mixp_cast(a, to, &b));
  assert_int_equal(mixp_tensor_dtype(b), to);
  MT_OK(mixp_tensor_to_host(b, dst, (size_t)n * mixp_dtype_size(to)));
  mixp_tensor_release(a);
  mixp_tensor_release(b);
}

/* Checks got[i] == ref_round(inputs[i]) for all i; reports the first few. */
static void check_codes(const fp8_format *f, const char *from, const double *inputs, const uint8_t *got,
                        int64_t n) {
  int bad = 0;
  for (int64_t i = 0; i < n && bad < 10; ++i) {
    uint8_t want = ref_round(f, inputs[i]);
    if (got[i] != want) {
      print_error("%s -> %s: input %.17g (#%lld) gave 0x%02X (%g), want 0x%02X (%g)\n", from, f->name,
                  inputs[i], (long long)i, got[i], decode(f, got[i]), want, decode(f, want));
      ++bad;
    }
  }
  if (bad) fail();
}

/* ---- the reference itself ------------------------------------------------------ */

static void test_reference_sanity(void **state) {
  (void)state;
  assert_true(decode(&E4M3, 0x7E) == 448.0);
  assert_true(decode(&E4M3, 0x01) == ldexp(1, -9));
  assert_true(decode(&E4M3, 0x38) == 1.0);
  assert_true(isnan(decode(&E4M3, 0x7F)) && isnan(decode(&E4M3, 0xFF)));
  assert_true(decode(&E5M2, 0x7B) == 57344.0);
  assert_true(decode(&E5M2, 0x01) == ldexp(1, -16));
  assert_true(decode(&E5M2, 0x3C) == 1.0);
  assert_true(isinf(decode(&E5M2, 0x7C)) && isnan(decode(&E5M2, 0x7D)));
  assert_int_equal(ref_round(&E4M3, 1e6), 0x7E);        /* saturates */
  assert_int_equal(ref_round(&E4M3, -INFINITY), 0xFE);  /* PyTorch: -inf -> -448 */
  assert_int_equal(ref_round(&E4M3, 464.0), 0x7E);      /* tie 448/480: 448's code is even */
  assert_int_equal(ref_round(&E4M3, 1.0625), 0x38);     /* tie 1/1.125 -> 1 */
  assert_int_equal(ref_round(&E4M3, 1.1875), 0x3A);     /* tie 1.125/1.25 -> 1.25 */
  assert_int_equal(ref_round(&E4M3, ldexp(1, -10)), 0x00);
  assert_int_equal(ref_round(&E4M3, -ldexp(3, -11)), 0x81);
  assert_int_equal(ref_round(&E5M2, 61440.0), 0x7C);    /* PyTorch: 61440 -> inf */
  assert_int_equal(ref_round(&E5M2, 61439.0), 0x7B);
  assert_int_equal(ref_round(&E5M2, INFINITY), 0x7C);
  assert_int_equal(ref_round(&E5M2, ldexp(1, -17)), 0x00);
  assert_int_equal(ref_round(&E5M2, ldexp(3, -17)), 0x02);
  assert_int_equal(ref_round(&E5M2, -NAN), 0xFF);
}

/* ---- fp8 -> every float type, all 256 codes ---------------------------------- */

static void widen_all(mixp_session *s, const fp8_format *f) {
  uint8_t codes[256];
  float f32[256];
  double f64[256];
  uint16_t half[256], bhalf[256];
  for (int i = 0; i < 256; ++i) codes[i] = (uint8_t)i;
  cast_host(s, codes, 256, f->dtype, MIXP_F32, f32);
  cast_host(s, codes, 256, f->dtype, MIXP_F64, f64);
  cast_host(s, codes, 256, f->dtype, MIXP_F16, half);
  cast_host(s, codes, 256, f->dtype, MIXP_BF16, bhalf);
  /* f16 and bf16 back to f64 (their own casts are tested in test_cast.c). */
  double from16[256], fromb16[256];
  cast_host(s, half, 256, MIXP_F16, MIXP_F64, from16);
  cast_host(s, bhalf, 256, MIXP_BF16, MIXP_F64, fromb16);
  for (int i = 0; i < 256; ++i) {
    double want = decode(f, (uint8_t)i);
    const double got[4] = {f32[i], f64[i], from16[i], fromb16[i]};
    for (int k = 0; k < 4; ++k) {
      int ok = isnan(want) ? isnan(got[k]) != 0 : got[k] == want;
      ok = ok && !!signbit(got[k]) == !!signbit(want);
      if (!ok) {
        print_error("%s 0x%02X -> %s: got %.17g, want %.17g\n", f->name, i,
                    (const char *[]){"f32", "f64", "f16", "bf16"}[k], got[k], want);
        fail();
      }
    }
  }
}

static void test_widen_all(void **state) {
  widen_all((mixp_session *)*state, &E4M3);
  widen_all((mixp_session *)*state, &E5M2);
}

/* ---- every f16 and bf16 pattern into both formats ---------------------------- */

static void narrow_16(mixp_session *s, mixp_dtype from, const char *name) {
  enum { N = 65536 };
  uint16_t *bits = malloc(N * sizeof *bits);
  double *vals = malloc(N * sizeof *vals);
  uint8_t *got = malloc(N);
  for (int i = 0; i < N; ++i) bits[i] = (uint16_t)i;
  cast_host(s, bits, N, from, MIXP_F64, vals); /* exact (test_cast.c checks it) */
  const fp8_format *fmts[2] = {&E4M3, &E5M2};
  for (int k = 0; k < 2; ++k) {
    cast_host(s, bits, N, from, fmts[k]->dtype, got);
    check_codes(fmts[k], name, vals, got, N);
  }
  free(bits);
  free(vals);
  free(got);
}

static void test_f16_narrow_all(void **state) { narrow_16((mixp_session *)*state, MIXP_F16, "f16"); }
static void test_bf16_narrow_all(void **state) { narrow_16((mixp_session *)*state, MIXP_BF16, "bf16"); }

/* ---- f32 and f64 around every value and midpoint ------------------------------ */

/* Every finite value and every midpoint to the next (the last: the
 * overflow threshold), each with `ulps` neighbours either side in the
 * source precision, both signs, and specials. */
static int64_t near_midpoints(const fp8_format *f, int f32_source, int ulps, double *out) {
  int64_t n = 0;
  unsigned top = f->n_finite - (f->has_inf ? 0 : 1);
  for (unsigned c = 0; c < top; ++c) {
    double v = f->values[c], m = 0.5 * (f->values[c] + f->values[c + 1]);
    const double centres[2] = {v, m};
    for (int j = 0; j < 2; ++j) {
      double lo = centres[j], hi = centres[j];
      out[n++] = centres[j];
      for (int u = 0; u < ulps; ++u) {
        lo = f32_source ? (double)nextafterf((float)lo, -INFINITY) : nextafter(lo, -INFINITY);
        hi = f32_source ? (double)nextafterf((float)hi, INFINITY) : nextafter(hi, INFINITY);
        out[n++] = lo;
        out[n++] = hi;
      }
    }
  }
  const double specials[] = {INFINITY, 1e10, 1e300, (double)FLT_MAX, (double)FLT_TRUE_MIN, 1e-300, 0.1,
                             1.0 / 3.0, 447.9, 448.1, 463.99, 464.0, 464.01, 480.0, 57343.0, 61439.99, 61440.0, 65536.0, 1e5};
  for (size_t k = 0; k < sizeof specials / sizeof specials[0]; ++k)
    out[n++] = f32_source ? (double)(float)specials[k] : specials[k];
  int64_t positives = n;
  for (int64_t i = 0; i < positives; ++i) out[n++] = -out[i];
  out[n++] = NAN;
  out[n++] = -NAN;
  return n;
}

static void narrow_wide(mixp_session *s, const fp8_format *f, int f32_source) {
  enum { kUlps = 4, kMax = 2 * (128 * 2 * (2 * kUlps + 1) + 32) + 2 };
  double *in = malloc(kMax * sizeof *in);
  float *in32 = malloc(kMax * sizeof *in32);
  uint8_t *got = malloc(kMax);
  int64_t n = near_midpoints(f, f32_source, kUlps, in);
  assert_true(n <= kMax);
  if (f32_source) {
    for (int64_t i = 0; i < n; ++i) in32[i] = (float)in[i];
    cast_host(s, in32, n, MIXP_F32, f->dtype, got);
  } else {
    cast_host(s, in, n, MIXP_F64, f->dtype, got);
  }
  check_codes(f, f32_source ? "f32" : "f64", in, got, n);
  free(in);
  free(in32);
  free(got);
}

static void test_f32_narrow_midpoints(void **state) {
  narrow_wide((mixp_session *)*state, &E4M3, 1);
  narrow_wide((mixp_session *)*state, &E5M2, 1);
}

/* f64 rounds once: a double just past a midpoint is not pulled onto it
 * (PyTorch's detour through f32 would be; see mixp_cast's documentation). */
static void test_f64_narrow_midpoints(void **state) {
  narrow_wide((mixp_session *)*state, &E4M3, 0);
  narrow_wide((mixp_session *)*state, &E5M2, 0);
  mixp_session *s = *state;
  const double x[2] = {1.1875 - 0x1p-40, 1.0625 + 0x1p-40};
  uint8_t got[2];
  cast_host(s, x, 2, MIXP_F64, MIXP_F8E4M3, got);
  assert_int_equal(got[0], 0x39); /* 1.125, where a detour through f32 gives 1.25 */
  assert_int_equal(got[1], 0x39);
}

/* ---- between the two formats, integers, NaN bits ------------------------------- */

static void test_between_formats_and_integers(void **state) {
  mixp_session *s = *state;
  uint8_t codes[256], got[256];
  double vals[256];
  for (int i = 0; i < 256; ++i) codes[i] = (uint8_t)i;
  const fp8_format *fmts[2] = {&E4M3, &E5M2};
  for (int k = 0; k < 2; ++k) {
    const fp8_format *from = fmts[k], *to = fmts[1 - k];
    for (int i = 0; i < 256; ++i) vals[i] = decode(from, (uint8_t)i);
    cast_host(s, codes, 256, from->dtype, to->dtype, got);
    check_codes(to, from->name, vals, got, 256);
  }
  /* Integers: through the exact value, truncating toward zero. */
  const int32_t ints[6] = {0, 1, -3, 17, 1000, -100000};
  uint8_t q[6];
  cast_host(s, ints, 6, MIXP_I32, MIXP_F8E4M3, q);
  const uint8_t want[6] = {0x00, 0x38, 0xC4, 0x58, 0x7E, 0xFE}; /* 17 -> 16 (tie), 1000 -> 448 */
  assert_memory_equal(q, want, 6);
  int32_t back[6];
  cast_host(s, q, 6, MIXP_F8E4M3, MIXP_I32, back);
  const int32_t want_back[6] = {0, 1, -3, 16, 448, -448};
  assert_memory_equal(back, want_back, sizeof back);
}

/* Copies move bits: a strided copy (through contiguous) keeps every code,
 * NaN payloads included, and a view transposes fp8 like any dtype. */
static void test_copies_and_views(void **state) {
  mixp_session *s = *state;
  uint8_t codes[256], got[256];
  for (int i = 0; i < 256; ++i) codes[i] = (uint8_t)i;
  int64_t shape[2] = {16, 16};
  mixp_tensor *a = NULL, *t = NULL, *c = NULL, *tt = NULL, *cc = NULL;
  MT_OK(mixp_tensor_from_host(s, codes, 256, MIXP_F8E5M2, shape, 2, &a));
  MT_OK(mixp_transpose(a, 0, 1, &t));
  MT_OK(mixp_contiguous(t, &c));
  MT_OK(mixp_tensor_to_host(c, got, 256));
  for (int i = 0; i < 16; ++i)
    for (int j = 0; j < 16; ++j) assert_int_equal(got[i * 16 + j], codes[j * 16 + i]);
  MT_OK(mixp_transpose(c, 0, 1, &tt));
  MT_OK(mixp_contiguous(tt, &cc));
  MT_OK(mixp_tensor_to_host(cc, got, 256));
  assert_memory_equal(got, codes, 256);
  /* A cast of a strided view (the generic path) rounds like the contiguous one. */
  mixp_tensor *f32 = NULL, *back = NULL;
  MT_OK(mixp_cast(t, MIXP_F32, &f32));
  MT_OK(mixp_cast(f32, MIXP_F8E5M2, &back));
  MT_OK(mixp_tensor_to_host(back, got, 256));
  for (int i = 0; i < 256; ++i) {
    uint8_t want = codes[(i % 16) * 16 + i / 16];
    if (is_nan8(&E5M2, want)) assert_int_equal(got[i], (want & 0x80) | 0x7F);
    else assert_int_equal(got[i], want);
  }
  const mixp_tensor *parts[2] = {a, a};
  mixp_tensor *joined = NULL;
  MT_OK(mixp_cat(parts, 2, 0, &joined));
  assert_int_equal(mixp_tensor_dtype(joined), MIXP_F8E5M2);
  uint8_t both[512];
  MT_OK(mixp_tensor_to_host(joined, both, 512));
  assert_memory_equal(both, codes, 256);
  assert_memory_equal(both + 256, codes, 256);
  mixp_tensor *ts[] = {a, t, c, tt, cc, f32, back, joined};
  for (size_t i = 0; i < sizeof ts / sizeof ts[0]; ++i) mixp_tensor_release(ts[i]);
}

/* ---- names and refusals ----------------------------------------------------------- */

static void test_names(void **state) {
  (void)state;
  assert_int_equal(MIXP_F8E4M3, 8);
  assert_int_equal(MIXP_F8E5M2, 9);
  assert_int_equal(mixp_dtype_size(MIXP_F8E4M3), 1);
  assert_int_equal(mixp_dtype_size(MIXP_F8E5M2), 1);
  assert_string_equal(mixp_dtype_name(MIXP_F8E4M3), "f8e4m3");
  assert_string_equal(mixp_dtype_name(MIXP_F8E5M2), "f8e5m2");
  assert_int_equal(mixp_dtype_size((mixp_dtype)10), 0);
  assert_string_equal(mixp_dtype_name((mixp_dtype)10), "unknown");
}

static void test_ops_refuse_fp8(void **state) {
  mixp_session *s = *state;
  const double v[4] = {1, -2, 3, 0.5};
  int64_t shape[2] = {2, 2};
  mixp_tensor *x = mt_tensor(s, MIXP_F8E4M3, v, shape, 2), *y = mt_tensor(s, MIXP_F32, v, shape, 2);
  mixp_tensor *out = MT_SENTINEL;
  MT_FAILS2(mixp_relu(x, &out), MIXP_ERR_DTYPE, "mixp_relu", "f8e4m3");
  MT_FAILS2(mixp_add(y, x, &out), MIXP_ERR_DTYPE, "mixp_add", "input 1");
  MT_FAILS2(mixp_matmul(x, x, &out), MIXP_ERR_DTYPE, "mixp_matmul", "mixp_scaled_matmul");
  int dims[1] = {0};
  MT_FAILS(mixp_sum(x, dims, 1, 0, &out), MIXP_ERR_DTYPE, "mixp_sum");
  MT_FAILS(mixp_softmax(x, -1, &out), MIXP_ERR_DTYPE, "mixp_softmax");
  assert_ptr_equal(out, MT_SENTINEL);
  MT_FAILS(mixp_tensor_set_requires_grad(x, 1), MIXP_ERR_DTYPE, "f8e4m3");
  /* Under autocast too: fp8 is never an autocast candidate, still refused. */
  mixp_autocast_options ao;
  mixp_autocast_options_init(&ao);
  MT_OK(mixp_autocast_push(s, &ao));
  MT_FAILS(mixp_matmul(x, x, &out), MIXP_ERR_DTYPE, "mixp_matmul");
  MT_OK(mixp_autocast_pop(s));
  mixp_tensor_release(x);
  mixp_tensor_release(y);
}

/* ---- the numerics checker and op statistics ------------------------------------- */

static void test_numerics_and_op_stats(void **state) {
  mixp_session *s = *state;
  const double v[3] = {1.0, 1e6, -70000.0};
  int64_t n = 3;
  mixp_tensor *x = mt_tensor(s, MIXP_F32, v, &n, 1), *q = NULL;
  MT_OK(mixp_session_op_stats_start(s));
  MT_OK(mixp_cast(x, MIXP_F8E4M3, &q)); /* saturates: finite */
  mixp_tensor_release(q);
  MT_OK(mixp_session_set_numerics_check(s, MIXP_NUMERICS_ERROR));
  q = MT_SENTINEL;
  MT_FAILS2(mixp_cast(x, MIXP_F8E5M2, &q), MIXP_ERR_NUMERIC, "'cast'", "2 Inf");
  assert_ptr_equal(q, MT_SENTINEL);
  MT_OK(mixp_session_set_numerics_check(s, MIXP_NUMERICS_OFF));
  int64_t count = -1;
  MT_OK(mixp_session_op_stats_count(s, "cast", 0, MIXP_F8E4M3, &count));
  assert_int_equal(count, 1);
  MT_OK(mixp_session_op_stats_count(s, "cast", 0, MIXP_F8E5M2, &count));
  assert_int_equal(count, 0); /* the checker refused its output before it was counted */
  assert_non_null(strstr(mixp_session_op_stats_report(s), "fp8 calls"));
  MT_OK(mixp_session_op_stats_stop(s));
  mixp_tensor_release(x);
}

/* A safetensors file (written here byte by byte, as the safetensors package
 * lays it out) holding F8_E4M3 and F8_E5M2 tensors loads into a bf16
 * Linear, each value exactly. */
static void test_safetensors_names(void **state) {
  mixp_session *s = *state;
  const char header[] = "{\"weight\":{\"dtype\":\"F8_E4M3\",\"shape\":[2,2],\"data_offsets\":[0,4]},"
                        "\"bias\":{\"dtype\":\"F8_E5M2\",\"shape\":[2],\"data_offsets\":[4,6]}}";
  const uint8_t data[6] = {0x38, 0xC4, 0x7E, 0x01, 0x3C, 0xC2}; /* 1, -3, 448, 2^-9 | 1, -3 */
  char path[] = "/tmp/mixp_test_fp8_XXXXXX";
  int fd = mkstemp(path);
  assert_true(fd >= 0);
  FILE *f = fdopen(fd, "wb");
  uint64_t hlen = sizeof header - 1;
  uint8_t len_le[8];
  for (int i = 0; i < 8; ++i) len_le[i] = (uint8_t)(hlen >> (8 * i));
  assert_int_equal(fwrite(len_le, 1, 8, f), 8);
  assert_int_equal(fwrite(header, 1, hlen, f), hlen);
  assert_int_equal(fwrite(data, 1, 6, f), 6);
  fclose(f);
  mixp_module *m = NULL;
  MT_OK(mixp_linear_create(s, 2, 2, 1, MIXP_BF16, &m));
  MT_OK(mixp_module_load_safetensors(m, NULL, path, 1));
  remove(path);
  const double want_w[4] = {1, -3, 448, 0x1p-9}, want_b[2] = {1, -3};
  for (int i = 0; i < 2; ++i) {
    mixp_tensor *p = NULL;
    MT_OK(mixp_module_parameter(m, i, &p));
    int is_w = strcmp(mixp_module_parameter_name(m, i), "weight") == 0;
    double *v = mt_values(p);
    for (int k = 0; k < (is_w ? 4 : 2); ++k) assert_true(v[k] == (is_w ? want_w[k] : want_b[k]));
    free(v);
    mixp_tensor_release(p);
  }
  mixp_module_destroy(m);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_reference_sanity),
      cmocka_unit_test(test_names),
      cmocka_unit_test(test_widen_all),
      cmocka_unit_test(test_f16_narrow_all),
      cmocka_unit_test(test_bf16_narrow_all),
      cmocka_unit_test(test_f32_narrow_midpoints),
      cmocka_unit_test(test_f64_narrow_midpoints),
      cmocka_unit_test(test_between_formats_and_integers),
      cmocka_unit_test(test_copies_and_views),
      cmocka_unit_test(test_ops_refuse_fp8),
      cmocka_unit_test(test_numerics_and_op_stats),
      cmocka_unit_test(test_safetensors_names),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
