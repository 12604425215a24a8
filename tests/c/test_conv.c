/* conv2d: forward values against a naive double loop written here (every
 * float dtype, both layouts, stride/padding/dilation/groups/depthwise/1x1/
 * non-square kernels), F64 gradient checks of every geometry, the oneDNN
 * backward passes (F32/BF16/F16) against the F64 gradients, NCHW/NHWC
 * equivalence, and misuse of every public function. */
#include "test_util.h"

/* ---- geometry and reference ------------------------------------------------------ */

typedef struct conv_case {
  int64_t n, cin, h, w, cout, kh, kw, sh, sw, ph, pw, dh, dw, groups;
} conv_case;

/* Small geometries for the gradient checks (every feature at least once). */
static const conv_case SMALL[] = {
    {2, 3, 5, 5, 2, 3, 3, 1, 1, 0, 0, 1, 1, 1},  /* plain */
    {1, 2, 6, 5, 3, 3, 3, 2, 2, 1, 1, 1, 1, 1},  /* stride 2, padding 1 */
    {1, 2, 7, 6, 2, 3, 3, 1, 1, 2, 1, 2, 2, 1},  /* dilation 2 */
    {2, 4, 4, 5, 4, 3, 2, 1, 1, 1, 0, 1, 1, 2},  /* groups 2 */
    {1, 3, 5, 6, 3, 3, 3, 2, 1, 1, 1, 1, 1, 3},  /* depthwise */
    {1, 2, 4, 4, 4, 3, 3, 1, 1, 1, 1, 1, 1, 2},  /* depthwise with multiplier 2 */
    {2, 3, 3, 4, 2, 1, 1, 1, 1, 0, 0, 1, 1, 1},  /* 1x1 */
    {1, 2, 6, 7, 2, 2, 4, 2, 1, 1, 2, 1, 2, 1},  /* non-square kernel, stride, pad, dilation */
};
#define N_SMALL ((int)(sizeof SMALL / sizeof SMALL[0]))

/* Larger ones, so that oneDNN's blocked/AMX kernels (not its reference
 * code) run. */
static const conv_case LARGE[] = {
    {2, 32, 10, 9, 48, 3, 3, 1, 1, 1, 1, 1, 1, 1},
    {2, 16, 11, 11, 32, 3, 3, 2, 2, 1, 1, 1, 1, 1},
    {2, 32, 8, 8, 32, 3, 3, 1, 1, 1, 1, 1, 1, 32}, /* depthwise */
    {2, 3, 16, 16, 16, 7, 7, 2, 2, 3, 3, 1, 1, 1}, /* a stem */
    {2, 32, 6, 7, 64, 1, 1, 1, 1, 0, 0, 1, 1, 1},
    {1, 16, 9, 9, 16, 3, 3, 1, 1, 2, 2, 2, 2, 4},
    /* 1x1 in and out: one kernel cell meets the pixel (a matrix product). */
    {4, 48, 1, 1, 40, 3, 3, 1, 1, 1, 1, 1, 1, 1}, /* the centre of 3x3 */
    {3, 24, 1, 1, 32, 2, 5, 2, 2, 1, 4, 1, 2, 1}, /* cell (1, 2): off-centre rows, dilated columns */
    /* Small output planes (bf16 weight gradients as im2col products where bf16 is fast): */
    {4, 32, 4, 4, 24, 3, 3, 1, 1, 1, 1, 1, 1, 1}, /* 4x4, padded */
    {3, 16, 5, 4, 20, 3, 2, 2, 2, 1, 0, 1, 2, 1}, /* 3x1: stride, padded rows, dilated columns */
};
#define N_LARGE ((int)(sizeof LARGE / sizeof LARGE[0]))

static int64_t out_h(const conv_case *c) { return (c->h + 2 * c->ph - (c->kh - 1) * c->dh - 1) / c->sh + 1; }
static int64_t out_w(const conv_case *c) { return (c->w + 2 * c->pw - (c->kw - 1) * c->dw - 1) / c->sw + 1; }

