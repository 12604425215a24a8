/* CPU vs CUDA parity of the foundation and AMP kernels, through the public
 * API only: every input is built once on the CPU and copied byte for byte to
 * the CUDA session, the same calls run on both, and results are compared.
 *
 * Exact (bitwise) where the GPU performs the same IEEE operations in the same
 * order: casts (NaN, Inf, subnormal and halfway values included), the four
 * broadcasting binary ops, max values and indices, embedding forward and
 * backward, pooling forward and backward, uniform draws and dropout masks
 * (same Philox stream), and the fused SGD/AdamW steps. Everything else uses
 * per-dtype tolerances (tol_for): the GPU's libm (exp, log, tanh, erf, pow)
 * is within 1-2 ulp of glibc and its reductions add in a different (fixed)
 * order, so F32 gets 1e-5 (relative and absolute), F16 2e-3 (about two
 * ulps), BF16 1.6e-2 (two ulps), F64 1e-12.
 *
 * Exits 77 (CTest: skipped) when no CUDA session can be created. */
#include "op_rows.h"
#include "test_util.h"

static mixp_session *g_cpu, *g_gpu;
static const char *g_gpu_device; /* "cuda", or "cpu" in a harness check */

static mixp_session *make_session(const char *device) {
  mixp_session_options o;
  mixp_session_options_init(&o);
  o.seed = 1234;
  o.num_threads = 2;
  o.device = device;
  mixp_session *s = NULL;
  if (mixp_session_create(&o, &s) != MIXP_OK) return NULL;
  return s;
}

static size_t dsize(mixp_dtype dt) {
  switch (dt) {
    case MIXP_F16: case MIXP_BF16: return 2;
    case MIXP_F32: case MIXP_I32: return 4;
    case MIXP_F64: case MIXP_I64: return 8;
    default: return 1;
  }
}

static const mixp_dtype k_dtypes[3] = {MIXP_F32, MIXP_F16, MIXP_BF16};

static void tol_for(mixp_dtype dt, double *atol, double *rtol) {
  switch (dt) {
    case MIXP_F16: *atol = *rtol = 2e-3; return;
    case MIXP_BF16: *atol = *rtol = 1.6e-2; return;
    case MIXP_F64: *atol = *rtol = 1e-12; return;
    default: *atol = *rtol = 1e-5; return;
  }
}

/* The tensor's bytes, malloc'd (caller frees). */
static void *raw_of(const mixp_tensor *t, size_t *nbytes) {
  const size_t nb = (size_t)mixp_tensor_numel(t) * dsize(mixp_tensor_dtype(t));
  void *p = malloc(nb ? nb : 1);
  MT_OK(mixp_tensor_to_host(t, p, nb));
  *nbytes = nb;
  return p;
}

/* The same bytes on both sessions: built (and rounded) on the CPU, copied raw. */
static void twin_raw(mixp_dtype dt, const void *raw, const int64_t *shape, int nd, int grad,
                     mixp_tensor **c, mixp_tensor **g) {
  int64_t n = 1;
  for (int i = 0; i < nd; ++i) n *= shape[i];
  MT_OK(mixp_tensor_from_host(g_cpu, raw, (size_t)n * dsize(dt), dt, shape, nd, c));
  MT_OK(mixp_tensor_from_host(g_gpu, raw, (size_t)n * dsize(dt), dt, shape, nd, g));
  if (grad) {
    MT_OK(mixp_tensor_set_requires_grad(*c, 1));
    MT_OK(mixp_tensor_set_requires_grad(*g, 1));
  }
}

static void twin(mixp_dtype dt, const double *vals, const int64_t *shape, int nd, int grad,
                 mixp_tensor **c, mixp_tensor **g) {
  mixp_tensor *tc = mt_tensor(g_cpu, dt, vals, shape, nd);
  size_t nb;
  void *raw = raw_of(tc, &nb);
  mixp_tensor_release(tc);
  twin_raw(dt, raw, shape, nd, grad, c, g);
  free(raw);
}

static void expect_bitwise(const mixp_tensor *c, const mixp_tensor *g) {
  assert_int_equal(mixp_tensor_dtype(c), mixp_tensor_dtype(g));
  assert_int_equal(mixp_tensor_numel(c), mixp_tensor_numel(g));
  size_t nc, ng;
  unsigned char *a = raw_of(c, &nc), *b = raw_of(g, &ng);
  const size_t es = dsize(mixp_tensor_dtype(c));
  for (size_t i = 0; i < nc; ++i)
    if (a[i] != b[i]) {
      print_error("element %zu (dtype %d) differs: cpu byte %02x, cuda byte %02x\n", i / es,
                  (int)mixp_tensor_dtype(c), a[i], b[i]);
      fail();
    }
  free(a);
  free(b);
}

static void expect_close(const mixp_tensor *c, const mixp_tensor *g) {
  assert_int_equal(mixp_tensor_numel(c), mixp_tensor_numel(g));
  double atol, rtol;
  tol_for(mixp_tensor_dtype(c), &atol, &rtol);
  double *a = mt_values(c), *b = mt_values(g);
  mt_assert_close(b, a, mixp_tensor_numel(c), atol, rtol);
  free(a);
  free(b);
}

static void expect_grads(mixp_tensor *c, mixp_tensor *g, int bitwise) {
  mixp_tensor *gc = NULL, *gg = NULL;
  MT_OK(mixp_tensor_grad(c, &gc));
  MT_OK(mixp_tensor_grad(g, &gg));
  assert_non_null(gc);
  assert_non_null(gg);
  if (bitwise) expect_bitwise(gc, gg);
  else expect_close(gc, gg);
  mixp_tensor_release(gc);
  mixp_tensor_release(gg);
}

/* Back-propagates the same random seed gradient through both outputs. */
static void backward_both(mixp_tensor *oc, mixp_tensor *og, uint64_t seed) {
  int64_t shape[MIXP_MAX_DIMS];
  int nd = 0;
  MT_OK(mixp_tensor_shape(oc, shape, MIXP_MAX_DIMS, &nd));
  const int64_t n = mixp_tensor_numel(oc);
  double *v = malloc((size_t)(n ? n : 1) * sizeof(double));
  mt_fill(v, n, -1.0, 1.0, seed);
  mixp_tensor *sc, *sg;
  twin(mixp_tensor_dtype(oc), v, shape, nd, 0, &sc, &sg);
  MT_OK(mixp_backward(oc, sc));
  MT_OK(mixp_backward(og, sg));
  mixp_tensor_release(sc);
  mixp_tensor_release(sg);
  free(v);
}

/* ---- casts and copies ------------------------------------------------------------ */

