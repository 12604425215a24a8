/* The model zoo: parameter counts against the published architectures,
 * parameter and buffer names, forward output shapes, a few AdamW steps that
 * lower the loss for every model, and configuration errors. */
#include "test_util.h"

static mixp_module *model(mixp_session *s, const char *config) {
  mixp_module *m = NULL;
  MT_OK(mixp_model_create(s, config, &m));
  assert_non_null(m);
  return m;
}

static void expect_shape(const mixp_tensor *t, const int64_t *want, int ndim) {
  int64_t shape[MIXP_MAX_DIMS];
  int nd = -1;
  MT_OK(mixp_tensor_shape(t, shape, MIXP_MAX_DIMS, &nd));
  assert_int_equal(nd, ndim);
  for (int i = 0; i < ndim; ++i) assert_int_equal(shape[i], want[i]);
}

static int has_name(const mixp_module *m, const char *name, int buffers) {
  int n = buffers ? mixp_module_num_buffers(m) : mixp_module_num_parameters(m);
  for (int i = 0; i < n; ++i)
    if (strcmp(buffers ? mixp_module_buffer_name(m, i) : mixp_module_parameter_name(m, i), name) ==
        0)
      return 1;
  return 0;
}

static mixp_tensor *random_input(mixp_session *s, const int64_t *shape, int ndim, uint64_t seed) {
  int64_t n = 1;
  for (int i = 0; i < ndim; ++i) n *= shape[i];
  double *v = malloc(sizeof(double) * (size_t)n);
  mt_fill(v, n, -1, 1, seed);
  mixp_tensor *t = mt_tensor(s, MIXP_F32, v, shape, ndim);
  free(v);
  return t;
}

static mixp_tensor *labels(mixp_session *s, int64_t n, int64_t classes) {
  int64_t *v = malloc(sizeof(int64_t) * (size_t)n);
  for (int64_t i = 0; i < n; ++i) v[i] = (i * 7 + 3) % classes;
  mixp_tensor *t = NULL;
  MT_OK(mixp_tensor_from_host(s, v, sizeof(int64_t) * (size_t)n, MIXP_I64, &n, 1, &t));
  free(v);
  return t;
}

/* ---- parameter counts ------------------------------------------------------------- */

/* Builds `config`, checks its size and first/last parameter names, and
 * returns the model (owned). */
static mixp_module *counted(mixp_session *s, const char *config, int64_t want, const char *first,
                            const char *last) {
  mixp_module *m = model(s, config);
  assert_int_equal(mixp_module_num_parameter_elements(m), want);
  int n = mixp_module_num_parameters(m);
  assert_string_equal(mixp_module_parameter_name(m, 0), first);
  assert_string_equal(mixp_module_parameter_name(m, n - 1), last);
  return m;
}

static void check_count(mixp_session *s, const char *config, int64_t want, const char *first,
                        const char *last) {
  mixp_module_destroy(counted(s, config, want, first, last));
}

static void test_resnet_parameter_counts(void **state) {
  (void)state;
  mixp_session *s = mt_session();
  /* torchvision's published counts */
  check_count(s, "resnet34", 21797672, "conv1.weight", "fc.bias");
  mixp_module *m = counted(s, "resnet depth=18", 11689512, "conv1.weight", "fc.bias");
  /* torchvision's state-dict names */
  assert_true(has_name(m, "layer1.0.conv1.weight", 0));
  assert_true(has_name(m, "layer2.0.downsample.0.weight", 0));
  assert_true(has_name(m, "layer4.1.bn2.bias", 0));
  assert_false(has_name(m, "layer1.0.downsample.0.weight", 0));
  assert_true(has_name(m, "layer3.0.downsample.1.running_var", 1));
  assert_true(has_name(m, "bn1.num_batches_tracked", 1));
  /* 20 batch norms, 3 buffers each */
  assert_int_equal(mixp_module_num_buffers(m), 60);
  mixp_module_destroy(m);
  m = counted(s, "resnet depth=50 classes=1000 in_channels=3 width=64", 25557032, "conv1.weight",
              "fc.bias");
  assert_true(has_name(m, "layer1.0.downsample.0.weight", 0));
  assert_true(has_name(m, "layer4.2.conv3.weight", 0));
  mixp_module_destroy(m);
  mixp_session_destroy(s);
}

static void test_mobilenet_parameter_counts(void **state) {
  (void)state;
  mixp_session *s = mt_session();
  check_count(s, "mobilenet_v3 size=large", 5483032, "features.0.0.weight", "classifier.3.bias");
  mixp_module *m = counted(s, "mobilenet_v3_small classes=1000", 2542856, "features.0.0.weight",
                           "classifier.3.bias");
  /* block 1 of small: depthwise conv, SE, projection (no expansion conv) */
  assert_true(has_name(m, "features.1.block.0.0.weight", 0));
  assert_true(has_name(m, "features.1.block.1.fc1.weight", 0));
  assert_true(has_name(m, "features.1.block.1.fc2.bias", 0));
  assert_true(has_name(m, "features.1.block.2.1.running_mean", 1));
  assert_true(has_name(m, "classifier.0.weight", 0));
  mixp_module_destroy(m);
  mixp_session_destroy(s);
}