static void x_shape(const conv_case *c, int nhwc, int64_t *s) {
  s[0] = c->n;
  if (nhwc) s[1] = c->h, s[2] = c->w, s[3] = c->cin;
  else s[1] = c->cin, s[2] = c->h, s[3] = c->w;
}
static void w_shape(const conv_case *c, int64_t *s) {
  s[0] = c->cout, s[1] = c->cin / c->groups, s[2] = c->kh, s[3] = c->kw;
}
static int64_t x_numel(const conv_case *c) { return c->n * c->cin * c->h * c->w; }
static int64_t w_numel(const conv_case *c) { return c->cout * (c->cin / c->groups) * c->kh * c->kw; }
static int64_t y_numel(const conv_case *c) { return c->n * c->cout * out_h(c) * out_w(c); }

static int64_t at(int nhwc, int64_t C, int64_t H, int64_t W, int64_t n, int64_t c, int64_t h, int64_t w) {
  return nhwc ? ((n * H + h) * W + w) * C + c : ((n * C + c) * H + h) * W + w;
}

/* y = conv(x, w) + b in double, straight from the definition; absy gets
 * the sum of |terms| (for tolerances). */
static void conv_ref(const conv_case *c, int nhwc, const double *x, const double *w, const double *b,
                     double *y, double *absy) {
  const int64_t OH = out_h(c), OW = out_w(c), cig = c->cin / c->groups, cog = c->cout / c->groups;
  for (int64_t n = 0; n < c->n; ++n)
    for (int64_t oc = 0; oc < c->cout; ++oc)
      for (int64_t oh = 0; oh < OH; ++oh)
        for (int64_t ow = 0; ow < OW; ++ow) {
          double acc = b ? b[oc] : 0.0, aacc = b ? fabs(b[oc]) : 0.0;
          for (int64_t ic = 0; ic < cig; ++ic)
            for (int64_t i = 0; i < c->kh; ++i)
              for (int64_t j = 0; j < c->kw; ++j) {
                int64_t ih = oh * c->sh - c->ph + i * c->dh, iw = ow * c->sw - c->pw + j * c->dw;
                if (ih < 0 || ih >= c->h || iw < 0 || iw >= c->w) continue;
                double t = x[at(nhwc, c->cin, c->h, c->w, n, oc / cog * cig + ic, ih, iw)] *
                           w[((oc * cig + ic) * c->kh + i) * c->kw + j];
                acc += t;
                aacc += fabs(t);
              }
          int64_t o = at(nhwc, c->cout, OH, OW, n, oc, oh, ow);
          y[o] = acc;
          if (absy) absy[o] = aacc;
        }
}

static mixp_conv2d_options opts_of(const conv_case *c, int nhwc) {
  mixp_conv2d_options o;
  mixp_conv2d_options_init(&o);
  o.stride_h = c->sh, o.stride_w = c->sw, o.pad_h = c->ph, o.pad_w = c->pw;
  o.dilation_h = c->dh, o.dilation_w = c->dw, o.groups = c->groups;
  o.layout = nhwc ? MIXP_NHWC : MIXP_NCHW;
  return o;
}

static mixp_status conv_fn(mixp_tensor **in, int n, void *ctx, mixp_tensor **out) {
  return mixp_conv2d(in[0], in[1], n > 2 ? in[2] : NULL, (const mixp_conv2d_options *)ctx, out);
}

/* ---- forward values ---------------------------------------------------------------- */

/* Runs case c in dtype dt and checks the values against the reference
 * computed from the inputs as rounded to dt. */
