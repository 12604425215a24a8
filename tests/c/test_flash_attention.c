/* Fused attention (the backend's attention_forward/backward) against the
 * composed path: values against an F64 reference with tolerances derived
 * from the accumulation lengths, strided views of one projection, dropout
 * dropping the composed path's elements, gradients (F64 gradcheck, and
 * against the composed path), bad input, NaN/Inf, and the memory the fused
 * path saves. MIXP_ATTENTION selects the path (fused | composed | auto). */
#include "test_util.h"

#define TILE 64 /* the CPU kernel's query and key tiles (cpu/flash_attention.hpp) */

static void use_path(const char *path) { assert_int_equal(setenv("MIXP_ATTENTION", path, 1), 0); }

typedef struct geom {
  int64_t b, h, l, s, d;
} geom;

/* Shapes: T not a multiple of the tile, T = 1, L != S, D in {16, 64, 80,
 * 128}, B*H large and small. */
static const geom GEOMS[] = {
    {2, 2, 70, 70, 16}, {1, 1, 1, 1, 64}, {1, 3, 33, 130, 80},
    {1, 2, 65, 65, 128}, {16, 8, 9, 9, 16}, {2, 1, 129, 100, 64},
};
#define NGEOMS (int)(sizeof GEOMS / sizeof GEOMS[0])

/* Unit roundoff of a storage type, and of the type fused attention
 * accumulates in (fp32 for the halves and f32, fp64 for f64). */
static double unit_roundoff(mixp_dtype dt) {
  switch (dt) {
    case MIXP_F64: return ldexp(1.0, -53);
    case MIXP_F32: return ldexp(1.0, -24);
    case MIXP_F16: return ldexp(1.0, -11);
    default: return ldexp(1.0, -8);
  }
}
static double acc_roundoff(mixp_dtype dt) { return dt == MIXP_F64 ? ldexp(1.0, -53) : ldexp(1.0, -24); }

/* The bound on |fused - exact| of an output element, inputs in [-1, 1]
 * (|v| <= 1) and scale 1/sqrt(D): a score is a D-term dot product (error
 * <= D u sqrt(D) by the standard gamma_n bound, with |score| <= sqrt(D));
 * a probability inherits twice that absolute score error as a relative
 * one (its exponent and the row's normaliser), plus the exp polynomial's 2
 * ulp and the S-term sum of the normaliser; the output is an S-term sum of
 * probabilities times |v| <= 1 (S u) and rounded once to the storage type.
 * The online softmax's rescaling adds one rounding per key tile. Doubled
 * for the second-order terms the bound drops. */
static double fused_tolerance(mixp_dtype dt, const geom *g) {
  const double u = acc_roundoff(dt), d = (double)g->d, s = (double)g->s;
  const double tiles = ceil(s / TILE);
  const double prob = 2.0 * d * u * sqrt(d) + 2.0 * u + s * u + 2.0 * tiles * u;
  return 2.0 * (prob + s * u + unit_roundoff(dt));
}

static int64_t numel4(const int64_t *s) { return s[0] * s[1] * s[2] * s[3]; }

/* Inputs of geometry g in dtype dt (values in [-1, 1)), contiguous. */
static void make_qkv(mixp_session *s, const geom *g, mixp_dtype dt, uint64_t seed, mixp_tensor **q,
                     mixp_tensor **k, mixp_tensor **v) {
  const int64_t qs[4] = {g->b, g->h, g->l, g->d}, ks[4] = {g->b, g->h, g->s, g->d};
  double *buf = malloc((size_t)(numel4(qs) + 2 * numel4(ks)) * sizeof(double));
  mt_fill(buf, numel4(qs) + 2 * numel4(ks), -1.0, 1.0, seed);
  *q = mt_tensor(s, dt, buf, qs, 4);
  *k = mt_tensor(s, dt, buf + numel4(qs), ks, 4);
  *v = mt_tensor(s, dt, buf + numel4(qs) + numel4(ks), ks, 4);
  free(buf);
}

/* Whether the suite's device runs F32 attention fused (the CPU does; the
 * CUDA backend runs only F16/BF16 fused, through cuDNN, and skips the tests
 * here that force the fused path in every dtype: test_cuda_attention.c
 * covers it). */
