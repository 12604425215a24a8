/* mixp quick start: a two-layer MLP on synthetic 28x28 images, trained with
 * AdamW through the public C API. Build: cc quickstart.c $(pkg-config --cflags --libs mixp) */
#include <stdio.h>
#include <mixp/mixp.h>

#define CHECK(call) do { if ((call) != MIXP_OK) { fprintf(stderr, "%s\n", mixp_last_error()); return 1; } } while (0)

int main(void) {
  mixp_session *s;
  CHECK(mixp_session_create(NULL, &s));                        /* cpu, seed 0, all cores */
  mixp_synthetic_options so;
  mixp_synthetic_options_init(&so);                            /* 4096 samples, 1x28x28, 10 classes */
  mixp_dataset *data;
  CHECK(mixp_dataset_synthetic(s, &so, &data));
  mixp_module *l1, *l2;
  CHECK(mixp_linear_create(s, 784, 64, 1, MIXP_F32, &l1));
  CHECK(mixp_linear_create(s, 64, 10, 1, MIXP_F32, &l2));
  mixp_tensor *params[4];
  for (int i = 0; i < 4; ++i) CHECK(mixp_module_parameter(i < 2 ? l1 : l2, i % 2, &params[i]));
  mixp_optimizer_options oo;
  mixp_optimizer_options_init(&oo, MIXP_OPTIM_ADAMW);          /* lr 1e-3, weight decay 0.01 */
  mixp_optimizer *opt;
  CHECK(mixp_optimizer_create(s, params, 4, &oo, &opt));
  mixp_loader *loader;
  CHECK(mixp_loader_create(data, NULL, &loader));              /* batches of 64, shuffled, x/255 */
  for (int epoch = 0; epoch < 3; ++epoch) {
    mixp_tensor *x, *y, *flat, *h, *a, *logits, *loss;
    double sum = 0, v;
    int n = 0;
    while (mixp_loader_next(loader, &x, &y) == MIXP_OK) {     /* MIXP_DONE ends the epoch */
      int64_t shape[2] = {-1, 784};
      CHECK(mixp_reshape(x, shape, 2, &flat));
      CHECK(mixp_module_forward(l1, flat, &h));
      CHECK(mixp_relu(h, &a));
      CHECK(mixp_module_forward(l2, a, &logits));
      CHECK(mixp_cross_entropy(logits, y, MIXP_REDUCTION_MEAN, MIXP_IGNORE_INDEX_DEFAULT, &loss));
      CHECK(mixp_optimizer_zero_grad(opt));
      CHECK(mixp_backward(loss, NULL));
      CHECK(mixp_optimizer_step(opt));
      CHECK(mixp_tensor_item(loss, &v));
      sum += v, ++n;
      mixp_tensor *tmp[] = {x, y, flat, h, a, logits, loss};
      for (int i = 0; i < 7; ++i) mixp_tensor_release(tmp[i]);
    }
    printf("epoch %d: mean loss %.4f\n", epoch + 1, sum / n);
  }
  for (int i = 0; i < 4; ++i) mixp_tensor_release(params[i]);
  mixp_loader_destroy(loader);
  mixp_optimizer_destroy(opt);
  mixp_module_destroy(l1);
  mixp_module_destroy(l2);
  mixp_dataset_destroy(data);
  mixp_session_destroy(s);
  return 0;
}