static void test_small_model_counts(void **state) {
  (void)state;
  mixp_session *s = mt_session();
  /* 784*256+256 + 256*128+128 + 128*10+10 */
  check_count(s, "mlp in=784 hidden=256,128 classes=10", 235146, "1.weight", "5.bias");
  check_count(s, "mlp in=10 hidden=none classes=3", 33, "1.weight", "1.bias");
  /* conv 1*32*9, BN 64, conv 32*64*9, BN 128, fc 3136*128+128, fc 128*10+10 */
  check_count(s, "cnn in_channels=1 classes=10 width=32", 421738, "features.0.weight",
              "classifier.5.bias");
  /* GPT: wte V*E + wpe B*E + per layer (2 LN, attn 4E^2+4E, mlp 8E^2+5E) + ln_f */
  const int64_t E = 64, V = 65, B = 64, L = 2;
  const int64_t per_layer = 4 * E + 4 * E * E + 4 * E + 8 * E * E + 5 * E;
  check_count(s, "gpt n_layer=2 n_head=2 n_embd=64 vocab=65 block_size=64 dropout=0.0",
              V * E + B * E + L * per_layer + 2 * E, "wte.weight", "ln_f.bias");
  mixp_module *m = model(s, "gpt");
  assert_true(has_name(m, "h.1.attn.in_proj_weight", 0));
  assert_true(has_name(m, "h.0.mlp.c_fc.weight", 0));
  assert_false(has_name(m, "lm_head.weight", 0)); /* tied to wte.weight */
  mixp_module_destroy(m);
  /* dtype key */
  m = model(s, "mlp in=4 hidden=3 classes=2 dtype=f64");
  mixp_tensor *p = NULL;
  MT_OK(mixp_module_parameter(m, 0, &p));
  assert_int_equal(mixp_tensor_dtype(p), MIXP_F64);
  mixp_tensor_release(p);
  mixp_module_destroy(m);
  mixp_session_destroy(s);
}

/* ---- forward shapes -------------------------------------------------------------- */

static void check_forward_shape(mixp_session *s, const char *config, int eval,
                                const int64_t *xs, int xnd, const int64_t *ys, int ynd) {
  mixp_module *m = model(s, config);
  if (eval) MT_OK(mixp_module_set_training(m, 0));
  mixp_tensor *x = random_input(s, xs, xnd, 5), *y = NULL;
  MT_OK(mixp_module_forward(m, x, &y));
  expect_shape(y, ys, ynd);
  assert_int_equal(mixp_tensor_dtype(y), MIXP_F32);
  double *v = mt_values(y);
  for (int64_t i = 0; i < mixp_tensor_numel(y); ++i) assert_true(isfinite(v[i]));
  free(v);
  mixp_tensor_release(x);
  mixp_tensor_release(y);
  mixp_module_destroy(m);
}

static void test_forward_shapes(void **state) {
  (void)state;
  mixp_session *s = mt_session();
  const int64_t img1[4] = {2, 1, 28, 28}, flat[2] = {2, 784}, out10[2] = {2, 10};
  check_forward_shape(s, "mlp", 0, flat, 2, out10, 2);
  check_forward_shape(s, "mlp", 0, img1, 4, out10, 2);
  check_forward_shape(s, "cnn", 0, img1, 4, out10, 2);
  check_forward_shape(s, "cnn width=8 blocks=3 image_size=32 in_channels=3 classes=5", 0,
                      (const int64_t[]){3, 3, 32, 32}, 4, (const int64_t[]){3, 5}, 2);
  check_forward_shape(s, "resnet depth=18 classes=10 in_channels=1", 0,
                      (const int64_t[]){2, 1, 32, 32}, 4, out10, 2);
  /* one image: batch statistics of a 1x1 map are degenerate, so evaluate */
  check_forward_shape(s, "resnet depth=50", 1, (const int64_t[]){1, 3, 32, 32}, 4,
                      (const int64_t[]){1, 1000}, 2);
  check_forward_shape(s, "mobilenet_v3 size=small", 1, (const int64_t[]){2, 3, 32, 32}, 4,
                      (const int64_t[]){2, 1000}, 2);
  check_forward_shape(s, "mobilenet_v3 size=large classes=7 in_channels=1 width_mult=0.5", 1,
                      (const int64_t[]){1, 1, 40, 40}, 4, (const int64_t[]){1, 7}, 2);
  mixp_session_destroy(s);
}

