/* Per-block activation checkpointing of the zoo models (config key
 * checkpoint=1): gradients and batch-norm statistics bitwise identical to
 * checkpoint=0, a lower peak of tensor memory for deep models, no regions
 * in evaluation or no-grad passes, balanced regions when a block fails, and
 * mixp_checkpoint_abort(). */
#include "test_util.h"

/* ---- helpers ----------------------------------------------------------------- */

/* Raw bytes of a tensor (row-major), malloc'd. */
static void *bytes_of(const mixp_tensor *t, size_t *nbytes) {
  *nbytes = (size_t)mixp_tensor_numel(t) * mixp_dtype_size(mixp_tensor_dtype(t));
  void *p = malloc(*nbytes ? *nbytes : 1);
  MT_OK(mixp_tensor_to_host(t, p, *nbytes));
  return p;
}

static mixp_memory_stats mem(const mixp_session *s) {
  mixp_memory_stats st;
  memset(&st, 0, sizeof st);
  st.struct_size = sizeof st;
  MT_OK(mixp_memory_stats_get(s, &st));
  return st;
}

static double mb(uint64_t bytes) { return (double)bytes / (1024.0 * 1024.0); }

static mixp_tensor *loss_of(mixp_tensor *logits, mixp_tensor *y, int lm) {
  mixp_tensor *loss = NULL;
  if (!lm) {
    MT_OK(mixp_cross_entropy(logits, y, MIXP_REDUCTION_MEAN, -100, &loss));
    return loss;
  }
  const int64_t fl[2] = {-1, mixp_tensor_dim(logits, -1)}, fy[1] = {-1};
  mixp_tensor *l2 = NULL, *y2 = NULL;
  MT_OK(mixp_reshape(logits, fl, 2, &l2));
  MT_OK(mixp_reshape(y, fy, 1, &y2));
  MT_OK(mixp_cross_entropy(l2, y2, MIXP_REDUCTION_MEAN, -100, &loss));
  mixp_tensor_release(l2);
  mixp_tensor_release(y2);
  return loss;
}

/* What one training step of a model leaves behind: the bytes of every
 * parameter's gradient and every buffer, and the step's peak memory. */
typedef struct step_result {
  int n;
  void *data[512];
  size_t size[512];
  uint64_t peak;  /* peak bytes from forward to the end of backward */
  uint64_t base;  /* bytes in use when the step started */
} step_result;

static void result_free(step_result *r) {
  for (int i = 0; i < r->n; ++i) free(r->data[i]);
  r->n = 0;
}

/* Builds `config` + " checkpoint=C" from session seed 3 (so both variants
 * start from the same parameters), runs one step at dropout seed 77, and
 * destroys the model again (so the other variant is measured alone). */
static void zoo_step(mixp_session *s, const char *config, int ckpt, mixp_tensor *x, mixp_tensor *y,
                     int lm, step_result *r) {
  char full[512];
  snprintf(full, sizeof full, "%s checkpoint=%d", config, ckpt);
  mixp_module *m = NULL;
  MT_OK(mixp_session_set_seed(s, 3));
  MT_OK(mixp_model_create(s, full, &m));
  MT_OK(mixp_session_set_seed(s, 77));
  MT_OK(mixp_memory_stats_reset_peak(s));
  r->base = mem(s).current_bytes;
  mixp_tensor *logits = NULL;
  MT_OK(mixp_module_forward(m, x, &logits));
  mixp_tensor *loss = loss_of(logits, y, lm);
  mixp_tensor_release(logits);
  /* The replay must draw the forward pass's dropout masks whatever the
   * session's stream does in between. */
  MT_OK(mixp_session_set_seed(s, 5));
  MT_OK(mixp_backward(loss, NULL));
  r->peak = mem(s).peak_bytes;
  mixp_tensor_release(loss);
  const int np = mixp_module_num_parameters(m), nb = mixp_module_num_buffers(m);
  assert_true(np > 0 && np + nb <= 512);
  r->n = 0;
  for (int i = 0; i < np; ++i) {
    mixp_tensor *p = NULL, *g = NULL;
    MT_OK(mixp_module_parameter(m, i, &p));
    MT_OK(mixp_tensor_grad(p, &g));
    assert_non_null(g);
    r->data[r->n] = bytes_of(g, &r->size[r->n]);
    r->n++;
    mixp_tensor_release(g);
    mixp_tensor_release(p);
  }
  for (int i = 0; i < nb; ++i) {
    mixp_tensor *b = NULL;
    MT_OK(mixp_module_buffer(m, i, &b));
    r->data[r->n] = bytes_of(b, &r->size[r->n]);
    r->n++;
    mixp_tensor_release(b);
  }
  mixp_module_destroy(m);
}