static void test_casts_bitwise(void **state) {
  (void)state;
  /* Specials, subnormals of every format, halfway cases, overflow. */
  double v[64] = {0.0, -0.0, 1.0, -1.0, 65504.0, 65520.0, 65519.99, 1e6, -1e6, 6e-8, 3e-8, 2.98e-8,
                  1e-40, -1e-40, 1.0 + 1.0 / 2048, 1.0 + 3.0 / 2048, 1.0 + 1.0 / 256, 3.4e38, -3.4e38,
                  1e-320, 0.1, 0.2, 0.3, 1.0 / 3.0, 2.0 / 3.0, 1e-5, 1e-7, 1.5, 2.5, -2.5};
  v[30] = NAN;
  v[31] = -NAN;
  v[32] = INFINITY;
  v[33] = -INFINITY;
  mt_fill(v + 34, 30, -70000.0, 70000.0, 7);
  const mixp_dtype all[4] = {MIXP_F32, MIXP_F16, MIXP_BF16, MIXP_F64};
  const int64_t shape[1] = {64};
  for (int s = 0; s < 4; ++s)
    for (int d = 0; d < 4; ++d) {
      mixp_tensor *c, *g, *oc, *og;
      twin(all[s], v, shape, 1, 0, &c, &g);
      MT_OK(mixp_cast(c, all[d], &oc));
      MT_OK(mixp_cast(g, all[d], &og));
      expect_bitwise(oc, og);
      mixp_tensor_release(c); mixp_tensor_release(g);
      mixp_tensor_release(oc); mixp_tensor_release(og);
    }
  /* Float -> integer (truncation, saturation, NaN -> 0) and back. */
  const mixp_dtype ints[3] = {MIXP_I32, MIXP_I64, MIXP_U8};
  for (int s = 0; s < 4; ++s)
    for (int d = 0; d < 3; ++d) {
      mixp_tensor *c, *g, *oc, *og, *bc, *bg;
      twin(all[s], v, shape, 1, 0, &c, &g);
      MT_OK(mixp_cast(c, ints[d], &oc));
      MT_OK(mixp_cast(g, ints[d], &og));
      expect_bitwise(oc, og);
      MT_OK(mixp_cast(oc, all[s], &bc));
      MT_OK(mixp_cast(og, all[s], &bg));
      expect_bitwise(bc, bg);
      mixp_tensor_release(c); mixp_tensor_release(g);
      mixp_tensor_release(oc); mixp_tensor_release(og);
      mixp_tensor_release(bc); mixp_tensor_release(bg);
    }
}

static void test_strided_copy_bitwise(void **state) {
  (void)state;
  double v[3 * 5 * 7];
  mt_fill(v, 105, -3.0, 3.0, 11);
  const int64_t shape[3] = {3, 5, 7};
  for (int k = 0; k < 3; ++k) {
    mixp_tensor *c, *g, *tc, *tg, *cc, *cg, *xc, *xg;
    twin(k_dtypes[k], v, shape, 3, 0, &c, &g);
    MT_OK(mixp_transpose(c, 0, 2, &tc));
    MT_OK(mixp_transpose(g, 0, 2, &tg));
    MT_OK(mixp_contiguous(tc, &cc));
    MT_OK(mixp_contiguous(tg, &cg));
    expect_bitwise(cc, cg);
    MT_OK(mixp_cast(tc, MIXP_F32, &xc)); /* a strided cast */
    MT_OK(mixp_cast(tg, MIXP_F32, &xg));
    expect_bitwise(xc, xg);
    mixp_tensor_release(c); mixp_tensor_release(g); mixp_tensor_release(tc); mixp_tensor_release(tg);
    mixp_tensor_release(cc); mixp_tensor_release(cg); mixp_tensor_release(xc); mixp_tensor_release(xg);
  }
}

/* ---- unary ops, forward and backward ------------------------------------------------ */

/* Every unary row of the op table (op_rows.h) runs on both devices; this is
 * the op-specific part: its input range and scalar when not [-4, 4] and
 * s = 1.5 (positive for log/sqrt/pow/rdiv). */
static const struct {
  const char *name;
  double s, lo, hi;
} k_unary_domains[] = {
    {"log", 0, 0.1, 5},       {"sqrt", 0, 0.1, 5},          {"pow", 2.5, 0.1, 3},
    {"sigmoid", 0, -6, 6},    {"tanh", 0, -3, 3},           {"add_scalar", 0.75, -4, 4},
    {"mul_scalar", -1.25, -4, 4}, {"rsub_scalar", 2.0, -4, 4}, {"rdiv_scalar", 3.0, 0.5, 4},
    {"hardswish", 0, -5, 5},  {"hardsigmoid", 0, -5, 5},   {"silu", 0, -5, 5},
};

/* The Custom rows of the table: their C signatures. */
static mixp_status call_custom_unary(const char *name, const mixp_tensor *x, mixp_tensor **out) {
  if (strcmp(name, "gelu") == 0) return mixp_gelu(x, MIXP_GELU_ERF, out);
  print_error("op '%s' has c_args Custom in src/core/ops.def: give it a call here\n", name);
  fail();
  return MIXP_ERR_INTERNAL;
}

static void test_unary_fwd_bwd(void **state) {
  (void)state;
  enum { N = 1031 }; /* not a multiple of the vector width: exercises the tails */
  double v[N];
  const int64_t shape[1] = {N};
  for (int op = 0; op < MT_UNARY_ROWS; ++op) {
    const mt_unary_row *row = &mt_unary_rows[op];
    double sc = 1.5, lo = -4, hi = 4;
    for (size_t d = 0; d < sizeof k_unary_domains / sizeof k_unary_domains[0]; ++d)
      if (strcmp(k_unary_domains[d].name, row->name) == 0)
        sc = k_unary_domains[d].s, lo = k_unary_domains[d].lo, hi = k_unary_domains[d].hi;
    for (int k = 0; k < 3; ++k) {
      mt_fill(v, N, lo, hi, 100 + (uint64_t)op);
      mixp_tensor *c, *g, *oc, *og;
      twin(k_dtypes[k], v, shape, 1, 1, &c, &g);
      MT_OK(mt_unary_row_call(row, c, sc, call_custom_unary, &oc));
      MT_OK(mt_unary_row_call(row, g, sc, call_custom_unary, &og));
      expect_close(oc, og);
      backward_both(oc, og, 200 + op);
      expect_grads(c, g, 0);
      mixp_tensor_release(c); mixp_tensor_release(g); mixp_tensor_release(oc); mixp_tensor_release(og);
    }
  }
}

/* ---- broadcasting binary ops ------------------------------------------------------- */

static void test_binary_broadcast(void **state) {
  (void)state;
  /* a [4, 1, 6] op b [3, 6], and same-shape [4, 3, 6] (the 128-bit path). */
  const int64_t sa[3] = {4, 1, 6}, sb[2] = {3, 6}, sf[3] = {4, 3, 6};
  double va[72], vb[72];
  mt_fill(va, 72, 0.5, 4.0, 1);
  mt_fill(vb, 72, 0.5, 4.0, 2);
  for (int op = 0; op < MT_BINARY_ROWS; ++op) /* every binary row of the op table */
    for (int k = 0; k < 3; ++k)
      for (int same = 0; same < 2; ++same) {
        mixp_tensor *ac, *ag, *bc, *bg, *oc, *og;
        twin(k_dtypes[k], va, same ? sf : sa, 3, 1, &ac, &ag);
        twin(k_dtypes[k], vb, same ? sf : sb, same ? 3 : 2, 1, &bc, &bg);
        MT_OK(mt_binary_rows[op].f(ac, bc, &oc));
        MT_OK(mt_binary_rows[op].f(ag, bg, &og));
        expect_bitwise(oc, og); /* one IEEE operation, one rounding */
        backward_both(oc, og, 300 + op);
        expect_grads(ac, ag, 0);
        expect_grads(bc, bg, 0);
        mixp_tensor_release(ac); mixp_tensor_release(ag); mixp_tensor_release(bc);
        mixp_tensor_release(bg); mixp_tensor_release(oc); mixp_tensor_release(og);
      }
}