static void test_gpt_forward(void **state) {
  (void)state;
  mixp_session *s = mt_session();
  mixp_module *m = model(s, "gpt n_layer=2 n_head=2 n_embd=64 vocab=65 block_size=64 dropout=0.0");
  int64_t idx[2 * 8];
  for (int i = 0; i < 16; ++i) idx[i] = (i * 11) % 65;
  const int64_t xs[2] = {2, 8}, ys[3] = {2, 8, 65};
  mixp_tensor *x = NULL, *y = NULL;
  MT_OK(mixp_tensor_from_host(s, idx, sizeof idx, MIXP_I64, xs, 2, &x));
  MT_OK(mixp_module_forward(m, x, &y));
  expect_shape(y, ys, 3);
  /* causal: the logits at position 0 do not depend on later tokens */
  int64_t idx2[16];
  memcpy(idx2, idx, sizeof idx);
  for (int i = 1; i < 8; ++i) idx2[i] = (idx2[i] + 5) % 65;
  mixp_tensor *x2 = NULL, *y2 = NULL;
  MT_OK(mixp_tensor_from_host(s, idx2, sizeof idx2, MIXP_I64, xs, 2, &x2));
  MT_OK(mixp_module_forward(m, x2, &y2));
  double *a = mt_values(y), *b = mt_values(y2);
  mt_assert_close(b, a, 65, 1e-6, 1e-6);                        /* batch 0, t = 0 */
  assert_memory_not_equal(a + 65, b + 65, sizeof(double) * 65); /* t = 1 differs */
  mt_assert_close(b + 8 * 65, a + 8 * 65, 8 * 65, 0, 0);        /* batch 1 untouched */
  free(a);
  free(b);
  mixp_tensor_release(x2);
  mixp_tensor_release(y2);
  mixp_tensor_release(y);

  /* input errors */
  y = (mixp_tensor *)0x1;
  mixp_tensor *xf = NULL, *xlong = NULL;
  MT_OK(mixp_cast(x, MIXP_F32, &xf));
  MT_FAILS(mixp_module_forward(m, xf, &y), MIXP_ERR_SHAPE,
           "gpt expects I64 token indices [B, T], got f32 [2,8]");
  const int64_t ls[2] = {1, 65};
  MT_OK(mixp_tensor_zeros(s, MIXP_I64, ls, 2, &xlong));
  MT_FAILS(mixp_module_forward(m, xlong, &y), MIXP_ERR_SHAPE,
           "sequence length 65 must be in [1, block_size=64]");
  assert_ptr_equal(y, (mixp_tensor *)0x1);
  mixp_tensor_release(xf);
  mixp_tensor_release(xlong);
  mixp_tensor_release(x);
  mixp_module_destroy(m);
  mixp_session_destroy(s);
}

static void test_image_input_errors(void **state) {
  (void)state;
  mixp_session *s = mt_session();
  mixp_tensor *x = NULL, *y = (mixp_tensor *)0x1;
  const int64_t xs[4] = {1, 2, 28, 28};
  MT_OK(mixp_tensor_zeros(s, MIXP_F32, xs, 4, &x));
  mixp_module *m = model(s, "resnet depth=18 classes=10 width=8");
  MT_FAILS(mixp_module_forward(m, x, &y), MIXP_ERR_SHAPE,
           "resnet expects NCHW input [N, 3, H, W] (key in_channels), got [1,2,28,28]");
  mixp_module_destroy(m);
  m = model(s, "mobilenet_v3_small width_mult=0.25");
  MT_FAILS(mixp_module_forward(m, x, &y), MIXP_ERR_SHAPE, "mobilenet_v3 expects NCHW input");
  mixp_module_destroy(m);
  m = model(s, "cnn in_channels=2 image_size=32 width=4");
  MT_FAILS(mixp_module_forward(m, x, &y), MIXP_ERR_SHAPE,
           "cnn expects NCHW input [N, 2, 32, 32] (keys in_channels and image_size), got "
           "[1,2,28,28]");
  mixp_module_destroy(m);
  assert_ptr_equal(y, (mixp_tensor *)0x1);
  mixp_tensor_release(x);
  mixp_session_destroy(s);
}

/* ---- training ------------------------------------------------------------------------ */

/* The step budget of every training test below (see train_with): measured,
 * the slowest (resnet50) needed 8-16 steps across 1/2/4 threads and oneDNN
 * at its default ISA, AVX2 and SSE4.1; the others 3-13. */
enum { STEP_BUDGET = 40 };

/* Memorising one tiny batch is what every model here must be able to do:
 * trains with AdamW on the fixed batch (x, target) until the mean of the last
 * three losses falls below `ratio` times the first loss, and returns the
 * number of steps that took, or -1 if `max_steps` were not enough. How many
 * steps it takes depends on rounding (the GEMM kernel the CPU picks, the
 * thread count): batch norm over four samples makes single trajectories
 * noisy, so the budget is well over twice the most any measured run
 * needed (1/2/4 threads; oneDNN at its default ISA, AVX2 and SSE4.1), and
 * the loop stops as soon as the goal is met. Under `amp` (may be NULL) the
 * forward and the loss run inside that autocast region. `opt` steps the
 * parameters. For gpt, x holds tokens and the targets are the next tokens.
 * *first gets the first loss, *reached the last three-loss mean. */
