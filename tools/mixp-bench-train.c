/* A zoo model's training step in one precision, as every mixp-bench training
 * workload times it (the CPU rows of mixp-bench.c and the --device cuda
 * model rows of mixp-bench-models.c): forward under autocast, cross-entropy,
 * zero_grad, backward, AdamW, with the GradScaler in the f16 precisions.
 * Calls return their status instead of exiting, so that a GPU run can report
 * a row that failed (out of memory, an op a device lacks) and go on. */
#define _POSIX_C_SOURCE 200809L
#include <stdlib.h>
#include <string.h>

#include "mixp/mixp.h"
#include "mixp-bench.h"

#define TRY(call)                         \
  do {                                    \
    const mixp_status st_ = (call);       \
    if (st_ != MIXP_OK) return st_;       \
  } while (0)

int64_t bench_count_parameters(const mixp_module *model) {
  int64_t n = 0;
  for (int i = 0; i < mixp_module_num_parameters(model); ++i) {
    mixp_tensor *p = NULL;
    if (mixp_module_parameter(model, i, &p) != MIXP_OK) return -1;
    n += mixp_tensor_numel(p);
    mixp_tensor_release(p);
  }
  return n;
}

mixp_status bench_make_batch(mixp_session *s, const int64_t *item, int item_ndim, int64_t vocab, int batch,
                             mixp_tensor **x, mixp_tensor **y) {
  int64_t shape[4] = {batch, 0, 0, 0};
  int64_t per = 1;
  for (int d = 0; d < item_ndim && d < 3; ++d) shape[d + 1] = item[d], per *= item[d];
  const int64_t ntargets = vocab > 0 ? batch * per : batch;
  const int64_t classes = vocab > 0 ? vocab : 10;
  int64_t *labels = malloc(sizeof(int64_t) * (size_t)ntargets);
  if (!labels) return MIXP_ERR_OUT_OF_MEMORY;
  /* Fixed labels spread over the classes: a step's cost does not depend on them. */
  for (int64_t i = 0; i < ntargets; ++i) labels[i] = (i * 7 + 3) % classes;
  mixp_status st = vocab > 0
                       ? mixp_tensor_from_host(s, labels, sizeof(int64_t) * (size_t)ntargets, MIXP_I64, shape, 2, x)
                       : mixp_tensor_randn(s, MIXP_F32, shape, item_ndim + 1, x);
  if (st == MIXP_OK) {
    st = mixp_tensor_from_host(s, labels, sizeof(int64_t) * (size_t)ntargets, MIXP_I64, &ntargets, 1, y);
    if (st != MIXP_OK) {
      mixp_tensor_release(*x);
      *x = NULL;
    }
  }
  free(labels);
  return st;
}

const char *bench_precision_name(bench_precision p) {
  if (p.level == MIXP_AMP_O0) return "fp32";
  if (p.level == MIXP_AMP_O1) return p.dtype == MIXP_F16 ? "O1 f16" : "O1 bf16";
  return p.dtype == MIXP_F16 ? "O2 f16" : "O2 bf16";
}

const char *bench_precision_key(bench_precision p) {
  if (p.level == MIXP_AMP_O0) return "fp32";
  if (p.level == MIXP_AMP_O1) return p.dtype == MIXP_F16 ? "o1-f16" : "o1-bf16";
  return p.dtype == MIXP_F16 ? "o2-f16" : "o2-bf16";
}

