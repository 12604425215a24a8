/* embedding (gather, scatter-add backward with padding_idx and repeated
 * indices, index validation) and scaled_dot_product_attention (against a
 * double reference, causal and not, L != S, dropout reproducibility,
 * gradient checks), with misuse of both. */
#include "test_util.h"

static mixp_tensor *i64_tensor(mixp_session *s, const int64_t *v, const int64_t *shape, int nd) {
  int64_t n = 1;
  for (int i = 0; i < nd; ++i) n *= shape[i];
  mixp_tensor *t = NULL;
  MT_OK(mixp_tensor_from_host(s, v, (size_t)n * sizeof(int64_t), MIXP_I64, shape, nd, &t));
  return t;
}

/* ---- embedding ------------------------------------------------------------------------ */

static void test_embedding_forward(void **state) {
  (void)state;
  mixp_session *s = mt_session();
  const int64_t wshape[2] = {5, 3}, ishape[2] = {2, 3};
  const int64_t idx[6] = {4, 0, 2, 2, 4, 1};
  double w[15];
  mt_fill(w, 15, -2.0, 2.0, 1);
  const mixp_dtype dts[4] = {MIXP_F64, MIXP_F32, MIXP_F16, MIXP_BF16};
  mixp_tensor *it = i64_tensor(s, idx, ishape, 2);
  for (int d = 0; d < 4; ++d) {
    mixp_tensor *wt = mt_tensor(s, dts[d], w, wshape, 2), *out = NULL;
    MT_OK(mixp_embedding(wt, it, -1, &out));
    assert_int_equal(mixp_tensor_dtype(out), dts[d]);
    int64_t shape[4];
    int nd = 0;
    MT_OK(mixp_tensor_shape(out, shape, 4, &nd));
    assert_int_equal(nd, 3);
    assert_int_equal(shape[0], 2);
    assert_int_equal(shape[1], 3);
    assert_int_equal(shape[2], 3);
    double *wv = mt_values(wt), *ov = mt_values(out), want[18];
    for (int i = 0; i < 6; ++i)
      for (int j = 0; j < 3; ++j) want[i * 3 + j] = wv[idx[i] * 3 + j];
    mt_assert_close(ov, want, 18, 0, 0); /* an exact copy */
    free(wv);
    free(ov);
    mixp_tensor_release(out);
    mixp_tensor_release(wt);
  }
  /* A 0-d index picks one row: [D]. */
  const int64_t one = 3;
  mixp_tensor *i0 = NULL, *wt = mt_tensor(s, MIXP_F32, w, wshape, 2), *out = NULL;
  MT_OK(mixp_tensor_from_host(s, &one, sizeof one, MIXP_I64, NULL, 0, &i0));
  MT_OK(mixp_embedding(wt, i0, -1, &out));
  assert_int_equal(mixp_tensor_ndim(out), 1);
  assert_int_equal(mixp_tensor_dim(out, 0), 3);
  mixp_tensor_release(out);
  mixp_tensor_release(i0);
  mixp_tensor_release(wt);
  mixp_tensor_release(it);
  mixp_session_destroy(s);
}

typedef struct emb_ctx {
  int64_t padding_idx;
} emb_ctx;

static mixp_status emb_fn(mixp_tensor **in, int n, void *ctx, mixp_tensor **out) {
  (void)n;
  return mixp_embedding(in[0], in[1], ((emb_ctx *)ctx)->padding_idx, out);
}

static void test_embedding_gradcheck(void **state) {
  (void)state;
  mixp_session *s = mt_session();
  const int64_t wshape[2] = {6, 2}, ishape[2] = {2, 4};
  const double idx[8] = {1, 3, 1, 5, 0, 3, 3, 2}; /* repeats; row 4 unused */
  double w[12];
  mt_fill(w, 12, -1.0, 1.0, 2);
  /* With padding_idx = 4, a row no index picks, the numeric derivative is
   * zero there too; a picked padding row is covered below, where the
   * gradient deliberately differs from the derivative. */
  const int64_t pads[2] = {-1, 4};
  for (int p = 0; p < 2; ++p) {
    emb_ctx ctx = {pads[p]};
    mt_input in[2] = {{w, wshape, 2, 1, MIXP_F64}, {idx, ishape, 2, 0, MIXP_I64}};
    mt_gradcheck(s, emb_fn, &ctx, in, 2, 1e-8, 1e-7);
  }
  mixp_session_destroy(s);
}