static int train_with(mixp_session *s, mixp_module *m, mixp_optimizer *opt, mixp_tensor *x,
                      mixp_tensor *target, int64_t classes, double ratio, int max_steps,
                      const mixp_autocast_options *amp, double *first, double *reached) {
  double recent[3] = {0, 0, 0};
  int steps = -1;
  for (int k = 0; k <= max_steps; ++k) {
    mixp_tensor *y = NULL, *y2 = NULL, *loss = NULL;
    if (amp) MT_OK(mixp_autocast_push(s, amp));
    MT_OK(mixp_module_forward(m, x, &y));
    const int64_t flat[2] = {-1, classes};
    MT_OK(mixp_reshape(y, flat, 2, &y2));
    MT_OK(mixp_cross_entropy(y2, target, MIXP_REDUCTION_MEAN, MIXP_IGNORE_INDEX_DEFAULT, &loss));
    if (amp) {
      MT_OK(mixp_autocast_pop(s));
      assert_int_equal(mixp_tensor_dtype(y), amp->dtype);
    }
    double lv = 0;
    MT_OK(mixp_tensor_item(loss, &lv));
    assert_true(isfinite(lv));
    if (k == 0) *first = recent[0] = recent[1] = lv;
    recent[k % 3] = lv;
    *reached = (recent[0] + recent[1] + recent[2]) / 3;
    const int done = k >= 2 && *reached < ratio * *first;
    if (!done && k < max_steps) {
      MT_OK(mixp_optimizer_zero_grad(opt));
      MT_OK(mixp_backward(loss, NULL));
      MT_OK(mixp_optimizer_step(opt));
    }
    mixp_tensor_release(loss);
    mixp_tensor_release(y2);
    mixp_tensor_release(y);
    if (done) {
      steps = k;
      break;
    }
  }
  return steps;
}

/* train_with() an AdamW optimizer of learning rate lr over m's parameters. */
static int train(mixp_session *s, mixp_module *m, mixp_tensor *x, mixp_tensor *target,
                 int64_t classes, double lr, double ratio, int max_steps, double *first,
                 double *reached) {
  int n = mixp_module_num_parameters(m);
  mixp_tensor **ps = malloc(sizeof(mixp_tensor *) * (size_t)n);
  for (int i = 0; i < n; ++i) MT_OK(mixp_module_parameter(m, i, &ps[i]));
  mixp_optimizer_options o;
  mixp_optimizer_options_init(&o, MIXP_OPTIM_ADAMW);
  o.lr = lr;
  mixp_optimizer *opt = NULL;
  MT_OK(mixp_optimizer_create(s, ps, n, &o, &opt));
  int steps = train_with(s, m, opt, x, target, classes, ratio, max_steps, NULL, first, reached);
  mixp_optimizer_destroy(opt);
  for (int i = 0; i < n; ++i) mixp_tensor_release(ps[i]);
  free(ps);
  return steps;
}

/* Fails with the trajectory's end points when train() did not get there. */
static void expect_trained(const char *what, int steps, int max_steps, double first,
                           double reached) {
  if (getenv("MIXP_TEST_VERBOSE"))
    print_message("%s: loss %g -> %g in %d of %d steps\n", what, first, reached, steps, max_steps);
  if (steps < 0) {
    print_error("%s: loss %g -> %g (mean of the last three) after %d steps\n", what, first,
                reached, max_steps);
    fail();
  }
}

static void check_image_training(const char *config, const int64_t *xs, int64_t classes,
                                 double lr, double ratio, int max_steps) {
  mixp_session *s = mt_session();
  mixp_module *m = model(s, config);
  mixp_tensor *x = random_input(s, xs, 4, 77), *t = labels(s, xs[0], classes);
  double first = 0, reached = 0;
  int steps = train(s, m, x, t, classes, lr, ratio, max_steps, &first, &reached);
  expect_trained(config, steps, max_steps, first, reached);
  mixp_tensor_release(x);
  mixp_tensor_release(t);
  mixp_module_destroy(m);
  mixp_session_destroy(s);
}

static void test_train_mlp_cnn(void **state) {
  (void)state;
  check_image_training("mlp in=64 hidden=32 classes=4", (const int64_t[]){8, 1, 8, 8}, 4, 1e-2,
                       0.5, STEP_BUDGET);
  check_image_training("cnn in_channels=1 classes=4 width=4 image_size=8 hidden=16 dropout=0",
                       (const int64_t[]){8, 1, 8, 8}, 4, 1e-2, 0.5, STEP_BUDGET);
}

static void test_train_resnet(void **state) {
  (void)state;
  check_image_training("resnet depth=18 classes=4 in_channels=1 width=8",
                       (const int64_t[]){4, 1, 16, 16}, 4, 1e-2, 0.5, STEP_BUDGET);
  check_image_training("resnet depth=50 classes=3 in_channels=2 width=4",
                       (const int64_t[]){4, 2, 32, 32}, 3, 1e-3, 0.5, STEP_BUDGET);
}

static void test_train_mobilenet(void **state) {
  (void)state;
  check_image_training("mobilenet_v3 size=small classes=4 in_channels=1 width_mult=0.25 dropout=0",
                       (const int64_t[]){4, 1, 32, 32}, 4, 1e-2, 0.5, STEP_BUDGET);
}

