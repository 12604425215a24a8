/* Normalisation ops: batch_norm (train/eval, NCHW/NHWC/2-D, running
 * statistics), layer_norm and group_norm. Forward values against double
 * formulas in every float dtype, gradient checks in F64, and misuse. */
#include "test_util.h"

/* ---- references ------------------------------------------------------------------- */

/* Batch norm of x viewed as [outer, c, inner], statistics per channel.
 * mean/var (biased) receive the batch statistics when non-NULL. */
static void ref_batch_norm(const double *x, int64_t outer, int64_t c, int64_t inner,
                           const double *w, const double *b, double eps, const double *use_mean,
                           const double *use_var, double *y, double *mean, double *var) {
  for (int64_t ch = 0; ch < c; ++ch) {
    double mu = 0, v = 0, m = (double)(outer * inner);
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t i = 0; i < inner; ++i) mu += x[(o * c + ch) * inner + i];
    mu /= m;
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t i = 0; i < inner; ++i) {
        double d = x[(o * c + ch) * inner + i] - mu;
        v += d * d;
      }
    v /= m;
    if (mean) mean[ch] = mu;
    if (var) var[ch] = v;
    double mm = use_mean ? use_mean[ch] : mu, vv = use_var ? use_var[ch] : v;
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t i = 0; i < inner; ++i) {
        int64_t k = (o * c + ch) * inner + i;
        y[k] = (x[k] - mm) / sqrt(vv + eps) * (w ? w[ch] : 1.0) + (b ? b[ch] : 0.0);
      }
  }
}

/* Group norm of x [n, c, s] with g groups (layer norm: c = D, s = 1, g = 1;
 * then the affine is per column). */
static void ref_group_norm(const double *x, int64_t n, int64_t c, int64_t s, int64_t g,
                           const double *w, const double *b, double eps, double *y) {
  int64_t cpg = c / g, len = cpg * s;
  for (int64_t r = 0; r < n * g; ++r) {
    const double *xr = x + r * len;
    double mu = 0, v = 0;
    for (int64_t i = 0; i < len; ++i) mu += xr[i];
    mu /= (double)len;
    for (int64_t i = 0; i < len; ++i) v += (xr[i] - mu) * (xr[i] - mu);
    v /= (double)len;
    for (int64_t i = 0; i < len; ++i) {
      int64_t ch = (r % g) * cpg + i / s;
      y[r * len + i] = (xr[i] - mu) / sqrt(v + eps) * (w ? w[ch] : 1.0) + (b ? b[ch] : 0.0);
    }
  }
}

static double tol_for(mixp_dtype dt) {
  switch (dt) {
    case MIXP_F64: return 1e-12;
    case MIXP_F32: return 2e-5;
    case MIXP_F16: return 4e-3;
    default: return 3e-2;
  }
}

static const mixp_dtype FLOATS[4] = {MIXP_F64, MIXP_F32, MIXP_F16, MIXP_BF16};

/* ---- batch_norm forward ------------------------------------------------------------- */

typedef struct bn_case {
  int64_t shape[4];
  int ndim;
  mixp_layout layout;
} bn_case;

static void bn_geometry(const bn_case *bc, int64_t *outer, int64_t *c, int64_t *inner) {
  int cdim = bc->layout == MIXP_NHWC ? bc->ndim - 1 : 1;
  *outer = 1, *inner = 1, *c = bc->shape[cdim];
  for (int i = 0; i < cdim; ++i) *outer *= bc->shape[i];
  for (int i = cdim + 1; i < bc->ndim; ++i) *inner *= bc->shape[i];
}

static const bn_case BN_CASES[3] = {
    {{2, 3, 2, 3}, 4, MIXP_NCHW}, {{2, 2, 3, 3}, 4, MIXP_NHWC}, {{5, 4, 0, 0}, 2, MIXP_NCHW}};

static void test_batch_norm_train_forward(void **state) {
  (void)state;
  mixp_session *s = mt_session();
  for (int ci = 0; ci < 3; ++ci) {
    const bn_case *bc = &BN_CASES[ci];
    int64_t outer, c, inner;
    bn_geometry(bc, &outer, &c, &inner);
    int64_t n = outer * c * inner;
    double x[64], w[4], b[4], y[64], mean[4], var[4];
    mt_fill(x, n, -2.0, 3.0, 11 + (uint64_t)ci);
    mt_fill(w, c, 0.5, 1.5, 3);
    mt_fill(b, c, -0.5, 0.5, 4);
    for (int d = 0; d < 4; ++d) {
      const mixp_dtype dt = FLOATS[d];
      mixp_tensor *xt = mt_tensor(s, dt, x, bc->shape, bc->ndim);
      mixp_tensor *wt = mt_tensor(s, dt, w, &c, 1), *bt = mt_tensor(s, dt, b, &c, 1);
      double *xr = mt_values(xt), *wr = mt_values(wt), *br = mt_values(bt);
      ref_batch_norm(xr, outer, c, inner, wr, br, 1e-5, NULL, NULL, y, mean, var);
      mixp_tensor *out = NULL;
      MT_OK(mixp_batch_norm(xt, wt, bt, NULL, NULL, 1, 0.1, 1e-5, bc->layout, &out));
      assert_int_equal(mixp_tensor_dtype(out), dt);
      assert_int_equal(mixp_tensor_numel(out), n);
      double *got = mt_values(out);
      mt_assert_close(got, y, n, tol_for(dt) * 4, tol_for(dt));
      /* No affine: the plain standardisation. */
      mixp_tensor *out2 = NULL;
      MT_OK(mixp_batch_norm(xt, NULL, NULL, NULL, NULL, 1, 0.1, 1e-5, bc->layout, &out2));
      ref_batch_norm(xr, outer, c, inner, NULL, NULL, 1e-5, NULL, NULL, y, NULL, NULL);
      double *got2 = mt_values(out2);
      mt_assert_close(got2, y, n, tol_for(dt) * 4, tol_for(dt));
      free(got);
      free(got2);
      free(xr);
      free(wr);
      free(br);
      mixp_tensor_release(out);
      mixp_tensor_release(out2);
      mixp_tensor_release(xt);
      mixp_tensor_release(wt);
      mixp_tensor_release(bt);
    }
  }
  mixp_session_destroy(s);
}

