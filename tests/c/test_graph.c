/* Captured training steps (mixp_graph_*): a step captured once and replayed
 * is bitwise the eager step, for MLP/CNN/GPT at O0, O1 and O2 (bf16, and f16
 * with a GradScaler that skips and backs off during the replays), with
 * dropout, batch norm, an LR warmup/cosine schedule, 4-way accumulation,
 * clipping, and after save/load of the training state. Each case runs two
 * identically seeded sessions: one eager, one that warms up, captures and
 * replays; after every step the losses, parameters, learning rates and
 * scales must agree bit for bit. Then the misuse of every function. */
#include <unistd.h>

#include "test_util.h"

enum { MAX_MICRO = 4 };

typedef struct {
  const char *config;
  int kind;        /* 0 mlp [B, 784], 1 cnn [B, 1, 12, 12], 2 gpt [B, T] */
  int level;       /* 0 none, 1 O1 bf16, 2 O2 bf16, 3 O2 f16 + dynamic scaler */
  int schedule;    /* warmup-cosine */
  int micro;       /* micro-batches per step */
  double clip;     /* 0: none */
  int inject_inf;  /* steps 3 and 5 get an Inf input */
  int warmup;      /* eager steps before the capture (0: capture the first) */
} recipe;

typedef struct {
  mixp_session *s;
  mixp_module *m;
  mixp_optimizer *opt;
  mixp_grad_scaler *sc;
  mixp_tensor *x[MAX_MICRO], *t[MAX_MICRO];
  mixp_tensor *loss;
  mixp_tensor **ps;
  int n;
} rig;

enum { B = 4, T = 8, VOCAB = 11 };

static void input_shape(const recipe *r, int64_t *shape, int *ndim) {
  if (r->kind == 0) {
    shape[0] = B, shape[1] = 784, *ndim = 2;
  } else if (r->kind == 1) {
    shape[0] = B, shape[1] = 1, shape[2] = 12, shape[3] = 12, *ndim = 4;
  } else {
    shape[0] = B, shape[1] = T, *ndim = 2;
  }
}

/* The inputs of step `step`, micro-batch k, as host values. */
static void host_batch(const recipe *r, int step, int k, double *x, int64_t nx, int64_t *t, int64_t nt) {
  mt_fill(x, nx, -1, 1, (uint64_t)(1000 + 17 * step + k));
  for (int64_t i = 0; i < nt; ++i) t[i] = (i * 7 + step * 3 + k) % (r->kind == 2 ? VOCAB : 10);
  if (r->kind == 2)
    for (int64_t i = 0; i < nx; ++i) x[i] = (double)((i * 5 + step + k) % VOCAB);
  if (r->inject_inf && (step == 3 || step == 5) && k == 0) x[0] = r->kind == 2 ? x[0] : INFINITY;
}

/* Refills the rig's inputs in place (outside any capture). */
static void refill(rig *g, const recipe *r, int step) {
  int64_t shape[4];
  int nd;
  input_shape(r, shape, &nd);
  for (int k = 0; k < r->micro; ++k) {
    const int64_t nx = mixp_tensor_numel(g->x[k]), nt = mixp_tensor_numel(g->t[k]);
    double *x = malloc(sizeof(double) * (size_t)nx);
    int64_t *t = malloc(sizeof(int64_t) * (size_t)nt), *xi = malloc(sizeof(int64_t) * (size_t)nx);
    host_batch(r, step, k, x, nx, t, nt);
    mixp_tensor *xs = NULL, *ts = NULL;
    if (r->kind == 2) {
      for (int64_t i = 0; i < nx; ++i) xi[i] = (int64_t)x[i];
      MT_OK(mixp_tensor_from_host(g->s, xi, sizeof(int64_t) * (size_t)nx, MIXP_I64, shape, nd, &xs));
    } else {
      xs = mt_tensor(g->s, MIXP_F32, x, shape, nd);
    }
    MT_OK(mixp_tensor_copy_(g->x[k], xs));
    const int64_t ts_shape[1] = {nt};
    MT_OK(mixp_tensor_from_host(g->s, t, sizeof(int64_t) * (size_t)nt, MIXP_I64, ts_shape, 1, &ts));
    MT_OK(mixp_tensor_copy_(g->t[k], ts));
    mixp_tensor_release(ts);
    mixp_tensor_release(xs);
    free(x);
    free(t);
    free(xi);
  }
}