static void test_train_gpt(void **state) {
  (void)state;
  enum { B = 2, T = 8, V = 11 };
  mixp_session *s = mt_session();
  mixp_module *m = model(s, "gpt n_layer=1 n_head=2 n_embd=16 vocab=11 block_size=8");
  int64_t seq[B * (T + 1)], in[B * T], tg[B * T];
  for (int i = 0; i < B * (T + 1); ++i) seq[i] = (i * 3 + i / 4) % V;
  for (int b = 0; b < B; ++b)
    for (int t = 0; t < T; ++t) {
      in[b * T + t] = seq[b * (T + 1) + t];
      tg[b * T + t] = seq[b * (T + 1) + t + 1];
    }
  const int64_t xs[2] = {B, T}, ts[1] = {B * T};
  mixp_tensor *x = NULL, *t = NULL;
  MT_OK(mixp_tensor_from_host(s, in, sizeof in, MIXP_I64, xs, 2, &x));
  MT_OK(mixp_tensor_from_host(s, tg, sizeof tg, MIXP_I64, ts, 1, &t));
  double first = 0, reached = 0;
  int steps = train(s, m, x, t, V, 1e-2, 0.5, STEP_BUDGET, &first, &reached);
  /* starts near log(V) (small init), memorises the batch */
  assert_true(fabs(first - log((double)V)) < 0.3);
  expect_trained("gpt", steps, STEP_BUDGET, first, reached);
  mixp_tensor_release(x);
  mixp_tensor_release(t);
  mixp_module_destroy(m);
  mixp_session_destroy(s);
}

/* O2: decorate casts the model to bf16 except its norm layers, which take
 * bf16 activations; training inside an O2 autocast region lowers the loss. */
static void check_o2_training(const char *config, int gpt) {
  mixp_session *s = mt_session();
  mixp_module *m = model(s, config);
  int n = mixp_module_num_parameters(m);
  mixp_tensor **ps = malloc(sizeof(mixp_tensor *) * (size_t)n);
  for (int i = 0; i < n; ++i) MT_OK(mixp_module_parameter(m, i, &ps[i]));
  mixp_optimizer_options o;
  mixp_optimizer_options_init(&o, MIXP_OPTIM_ADAMW);
  o.lr = 1e-2;
  mixp_optimizer *opt = NULL;
  MT_OK(mixp_optimizer_create(s, ps, n, &o, &opt));
  mixp_decorate_options d;
  mixp_decorate_options_init(&d);
  d.dtype = MIXP_BF16;
  MT_OK(mixp_amp_decorate(m, opt, &d));
  for (int i = 0; i < n; ++i) {
    const char *name = mixp_module_parameter_name(m, i);
    int norm = strstr(name, "ln_") || strstr(name, "features.1.") || strstr(name, "features.5.");
    mixp_tensor *p = NULL;
    MT_OK(mixp_module_parameter(m, i, &p));
    assert_int_equal(mixp_tensor_dtype(p), norm ? MIXP_F32 : MIXP_BF16);
    mixp_tensor_release(p);
  }
  mixp_tensor *x = NULL, *t = NULL;
  int64_t classes = gpt ? 11 : 10;
  if (gpt) {
    int64_t idx[16], tg[16];
    for (int i = 0; i < 16; ++i) {
      idx[i] = (i * 5) % 11;
      tg[i] = (i * 5 + 5) % 11;
    }
    const int64_t xs[2] = {2, 8}, ts[1] = {16};
    MT_OK(mixp_tensor_from_host(s, idx, sizeof idx, MIXP_I64, xs, 2, &x));
    MT_OK(mixp_tensor_from_host(s, tg, sizeof tg, MIXP_I64, ts, 1, &t));
  } else {
    const int64_t xs[4] = {4, 1, 28, 28};
    mixp_tensor *xf = random_input(s, xs, 4, 3);
    MT_OK(mixp_cast(xf, MIXP_BF16, &x));
    mixp_tensor_release(xf);
    t = labels(s, 4, classes);
  }
  mixp_autocast_options ao;
  mixp_autocast_options_init(&ao);
  ao.level = MIXP_AMP_O2;
  ao.dtype = MIXP_BF16;
  double first = 0, reached = 0;
  int steps = train_with(s, m, opt, x, t, classes, 0.5, STEP_BUDGET, &ao, &first, &reached);
  expect_trained(config, steps, STEP_BUDGET, first, reached);
  mixp_tensor_release(x);
  mixp_tensor_release(t);
  mixp_optimizer_destroy(opt);
  for (int i = 0; i < n; ++i) mixp_tensor_release(ps[i]);
  free(ps);
  mixp_module_destroy(m);
  mixp_session_destroy(s);
}

static void test_o2_decorated_training(void **state) {
  (void)state;
  check_o2_training("cnn width=8 dropout=0", 0);
  check_o2_training("gpt n_layer=1 n_head=2 n_embd=16 vocab=11 block_size=8", 1);
}

