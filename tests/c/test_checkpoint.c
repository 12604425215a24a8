/* Activation checkpointing: gradients through a checkpoint region are
 * bitwise identical to those without one (MLP with dropout, deep stacks,
 * autocast, several outputs), the peak tensor memory of a deep model drops,
 * and misuse of the region API is refused with clear messages. */
#include "test_util.h"

/* ---- helpers ----------------------------------------------------------------- */

static mixp_tensor *randn(mixp_session *s, const int64_t *shape, int ndim) {
  mixp_tensor *t = NULL;
  MT_OK(mixp_tensor_randn(s, MIXP_F32, shape, ndim, &t));
  return t;
}

/* Raw bytes of a tensor (row-major), malloc'd. */
static void *bytes_of(const mixp_tensor *t, size_t *nbytes) {
  *nbytes = (size_t)mixp_tensor_numel(t) * mixp_dtype_size(mixp_tensor_dtype(t));
  void *p = malloc(*nbytes ? *nbytes : 1);
  MT_OK(mixp_tensor_to_host(t, p, *nbytes));
  return p;
}

/* Copies the gradients of `n` leaves (all must have one) and drops them. */
static void take_grads(mixp_tensor **leaves, int n, void **out, size_t *sizes) {
  for (int i = 0; i < n; ++i) {
    mixp_tensor *g = NULL;
    MT_OK(mixp_tensor_grad(leaves[i], &g));
    assert_non_null(g);
    out[i] = bytes_of(g, &sizes[i]);
    mixp_tensor_release(g);
    MT_OK(mixp_tensor_zero_grad(leaves[i]));
  }
}

static void assert_same_grads(void **a, void **b, const size_t *sa, const size_t *sb, int n) {
  for (int i = 0; i < n; ++i) {
    assert_int_equal(sa[i], sb[i]);
    if (memcmp(a[i], b[i], sa[i]) != 0) {
      print_error("gradient of leaf %d differs with checkpointing\n", i);
      fail();
    }
    free(a[i]);
    free(b[i]);
  }
}

static mixp_tensor *fwd(mixp_module *m, mixp_tensor *x) {
  mixp_tensor *y = NULL;
  MT_OK(mixp_module_forward(m, x, &y));
  return y;
}

static mixp_tensor *unary_relu(mixp_tensor *x) {
  mixp_tensor *y = NULL;
  MT_OK(mixp_relu(x, &y));
  return y;
}

static mixp_tensor *unary_gelu(mixp_tensor *x) {
  mixp_tensor *y = NULL;
  MT_OK(mixp_gelu(x, MIXP_GELU_ERF, &y));
  return y;
}

static uint64_t peak_bytes(const mixp_session *s) {
  mixp_memory_stats st;
  memset(&st, 0, sizeof st);
  st.struct_size = sizeof st;
  MT_OK(mixp_memory_stats_get(s, &st));
  return st.peak_bytes;
}

/* ---- MLP with dropout ---------------------------------------------------------- */

typedef struct mlp {
  mixp_module *l1, *l2, *l3;
  mixp_tensor *params[6];
} mlp;

static void mlp_init(mixp_session *s, mlp *m) {
  MT_OK(mixp_linear_create(s, 24, 48, 1, MIXP_F32, &m->l1));
  MT_OK(mixp_linear_create(s, 48, 48, 1, MIXP_F32, &m->l2));
  MT_OK(mixp_linear_create(s, 48, 7, 1, MIXP_F32, &m->l3));
  mixp_module *ls[3] = {m->l1, m->l2, m->l3};
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 2; ++j) MT_OK(mixp_module_parameter(ls[i], j, &m->params[2 * i + j]));
}

static void mlp_free(mlp *m) {
  for (int i = 0; i < 6; ++i) mixp_tensor_release(m->params[i]);
  mixp_module_destroy(m->l1);
  mixp_module_destroy(m->l2);
  mixp_module_destroy(m->l3);
}