/* The gradient of sum(out * g) is the scatter-add of g's rows, with the
 * padding row left at zero (its forward value is still picked). */
static void test_embedding_backward_padding(void **state) {
  (void)state;
  mixp_session *s = mt_session();
  const int64_t wshape[2] = {4, 2}, ishape[1] = {5}, gshape[2] = {5, 2};
  const int64_t idx[5] = {2, 0, 2, 3, 2};
  double w[8], g[10];
  mt_fill(w, 8, -1.0, 1.0, 3);
  mt_fill(g, 10, -1.0, 1.0, 4);
  const mixp_dtype dts[4] = {MIXP_F64, MIXP_F32, MIXP_F16, MIXP_BF16};
  for (int d = 0; d < 4; ++d)
    for (int pad = -1; pad <= 2; pad += 3) {
      mixp_tensor *wt = mt_tensor(s, dts[d], w, wshape, 2), *it = i64_tensor(s, idx, ishape, 1);
      mixp_tensor *gt = mt_tensor(s, dts[d], g, gshape, 2), *out = NULL, *pr = NULL, *l = NULL,
                  *gw = NULL;
      MT_OK(mixp_tensor_set_requires_grad(wt, 1));
      MT_OK(mixp_embedding(wt, it, pad, &out));
      double *wv = mt_values(wt), *ov = mt_values(out);
      for (int j = 0; j < 2; ++j) assert_true(ov[0 * 2 + j] == wv[2 * 2 + j]); /* padding row still read */
      MT_OK(mixp_mul(out, gt, &pr));
      MT_OK(mixp_sum(pr, NULL, 0, 0, &l));
      MT_OK(mixp_backward(l, NULL));
      MT_OK(mixp_tensor_grad(wt, &gw));
      double *gv = mt_values(gw), *gr = mt_values(gt), want[8] = {0};
      for (int i = 0; i < 5; ++i)
        if (idx[i] != pad)
          for (int j = 0; j < 2; ++j) want[idx[i] * 2 + j] += gr[i * 2 + j];
      const double tol = dts[d] == MIXP_F64 ? 1e-15 : dts[d] == MIXP_F32 ? 1e-6 : 2e-2;
      mt_assert_close(gv, want, 8, tol, tol);
      if (pad == 2) assert_true(gv[4] == 0.0 && gv[5] == 0.0);
      free(wv);
      free(ov);
      free(gv);
      free(gr);
      mixp_tensor *objs[7] = {wt, it, gt, out, pr, l, gw};
      for (int i = 0; i < 7; ++i) mixp_tensor_release(objs[i]);
    }
  mixp_session_destroy(s);
}

/* A bad index fails the call on the CPU, which changes nothing; a device
 * checks the indices where they live and fails the next call that waits for
 * it anyway (the read-back, before it writes), naming the same position and
 * value; the session stays usable and the bad row is zeros
 * (Backend::check_indices). */
static void expect_bad_index(mixp_tensor *w, mixp_tensor *idx, const char *needle) {
  mixp_tensor *out = NULL;
  if (mt_on_cpu()) {
    MT_FAILS(mixp_embedding(w, idx, -1, &out), MIXP_ERR_INVALID_ARGUMENT, needle);
    assert_null(out);
    return;
  }
  MT_OK(mixp_embedding(w, idx, -1, &out));
  float buf[16];
  for (int i = 0; i < 16; ++i) buf[i] = 42.0f;
  const size_t nb = (size_t)mixp_tensor_numel(out) * sizeof(float);
  assert_true(nb <= sizeof buf);
  MT_FAILS(mixp_tensor_to_host(out, buf, nb), MIXP_ERR_INVALID_ARGUMENT, needle);
  assert_non_null(strstr(mixp_last_error(), "(detected on the device)"));
  assert_true(buf[0] == 42.0f); /* the failed read-back wrote nothing */
  MT_OK(mixp_tensor_to_host(out, buf, nb));
  mixp_tensor_release(out);
}