/* NHWC and NCHW agree on the same data laid out both ways. */
static void test_batch_norm_layouts_agree(void **state) {
  (void)state;
  mixp_session *s = mt_session();
  const int64_t nchw[4] = {2, 3, 2, 2};
  double x[24];
  mt_fill(x, 24, -1.0, 1.0, 21);
  mixp_tensor *xt = mt_tensor(s, MIXP_F32, x, nchw, 4), *xp = NULL, *xh = NULL;
  const int perm[4] = {0, 2, 3, 1};
  MT_OK(mixp_permute(xt, perm, 4, &xp));
  MT_OK(mixp_contiguous(xp, &xh));
  mixp_tensor *a = NULL, *b = NULL, *bp = NULL;
  MT_OK(mixp_batch_norm(xt, NULL, NULL, NULL, NULL, 1, 0.1, 1e-5, MIXP_NCHW, &a));
  MT_OK(mixp_batch_norm(xh, NULL, NULL, NULL, NULL, 1, 0.1, 1e-5, MIXP_NHWC, &b));
  const int inv[4] = {0, 3, 1, 2};
  MT_OK(mixp_permute(b, inv, 4, &bp));
  double *va = mt_values(a), *vb = mt_values(bp);
  mt_assert_close(va, vb, 24, 1e-6, 1e-6);
  free(va);
  free(vb);
  mixp_tensor_release(a);
  mixp_tensor_release(b);
  mixp_tensor_release(bp);
  mixp_tensor_release(xp);
  mixp_tensor_release(xh);
  mixp_tensor_release(xt);
  mixp_session_destroy(s);
}

/* Running statistics after three training steps against the hand-computed
 * momentum updates (unbiased variance), then eval mode uses them. */
static void test_batch_norm_running_stats(void **state) {
  (void)state;
  mixp_session *s = mt_session();
  const int64_t shape[4] = {3, 2, 2, 2}, c = 2;
  const mixp_dtype xdts[3] = {MIXP_F64, MIXP_F32, MIXP_BF16};
  for (int d = 0; d < 3; ++d) {
    const mixp_dtype dt = xdts[d];
    const mixp_dtype sdt = dt == MIXP_F64 ? MIXP_F64 : MIXP_F32;
    double rm0[2] = {0, 0}, rv0[2] = {1, 1};
    mixp_tensor *rm = mt_tensor(s, sdt, rm0, &c, 1), *rv = mt_tensor(s, sdt, rv0, &c, 1);
    double hm[2] = {0, 0}, hv[2] = {1, 1};
    const double mom = 0.25;
    for (int step = 0; step < 3; ++step) {
      double x[24], y[24], mean[2], var[2];
      mt_fill(x, 24, -1.0 + step, 2.0 + 2 * step, 40 + (uint64_t)step);
      mixp_tensor *xt = mt_tensor(s, dt, x, shape, 4), *out = NULL;
      double *xr = mt_values(xt);
      ref_batch_norm(xr, 3, 2, 4, NULL, NULL, 1e-5, NULL, NULL, y, mean, var);
      for (int ch = 0; ch < 2; ++ch) {
        hm[ch] = (1 - mom) * hm[ch] + mom * mean[ch];
        hv[ch] = (1 - mom) * hv[ch] + mom * var[ch] * 12.0 / 11.0;
      }
      MT_OK(mixp_batch_norm(xt, NULL, NULL, rm, rv, 1, mom, 1e-5, MIXP_NCHW, &out));
      free(xr);
      mixp_tensor_release(out);
      mixp_tensor_release(xt);
    }
    double *gm = mt_values(rm), *gv = mt_values(rv);
    double tol = sdt == MIXP_F64 ? 1e-12 : 1e-5;
    mt_assert_close(gm, hm, 2, tol, tol);
    mt_assert_close(gv, hv, 2, tol, tol);
    assert_int_equal(mixp_tensor_dtype(rm), sdt);
    free(gm);
    free(gv);

    /* Eval uses the running statistics and leaves them alone. */
    double x[24], y[24];
    mt_fill(x, 24, -3.0, 3.0, 77);
    mixp_tensor *xt = mt_tensor(s, dt, x, shape, 4), *out = NULL;
    double *xr = mt_values(xt);
    MT_OK(mixp_batch_norm(xt, NULL, NULL, rm, rv, 0, mom, 1e-3, MIXP_NCHW, &out));
    ref_batch_norm(xr, 3, 2, 4, NULL, NULL, 1e-3, hm, hv, y, NULL, NULL);
    double *got = mt_values(out);
    mt_assert_close(got, y, 24, tol_for(dt) * 4, tol_for(dt));
    double *gm2 = mt_values(rm);
    mt_assert_close(gm2, hm, 2, tol, tol);
    free(gm2);
    free(got);
    free(xr);
    mixp_tensor_release(out);
    mixp_tensor_release(xt);
    mixp_tensor_release(rm);
    mixp_tensor_release(rv);
  }
  mixp_session_destroy(s);
}

/* A call that fails (here: the numerics checker sees the NaN an Inf input
 * produces) leaves the running statistics untouched. */
static void test_batch_norm_failed_call_keeps_stats(void **state) {
  (void)state;
  mixp_session *s = mt_session();
  const int64_t shape[2] = {4, 2}, c = 2;
  double x[8] = {1, 2, 3, INFINITY, 5, 6, 7, 8};
  double rm0[2] = {0.5, -0.5}, rv0[2] = {2, 3};
  mixp_tensor *xt = mt_tensor(s, MIXP_F32, x, shape, 2);
  mixp_tensor *rm = mt_tensor(s, MIXP_F32, rm0, &c, 1), *rv = mt_tensor(s, MIXP_F32, rv0, &c, 1);
  MT_OK(mixp_session_set_numerics_check(s, MIXP_NUMERICS_ERROR));
  mixp_tensor *out = NULL;
  MT_FAILS(mixp_batch_norm(xt, NULL, NULL, rm, rv, 1, 0.1, 1e-5, MIXP_NCHW, &out),
           MIXP_ERR_NUMERIC, "batch_norm");
  assert_null(out);
  double *gm = mt_values(rm), *gv = mt_values(rv);
  mt_assert_close(gm, rm0, 2, 0, 0);
  mt_assert_close(gv, rv0, 2, 0, 0);
  free(gm);
  free(gv);
  MT_OK(mixp_session_set_numerics_check(s, MIXP_NUMERICS_OFF));
  mixp_tensor_release(xt);
  mixp_tensor_release(rm);
  mixp_tensor_release(rv);
  mixp_session_destroy(s);
}

/* ---- gradient checks ---------------------------------------------------------------- */

typedef struct bn_ctx {
  int training;
  mixp_layout layout;
  int affine;
  mixp_tensor *rm, *rv;
} bn_ctx;

static mixp_status bn_fn(mixp_tensor **in, int n, void *ctx, mixp_tensor **out) {
  (void)n;
  bn_ctx *c = (bn_ctx *)ctx;
  return mixp_batch_norm(in[0], c->affine ? in[1] : NULL, c->affine ? in[2] : NULL, c->rm, c->rv,
                         c->training, 0.1, 1e-5, c->layout, out);
}