static void check_forward(mixp_session *s, const conv_case *c, int nhwc, int bias, mixp_dtype dt,
                          double rtol) {
  int64_t xs[4], ws[4], bs[1] = {c->cout};
  x_shape(c, nhwc, xs);
  w_shape(c, ws);
  const int64_t nx = x_numel(c), nw = w_numel(c), ny = y_numel(c);
  double *xv = malloc((size_t)nx * sizeof(double)), *wv = malloc((size_t)nw * sizeof(double));
  double bv[64];
  mt_fill(xv, nx, -1, 1, 1);
  mt_fill(wv, nw, -1, 1, 2);
  mt_fill(bv, c->cout, -1, 1, 3);
  mixp_tensor *x = mt_tensor(s, dt, xv, xs, 4), *w = mt_tensor(s, dt, wv, ws, 4);
  mixp_tensor *b = bias ? mt_tensor(s, dt, bv, bs, 1) : NULL, *y = NULL;
  mixp_conv2d_options o = opts_of(c, nhwc);
  MT_OK(mixp_conv2d(x, w, b, &o, &y));
  assert_int_equal(mixp_tensor_dtype(y), dt);
  int64_t shape[4];
  int nd = 0;
  MT_OK(mixp_tensor_shape(y, shape, 4, &nd));
  assert_int_equal(nd, 4);
  assert_int_equal(shape[0], c->n);
  assert_int_equal(shape[nhwc ? 3 : 1], c->cout);
  assert_int_equal(shape[nhwc ? 1 : 2], out_h(c));
  assert_int_equal(shape[nhwc ? 2 : 3], out_w(c));
  double *xr = mt_values(x), *wr = mt_values(w), *br = b ? mt_values(b) : NULL;
  double *want = malloc((size_t)ny * sizeof(double)), *absw = malloc((size_t)ny * sizeof(double));
  conv_ref(c, nhwc, xr, wr, br, want, absw);
  double *got = mt_values(y);
  for (int64_t i = 0; i < ny; ++i) {
    double tol = rtol * (absw[i] + fabs(want[i])) + 1e-12;
    if (!(fabs(got[i] - want[i]) <= tol)) {
      print_error("%s %s case [%lld,%lld,%lld,%lld] k%lldx%lld g%lld: y[%lld] = %.9g, want %.9g\n",
                  mixp_dtype_name(dt), nhwc ? "NHWC" : "NCHW", (long long)c->n, (long long)c->cin,
                  (long long)c->h, (long long)c->w, (long long)c->kh, (long long)c->kw,
                  (long long)c->groups, (long long)i, got[i], want[i]);
      fail();
    }
  }
  free(xv), free(wv), free(xr), free(wr), free(br), free(want), free(absw), free(got);
  mixp_tensor_release(x), mixp_tensor_release(w), mixp_tensor_release(b), mixp_tensor_release(y);
}

/* Tolerances relative to the sum of |terms|: rounding of the result once
 * (half types) plus fp32 accumulation. */
static double fwd_rtol(mixp_dtype dt) {
  switch (dt) {
    case MIXP_F64: return 1e-13;
    case MIXP_F32: return 1e-5;
    case MIXP_F16: return 1.5e-3;
    default: return 1e-2;
  }
}

static void test_forward_all_dtypes(void **state) {
  mixp_session *s = *state;
  const mixp_dtype dts[4] = {MIXP_F64, MIXP_F32, MIXP_F16, MIXP_BF16};
  for (int d = 0; d < 4; ++d)
    for (int nhwc = 0; nhwc < 2; ++nhwc) {
      for (int i = 0; i < N_SMALL; ++i) check_forward(s, &SMALL[i], nhwc, (i + nhwc) % 2, dts[d], fwd_rtol(dts[d]));
      if (dts[d] == MIXP_F64) continue; /* plain loops: the small cases cover them */
      for (int i = 0; i < N_LARGE; ++i) check_forward(s, &LARGE[i], nhwc, (i + nhwc + 1) % 2, dts[d], fwd_rtol(dts[d]));
    }
}

/* A hand-computed case: all-ones 3x3 input, 2x2 ones kernel, pad 1, so
 * each output counts the input cells under the window (plus bias 0.5). */
