/* max_pool2d, avg_pool2d and adaptive_avg_pool2d: forward values against
 * naive double loops written here (every float dtype, both layouts,
 * overlapping windows, padding, count_include_pad), F64 gradient checks,
 * first-maximum gradient routing, NCHW/NHWC equivalence, and misuse. */
#include <math.h>

#include "test_util.h"

/* ---- reference ------------------------------------------------------------------ */

typedef enum { MAXP, AVGP, ADAPT } kind;

typedef struct pool_case {
  kind k;
  int64_t n, c, h, w;
  int64_t kh, kw, sh, sw, ph, pw; /* MAXP/AVGP; sh/sw 0 = kernel */
  int include_pad;                /* AVGP */
  int64_t oh, ow;                 /* ADAPT */
} pool_case;

static const pool_case CASES[] = {
    {MAXP, 2, 3, 4, 6, 2, 2, 0, 0, 0, 0, 1, 0, 0},  /* default 2x2 */
    {MAXP, 1, 2, 7, 6, 3, 3, 2, 2, 1, 1, 1, 0, 0},  /* overlapping, padded (ResNet stem) */
    {MAXP, 2, 2, 5, 7, 3, 2, 1, 2, 1, 0, 1, 0, 0},  /* non-square, stride 1 rows */
    /* Tiling windows two columns wide (the staged vector path): */
    {MAXP, 1, 2, 5, 36, 2, 2, 0, 0, 0, 0, 1, 0, 0}, /* rows of 18 outputs (past one vector), a row left over */
    {MAXP, 2, 2, 7, 9, 3, 2, 0, 0, 0, 0, 1, 0, 0},  /* 3-row windows, a row and a column left over */
    {MAXP, 1, 2, 6, 8, 2, 2, 3, 3, 0, 0, 1, 0, 0},  /* gaps between windows (backward without a buffer) */
    {AVGP, 2, 3, 4, 6, 2, 2, 0, 0, 0, 0, 1, 0, 0},  /* default */
    {AVGP, 1, 2, 7, 6, 3, 3, 2, 2, 1, 1, 1, 0, 0},  /* padded, zeros counted */
    {AVGP, 1, 2, 7, 6, 3, 3, 2, 2, 1, 1, 0, 0, 0},  /* padded, zeros not counted */
    {AVGP, 2, 2, 5, 5, 3, 2, 1, 2, 1, 1, 0, 0, 0},  /* overlapping rows */
    {ADAPT, 2, 3, 7, 7, 0, 0, 0, 0, 0, 0, 1, 1, 1}, /* global */
    {ADAPT, 1, 2, 7, 7, 0, 0, 0, 0, 0, 0, 1, 3, 3}, /* 3x3 from 7x7 (overlapping) */
    {ADAPT, 1, 2, 5, 6, 0, 0, 0, 0, 0, 0, 1, 3, 4}, /* uneven in both dims */
    {ADAPT, 1, 2, 3, 4, 0, 0, 0, 0, 0, 0, 1, 5, 6}, /* upsampling */
};
#define N_CASES ((int)(sizeof CASES / sizeof CASES[0]))

static int64_t sh_of(const pool_case *p) { return p->sh ? p->sh : p->kh; }
static int64_t sw_of(const pool_case *p) { return p->sw ? p->sw : p->kw; }
static int64_t oh_of(const pool_case *p) { return p->k == ADAPT ? p->oh : (p->h + 2 * p->ph - p->kh) / sh_of(p) + 1; }
static int64_t ow_of(const pool_case *p) { return p->k == ADAPT ? p->ow : (p->w + 2 * p->pw - p->kw) / sw_of(p) + 1; }

static int64_t at(int nhwc, int64_t C, int64_t H, int64_t W, int64_t n, int64_t c, int64_t h, int64_t w) {
  return nhwc ? ((n * H + h) * W + w) * C + c : ((n * C + c) * H + h) * W + w;
}