static rig make_rig(const recipe *r) {
  rig g;
  memset(&g, 0, sizeof g);
  g.s = mt_session();
  MT_OK(mixp_model_create(g.s, r->config, &g.m));
  g.n = mixp_module_num_parameters(g.m);
  g.ps = malloc(sizeof(mixp_tensor *) * (size_t)g.n);
  for (int i = 0; i < g.n; ++i) MT_OK(mixp_module_parameter(g.m, i, &g.ps[i]));
  mixp_optimizer_options o;
  mixp_optimizer_options_init(&o, MIXP_OPTIM_ADAMW);
  o.lr = 1e-3;
  if (r->schedule) {
    o.schedule = MIXP_LR_WARMUP_COSINE;
    o.warmup_steps = 3;
    o.total_steps = 8;
    o.min_lr = 1e-5;
  }
  MT_OK(mixp_optimizer_create(g.s, g.ps, g.n, &o, &g.opt));
  if (r->level >= 2) {
    mixp_decorate_options d;
    mixp_decorate_options_init(&d);
    d.dtype = r->level == 3 ? MIXP_F16 : MIXP_BF16;
    MT_OK(mixp_amp_decorate(g.m, g.opt, &d));
  }
  if (r->level == 3) {
    mixp_grad_scaler_options so;
    mixp_grad_scaler_options_init(&so);
    so.mode = MIXP_SCALER_DYNAMIC;
    so.init_scale = 1024;
    so.growth_interval = 2;
    MT_OK(mixp_grad_scaler_create(g.s, &so, &g.sc));
  }
  int64_t shape[4];
  int nd;
  input_shape(r, shape, &nd);
  const mixp_dtype xd = r->kind == 2 ? MIXP_I64 : (r->level >= 2 ? (r->level == 3 ? MIXP_F16 : MIXP_BF16) : MIXP_F32);
  const int64_t nt[1] = {r->kind == 2 ? B * T : B};
  for (int k = 0; k < r->micro; ++k) {
    MT_OK(mixp_tensor_zeros(g.s, xd, shape, nd, &g.x[k]));
    MT_OK(mixp_tensor_zeros(g.s, MIXP_I64, nt, 1, &g.t[k]));
  }
  return g;
}

static void free_rig(rig *g) {
  for (int k = 0; k < MAX_MICRO; ++k) {
    mixp_tensor_release(g->x[k]);
    mixp_tensor_release(g->t[k]);
  }
  mixp_tensor_release(g->loss);
  mixp_grad_scaler_destroy(g->sc);
  mixp_optimizer_destroy(g->opt);
  for (int i = 0; i < g->n; ++i) mixp_tensor_release(g->ps[i]);
  free(g->ps);
  mixp_module_destroy(g->m);
  mixp_session_destroy(g->s);
}