static int fused_runs_here(mixp_session *s) {
  const geom g = {1, 1, 2, 2, 8};
  mixp_tensor *q, *k, *v, *o = NULL;
  make_qkv(s, &g, MIXP_F32, 1, &q, &k, &v);
  use_path("fused");
  const mixp_status st = mixp_scaled_dot_product_attention(q, k, v, 0, 0.0, 0.0, &o);
  use_path("auto");
  mixp_tensor *objs[4] = {q, k, v, o};
  for (int i = 0; i < 4; ++i) mixp_tensor_release(objs[i]);
  return st == MIXP_OK;
}

#define SKIP_UNLESS_FUSED(s)                                                          \
  do {                                                                                \
    if (!fused_runs_here(s)) {                                                        \
      print_message("[  SKIPPED ] %s declines fused attention\n", mt_device());      \
      skip();                                                                         \
    }                                                                                 \
  } while (0)

static mixp_tensor *to_f64(mixp_tensor *t) {
  mixp_tensor *o = NULL;
  MT_OK(mixp_cast(t, MIXP_F64, &o));
  return o;
}

static double *attend(const char *path, mixp_tensor *q, mixp_tensor *k, mixp_tensor *v, int causal,
                      double p) {
  use_path(path);
  mixp_tensor *o = NULL;
  MT_OK(mixp_scaled_dot_product_attention(q, k, v, causal, p, 0.0, &o));
  double *vals = mt_values(o);
  mixp_tensor_release(o);
  return vals;
}

/* Fused in every dtype against the composed path in F64 on the same
 * (rounded) inputs, within fused_tolerance; and fused in F64 against
 * composed in F64 within the F64 bound. */
static void test_fused_matches_reference(void **state) {
  mixp_session *s = *state;
  SKIP_UNLESS_FUSED(s);
  const mixp_dtype dts[4] = {MIXP_F32, MIXP_F16, MIXP_BF16, MIXP_F64};
  for (int gi = 0; gi < NGEOMS; ++gi)
    for (int di = 0; di < 4; ++di)
      for (int causal = 0; causal <= 1; ++causal) {
        const geom *g = &GEOMS[gi];
        mixp_tensor *q, *k, *v;
        make_qkv(s, g, dts[di], 100 + (uint64_t)gi, &q, &k, &v);
        mixp_tensor *q64 = to_f64(q), *k64 = to_f64(k), *v64 = to_f64(v);
        double *got = attend("fused", q, k, v, causal, 0.0);
        double *want = attend("composed", q64, k64, v64, causal, 0.0);
        const double tol = fused_tolerance(dts[di], g);
        mt_assert_close(got, want, g->b * g->h * g->l * g->d, tol, 0.0);
        free(got);
        free(want);
        mixp_tensor *objs[6] = {q, k, v, q64, k64, v64};
        for (int i = 0; i < 6; ++i) mixp_tensor_release(objs[i]);
      }
  use_path("auto");
}

/* q, k, v as [B, H, T, D] views of one [B, T, 3E] projection (what the
 * attention layer passes) give the bits of their contiguous copies. */
static void test_strided_views(void **state) {
  mixp_session *s = *state;
  SKIP_UNLESS_FUSED(s);
  const int64_t b = 2, t = 77, h = 4, d = 16, e = h * d;
  const int64_t ps[3] = {b, t, 3 * e};
  double *buf = malloc((size_t)(b * t * 3 * e) * sizeof(double));
  mt_fill(buf, b * t * 3 * e, -1, 1, 7);
  const mixp_dtype dts[3] = {MIXP_F32, MIXP_BF16, MIXP_F16};
  for (int di = 0; di < 3; ++di) {
    mixp_tensor *proj = mt_tensor(s, dts[di], buf, ps, 3), *parts[3], *views[3], *copies[3];
    const int64_t sizes[3] = {e, e, e}, hs[4] = {b, t, h, d};
    MT_OK(mixp_split(proj, sizes, 3, -1, parts));
    for (int i = 0; i < 3; ++i) {
      mixp_tensor *r = NULL;
      MT_OK(mixp_reshape(parts[i], hs, 4, &r));
      MT_OK(mixp_transpose(r, 1, 2, &views[i]));
      MT_OK(mixp_contiguous(views[i], &copies[i]));
      mixp_tensor_release(r);
      mixp_tensor_release(parts[i]);
    }
    for (int causal = 0; causal <= 1; ++causal) {
      double *a = attend("fused", views[0], views[1], views[2], causal, 0.0);
      double *c = attend("fused", copies[0], copies[1], copies[2], causal, 0.0);
      assert_memory_equal(a, c, (size_t)(b * h * t * d) * sizeof(double));
      free(a);
      free(c);
    }
    for (int i = 0; i < 3; ++i) {
      mixp_tensor_release(views[i]);
      mixp_tensor_release(copies[i]);
    }
    mixp_tensor_release(proj);
  }
  free(buf);
  use_path("auto");
}