static void pool_ref(const pool_case *p, int nhwc, const double *x, double *y) {
  const int64_t OH = oh_of(p), OW = ow_of(p);
  for (int64_t n = 0; n < p->n; ++n)
    for (int64_t c = 0; c < p->c; ++c)
      for (int64_t i = 0; i < OH; ++i)
        for (int64_t j = 0; j < OW; ++j) {
          int64_t h0, h1, w0, w1;
          double div;
          if (p->k == ADAPT) {
            h0 = (int64_t)floor((double)(i * p->h) / (double)OH);
            h1 = (int64_t)ceil((double)((i + 1) * p->h) / (double)OH);
            w0 = (int64_t)floor((double)(j * p->w) / (double)OW);
            w1 = (int64_t)ceil((double)((j + 1) * p->w) / (double)OW);
            div = (double)((h1 - h0) * (w1 - w0));
          } else {
            h0 = i * sh_of(p) - p->ph, w0 = j * sw_of(p) - p->pw;
            h1 = h0 + p->kh, w1 = w0 + p->kw;
            /* PyTorch counts padding only up to the padded border. */
            int64_t ch1 = h1 < p->h + p->ph ? h1 : p->h + p->ph, cw1 = w1 < p->w + p->pw ? w1 : p->w + p->pw;
            div = (double)((ch1 - h0) * (cw1 - w0));
            if (h0 < 0) h0 = 0;
            if (w0 < 0) w0 = 0;
            if (h1 > p->h) h1 = p->h;
            if (w1 > p->w) w1 = p->w;
            if (!p->include_pad) div = (double)((h1 - h0) * (w1 - w0));
          }
          double m = -INFINITY, s = 0;
          for (int64_t h = h0; h < h1; ++h)
            for (int64_t w = w0; w < w1; ++w) {
              double v = x[at(nhwc, p->c, p->h, p->w, n, c, h, w)];
              m = v > m ? v : m;
              s += v;
            }
          y[at(nhwc, p->c, OH, OW, n, c, i, j)] = p->k == MAXP ? m : s / div;
        }
}

static mixp_pool2d_options opts_of(const pool_case *p, int nhwc) {
  mixp_pool2d_options o;
  mixp_pool2d_options_init(&o);
  o.kernel_h = p->kh, o.kernel_w = p->kw, o.stride_h = p->sh, o.stride_w = p->sw;
  o.pad_h = p->ph, o.pad_w = p->pw, o.count_include_pad = p->include_pad;
  o.layout = nhwc ? MIXP_NHWC : MIXP_NCHW;
  return o;
}

typedef struct ctx {
  const pool_case *p;
  int nhwc;
} ctx;

static mixp_status pool_fn(mixp_tensor **in, int n, void *vc, mixp_tensor **out) {
  (void)n;
  const ctx *c = vc;
  if (c->p->k == ADAPT)
    return mixp_adaptive_avg_pool2d(in[0], c->p->oh, c->p->ow, c->nhwc ? MIXP_NHWC : MIXP_NCHW, out);
  mixp_pool2d_options o = opts_of(c->p, c->nhwc);
  return c->p->k == MAXP ? mixp_max_pool2d(in[0], &o, out) : mixp_avg_pool2d(in[0], &o, out);
}

static void shape_of_case(const pool_case *p, int nhwc, int64_t *s) {
  s[0] = p->n;
  if (nhwc) s[1] = p->h, s[2] = p->w, s[3] = p->c;
  else s[1] = p->c, s[2] = p->h, s[3] = p->w;
}

/* ---- forward -------------------------------------------------------------------- */