/* One ordinary training step, exactly as a host writes it eagerly. */
static void train_step(rig *g, const recipe *r) {
  MT_OK(mixp_optimizer_zero_grad(g->opt));
  for (int k = 0; k < r->micro; ++k) {
    if (r->level) {
      mixp_autocast_options ao;
      mixp_autocast_options_init(&ao);
      ao.level = r->level == 1 ? MIXP_AMP_O1 : MIXP_AMP_O2;
      ao.dtype = r->level == 3 ? MIXP_F16 : MIXP_BF16;
      MT_OK(mixp_autocast_push(g->s, &ao));
    }
    mixp_tensor *y = NULL, *loss = NULL;
    MT_OK(mixp_module_forward(g->m, g->x[k], &y));
    if (r->kind == 2) {
      const int64_t flat[2] = {B * T, VOCAB};
      mixp_tensor *y2 = NULL;
      MT_OK(mixp_reshape(y, flat, 2, &y2));
      mixp_tensor_release(y);
      y = y2;
    }
    MT_OK(mixp_cross_entropy(y, g->t[k], MIXP_REDUCTION_MEAN, MIXP_IGNORE_INDEX_DEFAULT, &loss));
    mixp_tensor_release(y);
    if (r->level) MT_OK(mixp_autocast_pop(g->s));
    if (r->micro > 1) {
      mixp_tensor *part = NULL;
      MT_OK(mixp_mul_scalar(loss, 1.0 / r->micro, &part));
      mixp_tensor_release(loss);
      loss = part;
    }
    mixp_tensor *scaled = NULL;
    if (g->sc) MT_OK(mixp_grad_scaler_scale(g->sc, loss, &scaled));
    MT_OK(mixp_backward(scaled ? scaled : loss, NULL));
    mixp_tensor_release(scaled);
    mixp_tensor_release(g->loss);
    g->loss = loss;
  }
  if (g->sc) MT_OK(mixp_grad_scaler_unscale(g->sc, g->opt));
  if (r->clip > 0) MT_OK(mixp_clip_grad_norm(g->opt, r->clip, NULL));
  if (g->sc) {
    MT_OK(mixp_grad_scaler_step(g->sc, g->opt));
    MT_OK(mixp_grad_scaler_update(g->sc));
  } else {
    MT_OK(mixp_optimizer_step(g->opt));
  }
}

static void assert_same_bits(const mixp_tensor *a, const mixp_tensor *b, const char *what, int step) {
  const size_t n = (size_t)mixp_tensor_numel(a) * mixp_dtype_size(mixp_tensor_dtype(a));
  assert_int_equal(n, (size_t)mixp_tensor_numel(b) * mixp_dtype_size(mixp_tensor_dtype(b)));
  unsigned char *x = malloc(n + 1), *y = malloc(n + 1);
  MT_OK(mixp_tensor_to_host(a, x, n));
  MT_OK(mixp_tensor_to_host(b, y, n));
  if (memcmp(x, y, n) != 0) {
    print_error("step %d: %s differs between eager and replayed steps\n", step, what);
    fail();
  }
  free(x);
  free(y);
}

static void assert_rigs_equal(const rig *e, const rig *g, int step) {
  assert_same_bits(e->loss, g->loss, "the loss", step);
  for (int i = 0; i < e->n; ++i) assert_same_bits(e->ps[i], g->ps[i], mixp_module_parameter_name(e->m, i), step);
  double la, lb;
  MT_OK(mixp_optimizer_get_lr(e->opt, &la));
  MT_OK(mixp_optimizer_get_lr(g->opt, &lb));
  assert_true(la == lb);
  if (e->sc) {
    MT_OK(mixp_grad_scaler_get_scale(e->sc, &la));
    MT_OK(mixp_grad_scaler_get_scale(g->sc, &lb));
    assert_true(la == lb);
  }
}

/* Eager against warm-up + capture + replays, `steps` steps in all. */
static void check_recipe(const recipe *r, int steps) {
  mt_skip_unless_cpu();
  rig e = make_rig(r), g = make_rig(r);
  mixp_graph *graph = NULL;
  double scale_before_inf = 0, scale_after_inf = 0;
  for (int step = 0; step < steps; ++step) {
    refill(&e, r, step);
    refill(&g, r, step);
    train_step(&e, r);
    if (step < r->warmup) {
      train_step(&g, r);
    } else if (step == r->warmup) {
      MT_OK(mixp_graph_capture_begin(g.s));
      train_step(&g, r);
      MT_OK(mixp_graph_capture_end(g.s, &graph));
    } else {
      MT_OK(mixp_graph_replay(graph));
    }
    assert_rigs_equal(&e, &g, step);
    if (g.sc && step == 2) MT_OK(mixp_grad_scaler_get_scale(g.sc, &scale_before_inf));
    if (g.sc && step == 3) MT_OK(mixp_grad_scaler_get_scale(g.sc, &scale_after_inf));
  }
  if (r->inject_inf) assert_true(scale_after_inf == scale_before_inf * 0.5); /* skipped, backed off */
  mixp_graph_destroy(graph);
  free_rig(&e);
  free_rig(&g);
}