/* Heads of one projection, as a GPT block takes them: o comes back in q's
 * layout ([b, t, h, d]-dense, so merging the heads is a view), and the
 * projection's gradient, through dq, dk and dv laid out like q, k and v and
 * one split node, has the bits of the same attention on contiguous
 * copies. */
static double *projection_grad(mixp_session *s, mixp_dtype dt, const double *buf, int copy_heads,
                               int64_t b, int64_t t, int64_t h, int64_t d) {
  const int64_t e = h * d, ps[3] = {b, t, 3 * e}, sizes[3] = {e, e, e}, hs[4] = {b, t, h, d};
  mixp_tensor *proj = mt_tensor(s, dt, buf, ps, 3), *parts[3], *heads[3], *o = NULL, *merged = NULL,
              *loss = NULL, *sq = NULL;
  MT_OK(mixp_tensor_set_requires_grad(proj, 1));
  MT_OK(mixp_split(proj, sizes, 3, -1, parts));
  for (int i = 0; i < 3; ++i) {
    mixp_tensor *r = NULL, *tr = NULL;
    MT_OK(mixp_reshape(parts[i], hs, 4, &r));
    MT_OK(mixp_transpose(r, 1, 2, &tr));
    if (copy_heads) MT_OK(mixp_contiguous(tr, &heads[i]));
    else heads[i] = tr, tr = NULL;
    mixp_tensor *objs[3] = {r, tr, parts[i]};
    for (int j = 0; j < 3; ++j) mixp_tensor_release(objs[j]);
  }
  use_path("fused");
  MT_OK(mixp_scaled_dot_product_attention(heads[0], heads[1], heads[2], 1, 0.0, 0.0, &o));
  use_path("auto");
  MT_OK(mixp_transpose(o, 1, 2, &merged));
  if (!copy_heads) assert_true(mixp_tensor_is_contiguous(merged));
  MT_OK(mixp_mul(merged, merged, &sq));
  MT_OK(mixp_sum(sq, NULL, 0, 0, &loss));
  MT_OK(mixp_backward(loss, NULL));
  double *g = mt_grad_values(proj);
  mixp_tensor *objs[8] = {proj, heads[0], heads[1], heads[2], o, merged, sq, loss};
  for (int i = 0; i < 8; ++i) mixp_tensor_release(objs[i]);
  return g;
}

static void test_heads_of_one_projection(void **state) {
  mixp_session *s = *state;
  SKIP_UNLESS_FUSED(s);
  const int64_t b = 2, t = 37, h = 3, d = 16, n = b * t * 3 * h * d;
  double *buf = malloc((size_t)n * sizeof(double));
  mt_fill(buf, n, -1, 1, 11);
  const mixp_dtype dts[3] = {MIXP_F32, MIXP_BF16, MIXP_F64};
  for (int di = 0; di < 3; ++di) {
    double *views = projection_grad(s, dts[di], buf, 0, b, t, h, d);
    double *copies = projection_grad(s, dts[di], buf, 1, b, t, h, d);
    assert_memory_equal(views, copies, (size_t)n * sizeof(double));
    free(views);
    free(copies);
  }
  free(buf);
}

/* With v the identity (D = S), the output is the dropped-out probabilities
 * themselves: the fused and the composed path, same seed, zero the same
 * elements (and only those) and agree on the rest. */