static void test_embedding_misuse(void **state) {
  (void)state;
  mixp_session *s = mt_session();
  const int64_t wshape[2] = {4, 2}, ishape[1] = {4}, v1 = 8;
  const int64_t good[4] = {0, 1, 2, 3}, bad[4] = {0, 3, 7, -1}, neg[4] = {1, -2, 0, 0};
  double w[8];
  mt_fill(w, 8, -1.0, 1.0, 5);
  mixp_tensor *wt = mt_tensor(s, MIXP_F32, w, wshape, 2), *w1 = mt_tensor(s, MIXP_F32, w, &v1, 1);
  mixp_tensor *it = i64_tensor(s, good, ishape, 1), *ib = i64_tensor(s, bad, ishape, 1);
  mixp_tensor *in = i64_tensor(s, neg, ishape, 1), *if32 = NULL, *wi = NULL, *out = NULL;
  MT_OK(mixp_cast(it, MIXP_F32, &if32));
  MT_OK(mixp_cast(wt, MIXP_I32, &wi));
  MT_FAILS(mixp_embedding(NULL, it, -1, &out), MIXP_ERR_INVALID_ARGUMENT, "weight is NULL");
  MT_FAILS(mixp_embedding(wt, NULL, -1, &out), MIXP_ERR_INVALID_ARGUMENT, "indices is NULL");
  MT_FAILS(mixp_embedding(wt, it, -1, NULL), MIXP_ERR_INVALID_ARGUMENT, "out is NULL");
  MT_FAILS(mixp_embedding(wt, if32, -1, &out), MIXP_ERR_DTYPE, "indices must have dtype i64");
  MT_FAILS(mixp_embedding(wi, it, -1, &out), MIXP_ERR_DTYPE, "weight");
  MT_FAILS(mixp_embedding(w1, it, -1, &out), MIXP_ERR_SHAPE, "weight must be 2-D");
  MT_FAILS(mixp_embedding(wt, it, 4, &out), MIXP_ERR_INVALID_ARGUMENT, "padding_idx = 4");
  MT_FAILS(mixp_embedding(wt, it, -2, &out), MIXP_ERR_INVALID_ARGUMENT, "padding_idx = -2");
  /* The first bad index is named: position 2 holds 7. */
  expect_bad_index(wt, ib,
                   "mixp_embedding: indices[2] = 7 is out of range [0, 4) (flat position in "
                   "indices of shape [4])");
  expect_bad_index(wt, in, "indices[1] = -2");
  assert_null(out);
  mixp_session *s2 = mt_session();
  mixp_tensor *other = i64_tensor(s2, good, ishape, 1);
  MT_FAILS(mixp_embedding(wt, other, -1, &out), MIXP_ERR_DEVICE, "different sessions");
  mixp_tensor_release(other);
  mixp_session_destroy(s2);
  mixp_tensor *objs[7] = {wt, w1, it, ib, in, if32, wi};
  for (int i = 0; i < 7; ++i) mixp_tensor_release(objs[i]);
  mixp_session_destroy(s);
}

/* ---- attention ----------------------------------------------------------------------- */

/* out[b] = softmax(q[b] k[b]^T * scale + mask) v[b] in double. */
static void ref_attention(const double *q, const double *k, const double *v, int64_t batch,
                          int64_t l, int64_t sk, int64_t e, int64_t ev, int causal, double scale,
                          double *out) {
  double row[16];
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t i = 0; i < l; ++i) {
      double mx = -INFINITY, sum = 0;
      for (int64_t j = 0; j < sk; ++j) {
        double d = 0;
        for (int64_t t = 0; t < e; ++t) d += q[(b * l + i) * e + t] * k[(b * sk + j) * e + t];
        row[j] = (causal && j > i) ? -INFINITY : d * scale;
        if (row[j] > mx) mx = row[j];
      }
      for (int64_t j = 0; j < sk; ++j) sum += (row[j] = exp(row[j] - mx));
      for (int64_t t = 0; t < ev; ++t) {
        double acc = 0;
        for (int64_t j = 0; j < sk; ++j) acc += row[j] / sum * v[(b * sk + j) * ev + t];
        out[(b * l + i) * ev + t] = acc;
      }
    }
}

typedef struct attn_geom {
  int64_t l, s, e, ev;
} attn_geom;

static const attn_geom GEOMS[3] = {{3, 3, 4, 2}, {2, 5, 3, 4}, {4, 2, 2, 3}};