/* Runs both variants, asserts bitwise equality and returns their peaks. */
static void compare(mixp_session *s, const char *config, mixp_tensor *x, mixp_tensor *y, int lm,
                    uint64_t *peak_plain, uint64_t *peak_ck) {
  static step_result a, b;
  zoo_step(s, config, 0, x, y, lm, &a);
  zoo_step(s, config, 1, x, y, lm, &b);
  assert_int_equal(a.n, b.n);
  for (int i = 0; i < a.n; ++i) {
    assert_int_equal(a.size[i], b.size[i]);
    if (memcmp(a.data[i], b.data[i], a.size[i]) != 0) {
      print_error("%s: gradient or buffer %d differs with checkpoint=1\n", config, i);
      fail();
    }
  }
  assert_int_equal(a.base, b.base);
  *peak_plain = a.peak;
  *peak_ck = b.peak;
  print_message("%s: peak %.2f MB -> %.2f MB with checkpoint=1 (%.0f%% lower)\n", config,
                mb(a.peak), mb(b.peak), 100.0 * (1.0 - (double)b.peak / (double)a.peak));
  result_free(&a);
  result_free(&b);
}

static mixp_tensor *tokens(mixp_session *s, int64_t b, int64_t t, int64_t vocab, int shift) {
  int64_t *v = malloc((size_t)(b * t) * sizeof *v);
  for (int64_t i = 0; i < b * t; ++i) v[i] = (i * 7 + shift * 7 + i / 5) % vocab;
  const int64_t shape[2] = {b, t};
  mixp_tensor *out = NULL;
  MT_OK(mixp_tensor_from_host(s, v, (size_t)(b * t) * sizeof *v, MIXP_I64, shape, 2, &out));
  free(v);
  return out;
}

static mixp_tensor *labels(mixp_session *s, int64_t n, int64_t classes) {
  int64_t v[64];
  assert_true(n <= 64);
  for (int64_t i = 0; i < n; ++i) v[i] = (i * 3) % classes;
  const int64_t shape[1] = {n};
  mixp_tensor *out = NULL;
  MT_OK(mixp_tensor_from_host(s, v, (size_t)n * sizeof *v, MIXP_I64, shape, 1, &out));
  return out;
}

static mixp_tensor *images(mixp_session *s, int64_t n, int64_t c, int64_t h, int64_t w) {
  const int64_t shape[4] = {n, c, h, w};
  mixp_tensor *out = NULL;
  MT_OK(mixp_tensor_randn(s, MIXP_F32, shape, 4, &out));
  return out;
}

/* ---- bitwise gradients and lower peaks ----------------------------------------- */

static void test_gpt_bitwise_and_memory(void **state) {
  (void)state;
  mixp_session *s = mt_session();
  mixp_tensor *x = tokens(s, 8, 32, 13, 0), *y = tokens(s, 8, 32, 13, 1);
  uint64_t plain = 0, ck = 0;
  compare(s, "gpt n_layer=6 n_head=2 n_embd=32 vocab=13 block_size=32 dropout=0.1", x, y, 1,
          &plain, &ck);
  /* Six blocks of which backward holds one at a time. */
  assert_true((double)ck <= 0.8 * (double)plain);
  mixp_tensor_release(x);
  mixp_tensor_release(y);
  mixp_session_destroy(s);
}