static mixp_status trainer_setup(bench_trainer *t, const char *spec) {
  TRY(mixp_model_create(t->session, spec, &t->model));
  t->param_count = bench_count_parameters(t->model);
  const int np = mixp_module_num_parameters(t->model);
  t->params = calloc((size_t)(np > 0 ? np : 1), sizeof *t->params);
  if (!t->params) return MIXP_ERR_OUT_OF_MEMORY;
  for (int i = 0; i < np; ++i) {
    TRY(mixp_module_parameter(t->model, i, &t->params[i]));
    t->num_params = i + 1;
  }
  mixp_optimizer_options oo;
  mixp_optimizer_options_init(&oo, MIXP_OPTIM_ADAMW);
  TRY(mixp_optimizer_create(t->session, t->params, np, &oo, &t->opt));
  if (t->precision.level == MIXP_AMP_O2) {
    /* Half parameters (norms kept fp32), fp32 master weights in the optimizer. */
    mixp_decorate_options d;
    mixp_decorate_options_init(&d);
    d.dtype = t->precision.dtype;
    TRY(mixp_amp_decorate(t->model, t->opt, &d));
  }
  if (t->precision.level != MIXP_AMP_O0 && t->precision.dtype == MIXP_F16) {
    /* f16's range needs loss scaling; bf16 has fp32's and goes without, as in PyTorch. */
    mixp_grad_scaler_options so;
    mixp_grad_scaler_options_init(&so);
    so.mode = MIXP_SCALER_DYNAMIC;
    TRY(mixp_grad_scaler_create(t->session, &so, &t->scaler));
  }
  mixp_autocast_options_init(&t->autocast);
  t->autocast.dtype = t->precision.dtype;
  t->autocast.level = t->precision.level;
  return MIXP_OK;
}

mixp_status bench_trainer_init(bench_trainer *t, mixp_session *s, const char *spec, int64_t vocab,
                               bench_precision p) {
  memset(t, 0, sizeof *t);
  t->session = s;
  t->vocab = vocab;
  t->precision = p;
  const mixp_status st = trainer_setup(t, spec);
  if (st != MIXP_OK) bench_trainer_free(t);
  return st;
}

/* The body of a step; the caller releases what it made. */
static mixp_status step_body(bench_trainer *t, const mixp_tensor *x, const mixp_tensor *y, mixp_tensor **made) {
  const int amp = t->precision.level != MIXP_AMP_O0;
  if (amp) TRY(mixp_autocast_push(t->session, &t->autocast));
  mixp_status st = mixp_module_forward(t->model, x, &made[0]);
  if (st == MIXP_OK && t->vocab > 0) {
    /* [B, T, vocab] logits against B*T targets. */
    const int64_t shape[2] = {-1, t->vocab};
    st = mixp_reshape(made[0], shape, 2, &made[1]);
  }
  if (st == MIXP_OK)
    st = mixp_cross_entropy(made[1] ? made[1] : made[0], y, MIXP_REDUCTION_MEAN, MIXP_IGNORE_INDEX_DEFAULT,
                            &made[2]);
  /* The region closes whatever happened inside it. */
  if (amp) {
    const mixp_status pop = mixp_autocast_pop(t->session);
    if (st == MIXP_OK) st = pop;
  }
  if (st != MIXP_OK) return st;
  TRY(mixp_optimizer_zero_grad(t->opt));
  if (t->scaler) {
    TRY(mixp_grad_scaler_scale(t->scaler, made[2], &made[3]));
    TRY(mixp_backward(made[3], NULL));
    TRY(mixp_grad_scaler_step(t->scaler, t->opt));
    return mixp_grad_scaler_update(t->scaler);
  }
  TRY(mixp_backward(made[2], NULL));
  return mixp_optimizer_step(t->opt);
}

mixp_status bench_trainer_step(bench_trainer *t, const mixp_tensor *x, const mixp_tensor *y) {
  mixp_tensor *made[4] = {NULL, NULL, NULL, NULL}; /* logits, flattened logits, loss, scaled loss */
  const mixp_status st = step_body(t, x, y, made);
  for (int i = 0; i < 4; ++i) mixp_tensor_release(made[i]);
  return st;
}

void bench_trainer_free(bench_trainer *t) {
  for (int i = 0; i < t->num_params; ++i) mixp_tensor_release(t->params[i]);
  free(t->params);
  mixp_grad_scaler_destroy(t->scaler);
  mixp_optimizer_destroy(t->opt);
  mixp_module_destroy(t->model);
  memset(t, 0, sizeof *t);
}