/* logits = l3(dropout(relu(l2(dropout(relu(l1(x))))))); `ckpt` wraps
 * everything from l1 to the second dropout in one region. */
static mixp_tensor *mlp_logits(mixp_session *s, mlp *m, mixp_tensor *x, int ckpt) {
  if (ckpt) MT_OK(mixp_checkpoint_begin(s));
  mixp_tensor *h1 = fwd(m->l1, x), *a1 = unary_relu(h1), *d1 = NULL;
  MT_OK(mixp_dropout(a1, 0.3, 1, &d1));
  mixp_tensor *h2 = fwd(m->l2, d1), *a2 = unary_relu(h2), *d2 = NULL;
  MT_OK(mixp_dropout(a2, 0.5, 1, &d2));
  if (ckpt) {
    assert_int_equal(mixp_grad_enabled(s), 0);
    assert_int_equal(mixp_tensor_requires_grad(d2), 0);
    MT_OK(mixp_checkpoint_end(s, &d2, 1));
    assert_int_equal(mixp_tensor_requires_grad(d2), 1);
    assert_int_equal(mixp_grad_enabled(s), 1);
  }
  mixp_tensor *logits = fwd(m->l3, d2);
  mixp_tensor *tmp[] = {h1, a1, d1, h2, a2, d2};
  for (int i = 0; i < 6; ++i) mixp_tensor_release(tmp[i]);
  return logits;
}

static void mlp_step(mixp_session *s, mlp *m, mixp_tensor *x, mixp_tensor *y, int ckpt,
                     int reseed_before_backward, void **grads, size_t *sizes) {
  MT_OK(mixp_session_set_seed(s, 77));
  mixp_tensor *logits = mlp_logits(s, m, x, ckpt), *loss = NULL;
  MT_OK(mixp_cross_entropy(logits, y, MIXP_REDUCTION_MEAN, -100, &loss));
  /* The replay must draw the forward pass's dropout masks whatever the
   * session's stream does in between. */
  if (reseed_before_backward) MT_OK(mixp_session_set_seed(s, 5));
  MT_OK(mixp_backward(loss, NULL));
  mixp_tensor_release(logits);
  mixp_tensor_release(loss);
  take_grads(m->params, 6, grads, sizes);
}

static void test_mlp_dropout_bitwise(void **state) {
  (void)state;
  mixp_session *s = mt_session();
  mlp m;
  mlp_init(s, &m);
  const int64_t xs[2] = {16, 24};
  mixp_tensor *x = randn(s, xs, 2);
  int64_t labels[16];
  for (int i = 0; i < 16; ++i) labels[i] = (i * 5) % 7;
  const int64_t ys[1] = {16};
  mixp_tensor *y = NULL;
  MT_OK(mixp_tensor_from_host(s, labels, sizeof labels, MIXP_I64, ys, 1, &y));

  void *plain[6], *ck[6];
  size_t sp[6], sc[6];
  mlp_step(s, &m, x, y, 0, 0, plain, sp);
  mlp_step(s, &m, x, y, 1, 1, ck, sc);
  assert_same_grads(plain, ck, sp, sc, 6);

  /* The comparison can fail: other dropout masks give other gradients. */
  void *other[6];
  size_t so[6];
  mlp_step(s, &m, x, y, 0, 0, plain, sp);
  MT_OK(mixp_session_set_seed(s, 78));
  mixp_tensor *logits = mlp_logits(s, &m, x, 0), *loss = NULL;
  MT_OK(mixp_cross_entropy(logits, y, MIXP_REDUCTION_MEAN, -100, &loss));
  MT_OK(mixp_backward(loss, NULL));
  take_grads(m.params, 6, other, so);
  assert_int_not_equal(memcmp(plain[0], other[0], sp[0]), 0);
  for (int i = 0; i < 6; ++i) {
    free(plain[i]);
    free(other[i]);
  }
  mixp_tensor_release(logits);
  mixp_tensor_release(loss);

  /* The input gets its gradient through the region too. */
  MT_OK(mixp_tensor_set_requires_grad(x, 1));
  void *gx[2];
  size_t sx[2];
  for (int ckpt = 0; ckpt < 2; ++ckpt) {
    MT_OK(mixp_session_set_seed(s, 77));
    logits = mlp_logits(s, &m, x, ckpt);
    MT_OK(mixp_cross_entropy(logits, y, MIXP_REDUCTION_MEAN, -100, &loss));
    MT_OK(mixp_backward(loss, NULL));
    take_grads(&x, 1, &gx[ckpt], &sx[ckpt]);
    take_grads(m.params, 6, plain, sp);
    for (int i = 0; i < 6; ++i) free(plain[i]);
    mixp_tensor_release(logits);
    mixp_tensor_release(loss);
  }
  assert_same_grads(&gx[0], &gx[1], &sx[0], &sx[1], 1);

  mixp_tensor_release(x);
  mixp_tensor_release(y);
  mlp_free(&m);
  mixp_session_destroy(s);
}