/* ---- reductions, softmax, cross-entropy -------------------------------------------- */

static void test_reductions(void **state) {
  (void)state;
  const int64_t shape[3] = {5, 300, 7};
  enum { N = 5 * 300 * 7 };
  static double v[N];
  mt_fill(v, N, -2.0, 2.0, 5);
  const int dims_sets[3][2] = {{2, 0}, {0, 0}, {1, 0}}; /* last, first, middle */
  for (int k = 0; k < 3; ++k)
    for (int d = 0; d < 3; ++d) {
      mixp_tensor *c, *g, *oc, *og, *mc, *mg, *ic, *ig;
      twin(k_dtypes[k], v, shape, 3, 1, &c, &g);
      MT_OK(mixp_sum(c, dims_sets[d], 1, 0, &oc));
      MT_OK(mixp_sum(g, dims_sets[d], 1, 0, &og));
      expect_close(oc, og);
      backward_both(oc, og, 400 + d);
      expect_grads(c, g, 1); /* a broadcast copy of the seed */
      MT_OK(mixp_max(c, dims_sets[d][0], 0, &mc, &ic));
      MT_OK(mixp_max(g, dims_sets[d][0], 0, &mg, &ig));
      expect_bitwise(mc, mg);
      expect_bitwise(ic, ig);
      mixp_tensor *ac, *ag, *ec, *eg;
      MT_OK(mixp_argmax(c, dims_sets[d][0], 1, &ac));
      MT_OK(mixp_argmax(g, dims_sets[d][0], 1, &ag));
      expect_bitwise(ac, ag);
      MT_OK(mixp_mean(c, dims_sets[d], 1, 1, &ec));
      MT_OK(mixp_mean(g, dims_sets[d], 1, 1, &eg));
      expect_close(ec, eg);
      mixp_tensor_release(c); mixp_tensor_release(g); mixp_tensor_release(oc); mixp_tensor_release(og);
      mixp_tensor_release(mc); mixp_tensor_release(mg); mixp_tensor_release(ic); mixp_tensor_release(ig);
      mixp_tensor_release(ac); mixp_tensor_release(ag); mixp_tensor_release(ec); mixp_tensor_release(eg);
    }
  /* A long row (two-pass row sum) and many rows (two-pass column sum). */
  static double w[2 * 40000];
  mt_fill(w, 2 * 40000, -1.0, 1.0, 6);
  const int64_t s2[2] = {2, 40000}, s3[2] = {40000, 2};
  for (int t = 0; t < 2; ++t) {
    mixp_tensor *c, *g, *oc, *og;
    const int dim = t == 0 ? 1 : 0;
    twin(MIXP_F32, w, t == 0 ? s2 : s3, 2, 0, &c, &g);
    MT_OK(mixp_sum(c, &dim, 1, 0, &oc));
    MT_OK(mixp_sum(g, &dim, 1, 0, &og));
    double *a = mt_values(oc), *b = mt_values(og);
    mt_assert_close(b, a, 2, 1e-3, 1e-5);
    free(a); free(b);
    mixp_tensor_release(c); mixp_tensor_release(g); mixp_tensor_release(oc); mixp_tensor_release(og);
  }
}

static void test_softmax_fwd_bwd(void **state) {
  (void)state;
  const int64_t shape[3] = {4, 37, 9};
  double v[4 * 37 * 9];
  mt_fill(v, 4 * 37 * 9, -5.0, 5.0, 8);
  for (int k = 0; k < 3; ++k)
    for (int lg = 0; lg < 2; ++lg)
      for (int dim = 1; dim <= 2; ++dim) { /* middle (strided) and last axis */
        mixp_tensor *c, *g, *oc, *og;
        twin(k_dtypes[k], v, shape, 3, 1, &c, &g);
        MT_OK((lg ? mixp_log_softmax : mixp_softmax)(c, dim, &oc));
        MT_OK((lg ? mixp_log_softmax : mixp_softmax)(g, dim, &og));
        expect_close(oc, og);
        backward_both(oc, og, 500 + dim);
        expect_grads(c, g, 0);
        mixp_tensor_release(c); mixp_tensor_release(g); mixp_tensor_release(oc); mixp_tensor_release(og);
      }
}

static void test_cross_entropy(void **state) {
  (void)state;
  enum { R = 33, C = 1000 };
  static double v[R * C];
  mt_fill(v, R * C, -4.0, 4.0, 9);
  int64_t tgt[R];
  for (int i = 0; i < R; ++i) tgt[i] = (i * 37) % C;
  tgt[3] = -100; /* ignored rows */
  tgt[17] = -100;
  const int64_t shape[2] = {R, C}, tshape[1] = {R};
  const mixp_reduction reds[3] = {MIXP_REDUCTION_MEAN, MIXP_REDUCTION_SUM, MIXP_REDUCTION_NONE};
  for (int k = 0; k < 3; ++k)
    for (int r = 0; r < 3; ++r) {
      mixp_tensor *c, *g, *tc, *tg, *oc, *og;
      twin(k_dtypes[k], v, shape, 2, 1, &c, &g);
      twin_raw(MIXP_I64, tgt, tshape, 1, 0, &tc, &tg);
      MT_OK(mixp_cross_entropy(c, tc, reds[r], -100, &oc));
      MT_OK(mixp_cross_entropy(g, tg, reds[r], -100, &og));
      expect_close(oc, og);
      backward_both(oc, og, 600 + r);
      expect_grads(c, g, 0);
      mixp_tensor_release(c); mixp_tensor_release(g); mixp_tensor_release(tc); mixp_tensor_release(tg);
      mixp_tensor_release(oc); mixp_tensor_release(og);
    }
  /* Label smoothing (the device sums each row's logits in fp32, the CPU in
   * double: far under the tolerance at C = 1000 with e = 0.1). */
  for (int k = 0; k < 3; ++k)
    for (int r = 0; r < 3; ++r) {
      mixp_tensor *c, *g, *tc, *tg, *oc, *og;
      twin(k_dtypes[k], v, shape, 2, 1, &c, &g);
      twin_raw(MIXP_I64, tgt, tshape, 1, 0, &tc, &tg);
      mixp_cross_entropy_options o;
      mixp_cross_entropy_options_init(&o);
      o.reduction = reds[r];
      o.label_smoothing = 0.1;
      MT_OK(mixp_cross_entropy_ex(c, tc, &o, &oc));
      MT_OK(mixp_cross_entropy_ex(g, tg, &o, &og));
      expect_close(oc, og);
      backward_both(oc, og, 610 + r);
      expect_grads(c, g, 0);
      mixp_tensor_release(c); mixp_tensor_release(g); mixp_tensor_release(tc); mixp_tensor_release(tg);
      mixp_tensor_release(oc); mixp_tensor_release(og);
    }
}