static void test_forward_all_dtypes(void **state) {
  mixp_session *s = *state;
  const mixp_dtype dts[4] = {MIXP_F64, MIXP_F32, MIXP_F16, MIXP_BF16};
  const double rtol[4] = {1e-15, 1e-6, 1e-3, 8e-3};
  for (int d = 0; d < 4; ++d)
    for (int i = 0; i < N_CASES; ++i)
      for (int nhwc = 0; nhwc < 2; ++nhwc) {
        const pool_case *p = &CASES[i];
        int64_t xs[4];
        shape_of_case(p, nhwc, xs);
        const int64_t nx = p->n * p->c * p->h * p->w, ny = p->n * p->c * oh_of(p) * ow_of(p);
        double xv[512];
        mt_fill(xv, nx, -2, 2, (uint64_t)(i + 1));
        mixp_tensor *x = mt_tensor(s, dts[d], xv, xs, 4), *y = NULL;
        ctx c = {p, nhwc};
        MT_OK(pool_fn(&x, 1, &c, &y));
        assert_int_equal(mixp_tensor_dtype(y), dts[d]);
        int64_t ys[4];
        int nd;
        MT_OK(mixp_tensor_shape(y, ys, 4, &nd));
        assert_int_equal(ys[nhwc ? 1 : 2], oh_of(p));
        assert_int_equal(ys[nhwc ? 2 : 3], ow_of(p));
        assert_int_equal(ys[nhwc ? 3 : 1], p->c);
        double *xr = mt_values(x), want[512], *got = mt_values(y);
        pool_ref(p, nhwc, xr, want);
        mt_assert_close(got, want, ny, 4 * rtol[d], rtol[d]); /* |x| <= 2: sums of terms that cancel */
        free(xr), free(got);
        mixp_tensor_release(x), mixp_tensor_release(y);
      }
}

/* ---- gradients ------------------------------------------------------------------- */

static void test_gradcheck_f64(void **state) {
  mixp_session *s = *state;
  for (int i = 0; i < N_CASES; ++i)
    for (int nhwc = 0; nhwc < 2; ++nhwc) {
      const pool_case *p = &CASES[i];
      int64_t xs[4];
      shape_of_case(p, nhwc, xs);
      double xv[512];
      /* Distinct values: no ties, so max pooling is differentiable here. */
      mt_fill(xv, p->n * p->c * p->h * p->w, -2, 2, (uint64_t)(40 + i));
      mt_input in[1] = {{xv, xs, 4, 1, MIXP_F64}};
      ctx c = {p, nhwc};
      mt_gradcheck(s, pool_fn, &c, in, 1, 1e-7, 1e-6);
    }
}

/* Gradient of sum(pool(x) * r) in dtype dt. */
static double *grad_of(mixp_session *s, const pool_case *p, int nhwc, mixp_dtype dt) {
  int64_t xs[4], ys[4];
  shape_of_case(p, nhwc, xs);
  double xv[512], rv[512];
  mt_fill(xv, p->n * p->c * p->h * p->w, -2, 2, 77);
  mixp_tensor *x = mt_tensor(s, dt, xv, xs, 4), *y = NULL, *pr = NULL, *l = NULL, *g = NULL;
  MT_OK(mixp_tensor_set_requires_grad(x, 1));
  ctx c = {p, nhwc};
  MT_OK(pool_fn(&x, 1, &c, &y));
  int nd;
  MT_OK(mixp_tensor_shape(y, ys, 4, &nd));
  mt_fill(rv, mixp_tensor_numel(y), -1, 1, 78);
  mixp_tensor *r = mt_tensor(s, dt, rv, ys, 4);
  MT_OK(mixp_mul(y, r, &pr));
  MT_OK(mixp_sum(pr, NULL, 0, 0, &l));
  MT_OK(mixp_backward(l, NULL));
  MT_OK(mixp_tensor_grad(x, &g));
  assert_int_equal(mixp_tensor_dtype(g), dt);
  double *v = mt_values(g);
  mixp_tensor *all[6] = {x, y, pr, l, g, r};
  for (int i = 0; i < 6; ++i) mixp_tensor_release(all[i]);
  return v;
}

static void test_backward_other_dtypes(void **state) {
  mixp_session *s = *state;
  const mixp_dtype dts[3] = {MIXP_F32, MIXP_F16, MIXP_BF16};
  const double tol[3] = {1e-6, 2e-3, 1.6e-2};
  for (int i = 0; i < N_CASES; ++i)
    for (int nhwc = 0; nhwc < 2; ++nhwc) {
      const pool_case *p = &CASES[i];
      const int64_t nx = p->n * p->c * p->h * p->w;
      double *want = grad_of(s, p, nhwc, MIXP_F64);
      for (int d = 0; d < 3; ++d) {
        double *got = grad_of(s, p, nhwc, dts[d]);
        /* Max routing can differ where rounding creates a tie: skip maxima
         * for the half types (the F32 path covers the same kernel). */
        if (!(p->k == MAXP && dts[d] != MIXP_F32)) mt_assert_close(got, want, nx, tol[d], tol[d]);
        free(got);
      }
      free(want);
    }
}