/* Models built from the same seed are identical; the stream advances. */
static void test_seeded_construction(void **state) {
  (void)state;
  mixp_session *s = mt_session();
  MT_OK(mixp_session_set_seed(s, 5));
  mixp_module *a = model(s, "cnn width=4");
  mixp_module *c = model(s, "cnn width=4");
  MT_OK(mixp_session_set_seed(s, 5));
  mixp_module *b = model(s, "cnn width=4");
  mixp_tensor *pa = NULL, *pb = NULL, *pc = NULL;
  /* features.4.weight: the second conv */
  assert_string_equal(mixp_module_parameter_name(a, 3), "features.4.weight");
  MT_OK(mixp_module_parameter(a, 3, &pa));
  MT_OK(mixp_module_parameter(b, 3, &pb));
  MT_OK(mixp_module_parameter(c, 3, &pc));
  double *va = mt_values(pa), *vb = mt_values(pb), *vc = mt_values(pc);
  int64_t n = mixp_tensor_numel(pa);
  assert_memory_equal(va, vb, sizeof(double) * (size_t)n);
  assert_memory_not_equal(va, vc, sizeof(double) * (size_t)n);
  free(va);
  free(vb);
  free(vc);
  mixp_tensor_release(pa);
  mixp_tensor_release(pb);
  mixp_tensor_release(pc);
  mixp_module_destroy(a);
  mixp_module_destroy(b);
  mixp_module_destroy(c);
  mixp_session_destroy(s);
}

/* One training-mode forward and backward of a model built with `seed`:
 * the output, every parameter's gradient and every buffer, as values. */
typedef struct zoo_run {
  double *out, *grads[160], *bufs[160];
  int64_t nout, ngrad[160], nbuf[160];
  int np, nb;
} zoo_run;

static zoo_run zoo_step(mixp_session *s, const char *config, const int64_t *xs) {
  zoo_run r;
  MT_OK(mixp_session_set_seed(s, 11));
  mixp_module *m = model(s, config);
  r.np = mixp_module_num_parameters(m);
  r.nb = mixp_module_num_buffers(m);
  assert_true(r.np <= 160 && r.nb <= 160);
  int64_t n = xs[0] * xs[1] * xs[2] * xs[3];
  double *v = malloc(sizeof(double) * (size_t)n);
  mt_fill(v, n, -1, 1, 12);
  mixp_tensor *x = mt_tensor(s, MIXP_F64, v, xs, 4), *y = NULL, *sq = NULL, *loss = NULL;
  free(v);
  MT_OK(mixp_module_forward(m, x, &y));
  MT_OK(mixp_mul(y, y, &sq));
  MT_OK(mixp_sum(sq, NULL, 0, 0, &loss));
  MT_OK(mixp_backward(loss, NULL));
  r.out = mt_values(y);
  r.nout = mixp_tensor_numel(y);
  for (int i = 0; i < r.np; ++i) {
    mixp_tensor *p = NULL, *g = NULL;
    MT_OK(mixp_module_parameter(m, i, &p));
    MT_OK(mixp_tensor_grad(p, &g));
    assert_non_null(g);
    r.grads[i] = mt_values(g);
    r.ngrad[i] = mixp_tensor_numel(g);
    mixp_tensor_release(g);
    mixp_tensor_release(p);
  }
  for (int i = 0; i < r.nb; ++i) {
    mixp_tensor *b = NULL;
    MT_OK(mixp_module_buffer(m, i, &b));
    r.bufs[i] = mt_values(b);
    r.nbuf[i] = mixp_tensor_numel(b);
    mixp_tensor_release(b);
  }
  mixp_tensor *all[4] = {x, y, sq, loss};
  for (int i = 0; i < 4; ++i) mixp_tensor_release(all[i]);
  mixp_module_destroy(m);
  return r;
}

static void free_run(zoo_run *r) {
  free(r->out);
  for (int i = 0; i < r->np; ++i) free(r->grads[i]);
  for (int i = 0; i < r->nb; ++i) free(r->bufs[i]);
}

/* channels_last=1 (NHWC activations inside) computes what channels_last=0
 * does from the same parameters: the output, every gradient and the batch
 * norms' running statistics agree to rounding (F64 here). A CPU session's
 * default is channels_last=1 for cnn and resnet, 0 for mobilenet_v3, bit
 * for bit. */
static void test_channels_last(void **state) {
  (void)state;
  mixp_session *s = mt_session();
  const char *configs[3] = {"cnn width=4 hidden=8 image_size=12 blocks=2 dropout=0 dtype=f64",
                            "resnet depth=18 width=4 classes=5 in_channels=3 dtype=f64",
                            "mobilenet_v3_small width_mult=0.25 classes=5 dropout=0 dtype=f64"};
  const int64_t shapes[3][4] = {{3, 1, 12, 12}, {2, 3, 20, 20}, {2, 3, 64, 64}};
  const int default_nhwc[3] = {1, 1, 0};
  for (int k = 0; k < 3; ++k) {
    char nchw[160], nhwc[160];
    snprintf(nchw, sizeof nchw, "%s channels_last=0", configs[k]);
    snprintf(nhwc, sizeof nhwc, "%s channels_last=1", configs[k]);
    zoo_run a = zoo_step(s, nchw, shapes[k]), b = zoo_step(s, nhwc, shapes[k]);
    zoo_run d = zoo_step(s, configs[k], shapes[k]);
    assert_int_equal(a.nout, b.nout);
    mt_assert_close(b.out, a.out, a.nout, 1e-10, 1e-10);
    const int nhwc_default = mt_on_cpu() ? default_nhwc[k] : 0; /* NCHW on CUDA (models.hpp) */
    assert_memory_equal(d.out, nhwc_default ? b.out : a.out, sizeof(double) * (size_t)b.nout);
    assert_int_equal(a.np, b.np);
    for (int i = 0; i < a.np; ++i) {
      assert_int_equal(a.ngrad[i], b.ngrad[i]);
      mt_assert_close(b.grads[i], a.grads[i], a.ngrad[i], 1e-9, 1e-9);
    }
    assert_int_equal(a.nb, b.nb);
    for (int i = 0; i < a.nb; ++i) mt_assert_close(b.bufs[i], a.bufs[i], a.nbuf[i], 1e-10, 1e-10);
    free_run(&a);
    free_run(&b);
    free_run(&d);
  }
  mixp_session_destroy(s);
}