static void test_dropout_same_elements(void **state) {
  mixp_session *s = *state;
  mt_skip_unless_cpu(); /* the same elements as the composed path: on the CPU */
  SKIP_UNLESS_FUSED(s);
  const int64_t b = 2, h = 3, l = 70, n = 80;
  const int64_t qs[4] = {b, h, l, n}, vs[4] = {b, h, n, n};
  double *q = malloc((size_t)(b * h * l * n) * sizeof(double));
  double *k = malloc((size_t)(b * h * n * n) * sizeof(double));
  double *eye = calloc((size_t)(b * h * n * n), sizeof(double));
  mt_fill(q, b * h * l * n, -1, 1, 11);
  mt_fill(k, b * h * n * n, -1, 1, 12);
  for (int64_t m = 0; m < b * h; ++m)
    for (int64_t i = 0; i < n; ++i) eye[(m * n + i) * n + i] = 1.0;
  const geom g = {b, h, l, n, n};
  const double tol = fused_tolerance(MIXP_F32, &g);
  for (int causal = 0; causal <= 1; ++causal) {
    mixp_tensor *qt = mt_tensor(s, MIXP_F32, q, qs, 4), *kt = mt_tensor(s, MIXP_F32, k, vs, 4);
    mixp_tensor *vt = mt_tensor(s, MIXP_F32, eye, vs, 4);
    MT_OK(mixp_session_set_seed(s, 77));
    double *f = attend("fused", qt, kt, vt, causal, 0.25);
    double *after_fused = attend("fused", qt, kt, vt, causal, 0.25);
    MT_OK(mixp_session_set_seed(s, 77));
    double *c = attend("composed", qt, kt, vt, causal, 0.25);
    double *after_composed = attend("composed", qt, kt, vt, causal, 0.25);
    int64_t dropped = 0, kept = 0;
    for (int64_t i = 0; i < b * h * l * n; ++i) {
      assert_int_equal(f[i] == 0.0, c[i] == 0.0);
      if (f[i] == 0.0) ++dropped;
      else ++kept;
      /* Both within fused_tolerance of the exact f32 probabilities (the
       * composed path's passes accumulate no longer), scaled by 1/(1-p). */
      assert_true(fabs(f[i] - c[i]) <= 2.0 * tol / 0.75);
      /* Both consumed the same random numbers: the next draws agree too. */
      assert_int_equal(after_fused[i] == 0.0, after_composed[i] == 0.0);
    }
    assert_true(dropped > 0 && kept > 0);
    free(f);
    free(c);
    free(after_fused);
    free(after_composed);
    mixp_tensor_release(qt);
    mixp_tensor_release(kt);
    mixp_tensor_release(vt);
  }
  free(q);
  free(k);
  free(eye);
  use_path("auto");
}

typedef struct attn_ctx {
  mixp_session *s;
  int causal;
  double p;
} attn_ctx;

static mixp_status fused_fn(mixp_tensor **in, int n, void *ctx, mixp_tensor **out) {
  (void)n;
  attn_ctx *c = ctx;
  if (c->p > 0) MT_OK(mixp_session_set_seed(c->s, 4242));
  use_path("fused");
  return mixp_scaled_dot_product_attention(in[0], in[1], in[2], c->causal, c->p, 0.0, out);
}

static void test_fused_gradcheck(void **state) {
  mixp_session *s = *state;
  SKIP_UNLESS_FUSED(s);
  const int64_t qs[4] = {1, 2, 5, 4}, ks[4] = {1, 2, 6, 4};
  double q[40], k[48], v[48];
  mt_fill(q, 40, -1.5, 1.5, 21);
  mt_fill(k, 48, -1.5, 1.5, 22);
  mt_fill(v, 48, -1, 1, 23);
  for (int causal = 0; causal <= 1; ++causal)
    for (int dp = 0; dp <= 1; ++dp) {
      attn_ctx ctx = {s, causal, dp ? 0.3 : 0.0};
      mt_input in[3] = {{q, qs, 4, 1, MIXP_F64}, {k, ks, 4, 1, MIXP_F64}, {v, ks, 4, 1, MIXP_F64}};
      mt_gradcheck(s, fused_fn, &ctx, in, 3, 1e-7, 1e-6);
    }
  use_path("auto");
}

/* The gradients of q, k, v: fused against composed (F64 both: the same
 * sums in another order; f32 fused against F64 composed within the
 * forward's bound scaled by the backward's longer chains). */