/* ---- random: the same Philox stream ------------------------------------------------ */

static void test_random_same_stream(void **state) {
  (void)state;
  const int64_t shape[2] = {3, 1001};
  const mixp_dtype all[4] = {MIXP_F32, MIXP_F16, MIXP_BF16, MIXP_F64};
  MT_OK(mixp_session_set_seed(g_cpu, 77));
  MT_OK(mixp_session_set_seed(g_gpu, 77));
  for (int k = 0; k < 4; ++k) {
    mixp_tensor *uc, *ug, *nc, *ng;
    MT_OK(mixp_tensor_rand(g_cpu, all[k], shape, 2, &uc));
    MT_OK(mixp_tensor_rand(g_gpu, all[k], shape, 2, &ug));
    expect_bitwise(uc, ug);
    MT_OK(mixp_tensor_randn(g_cpu, all[k], shape, 2, &nc));
    MT_OK(mixp_tensor_randn(g_gpu, all[k], shape, 2, &ng));
    /* Box-Muller in double with the device's log/sin/cos: equal to ~1 ulp of double. */
    double *a = mt_values(nc), *b = mt_values(ng);
    mt_assert_close(b, a, mixp_tensor_numel(nc), all[k] == MIXP_F64 ? 1e-14 : 1e-30,
                    all[k] == MIXP_F64 ? 1e-14 : (all[k] == MIXP_F32 ? 1.2e-7 : 8e-3));
    free(a); free(b);
    mixp_tensor_release(uc); mixp_tensor_release(ug); mixp_tensor_release(nc); mixp_tensor_release(ng);
  }
  /* Dropout: same mask, same scaling, same gradient. */
  double v[3 * 1001];
  mt_fill(v, 3 * 1001, -1.0, 1.0, 12);
  for (int k = 0; k < 3; ++k) {
    mixp_tensor *c, *g, *oc, *og;
    twin(k_dtypes[k], v, shape, 2, 1, &c, &g);
    MT_OK(mixp_dropout(c, 0.3, 1, &oc));
    MT_OK(mixp_dropout(g, 0.3, 1, &og));
    expect_bitwise(oc, og);
    backward_both(oc, og, 700);
    expect_grads(c, g, 1);
    mixp_tensor_release(c); mixp_tensor_release(g); mixp_tensor_release(oc); mixp_tensor_release(og);
  }
}

/* ---- embedding, norms, pooling ------------------------------------------------------ */

static void test_embedding(void **state) {
  (void)state;
  enum { V = 50, D = 24, NI = 300 };
  double w[V * D];
  mt_fill(w, V * D, -1.0, 1.0, 13);
  int64_t idx[NI];
  for (int i = 0; i < NI; ++i) idx[i] = (i * i + 3 * i) % V; /* repeats: ordered sums */
  const int64_t ws[2] = {V, D}, is[2] = {10, NI / 10};
  for (int k = 0; k < 3; ++k)
    for (int pad = 0; pad < 2; ++pad) {
      mixp_tensor *c, *g, *ic, *ig, *oc, *og;
      twin(k_dtypes[k], w, ws, 2, 1, &c, &g);
      twin_raw(MIXP_I64, idx, is, 2, 0, &ic, &ig);
      MT_OK(mixp_embedding(c, ic, pad ? 4 : -1, &oc));
      MT_OK(mixp_embedding(g, ig, pad ? 4 : -1, &og));
      expect_bitwise(oc, og);
      backward_both(oc, og, 800 + pad);
      expect_grads(c, g, 1);
      mixp_tensor_release(c); mixp_tensor_release(g); mixp_tensor_release(ic); mixp_tensor_release(ig);
      mixp_tensor_release(oc); mixp_tensor_release(og);
    }
}

static void test_norms(void **state) {
  (void)state;
  const int64_t xs[4] = {4, 6, 5, 7}, cs[1] = {6}, ls[1] = {7};
  double x[4 * 6 * 5 * 7], w[6], b[6];
  mt_fill(x, 840, -2.0, 3.0, 14);
  mt_fill(w, 6, 0.5, 1.5, 15);
  mt_fill(b, 6, -0.5, 0.5, 16);
  for (int k = 0; k < 3; ++k)
    for (int which = 0; which < 4; ++which) { /* batch norm NCHW, NHWC-as-data, group norm, layer norm */
      mixp_tensor *c, *g, *wc, *wg, *bc, *bg, *oc, *og;
      twin(k_dtypes[k], x, xs, 4, 1, &c, &g);
      twin(k_dtypes[k], w, which == 3 ? ls : cs, 1, 1, &wc, &wg);
      twin(k_dtypes[k], b, which == 3 ? ls : cs, 1, 1, &bc, &bg);
      if (which < 2) {
        const mixp_layout lay = which == 0 ? MIXP_NCHW : MIXP_NHWC;
        mixp_tensor *wc2 = wc, *wg2 = wg, *bc2 = bc, *bg2 = bg;
        if (which == 1) { /* NHWC: channels are the last dim (7) */
          mixp_tensor_release(wc); mixp_tensor_release(wg); mixp_tensor_release(bc); mixp_tensor_release(bg);
          double w7[7], b7[7];
          mt_fill(w7, 7, 0.5, 1.5, 17);
          mt_fill(b7, 7, -0.5, 0.5, 18);
          twin(k_dtypes[k], w7, ls, 1, 1, &wc2, &wg2);
          twin(k_dtypes[k], b7, ls, 1, 1, &bc2, &bg2);
          wc = wc2; wg = wg2; bc = bc2; bg = bg2;
        }
        MT_OK(mixp_batch_norm(c, wc, bc, NULL, NULL, 1, 0.1, 1e-5, lay, &oc));
        MT_OK(mixp_batch_norm(g, wg, bg, NULL, NULL, 1, 0.1, 1e-5, lay, &og));
      } else if (which == 2) {
        MT_OK(mixp_group_norm(c, 3, wc, bc, 1e-5, &oc));
        MT_OK(mixp_group_norm(g, 3, wg, bg, 1e-5, &og));
      } else {
        MT_OK(mixp_layer_norm(c, 1, wc, bc, 1e-5, &oc));
        MT_OK(mixp_layer_norm(g, 1, wg, bg, 1e-5, &og));
      }
      expect_close(oc, og);
      backward_both(oc, og, 900 + which);
      expect_grads(c, g, 0);
      expect_grads(wc, wg, 0);
      expect_grads(bc, bg, 0);
      mixp_tensor_release(c); mixp_tensor_release(g); mixp_tensor_release(wc); mixp_tensor_release(wg);
      mixp_tensor_release(bc); mixp_tensor_release(bg); mixp_tensor_release(oc); mixp_tensor_release(og);
    }
}