/* Ties: the whole gradient goes to the first maximum of each window. */
static void test_max_first_maximum(void **state) {
  mixp_session *s = *state;
  for (int nhwc = 0; nhwc < 2; ++nhwc) {
    const double xv[8] = {1, 1, 1, 1, 1, 1, 1, 1};
    const int64_t xs[4] = {1, 2, 2, 2};
    mixp_tensor *x = mt_tensor(s, MIXP_F32, xv, xs, 4), *y = NULL, *l = NULL, *g = NULL;
    MT_OK(mixp_tensor_set_requires_grad(x, 1));
    mixp_pool2d_options o;
    mixp_pool2d_options_init(&o);
    o.layout = nhwc ? MIXP_NHWC : MIXP_NCHW;
    o.kernel_h = 2, o.kernel_w = nhwc ? 1 : 2; /* NHWC: [1, H=2, W=2, C=2] */
    MT_OK(mixp_max_pool2d(x, &o, &y));
    MT_OK(mixp_sum(y, NULL, 0, 0, &l));
    MT_OK(mixp_backward(l, NULL));
    MT_OK(mixp_tensor_grad(x, &g));
    double *gv = mt_values(g);
    const double want_nchw[8] = {1, 0, 0, 0, 1, 0, 0, 0};
    const double want_nhwc[8] = {1, 1, 1, 1, 0, 0, 0, 0}; /* row 0 wins for each (w, c) */
    mt_assert_close(gv, nhwc ? want_nhwc : want_nchw, 8, 0, 0);
    free(gv);
    mixp_tensor *all[4] = {x, y, l, g};
    for (int i = 0; i < 4; ++i) mixp_tensor_release(all[i]);
  }
}

/* NaN wins its window (the first NaN), else the first maximum, in the
 * full-width windows that run across a row at once as in the edge ones. */
static void test_max_nan_and_ties_across_a_row(void **state) {
  mixp_session *s = *state;
  const mixp_dtype dts[2] = {MIXP_F32, MIXP_BF16};
  for (int d = 0; d < 2; ++d) {
    /* [1, 1, 2, 8]; 2x2 windows, stride 2: columns {0,1} {2,3} {4,5} {6,7}. */
    const double xv[16] = {1, 3, 0, NAN, 2, 0, 9, 0,  /* row 0 */
                           0, 0, 5, 0,   0, 2, 0, NAN}; /* row 1 */
    const int64_t xs[4] = {1, 1, 2, 8};
    mixp_tensor *x = mt_tensor(s, dts[d], xv, xs, 4), *y = NULL, *l = NULL, *g = NULL;
    MT_OK(mixp_tensor_set_requires_grad(x, 1));
    mixp_pool2d_options o;
    mixp_pool2d_options_init(&o);
    o.kernel_h = o.kernel_w = 2;
    MT_OK(mixp_max_pool2d(x, &o, &y));
    double *yv = mt_values(y);
    assert_true(yv[0] == 3 && isnan(yv[1]) && yv[2] == 2 && isnan(yv[3]));
    free(yv);
    MT_OK(mixp_sum(y, NULL, 0, 0, &l));
    MT_OK(mixp_backward(l, NULL));
    MT_OK(mixp_tensor_grad(x, &g));
    double *gv = mt_values(g);
    const double want[16] = {0, 1, 0, 1, 1, 0, 0, 0,  /* the NaN, not the later 5; the first 2 */
                             0, 0, 0, 0, 0, 0, 0, 1}; /* the NaN, not the earlier 9 */
    mt_assert_close(gv, want, 16, 0, 0);
    free(gv);
    mixp_tensor *all[4] = {x, y, l, g};
    for (int i = 0; i < 4; ++i) mixp_tensor_release(all[i]);
  }
}

/* Windows that overlap the padding (3x3, stride 1, padding 1 over 3x3: the
 * general path, with its -inf border): when every value of a window is
 * -inf, or all tie, the window's first real cell wins, as in PyTorch; a NaN
 * wins every window that holds it, the first NaN when there are two. */