static void test_forward_known_values(void **state) {
  mixp_session *s = *state;
  double xv[9], wv[4] = {1, 1, 1, 1}, bv[1] = {0.5};
  for (int i = 0; i < 9; ++i) xv[i] = 1.0;
  int64_t xs[4] = {1, 1, 3, 3}, ws[4] = {1, 1, 2, 2}, bs[1] = {1};
  mixp_tensor *x = mt_tensor(s, MIXP_F32, xv, xs, 4), *w = mt_tensor(s, MIXP_F32, wv, ws, 4);
  mixp_tensor *b = mt_tensor(s, MIXP_F32, bv, bs, 1), *y = NULL;
  mixp_conv2d_options o;
  mixp_conv2d_options_init(&o);
  o.pad_h = o.pad_w = 1;
  MT_OK(mixp_conv2d(x, w, b, &o, &y));
  assert_int_equal(mixp_tensor_numel(y), 16);
  const double want[16] = {1.5, 2.5, 2.5, 1.5, 2.5, 4.5, 4.5, 2.5, 2.5, 4.5, 4.5, 2.5, 1.5, 2.5, 2.5, 1.5};
  double *got = mt_values(y);
  mt_assert_close(got, want, 16, 0, 0);
  free(got);
  mixp_tensor_release(y);
  /* NULL options are the defaults (stride 1, no padding). */
  MT_OK(mixp_conv2d(x, w, NULL, NULL, &y));
  assert_int_equal(mixp_tensor_numel(y), 4);
  got = mt_values(y);
  const double want2[4] = {4, 4, 4, 4};
  mt_assert_close(got, want2, 4, 0, 0);
  free(got);
  mixp_tensor_release(x), mixp_tensor_release(w), mixp_tensor_release(b), mixp_tensor_release(y);
}

/* ---- gradients ------------------------------------------------------------------- */

static void test_gradcheck_f64(void **state) {
  mixp_session *s = *state;
  for (int i = 0; i < N_SMALL; ++i)
    for (int nhwc = 0; nhwc < 2; ++nhwc) {
      const conv_case *c = &SMALL[i];
      int64_t xs[4], ws[4], bs[1] = {c->cout};
      x_shape(c, nhwc, xs);
      w_shape(c, ws);
      double xv[512], wv[512], bv[16];
      mt_fill(xv, x_numel(c), -1, 1, (uint64_t)(10 + i));
      mt_fill(wv, w_numel(c), -1, 1, (uint64_t)(20 + i));
      mt_fill(bv, c->cout, -1, 1, (uint64_t)(30 + i));
      mt_input in[3] = {{xv, xs, 4, 1, MIXP_F64}, {wv, ws, 4, 1, MIXP_F64}, {bv, bs, 1, 1, MIXP_F64}};
      mixp_conv2d_options o = opts_of(c, nhwc);
      mt_gradcheck(s, conv_fn, &o, in, (i + nhwc) % 2 ? 3 : 2, 1e-7, 1e-6);
    }
}

