/* A small training run for the training-state suites: synthetic images, an
 * MLP with dropout (so the session RNG matters), a shuffling loader, AdamW
 * with a warmup-cosine schedule, and optionally O2 (decorate + autocast) with
 * a dynamic GradScaler. */
#ifndef MIXP_TEST_STATE_UTIL_H
#define MIXP_TEST_STATE_UTIL_H

#include <unistd.h>

#include "test_util.h"

typedef struct st_run {
  mixp_session *s;
  mixp_dataset *data;
  mixp_loader *loader;
  mixp_module *model;
  mixp_optimizer *opt;
  mixp_grad_scaler *scaler;
  int amp;                 /* 0: fp32; else autocast O2 in `dtype` */
  mixp_autocast_options ac;
} st_run;

/* `seed` seeds the session (initialisation, dropout) and the loader; a
 * resumed run is built with another seed to show that load restores both. */
static inline void st_build(st_run *r, uint64_t seed, int amp, mixp_dtype dtype) {
  memset(r, 0, sizeof *r);
  mixp_session_options so;
  mixp_session_options_init(&so);
  so.seed = seed;
  so.num_threads = 2;
  MT_OK(mixp_session_create(&so, &r->s));
  mixp_synthetic_options sy;
  mixp_synthetic_options_init(&sy);
  sy.num_samples = 200;
  sy.height = 6;
  sy.width = 6;
  sy.num_classes = 4;
  MT_OK(mixp_dataset_synthetic(r->s, &sy, &r->data));
  mixp_loader_options lo;
  mixp_loader_options_init(&lo);
  lo.batch_size = 16;
  lo.seed = seed;
  MT_OK(mixp_loader_create(r->data, &lo, &r->loader));
  MT_OK(mixp_model_create(r->s, "mlp in=36 hidden=24,12 classes=4 dropout=0.2", &r->model));
  int n = mixp_module_num_parameters(r->model);
  mixp_tensor *params[16];
  for (int i = 0; i < n; ++i) MT_OK(mixp_module_parameter(r->model, i, &params[i]));
  mixp_optimizer_options oo;
  mixp_optimizer_options_init(&oo, MIXP_OPTIM_ADAMW);
  oo.lr = 0.01;
  oo.schedule = MIXP_LR_WARMUP_COSINE;
  oo.warmup_steps = 3;
  oo.total_steps = 40;
  oo.min_lr = 1e-4;
  MT_OK(mixp_optimizer_create(r->s, params, n, &oo, &r->opt));
  for (int i = 0; i < n; ++i) mixp_tensor_release(params[i]);
  mixp_grad_scaler_options go;
  mixp_grad_scaler_options_init(&go);
  go.mode = amp ? MIXP_SCALER_DYNAMIC : MIXP_SCALER_DISABLED;
  /* f16: a scale that overflows at first (the first steps are skipped, the
   * scale backs off) and grows every 3 clean steps until it overflows again;
   * bf16: it only grows. */
  go.init_scale = dtype == MIXP_F16 ? 1048576.0 : 1e9;
  go.growth_interval = 3;
  MT_OK(mixp_grad_scaler_create(r->s, &go, &r->scaler));
  r->amp = amp;
  if (amp) {
    mixp_decorate_options d;
    mixp_decorate_options_init(&d);
    d.dtype = dtype;
    MT_OK(mixp_amp_decorate(r->model, r->opt, &d));
    mixp_autocast_options_init(&r->ac);
    r->ac.level = MIXP_AMP_O2;
    r->ac.dtype = dtype;
  }
}

static inline void st_destroy(st_run *r) {
  mixp_grad_scaler_destroy(r->scaler);
  mixp_optimizer_destroy(r->opt);
  mixp_module_destroy(r->model);
  mixp_loader_destroy(r->loader);
  mixp_dataset_destroy(r->data);
  mixp_session_destroy(r->s);
}

/* One training step on the next batch (a new epoch when one ends); returns
 * the loss. */
static inline double st_step(st_run *r) {
  mixp_tensor *x = NULL, *y = NULL;
  mixp_status st = mixp_loader_next(r->loader, &x, &y);
  if (st == MIXP_DONE) st = mixp_loader_next(r->loader, &x, &y);
  MT_OK(st);
  mixp_tensor *flat = NULL, *logits = NULL, *loss = NULL, *scaled = NULL;
  int64_t shape[2] = {mixp_tensor_dim(x, 0), 36};
  MT_OK(mixp_reshape(x, shape, 2, &flat));
  MT_OK(mixp_optimizer_zero_grad(r->opt));
  if (r->amp) MT_OK(mixp_autocast_push(r->s, &r->ac));
  MT_OK(mixp_module_forward(r->model, flat, &logits));
  MT_OK(mixp_cross_entropy(logits, y, MIXP_REDUCTION_MEAN, MIXP_IGNORE_INDEX_DEFAULT, &loss));
  if (r->amp) MT_OK(mixp_autocast_pop(r->s));
  double lv = 0;
  MT_OK(mixp_tensor_item(loss, &lv));
  MT_OK(mixp_grad_scaler_scale(r->scaler, loss, &scaled));
  MT_OK(mixp_backward(scaled, NULL));
  MT_OK(mixp_grad_scaler_step(r->scaler, r->opt));
  MT_OK(mixp_grad_scaler_update(r->scaler));
  mixp_tensor_release(scaled);
  mixp_tensor_release(loss);
  mixp_tensor_release(logits);
  mixp_tensor_release(flat);
  mixp_tensor_release(x);
  mixp_tensor_release(y);
  return lv;
}

static inline void st_spec(st_run *r, mixp_state_spec *spec) {
  mixp_state_spec_init(spec);
  spec->modules = &r->model;
  spec->num_modules = 1;
  spec->optimizers = &r->opt;
  spec->num_optimizers = 1;
  spec->scalers = &r->scaler;
  spec->num_scalers = 1;
  spec->loaders = &r->loader;
  spec->num_loaders = 1;
}

/* Every parameter's bytes, concatenated (malloc'd; *n receives the size). */
static inline unsigned char *st_param_bytes(const mixp_module *m, size_t *n) {
  size_t total = 0;
  unsigned char *buf = NULL;
  for (int i = 0; i < mixp_module_num_parameters(m); ++i) {
    mixp_tensor *p = NULL;
    MT_OK(mixp_module_parameter(m, i, &p));
    size_t nb = (size_t)mixp_tensor_numel(p) * mixp_dtype_size(mixp_tensor_dtype(p));
    buf = (unsigned char *)realloc(buf, total + nb);
    MT_OK(mixp_tensor_to_host(p, buf + total, nb));
    total += nb;
    mixp_tensor_release(p);
  }
  *n = total;
  return buf;
}

/* A scratch path under the build tree's temporary directory. */
static inline void st_path(char *buf, size_t cap, const char *name) {
  const char *dir = getenv("TMPDIR");
  snprintf(buf, cap, "%s/mixp_test_%d_%s", dir && *dir ? dir : "/tmp", (int)getpid(), name);
}

#endif