static void test_max_padded_windows_first_cell(void **state) {
  mixp_session *s = *state;
  const mixp_dtype dts[2] = {MIXP_F32, MIXP_BF16};
  const double ninf = -INFINITY;
  const double inputs[3][9] = {{ninf, ninf, ninf, ninf, ninf, ninf, ninf, ninf, ninf},
                               {1, 1, 1, 1, 1, 1, 1, 1, 1},
                               {0, 1, 2, 3, NAN, 5, 6, 7, NAN}};
  const double first_cell[9] = {4, 2, 0, 2, 1, 0, 0, 0, 0}; /* how many windows start at each cell */
  const double nan_cell[9] = {0, 0, 0, 0, 9, 0, 0, 0, 0};
  for (int d = 0; d < 2; ++d)
    for (int k = 0; k < 3; ++k) {
      const int64_t xs[4] = {1, 1, 3, 3};
      mixp_tensor *x = mt_tensor(s, dts[d], inputs[k], xs, 4), *y = NULL, *l = NULL, *g = NULL;
      MT_OK(mixp_tensor_set_requires_grad(x, 1));
      mixp_pool2d_options o;
      mixp_pool2d_options_init(&o);
      o.kernel_h = o.kernel_w = 3;
      o.stride_h = o.stride_w = 1;
      o.pad_h = o.pad_w = 1;
      MT_OK(mixp_max_pool2d(x, &o, &y));
      double *yv = mt_values(y);
      for (int i = 0; i < 9; ++i) {
        if (k == 0) assert_true(isinf(yv[i]) && yv[i] < 0);
        if (k == 1) assert_true(yv[i] == 1.0);
        if (k == 2) assert_true(isnan(yv[i]));
      }
      free(yv);
      MT_OK(mixp_sum(y, NULL, 0, 0, &l));
      MT_OK(mixp_backward(l, NULL));
      MT_OK(mixp_tensor_grad(x, &g));
      double *gv = mt_values(g);
      mt_assert_close(gv, k == 2 ? nan_cell : first_cell, 9, 0, 0);
      free(gv);
      mixp_tensor *all[4] = {x, y, l, g};
      for (int i = 0; i < 4; ++i) mixp_tensor_release(all[i]);
    }
}

/* Pooling NHWC data equals pooling the NCHW data, permuted. */
static void test_nchw_nhwc_equivalence(void **state) {
  mixp_session *s = *state;
  for (int i = 0; i < N_CASES; ++i) {
    const pool_case *p = &CASES[i];
    int64_t xs[4];
    shape_of_case(p, 0, xs);
    double xv[512];
    mt_fill(xv, p->n * p->c * p->h * p->w, -2, 2, 5);
    mixp_tensor *x = mt_tensor(s, MIXP_F32, xv, xs, 4), *xp = NULL, *xn = NULL, *y1 = NULL, *y2 = NULL, *y2p = NULL;
    const int to_nhwc[4] = {0, 2, 3, 1}, to_nchw[4] = {0, 3, 1, 2};
    MT_OK(mixp_permute(x, to_nhwc, 4, &xp));
    MT_OK(mixp_contiguous(xp, &xn));
    ctx c0 = {p, 0}, c1 = {p, 1};
    MT_OK(pool_fn(&x, 1, &c0, &y1));
    MT_OK(pool_fn(&xn, 1, &c1, &y2));
    MT_OK(mixp_permute(y2, to_nchw, 4, &y2p));
    double *a = mt_values(y1), *b = mt_values(y2p);
    mt_assert_close(b, a, mixp_tensor_numel(y1), 1e-6, 1e-6);
    free(a), free(b);
    mixp_tensor *all[6] = {x, xp, xn, y1, y2, y2p};
    for (int k = 0; k < 6; ++k) mixp_tensor_release(all[k]);
  }
}

/* NHWC with more channels than a vector gives NCHW's maxima, indices'
 * routing and gradients exactly, in F32 and BF16, for tiling windows (the
 * backward stores each gradient) and overlapping padded ones (it sums
 * them): 37 channels (whole vectors and a tail) and 32 (whole vectors of 16,
 * the maxima kept in registers). Values are multiples of 1/4, so windows
 * hold ties. */
