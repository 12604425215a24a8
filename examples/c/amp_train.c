/* Mixed-precision training through the public C API: a zoo MLP trained in
 * fp16 under autocast O1 with a dynamic loss scaler, then evaluated on a
 * held-out split. Quoted in docs/getting-started.md; built as
 * build/tools/mixp-example-amp and run by the test suite.
 * Build: cc amp_train.c $(pkg-config --cflags --libs mixp) */
#include <stdint.h>
#include <stdio.h>
#include <mixp/mixp.h>

/* Every failure names the function, the argument and what was wrong. */
#define CHECK(call)                                                          \
  do {                                                                       \
    mixp_status st_ = (call);                                                \
    if (st_ != MIXP_OK) {                                                    \
      fprintf(stderr, "%s failed (%s): %s\n", #call, mixp_status_string(st_), \
              mixp_last_error());                                            \
      return 1;                                                              \
    }                                                                        \
  } while (0)

int main(void) {
  mixp_session *s;
  CHECK(mixp_session_create(NULL, &s)); /* cpu, seed 0, all cores */

  /* Train and test splits of one synthetic task (same prototypes, other seed). */
  mixp_synthetic_options so;
  mixp_synthetic_options_init(&so);
  so.num_samples = 2048;
  mixp_dataset *train, *test;
  CHECK(mixp_dataset_synthetic(s, &so, &train));
  so.num_samples = 1000;
  so.seed = 2;
  CHECK(mixp_dataset_synthetic(s, &so, &test));

  /* Parameters stay fp32: autocast casts them (once per region) for the GEMMs. */
  mixp_module *net;
  CHECK(mixp_model_create(s, "mlp in=784 hidden=128 classes=10", &net));
  mixp_tensor *params[16];
  int np = mixp_module_num_parameters(net);
  if (np < 0 || np > 16) return 1;
  for (int i = 0; i < np; ++i) CHECK(mixp_module_parameter(net, i, &params[i]));
  mixp_optimizer_options oo;
  mixp_optimizer_options_init(&oo, MIXP_OPTIM_ADAMW);
  mixp_optimizer *opt;
  CHECK(mixp_optimizer_create(s, params, np, &oo, &opt));
  for (int i = 0; i < np; ++i) mixp_tensor_release(params[i]); /* the optimizer holds them */

  /* fp16 needs loss scaling (bf16 would not: MIXP_SCALER_AUTO picks by dtype). */
  mixp_autocast_options ac;
  mixp_autocast_options_init(&ac);
  ac.level = MIXP_AMP_O1;
  ac.dtype = MIXP_F16;
  mixp_grad_scaler_options gso;
  mixp_grad_scaler_options_init(&gso); /* PyTorch's defaults: 2^16, x2 / x0.5, 2000 */
  gso.mode = MIXP_SCALER_DYNAMIC;
  mixp_grad_scaler *scaler;
  CHECK(mixp_grad_scaler_create(s, &gso, &scaler));

  mixp_loader *loader;
  CHECK(mixp_loader_create(train, NULL, &loader)); /* batches of 64, shuffled, x/255 */
  int skipped = 0;
  for (int epoch = 1; epoch <= 3; ++epoch) {
    mixp_tensor *x, *y;
    double sum = 0;
    int n = 0;
    while (mixp_loader_next(loader, &x, &y) == MIXP_OK) {
      mixp_tensor *logits, *loss, *scaled;
      CHECK(mixp_optimizer_zero_grad(opt));
      CHECK(mixp_autocast_push(s, &ac)); /* forward pass only, as in PyTorch */
      CHECK(mixp_module_forward(net, x, &logits));
      CHECK(mixp_cross_entropy(logits, y, MIXP_REDUCTION_MEAN, MIXP_IGNORE_INDEX_DEFAULT, &loss));
      CHECK(mixp_autocast_pop(s));
      CHECK(mixp_grad_scaler_scale(scaler, loss, &scaled));
      CHECK(mixp_backward(scaled, NULL));             /* scaled fp16-safe gradients */
      CHECK(mixp_grad_scaler_step(scaler, opt));      /* unscale; skip on Inf/NaN */
      CHECK(mixp_grad_scaler_update(scaler));         /* grow or back off the scale */
      int found_inf;
      CHECK(mixp_grad_scaler_found_inf(scaler, &found_inf));
      skipped += found_inf;
      double v;
      CHECK(mixp_tensor_item(loss, &v));
      sum += v, ++n;
      mixp_tensor *tmp[] = {x, y, logits, loss, scaled};
      for (int i = 0; i < 5; ++i) mixp_tensor_release(tmp[i]);
    }
    double scale;
    CHECK(mixp_grad_scaler_get_scale(scaler, &scale));
    printf("epoch %d: mean loss %.4f, loss scale %g, skipped steps so far %d\n", epoch, sum / n,
           scale, skipped);
  }

  /* Evaluation: no graph, same precision policy, dropout/batch norm in eval mode. */
  mixp_loader_options lo;
  mixp_loader_options_init(&lo);
  lo.batch_size = 1000;
  lo.shuffle = 0;
  mixp_loader *eval;
  CHECK(mixp_loader_create(test, &lo, &eval));
  CHECK(mixp_module_set_training(net, 0));
  CHECK(mixp_no_grad_begin(s));
  int64_t correct = 0, seen = 0;
  mixp_tensor *x, *y;
  while (mixp_loader_next(eval, &x, &y) == MIXP_OK) {
    mixp_tensor *logits, *pred;
    CHECK(mixp_autocast_push(s, &ac));
    CHECK(mixp_module_forward(net, x, &logits));
    CHECK(mixp_autocast_pop(s));
    CHECK(mixp_argmax(logits, 1, 0, &pred));
    int64_t b = mixp_tensor_dim(y, 0), p[1000], l[1000];
    CHECK(mixp_tensor_to_host(pred, p, (size_t)b * sizeof p[0]));
    CHECK(mixp_tensor_to_host(y, l, (size_t)b * sizeof l[0]));
    for (int64_t i = 0; i < b; ++i) correct += p[i] == l[i];
    seen += b;
    mixp_tensor *tmp[] = {x, y, logits, pred};
    for (int i = 0; i < 4; ++i) mixp_tensor_release(tmp[i]);
  }
  CHECK(mixp_no_grad_end(s));
  printf("test accuracy %.4f on %lld samples\n", (double)correct / (double)seen, (long long)seen);

  mixp_loader_destroy(eval);
  mixp_loader_destroy(loader);
  mixp_grad_scaler_destroy(scaler);
  mixp_optimizer_destroy(opt);
  mixp_module_destroy(net);
  mixp_dataset_destroy(test);
  mixp_dataset_destroy(train);
  mixp_session_destroy(s);
  return 0;
}