static void grads_of(mixp_session *s, const char *path, const geom *g, mixp_dtype dt, int causal,
                     double p, double **gq, double **gk, double **gv) {
  mixp_tensor *q, *k, *v, *o = NULL, *w, *prod = NULL, *loss = NULL;
  make_qkv(s, g, dt, 300, &q, &k, &v);
  mixp_tensor *in[3] = {q, k, v};
  for (int i = 0; i < 3; ++i) MT_OK(mixp_tensor_set_requires_grad(in[i], 1));
  use_path(path);
  MT_OK(mixp_session_set_seed(s, 5));
  MT_OK(mixp_scaled_dot_product_attention(q, k, v, causal, p, 0.0, &o));
  const int64_t os[4] = {g->b, g->h, g->l, g->d};
  double *wv = malloc((size_t)numel4(os) * sizeof(double));
  mt_fill(wv, numel4(os), -1, 1, 301);
  w = mt_tensor(s, dt, wv, os, 4);
  MT_OK(mixp_mul(o, w, &prod));
  MT_OK(mixp_sum(prod, NULL, 0, 0, &loss));
  MT_OK(mixp_backward(loss, NULL));
  *gq = mt_grad_values(q);
  *gk = mt_grad_values(k);
  *gv = mt_grad_values(v);
  free(wv);
  mixp_tensor *objs[7] = {q, k, v, o, w, prod, loss};
  for (int i = 0; i < 7; ++i) mixp_tensor_release(objs[i]);
}

static void test_fused_gradients(void **state) {
  mixp_session *s = *state;
  SKIP_UNLESS_FUSED(s);
  const geom gs[3] = {{2, 2, 70, 70, 16}, {1, 2, 33, 130, 80}, {1, 1, 1, 1, 16}};
  for (int gi = 0; gi < 3; ++gi)
    for (int causal = 0; causal <= 1; ++causal)
      for (int dp = 0; dp <= 1; ++dp) {
        const geom *g = &gs[gi];
        const double p = dp ? 0.2 : 0.0;
        double *r[3], *f[3], *f32[3];
        grads_of(s, "composed", g, MIXP_F64, causal, p, &r[0], &r[1], &r[2]);
        grads_of(s, "fused", g, MIXP_F64, causal, p, &f[0], &f[1], &f[2]);
        grads_of(s, "fused", g, MIXP_F32, causal, p, &f32[0], &f32[1], &f32[2]);
        const int64_t n[3] = {g->b * g->h * g->l * g->d, g->b * g->h * g->s * g->d,
                              g->b * g->h * g->s * g->d};
        /* Each gradient sums L or S products of terms the forward bound
         * covers (times |dO| <= 1 and 1/(1-p)); dS adds delta's D-term sum. */
        const double len = (double)(g->l > g->s ? g->l : g->s) + (double)g->d;
        for (int i = 0; i < 3; ++i) {
          mt_assert_close(f[i], r[i], n[i], 4.0 * len * len * ldexp(1.0, -53), 0.0);
          mt_assert_close(f32[i], r[i], n[i], 4.0 * len * fused_tolerance(MIXP_F32, g) / (1 - p), 0.0);
          free(r[i]);
          free(f[i]);
          free(f32[i]);
        }
      }
  use_path("auto");
}

/* The CPU kernel's backward runs one task per head when there are heads
 * enough for the threads (4 per thread), else two passes over the tiles: 8
 * heads on 1 and on 3 threads take one way each, and give the same bits
 * (forward too). Three, as the other thread-count tests use: with 16,
 * LeakSanitizer reported 2.8 kB that libomp allocated and kept at exit. */
static void test_thread_count_bitwise(void **state) {
  mixp_session *s = *state;
  mt_skip_unless_cpu();
  SKIP_UNLESS_FUSED(s);
  const geom g = {2, 4, 100, 90, 24};
  double *grads[2][3];
  for (int i = 0; i < 2; ++i) {
    mixp_session *st = mt_session_threads(i == 0 ? 1 : 3);
    grads_of(st, "fused", &g, MIXP_F32, 1, 0.1, &grads[i][0], &grads[i][1], &grads[i][2]);
    mixp_session_destroy(st);
  }
  const int64_t n[3] = {g.b * g.h * g.l * g.d, g.b * g.h * g.s * g.d, g.b * g.h * g.s * g.d};
  for (int j = 0; j < 3; ++j) {
    assert_memory_equal(grads[0][j], grads[1][j], (size_t)n[j] * sizeof(double));
    free(grads[0][j]);
    free(grads[1][j]);
  }
  use_path("auto");
}