static void test_nhwc_many_channels(void **state) {
  mixp_session *s = *state;
  enum { N = 2, H = 7, W = 9, MAXNUM = N * 37 * H * W };
  static double xv[MAXNUM];
  mt_fill(xv, MAXNUM, -2, 2, 17);
  for (int i = 0; i < MAXNUM; ++i) xv[i] = floor(xv[i] * 4.0) / 4.0;
  const int64_t channels[2] = {37, 32};
  for (int ci = 0; ci < 2; ++ci) {
    const int64_t C = channels[ci], NUM = N * C * H * W;
    const int64_t shape[4] = {N, C, H, W};
    const int64_t geo[2][3] = {{2, 2, 0}, {3, 2, 1}}; /* kernel, stride, padding */
    const mixp_dtype dts[2] = {MIXP_F32, MIXP_BF16};
    const int to_nhwc[4] = {0, 2, 3, 1}, to_nchw[4] = {0, 3, 1, 2};
    for (int gi = 0; gi < 2; ++gi)
      for (int d = 0; d < 2; ++d) {
        double *vals[2][2];
        int64_t ny = 0;
        for (int nhwc = 0; nhwc < 2; ++nhwc) {
          mixp_tensor *x = mt_tensor(s, dts[d], xv, shape, 4), *xin = x, *xp = NULL;
          if (nhwc) {
            MT_OK(mixp_permute(x, to_nhwc, 4, &xp));
            MT_OK(mixp_contiguous(xp, &xin));
          }
          MT_OK(mixp_tensor_set_requires_grad(xin, 1));
          mixp_pool2d_options o;
          mixp_pool2d_options_init(&o);
          o.kernel_h = o.kernel_w = geo[gi][0];
          o.stride_h = o.stride_w = geo[gi][1];
          o.pad_h = o.pad_w = geo[gi][2];
          o.layout = nhwc ? MIXP_NHWC : MIXP_NCHW;
          mixp_tensor *y = NULL, *prod = NULL, *loss = NULL, *gx = NULL, *yn = NULL, *gn = NULL;
          MT_OK(mixp_max_pool2d(xin, &o, &y));
          ny = mixp_tensor_numel(y);
          MT_OK(mixp_mul(y, y, &prod)); /* gradients 2y: they differ between cells */
          MT_OK(mixp_sum(prod, NULL, 0, 0, &loss));
          MT_OK(mixp_backward(loss, NULL));
          MT_OK(mixp_tensor_grad(xin, &gx));
          if (nhwc) {
            MT_OK(mixp_permute(y, to_nchw, 4, &yn));
            MT_OK(mixp_permute(gx, to_nchw, 4, &gn));
          }
          vals[nhwc][0] = mt_values(nhwc ? yn : y);
          vals[nhwc][1] = mt_values(nhwc ? gn : gx);
          mixp_tensor *all[9] = {x, xp, nhwc ? xin : NULL, y, prod, loss, gx, yn, gn};
          for (int k = 0; k < 9; ++k)
            if (all[k]) mixp_tensor_release(all[k]);
        }
        mt_assert_close(vals[1][0], vals[0][0], ny, 0, 0);
        mt_assert_close(vals[1][1], vals[0][1], NUM, 0, 0);
        for (int k = 0; k < 4; ++k) free(vals[k / 2][k % 2]);
      }
  }
}

/* ---- misuse ------------------------------------------------------------------- */

static void test_options_init(void **state) {
  (void)state;
  mixp_pool2d_options_init(NULL);
  mixp_pool2d_options o;
  memset(&o, 0x5a, sizeof o);
  mixp_pool2d_options_init(&o);
  assert_int_equal(o.struct_size, sizeof o);
  assert_int_equal(o.kernel_h, 2);
  assert_int_equal(o.kernel_w, 2);
  assert_int_equal(o.stride_h, 0);
  assert_int_equal(o.stride_w, 0);
  assert_int_equal(o.pad_h, 0);
  assert_int_equal(o.pad_w, 0);
  assert_int_equal(o.count_include_pad, 1);
  assert_int_equal(o.layout, MIXP_NCHW);
}