static void test_batch_norm_gradcheck(void **state) {
  (void)state;
  mixp_session *s = mt_session();
  for (int ci = 0; ci < 3; ++ci) {
    const bn_case *bc = &BN_CASES[ci];
    int64_t outer, c, inner;
    bn_geometry(bc, &outer, &c, &inner);
    const int64_t n = outer * c * inner;
    double x[64], w[4], b[4], rm[4], rv[4];
    mt_fill(x, n, -2.0, 2.0, 5 + (uint64_t)ci);
    mt_fill(w, c, 0.5, 1.5, 6);
    mt_fill(b, c, -0.5, 0.5, 7);
    mt_fill(rm, c, -0.3, 0.3, 8);
    mt_fill(rv, c, 0.5, 1.5, 9);
    for (int training = 0; training <= 1; ++training)
      for (int affine = 0; affine <= 1; ++affine) {
        bn_ctx ctx = {training, bc->layout, affine, NULL, NULL};
        if (!training) {
          ctx.rm = mt_tensor(s, MIXP_F64, rm, &c, 1);
          ctx.rv = mt_tensor(s, MIXP_F64, rv, &c, 1);
        }
        mt_input in[3] = {{x, bc->shape, bc->ndim, 1, MIXP_F64},
                          {w, &c, 1, 1, MIXP_F64},
                          {b, &c, 1, 1, MIXP_F64}};
        mt_gradcheck(s, bn_fn, &ctx, in, affine ? 3 : 1, 1e-6, 1e-5);
        mixp_tensor_release(ctx.rm);
        mixp_tensor_release(ctx.rv);
      }
  }
  mixp_session_destroy(s);
}

/* Rows of 32 or more elements per (sample, channel) take the one-pass
 * statistics (each row's sum and centred squares, joined per channel):
 * against the double reference on rows whose length is not a multiple of
 * the vector lanes, also when the mean is large against the spread (the
 * case two passes exist for), with the running statistics; and gradcheck. */
static void test_batch_norm_long_rows(void **state) {
  (void)state;
  mixp_session *s = mt_session();
  const int64_t shape[4] = {3, 2, 7, 9}, c = 2, n = 3 * 2 * 63;
  const double offsets[2] = {0.0, 1000.0};
  for (int k = 0; k < 2; ++k)
    for (int d = 0; d < 4; ++d) {
      const mixp_dtype dt = FLOATS[d];
      const mixp_dtype sdt = dt == MIXP_F64 ? MIXP_F64 : MIXP_F32;
      double x[378], y[378], mean[2], var[2], zeros[2] = {0, 0}, ones[2] = {1, 1};
      mt_fill(x, n, -1.0, 2.0, 61 + (uint64_t)k);
      for (int64_t i = 0; i < n; ++i) x[i] += offsets[k];
      if (offsets[k] > 0 && (dt == MIXP_F16 || dt == MIXP_BF16)) continue; /* 1000 + noise is not representable */
      mixp_tensor *xt = mt_tensor(s, dt, x, shape, 4), *out = NULL;
      mixp_tensor *rm = mt_tensor(s, sdt, zeros, &c, 1), *rv = mt_tensor(s, sdt, ones, &c, 1);
      double *xr = mt_values(xt);
      ref_batch_norm(xr, 3, 2, 63, NULL, NULL, 1e-5, NULL, NULL, y, mean, var);
      MT_OK(mixp_batch_norm(xt, NULL, NULL, rm, rv, 1, 1.0, 1e-5, MIXP_NCHW, &out));
      double *got = mt_values(out), *gm = mt_values(rm), *gv = mt_values(rv);
      mt_assert_close(got, y, n, tol_for(dt) * 4, tol_for(dt));
      const double unbiased[2] = {var[0] * 189.0 / 188.0, var[1] * 189.0 / 188.0};
      const double tol = sdt == MIXP_F64 ? 1e-12 : 1e-6;
      mt_assert_close(gm, mean, 2, tol * (1.0 + offsets[k]), tol);
      mt_assert_close(gv, unbiased, 2, tol, tol);
      free(got);
      free(gm);
      free(gv);
      free(xr);
      mixp_tensor_release(out);
      mixp_tensor_release(xt);
      mixp_tensor_release(rm);
      mixp_tensor_release(rv);
    }
  double x[160], w[2] = {0.75, 1.25}, b[2] = {0.1, -0.2};
  const int64_t gshape[4] = {2, 2, 5, 8};
  mt_fill(x, 160, -2.0, 2.0, 67);
  bn_ctx ctx = {1, MIXP_NCHW, 1, NULL, NULL};
  mt_input in[3] = {{x, gshape, 4, 1, MIXP_F64}, {w, &c, 1, 1, MIXP_F64}, {b, &c, 1, 1, MIXP_F64}};
  mt_gradcheck(s, bn_fn, &ctx, in, 3, 1e-6, 1e-5);
  mixp_session_destroy(s);
}

/* One training step of batch_norm in `layout` on x (given NCHW [n, c, h, w];
 * permuted to NHWC for that layout) in dtype dt, with weight, bias and
 * running statistics (F32, F64 for F64 data) and the loss sum(y * r).
 * Returns y, gx (both back in NCHW order), gw, gb, running mean and var. */
static void bn_layout_step(mixp_session *s, mixp_dtype dt, mixp_layout layout, const int64_t *shape,
                           const double *x, const double *r, const double *w, const double *b, double *v[6]) {
  const int64_t c = shape[1];
  const mixp_dtype pd = dt == MIXP_F64 ? MIXP_F64 : MIXP_F32;
  const int to_nhwc[4] = {0, 2, 3, 1}, to_nchw[4] = {0, 3, 1, 2};
  mixp_tensor *x4 = mt_tensor(s, dt, x, shape, 4), *r4 = mt_tensor(s, dt, r, shape, 4);
  mixp_tensor *xt = x4, *rt = r4, *xp = NULL, *rp = NULL;
  if (layout == MIXP_NHWC) {
    MT_OK(mixp_permute(x4, to_nhwc, 4, &xp));
    MT_OK(mixp_contiguous(xp, &xt));
    mixp_tensor_release(xp);
    MT_OK(mixp_permute(r4, to_nhwc, 4, &rp));
    MT_OK(mixp_contiguous(rp, &rt));
    mixp_tensor_release(rp);
  }
  double zeros[64] = {0}, ones[64];
  for (int i = 0; i < 64; ++i) ones[i] = 1.0;
  mixp_tensor *wt = mt_param(s, pd, w, c), *bt = mt_param(s, pd, b, c);
  mixp_tensor *rm = mt_tensor(s, pd, zeros, &c, 1), *rv = mt_tensor(s, pd, ones, &c, 1);
  MT_OK(mixp_tensor_set_requires_grad(xt, 1));
  mixp_tensor *y = NULL, *prod = NULL, *loss = NULL, *gx = NULL, *gw = NULL, *gb = NULL;
  MT_OK(mixp_batch_norm(xt, wt, bt, rm, rv, 1, 1.0, 1e-5, layout, &y));
  MT_OK(mixp_mul(y, rt, &prod));
  MT_OK(mixp_sum(prod, NULL, 0, 0, &loss));
  MT_OK(mixp_backward(loss, NULL));
  MT_OK(mixp_tensor_grad(xt, &gx));
  MT_OK(mixp_tensor_grad(wt, &gw));
  MT_OK(mixp_tensor_grad(bt, &gb));
  mixp_tensor *yn = y, *gxn = gx;
  if (layout == MIXP_NHWC) {
    MT_OK(mixp_permute(y, to_nchw, 4, &yn));
    MT_OK(mixp_permute(gx, to_nchw, 4, &gxn));
  }
  v[0] = mt_values(yn);
  v[1] = mt_values(gxn);
  v[2] = mt_values(gw);
  v[3] = mt_values(gb);
  v[4] = mt_values(rm);
  v[5] = mt_values(rv);
  if (layout == MIXP_NHWC) {
    mixp_tensor_release(yn);
    mixp_tensor_release(gxn);
    mixp_tensor_release(xt);
    mixp_tensor_release(rt);
  }
  mixp_tensor *all[11] = {x4, r4, wt, bt, rm, rv, y, prod, loss, gx, gw};
  for (int i = 0; i < 11; ++i) mixp_tensor_release(all[i]);
  mixp_tensor_release(gb);
}