static void test_mlp_levels(void **state) {
  (void)state;
  const char *mlp = "mlp in=784 hidden=64,32 classes=10";
  recipe o0 = {mlp, 0, 0, 0, 1, 0, 0, 1};
  check_recipe(&o0, 5);
  recipe first = {mlp, 0, 0, 0, 1, 0, 0, 0}; /* captured at the optimizer's first step */
  check_recipe(&first, 4);
  recipe o1 = {mlp, 0, 1, 0, 1, 0, 0, 1};
  check_recipe(&o1, 4);
  recipe o2 = {mlp, 0, 2, 0, 1, 0, 0, 1};
  check_recipe(&o2, 4);
}

static void test_mlp_f16_scaler_skips_in_replay(void **state) {
  (void)state;
  recipe r = {"mlp in=784 hidden=64,32 classes=10", 0, 3, 0, 1, 0, 1, 1};
  check_recipe(&r, 7);
}

static void test_cnn_dropout_batch_norm(void **state) {
  (void)state;
  recipe r = {"cnn width=4 blocks=2 image_size=12 hidden=16 dropout=0.25", 1, 1, 0, 1, 0, 0, 1};
  check_recipe(&r, 4);
}

static void test_gpt_dropout(void **state) {
  (void)state;
  recipe r = {"gpt n_layer=1 n_head=2 n_embd=16 vocab=11 block_size=8 dropout=0.1", 2, 2, 0, 1, 0, 0, 1};
  check_recipe(&r, 4);
}

static void test_schedule_accumulation_clipping(void **state) {
  (void)state;
  recipe r = {"mlp in=784 hidden=32 classes=10 dropout=0.1", 0, 3, 1, 4, 0.5, 0, 1};
  check_recipe(&r, 9); /* warmup 3, cosine to step 8, then min_lr */
}

static void save_state(rig *g, const char *path) {
  mixp_state_spec spec;
  mixp_state_spec_init(&spec);
  spec.modules = &g->m;
  spec.num_modules = 1;
  spec.optimizers = &g->opt;
  spec.num_optimizers = 1;
  MT_OK(mixp_state_save(g->s, path, &spec));
}

static void load_state(rig *g, const char *path) {
  mixp_state_spec spec;
  mixp_state_spec_init(&spec);
  spec.modules = &g->m;
  spec.num_modules = 1;
  spec.optimizers = &g->opt;
  spec.num_optimizers = 1;
  MT_OK(mixp_state_load(g->s, path, &spec, NULL));
}

/* Save after a replayed step, load into a fresh rig, capture there and
 * replay: bitwise the eager run. The first rig's graph, whose optimizer
 * state the load replaced, refuses to replay. */
static void test_save_load_then_replay(void **state) {
  (void)state;
  mt_skip_unless_cpu();
  recipe r = {"mlp in=784 hidden=32 classes=10 dropout=0.1", 0, 2, 0, 1, 0, 0, 1};
  char path[64];
  snprintf(path, sizeof path, "/tmp/mixp_test_graph_%d.safetensors", (int)getpid());
  rig e = make_rig(&r), a = make_rig(&r), b = make_rig(&r);
  mixp_graph *ga = NULL, *gb = NULL;
  for (int step = 0; step < 6; ++step) {
    refill(&e, &r, step);
    train_step(&e, &r);
    if (step < 3) {
      refill(&a, &r, step);
      if (step == 0) train_step(&a, &r);
      if (step == 1) {
        MT_OK(mixp_graph_capture_begin(a.s));
        train_step(&a, &r);
        MT_OK(mixp_graph_capture_end(a.s, &ga));
      }
      if (step == 2) {
        MT_OK(mixp_graph_replay(ga));
        assert_rigs_equal(&e, &a, step);
        save_state(&a, path);
        load_state(&b, path);
        load_state(&a, path);
        MT_FAILS2(mixp_graph_replay(ga), MIXP_ERR_STATE, "mixp_graph_replay", "capture the step again");
      }
      continue;
    }
    refill(&b, &r, step);
    if (step == 3) {
      MT_OK(mixp_graph_capture_begin(b.s));
      train_step(&b, &r);
      MT_OK(mixp_graph_capture_end(b.s, &gb));
    } else {
      MT_OK(mixp_graph_replay(gb));
    }
    for (int i = 0; i < e.n; ++i) assert_same_bits(e.ps[i], b.ps[i], mixp_module_parameter_name(e.m, i), step);
    assert_same_bits(e.loss, b.loss, "the loss", step);
  }
  remove(path);
  mixp_graph_destroy(ga);
  mixp_graph_destroy(gb);
  free_rig(&e);
  free_rig(&a);
  free_rig(&b);
}