static void test_resnet_bitwise_and_memory(void **state) {
  (void)state;
  mixp_session *s = mt_session();
  mixp_tensor *x = images(s, 16, 3, 64, 64), *y = labels(s, 16, 10);
  uint64_t plain = 0, ck = 0;
  /* Batch-norm statistics are compared too: the replay must not update
   * them a second time. */
  compare(s, "resnet18 classes=10 width=8", x, y, 0, &plain, &ck);
  assert_true((double)ck <= 0.8 * (double)plain);
  /* Bottlenecks too (bitwise only: small images, so no memory claim). */
  mixp_tensor_release(x);
  x = images(s, 2, 1, 32, 32);
  mixp_tensor_release(y);
  y = labels(s, 2, 3);
  compare(s, "resnet50 classes=3 width=4 in_channels=1", x, y, 0, &plain, &ck);
  mixp_tensor_release(x);
  mixp_tensor_release(y);
  mixp_session_destroy(s);
}

static void test_other_models_bitwise(void **state) {
  (void)state;
  mixp_session *s = mt_session();
  uint64_t plain = 0, ck = 0;
  mixp_tensor *x = images(s, 4, 3, 32, 32), *y = labels(s, 4, 5);
  compare(s, "mobilenet_v3_small classes=5 width_mult=0.25 dropout=0.2", x, y, 0, &plain, &ck);
  mixp_tensor_release(x);
  x = images(s, 4, 1, 12, 12);
  compare(s, "cnn in_channels=1 classes=5 width=4 blocks=2 image_size=12 hidden=16 dropout=0.25",
          x, y, 0, &plain, &ck);
  compare(s, "mlp in=144 hidden=32,32,32 classes=5 dropout=0.3", x, y, 0, &plain, &ck);
  mixp_tensor_release(x);
  mixp_tensor_release(y);
  mixp_session_destroy(s);
}

/* ---- where no region is opened ------------------------------------------------- */

/* Bytes still held after a forward pass whose output is kept: the saved
 * activations, unless regions dropped them. */
static uint64_t held_after_forward(mixp_session *s, mixp_module *m, mixp_tensor *x,
                                   void **out, size_t *size) {
  const uint64_t before = mem(s).current_bytes;
  mixp_tensor *y = NULL;
  MT_OK(mixp_module_forward(m, x, &y));
  const uint64_t held = mem(s).current_bytes - before;
  *out = bytes_of(y, size);
  mixp_tensor_release(y);
  return held;
}

static void test_regions_only_when_training_with_grad(void **state) {
  (void)state;
  mixp_session *s = mt_session();
  const char *cfg[2] = {"gpt n_layer=4 n_head=2 n_embd=32 vocab=13 block_size=16 checkpoint=0",
                        "gpt n_layer=4 n_head=2 n_embd=32 vocab=13 block_size=16 checkpoint=1"};
  mixp_module *m[2] = {NULL, NULL};
  for (int i = 0; i < 2; ++i) {
    MT_OK(mixp_session_set_seed(s, 3));
    MT_OK(mixp_model_create(s, cfg[i], &m[i]));
  }
  mixp_tensor *x = tokens(s, 4, 16, 13, 0);
  void *out[2];
  size_t size[2];
  uint64_t held[2];
  /* mode 0: training (regions drop the activations), 1: evaluation, 2: no-grad */
  for (int mode = 0; mode < 3; ++mode) {
    for (int i = 0; i < 2; ++i) {
      MT_OK(mixp_module_set_training(m[i], mode != 1));
      if (mode == 2) MT_OK(mixp_no_grad_begin(s));
      held[i] = held_after_forward(s, m[i], x, &out[i], &size[i]);
      if (mode == 2) MT_OK(mixp_no_grad_end(s));
      assert_int_equal(mixp_grad_enabled(s), 1);
    }
    assert_int_equal(size[0], size[1]);
    assert_memory_equal(out[0], out[1], size[0]);
    if (mode == 0)
      assert_true(held[1] < held[0] / 2);
    else
      assert_int_equal(held[1], held[0]);
    free(out[0]);
    free(out[1]);
  }
  /* Inside a caller's own region grad mode reads off: the model opens none
   * (regions do not nest) and the caller's region records the whole pass. */
  MT_OK(mixp_module_set_training(m[1], 1));
  MT_OK(mixp_checkpoint_begin(s));
  mixp_tensor *y = NULL;
  MT_OK(mixp_module_forward(m[1], x, &y));
  MT_OK(mixp_checkpoint_end(s, &y, 1));
  assert_int_equal(mixp_tensor_requires_grad(y), 1);
  mixp_tensor_release(y);
  mixp_tensor_release(x);
  mixp_module_destroy(m[0]);
  mixp_module_destroy(m[1]);
  mixp_session_destroy(s);
}