/* Training batch norm on the device through the backend's library path
 * (MIXP_BATCH_NORM=auto: cuDNN on CUDA, fp32 statistics) and the core
 * kernels (native: double statistics): the output, the three gradients and
 * the running statistics agree within the dtype's tolerance; the library
 * path repeats bit for bit; a bad value of the variable, and a forced
 * library path the backend declines (F64), fail by name and change
 * nothing. In a harness check both runs are the CPU's core kernels. */
enum { BN_OUTS = 6 };
static void batch_norm_run(mixp_dtype dt, mixp_layout lay, const char *path, double *out[BN_OUTS],
                           int64_t *sizes) {
  const int64_t xs[4] = {8, 6, 5, 7}, n = 8 * 6 * 5 * 7;
  const int64_t c = lay == MIXP_NCHW ? 6 : 7, cs[1] = {c};
  double xv[8 * 6 * 5 * 7], gv[8 * 6 * 5 * 7], wv[7], bv[7], zeros[7] = {0}, ones[7];
  mt_fill(xv, n, -2.0, 3.0, 41);
  mt_fill(gv, n, -1.0, 1.0, 42);
  mt_fill(wv, c, 0.5, 1.5, 43);
  mt_fill(bv, c, -0.5, 0.5, 44);
  for (int i = 0; i < 7; ++i) ones[i] = 1.0;
  assert_int_equal(setenv("MIXP_BATCH_NORM", path, 1), 0);
  mixp_tensor *x = mt_tensor(g_gpu, dt, xv, xs, 4), *w = mt_tensor(g_gpu, MIXP_F32, wv, cs, 1),
              *b = mt_tensor(g_gpu, MIXP_F32, bv, cs, 1), *rm = mt_tensor(g_gpu, MIXP_F32, zeros, cs, 1),
              *rv = mt_tensor(g_gpu, MIXP_F32, ones, cs, 1), *seed = mt_tensor(g_gpu, dt, gv, xs, 4), *y = NULL;
  MT_OK(mixp_tensor_set_requires_grad(x, 1));
  MT_OK(mixp_tensor_set_requires_grad(w, 1));
  MT_OK(mixp_tensor_set_requires_grad(b, 1));
  MT_OK(mixp_batch_norm(x, w, b, rm, rv, 1, 0.1, 1e-5, lay, &y));
  MT_OK(mixp_backward(y, seed));
  mixp_tensor *gx = NULL, *gw = NULL, *gb = NULL;
  MT_OK(mixp_tensor_grad(x, &gx));
  MT_OK(mixp_tensor_grad(w, &gw));
  MT_OK(mixp_tensor_grad(b, &gb));
  const mixp_tensor *outs[BN_OUTS] = {y, gx, gw, gb, rm, rv};
  for (int i = 0; i < BN_OUTS; ++i) {
    out[i] = mt_values(outs[i]);
    sizes[i] = mixp_tensor_numel(outs[i]);
  }
  mixp_tensor *all[] = {x, w, b, rm, rv, seed, y, gx, gw, gb};
  for (size_t i = 0; i < sizeof all / sizeof *all; ++i) mixp_tensor_release(all[i]);
  assert_int_equal(unsetenv("MIXP_BATCH_NORM"), 0);
}

static void test_batch_norm_paths(void **state) {
  (void)state;
  static const char *names[BN_OUTS] = {"y", "gx", "gw", "gb", "running_mean", "running_var"};
  for (int k = 0; k < 3; ++k)
    for (int l = 0; l < 2; ++l) {
      const mixp_layout lay = l == 0 ? MIXP_NCHW : MIXP_NHWC;
      double *lib[BN_OUTS], *again[BN_OUTS], *native[BN_OUTS];
      int64_t n[BN_OUTS];
      batch_norm_run(k_dtypes[k], lay, "auto", lib, n);
      batch_norm_run(k_dtypes[k], lay, "auto", again, n);
      batch_norm_run(k_dtypes[k], lay, "native", native, n);
      for (int i = 0; i < BN_OUTS; ++i) {
        /* y and gx in the data's dtype; the parameters' gradients and the
         * running statistics are F32 (compared at F32's tolerance). */
        double atol, rtol;
        tol_for(i < 2 ? k_dtypes[k] : MIXP_F32, &atol, &rtol);
        if (memcmp(lib[i], again[i], (size_t)n[i] * sizeof(double)) != 0) {
          print_error("%s (dtype %d, layout %d): the library path is not reproducible\n", names[i],
                      (int)k_dtypes[k], (int)lay);
          fail();
        }
        mt_assert_close(lib[i], native[i], n[i], atol, rtol);
        free(lib[i]);
        free(again[i]);
        free(native[i]);
      }
    }
  /* On a GPU, cuDNN must take the F32 and F16 cases in both layouts (BF16
   * is taken where cuDNN supports it): a decline here (say, a reserve space
   * the node does not keep) fails instead of silently composing. */
  if (strcmp(g_gpu_device, "cuda") == 0)
    for (int k = 0; k < 2; ++k)
      for (int l = 0; l < 2; ++l) {
        double *forced[BN_OUTS];
        int64_t n[BN_OUTS];
        batch_norm_run(k_dtypes[k], l == 0 ? MIXP_NCHW : MIXP_NHWC, "library", forced, n);
        for (int i = 0; i < BN_OUTS; ++i) free(forced[i]);
      }
  /* Misuse: the variable's value, and a forced path the backend declines. */
  const int64_t xs[2] = {4, 3}, cs[1] = {3};
  double xv[12], zeros[3] = {0, 0, 0};
  mt_fill(xv, 12, -1.0, 1.0, 45);
  mixp_tensor *x = mt_tensor(g_gpu, MIXP_F32, xv, xs, 2), *x64 = mt_tensor(g_gpu, MIXP_F64, xv, xs, 2),
              *rm = mt_tensor(g_gpu, MIXP_F32, zeros, cs, 1), *rm64 = mt_tensor(g_gpu, MIXP_F64, zeros, cs, 1),
              *rv64 = mt_tensor(g_gpu, MIXP_F64, zeros, cs, 1), *y = NULL;
  assert_int_equal(setenv("MIXP_BATCH_NORM", "fastest", 1), 0);
  MT_FAILS2(mixp_batch_norm(x, NULL, NULL, rm, NULL, 1, 0.1, 1e-5, MIXP_NCHW, &y), MIXP_ERR_INVALID_ARGUMENT,
            "mixp_batch_norm", "MIXP_BATCH_NORM");
  assert_null(y);
  assert_int_equal(setenv("MIXP_BATCH_NORM", "library", 1), 0);
  MT_FAILS2(mixp_batch_norm(x64, NULL, NULL, rm64, rv64, 1, 0.1, 1e-5, MIXP_NCHW, &y), MIXP_ERR_UNSUPPORTED,
            "mixp_batch_norm", "MIXP_BATCH_NORM=library");
  assert_null(y);
  assert_int_equal(unsetenv("MIXP_BATCH_NORM"), 0);
  double *after = mt_values(rm), *after64 = mt_values(rm64);
  for (int i = 0; i < 3; ++i) {
    assert_true(after[i] == 0.0);
    assert_true(after64[i] == 0.0);
  }
  free(after);
  free(after64);
  /* Evaluation mode never asks for the library path. */
  assert_int_equal(setenv("MIXP_BATCH_NORM", "library", 1), 0);
  double ones[3] = {1, 1, 1};
  mixp_tensor *rv = mt_tensor(g_gpu, MIXP_F32, ones, cs, 1);
  MT_OK(mixp_batch_norm(x, NULL, NULL, rm, rv, 0, 0.1, 1e-5, MIXP_NCHW, &y));
  assert_int_equal(unsetenv("MIXP_BATCH_NORM"), 0);
  mixp_tensor *all[] = {x, x64, rm, rm64, rv64, rv, y};
  for (size_t i = 0; i < sizeof all / sizeof *all; ++i) mixp_tensor_release(all[i]);
}