/* ---- misuse ------------------------------------------------------------- */

static const recipe kSmall = {"mlp in=784 hidden=16 classes=10", 0, 0, 0, 1, 0, 0, 1};

static void test_capture_begin_end_misuse(void **state) {
  (void)state;
  MT_FAILS(mixp_graph_capture_begin(NULL), MIXP_ERR_INVALID_ARGUMENT, "mixp_graph_capture_begin: session is NULL");
  if (!mt_on_cpu()) { /* the cpu records and replays; other devices decline, naming themselves */
    mixp_session *s = mt_session();
    MT_FAILS2(mixp_graph_capture_begin(s), MIXP_ERR_UNSUPPORTED, "mixp_graph_capture_begin: device", mt_device());
    mixp_session_destroy(s);
    return;
  }
  mixp_graph *out = (mixp_graph *)0x1;
  MT_FAILS(mixp_graph_capture_end(NULL, &out), MIXP_ERR_INVALID_ARGUMENT, "mixp_graph_capture_end: session is NULL");
  MT_FAILS(mixp_graph_capture_abort(NULL), MIXP_ERR_INVALID_ARGUMENT, "mixp_graph_capture_abort: session is NULL");
  rig g = make_rig(&kSmall);
  mixp_session *other = mt_session();
  MT_FAILS(mixp_graph_capture_end(g.s, &out), MIXP_ERR_STATE, "not capturing");
  assert_ptr_equal(out, (mixp_graph *)0x1);
  MT_FAILS(mixp_graph_capture_abort(g.s), MIXP_ERR_STATE, "not capturing");
  MT_OK(mixp_graph_capture_begin(g.s));
  MT_FAILS(mixp_graph_capture_begin(g.s), MIXP_ERR_STATE, "capturing a step already");
  MT_FAILS(mixp_graph_capture_end(other, &out), MIXP_ERR_STATE, "not capturing"); /* begun on g.s */
  MT_FAILS(mixp_graph_capture_end(g.s, NULL), MIXP_ERR_INVALID_ARGUMENT, "out is NULL");
  mixp_graph_destroy(NULL);
  MT_OK(mixp_graph_capture_abort(g.s));
  MT_OK(mixp_graph_capture_begin(g.s));
  train_step(&g, &kSmall);
  MT_OK(mixp_graph_capture_end(g.s, &out));
  assert_ptr_not_equal(out, (mixp_graph *)0x1);
  mixp_graph_destroy(out);
  /* The numerics checker reads every output on the host. */
  MT_OK(mixp_session_set_numerics_check(g.s, MIXP_NUMERICS_WARN));
  MT_FAILS(mixp_graph_capture_begin(g.s), MIXP_ERR_STATE, "numerics checker");
  MT_OK(mixp_session_set_numerics_check(g.s, MIXP_NUMERICS_OFF));
  mixp_session_destroy(other);
  free_rig(&g);
}

/* Host reads and uploads fail during a capture, naming the called function;
 * the capture stays usable and its replays still match eager steps. */