/* Gradients of sum(y * r) for x, w, b in dtype dt (host copies, caller frees). */
static void grads_of(mixp_session *s, const conv_case *c, int nhwc, mixp_dtype dt, double **gx, double **gw,
                     double **gb) {
  int64_t xs[4], ws[4], bs[1] = {c->cout}, ys[4];
  x_shape(c, nhwc, xs);
  w_shape(c, ws);
  const int64_t nx = x_numel(c), nw = w_numel(c), ny = y_numel(c);
  double *xv = malloc((size_t)nx * sizeof(double)), *wv = malloc((size_t)nw * sizeof(double));
  double *rv = malloc((size_t)ny * sizeof(double)), bv[64];
  mt_fill(xv, nx, -1, 1, 4);
  mt_fill(wv, nw, -1, 1, 5);
  mt_fill(bv, c->cout, -1, 1, 6);
  mt_fill(rv, ny, -1, 1, 7);
  mixp_tensor *x = mt_tensor(s, dt, xv, xs, 4), *w = mt_tensor(s, dt, wv, ws, 4), *b = mt_tensor(s, dt, bv, bs, 1);
  MT_OK(mixp_tensor_set_requires_grad(x, 1));
  MT_OK(mixp_tensor_set_requires_grad(w, 1));
  MT_OK(mixp_tensor_set_requires_grad(b, 1));
  mixp_conv2d_options o = opts_of(c, nhwc);
  mixp_tensor *y = NULL, *prod = NULL, *loss = NULL, *g = NULL;
  MT_OK(mixp_conv2d(x, w, b, &o, &y));
  int nd;
  MT_OK(mixp_tensor_shape(y, ys, 4, &nd));
  mixp_tensor *r = mt_tensor(s, dt, rv, ys, 4);
  MT_OK(mixp_mul(y, r, &prod));
  MT_OK(mixp_sum(prod, NULL, 0, 0, &loss));
  MT_OK(mixp_backward(loss, NULL));
  MT_OK(mixp_tensor_grad(x, &g));
  *gx = mt_values(g);
  mixp_tensor_release(g);
  MT_OK(mixp_tensor_grad(w, &g));
  *gw = mt_values(g);
  mixp_tensor_release(g);
  MT_OK(mixp_tensor_grad(b, &g));
  *gb = mt_values(g);
  mixp_tensor_release(g);
  free(xv), free(wv), free(rv);
  mixp_tensor *all[7] = {x, w, b, y, r, prod, loss};
  for (int i = 0; i < 7; ++i) mixp_tensor_release(all[i]);
}

/* |a - b| <= tol * max|b| (gradients are sums of many terms of both signs). */
static void assert_close_scaled(const double *a, const double *b, int64_t n, double tol, const char *what) {
  double m = 1e-30;
  for (int64_t i = 0; i < n; ++i) m = fmax(m, fabs(b[i]));
  for (int64_t i = 0; i < n; ++i)
    if (!(fabs(a[i] - b[i]) <= tol * m)) {
      print_error("%s[%lld]: got %.9g want %.9g (scale %.3g)\n", what, (long long)i, a[i], b[i], m);
      fail();
    }
}

/* The oneDNN backward passes (F32, BF16) and the widened F16 path against
 * the gradient-checked F64 loops. */
static void test_backward_matches_f64(void **state) {
  mixp_session *s = *state;
  const mixp_dtype dts[3] = {MIXP_F32, MIXP_BF16, MIXP_F16};
  const double tols[3] = {1e-5, 3e-2, 4e-3};
  for (int set = 0; set < 2; ++set) {
    const conv_case *cases = set ? LARGE : SMALL;
    const int nc = set ? N_LARGE : N_SMALL;
    for (int i = 0; i < nc; ++i)
      for (int nhwc = 0; nhwc < 2; ++nhwc) {
        const conv_case *c = &cases[i];
        double *rx, *rw, *rb;
        grads_of(s, c, nhwc, MIXP_F64, &rx, &rw, &rb);
        for (int d = 0; d < 3; ++d) {
          if (set == 0 && dts[d] != MIXP_F32) continue;
          double *gx, *gw, *gb;
          grads_of(s, c, nhwc, dts[d], &gx, &gw, &gb);
          assert_close_scaled(gx, rx, x_numel(c), tols[d], "grad x");
          assert_close_scaled(gw, rw, w_numel(c), tols[d], "grad w");
          assert_close_scaled(gb, rb, c->cout, tols[d], "grad b");
          free(gx), free(gw), free(gb);
        }
        free(rx), free(rw), free(rb);
      }
  }
}

/* ---- layouts ------------------------------------------------------------------- */