/* NHWC with many rows of few channels (the CPU sums them in fixed chunks of
 * rows, vectorised across the channels, and joins the chunks' centred sums;
 * the normalisation runs tiles of whole rows, the last one partial): the
 * statistics against the double reference, with a mean of 1000 against a
 * spread of 3 in F32/F64 (the join's correction term matters there), and
 * output and gradients equal to NCHW's on the same data. */
static void test_batch_norm_nhwc_many_rows(void **state) {
  (void)state;
  mixp_session *s = mt_session();
  /* 7 * 29 * 31 = 6293 rows: the last chunk and the last run of rows are
   * odd-sized. 5 channels add row by row, 32 in registers by vectors. */
  enum { N = 7, H = 29, W = 31, MAXC = 32, MAXNUM = N * MAXC * H * W };
  const int64_t channels[2] = {5, 32};
  double *x = malloc(sizeof(double) * MAXNUM), *r = malloc(sizeof(double) * MAXNUM);
  double *y = malloc(sizeof(double) * MAXNUM);
  double w[MAXC], b[MAXC], mean[MAXC], var[MAXC], unbiased[MAXC];
  mt_fill(r, MAXNUM, -1.0, 1.0, 91);
  mt_fill(w, MAXC, 0.5, 1.5, 92);
  mt_fill(b, MAXC, -0.5, 0.5, 93);
  const double offsets[2] = {0.0, 1000.0};
  for (int ci = 0; ci < 2; ++ci)
    for (int k = 0; k < 2; ++k)
      for (int d = 0; d < 4; ++d) {
        const int64_t C = channels[ci], NUM = N * C * H * W;
        const int64_t shape[4] = {N, C, H, W};
        const mixp_dtype dt = FLOATS[d];
        if (offsets[k] > 0 && (dt == MIXP_F16 || dt == MIXP_BF16)) continue; /* not representable */
        mt_fill(x, NUM, -1.5, 1.5, 94 + (uint64_t)k);
        for (int64_t i = 0; i < NUM; ++i) x[i] += offsets[k];
        double *nhwc[6], *nchw[6];
        bn_layout_step(s, dt, MIXP_NHWC, shape, x, r, w, b, nhwc);
        bn_layout_step(s, dt, MIXP_NCHW, shape, x, r, w, b, nchw);
        /* The statistics of the values as stored (rounded to dt). */
        mixp_tensor *xt = mt_tensor(s, dt, x, shape, 4);
        double *xr = mt_values(xt);
        ref_batch_norm(xr, N, C, H * W, w, b, 1e-5, NULL, NULL, y, mean, var);
        const double tol = dt == MIXP_F64 ? 1e-12 : 1e-6, m = (double)(N * H * W);
        for (int ch = 0; ch < C; ++ch) unbiased[ch] = var[ch] * m / (m - 1.0);
        mt_assert_close(nhwc[4], mean, C, tol * (1.0 + offsets[k]), tol);
        mt_assert_close(nhwc[5], unbiased, C, tol, tol);
        /* x - mean loses the digits of the offset: the reference's own error. */
        mt_assert_close(nhwc[0], y, NUM, tol_for(dt) * 4 * (1.0 + offsets[k]), tol_for(dt));
        /* Both layouts, the same numbers up to the rounding of their sums. */
        const double t = dt == MIXP_F64 ? 1e-9 : tol_for(dt) * 4;
        const int64_t sizes[6] = {NUM, NUM, C, C, C, C};
        for (int i = 0; i < 6; ++i) {
          mt_assert_close(nhwc[i], nchw[i], sizes[i], t * (1.0 + offsets[k]) * (i == 2 || i == 3 ? 100.0 : 1.0), t);
          free(nhwc[i]);
          free(nchw[i]);
        }
        free(xr);
        mixp_tensor_release(xt);
      }
  free(x);
  free(r);
  free(y);
  mixp_session_destroy(s);
}

/* One training step of batch_norm on x of dtype xd with weight, bias and
 * running statistics of dtype pd; cast_x runs it as F32 on a cast copy of x
 * and casts the result back (what autocast did before batch_norm took
 * mixes). Returns y, gx, gw, gb, running mean and var as values, dtypes of
 * the results in dts. */
typedef struct bn_run {
  double *v[6];
  mixp_dtype dts[4]; /* y, gx, gw, gb */
} bn_run;

static bn_run bn_step(mixp_session *s, mixp_dtype xd, mixp_dtype pd, int cast_x) {
  const int64_t shape[4] = {3, 4, 5, 7}, c = 4, n = 3 * 4 * 5 * 7;
  double x[420], r[420], w[4], b[4], zeros[4] = {0, 0, 0, 0}, ones[4] = {1, 1, 1, 1};
  mt_fill(x, n, -3.0, 5.0, 71);
  mt_fill(r, n, -1.0, 1.0, 72);
  mt_fill(w, c, 0.5, 1.5, 73);
  mt_fill(b, c, -0.5, 0.5, 74);
  mixp_tensor *xt = mt_tensor(s, xd, x, shape, 4), *rt = mt_tensor(s, xd, r, shape, 4);
  mixp_tensor *wt = mt_param(s, pd, w, c), *bt = mt_param(s, pd, b, c);
  mixp_tensor *rm = mt_tensor(s, pd, zeros, &c, 1), *rv = mt_tensor(s, pd, ones, &c, 1);
  MT_OK(mixp_tensor_set_requires_grad(xt, 1));
  mixp_tensor *in = xt, *x32 = NULL, *y = NULL, *y32 = NULL, *prod = NULL, *loss = NULL;
  if (cast_x) {
    MT_OK(mixp_cast(xt, MIXP_F32, &x32));
    in = x32;
  }
  MT_OK(mixp_batch_norm(in, wt, bt, rm, rv, 1, 0.1, 1e-5, MIXP_NCHW, cast_x ? &y32 : &y));
  if (cast_x) MT_OK(mixp_cast(y32, xd, &y));
  MT_OK(mixp_mul(y, rt, &prod));
  MT_OK(mixp_sum(prod, NULL, 0, 0, &loss));
  MT_OK(mixp_backward(loss, NULL));
  mixp_tensor *g[3] = {NULL, NULL, NULL}, *leaves[3] = {xt, wt, bt};
  bn_run out;
  out.dts[0] = mixp_tensor_dtype(y);
  out.v[0] = mt_values(y);
  for (int i = 0; i < 3; ++i) {
    MT_OK(mixp_tensor_grad(leaves[i], &g[i]));
    out.dts[1 + i] = mixp_tensor_dtype(g[i]);
    out.v[1 + i] = mt_values(g[i]);
    mixp_tensor_release(g[i]);
  }
  out.v[4] = mt_values(rm);
  out.v[5] = mt_values(rv);
  mixp_tensor *all[11] = {xt, rt, wt, bt, rm, rv, x32, y, y32, prod, loss};
  for (int i = 0; i < 11; ++i) mixp_tensor_release(all[i]);
  return out;
}

