/* mixp-bench: measures mixp workloads and, in the same run, their PyTorch
 * references, and prints one table with the ratios (performance is measured
 * here, never asserted in a unit test).
 *
 *   mixp-bench [--threads N] [--steps N] [--batch N] [--torch-script PATH | --no-torch]
 *
 * Workloads (CPU):
 *   gemm      1024^3 matrix product, f32 and bf16, GFLOP/s
 *   mlp-step  the Fashion-MNIST MLP (784-256-128-10, AdamW) training step:
 *             O0 (fp32), O1 bf16 (autocast), O2 bf16 (decorate + fp32 master
 *             weights), O2 f16 (+ dynamic loss scaling); samples/s, compared
 *             with bench/torch/mlp_step.py (fp32 and bf16 autocast).
 *
 * With --device cuda[:N] the GPU workloads run instead (mixp-bench-gpu.c). */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "mixp/mixp.h"
#include "mixp-bench.h"


static int cmp_double(const void *a, const void *b) {
  const double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

/* Median of n timings (sorts in place). */
static double median(double *v, int n) {
  qsort(v, (size_t)n, sizeof *v, cmp_double);
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

typedef struct result {
  char name[48];
  double value; /* samples/s or GFLOP/s */
  double step_us;
} result;

static mixp_session *new_session(int threads) {
  mixp_session_options o;
  mixp_session_options_init(&o);
  o.num_threads = threads;
  o.seed = 1;
  mixp_session *s = NULL;
  CHECK(mixp_session_create(&o, &s));
  return s;
}

static double bench_gemm(int threads, mixp_dtype dt, int reps) {
  mixp_session *s = new_session(threads);
  int64_t shape[2] = {1024, 1024};
  mixp_tensor *a = NULL, *b = NULL, *c = NULL;
  CHECK(mixp_tensor_randn(s, dt, shape, 2, &a));
  CHECK(mixp_tensor_randn(s, dt, shape, 2, &b));
  double *t = malloc(sizeof(double) * (size_t)reps);
  for (int i = 0; i < reps + 3; ++i) {
    double t0 = bench_now();
    CHECK(mixp_matmul(a, b, &c));
    if (i >= 3) t[i - 3] = bench_now() - t0;
    mixp_tensor_release(c);
  }
  double med = median(t, reps);
  free(t);
  mixp_tensor_release(a);
  mixp_tensor_release(b);
  mixp_session_destroy(s);
  return 2.0 * 1024 * 1024 * 1024 / med * 1e-9;
}

typedef enum mode { MODE_O0, MODE_O1_BF16, MODE_O2_BF16, MODE_O2_F16 } mode;

/* One MLP training configuration; returns the median step time in seconds. */
static double bench_mlp(int threads, int batch, int steps, mode m) {
  mixp_session *s = new_session(threads);
  mixp_module *model = NULL;
  CHECK(mixp_model_create(s, "mlp in=784 hidden=256,128 classes=10", &model));
  int np = mixp_module_num_parameters(model);
  mixp_tensor **params = calloc((size_t)np, sizeof *params);
  for (int i = 0; i < np; ++i) CHECK(mixp_module_parameter(model, i, &params[i]));
  mixp_optimizer_options oo;
  mixp_optimizer_options_init(&oo, MIXP_OPTIM_ADAMW);
  mixp_optimizer *opt = NULL;
  CHECK(mixp_optimizer_create(s, params, np, &oo, &opt));
  const mixp_dtype low = m == MODE_O2_F16 ? MIXP_F16 : MIXP_BF16;
  if (m == MODE_O2_BF16 || m == MODE_O2_F16) {
    mixp_decorate_options d;
    mixp_decorate_options_init(&d);
    d.dtype = low;
    CHECK(mixp_amp_decorate(model, opt, &d));
  }
  mixp_grad_scaler *scaler = NULL;
  if (m == MODE_O2_F16) {
    mixp_grad_scaler_options so;
    mixp_grad_scaler_options_init(&so);
    so.mode = MIXP_SCALER_DYNAMIC;
    CHECK(mixp_grad_scaler_create(s, &so, &scaler));
  }
  mixp_autocast_options ao;
  mixp_autocast_options_init(&ao);
  ao.dtype = low;
  ao.level = m == MODE_O1_BF16 ? MIXP_AMP_O1 : MIXP_AMP_O2;

  int64_t xs[2] = {batch, 784}, ys[1] = {batch};
  mixp_tensor *x = NULL, *y = NULL;
  CHECK(mixp_tensor_randn(s, MIXP_F32, xs, 2, &x));
  int64_t *labels = malloc(sizeof(int64_t) * (size_t)batch);
  for (int i = 0; i < batch; ++i) labels[i] = i % 10;
  CHECK(mixp_tensor_from_host(s, labels, sizeof(int64_t) * (size_t)batch, MIXP_I64, ys, 1, &y));
  free(labels);

  const int warmup = 20;
  double *t = malloc(sizeof(double) * (size_t)steps);
  for (int i = 0; i < warmup + steps; ++i) {
    double t0 = bench_now();
    mixp_tensor *logits = NULL, *loss = NULL, *scaled = NULL;
    if (m != MODE_O0) CHECK(mixp_autocast_push(s, &ao));
    CHECK(mixp_module_forward(model, x, &logits));
    CHECK(mixp_cross_entropy(logits, y, MIXP_REDUCTION_MEAN, MIXP_IGNORE_INDEX_DEFAULT, &loss));
    if (m != MODE_O0) CHECK(mixp_autocast_pop(s));
    CHECK(mixp_optimizer_zero_grad(opt));
    if (scaler) {
      CHECK(mixp_grad_scaler_scale(scaler, loss, &scaled));
      CHECK(mixp_backward(scaled, NULL));
      CHECK(mixp_grad_scaler_step(scaler, opt));
      CHECK(mixp_grad_scaler_update(scaler));
    } else {
      CHECK(mixp_backward(loss, NULL));
      CHECK(mixp_optimizer_step(opt));
    }
    mixp_tensor_release(logits);
    mixp_tensor_release(loss);
    mixp_tensor_release(scaled);
    if (i >= warmup) t[i - warmup] = bench_now() - t0;
  }
  double med = median(t, steps);
  free(t);
  mixp_tensor_release(x);
  mixp_tensor_release(y);
  for (int i = 0; i < np; ++i) mixp_tensor_release(params[i]);
  free(params);
  mixp_grad_scaler_destroy(scaler);
  mixp_optimizer_destroy(opt);
  mixp_module_destroy(model);
  mixp_session_destroy(s);
  return med;
}

/* Runs the PyTorch reference script and reads its JSON lines. */
static int run_torch(const char *script, int threads, int batch, int steps, result *out, int max) {
  char cmd[1024];
  snprintf(cmd, sizeof cmd, "/usr/bin/python3 '%s' --threads %d --batch %d --steps %d 2>/dev/null",
           script, threads, batch, steps);
  FILE *p = popen(cmd, "r");
  if (!p) return 0;
  char line[512];
  int n = 0;
  while (n < max && fgets(line, sizeof line, p)) {
    char name[48];
    double sps = 0, us = 0;
    const char *a = strstr(line, "\"name\": \""), *b = strstr(line, "\"samples_per_sec\": "),
               *c = strstr(line, "\"step_us\": ");
    if (!a || !b || !c) continue;
    if (sscanf(a + 9, "%47[^\"]", name) != 1) continue;
    sps = atof(b + 19);
    us = atof(c + 11);
    snprintf(out[n].name, sizeof out[n].name, "%s", name);
    out[n].value = sps;
    out[n].step_us = us;
    ++n;
  }
  pclose(p);
  return n;
}

static void usage(FILE *f) {
  fprintf(f,
          "usage: mixp-bench [--threads N] [--steps N] [--batch N] [--torch-script PATH] [--no-torch]\n"
          "                  [--only o0|o1-bf16|o2-bf16|o2-f16] [--device cpu]\n"
          "       mixp-bench --device cuda[:N] ... (GPU workloads; --device cuda --help)\n"
          "Measures mixp workloads beside their PyTorch references in the same run.\n");
}


int main(int argc, char **argv) {
  for (int i = 1; i + 1 < argc; ++i)
    if (!strcmp(argv[i], "--device") && !strncmp(argv[i + 1], "cuda", 4)) return bench_gpu_main(argc, argv);
  int threads = 2, steps = 200, batch = 128, use_torch = 1, only = -1;
  const char *script = MIXP_BENCH_TORCH_SCRIPT;
  for (int i = 1; i < argc; ++i) {
    const char *a = argv[i];
    const char *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (!strcmp(a, "--help")) {
      usage(stdout);
      return 0;
    } else if (!strcmp(a, "--no-torch")) {
      use_torch = 0;
    } else if (v && !strcmp(a, "--threads")) {
      threads = atoi(v), ++i;
    } else if (v && !strcmp(a, "--steps")) {
      steps = atoi(v), ++i;
    } else if (v && !strcmp(a, "--batch")) {
      batch = atoi(v), ++i;
    } else if (v && !strcmp(a, "--only")) {
      static const char *keys[] = {"o0", "o1-bf16", "o2-bf16", "o2-f16"};
      for (int k = 0; k < 4; ++k)
        if (!strcmp(v, keys[k])) only = k;
      if (only < 0) {
        fprintf(stderr, "mixp-bench: --only takes o0, o1-bf16, o2-bf16 or o2-f16, not '%s'\n", v);
        return 2;
      }
      ++i;
    } else if (v && !strcmp(a, "--torch-script")) {
      script = v, ++i;
    } else if (v && !strcmp(a, "--device")) {
      if (strcmp(v, "cpu") != 0) {
        fprintf(stderr, "mixp-bench: --device takes cpu or cuda[:N], not '%s'\n", v);
        return 2;
      }
      ++i;
    } else {
      fprintf(stderr, "mixp-bench: unknown or incomplete flag '%s'\n", a);
      usage(stderr);
      return 2;
    }
  }
  if (threads < 1 || steps < 1 || batch < 1) {
    fprintf(stderr, "mixp-bench: --threads, --steps and --batch must be >= 1\n");
    return 2;
  }
  printf("mixp-bench: %s\nthreads=%d batch=%d steps=%d\n\n", mixp_build_info(), threads, batch, steps);

  if (only >= 0) {
    /* One configuration only, for profilers: no table, no reference. */
    const double med = bench_mlp(threads, batch, steps, (mode)only);
    printf("mlp-step mode %d: %.0f samples/s, %.1f us/step\n", only, batch / med, med * 1e6);
    return 0;
  }
  printf("%-34s %12s %12s\n", "gemm 1024^3", "GFLOP/s", "");
  printf("%-34s %12.1f\n", "mixp f32", bench_gemm(threads, MIXP_F32, 20));
  printf("%-34s %12.1f\n\n", "mixp bf16", bench_gemm(threads, MIXP_BF16, 20));

  static const char *names[] = {"mixp O0 (fp32)", "mixp O1 bf16 (autocast)", "mixp O2 bf16 (decorate)",
                                "mixp O2 f16 (decorate + scaler)"};
  result r[8];
  for (int m = 0; m < 4; ++m) {
    double med = bench_mlp(threads, batch, steps, (mode)m);
    snprintf(r[m].name, sizeof r[m].name, "%s", names[m]);
    r[m].step_us = med * 1e6;
    r[m].value = batch / med;
  }
  result t[4];
  int nt = use_torch ? run_torch(script, threads, batch, steps, t, 4) : 0;
  printf("%-34s %12s %12s %14s %14s\n", "mlp-step (784-256-128-10, AdamW)", "samples/s", "us/step",
         "vs mixp O0", "vs torch");
  for (int m = 0; m < 4; ++m) {
    /* Compare fp32 with torch fp32 and the low-precision modes with torch's bf16 autocast. */
    const char *ref = m == 0 ? "torch-fp32" : "torch-bf16-autocast";
    double tv = 0;
    for (int k = 0; k < nt; ++k)
      if (!strcmp(t[k].name, ref)) tv = t[k].value;
    char vs_torch[32] = "n/a";
    if (tv > 0) snprintf(vs_torch, sizeof vs_torch, "%.2fx", r[m].value / tv);
    printf("%-34s %12.0f %12.1f %13.2fx %14s\n", r[m].name, r[m].value, r[m].step_us, r[m].value / r[0].value,
           vs_torch);
  }
  for (int k = 0; k < nt; ++k)
    printf("%-34s %12.0f %12.1f %13.2fx %14s\n", t[k].name, t[k].value, t[k].step_us, t[k].value / r[0].value,
           "1.00x");
  if (use_torch && nt == 0)
    printf("(PyTorch reference not run: /usr/bin/python3 with torch not found; apt-get install python3-torch)\n");
  return 0;
}
