/* The recipes of docs/amp-guide.md, compiled and run (build/tools/
 * mixp-example-amp-recipes, run by the test suite): O2 decoration with
 * gradient accumulation and clipping, O2 bf16 at the least optimizer memory,
 * the scaler configured as Paddle and
 * Megatron configure theirs, custom op lists, the numerics checker, and
 * the profiler.
 * The guide quotes the regions between the <doc:NAME> markers. */
#include <stdint.h>
#include <stdio.h>
#include <mixp/mixp.h>

#define CHECK(call)                                                        \
  do {                                                                     \
    if ((call) != MIXP_OK) {                                               \
      fprintf(stderr, "%s failed: %s\n", #call, mixp_last_error());        \
      return 1;                                                            \
    }                                                                      \
  } while (0)

/* O2 fp16 with fp32 master weights; each optimizer step accumulates the
 * gradients of `accum` batches and clips their global norm to 1. */
/* A zoo model `spec` and AdamW (defaults) over its parameters. */
static int model_with_adamw(mixp_session *s, const char *spec, mixp_module **net, mixp_optimizer **opt) {
  CHECK(mixp_model_create(s, spec, net));
  mixp_tensor *params[16];
  int np = mixp_module_num_parameters(*net);
  for (int i = 0; i < np; ++i) CHECK(mixp_module_parameter(*net, i, &params[i]));
  mixp_optimizer_options oo;
  mixp_optimizer_options_init(&oo, MIXP_OPTIM_ADAMW);
  mixp_status st = mixp_optimizer_create(s, params, np, &oo, opt);
  for (int i = 0; i < np; ++i) mixp_tensor_release(params[i]);
  CHECK(st);
  return 0;
}

static int o2_accumulate_clip(mixp_session *s, mixp_dataset *data) {
  mixp_module *net;
  mixp_optimizer *opt;
  if (model_with_adamw(s, "mlp in=784 hidden=128 classes=10", &net, &opt)) return 1;

  /* <doc:o2-setup> */
  mixp_decorate_options d;
  mixp_decorate_options_init(&d);  /* F16, fp32 masters, norm layers kept fp32 */
  CHECK(mixp_amp_decorate(net, opt, &d)); /* before the first step */
  mixp_autocast_options ac;
  mixp_autocast_options_init(&ac);
  ac.level = MIXP_AMP_O2;
  ac.dtype = MIXP_F16;
  mixp_grad_scaler *scaler;
  CHECK(mixp_grad_scaler_create(s, NULL, &scaler)); /* AUTO outside a region: dynamic */
  /* </doc:o2-setup> */

  mixp_loader *loader;
  CHECK(mixp_loader_create(data, NULL, &loader));
  const int accum = 4;
  double first = 0, last = 0;
  for (int step = 0; step < 16; ++step) {
    double loss_sum = 0;
    /* <doc:accumulate-clip> */
    CHECK(mixp_optimizer_zero_grad(opt));
    for (int i = 0; i < accum; ++i) {
      mixp_tensor *x, *y, *logits, *loss, *part, *scaled;
      if (mixp_loader_next(loader, &x, &y) != MIXP_OK)  /* MIXP_DONE: new epoch */
        CHECK(mixp_loader_next(loader, &x, &y));
      CHECK(mixp_autocast_push(s, &ac));
      CHECK(mixp_module_forward(net, x, &logits));
      CHECK(mixp_cross_entropy(logits, y, MIXP_REDUCTION_MEAN, MIXP_IGNORE_INDEX_DEFAULT, &loss));
      CHECK(mixp_autocast_pop(s));
      CHECK(mixp_mul_scalar(loss, 1.0 / accum, &part)); /* the mean over the batches */
      CHECK(mixp_grad_scaler_scale(scaler, part, &scaled));
      CHECK(mixp_backward(scaled, NULL));                /* gradients add up, scaled */
      double v;
      CHECK(mixp_tensor_item(loss, &v));
      loss_sum += v;
      mixp_tensor *tmp[] = {x, y, logits, loss, part, scaled};
      for (int k = 0; k < 6; ++k) mixp_tensor_release(tmp[k]);
    }
    CHECK(mixp_grad_scaler_unscale(scaler, opt));   /* once: the true gradients */
    mixp_tensor *norm;
    CHECK(mixp_clip_grad_norm(opt, 1.0, &norm));    /* Inf/NaN norm: step skipped */
    CHECK(mixp_grad_scaler_step(scaler, opt));      /* does not unscale again */
    CHECK(mixp_grad_scaler_update(scaler));
    mixp_tensor_release(norm);
    /* </doc:accumulate-clip> */
    if (step == 0) first = loss_sum / accum;
    last = loss_sum / accum;
  }
  double scale;
  CHECK(mixp_grad_scaler_get_scale(scaler, &scale));
  printf("O2 f16, 4 batches per step, clip 1.0: loss %.4f -> %.4f, loss scale %g\n", first, last,
         scale);
  mixp_loader_destroy(loader);
  mixp_grad_scaler_destroy(scaler);
  mixp_optimizer_destroy(opt);
  mixp_module_destroy(net);
  return last < first ? 0 : 1;
}

/* O2 bf16 at the least memory: bf16 moments, no fp32 masters, and the bf16
 * parameters written with stochastic rounding. */
static int o2_low_memory(mixp_session *s, mixp_dataset *data) {
  mixp_module *model;
  CHECK(mixp_model_create(s, "mlp in=784 hidden=128 classes=10", &model));
  mixp_tensor *params[16];
  int n = mixp_module_num_parameters(model);
  for (int i = 0; i < n; ++i) CHECK(mixp_module_parameter(model, i, &params[i]));
  mixp_optimizer *opt;
  /* <doc:memory-options> */
  mixp_optimizer_options oo;
  mixp_optimizer_options_init(&oo, MIXP_OPTIM_ADAMW);
  oo.state_dtype = MIXP_BF16;      /* bf16 exp_avg / exp_avg_sq */
  oo.stochastic_rounding = 1;      /* bf16 parameters without masters */
  CHECK(mixp_optimizer_create(s, params, n, &oo, &opt));
  mixp_decorate_options d;
  mixp_decorate_options_init(&d);
  d.dtype = MIXP_BF16;
  d.master_weights = 0;            /* the bf16 parameters are the only copy */
  CHECK(mixp_amp_decorate(model, opt, &d));
  /* </doc:memory-options> */
  for (int i = 0; i < n; ++i) mixp_tensor_release(params[i]);
  mixp_autocast_options ac;
  mixp_autocast_options_init(&ac);
  ac.level = MIXP_AMP_O2;
  ac.dtype = MIXP_BF16;
  mixp_loader *loader;
  CHECK(mixp_loader_create(data, NULL, &loader));
  double first = 0, last = 0;
  for (int step = 0; step < 40; ++step) {
    mixp_tensor *x, *y, *logits, *loss;
    if (mixp_loader_next(loader, &x, &y) != MIXP_OK) CHECK(mixp_loader_next(loader, &x, &y));
    CHECK(mixp_optimizer_zero_grad(opt));
    CHECK(mixp_autocast_push(s, &ac));
    CHECK(mixp_module_forward(model, x, &logits));
    CHECK(mixp_cross_entropy(logits, y, MIXP_REDUCTION_MEAN, MIXP_IGNORE_INDEX_DEFAULT, &loss));
    CHECK(mixp_autocast_pop(s));
    CHECK(mixp_backward(loss, NULL)); /* bf16: no loss scaling needed */
    CHECK(mixp_optimizer_step(opt));
    double v;
    CHECK(mixp_tensor_item(loss, &v));
    if (step == 0) first = v;
    last = v;
    mixp_tensor *tmp[] = {x, y, logits, loss};
    for (int k = 0; k < 4; ++k) mixp_tensor_release(tmp[k]);
  }
  printf("O2 bf16 without masters, bf16 moments, stochastic rounding: loss %.4f -> %.4f\n", first, last);
  mixp_loader_destroy(loader);
  mixp_optimizer_destroy(opt);
  mixp_module_destroy(model);
  return last < first ? 0 : 1;
}

/* Scalers configured like other frameworks' (see the guide's table). */
static int scaler_configs(mixp_session *s) {
  /* <doc:scaler-paddle> */
  /* paddle.static.amp.decorate's legacy fp16 scaler: 2^15, x2 every 1000
   * clean steps, x0.8 after 2 overflows in a row, never below 1. */
  mixp_grad_scaler_options o;
  mixp_grad_scaler_options_init(&o);
  o.mode = MIXP_SCALER_DYNAMIC;
  o.init_scale = 32768;
  o.growth_interval = 1000;
  o.backoff_factor = 0.8;
  o.decr_every_n_nan_or_inf = 2;
  o.min_scale = 1;
  /* </doc:scaler-paddle> */
  mixp_grad_scaler *paddle;
  CHECK(mixp_grad_scaler_create(s, &o, &paddle));
  /* <doc:scaler-megatron> */
  /* Megatron-LM (Apex's hysteresis kernel): the first overflow after a clean
   * step is tolerated, the second in a row backs off. */
  mixp_grad_scaler_options_init(&o);
  o.mode = MIXP_SCALER_DYNAMIC;
  o.hysteresis = 2;
  o.min_scale = 1;
  /* </doc:scaler-megatron> */
  mixp_grad_scaler *megatron;
  CHECK(mixp_grad_scaler_create(s, &o, &megatron));
  /* A bad field is refused with its name. */
  o.backoff_factor = 1.5;
  mixp_grad_scaler *bad = NULL;
  if (mixp_grad_scaler_create(s, &o, &bad) == MIXP_OK) return 1;
  printf("scalers: paddle and megatron configurations created; refused: %s\n", mixp_last_error());
  mixp_grad_scaler_destroy(paddle);
  mixp_grad_scaler_destroy(megatron);
  return 0;
}

/* Moving ops between lists, and asking what an op will do. */
static int custom_lists(mixp_session *s) {
  /* <doc:custom-lists> */
  const char *keep_fp32[] = {"gelu", "matmul"}; /* e.g. an op that overflows in f16 */
  mixp_autocast_options ac;
  mixp_autocast_options_init(&ac);
  ac.level = MIXP_AMP_O1;
  ac.dtype = MIXP_F16;
  ac.custom_black_list = keep_fp32;
  ac.n_custom_black = 2;
  CHECK(mixp_autocast_push(s, &ac));
  mixp_autocast_policy_info p = {sizeof p, MIXP_CAST_NONE, MIXP_F32};
  CHECK(mixp_autocast_policy(s, "matmul", &p));  /* MIXP_CAST_FP32 now */
  CHECK(mixp_autocast_pop(s));
  /* </doc:custom-lists> */
  printf("custom black list: matmul cast=%d dtype=%s\n", (int)p.cast, mixp_dtype_name(p.dtype));
  return p.cast == MIXP_CAST_FP32 ? 0 : 1;
}

/* The numerics checker names the first op that produced a NaN or Inf. */
static int numerics(mixp_session *s) {
  /* <doc:check-numerics> */
  CHECK(mixp_session_set_numerics_check(s, MIXP_NUMERICS_ERROR));
  const int64_t shape[1] = {3};
  mixp_tensor *x, *y = NULL;
  CHECK(mixp_tensor_full(s, MIXP_F32, shape, 1, -1.0, &x));
  if (mixp_log(x, &y) == MIXP_ERR_NUMERIC)     /* log(-1) = NaN */
    printf("%s\n", mixp_last_error());
  /* mixp: non-finite values in the forward pass of op 'log', output 0
   * (f32 [3]): 3 NaN, 0 Inf of 3 elements */
  CHECK(mixp_session_set_numerics_check(s, MIXP_NUMERICS_OFF));
  /* </doc:check-numerics> */
  mixp_tensor_release(x);
  return y == NULL ? 0 : 1; /* the failed call produced nothing */
}

/* Where one O1 bf16 step's time goes: the profiler's table and trace. */
static int profile_step(mixp_session *s, mixp_dataset *data) {
  mixp_module *net;
  mixp_optimizer *opt;
  if (model_with_adamw(s, "mlp in=784 hidden=256,128 classes=10", &net, &opt)) return 1;
  mixp_autocast_options ac;
  mixp_autocast_options_init(&ac);
  ac.dtype = MIXP_BF16;
  mixp_loader *loader;
  CHECK(mixp_loader_create(data, NULL, &loader));
  mixp_profile *prof = NULL;
  for (int step = 0; step < 3; ++step) {
    /* <doc:profile> */
    if (step == 2) CHECK(mixp_profile_begin(s));  /* after two warm-up steps */
    mixp_tensor *x, *y, *logits, *loss;
    CHECK(mixp_loader_next(loader, &x, &y));
    CHECK(mixp_autocast_push(s, &ac));
    CHECK(mixp_module_forward(net, x, &logits));
    CHECK(mixp_cross_entropy(logits, y, MIXP_REDUCTION_MEAN, MIXP_IGNORE_INDEX_DEFAULT, &loss));
    CHECK(mixp_autocast_pop(s));
    CHECK(mixp_optimizer_zero_grad(opt));
    CHECK(mixp_backward(loss, NULL));
    CHECK(mixp_optimizer_step(opt));
    if (step == 2) {
      CHECK(mixp_profile_end(s, &prof));
      printf("%s", mixp_profile_report(prof, 12));       /* the 12 largest rows */
      CHECK(mixp_profile_write_trace(prof, "amp-recipes-step.json")); /* for Perfetto */
      mixp_profile_destroy(prof);
    }
    /* </doc:profile> */
    mixp_tensor *tmp[] = {x, y, logits, loss};
    for (int k = 0; k < 4; ++k) mixp_tensor_release(tmp[k]);
  }
  mixp_loader_destroy(loader);
  mixp_optimizer_destroy(opt);
  mixp_module_destroy(net);
  return prof ? 0 : 1;
}

int main(void) {
  mixp_session_options so;
  mixp_session_options_init(&so);
  so.seed = 1;
  mixp_session *s;
  CHECK(mixp_session_create(&so, &s));
  mixp_synthetic_options syn;
  mixp_synthetic_options_init(&syn);
  mixp_dataset *data;
  CHECK(mixp_dataset_synthetic(s, &syn, &data));
  int rc = o2_accumulate_clip(s, data) || o2_low_memory(s, data) || scaler_configs(s) || custom_lists(s) || numerics(s) ||
           profile_step(s, data);
  mixp_dataset_destroy(data);
  mixp_session_destroy(s);
  if (rc == 0) printf("all recipes ran\n");
  return rc;
}