/* Half data with F32 parameters (an O2 model's batch norm) runs without
 * casts and gives bitwise what casting the data to F32 and the result back
 * gave: the statistics and the normalisation are computed in the same
 * precision, and each half output is rounded once either way. F32 data with
 * half parameters (a black-listed batch_norm in a half model) works too, its
 * gradients in the parameters' dtype. */
static void test_batch_norm_mixed_dtypes(void **state) {
  (void)state;
  mixp_session *s = mt_session();
  const int64_t n = 420, c = 4;
  const int64_t sizes[6] = {n, n, c, c, c, c};
  const mixp_dtype halves[2] = {MIXP_F16, MIXP_BF16};
  for (int h = 0; h < 2; ++h) {
    bn_run mixed = bn_step(s, halves[h], MIXP_F32, 0), cast = bn_step(s, halves[h], MIXP_F32, 1);
    assert_int_equal(mixed.dts[0], halves[h]);
    assert_int_equal(mixed.dts[1], halves[h]);
    assert_int_equal(mixed.dts[2], MIXP_F32);
    assert_int_equal(mixed.dts[3], MIXP_F32);
    for (int i = 0; i < 6; ++i) {
      mt_assert_close(mixed.v[i], cast.v[i], sizes[i], 0, 0);
      free(mixed.v[i]), free(cast.v[i]);
    }
    /* F32 data, half parameters: against all-F32, within the parameters'
     * rounding (they are rounded to half here, exact-widened inside). */
    bn_run f32_half = bn_step(s, MIXP_F32, halves[h], 0), all32 = bn_step(s, MIXP_F32, MIXP_F32, 0);
    assert_int_equal(f32_half.dts[0], MIXP_F32);
    assert_int_equal(f32_half.dts[2], halves[h]);
    assert_int_equal(f32_half.dts[3], halves[h]);
    const double tol = halves[h] == MIXP_BF16 ? 2e-2 : 2e-3;
    for (int i = 0; i < 6; ++i) {
      mt_assert_close(f32_half.v[i], all32.v[i], sizes[i], tol * 4, tol);
      free(f32_half.v[i]), free(all32.v[i]);
    }
  }
  /* F64 mixes with nothing. */
  const int64_t shape[2] = {4, 2}, two = 2;
  double v[8] = {1, 2, 3, 4, 5, 6, 7, 8}, w[2] = {1, 1};
  const mixp_dtype pairs[4][2] = {{MIXP_F64, MIXP_F32}, {MIXP_F32, MIXP_F64}, {MIXP_F64, MIXP_BF16},
                                  {MIXP_BF16, MIXP_F64}};
  for (int i = 0; i < 4; ++i) {
    mixp_tensor *xt = mt_tensor(s, pairs[i][0], v, shape, 2), *wt = mt_tensor(s, pairs[i][1], w, &two, 1);
    mixp_tensor *out = NULL;
    MT_FAILS(mixp_batch_norm(xt, wt, NULL, NULL, NULL, 1, 0.1, 1e-5, MIXP_NCHW, &out), MIXP_ERR_DTYPE,
             "weight");
    assert_null(out);
    MT_FAILS(mixp_batch_norm(xt, NULL, wt, NULL, NULL, 1, 0.1, 1e-5, MIXP_NCHW, &out), MIXP_ERR_DTYPE, "bias");
    assert_null(out);
    mixp_tensor_release(xt), mixp_tensor_release(wt);
  }
  mixp_session_destroy(s);
}

/* Half-precision backward runs and agrees with F64 within the type's precision. */
static void test_batch_norm_backward_half(void **state) {
  (void)state;
  mixp_session *s = mt_session();
  const int64_t shape[4] = {2, 3, 2, 2}, c = 3;
  double x[24], w[3], r[24];
  mt_fill(x, 24, -2.0, 2.0, 31);
  mt_fill(r, 24, -1.0, 1.0, 33);
  mt_fill(w, 3, 0.5, 1.5, 32);
  double *ref[2] = {NULL, NULL};
  const mixp_dtype dts[4] = {MIXP_F64, MIXP_F32, MIXP_F16, MIXP_BF16};
  for (int d = 0; d < 4; ++d) {
    mixp_tensor *xt = mt_tensor(s, dts[d], x, shape, 4), *wt = mt_tensor(s, dts[d], w, &c, 1);
    MT_OK(mixp_tensor_set_requires_grad(xt, 1));
    MT_OK(mixp_tensor_set_requires_grad(wt, 1));
    /* loss = sum(y * r) with fixed weights r. */
    mixp_tensor *rt = mt_tensor(s, dts[d], r, shape, 4);
    mixp_tensor *y = NULL, *sq = NULL, *loss = NULL, *gx = NULL, *gw = NULL;
    MT_OK(mixp_batch_norm(xt, wt, NULL, NULL, NULL, 1, 0.1, 1e-5, MIXP_NCHW, &y));
    MT_OK(mixp_mul(y, rt, &sq));
    MT_OK(mixp_mul_scalar(sq, 1.0, &loss));
    mixp_tensor *l2 = NULL;
    MT_OK(mixp_sum(loss, NULL, 0, 0, &l2));
    MT_OK(mixp_backward(l2, NULL));
    mixp_tensor_release(rt);
    MT_OK(mixp_tensor_grad(xt, &gx));
    MT_OK(mixp_tensor_grad(wt, &gw));
    assert_int_equal(mixp_tensor_dtype(gx), dts[d]);
    double *vx = mt_values(gx), *vw = mt_values(gw);
    if (d == 0) {
      ref[0] = vx;
      ref[1] = vw;
    } else {
      double t = dts[d] == MIXP_F32 ? 1e-4 : dts[d] == MIXP_F16 ? 2e-2 : 1e-1;
      mt_assert_close(vw, ref[1], 3, t, t);
      mt_assert_close(vx, ref[0], 24, t, t);
      free(vx);
      free(vw);
    }
    mixp_tensor_release(gx);
    mixp_tensor_release(gw);
    mixp_tensor_release(y);
    mixp_tensor_release(sq);
    mixp_tensor_release(loss);
    mixp_tensor_release(l2);
    mixp_tensor_release(xt);
    mixp_tensor_release(wt);
  }
  free(ref[0]);
  free(ref[1]);
  mixp_session_destroy(s);
}

/* ---- layer_norm ---------------------------------------------------------------------- */

typedef struct ln_ctx {
  int k, affine;
} ln_ctx;