/* Kaiming-normal fan_out convs (torchvision) and N(0, 0.01) classifier. */
static void test_zoo_inits(void **state) {
  (void)state;
  mixp_session *s = mt_session();
  mixp_module *m = model(s, "mobilenet_v3_small classes=500");
  int n = mixp_module_num_parameters(m);
  for (int i = 0; i < n; ++i) {
    const char *name = mixp_module_parameter_name(m, i);
    mixp_tensor *p = NULL;
    MT_OK(mixp_module_parameter(m, i, &p));
    int64_t cnt = mixp_tensor_numel(p);
    double *v = mt_values(p), ss = 0;
    for (int64_t k = 0; k < cnt; ++k) ss += v[k] * v[k];
    double sd = sqrt(ss / (double)cnt);
    if (strcmp(name, "classifier.3.weight") == 0) {
      assert_true(fabs(sd - 0.01) < 0.001);
    } else if (strcmp(name, "features.12.0.weight") == 0) {
      /* 1x1 conv 96 -> 576: std sqrt(2 / 576) */
      assert_true(fabs(sd / sqrt(2.0 / 576.0) - 1.0) < 0.05);
    } else if (strstr(name, "fc1.bias") || strcmp(name, "classifier.0.bias") == 0) {
      assert_true(ss == 0.0);
    }
    free(v);
    mixp_tensor_release(p);
  }
  mixp_module_destroy(m);
  m = model(s, "resnet18");
  mixp_tensor *p = NULL;
  MT_OK(mixp_module_parameter(m, 0, &p)); /* conv1 [64, 3, 7, 7]: std sqrt(2 / (64 * 49)) */
  int64_t cnt = mixp_tensor_numel(p);
  double *v = mt_values(p), ss = 0;
  for (int64_t k = 0; k < cnt; ++k) ss += v[k] * v[k];
  assert_true(fabs(sqrt(ss / (double)cnt) / sqrt(2.0 / (64.0 * 49.0)) - 1.0) < 0.05);
  free(v);
  mixp_tensor_release(p);
  mixp_module_destroy(m);
  mixp_session_destroy(s);
}

/* ---- configuration errors ------------------------------------------------------- */