/* conv on NHWC data equals the NCHW conv with both permuted. */
static void test_nchw_nhwc_equivalence(void **state) {
  mixp_session *s = *state;
  const conv_case *c = &LARGE[1];
  int64_t xs[4], ws[4];
  x_shape(c, 0, xs);
  w_shape(c, ws);
  double *xv = malloc((size_t)x_numel(c) * sizeof(double)), *wv = malloc((size_t)w_numel(c) * sizeof(double));
  mt_fill(xv, x_numel(c), -1, 1, 8);
  mt_fill(wv, w_numel(c), -1, 1, 9);
  mixp_tensor *x = mt_tensor(s, MIXP_F32, xv, xs, 4), *w = mt_tensor(s, MIXP_F32, wv, ws, 4);
  const int to_nhwc[4] = {0, 2, 3, 1}, to_nchw[4] = {0, 3, 1, 2};
  mixp_tensor *xp = NULL, *xn = NULL, *y1 = NULL, *y2 = NULL, *y2p = NULL;
  MT_OK(mixp_permute(x, to_nhwc, 4, &xp));
  MT_OK(mixp_contiguous(xp, &xn));
  mixp_conv2d_options o = opts_of(c, 0);
  MT_OK(mixp_conv2d(x, w, NULL, &o, &y1));
  o.layout = MIXP_NHWC;
  MT_OK(mixp_conv2d(xn, w, NULL, &o, &y2));
  /* A non-contiguous NHWC view works too and gives the same values. */
  mixp_tensor *y3 = NULL;
  MT_OK(mixp_conv2d(xp, w, NULL, &o, &y3));
  MT_OK(mixp_permute(y2, to_nchw, 4, &y2p));
  double *a = mt_values(y1), *b = mt_values(y2p), *d2 = mt_values(y2), *d3 = mt_values(y3);
  const int64_t n = mixp_tensor_numel(y1);
  for (int64_t i = 0; i < n; ++i) assert_true(fabs(a[i] - b[i]) <= 1e-5 * (1 + fabs(a[i])));
  mt_assert_close(d3, d2, n, 0, 0);
  free(xv), free(wv), free(a), free(b), free(d2), free(d3);
  mixp_tensor *all[8] = {x, w, xp, xn, y1, y2, y2p, y3};
  for (int i = 0; i < 8; ++i) mixp_tensor_release(all[i]);
}

/* ---- misuse ------------------------------------------------------------------- */

static void test_options_init(void **state) {
  (void)state;
  mixp_conv2d_options_init(NULL);
  mixp_conv2d_options o;
  memset(&o, 0x5a, sizeof o);
  mixp_conv2d_options_init(&o);
  assert_int_equal(o.struct_size, sizeof o);
  assert_int_equal(o.stride_h, 1);
  assert_int_equal(o.stride_w, 1);
  assert_int_equal(o.pad_h, 0);
  assert_int_equal(o.pad_w, 0);
  assert_int_equal(o.dilation_h, 1);
  assert_int_equal(o.dilation_w, 1);
  assert_int_equal(o.groups, 1);
  assert_int_equal(o.layout, MIXP_NCHW);
}

static mixp_tensor *filled(mixp_session *s, mixp_dtype dt, const int64_t *shape, int nd) {
  int64_t n = 1;
  for (int i = 0; i < nd; ++i) n *= shape[i];
  double *v = malloc((size_t)n * sizeof(double));
  mt_fill(v, n, -1, 1, 11);
  mixp_tensor *t = mt_tensor(s, dt, v, shape, nd);
  free(v);
  return t;
}

#define CONV_FAILS(x, w, b, o, status, needle)            \
  do {                                                    \
    mixp_tensor *out_ = MT_SENTINEL;                         \
    MT_FAILS(mixp_conv2d(x, w, b, o, &out_), status, needle); \
    assert_ptr_equal(out_, MT_SENTINEL);                     \
  } while (0)