/* ---- deep stack: identical gradients, lower peak memory ------------------------ */

enum { kDepth = 16, kWidth = 128, kBatch = 512, kPerRegion = 4 };

/* Runs forward and backward of kDepth Linear+GELU layers; returns the peak
 * tensor memory of the step, measured from the state before it. */
static uint64_t deep_step(mixp_session *s, mixp_module **layers, mixp_tensor *x, int ckpt,
                          int autocast) {
  if (autocast) {
    mixp_autocast_options o;
    mixp_autocast_options_init(&o);
    o.dtype = MIXP_BF16;
    o.level = MIXP_AMP_O1;
    MT_OK(mixp_autocast_push(s, &o));
  }
  MT_OK(mixp_memory_stats_reset_peak(s));
  mixp_tensor *h = mixp_tensor_retain(x);
  for (int i = 0; i < kDepth; ++i) {
    if (ckpt && i % kPerRegion == 0) MT_OK(mixp_checkpoint_begin(s));
    mixp_tensor *z = fwd(layers[i], h);
    mixp_tensor_release(h);
    h = unary_gelu(z);
    mixp_tensor_release(z);
    if (ckpt && i % kPerRegion == kPerRegion - 1) MT_OK(mixp_checkpoint_end(s, &h, 1));
  }
  mixp_tensor *loss = NULL;
  MT_OK(mixp_mean(h, NULL, 0, 0, &loss));
  mixp_tensor_release(h);
  if (autocast) MT_OK(mixp_autocast_pop(s));
  MT_OK(mixp_backward(loss, NULL));
  mixp_tensor_release(loss);
  return peak_bytes(s);
}

static void deep_params(mixp_module **layers, mixp_tensor **params) {
  for (int i = 0; i < kDepth; ++i)
    for (int j = 0; j < 2; ++j) MT_OK(mixp_module_parameter(layers[i], j, &params[2 * i + j]));
}

static void test_deep_stack_bitwise_and_memory(void **state) {
  (void)state;
  mixp_session *s = mt_session();
  mixp_module *layers[kDepth];
  mixp_tensor *params[2 * kDepth];
  for (int i = 0; i < kDepth; ++i) MT_OK(mixp_linear_create(s, kWidth, kWidth, 1, MIXP_F32, &layers[i]));
  deep_params(layers, params);
  const int64_t xs[2] = {kBatch, kWidth};
  mixp_tensor *x = randn(s, xs, 2);

  void *plain[2 * kDepth], *ck[2 * kDepth];
  size_t sp[2 * kDepth], sc[2 * kDepth];
  const uint64_t peak_plain = deep_step(s, layers, x, 0, 0);
  take_grads(params, 2 * kDepth, plain, sp);
  const uint64_t peak_ckpt = deep_step(s, layers, x, 1, 0);
  take_grads(params, 2 * kDepth, ck, sc);
  assert_same_grads(plain, ck, sp, sc, 2 * kDepth);

  /* 32 saved activations of 256 KiB without regions; with them, the four
   * region boundaries plus one region's recomputed activations. */
  print_message("peak tensor memory: %.2f MiB without checkpointing, %.2f MiB with\n",
                (double)peak_plain / 1048576.0, (double)peak_ckpt / 1048576.0);
  assert_true(peak_ckpt < peak_plain * 3 / 4);

  /* Under autocast the casts are taped too: still identical. */
  deep_step(s, layers, x, 0, 1);
  take_grads(params, 2 * kDepth, plain, sp);
  deep_step(s, layers, x, 1, 1);
  take_grads(params, 2 * kDepth, ck, sc);
  assert_same_grads(plain, ck, sp, sc, 2 * kDepth);

  mixp_tensor_release(x);
  for (int i = 0; i < 2 * kDepth; ++i) mixp_tensor_release(params[i]);
  for (int i = 0; i < kDepth; ++i) mixp_module_destroy(layers[i]);
  mixp_session_destroy(s);
}