/* Layer norm over many rows (300: three bands of the CUDA column kernel
 * behind its weight and bias gradients, the last one partial). */
static void test_layer_norm_many_rows(void **state) {
  (void)state;
  const int64_t xs[2] = {300, 40}, ps[1] = {40};
  static double x[300 * 40];
  double w[40], b[40];
  mt_fill(x, 300 * 40, -2.0, 3.0, 31);
  mt_fill(w, 40, 0.5, 1.5, 32);
  mt_fill(b, 40, -0.5, 0.5, 33);
  for (int k = 0; k < 3; ++k) {
    mixp_tensor *c, *g, *wc, *wg, *bc, *bg, *oc, *og;
    twin(k_dtypes[k], x, xs, 2, 1, &c, &g);
    twin(k_dtypes[k], w, ps, 1, 1, &wc, &wg);
    twin(k_dtypes[k], b, ps, 1, 1, &bc, &bg);
    MT_OK(mixp_layer_norm(c, 1, wc, bc, 1e-5, &oc));
    MT_OK(mixp_layer_norm(g, 1, wg, bg, 1e-5, &og));
    expect_close(oc, og);
    backward_both(oc, og, 950);
    expect_grads(c, g, 0);
    expect_grads(wc, wg, 0);
    expect_grads(bc, bg, 0);
    mixp_tensor_release(c); mixp_tensor_release(g); mixp_tensor_release(wc); mixp_tensor_release(wg);
    mixp_tensor_release(bc); mixp_tensor_release(bg); mixp_tensor_release(oc); mixp_tensor_release(og);
  }
}

static void test_pooling(void **state) {
  (void)state;
  const int64_t xs[4] = {2, 3, 9, 11};
  double x[2 * 3 * 9 * 11];
  mt_fill(x, 594, -3.0, 3.0, 19);
  for (int k = 0; k < 3; ++k)
    for (int kind = 0; kind < 4; ++kind)
      for (int lay = 0; lay < 2; ++lay) {
        mixp_pool2d_options o;
        mixp_pool2d_options_init(&o);
        o.kernel_h = 3; o.kernel_w = 2; o.stride_h = 2; o.stride_w = 1; o.pad_h = 1; o.pad_w = 1;
        o.count_include_pad = kind == 2 ? 0 : 1;
        o.layout = lay ? MIXP_NHWC : MIXP_NCHW;
        mixp_tensor *c, *g, *oc, *og;
        twin(k_dtypes[k], x, xs, 4, 1, &c, &g);
        if (kind == 0) {
          MT_OK(mixp_max_pool2d(c, &o, &oc));
          MT_OK(mixp_max_pool2d(g, &o, &og));
        } else if (kind == 3) { /* 9x11 -> 4x3: uneven windows */
          MT_OK(mixp_adaptive_avg_pool2d(c, 4, 3, o.layout, &oc));
          MT_OK(mixp_adaptive_avg_pool2d(g, 4, 3, o.layout, &og));
        } else {
          MT_OK(mixp_avg_pool2d(c, &o, &oc));
          MT_OK(mixp_avg_pool2d(g, &o, &og));
        }
        expect_bitwise(oc, og);
        backward_both(oc, og, 1000 + kind);
        expect_grads(c, g, 1);
        mixp_tensor_release(c); mixp_tensor_release(g); mixp_tensor_release(oc); mixp_tensor_release(og);
      }
}

/* ---- views and shape ops: pure data movement, bitwise ----------------------------- */

/* permute -> slice -> pad -> flatten -> cat -> split, then the gradient back
 * through all of them. */
static mixp_tensor *shape_chain(mixp_tensor *x, mixp_tensor **keep) {
  const int perm[3] = {2, 0, 1};
  const int64_t pads[4] = {1, 2, 0, 1};
  const int64_t sizes[2] = {25, 15};
  mixp_tensor *p, *sl, *pd, *fl, *fl2, *ct, *parts[2];
  MT_OK(mixp_permute(x, perm, 3, &p));           /* [5, 3, 4] */
  MT_OK(mixp_slice(p, 2, 0, 4, 2, &sl));         /* [5, 3, 2] */
  MT_OK(mixp_pad(sl, pads, 4, 0.5, &pd));        /* [5, 4, 5] */
  MT_OK(mixp_flatten(pd, 0, 1, &fl));            /* [20, 5] */
  MT_OK(mixp_flatten(pd, 0, 1, &fl2));
  const mixp_tensor *const both[2] = {fl, fl2};
  MT_OK(mixp_cat(both, 2, 0, &ct));              /* [40, 5] */
  MT_OK(mixp_split(ct, sizes, 2, 0, parts));     /* [25, 5] and [15, 5] */
  *keep = parts[1];
  mixp_tensor_release(p); mixp_tensor_release(sl); mixp_tensor_release(pd);
  mixp_tensor_release(fl); mixp_tensor_release(fl2); mixp_tensor_release(ct);
  return parts[0];
}

static void test_shape_ops_bitwise(void **state) {
  (void)state;
  const int64_t shape[3] = {3, 4, 5};
  double v[60];
  mt_fill(v, 60, -2.0, 2.0, 23);
  for (int k = 0; k < 3; ++k) {
    mixp_tensor *c, *g, *kc, *kg;
    twin(k_dtypes[k], v, shape, 3, 1, &c, &g);
    mixp_tensor *oc = shape_chain(c, &kc), *og = shape_chain(g, &kg);
    expect_bitwise(oc, og);
    expect_bitwise(kc, kg);
    backward_both(oc, og, 1100);
    expect_grads(c, g, 1);
    mixp_tensor_release(c); mixp_tensor_release(g); mixp_tensor_release(oc); mixp_tensor_release(og);
    mixp_tensor_release(kc); mixp_tensor_release(kg);
  }
}

/* ---- attention and the MSE loss --------------------------------------------------- */