/* Cases the fused path does not run fall back (auto) or fail by name
 * (fused); bad arguments fail the same way on both paths. */
static void test_bad_input(void **state) {
  mixp_session *s = *state;
  const char *fn = "mixp_scaled_dot_product_attention";
  const geom big = {1, 1, 3, 3, 300};
  mixp_tensor *q, *k, *v, *o = MT_SENTINEL;
  make_qkv(s, &big, MIXP_F32, 1, &q, &k, &v);
  use_path("fused");
  MT_FAILS2(mixp_scaled_dot_product_attention(q, k, v, 0, 0.0, 0.0, &o), MIXP_ERR_UNSUPPORTED, fn,
            "MIXP_ATTENTION=fused");
  assert_ptr_equal(o, MT_SENTINEL);
  use_path("auto");
  MT_OK(mixp_session_op_stats_start(s));
  MT_OK(mixp_scaled_dot_product_attention(q, k, v, 0, 0.0, 0.0, &o));
  assert_non_null(strstr(mixp_session_op_stats_report(s), "0 fused, 1 composed"));
  mixp_tensor_release(o);
  use_path("sideways");
  MT_FAILS2(mixp_scaled_dot_product_attention(q, k, v, 0, 0.0, 0.0, &o), MIXP_ERR_INVALID_ARGUMENT, fn,
            "MIXP_ATTENTION");
  MT_OK(mixp_session_op_stats_stop(s));
  mixp_tensor_release(q);
  mixp_tensor_release(k);
  mixp_tensor_release(v);

  const geom g = {2, 2, 8, 8, 16}, other = {2, 2, 8, 8, 8};
  mixp_tensor *q2, *k2, *v2, *q64;
  make_qkv(s, &g, MIXP_F32, 2, &q, &k, &v);
  make_qkv(s, &other, MIXP_F32, 3, &q2, &k2, &v2);
  q64 = to_f64(q);
  const char *paths[2] = {"fused", "composed"};
  for (int i = 0; i < 2; ++i) {
    use_path(paths[i]);
    o = MT_SENTINEL;
    MT_FAILS(mixp_scaled_dot_product_attention(q, k2, v, 0, 0, 0, &o), MIXP_ERR_SHAPE, fn);
    MT_FAILS(mixp_scaled_dot_product_attention(q64, k, v, 0, 0, 0, &o), MIXP_ERR_DTYPE, fn);
    MT_FAILS(mixp_scaled_dot_product_attention(q, k, v, 0, 1.5, 0, &o), MIXP_ERR_INVALID_ARGUMENT, fn);
    MT_FAILS(mixp_scaled_dot_product_attention(q, k, v, 0, 0, INFINITY, &o), MIXP_ERR_INVALID_ARGUMENT, fn);
    MT_FAILS(mixp_scaled_dot_product_attention(NULL, k, v, 0, 0, 0, &o), MIXP_ERR_INVALID_ARGUMENT, fn);
    assert_ptr_equal(o, MT_SENTINEL);
  }
  /* Another session's tensor: a device mismatch, on every device. */
  mixp_session *s2 = mt_session();
  mixp_tensor *q_other, *k_other, *v_other;
  make_qkv(s2, &g, MIXP_F32, 2, &q_other, &k_other, &v_other);
  use_path("fused");
  MT_FAILS2(mixp_scaled_dot_product_attention(q_other, k, v, 0, 0, 0, &o), MIXP_ERR_DEVICE, fn, "sessions");
  mixp_tensor *objs[10] = {q, k, v, q2, k2, v2, q64, q_other, k_other, v_other};
  for (int i = 0; i < 10; ++i) mixp_tensor_release(objs[i]);
  mixp_session_destroy(s2);
  use_path("auto");
}

/* NaN and Inf reach the same outputs on both paths: a NaN query row, an
 * Inf key every query sees, a NaN value every query sees. */