/* ---- zoo models: every op of a CNN (conv, batch norm, pooling, dropout)
 * and of a GPT (embedding, layer norm, attention with dropout) replays ------ */

/* One training forward/backward of `m` on (x, y), the whole forward in a
 * region when `ckpt`; returns the parameter gradients and buffer values. */
static int zoo_step(mixp_session *s, mixp_module *m, mixp_tensor *x, mixp_tensor *y, int ckpt,
                    int lm, void **out, size_t *sizes) {
  MT_OK(mixp_session_set_seed(s, 11));
  if (ckpt) MT_OK(mixp_checkpoint_begin(s));
  mixp_tensor *logits = fwd(m, x), *loss = NULL;
  if (ckpt) MT_OK(mixp_checkpoint_end(s, &logits, 1));
  if (lm) {
    const int64_t fl[2] = {-1, mixp_tensor_dim(logits, -1)}, fy[1] = {-1};
    mixp_tensor *l2 = NULL, *y2 = NULL;
    MT_OK(mixp_reshape(logits, fl, 2, &l2));
    MT_OK(mixp_reshape(y, fy, 1, &y2));
    MT_OK(mixp_cross_entropy(l2, y2, MIXP_REDUCTION_MEAN, -100, &loss));
    mixp_tensor_release(l2);
    mixp_tensor_release(y2);
  } else {
    MT_OK(mixp_cross_entropy(logits, y, MIXP_REDUCTION_MEAN, -100, &loss));
  }
  MT_OK(mixp_backward(loss, NULL));
  mixp_tensor_release(logits);
  mixp_tensor_release(loss);
  const int np = mixp_module_num_parameters(m), nb = mixp_module_num_buffers(m);
  assert_true(np > 0 && np + nb <= 256);
  for (int i = 0; i < np; ++i) {
    mixp_tensor *p = NULL;
    MT_OK(mixp_module_parameter(m, i, &p));
    take_grads(&p, 1, &out[i], &sizes[i]);
    mixp_tensor_release(p);
  }
  for (int i = 0; i < nb; ++i) {
    mixp_tensor *b = NULL;
    MT_OK(mixp_module_buffer(m, i, &b));
    out[np + i] = bytes_of(b, &sizes[np + i]);
    mixp_tensor_release(b);
  }
  return np + nb;
}

static void check_zoo_model(mixp_session *s, const char *config, mixp_tensor *x, mixp_tensor *y, int lm) {
  /* Two identical models (same seed), so that batch-norm statistics start
   * equal and must end equal: the replay does not update them again. */
  mixp_module *a = NULL, *b = NULL;
  MT_OK(mixp_session_set_seed(s, 3));
  MT_OK(mixp_model_create(s, config, &a));
  MT_OK(mixp_session_set_seed(s, 3));
  MT_OK(mixp_model_create(s, config, &b));
  static void *plain[256], *ck[256];
  static size_t sp[256], sc[256];
  const int n = zoo_step(s, a, x, y, 0, lm, plain, sp);
  assert_int_equal(zoo_step(s, b, x, y, 1, lm, ck, sc), n);
  assert_same_grads(plain, ck, sp, sc, n);
  mixp_module_destroy(a);
  mixp_module_destroy(b);
}