static void test_attention_forward(void **state) {
  (void)state;
  mixp_session *s = mt_session();
  const mixp_dtype dts[4] = {MIXP_F64, MIXP_F32, MIXP_F16, MIXP_BF16};
  const double tols[4] = {1e-12, 2e-6, 4e-3, 3e-2};
  for (int gi = 0; gi < 3; ++gi) {
    const attn_geom g = GEOMS[gi];
    const int64_t qs[4] = {2, 2, g.l, g.e}, ks[4] = {2, 2, g.s, g.e}, vs[4] = {2, 2, g.s, g.ev};
    double q[128], k[128], v[128], want[128];
    mt_fill(q, 4 * g.l * g.e, -1.5, 1.5, 10 + (uint64_t)gi);
    mt_fill(k, 4 * g.s * g.e, -1.5, 1.5, 20 + (uint64_t)gi);
    mt_fill(v, 4 * g.s * g.ev, -1.0, 1.0, 30 + (uint64_t)gi);
    for (int causal = 0; causal <= 1; ++causal)
      for (int sc = 0; sc <= 1; ++sc)
        for (int d = 0; d < 4; ++d) {
          mixp_tensor *qt = mt_tensor(s, dts[d], q, qs, 4), *kt = mt_tensor(s, dts[d], k, ks, 4);
          mixp_tensor *vt = mt_tensor(s, dts[d], v, vs, 4), *out = NULL;
          const double scale = sc ? 0.7 : 0.0;
          MT_OK(mixp_scaled_dot_product_attention(qt, kt, vt, causal, 0.0, scale, &out));
          assert_int_equal(mixp_tensor_dtype(out), dts[d]);
          assert_int_equal(mixp_tensor_dim(out, 2), g.l);
          assert_int_equal(mixp_tensor_dim(out, 3), g.ev);
          double *qv = mt_values(qt), *kv = mt_values(kt), *vv = mt_values(vt), *ov = mt_values(out);
          ref_attention(qv, kv, vv, 4, g.l, g.s, g.e, g.ev, causal, sc ? 0.7 : 1.0 / sqrt((double)g.e),
                        want);
          mt_assert_close(ov, want, 4 * g.l * g.ev, tols[d], tols[d]);
          free(qv);
          free(kv);
          free(vv);
          free(ov);
          mixp_tensor_release(qt);
          mixp_tensor_release(kt);
          mixp_tensor_release(vt);
          mixp_tensor_release(out);
        }
  }
  mixp_session_destroy(s);
}

typedef struct attn_ctx {
  mixp_session *s;
  int causal;
  double p;
} attn_ctx;

static mixp_status attn_fn(mixp_tensor **in, int n, void *ctx, mixp_tensor **out) {
  (void)n;
  attn_ctx *c = (attn_ctx *)ctx;
  /* The same seed before every evaluation: the same dropout mask each time. */
  if (c->p > 0) MT_OK(mixp_session_set_seed(c->s, 4242));
  return mixp_scaled_dot_product_attention(in[0], in[1], in[2], c->causal, c->p, 0.0, out);
}

static void test_attention_gradcheck(void **state) {
  (void)state;
  mixp_session *s = mt_session();
  for (int gi = 0; gi < 3; ++gi) {
    const attn_geom g = GEOMS[gi];
    const int64_t qs[3] = {2, g.l, g.e}, ks[3] = {2, g.s, g.e}, vs[3] = {2, g.s, g.ev};
    double q[64], k[64], v[64];
    mt_fill(q, 2 * g.l * g.e, -1.5, 1.5, 40 + (uint64_t)gi);
    mt_fill(k, 2 * g.s * g.e, -1.5, 1.5, 50 + (uint64_t)gi);
    mt_fill(v, 2 * g.s * g.ev, -1.0, 1.0, 60 + (uint64_t)gi);
    for (int causal = 0; causal <= 1; ++causal)
      for (int dp = 0; dp <= 1; ++dp) {
        attn_ctx ctx = {s, causal, dp ? 0.3 : 0.0};
        mt_input in[3] = {{q, qs, 3, 1, MIXP_F64}, {k, ks, 3, 1, MIXP_F64}, {v, vs, 3, 1, MIXP_F64}};
        mt_gradcheck(s, attn_fn, &ctx, in, 3, 1e-7, 1e-6);
      }
  }
  mixp_session_destroy(s);
}