static mixp_status ln_fn(mixp_tensor **in, int n, void *ctx, mixp_tensor **out) {
  (void)n;
  ln_ctx *c = (ln_ctx *)ctx;
  return mixp_layer_norm(in[0], c->k, c->affine ? in[1] : NULL, c->affine ? in[2] : NULL, 1e-5,
                         out);
}

static void test_layer_norm_forward(void **state) {
  (void)state;
  mixp_session *s = mt_session();
  const int64_t shape[3] = {2, 3, 4};
  double x[24], w[12], b[12], y[24];
  mt_fill(x, 24, -2.0, 5.0, 51);
  mt_fill(w, 12, 0.5, 1.5, 52);
  mt_fill(b, 12, -1.0, 1.0, 53);
  for (int k = 1; k <= 2; ++k) {
    const int64_t d = k == 1 ? 4 : 12, rows = 24 / d;
    for (int di = 0; di < 4; ++di) {
      const mixp_dtype dt = FLOATS[di];
      mixp_tensor *xt = mt_tensor(s, dt, x, shape, 3);
      mixp_tensor *wt = mt_tensor(s, dt, w, shape + 3 - k, k);
      mixp_tensor *bt = mt_tensor(s, dt, b, shape + 3 - k, k);
      double *xr = mt_values(xt), *wr = mt_values(wt), *br = mt_values(bt);
      mixp_tensor *out = NULL;
      MT_OK(mixp_layer_norm(xt, k, wt, bt, 1e-5, &out));
      ref_group_norm(xr, rows, d, 1, 1, wr, br, 1e-5, y);
      double *got = mt_values(out);
      mt_assert_close(got, y, 24, tol_for(dt) * 4, tol_for(dt));
      free(got);
      mixp_tensor_release(out);
      MT_OK(mixp_layer_norm(xt, k, NULL, NULL, 1e-5, &out));
      ref_group_norm(xr, rows, d, 1, 1, NULL, NULL, 1e-5, y);
      got = mt_values(out);
      mt_assert_close(got, y, 24, tol_for(dt) * 4, tol_for(dt));
      free(got);
      free(xr);
      free(wr);
      free(br);
      mixp_tensor_release(out);
      mixp_tensor_release(xt);
      mixp_tensor_release(wt);
      mixp_tensor_release(bt);
    }
  }
  mixp_session_destroy(s);
}

static void test_layer_norm_gradcheck(void **state) {
  (void)state;
  mixp_session *s = mt_session();
  const int64_t shape[3] = {2, 3, 4};
  double x[24], w[12], b[12];
  mt_fill(x, 24, -2.0, 2.0, 61);
  mt_fill(w, 12, 0.5, 1.5, 62);
  mt_fill(b, 12, -1.0, 1.0, 63);
  for (int k = 1; k <= 2; ++k)
    for (int affine = 0; affine <= 1; ++affine) {
      ln_ctx ctx = {k, affine};
      mt_input in[3] = {{x, shape, 3, 1, MIXP_F64},
                        {w, shape + 3 - k, k, 1, MIXP_F64},
                        {b, shape + 3 - k, k, 1, MIXP_F64}};
      mt_gradcheck(s, ln_fn, &ctx, in, affine ? 3 : 1, 1e-6, 1e-5);
    }
  mixp_session_destroy(s);
}

/* ---- group_norm ---------------------------------------------------------------------- */

typedef struct gn_ctx {
  int64_t groups;
  int affine;
} gn_ctx;

static mixp_status gn_fn(mixp_tensor **in, int n, void *ctx, mixp_tensor **out) {
  (void)n;
  gn_ctx *c = (gn_ctx *)ctx;
  return mixp_group_norm(in[0], c->groups, c->affine ? in[1] : NULL, c->affine ? in[2] : NULL,
                         1e-5, out);
}

static void test_group_norm_forward(void **state) {
  (void)state;
  mixp_session *s = mt_session();
  const int64_t shape[4] = {2, 6, 2, 2}, c = 6;
  double x[48], w[6], b[6], y[48];
  mt_fill(x, 48, -3.0, 4.0, 71);
  mt_fill(w, 6, 0.5, 1.5, 72);
  mt_fill(b, 6, -1.0, 1.0, 73);
  const int64_t groups[3] = {1, 2, 6};
  for (int gi = 0; gi < 3; ++gi)
    for (int di = 0; di < 4; ++di) {
      const mixp_dtype dt = FLOATS[di];
      mixp_tensor *xt = mt_tensor(s, dt, x, shape, 4);
      mixp_tensor *wt = mt_tensor(s, dt, w, &c, 1), *bt = mt_tensor(s, dt, b, &c, 1);
      double *xr = mt_values(xt), *wr = mt_values(wt), *br = mt_values(bt);
      mixp_tensor *out = NULL;
      MT_OK(mixp_group_norm(xt, groups[gi], wt, bt, 1e-5, &out));
      ref_group_norm(xr, 2, 6, 4, groups[gi], wr, br, 1e-5, y);
      double *got = mt_values(out);
      mt_assert_close(got, y, 48, tol_for(dt) * 4, tol_for(dt));
      free(got);
      free(xr);
      free(wr);
      free(br);
      mixp_tensor_release(out);
      mixp_tensor_release(xt);
      mixp_tensor_release(wt);
      mixp_tensor_release(bt);
    }
  mixp_session_destroy(s);
}

static void test_group_norm_gradcheck(void **state) {
  (void)state;
  mixp_session *s = mt_session();
  const int64_t shape[4] = {2, 4, 3, 1}, c = 4, shape2[2] = {3, 4};
  double x[24], w[4], b[4];
  mt_fill(x, 24, -2.0, 2.0, 81);
  mt_fill(w, 4, 0.5, 1.5, 82);
  mt_fill(b, 4, -1.0, 1.0, 83);
  const int64_t groups[2] = {2, 4};
  for (int gi = 0; gi < 2; ++gi)
    for (int affine = 0; affine <= 1; ++affine) {
      gn_ctx ctx = {groups[gi], affine};
      mt_input in[3] = {{x, shape, 4, 1, MIXP_F64}, {w, &c, 1, 1, MIXP_F64}, {b, &c, 1, 1, MIXP_F64}};
      mt_gradcheck(s, gn_fn, &ctx, in, affine ? 3 : 1, 1e-6, 1e-5);
    }
  /* [N, C] input without spatial dims. */
  gn_ctx ctx = {2, 1};
  mt_input in[3] = {{x, shape2, 2, 1, MIXP_F64}, {w, &c, 1, 1, MIXP_F64}, {b, &c, 1, 1, MIXP_F64}};
  mt_gradcheck(s, gn_fn, &ctx, in, 3, 1e-6, 1e-5);
  mixp_session_destroy(s);
}

/* ---- determinism -------------------------------------------------------------------- */

/* A tensor large enough to be split into many chunks gives bitwise the same
 * statistics and gradients on 1 and 2 threads. */