static void test_zoo_models_bitwise(void **state) {
  (void)state;
  mixp_session *s = mt_session();
  const int64_t xs[4] = {4, 1, 12, 12}, ys[1] = {4};
  mixp_tensor *x = randn(s, xs, 4);
  int64_t labels[4] = {0, 3, 1, 2};
  mixp_tensor *y = NULL;
  MT_OK(mixp_tensor_from_host(s, labels, sizeof labels, MIXP_I64, ys, 1, &y));
  check_zoo_model(s, "cnn in_channels=1 classes=4 width=4 blocks=2 image_size=12 hidden=16 dropout=0.25",
                  x, y, 0);
  mixp_tensor_release(x);
  mixp_tensor_release(y);

  int64_t tok[2 * 8], next[2 * 8];
  for (int i = 0; i < 16; ++i) {
    tok[i] = (i * 7) % 11;
    next[i] = (i * 7 + 7) % 11;
  }
  const int64_t ts[2] = {2, 8};
  MT_OK(mixp_tensor_from_host(s, tok, sizeof tok, MIXP_I64, ts, 2, &x));
  MT_OK(mixp_tensor_from_host(s, next, sizeof next, MIXP_I64, ts, 2, &y));
  check_zoo_model(s, "gpt n_layer=2 n_head=2 n_embd=16 vocab=11 block_size=8 dropout=0.1", x, y, 1);
  mixp_tensor_release(x);
  mixp_tensor_release(y);
  mixp_session_destroy(s);
}

/* ---- several outputs, views, pass-through and unused values ------------------ */

/* a, b = relu(h[:, :8]), tanh(reshape(h, ...)[:, 8:]) with h = x W^T; the
 * loss multiplies them outside the region. Also computes a value nobody
 * uses and an eval-mode dropout (which returns its input). */
static void multi_step(mixp_session *s, mixp_tensor *x, mixp_tensor *w, int ckpt, void **g, size_t *sz) {
  if (ckpt) MT_OK(mixp_checkpoint_begin(s));
  mixp_tensor *xe = NULL, *h = NULL, *hl = NULL, *hr = NULL, *a = NULL, *b = NULL, *unused = NULL;
  MT_OK(mixp_dropout(x, 0.5, 0, &xe));
  MT_OK(mixp_linear(xe, w, NULL, &h));
  MT_OK(mixp_slice(h, 1, 0, 8, 1, &hl));
  MT_OK(mixp_slice(h, 1, 8, 16, 1, &hr));
  MT_OK(mixp_relu(hl, &a));
  MT_OK(mixp_tanh(hr, &b));
  MT_OK(mixp_exp(h, &unused));
  if (ckpt) {
    mixp_tensor *outs[3] = {a, b, xe};
    MT_OK(mixp_checkpoint_end(s, outs, 3));
  }
  mixp_tensor *p = NULL, *loss = NULL;
  MT_OK(mixp_mul(a, b, &p));
  MT_OK(mixp_sum(p, NULL, 0, 0, &loss));
  MT_OK(mixp_backward(loss, NULL));
  mixp_tensor *tmp[] = {xe, h, hl, hr, a, b, unused, p, loss};
  for (int i = 0; i < 9; ++i) mixp_tensor_release(tmp[i]);
  mixp_tensor *leaves[2] = {x, w};
  take_grads(leaves, 2, g, sz);
}

static void test_multiple_outputs(void **state) {
  (void)state;
  mixp_session *s = mt_session();
  const int64_t xs[2] = {5, 6}, ws[2] = {16, 6};
  mixp_tensor *x = randn(s, xs, 2), *w = randn(s, ws, 2);
  MT_OK(mixp_tensor_set_requires_grad(x, 1));
  MT_OK(mixp_tensor_set_requires_grad(w, 1));
  void *plain[2], *ck[2];
  size_t sp[2], sc[2];
  multi_step(s, x, w, 0, plain, sp);
  multi_step(s, x, w, 1, ck, sc);
  assert_same_grads(plain, ck, sp, sc, 2);
  mixp_tensor_release(x);
  mixp_tensor_release(w);
  mixp_session_destroy(s);
}