typedef mixp_status (*pool_call)(const mixp_tensor *, const mixp_pool2d_options *, mixp_tensor **);

#define POOL_FAILS(call, x, o, status, needle)          \
  do {                                                  \
    mixp_tensor *out_ = MT_SENTINEL;                       \
    MT_FAILS(call(x, o, &out_), status, needle);        \
    assert_ptr_equal(out_, MT_SENTINEL);                   \
  } while (0)

static void test_misuse_window_pools(void **state) {
  mixp_session *s = *state;
  double v[48];
  mt_fill(v, 48, -1, 1, 3);
  const int64_t xs[4] = {1, 2, 4, 6}, x3s[3] = {2, 4, 6};
  mixp_tensor *x = mt_tensor(s, MIXP_F32, v, xs, 4), *x3 = mt_tensor(s, MIXP_F32, v, x3s, 3), *xi = NULL;
  MT_OK(mixp_cast(x, MIXP_I64, &xi));
  const pool_call calls[2] = {mixp_max_pool2d, mixp_avg_pool2d};
  const char *names[2] = {"mixp_max_pool2d", "mixp_avg_pool2d"};
  for (int k = 0; k < 2; ++k) {
    pool_call f = calls[k];
    mixp_pool2d_options o;
    mixp_pool2d_options_init(&o);
    mixp_tensor *out = NULL;
    MT_OK(f(x, &o, &out));
    mixp_tensor_release(out);
    MT_OK(f(x, NULL, &out)); /* NULL options: the defaults */
    mixp_tensor_release(out);
    POOL_FAILS(f, NULL, &o, MIXP_ERR_INVALID_ARGUMENT, "x");
    MT_FAILS(f(x, &o, NULL), MIXP_ERR_INVALID_ARGUMENT, "out is NULL");
    POOL_FAILS(f, x3, &o, MIXP_ERR_SHAPE, "x must be 4-D");
    POOL_FAILS(f, x3, &o, MIXP_ERR_SHAPE, names[k]);
    POOL_FAILS(f, xi, &o, MIXP_ERR_DTYPE, "x must be a float tensor");
    o.kernel_h = 0;
    POOL_FAILS(f, x, &o, MIXP_ERR_INVALID_ARGUMENT, "kernel_h");
    o.kernel_h = 5; /* > H = 4 */
    POOL_FAILS(f, x, &o, MIXP_ERR_SHAPE, "larger than the padded input");
    o.kernel_h = 2, o.stride_w = -1;
    POOL_FAILS(f, x, &o, MIXP_ERR_INVALID_ARGUMENT, "stride_w");
    o.stride_w = 0, o.pad_h = -1;
    POOL_FAILS(f, x, &o, MIXP_ERR_INVALID_ARGUMENT, "pad_h");
    o.pad_h = 2; /* more than half the kernel */
    POOL_FAILS(f, x, &o, MIXP_ERR_INVALID_ARGUMENT, "at most half of the kernel");
    o.pad_h = 0, o.layout = (mixp_layout)2;
    POOL_FAILS(f, x, &o, MIXP_ERR_INVALID_ARGUMENT, "layout");
    o.layout = MIXP_NCHW, o.struct_size = 4;
    POOL_FAILS(f, x, &o, MIXP_ERR_INVALID_ARGUMENT, "struct_size");
    o.struct_size = sizeof o;
  }
  mixp_pool2d_options o;
  mixp_pool2d_options_init(&o);
  o.count_include_pad = 2;
  POOL_FAILS(mixp_avg_pool2d, x, &o, MIXP_ERR_INVALID_ARGUMENT, "count_include_pad");
  mixp_tensor_release(x), mixp_tensor_release(x3), mixp_tensor_release(xi);
}