static void test_nan_inf_propagate(void **state) {
  mixp_session *s = *state;
  SKIP_UNLESS_FUSED(s);
  const int64_t qs[4] = {1, 2, 70, 16};
  const int64_t n = 2 * 70 * 16;
  for (int which = 0; which < 3; ++which) {
    double *buf[3];
    for (int i = 0; i < 3; ++i) {
      buf[i] = malloc((size_t)n * sizeof(double));
      mt_fill(buf[i], n, -1, 1, 50 + (uint64_t)i);
    }
    if (which == 0) buf[0][5 * 16 + 3] = NAN;   /* query row 5 */
    if (which == 1) buf[1][0] = INFINITY;       /* key 0 of head 0 */
    if (which == 2) buf[2][70 * 16 + 2] = NAN;  /* value 0 of head 1 */
    for (int causal = 0; causal <= 1; ++causal) {
      mixp_tensor *t[3];
      for (int i = 0; i < 3; ++i) t[i] = mt_tensor(s, MIXP_F32, buf[i], qs, 4);
      double *f = attend("fused", t[0], t[1], t[2], causal, 0.0);
      double *c = attend("composed", t[0], t[1], t[2], causal, 0.0);
      int64_t nans = 0;
      for (int64_t i = 0; i < n; ++i) {
        assert_int_equal(isnan(f[i]) != 0, isnan(c[i]) != 0);
        nans += isnan(f[i]) != 0;
      }
      assert_true(nans > 0);
      free(f);
      free(c);
      for (int i = 0; i < 3; ++i) mixp_tensor_release(t[i]);
    }
    for (int i = 0; i < 3; ++i) free(buf[i]);
  }
  use_path("auto");
}

/* The peak of a T = 2048 forward and backward: the fused path saves no
 * [B, H, T, T] tensor, so its peak is at least that term below the
 * composed path's. */
static uint64_t step_peak(mixp_session *s, const char *path, const geom *g) {
  mixp_tensor *q, *k, *v, *o = NULL, *loss = NULL;
  make_qkv(s, g, MIXP_F32, 9, &q, &k, &v);
  mixp_tensor *in[3] = {q, k, v};
  for (int i = 0; i < 3; ++i) MT_OK(mixp_tensor_set_requires_grad(in[i], 1));
  MT_OK(mixp_memory_stats_reset_peak(s));
  use_path(path);
  MT_OK(mixp_scaled_dot_product_attention(q, k, v, 1, 0.0, 0.0, &o));
  MT_OK(mixp_sum(o, NULL, 0, 0, &loss));
  MT_OK(mixp_backward(loss, NULL));
  mixp_memory_stats st;
  memset(&st, 0, sizeof st);
  st.struct_size = sizeof st;
  MT_OK(mixp_memory_stats_get(s, &st));
  mixp_tensor *objs[5] = {q, k, v, o, loss};
  for (int i = 0; i < 5; ++i) mixp_tensor_release(objs[i]);
  return st.peak_bytes;
}

static void test_memory(void **state) {
  mixp_session *s = *state;
  SKIP_UNLESS_FUSED(s);
  const geom g = {1, 2, 2048, 2048, 16};
  const uint64_t fused = step_peak(s, "fused", &g), composed = step_peak(s, "composed", &g);
  const uint64_t tt = (uint64_t)(g.b * g.h * g.l * g.s) * sizeof(float);
  print_message("peak bytes: fused %llu, composed %llu (B*H*T*T*4 = %llu)\n", (unsigned long long)fused,
                (unsigned long long)composed, (unsigned long long)tt);
  assert_true(fused + tt <= composed);
  use_path("auto");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_fused_matches_reference), cmocka_unit_test(test_strided_views),
      cmocka_unit_test(test_dropout_same_elements),   cmocka_unit_test(test_fused_gradcheck),
      cmocka_unit_test(test_fused_gradients),         cmocka_unit_test(test_bad_input),
      cmocka_unit_test(test_nan_inf_propagate),       cmocka_unit_test(test_memory),
      cmocka_unit_test(test_thread_count_bitwise),   cmocka_unit_test(test_heads_of_one_projection),
  };
  return cmocka_run_group_tests(tests, mt_setup_session, mt_teardown_session);
}