static void test_attention_and_mse(void **state) {
  (void)state;
  const int64_t qs[4] = {2, 3, 17, 8};
  enum { N = 2 * 3 * 17 * 8 };
  static double q[N], kk[N], vv[N];
  mt_fill(q, N, -1.0, 1.0, 24);
  mt_fill(kk, N, -1.0, 1.0, 25);
  mt_fill(vv, N, -1.0, 1.0, 26);
  for (int k = 0; k < 3; ++k)
    for (int causal = 0; causal < 2; ++causal) {
      mixp_tensor *qc, *qg, *kc, *kg, *vc, *vg, *oc, *og;
      twin(k_dtypes[k], q, qs, 4, 1, &qc, &qg);
      twin(k_dtypes[k], kk, qs, 4, 1, &kc, &kg);
      twin(k_dtypes[k], vv, qs, 4, 1, &vc, &vg);
      MT_OK(mixp_scaled_dot_product_attention(qc, kc, vc, causal, 0.0, 0.0, &oc));
      MT_OK(mixp_scaled_dot_product_attention(qg, kg, vg, causal, 0.0, 0.0, &og));
      expect_close(oc, og);
      backward_both(oc, og, 1200 + causal);
      expect_grads(qc, qg, 0);
      expect_grads(kc, kg, 0);
      expect_grads(vc, vg, 0);
      mixp_tensor_release(qc); mixp_tensor_release(qg); mixp_tensor_release(kc); mixp_tensor_release(kg);
      mixp_tensor_release(vc); mixp_tensor_release(vg); mixp_tensor_release(oc); mixp_tensor_release(og);
    }
  for (int k = 0; k < 3; ++k) {
    mixp_tensor *ac, *ag, *bc, *bg, *oc, *og;
    twin(k_dtypes[k], q, qs, 4, 1, &ac, &ag);
    twin(k_dtypes[k], kk, qs, 4, 1, &bc, &bg);
    MT_OK(mixp_mse_loss(ac, bc, MIXP_REDUCTION_MEAN, &oc));
    MT_OK(mixp_mse_loss(ag, bg, MIXP_REDUCTION_MEAN, &og));
    expect_close(oc, og);
    MT_OK(mixp_backward(oc, NULL));
    MT_OK(mixp_backward(og, NULL));
    expect_grads(ac, ag, 0);
    expect_grads(bc, bg, 0);
    mixp_tensor_release(ac); mixp_tensor_release(ag); mixp_tensor_release(bc); mixp_tensor_release(bg);
    mixp_tensor_release(oc); mixp_tensor_release(og);
  }
}

/* ---- AMP: a GradScaler + clipping + AdamW step, with no host syncs ------------------- */

/* One step on session s: loss = sum((p * x)^2) * scale; grads unscaled and
 * clipped on the device; the optimizer skips on overflow. */
static void amp_step(mixp_session *s, mixp_tensor *p, mixp_tensor *x, mixp_grad_scaler *sc,
                     mixp_optimizer *opt) {
  mixp_tensor *px, *sq, *loss, *scaled, *norm;
  MT_OK(mixp_optimizer_zero_grad(opt));
  MT_OK(mixp_mul(p, x, &px));
  MT_OK(mixp_mul(px, px, &sq));
  MT_OK(mixp_sum(sq, NULL, 0, 0, &loss));
  MT_OK(mixp_grad_scaler_scale(sc, loss, &scaled));
  MT_OK(mixp_backward(scaled, NULL));
  MT_OK(mixp_grad_scaler_unscale(sc, opt));
  MT_OK(mixp_clip_grad_norm(opt, 1.0, &norm));
  MT_OK(mixp_grad_scaler_step(sc, opt));
  MT_OK(mixp_grad_scaler_update(sc));
  (void)s;
  mixp_tensor_release(px); mixp_tensor_release(sq); mixp_tensor_release(loss);
  mixp_tensor_release(scaled); mixp_tensor_release(norm);
}

static void test_amp_step_parity_no_sync(void **state) {
  (void)state;
  enum { N = 70000 }; /* more than one multi-tensor chunk */
  static double pv[N], xv[N];
  mt_fill(pv, N, -1.0, 1.0, 21);
  mt_fill(xv, N, -1.0, 1.0, 22);
  const int64_t shape[1] = {N};
  for (int k = 0; k < 2; ++k) { /* F32 and F16 parameters */
    const mixp_dtype dt = k == 0 ? MIXP_F32 : MIXP_F16;
    mixp_tensor *pc, *pg, *xc, *xg;
    twin(dt, pv, shape, 1, 1, &pc, &pg);
    twin(dt, xv, shape, 1, 0, &xc, &xg);
    mixp_optimizer_options oo;
    mixp_optimizer_options_init(&oo, MIXP_OPTIM_ADAMW);
    oo.lr = 1e-2;
    mixp_optimizer *oc, *og;
    MT_OK(mixp_optimizer_create(g_cpu, &pc, 1, &oo, &oc));
    MT_OK(mixp_optimizer_create(g_gpu, &pg, 1, &oo, &og));
    mixp_grad_scaler_options so;
    mixp_grad_scaler_options_init(&so);
    so.init_scale = k == 0 ? 65536.0 : 1e6; /* F16: the first step overflows and is skipped */
    so.growth_interval = 2;
    mixp_grad_scaler *sc, *sg;
    MT_OK(mixp_grad_scaler_create(g_cpu, &so, &sc));
    MT_OK(mixp_grad_scaler_create(g_gpu, &so, &sg));
    uint64_t before = 0, after = 0;
    MT_OK(mixp_session_host_syncs(g_gpu, &before));
    for (int step = 0; step < 4; ++step) {
      amp_step(g_cpu, pc, xc, sc, oc);
      amp_step(g_gpu, pg, xg, sg, og);
    }
    MT_OK(mixp_session_host_syncs(g_gpu, &after));
    assert_int_equal(after, before); /* four full steps, not one wait */
    double scale_c = 0, scale_g = 0;
    MT_OK(mixp_grad_scaler_get_scale(sc, &scale_c));
    MT_OK(mixp_grad_scaler_get_scale(sg, &scale_g));
    assert_true(scale_c == scale_g);
    /* The norm is summed in a different order, so the clip coefficient (and
     * then the step) may differ in the last bit. */
    expect_close(pc, pg);
    mixp_grad_scaler_destroy(sc); mixp_grad_scaler_destroy(sg);
    mixp_optimizer_destroy(oc); mixp_optimizer_destroy(og);
    mixp_tensor_release(pc); mixp_tensor_release(pg); mixp_tensor_release(xc); mixp_tensor_release(xg);
  }
}

/* ---- fused optimizer steps over many parameters, bitwise ------------------------------ */

/* 44 parameters of four dtypes in runs (so the CUDA backend's multi-tensor
 * tables split on a change of kind and after 32 parameters), sizes with
 * 1-3 element tails and several chunks; each gradient is x_i (backward of
 * sum(p_i * x_i)), three steps per optimizer configuration, the last two
 * with BF16 state and stochastic rounding of the BF16 parameters. The update
 * is the same IEEE operations in the same order on both devices, and the
 * rounding bits the same Philox words: each configuration runs on a fresh
 * pair of sessions with one seed, so both streams start at the same offset. */
enum { OPT_PARAMS = 44 };