static void test_misuse_adaptive(void **state) {
  mixp_session *s = *state;
  double v[48];
  mt_fill(v, 48, -1, 1, 3);
  const int64_t xs[4] = {1, 2, 4, 6}, x3s[3] = {2, 4, 6}, es[4] = {1, 2, 0, 6};
  mixp_tensor *x = mt_tensor(s, MIXP_F32, v, xs, 4), *x3 = mt_tensor(s, MIXP_F32, v, x3s, 3), *xi = NULL;
  mixp_tensor *e = NULL;
  MT_OK(mixp_tensor_zeros(s, MIXP_F32, es, 4, &e));
  MT_OK(mixp_cast(x, MIXP_I64, &xi));
  mixp_tensor *out = MT_SENTINEL;
  MT_FAILS(mixp_adaptive_avg_pool2d(NULL, 1, 1, MIXP_NCHW, &out), MIXP_ERR_INVALID_ARGUMENT, "x");
  MT_FAILS(mixp_adaptive_avg_pool2d(x, 1, 1, MIXP_NCHW, NULL), MIXP_ERR_INVALID_ARGUMENT, "out is NULL");
  MT_FAILS(mixp_adaptive_avg_pool2d(x, 0, 1, MIXP_NCHW, &out), MIXP_ERR_INVALID_ARGUMENT, "out_h");
  MT_FAILS(mixp_adaptive_avg_pool2d(x, 1, -3, MIXP_NCHW, &out), MIXP_ERR_INVALID_ARGUMENT, "-3");
  MT_FAILS(mixp_adaptive_avg_pool2d(x, 1, 1, (mixp_layout)5, &out), MIXP_ERR_INVALID_ARGUMENT, "layout");
  MT_FAILS(mixp_adaptive_avg_pool2d(x3, 1, 1, MIXP_NCHW, &out), MIXP_ERR_SHAPE, "x must be 4-D");
  MT_FAILS(mixp_adaptive_avg_pool2d(e, 1, 1, MIXP_NCHW, &out), MIXP_ERR_SHAPE, "non-empty");
  MT_FAILS(mixp_adaptive_avg_pool2d(xi, 1, 1, MIXP_NCHW, &out), MIXP_ERR_DTYPE, "x must be a float tensor");
  assert_ptr_equal(out, MT_SENTINEL);
  mixp_tensor *all[4] = {x, x3, xi, e};
  for (int i = 0; i < 4; ++i) mixp_tensor_release(all[i]);
}

/* An empty batch pools to an empty batch. */
static void test_empty_batch(void **state) {
  mixp_session *s = *state;
  const int64_t xs[4] = {0, 2, 4, 4};
  mixp_tensor *x = NULL, *y = NULL;
  MT_OK(mixp_tensor_zeros(s, MIXP_F32, xs, 4, &x));
  MT_OK(mixp_max_pool2d(x, NULL, &y));
  assert_int_equal(mixp_tensor_numel(y), 0);
  mixp_tensor_release(y);
  MT_OK(mixp_adaptive_avg_pool2d(x, 1, 1, MIXP_NCHW, &y));
  assert_int_equal(mixp_tensor_numel(y), 0);
  mixp_tensor_release(y), mixp_tensor_release(x);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_options_init),
      cmocka_unit_test_setup_teardown(test_forward_all_dtypes, mt_setup_session, mt_teardown_session),
      cmocka_unit_test_setup_teardown(test_gradcheck_f64, mt_setup_session, mt_teardown_session),
      cmocka_unit_test_setup_teardown(test_backward_other_dtypes, mt_setup_session, mt_teardown_session),
      cmocka_unit_test_setup_teardown(test_max_first_maximum, mt_setup_session, mt_teardown_session),
      cmocka_unit_test_setup_teardown(test_max_nan_and_ties_across_a_row, mt_setup_session, mt_teardown_session),
      cmocka_unit_test_setup_teardown(test_max_padded_windows_first_cell, mt_setup_session, mt_teardown_session),
      cmocka_unit_test_setup_teardown(test_nchw_nhwc_equivalence, mt_setup_session, mt_teardown_session),
      cmocka_unit_test_setup_teardown(test_nhwc_many_channels, mt_setup_session, mt_teardown_session),
      cmocka_unit_test_setup_teardown(test_misuse_window_pools, mt_setup_session, mt_teardown_session),
      cmocka_unit_test_setup_teardown(test_misuse_adaptive, mt_setup_session, mt_teardown_session),
      cmocka_unit_test_setup_teardown(test_empty_batch, mt_setup_session, mt_teardown_session),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
