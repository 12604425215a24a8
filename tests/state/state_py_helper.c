/* The C half of test_safetensors_python.py.
 *
 *   state_py_helper save DIR   trains a small MLP (fp32, and O2 bf16) a few
 *                              steps, saves DIR/fp32.safetensors and
 *                              DIR/o2.safetensors, and dumps the parameters
 *                              to DIR/fp32.txt and DIR/o2.txt
 *   state_py_helper load FILE DUMP [CONFIG]
 *                              loads FILE (e.g. written by Python) into a
 *                              fresh MLP (or model CONFIG) with
 *                              mixp_module_load_safetensors (strict) and
 *                              dumps its parameters to DUMP
 *
 * Dumps have one line per tensor: name, dtype, element count, then every
 * value as a C99 hex float (exact). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mixp/mixp.h"

#define CONFIG "mlp in=8 hidden=6,5 classes=3"

static void die(const char *what) {
  fprintf(stderr, "state_py_helper: %s failed: %s\n", what, mixp_last_error());
  exit(1);
}
#define CHECK(call)                    \
  do {                                 \
    if ((call) != MIXP_OK) die(#call); \
  } while (0)

static void dump(const mixp_module *m, const char *path) {
  FILE *f = fopen(path, "w");
  if (!f) return perror(path), exit(1);
  for (int i = 0; i < mixp_module_num_parameters(m); ++i) {
    mixp_tensor *p = NULL, *p64 = NULL;
    CHECK(mixp_module_parameter(m, i, &p));
    CHECK(mixp_cast(p, MIXP_F64, &p64));
    int64_t n = mixp_tensor_numel(p);
    double *v = (double *)malloc((size_t)n * sizeof(double));
    CHECK(mixp_tensor_to_host(p64, v, (size_t)n * sizeof(double)));
    fprintf(f, "%s %s %lld", mixp_module_parameter_name(m, i), mixp_dtype_name(mixp_tensor_dtype(p)),
            (long long)n);
    for (int64_t k = 0; k < n; ++k) fprintf(f, " %a", v[k]);
    fprintf(f, "\n");
    free(v);
    mixp_tensor_release(p64);
    mixp_tensor_release(p);
  }
  fclose(f);
}

static void train_and_save(mixp_session *s, int o2, const char *file, const char *txt) {
  mixp_module *m = NULL;
  CHECK(mixp_model_create(s, CONFIG, &m));
  int n = mixp_module_num_parameters(m);
  mixp_tensor *params[8];
  for (int i = 0; i < n; ++i) CHECK(mixp_module_parameter(m, i, &params[i]));
  mixp_optimizer_options oo;
  mixp_optimizer_options_init(&oo, MIXP_OPTIM_ADAM);
  oo.lr = 0.01;
  mixp_optimizer *opt = NULL;
  CHECK(mixp_optimizer_create(s, params, n, &oo, &opt));
  for (int i = 0; i < n; ++i) mixp_tensor_release(params[i]);
  if (o2) {
    mixp_decorate_options d;
    mixp_decorate_options_init(&d);
    d.dtype = MIXP_BF16;
    CHECK(mixp_amp_decorate(m, opt, &d));
  }
  int64_t xs[2] = {4, 8};
  for (int step = 0; step < 3; ++step) {
    mixp_tensor *x = NULL, *x2 = NULL, *y = NULL, *sq = NULL, *loss = NULL;
    CHECK(mixp_tensor_randn(s, MIXP_F32, xs, 2, &x));
    if (o2) CHECK(mixp_cast(x, MIXP_BF16, &x2));
    CHECK(mixp_optimizer_zero_grad(opt));
    CHECK(mixp_module_forward(m, x2 ? x2 : x, &y));
    CHECK(mixp_mul(y, y, &sq));
    CHECK(mixp_mean(sq, NULL, 0, 0, &loss));
    CHECK(mixp_backward(loss, NULL));
    CHECK(mixp_optimizer_step(opt));
    mixp_tensor_release(loss);
    mixp_tensor_release(sq);
    mixp_tensor_release(y);
    if (x2) mixp_tensor_release(x2);
    mixp_tensor_release(x);
  }
  mixp_state_spec spec;
  mixp_state_spec_init(&spec);
  spec.modules = &m;
  spec.num_modules = 1;
  spec.optimizers = &opt;
  spec.num_optimizers = 1;
  spec.step = 3;
  spec.user_metadata = o2 ? "{\"amp\":\"O2 bf16\"}" : "{\"amp\":\"O0\"}";
  CHECK(mixp_state_save(s, file, &spec));
  dump(m, txt);
  mixp_optimizer_destroy(opt);
  mixp_module_destroy(m);
}

int main(int argc, char **argv) {
  mixp_session_options so;
  mixp_session_options_init(&so);
  so.seed = 11;
  so.num_threads = 1;
  mixp_session *s = NULL;
  CHECK(mixp_session_create(&so, &s));
  char a[1024], b[1024];
  if (argc == 3 && strcmp(argv[1], "save") == 0) {
    snprintf(a, sizeof a, "%s/fp32.safetensors", argv[2]);
    snprintf(b, sizeof b, "%s/fp32.txt", argv[2]);
    train_and_save(s, 0, a, b);
    snprintf(a, sizeof a, "%s/o2.safetensors", argv[2]);
    snprintf(b, sizeof b, "%s/o2.txt", argv[2]);
    train_and_save(s, 1, a, b);
  } else if ((argc == 4 || argc == 5) && strcmp(argv[1], "load") == 0) {
    mixp_module *m = NULL;
    CHECK(mixp_model_create(s, argc == 5 ? argv[4] : CONFIG, &m));
    if (mixp_module_load_safetensors(m, NULL, argv[2], 1) != MIXP_OK) {
      /* The Python test checks the message of a refused file. */
      printf("refused: %d %s\n", (int)mixp_last_status(), mixp_last_error());
      mixp_module_destroy(m);
      mixp_session_destroy(s);
      return 3;
    }
    dump(m, argv[3]);
    mixp_module_destroy(m);
  } else {
    fprintf(stderr, "usage: state_py_helper save DIR | load FILE DUMP [CONFIG]\n");
    return 2;
  }
  mixp_session_destroy(s);
  return 0;
}
