/* The cross-language reference run, through the public C API only: the MLP
 * 784-256-128-10 trained for 200 steps on synthetic data, seed 1, under O1
 * autocast (bf16, the CPU's fast type) with a dynamic GradScaler and AdamW,
 * on 2 threads. It prints the final loss as the exact bits of the double
 * that mixp_tensor_item() returns; train.py (and train.go, Train.java) do
 * the same calls and must print the same bits. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <mixp/mixp.h>

#define CHECK(call)                                                  \
  do {                                                               \
    if ((call) != MIXP_OK) {                                         \
      fprintf(stderr, "%s: %s\n", #call, mixp_last_error());         \
      return 1;                                                      \
    }                                                                \
  } while (0)

enum { STEPS = 200 };

int main(void) {
  mixp_session_options so;
  mixp_session_options_init(&so);
  so.seed = 1;
  so.num_threads = 2;
  mixp_session *s;
  CHECK(mixp_session_create(&so, &s));
  mixp_synthetic_options dso;
  mixp_synthetic_options_init(&dso);
  dso.num_samples = 4096;
  dso.seed = 1;
  mixp_dataset *ds;
  CHECK(mixp_dataset_synthetic(s, &dso, &ds));
  mixp_loader_options lo;
  mixp_loader_options_init(&lo);
  lo.batch_size = 64;
  lo.seed = 1;
  mixp_loader *loader;
  CHECK(mixp_loader_create(ds, &lo, &loader));
  mixp_module *model;
  CHECK(mixp_model_create(s, "mlp in=784 hidden=256,128 classes=10", &model));
  mixp_tensor *params[16];
  int n = mixp_module_num_parameters(model);
  if (n < 1 || n > 16) return 1;
  for (int i = 0; i < n; ++i) CHECK(mixp_module_parameter(model, i, &params[i]));
  mixp_optimizer_options oo;
  mixp_optimizer_options_init(&oo, MIXP_OPTIM_ADAMW);
  mixp_optimizer *opt;
  CHECK(mixp_optimizer_create(s, params, n, &oo, &opt));
  mixp_grad_scaler_options go;
  mixp_grad_scaler_options_init(&go);
  go.mode = MIXP_SCALER_DYNAMIC;
  mixp_grad_scaler *scaler;
  CHECK(mixp_grad_scaler_create(s, &go, &scaler));
  mixp_autocast_options ao;
  mixp_autocast_options_init(&ao);
  ao.dtype = MIXP_BF16;
  ao.level = MIXP_AMP_O1;

  double last = 0.0;
  for (int step = 0; step < STEPS; ++step) {
    mixp_tensor *x, *y, *logits, *loss, *scaled;
    mixp_status st = mixp_loader_next(loader, &x, &y);
    if (st == MIXP_DONE) st = mixp_loader_next(loader, &x, &y); /* next epoch */
    CHECK(st);
    CHECK(mixp_autocast_push(s, &ao));
    CHECK(mixp_module_forward(model, x, &logits));
    CHECK(mixp_cross_entropy(logits, y, MIXP_REDUCTION_MEAN, MIXP_IGNORE_INDEX_DEFAULT, &loss));
    CHECK(mixp_autocast_pop(s));
    CHECK(mixp_optimizer_zero_grad(opt));
    CHECK(mixp_grad_scaler_scale(scaler, loss, &scaled));
    CHECK(mixp_backward(scaled, NULL));
    CHECK(mixp_grad_scaler_step(scaler, opt));
    CHECK(mixp_grad_scaler_update(scaler));
    CHECK(mixp_tensor_item(loss, &last));
    mixp_tensor *tmp[] = {x, y, logits, loss, scaled};
    for (int i = 0; i < 5; ++i) mixp_tensor_release(tmp[i]);
  }
  double scale;
  CHECK(mixp_grad_scaler_get_scale(scaler, &scale));
  uint64_t bits;
  memcpy(&bits, &last, sizeof bits);
  printf("final_loss=%.9g scale=%g\n", last, scale);
  printf("final_loss_bits=0x%016" PRIx64 "\n", bits);
  for (int i = 0; i < n; ++i) mixp_tensor_release(params[i]);
  mixp_grad_scaler_destroy(scaler);
  mixp_optimizer_destroy(opt);
  mixp_module_destroy(model);
  mixp_loader_destroy(loader);
  mixp_dataset_destroy(ds);
  mixp_session_destroy(s);
  return 0;
}