static void test_host_calls_refused_during_capture(void **state) {
  (void)state;
  mt_skip_unless_cpu();
  recipe r = {"mlp in=784 hidden=16 classes=10", 0, 3, 0, 1, 0, 0, 1};
  rig e = make_rig(&r), g = make_rig(&r);
  mixp_graph *graph = NULL;
  for (int step = 0; step < 4; ++step) {
    refill(&e, &r, step);
    refill(&g, &r, step);
    train_step(&e, &r);
    if (step == 0) {
      train_step(&g, &r);
    } else if (step == 1) {
      MT_OK(mixp_graph_capture_begin(g.s));
      double v = 0;
      MT_FAILS2(mixp_tensor_item(g.loss, &v), MIXP_ERR_STATE, "mixp_tensor_item:", "captured");
      unsigned char buf[B * 8];
      MT_FAILS2(mixp_tensor_to_host(g.t[0], buf, sizeof buf), MIXP_ERR_STATE, "mixp_tensor_to_host:", "captured");
      const int64_t one[1] = {1};
      mixp_tensor *up = NULL;
      const float f = 1.0f;
      MT_FAILS2(mixp_tensor_from_host(g.s, &f, sizeof f, MIXP_F32, one, 1, &up), MIXP_ERR_STATE,
                "mixp_tensor_from_host:", "upload");
      assert_null(up);
      MT_FAILS(mixp_grad_scaler_get_scale(g.sc, &v), MIXP_ERR_STATE, "mixp_grad_scaler_get_scale:");
      train_step(&g, &r);
      MT_FAILS(mixp_tensor_item(g.loss, &v), MIXP_ERR_STATE, "mixp_tensor_item:");
      MT_OK(mixp_graph_capture_end(g.s, &graph));
    } else {
      MT_OK(mixp_graph_replay(graph));
    }
    assert_rigs_equal(&e, &g, step);
  }
  mixp_graph_destroy(graph);
  free_rig(&e);
  free_rig(&g);
}

/* A step that accumulates into the gradients of the step before (no
 * zero_grad) would read, at every replay, a value gone since the capture. */
static void test_end_refuses_a_released_input(void **state) {
  (void)state;
  mt_skip_unless_cpu();
  rig g = make_rig(&kSmall);
  refill(&g, &kSmall, 0);
  train_step(&g, &kSmall);
  MT_OK(mixp_graph_capture_begin(g.s));
  mixp_tensor *y = NULL, *loss = NULL;
  MT_OK(mixp_module_forward(g.m, g.x[0], &y));
  MT_OK(mixp_cross_entropy(y, g.t[0], MIXP_REDUCTION_MEAN, MIXP_IGNORE_INDEX_DEFAULT, &loss));
  MT_OK(mixp_backward(loss, NULL)); /* adds into last step's .grad */
  mixp_graph *out = NULL;
  MT_FAILS2(mixp_graph_capture_end(g.s, &out), MIXP_ERR_STATE, "mixp_graph_capture_end:", "released it during");
  assert_null(out);
  MT_FAILS(mixp_graph_capture_abort(g.s), MIXP_ERR_STATE, "not capturing"); /* aborted already */
  double v = 0;
  MT_OK(mixp_tensor_item(loss, &v)); /* tensors of the aborted capture stay valid */
  assert_true(isfinite(v));
  mixp_tensor_release(loss);
  mixp_tensor_release(y);
  free_rig(&g);
}