/* Without grad mode, or without inputs that require grad, a region is only
 * a scope: its outputs have no history. */
static void test_region_without_grad(void **state) {
  (void)state;
  mixp_session *s = mt_session();
  const int64_t xs[2] = {3, 4};
  mixp_tensor *x = randn(s, xs, 2), *y = NULL;
  MT_OK(mixp_tensor_set_requires_grad(x, 1));
  MT_OK(mixp_no_grad_begin(s));
  MT_OK(mixp_checkpoint_begin(s));
  MT_OK(mixp_relu(x, &y));
  MT_OK(mixp_checkpoint_end(s, &y, 1));
  assert_int_equal(mixp_tensor_requires_grad(y), 0);
  assert_int_equal(mixp_grad_enabled(s), 0);
  MT_OK(mixp_no_grad_end(s));
  mixp_tensor_release(y);

  mixp_tensor *c = randn(s, xs, 2);
  MT_OK(mixp_checkpoint_begin(s));
  MT_OK(mixp_relu(c, &y));
  MT_OK(mixp_checkpoint_end(s, &y, 1));
  assert_int_equal(mixp_tensor_requires_grad(y), 0);
  /* an output that is an input of the region is left as it is */
  MT_OK(mixp_checkpoint_begin(s));
  MT_OK(mixp_checkpoint_end(s, &x, 1));
  assert_int_equal(mixp_tensor_is_leaf(x), 1);
  MT_OK(mixp_checkpoint_begin(s));
  MT_OK(mixp_checkpoint_end(s, NULL, 0));
  mixp_tensor_release(y);
  mixp_tensor_release(c);
  mixp_tensor_release(x);
  mixp_session_destroy(s);
}

/* ---- misuse ------------------------------------------------------------------------ */