/* Dropout draws from the session's Philox stream: the same seed gives the
 * same output, another draw another one; p = 0 is exactly no dropout; a
 * failed call consumes no random numbers. */
static void test_attention_dropout_rng(void **state) {
  (void)state;
  mixp_session *s = mt_session();
  const int64_t qs[3] = {2, 8, 4}, vs[3] = {2, 8, 6};
  double q[64], k[64], v[96];
  mt_fill(q, 64, -1, 1, 70);
  mt_fill(k, 64, -1, 1, 71);
  mt_fill(v, 96, -1, 1, 72);
  mixp_tensor *qt = mt_tensor(s, MIXP_F32, q, qs, 3), *kt = mt_tensor(s, MIXP_F32, k, qs, 3);
  mixp_tensor *vt = mt_tensor(s, MIXP_F32, v, vs, 3);
  mixp_tensor *a = NULL, *b = NULL, *c = NULL, *nodrop = NULL, *zero = NULL;
  MT_OK(mixp_session_set_seed(s, 9));
  MT_OK(mixp_scaled_dot_product_attention(qt, kt, vt, 1, 0.5, 0.0, &a));
  MT_OK(mixp_scaled_dot_product_attention(qt, kt, vt, 1, 0.5, 0.0, &c));
  MT_OK(mixp_session_set_seed(s, 9));
  /* A call that fails the numerics check draws nothing. */
  double bad[96];
  memcpy(bad, v, sizeof bad);
  bad[5] = NAN;
  mixp_tensor *vbad = mt_tensor(s, MIXP_F32, bad, vs, 3), *dummy = NULL;
  MT_OK(mixp_session_set_numerics_check(s, MIXP_NUMERICS_ERROR));
  MT_FAILS(mixp_scaled_dot_product_attention(qt, kt, vbad, 1, 0.5, 0.0, &dummy), MIXP_ERR_NUMERIC,
           "scaled_dot_product_attention");
  MT_OK(mixp_session_set_numerics_check(s, MIXP_NUMERICS_OFF));
  MT_OK(mixp_scaled_dot_product_attention(qt, kt, vt, 1, 0.5, 0.0, &b));
  MT_OK(mixp_scaled_dot_product_attention(qt, kt, vt, 1, 0.0, 0.0, &nodrop));
  MT_OK(mixp_scaled_dot_product_attention(qt, kt, vt, 1, 0.0, 0.0, &zero));
  double *va = mt_values(a), *vb = mt_values(b), *vc = mt_values(c), *vn = mt_values(nodrop),
         *vz = mt_values(zero);
  assert_memory_equal(va, vb, 96 * sizeof(double));
  assert_memory_equal(vn, vz, 96 * sizeof(double));
  int differ_c = 0, differ_n = 0;
  for (int i = 0; i < 96; ++i) {
    differ_c |= va[i] != vc[i];
    differ_n |= va[i] != vn[i];
  }
  assert_true(differ_c);
  assert_true(differ_n);
  free(va);
  free(vb);
  free(vc);
  free(vn);
  free(vz);
  mixp_tensor *objs[9] = {qt, kt, vt, a, b, c, nodrop, zero, vbad};
  for (int i = 0; i < 9; ++i) mixp_tensor_release(objs[i]);
  mixp_session_destroy(s);
}