static void test_config_errors(void **state) {
  (void)state;
  mixp_session *s = mt_session();
  mixp_module *m = (mixp_module *)0x1;
  MT_FAILS(mixp_model_create(NULL, "mlp", &m), MIXP_ERR_INVALID_ARGUMENT,
           "mixp_model_create: session is NULL");
  MT_FAILS(mixp_model_create(s, NULL, &m), MIXP_ERR_INVALID_ARGUMENT,
           "mixp_model_create: config is NULL");
  MT_FAILS(mixp_model_create(s, "mlp", NULL), MIXP_ERR_INVALID_ARGUMENT,
           "mixp_model_create: out is NULL");
  MT_FAILS(mixp_model_create(s, "", &m), MIXP_ERR_INVALID_ARGUMENT, "config is empty");
  MT_FAILS(mixp_model_create(s, "   \t", &m), MIXP_ERR_INVALID_ARGUMENT, "config is empty");
  MT_FAILS(mixp_model_create(s, "transformer n_layer=2", &m), MIXP_ERR_INVALID_ARGUMENT,
           "unknown model 'transformer'");
  MT_FAILS(mixp_model_create(s, "depth=18", &m), MIXP_ERR_INVALID_ARGUMENT,
           "config must start with a model name, got 'depth=18'");
  MT_FAILS(mixp_model_create(s, "resnet depht=18", &m), MIXP_ERR_INVALID_ARGUMENT,
           "resnet: unknown key 'depht' (known keys: depth, classes, in_channels, width, dtype, checkpoint, channels_last)");
  MT_FAILS(mixp_model_create(s, "resnet depth=", &m), MIXP_ERR_INVALID_ARGUMENT,
           "key 'depth' has no value");
  MT_FAILS(mixp_model_create(s, "resnet depth", &m), MIXP_ERR_INVALID_ARGUMENT,
           "'depth' is not a key=value pair");
  MT_FAILS(mixp_model_create(s, "resnet =18", &m), MIXP_ERR_INVALID_ARGUMENT, "empty key");
  MT_FAILS(mixp_model_create(s, "resnet depth=abc", &m), MIXP_ERR_INVALID_ARGUMENT,
           "invalid value 'abc' for key 'depth'");
  MT_FAILS(mixp_model_create(s, "resnet depth=18x", &m), MIXP_ERR_INVALID_ARGUMENT,
           "invalid value '18x' for key 'depth'");
  MT_FAILS(mixp_model_create(s, "resnet depth=101", &m), MIXP_ERR_INVALID_ARGUMENT,
           "invalid value '101' for key 'depth': expected 18, 34 or 50");
  MT_FAILS(mixp_model_create(s, "resnet depth=18 depth=34", &m), MIXP_ERR_INVALID_ARGUMENT,
           "key 'depth' is given twice");
  MT_FAILS(mixp_model_create(s, "resnet18 depth=50", &m), MIXP_ERR_INVALID_ARGUMENT,
           "key 'depth' is implied by the name 'resnet18'");
  MT_FAILS(mixp_model_create(s, "resnet classes=0", &m), MIXP_ERR_INVALID_ARGUMENT,
           "invalid value '0' for key 'classes': expected an integer in [1,");
  MT_FAILS(mixp_model_create(s, "resnet classes=99999999999999999999", &m),
           MIXP_ERR_INVALID_ARGUMENT, "for key 'classes'");
  MT_FAILS(mixp_model_create(s, "mobilenet_v3 size=medium", &m), MIXP_ERR_INVALID_ARGUMENT,
           "invalid value 'medium' for key 'size': expected one of large, small");
  MT_FAILS(mixp_model_create(s, "mobilenet_v3 width_mult=-1", &m), MIXP_ERR_INVALID_ARGUMENT,
           "invalid value '-1' for key 'width_mult'");
  MT_FAILS(mixp_model_create(s, "mobilenet_v3 width_mult=nan", &m), MIXP_ERR_INVALID_ARGUMENT,
           "width_mult");
  MT_FAILS(mixp_model_create(s, "mobilenet_v3_small size=large", &m), MIXP_ERR_INVALID_ARGUMENT,
           "key 'size' is implied");
  MT_FAILS(mixp_model_create(s, "mlp hidden=64,x", &m), MIXP_ERR_INVALID_ARGUMENT,
           "invalid value '64,x' for key 'hidden': expected a comma-separated list");
  MT_FAILS(mixp_model_create(s, "mlp hidden=64,,3", &m), MIXP_ERR_INVALID_ARGUMENT, "hidden");
  MT_FAILS(mixp_model_create(s, "mlp dropout=1", &m), MIXP_ERR_INVALID_ARGUMENT,
           "invalid value '1' for key 'dropout': expected a number in [0, 1)");
  MT_FAILS(mixp_model_create(s, "mlp dtype=i32", &m), MIXP_ERR_INVALID_ARGUMENT,
           "invalid value 'i32' for key 'dtype': expected one of f32, f64, f16, bf16");
  MT_FAILS(mixp_model_create(s, "cnn image_size=3 blocks=2", &m), MIXP_ERR_INVALID_ARGUMENT,
           "image_size=3 is too small for blocks=2");
  MT_FAILS(mixp_model_create(s, "cnn blocks=5", &m), MIXP_ERR_INVALID_ARGUMENT,
           "invalid value '5' for key 'blocks'");
  MT_FAILS(mixp_model_create(s, "gpt n_embd=10 n_head=3", &m), MIXP_ERR_INVALID_ARGUMENT,
           "n_embd=10 must be divisible by n_head=3");
  MT_FAILS(mixp_model_create(s, "gpt vocab=-5", &m), MIXP_ERR_INVALID_ARGUMENT,
           "invalid value '-5' for key 'vocab'");
  MT_FAILS(mixp_model_create(s, "gpt depth=2", &m), MIXP_ERR_INVALID_ARGUMENT,
           "gpt: unknown key 'depth'");
  assert_ptr_equal(m, (mixp_module *)0x1);
  /* whitespace of any kind separates pairs */
  m = NULL;
  MT_OK(mixp_model_create(s, "  mlp\tin=4\n hidden=3  classes=2 ", &m));
  assert_int_equal(mixp_module_num_parameter_elements(m), 4 * 3 + 3 + 3 * 2 + 2);
  mixp_module_destroy(m);
  mixp_session_destroy(s);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_resnet_parameter_counts),
      cmocka_unit_test(test_mobilenet_parameter_counts),
      cmocka_unit_test(test_small_model_counts),
      cmocka_unit_test(test_forward_shapes),
      cmocka_unit_test(test_gpt_forward),
      cmocka_unit_test(test_image_input_errors),
      cmocka_unit_test(test_train_mlp_cnn),
      cmocka_unit_test(test_train_resnet),
      cmocka_unit_test(test_train_mobilenet),
      cmocka_unit_test(test_train_gpt),
      cmocka_unit_test(test_o2_decorated_training),
      cmocka_unit_test(test_seeded_construction),
      cmocka_unit_test(test_channels_last),
      cmocka_unit_test(test_zoo_inits),
      cmocka_unit_test(test_config_errors),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