static void test_misuse(void **state) {
  (void)state;
  mixp_session *s = mt_session(), *other = mt_session();
  const int64_t xs[2] = {3, 4};
  mixp_tensor *x = randn(s, xs, 2), *y = NULL, *z = NULL, *o = randn(other, xs, 2);
  MT_OK(mixp_tensor_set_requires_grad(x, 1));

  MT_FAILS(mixp_checkpoint_begin(NULL), MIXP_ERR_INVALID_ARGUMENT, "session");
  MT_FAILS(mixp_checkpoint_end(NULL, NULL, 0), MIXP_ERR_INVALID_ARGUMENT, "session");
  MT_FAILS(mixp_checkpoint_end(s, NULL, 0), MIXP_ERR_STATE, "no checkpoint region is open");

  MT_OK(mixp_checkpoint_begin(s));
  MT_FAILS(mixp_checkpoint_begin(s), MIXP_ERR_STATE, "already open");
  MT_OK(mixp_relu(x, &y));
  MT_FAILS(mixp_checkpoint_end(s, &y, -1), MIXP_ERR_INVALID_ARGUMENT, "n must be >= 0");
  MT_FAILS(mixp_checkpoint_end(s, NULL, 1), MIXP_ERR_INVALID_ARGUMENT, "outputs is NULL");
  mixp_tensor *bad[2] = {y, NULL};
  MT_FAILS(mixp_checkpoint_end(s, bad, 2), MIXP_ERR_INVALID_ARGUMENT, "outputs[1] is NULL");
  MT_FAILS(mixp_checkpoint_end(s, &o, 1), MIXP_ERR_DEVICE, "outputs[0] belongs to another session");
  MT_FAILS(mixp_backward(y, NULL), MIXP_ERR_STATE, "checkpoint region is open");
  mixp_optimizer_options oo;
  mixp_optimizer_options_init(&oo, MIXP_OPTIM_SGD);
  mixp_optimizer *opt = NULL;
  MT_OK(mixp_optimizer_create(s, &x, 1, &oo, &opt));
  MT_FAILS(mixp_optimizer_step(opt), MIXP_ERR_STATE, "checkpoint region is open");
  mixp_optimizer_destroy(opt);
  /* a no-grad region left open inside the checkpoint region */
  MT_OK(mixp_no_grad_begin(s));
  MT_FAILS(mixp_checkpoint_end(s, &y, 1), MIXP_ERR_STATE, "no-grad");
  MT_OK(mixp_no_grad_end(s));
  /* the failed calls left the region open and usable */
  MT_OK(mixp_tanh(y, &z));
  MT_OK(mixp_checkpoint_end(s, &z, 1));
  mixp_tensor_release(y);

  /* backward through a region twice */
  MT_OK(mixp_checkpoint_begin(s));
  MT_OK(mixp_sum(z, NULL, 0, 0, &y));
  MT_OK(mixp_checkpoint_end(s, &y, 1));
  MT_OK(mixp_backward(y, NULL));
  MT_FAILS(mixp_backward(y, NULL), MIXP_ERR_STATE, "'checkpoint'");
  mixp_tensor_release(y);
  mixp_tensor_release(z);

  /* An in-place update of a tensor the region reads would make the replay
   * see other values: the region is refused (and closed), whether the write
   * comes after the read or before it. */
  mixp_tensor *buf = randn(s, xs, 2), *c = randn(s, xs, 2), *counter = randn(s, xs, 2);
  MT_OK(mixp_checkpoint_begin(s));
  MT_OK(mixp_relu(c, &y));
  MT_OK(mixp_tensor_copy_(c, buf));
  MT_FAILS(mixp_checkpoint_end(s, &y, 1), MIXP_ERR_UNSUPPORTED, "op 'copy_' modifies in place a tensor the region reads");
  assert_int_equal(mixp_tensor_requires_grad(y), 0);
  assert_int_equal(mixp_grad_enabled(s), 1);
  mixp_tensor_release(y);
  MT_OK(mixp_checkpoint_begin(s));
  MT_OK(mixp_tensor_copy_(buf, c));
  MT_OK(mixp_mul(x, buf, &y));
  MT_FAILS(mixp_checkpoint_end(s, &y, 1), MIXP_ERR_UNSUPPORTED, "op 'mul' reads a tensor modified in place");
  mixp_tensor_release(y);
  /* A write the region never reads (a layer's batch counter) is fine: it
   * happens once, in forward. */
  void *g[2];
  size_t sz[2];
  MT_OK(mixp_tensor_zero_grad(x));
  for (int ckpt = 0; ckpt < 2; ++ckpt) {
    if (ckpt) MT_OK(mixp_checkpoint_begin(s));
    MT_OK(mixp_mul(x, buf, &y));
    MT_OK(mixp_tensor_copy_(counter, c));
    MT_OK(mixp_sum(y, NULL, 0, 0, &z));
    if (ckpt) MT_OK(mixp_checkpoint_end(s, &z, 1));
    MT_OK(mixp_backward(z, NULL));
    take_grads(&x, 1, &g[ckpt], &sz[ckpt]);
    mixp_tensor_release(y);
    mixp_tensor_release(z);
  }
  assert_same_grads(&g[0], &g[1], &sz[0], &sz[1], 1);
  mixp_tensor_release(buf);
  mixp_tensor_release(c);
  mixp_tensor_release(counter);

  /* a region still open when the session is destroyed is dropped with it */
  MT_OK(mixp_checkpoint_begin(s));
  MT_OK(mixp_relu(x, &y));
  mixp_tensor_release(y);
  mixp_tensor_release(x);
  mixp_tensor_release(o);
  mixp_session_destroy(s);
  mixp_session_destroy(other);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_mlp_dropout_bitwise),
      cmocka_unit_test(test_deep_stack_bitwise_and_memory),
      cmocka_unit_test(test_zoo_models_bitwise),
      cmocka_unit_test(test_multiple_outputs),
      cmocka_unit_test(test_region_without_grad),
      cmocka_unit_test(test_misuse),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