static mixp_dtype opt_param_dtype(int i) {
  if (i < 36) return MIXP_F32; /* 36 F32 in a row: a full table and more */
  static const mixp_dtype rest[8] = {MIXP_F16, MIXP_F16, MIXP_BF16, MIXP_F32,
                                     MIXP_F64, MIXP_BF16, MIXP_F64, MIXP_F16};
  return rest[i - 36];
}

static void opt_grads(mixp_tensor **p, mixp_tensor **x) {
  for (int i = 0; i < OPT_PARAMS; ++i) {
    mixp_tensor *px = NULL, *sum = NULL;
    MT_OK(mixp_mul(p[i], x[i], &px));
    MT_OK(mixp_sum(px, NULL, 0, 0, &sum));
    MT_OK(mixp_backward(sum, NULL));
    mixp_tensor_release(px);
    mixp_tensor_release(sum);
  }
}

static void test_optimizer_steps_bitwise(void **state) {
  (void)state;
  static const int64_t sizes[7] = {1, 3, 4, 7, 16384, 16387, 40001};
  mixp_session *const keep_cpu = g_cpu, *const keep_gpu = g_gpu;
  for (int config = 0; config < 6; ++config) {
    g_cpu = make_session("cpu");
    g_gpu = make_session(g_gpu_device);
    assert_non_null(g_cpu);
    assert_non_null(g_gpu);
    mixp_tensor *pc[OPT_PARAMS], *pg[OPT_PARAMS], *xc[OPT_PARAMS], *xg[OPT_PARAMS];
    for (int i = 0; i < OPT_PARAMS; ++i) {
      const int64_t shape[1] = {sizes[(i * 3 + config) % 7]};
      double *pv = (double *)malloc((size_t)shape[0] * sizeof(double));
      double *xv = (double *)malloc((size_t)shape[0] * sizeof(double));
      mt_fill(pv, shape[0], -1.0, 1.0, 100 + (uint64_t)i);
      mt_fill(xv, shape[0], -2.0, 2.0, 300 + (uint64_t)i);
      twin(opt_param_dtype(i), pv, shape, 1, 1, &pc[i], &pg[i]);
      twin(opt_param_dtype(i), xv, shape, 1, 0, &xc[i], &xg[i]);
      free(pv);
      free(xv);
    }
    mixp_optimizer_options oo;
    switch (config) {
      case 0: /* AdamW with decoupled weight decay */
        mixp_optimizer_options_init(&oo, MIXP_OPTIM_ADAMW);
        oo.lr = 1e-2;
        oo.weight_decay = 0.1;
        break;
      case 1: /* Adam with L2 weight decay, beta1 near 1 (the other lerp form) */
        mixp_optimizer_options_init(&oo, MIXP_OPTIM_ADAM);
        oo.lr = 3e-3;
        oo.beta1 = 0.3;
        oo.weight_decay = 1e-2;
        break;
      case 2: /* SGD with Nesterov momentum and weight decay */
        mixp_optimizer_options_init(&oo, MIXP_OPTIM_SGD);
        oo.lr = 0.05;
        oo.momentum = 0.9;
        oo.nesterov = 1;
        oo.weight_decay = 1e-4;
        break;
      case 3: /* plain SGD: no momentum buffer */
        mixp_optimizer_options_init(&oo, MIXP_OPTIM_SGD);
        oo.lr = 0.1;
        break;
      case 4: /* AdamW, BF16 moments, stochastic rounding */
        mixp_optimizer_options_init(&oo, MIXP_OPTIM_ADAMW);
        oo.lr = 1e-2;
        oo.state_dtype = MIXP_BF16;
        oo.stochastic_rounding = 1;
        break;
      default: /* SGD with momentum, BF16 momentum, stochastic rounding */
        mixp_optimizer_options_init(&oo, MIXP_OPTIM_SGD);
        oo.lr = 0.05;
        oo.momentum = 0.9;
        oo.state_dtype = MIXP_BF16;
        oo.stochastic_rounding = 1;
        break;
    }
    mixp_optimizer *oc = NULL, *og = NULL;
    MT_OK(mixp_optimizer_create(g_cpu, pc, OPT_PARAMS, &oo, &oc));
    MT_OK(mixp_optimizer_create(g_gpu, pg, OPT_PARAMS, &oo, &og));
    for (int step = 0; step < 3; ++step) {
      MT_OK(mixp_optimizer_zero_grad(oc));
      MT_OK(mixp_optimizer_zero_grad(og));
      opt_grads(pc, xc);
      opt_grads(pg, xg);
      MT_OK(mixp_optimizer_step(oc));
      MT_OK(mixp_optimizer_step(og));
    }
    for (int i = 0; i < OPT_PARAMS; ++i) {
      expect_bitwise(pc[i], pg[i]);
      mixp_tensor_release(pc[i]); mixp_tensor_release(pg[i]);
      mixp_tensor_release(xc[i]); mixp_tensor_release(xg[i]);
    }
    mixp_optimizer_destroy(oc);
    mixp_optimizer_destroy(og);
    mixp_session_destroy(g_cpu);
    mixp_session_destroy(g_gpu);
  }
  g_cpu = keep_cpu;
  g_gpu = keep_gpu;
}

int main(void) {
  /* MIXP_PARITY_HARNESS_CHECK=1 runs the "GPU" side on a second CPU session:
   * a check of this file's own logic (shapes, calls, comparisons) on
   * machines without a GPU, so a GPU run is not spent finding test bugs. */
  const char *harness = getenv("MIXP_PARITY_HARNESS_CHECK");
  const int harness_check = harness && strcmp(harness, "1") == 0;
  if (harness_check) printf("harness check: both sides run on the CPU\n");
  g_gpu_device = harness_check ? "cpu" : "cuda";
  g_gpu = make_session(g_gpu_device);
  if (!g_gpu) {
    /* Only a missing device (no plugin, driver or GPU) is a skip. */
    printf("SKIPPED: no CUDA session: %s\n", mixp_last_error());
    return mixp_last_status() == MIXP_ERR_DEVICE ? 77 : 1;
  }
  g_cpu = make_session("cpu");
  if (!g_cpu) return 1;
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_casts_bitwise),
      cmocka_unit_test(test_strided_copy_bitwise),
      cmocka_unit_test(test_unary_fwd_bwd),
      cmocka_unit_test(test_binary_broadcast),
      cmocka_unit_test(test_reductions),
      cmocka_unit_test(test_softmax_fwd_bwd),
      cmocka_unit_test(test_cross_entropy),
      cmocka_unit_test(test_random_same_stream),
      cmocka_unit_test(test_embedding),
      cmocka_unit_test(test_norms),
      cmocka_unit_test(test_batch_norm_paths),
      cmocka_unit_test(test_layer_norm_many_rows),
      cmocka_unit_test(test_pooling),
      cmocka_unit_test(test_shape_ops_bitwise),
      cmocka_unit_test(test_attention_and_mse),
      cmocka_unit_test(test_amp_step_parity_no_sync),
      cmocka_unit_test(test_optimizer_steps_bitwise),
  };
  const int rc = cmocka_run_group_tests(tests, NULL, NULL);
  mixp_session_destroy(g_cpu);
  mixp_session_destroy(g_gpu);
  return rc;
}