static void test_misuse(void **state) {
  mixp_session *s = *state;
  const int64_t xs[4] = {1, 4, 5, 5}, ws[4] = {6, 2, 3, 3}, bs[1] = {6}, x3s[3] = {4, 5, 5};
  mixp_tensor *x = filled(s, MIXP_F32, xs, 4), *w = filled(s, MIXP_F32, ws, 4), *b = filled(s, MIXP_F32, bs, 1);
  mixp_tensor *out = NULL;
  mixp_conv2d_options o;
  mixp_conv2d_options_init(&o);
  o.groups = 2;
  MT_OK(mixp_conv2d(x, w, b, &o, &out)); /* the valid call the rest perturbs */
  mixp_tensor_release(out);

  MT_FAILS(mixp_conv2d(NULL, w, b, &o, &out), MIXP_ERR_INVALID_ARGUMENT, "x");
  MT_FAILS(mixp_conv2d(x, NULL, b, &o, &out), MIXP_ERR_INVALID_ARGUMENT, "weight");
  MT_FAILS(mixp_conv2d(x, w, b, &o, NULL), MIXP_ERR_INVALID_ARGUMENT, "out is NULL");

  /* shapes: each message names the argument and both shapes where two are involved */
  mixp_tensor *x3 = filled(s, MIXP_F32, x3s, 3);
  CONV_FAILS(x3, w, b, &o, MIXP_ERR_SHAPE, "x must be 4-D");
  CONV_FAILS(x, x3, b, &o, MIXP_ERR_SHAPE, "weight must be 4-D");
  o.groups = 1;
  CONV_FAILS(x, w, b, &o, MIXP_ERR_SHAPE, "weight is [6,2,3,3]");
  CONV_FAILS(x, w, b, &o, MIXP_ERR_SHAPE, "x is [1,4,5,5]");
  o.groups = 3;
  CONV_FAILS(x, w, b, &o, MIXP_ERR_SHAPE, "not divisible by groups");
  o.groups = 2;
  CONV_FAILS(x, w, x, &o, MIXP_ERR_SHAPE, "bias must be [6]");
  o.layout = MIXP_NHWC; /* C_in is now 5: 5 channels, 2 groups */
  CONV_FAILS(x, w, b, &o, MIXP_ERR_SHAPE, "not divisible by groups");
  o.layout = MIXP_NCHW;
  const int64_t big[4] = {6, 2, 6, 3};
  mixp_tensor *wb = filled(s, MIXP_F32, big, 4);
  CONV_FAILS(x, wb, b, &o, MIXP_ERR_SHAPE, "larger than the padded input");
  o.dilation_w = 3; /* effective width 7 > 5 */
  CONV_FAILS(x, w, b, &o, MIXP_ERR_SHAPE, "larger than the padded input");
  o.pad_w = 1; /* 7 <= 5 + 2: fits */
  MT_OK(mixp_conv2d(x, w, b, &o, &out));
  mixp_tensor_release(out);
  mixp_conv2d_options_init(&o);
  o.groups = 2;

  /* options fields */
  o.stride_h = 0;
  CONV_FAILS(x, w, b, &o, MIXP_ERR_INVALID_ARGUMENT, "stride_h");
  o.stride_h = 1, o.stride_w = -2;
  CONV_FAILS(x, w, b, &o, MIXP_ERR_INVALID_ARGUMENT, "stride_w");
  o.stride_w = 1, o.dilation_h = 0;
  CONV_FAILS(x, w, b, &o, MIXP_ERR_INVALID_ARGUMENT, "dilation_h");
  o.dilation_h = 1, o.dilation_w = -1;
  CONV_FAILS(x, w, b, &o, MIXP_ERR_INVALID_ARGUMENT, "dilation_w");
  o.dilation_w = 1, o.groups = 0;
  CONV_FAILS(x, w, b, &o, MIXP_ERR_INVALID_ARGUMENT, "groups");
  o.groups = 2, o.pad_h = -1;
  CONV_FAILS(x, w, b, &o, MIXP_ERR_INVALID_ARGUMENT, "pad_h");
  o.pad_h = 0, o.layout = (mixp_layout)7;
  CONV_FAILS(x, w, b, &o, MIXP_ERR_INVALID_ARGUMENT, "layout");
  o.layout = MIXP_NCHW, o.struct_size = 8;
  CONV_FAILS(x, w, b, &o, MIXP_ERR_INVALID_ARGUMENT, "struct_size");
  o.struct_size = sizeof o;

  /* dtypes */
  mixp_tensor *w64 = filled(s, MIXP_F64, ws, 4), *b16 = filled(s, MIXP_F16, bs, 1), *xi = NULL;
  CONV_FAILS(x, w64, b, &o, MIXP_ERR_DTYPE, "dtypes differ");
  CONV_FAILS(x, w, b16, &o, MIXP_ERR_DTYPE, "bias is f16");
  MT_OK(mixp_cast(x, MIXP_I64, &xi));
  CONV_FAILS(xi, w, b, &o, MIXP_ERR_DTYPE, "x must be a float tensor");

  /* sessions */
  mixp_session *s2 = mt_session();
  mixp_tensor *w2 = filled(s2, MIXP_F32, ws, 4);
  CONV_FAILS(x, w2, b, &o, MIXP_ERR_DEVICE, "different sessions");
  mixp_tensor_release(w2);
  mixp_session_destroy(s2);

  mixp_tensor *all[8] = {x, w, b, x3, wb, w64, b16, xi};
  for (int i = 0; i < 8; ++i) mixp_tensor_release(all[i]);
}