/* ---- a block that fails leaves no region open ---------------------------------- */

static void test_failing_block_aborts_region(void **state) {
  (void)state;
  mixp_session *s = mt_session();
  mixp_module *m = NULL;
  MT_OK(mixp_model_create(s, "mlp in=6 hidden=8,8 classes=3 checkpoint=1", &m));
  /* 5 features instead of 6: the flatten before the blocks passes, the first
   * block's Linear fails inside its region. */
  const int64_t bad_shape[2] = {2, 5}, good_shape[2] = {2, 6};
  mixp_tensor *bad = NULL, *good = NULL, *y = NULL, *loss = NULL;
  MT_OK(mixp_tensor_randn(s, MIXP_F32, bad_shape, 2, &bad));
  MT_OK(mixp_tensor_randn(s, MIXP_F32, good_shape, 2, &good));
  MT_FAILS(mixp_module_forward(m, bad, &y), MIXP_ERR_SHAPE, "mixp_linear");
  assert_null(y);
  assert_int_equal(mixp_grad_enabled(s), 1);
  MT_FAILS(mixp_checkpoint_abort(s), MIXP_ERR_STATE, "no checkpoint region is open");
  /* the session trains normally afterwards */
  MT_OK(mixp_module_forward(m, good, &y));
  assert_int_equal(mixp_tensor_requires_grad(y), 1);
  MT_OK(mixp_sum(y, NULL, 0, 0, &loss));
  MT_OK(mixp_backward(loss, NULL));
  mixp_tensor *w = NULL, *g = NULL;
  MT_OK(mixp_module_parameter(m, 0, &w));
  MT_OK(mixp_tensor_grad(w, &g));
  assert_non_null(g);
  mixp_tensor_release(g);
  mixp_tensor_release(w);
  mixp_tensor_release(loss);
  mixp_tensor_release(y);
  mixp_tensor_release(bad);
  mixp_tensor_release(good);
  mixp_module_destroy(m);
  mixp_session_destroy(s);
}

/* ---- mixp_checkpoint_abort ------------------------------------------------------- */