static void test_replay_misuse(void **state) {
  (void)state;
  mt_skip_unless_cpu();
  MT_FAILS(mixp_graph_replay(NULL), MIXP_ERR_INVALID_ARGUMENT, "mixp_graph_replay: graph is NULL");
  rig g = make_rig(&kSmall);
  mixp_graph *graph = NULL;
  refill(&g, &kSmall, 0);
  train_step(&g, &kSmall);
  MT_OK(mixp_graph_capture_begin(g.s));
  train_step(&g, &kSmall);
  MT_OK(mixp_graph_capture_end(g.s, &graph));
  MT_OK(mixp_graph_replay(graph));

  /* The graph keeps what the step released: reported, and given back. */
  mixp_memory_stats ms;
  ms.struct_size = sizeof ms;
  MT_OK(mixp_memory_stats_get(g.s, &ms));
  assert_true(ms.graph_bytes > 0);

  /* Replay while capturing another step. */
  MT_OK(mixp_graph_capture_begin(g.s));
  MT_FAILS(mixp_graph_replay(graph), MIXP_ERR_STATE, "capturing");
  MT_OK(mixp_graph_capture_abort(g.s));
  MT_OK(mixp_graph_replay(graph));

  /* A refilled input the step checks (a target out of range): the replay
   * fails as the eager op would, and replays again once it is fixed. */
  const int64_t bad[B] = {0, 99, 0, 0}, nb[1] = {B};
  mixp_tensor *bt = NULL;
  MT_OK(mixp_tensor_from_host(g.s, bad, sizeof bad, MIXP_I64, nb, 1, &bt));
  MT_OK(mixp_tensor_copy_(g.t[0], bt));
  mixp_tensor_release(bt);
  MT_FAILS2(mixp_graph_replay(graph), MIXP_ERR_INVALID_ARGUMENT, "mixp_graph_replay:", "out of range");
  refill(&g, &kSmall, 2);
  MT_OK(mixp_graph_replay(graph));

  /* The loss the step made keeps a valid handle after the host released
   * its own: replays go on, the memory stays the graph's. */
  mixp_tensor_release(g.loss);
  g.loss = NULL;
  MT_OK(mixp_graph_replay(graph));

  /* An input released (say, to make one of another shape): refused. */
  mixp_tensor_release(g.x[0]);
  const int64_t same[2] = {B, 784};
  MT_OK(mixp_tensor_zeros(g.s, MIXP_F32, same, 2, &g.x[0]));
  MT_FAILS2(mixp_graph_replay(graph), MIXP_ERR_STATE, "was released or replaced", "capture the step again");
  mixp_graph_destroy(graph);
  MT_OK(mixp_memory_stats_get(g.s, &ms));
  assert_true(ms.graph_bytes == 0);

  /* The optimizer destroyed (its state with it), then the session. */
  refill(&g, &kSmall, 1);
  MT_OK(mixp_graph_capture_begin(g.s));
  train_step(&g, &kSmall);
  MT_OK(mixp_graph_capture_end(g.s, &graph));
  mixp_optimizer_destroy(g.opt);
  g.opt = NULL;
  MT_FAILS(mixp_graph_replay(graph), MIXP_ERR_STATE, "mixp_graph_replay:");
  mixp_graph_destroy(graph);

  mixp_optimizer_options o;
  mixp_optimizer_options_init(&o, MIXP_OPTIM_SGD);
  o.lr = 0.1;
  MT_OK(mixp_optimizer_create(g.s, g.ps, g.n, &o, &g.opt));
  MT_OK(mixp_graph_capture_begin(g.s));
  train_step(&g, &kSmall);
  MT_OK(mixp_graph_capture_end(g.s, &graph));
  mixp_session_destroy(g.s);
  MT_FAILS(mixp_graph_replay(graph), MIXP_ERR_STATE, "destroyed");
  mixp_graph_destroy(graph); /* after its session: still gives the memory back */
  g.s = NULL;
  free_rig(&g);
}

/* A session destroyed in the middle of a capture ends it. */
static void test_session_destroyed_while_capturing(void **state) {
  (void)state;
  mt_skip_unless_cpu();
  rig g = make_rig(&kSmall);
  refill(&g, &kSmall, 0);
  MT_OK(mixp_graph_capture_begin(g.s));
  train_step(&g, &kSmall);
  mixp_session_destroy(g.s);
  g.s = NULL;
  double v = 0;
  MT_OK(mixp_tensor_item(g.loss, &v)); /* the real backend is back */
  free_rig(&g);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_mlp_levels),
      cmocka_unit_test(test_mlp_f16_scaler_skips_in_replay),
      cmocka_unit_test(test_cnn_dropout_batch_norm),
      cmocka_unit_test(test_gpt_dropout),
      cmocka_unit_test(test_schedule_accumulation_clipping),
      cmocka_unit_test(test_save_load_then_replay),
      cmocka_unit_test(test_capture_begin_end_misuse),
      cmocka_unit_test(test_host_calls_refused_during_capture),
      cmocka_unit_test(test_end_refuses_a_released_input),
      cmocka_unit_test(test_replay_misuse),
      cmocka_unit_test(test_session_destroyed_while_capturing),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