static void test_norm_thread_count_invariant(void **state) {
  (void)state;
  double *res[2][3] = {{0}};
  const int64_t shape[4] = {8, 16, 24, 24}, c = 16;
  const int64_t n = 8 * 16 * 24 * 24;
  double *x = (double *)malloc((size_t)n * sizeof(double));
  mt_fill(x, n, -1.0, 3.0, 91);
  for (int t = 0; t < 2; ++t) {
    mixp_session_options o;
    mixp_session_options_init(&o);
    o.num_threads = t + 1;
    mixp_session *s = NULL;
    MT_OK(mixp_session_create(&o, &s));
    mixp_tensor *xt = mt_tensor(s, MIXP_F32, x, shape, 4);
    double ones[16];
    for (int i = 0; i < 16; ++i) ones[i] = 1.0 + 0.01 * i;
    mixp_tensor *wt = mt_tensor(s, MIXP_F32, ones, &c, 1);
    MT_OK(mixp_tensor_set_requires_grad(xt, 1));
    MT_OK(mixp_tensor_set_requires_grad(wt, 1));
    mixp_tensor *y = NULL, *sq = NULL, *l = NULL, *gx = NULL, *gw = NULL;
    MT_OK(mixp_batch_norm(xt, wt, NULL, NULL, NULL, 1, 0.1, 1e-5, MIXP_NCHW, &y));
    MT_OK(mixp_mul(y, xt, &sq));
    MT_OK(mixp_sum(sq, NULL, 0, 0, &l));
    MT_OK(mixp_backward(l, NULL));
    MT_OK(mixp_tensor_grad(xt, &gx));
    MT_OK(mixp_tensor_grad(wt, &gw));
    res[t][0] = mt_values(y);
    res[t][1] = mt_values(gx);
    res[t][2] = mt_values(gw);
    mixp_tensor *objs[7] = {xt, wt, y, sq, l, gx, gw};
    for (int i = 0; i < 7; ++i) mixp_tensor_release(objs[i]);
    mixp_session_destroy(s);
  }
  assert_memory_equal(res[0][0], res[1][0], (size_t)n * sizeof(double));
  assert_memory_equal(res[0][1], res[1][1], (size_t)n * sizeof(double));
  assert_memory_equal(res[0][2], res[1][2], 16 * sizeof(double));
  for (int t = 0; t < 2; ++t)
    for (int i = 0; i < 3; ++i) free(res[t][i]);
  free(x);
}

/* ---- misuse -------------------------------------------------------------------------- */

static void test_batch_norm_misuse(void **state) {
  (void)state;
  mixp_session *s = mt_session();
  const int64_t shape[4] = {2, 3, 2, 2}, c = 3, c4 = 4, one[2] = {1, 3};
  double x[24], v[4] = {0.1, 0.2, 0.3, 0.4}, vr[3] = {1, 2, 3};
  mt_fill(x, 24, -1, 1, 1);
  mixp_tensor *xt = mt_tensor(s, MIXP_F32, x, shape, 4), *out = NULL;
  mixp_tensor *w3 = mt_tensor(s, MIXP_F32, v, &c, 1), *w4 = mt_tensor(s, MIXP_F32, v, &c4, 1);
  mixp_tensor *w64 = mt_tensor(s, MIXP_F64, v, &c, 1);
  mixp_tensor *rm = mt_tensor(s, MIXP_F32, v, &c, 1), *rv = mt_tensor(s, MIXP_F32, vr, &c, 1);
  mixp_tensor *x1 = mt_tensor(s, MIXP_F32, x, &c, 1), *xone = mt_tensor(s, MIXP_F32, x, one, 2);
  mixp_tensor *xi = NULL, *rmg = NULL, *rmi = NULL;
  MT_OK(mixp_cast(xt, MIXP_I64, &xi));
  MT_OK(mixp_cast(rm, MIXP_I32, &rmi));
  MT_OK(mixp_tensor_zeros(s, MIXP_F32, &c, 1, &rmg));
  MT_OK(mixp_tensor_set_requires_grad(rmg, 1));

  MT_FAILS(mixp_batch_norm(xt, w3, w3, rm, rv, 1, 0.1, 1e-5, MIXP_NCHW, NULL),
           MIXP_ERR_INVALID_ARGUMENT, "out");
  MT_FAILS(mixp_batch_norm(NULL, w3, w3, rm, rv, 1, 0.1, 1e-5, MIXP_NCHW, &out),
           MIXP_ERR_INVALID_ARGUMENT, "x is NULL");
  MT_FAILS(mixp_batch_norm(xi, NULL, NULL, NULL, NULL, 1, 0.1, 1e-5, MIXP_NCHW, &out),
           MIXP_ERR_DTYPE, "x");
  MT_FAILS(mixp_batch_norm(xt, w4, NULL, rm, rv, 1, 0.1, 1e-5, MIXP_NCHW, &out), MIXP_ERR_SHAPE,
           "weight must be [3]");
  MT_FAILS(mixp_batch_norm(xt, w3, w4, rm, rv, 1, 0.1, 1e-5, MIXP_NCHW, &out), MIXP_ERR_SHAPE,
           "bias");
  MT_FAILS(mixp_batch_norm(xt, w64, NULL, rm, rv, 1, 0.1, 1e-5, MIXP_NCHW, &out), MIXP_ERR_DTYPE,
           "weight");
  MT_FAILS(mixp_batch_norm(xt, w3, w3, w4, rv, 1, 0.1, 1e-5, MIXP_NCHW, &out), MIXP_ERR_SHAPE,
           "running_mean");
  MT_FAILS(mixp_batch_norm(xt, w3, w3, rm, rmi, 1, 0.1, 1e-5, MIXP_NCHW, &out), MIXP_ERR_DTYPE,
           "running_var");
  MT_FAILS(mixp_batch_norm(xt, w3, w3, rmg, rv, 1, 0.1, 1e-5, MIXP_NCHW, &out), MIXP_ERR_STATE,
           "running_mean requires grad");
  MT_FAILS(mixp_batch_norm(xt, w3, w3, rm, NULL, 0, 0.1, 1e-5, MIXP_NCHW, &out),
           MIXP_ERR_INVALID_ARGUMENT, "running_var is NULL");
  MT_FAILS(mixp_batch_norm(xt, w3, w3, rm, rv, 2, 0.1, 1e-5, MIXP_NCHW, &out),
           MIXP_ERR_INVALID_ARGUMENT, "training");
  MT_FAILS(mixp_batch_norm(xt, w3, w3, rm, rv, 1, 0.1, 1e-5, (mixp_layout)7, &out),
           MIXP_ERR_INVALID_ARGUMENT, "layout");
  MT_FAILS(mixp_batch_norm(xt, w3, w3, rm, rv, 1, 0.1, -1.0, MIXP_NCHW, &out),
           MIXP_ERR_INVALID_ARGUMENT, "eps");
  MT_FAILS(mixp_batch_norm(xt, w3, w3, rm, rv, 1, NAN, 1e-5, MIXP_NCHW, &out),
           MIXP_ERR_INVALID_ARGUMENT, "momentum");
  MT_FAILS(mixp_batch_norm(x1, NULL, NULL, NULL, NULL, 1, 0.1, 1e-5, MIXP_NCHW, &out),
           MIXP_ERR_SHAPE, "at least 2 dims");
  MT_FAILS(mixp_batch_norm(xone, NULL, NULL, rm, rv, 1, 0.1, 1e-5, MIXP_NCHW, &out),
           MIXP_ERR_SHAPE, "more than 1 value per channel");
  /* NHWC takes the channel from the last dim: 2 channels here, not 3. */
  MT_FAILS(mixp_batch_norm(xt, w3, NULL, NULL, NULL, 1, 0.1, 1e-5, MIXP_NHWC, &out),
           MIXP_ERR_SHAPE, "weight must be [2]");
  assert_null(out);
  /* None of the failures touched the running statistics. */
  double *gm = mt_values(rm), *gv = mt_values(rv);
  double fm[3] = {(float)0.1, (float)0.2, (float)0.3};
  mt_assert_close(gm, fm, 3, 0, 0);
  mt_assert_close(gv, vr, 3, 0, 0);
  free(gm);
  free(gv);
  /* A tensor of another session. */
  mixp_session *s2 = mt_session();
  mixp_tensor *other = mt_tensor(s2, MIXP_F32, v, &c, 1);
  MT_FAILS(mixp_batch_norm(xt, other, NULL, NULL, NULL, 1, 0.1, 1e-5, MIXP_NCHW, &out),
           MIXP_ERR_DEVICE, "different sessions");
  mixp_tensor_release(other);
  mixp_session_destroy(s2);

  mixp_tensor *objs[11] = {xt, w3, w4, w64, rm, rv, x1, xone, xi, rmg, rmi};
  for (int i = 0; i < 11; ++i) mixp_tensor_release(objs[i]);
  mixp_session_destroy(s);
}