static void test_abort(void **state) {
  (void)state;
  mixp_session *s = mt_session();
  const int64_t xs[2] = {3, 4};
  mixp_tensor *x = NULL, *y = NULL, *z = NULL;
  MT_OK(mixp_tensor_randn(s, MIXP_F32, xs, 2, &x));
  MT_OK(mixp_tensor_set_requires_grad(x, 1));

  /* The region's values keep no history; a no-grad region left open inside
   * it is closed with it; a new region can open. */
  MT_OK(mixp_checkpoint_begin(s));
  MT_OK(mixp_relu(x, &y));
  MT_OK(mixp_no_grad_begin(s));
  MT_OK(mixp_checkpoint_abort(s));
  assert_int_equal(mixp_grad_enabled(s), 1);
  assert_int_equal(mixp_tensor_requires_grad(y), 0);
  MT_FAILS(mixp_no_grad_end(s), MIXP_ERR_STATE, "no no-grad region is open");
  MT_FAILS(mixp_checkpoint_end(s, &y, 1), MIXP_ERR_STATE, "no checkpoint region is open");
  MT_OK(mixp_checkpoint_begin(s));
  MT_OK(mixp_tanh(y, &z));
  MT_OK(mixp_checkpoint_end(s, &z, 1));
  mixp_tensor_release(z);
  mixp_tensor_release(y);

  /* An aborted region's values can feed a later region (as its inputs). */
  MT_OK(mixp_checkpoint_begin(s));
  MT_OK(mixp_mul(x, x, &y));
  MT_OK(mixp_checkpoint_abort(s));
  MT_OK(mixp_checkpoint_begin(s));
  MT_OK(mixp_mul(y, x, &z));
  MT_OK(mixp_checkpoint_end(s, &z, 1));
  mixp_tensor *loss = NULL, *g = NULL;
  MT_OK(mixp_sum(z, NULL, 0, 0, &loss));
  MT_OK(mixp_backward(loss, NULL));
  MT_OK(mixp_tensor_grad(x, &g));
  assert_non_null(g);
  /* d/dx sum(y * x) with y a constant is y */
  float gv[12], yv[12];
  MT_OK(mixp_tensor_to_host(g, gv, sizeof gv));
  MT_OK(mixp_tensor_to_host(y, yv, sizeof yv));
  assert_memory_equal(gv, yv, sizeof gv);
  mixp_tensor_release(g);
  mixp_tensor_release(loss);
  mixp_tensor_release(z);
  mixp_tensor_release(y);

  /* Grad mode goes back to what it was at begin: off inside a no-grad region. */
  MT_OK(mixp_no_grad_begin(s));
  MT_OK(mixp_checkpoint_begin(s));
  MT_OK(mixp_checkpoint_abort(s));
  assert_int_equal(mixp_grad_enabled(s), 0);
  MT_OK(mixp_no_grad_end(s));
  assert_int_equal(mixp_grad_enabled(s), 1);

  /* misuse */
  MT_FAILS(mixp_checkpoint_abort(NULL), MIXP_ERR_INVALID_ARGUMENT, "mixp_checkpoint_abort: session");
  MT_FAILS(mixp_checkpoint_abort(s), MIXP_ERR_STATE, "mixp_checkpoint_abort: no checkpoint region is open");
  MT_OK(mixp_checkpoint_begin(s));
  MT_OK(mixp_checkpoint_abort(s));
  MT_FAILS(mixp_checkpoint_abort(s), MIXP_ERR_STATE, "no checkpoint region is open");
  mixp_tensor_release(x);
  mixp_session_destroy(s);
}

/* ---- the config key ------------------------------------------------------------------ */

static void test_config_key(void **state) {
  (void)state;
  mixp_session *s = mt_session();
  mixp_module *m = NULL;
  const char *ok[] = {"mlp hidden=8 checkpoint=1", "cnn width=4 hidden=8 checkpoint=0",
                      "resnet18 classes=2 width=4 checkpoint=1",
                      "mobilenet_v3_small classes=2 width_mult=0.25 checkpoint=1",
                      "gpt n_layer=1 n_embd=8 checkpoint=1"};
  for (size_t i = 0; i < sizeof ok / sizeof ok[0]; ++i) {
    MT_OK(mixp_model_create(s, ok[i], &m));
    mixp_module_destroy(m);
    m = NULL;
  }
  MT_FAILS(mixp_model_create(s, "gpt checkpoint=2", &m), MIXP_ERR_INVALID_ARGUMENT,
           "invalid value '2' for key 'checkpoint'");
  MT_FAILS(mixp_model_create(s, "resnet18 checkpoint=yes", &m), MIXP_ERR_INVALID_ARGUMENT,
           "key 'checkpoint'");
  MT_FAILS(mixp_model_create(s, "mlp checkpoint=", &m), MIXP_ERR_INVALID_ARGUMENT,
           "key 'checkpoint' has no value");
  MT_FAILS(mixp_model_create(s, "cnn checkpoint=1 checkpoint=1", &m), MIXP_ERR_INVALID_ARGUMENT,
           "key 'checkpoint' is given twice");
  /* the key is listed among the known ones */
  MT_FAILS(mixp_model_create(s, "mobilenet_v3 checkpointing=1", &m), MIXP_ERR_INVALID_ARGUMENT,
           "dtype, checkpoint, channels_last)");
  assert_null(m);
  mixp_session_destroy(s);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_gpt_bitwise_and_memory),
      cmocka_unit_test(test_resnet_bitwise_and_memory),
      cmocka_unit_test(test_other_models_bitwise),
      cmocka_unit_test(test_regions_only_when_training_with_grad),
      cmocka_unit_test(test_failing_block_aborts_region),
      cmocka_unit_test(test_abort),
      cmocka_unit_test(test_config_key),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