static void test_attention_misuse(void **state) {
  (void)state;
  mixp_session *s = mt_session();
  const int64_t qs[3] = {2, 3, 4}, ks_e[3] = {2, 5, 3}, vs_s[3] = {2, 4, 4}, bs[3] = {3, 3, 4},
                one[1] = {4}, empty_k[3] = {2, 0, 4};
  double d[64] = {0};
  mt_fill(d, 64, -1, 1, 80);
  mixp_tensor *q = mt_tensor(s, MIXP_F32, d, qs, 3), *q64 = mt_tensor(s, MIXP_F64, d, qs, 3);
  mixp_tensor *ke = mt_tensor(s, MIXP_F32, d, ks_e, 3), *vsz = mt_tensor(s, MIXP_F32, d, vs_s, 3);
  mixp_tensor *qb = mt_tensor(s, MIXP_F32, d, bs, 3), *q1 = mt_tensor(s, MIXP_F32, d, one, 1);
  mixp_tensor *k0 = mt_tensor(s, MIXP_F32, d, empty_k, 3), *qi = NULL, *out = NULL;
  MT_OK(mixp_cast(q, MIXP_I32, &qi));
  const char *fn = "mixp_scaled_dot_product_attention";
  MT_FAILS(mixp_scaled_dot_product_attention(NULL, q, q, 0, 0, 0, &out), MIXP_ERR_INVALID_ARGUMENT,
           "q is NULL");
  MT_FAILS(mixp_scaled_dot_product_attention(q, NULL, q, 0, 0, 0, &out), MIXP_ERR_INVALID_ARGUMENT,
           "k is NULL");
  MT_FAILS(mixp_scaled_dot_product_attention(q, q, NULL, 0, 0, 0, &out), MIXP_ERR_INVALID_ARGUMENT,
           "v is NULL");
  MT_FAILS(mixp_scaled_dot_product_attention(q, q, q, 0, 0, 0, NULL), MIXP_ERR_INVALID_ARGUMENT,
           "out is NULL");
  MT_FAILS(mixp_scaled_dot_product_attention(q, q64, q, 0, 0, 0, &out), MIXP_ERR_DTYPE, "dtypes differ");
  MT_FAILS(mixp_scaled_dot_product_attention(q, q, q64, 0, 0, 0, &out), MIXP_ERR_DTYPE, "dtypes differ");
  MT_FAILS(mixp_scaled_dot_product_attention(qi, q, q, 0, 0, 0, &out), MIXP_ERR_DTYPE, "q must be a float");
  MT_FAILS(mixp_scaled_dot_product_attention(q, ke, ke, 0, 0, 0, &out), MIXP_ERR_SHAPE, "embedding size E");
  MT_FAILS(mixp_scaled_dot_product_attention(q, q, vsz, 0, 0, 0, &out), MIXP_ERR_SHAPE, "sequence length S");
  MT_FAILS(mixp_scaled_dot_product_attention(qb, q, q, 0, 0, 0, &out), MIXP_ERR_SHAPE, "broadcast");
  MT_FAILS(mixp_scaled_dot_product_attention(q1, q, q, 0, 0, 0, &out), MIXP_ERR_SHAPE, "at least 2 dims");
  MT_FAILS(mixp_scaled_dot_product_attention(q, k0, k0, 0, 0, 0, &out), MIXP_ERR_SHAPE, "S = 0");
  MT_FAILS(mixp_scaled_dot_product_attention(q, q, q, 0, 1.0, 0, &out), MIXP_ERR_INVALID_ARGUMENT,
           "dropout_p");
  MT_FAILS(mixp_scaled_dot_product_attention(q, q, q, 0, -0.1, 0, &out), MIXP_ERR_INVALID_ARGUMENT,
           "dropout_p");
  MT_FAILS(mixp_scaled_dot_product_attention(q, q, q, 0, NAN, 0, &out), MIXP_ERR_INVALID_ARGUMENT,
           "dropout_p");
  MT_FAILS(mixp_scaled_dot_product_attention(q, q, q, 0, 0, NAN, &out), MIXP_ERR_INVALID_ARGUMENT,
           "scale");
  MT_FAILS(mixp_scaled_dot_product_attention(q, q, q, 3, 0, 0, &out), MIXP_ERR_INVALID_ARGUMENT,
           "is_causal");
  assert_non_null(strstr(mixp_last_error(), fn));
  assert_null(out);
  mixp_tensor *objs[8] = {q, q64, ke, vsz, qb, q1, k0, qi};
  for (int i = 0; i < 8; ++i) mixp_tensor_release(objs[i]);
  mixp_session_destroy(s);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_embedding_forward),
      cmocka_unit_test(test_embedding_gradcheck),
      cmocka_unit_test(test_embedding_backward_padding),
      cmocka_unit_test(test_embedding_misuse),
      cmocka_unit_test(test_attention_forward),
      cmocka_unit_test(test_attention_gradcheck),
      cmocka_unit_test(test_attention_dropout_rng),
      cmocka_unit_test(test_attention_misuse),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