static void test_layer_group_norm_misuse(void **state) {
  (void)state;
  mixp_session *s = mt_session();
  const int64_t shape[3] = {2, 4, 3}, c3 = 3, c4 = 4;
  double x[24], v[4] = {1, 2, 3, 4};
  mt_fill(x, 24, -1, 1, 1);
  mixp_tensor *xt = mt_tensor(s, MIXP_F32, x, shape, 3), *out = NULL;
  mixp_tensor *w3 = mt_tensor(s, MIXP_F32, v, &c3, 1), *w4 = mt_tensor(s, MIXP_F32, v, &c4, 1);
  mixp_tensor *w3h = mt_tensor(s, MIXP_F16, v, &c3, 1), *xi = NULL, *x1 = mt_tensor(s, MIXP_F32, v, &c4, 1);
  MT_OK(mixp_cast(xt, MIXP_I32, &xi));

  MT_FAILS(mixp_layer_norm(xt, 1, w3, w3, 1e-5, NULL), MIXP_ERR_INVALID_ARGUMENT, "out");
  MT_FAILS(mixp_layer_norm(NULL, 1, w3, w3, 1e-5, &out), MIXP_ERR_INVALID_ARGUMENT, "x is NULL");
  MT_FAILS(mixp_layer_norm(xi, 1, NULL, NULL, 1e-5, &out), MIXP_ERR_DTYPE, "x");
  MT_FAILS(mixp_layer_norm(xt, 0, NULL, NULL, 1e-5, &out), MIXP_ERR_INVALID_ARGUMENT,
           "normalized_ndim");
  MT_FAILS(mixp_layer_norm(xt, 4, NULL, NULL, 1e-5, &out), MIXP_ERR_INVALID_ARGUMENT,
           "normalized_ndim");
  MT_FAILS(mixp_layer_norm(xt, 1, w4, NULL, 1e-5, &out), MIXP_ERR_SHAPE, "weight must be [3]");
  MT_FAILS(mixp_layer_norm(xt, 2, w3, NULL, 1e-5, &out), MIXP_ERR_SHAPE, "weight must be [4,3]");
  MT_FAILS(mixp_layer_norm(xt, 1, w3, w4, 1e-5, &out), MIXP_ERR_SHAPE, "bias");
  MT_FAILS(mixp_layer_norm(xt, 1, w3h, NULL, 1e-5, &out), MIXP_ERR_DTYPE, "weight");
  MT_FAILS(mixp_layer_norm(xt, 1, NULL, NULL, NAN, &out), MIXP_ERR_INVALID_ARGUMENT, "eps");

  MT_FAILS(mixp_group_norm(xt, 2, w4, w4, 1e-5, NULL), MIXP_ERR_INVALID_ARGUMENT, "out");
  MT_FAILS(mixp_group_norm(NULL, 2, w4, w4, 1e-5, &out), MIXP_ERR_INVALID_ARGUMENT, "x is NULL");
  MT_FAILS(mixp_group_norm(xi, 2, NULL, NULL, 1e-5, &out), MIXP_ERR_DTYPE, "x");
  MT_FAILS(mixp_group_norm(xt, 3, NULL, NULL, 1e-5, &out), MIXP_ERR_INVALID_ARGUMENT, "groups");
  MT_FAILS(mixp_group_norm(xt, 0, NULL, NULL, 1e-5, &out), MIXP_ERR_INVALID_ARGUMENT, "groups");
  MT_FAILS(mixp_group_norm(xt, 2, w3, NULL, 1e-5, &out), MIXP_ERR_SHAPE, "weight must be [4]");
  MT_FAILS(mixp_group_norm(xt, 2, w4, w3, 1e-5, &out), MIXP_ERR_SHAPE, "bias");
  MT_FAILS(mixp_group_norm(x1, 1, NULL, NULL, 1e-5, &out), MIXP_ERR_SHAPE, "at least 2 dims");
  MT_FAILS(mixp_group_norm(xt, 2, NULL, NULL, -1e-3, &out), MIXP_ERR_INVALID_ARGUMENT, "eps");
  assert_null(out);
  mixp_tensor *objs[6] = {xt, w3, w4, w3h, xi, x1};
  for (int i = 0; i < 6; ++i) mixp_tensor_release(objs[i]);
  mixp_session_destroy(s);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_batch_norm_train_forward),
      cmocka_unit_test(test_batch_norm_layouts_agree),
      cmocka_unit_test(test_batch_norm_running_stats),
      cmocka_unit_test(test_batch_norm_failed_call_keeps_stats),
      cmocka_unit_test(test_batch_norm_gradcheck),
      cmocka_unit_test(test_batch_norm_long_rows),
      cmocka_unit_test(test_batch_norm_nhwc_many_rows),
      cmocka_unit_test(test_batch_norm_backward_half),
      cmocka_unit_test(test_batch_norm_mixed_dtypes),
      cmocka_unit_test(test_layer_norm_forward),
      cmocka_unit_test(test_layer_norm_gradcheck),
      cmocka_unit_test(test_group_norm_forward),
      cmocka_unit_test(test_group_norm_gradcheck),
      cmocka_unit_test(test_norm_thread_count_invariant),
      cmocka_unit_test(test_batch_norm_misuse),
      cmocka_unit_test(test_layer_group_norm_misuse),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