/* Under autocast conv2d runs in the low dtype and its gradients come back
 * in the parameters' dtype. */
static void test_autocast_lower(void **state) {
  mixp_session *s = *state;
  const conv_case *c = &LARGE[0];
  int64_t xs[4], ws[4];
  x_shape(c, 1, xs);
  w_shape(c, ws);
  mixp_tensor *x = filled(s, MIXP_F32, xs, 4), *w = filled(s, MIXP_F32, ws, 4), *y = NULL, *l = NULL, *g = NULL;
  MT_OK(mixp_tensor_set_requires_grad(w, 1));
  mixp_autocast_options ao;
  mixp_autocast_options_init(&ao);
  MT_OK(mixp_autocast_push(s, &ao));
  mixp_conv2d_options o = opts_of(c, 1);
  MT_OK(mixp_conv2d(x, w, NULL, &o, &y));
  MT_OK(mixp_autocast_pop(s));
  assert_int_equal(mixp_tensor_dtype(y), MIXP_BF16);
  MT_OK(mixp_sum(y, NULL, 0, 0, &l));
  MT_OK(mixp_backward(l, NULL));
  MT_OK(mixp_tensor_grad(w, &g));
  assert_int_equal(mixp_tensor_dtype(g), MIXP_F32);
  mixp_tensor *all[5] = {x, w, y, l, g};
  for (int i = 0; i < 5; ++i) mixp_tensor_release(all[i]);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_options_init),
      cmocka_unit_test_setup_teardown(test_forward_known_values, mt_setup_session, mt_teardown_session),
      cmocka_unit_test_setup_teardown(test_forward_all_dtypes, mt_setup_session, mt_teardown_session),
      cmocka_unit_test_setup_teardown(test_gradcheck_f64, mt_setup_session, mt_teardown_session),
      cmocka_unit_test_setup_teardown(test_backward_matches_f64, mt_setup_session, mt_teardown_session),
      cmocka_unit_test_setup_teardown(test_nchw_nhwc_equivalence, mt_setup_session, mt_teardown_session),
      cmocka_unit_test_setup_teardown(test_misuse, mt_setup_session, mt_teardown_session),
      cmocka_unit_test_setup_teardown(test_autocast_lower, mt_setup_session, mt_teardown_session),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
