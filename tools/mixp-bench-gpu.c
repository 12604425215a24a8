/* mixp-bench --device cuda[:N]: the GPU workloads, each measured through the
 * public API and, in the same invocation, with its PyTorch reference
 * (bench/torch/gpu_workloads.py); one table with the ratios.
 *
 *   gemm        mixp_matmul f16/bf16 at 4096^3, 8192^3 and the GPT-2 shapes
 *               (M=8192; K,N from 768/2304/3072): TFLOP/s and % of the
 *               989.5 TFLOP/s H100 SXM dense bf16/f16 peak
 *   adamw       GradScaler unscale + AdamW over the 148 fp32 tensors of
 *               GPT-2 124M: effective GB/s (36 bytes per parameter, see the
 *               torch script) and % of 3.0 TB/s
 *   mlp-launch  4 x Linear(1024) + ReLU, batch 64, f16 autocast, GradScaler,
 *               AdamW: microseconds per step
 *   fmnist      one Fashion-MNIST MLP epoch (784-256-128-10, batch 128, 60000
 *               samples resident on the device) under O0, O1 and O2
 *   gpt2, resnet50, mobilenet_v3_large, resnet18
 *               whole models beside their twins (mixp-bench-models.c)
 *
 * With --quick every workload runs at tiny sizes, on any --device: on the
 * CPU that is their smoke test (tests/bench_gpu_workloads_cpu.sh).
 *
 * GPU work is queued asynchronously, so every timing ends with a read of a
 * one-element tensor, which waits for the session's stream. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "mixp/mixp.h"
#include "mixp-bench.h"


enum { MAX_ROWS = 64 };
typedef struct row {
  char name[64];
  char unit[16];
  double mixp, torch;
} row;

static row g_rows[MAX_ROWS];
static int g_nrows;
/* What the PyTorch side ran instead where its torch lacks something (e.g.
 * "AdamW(fused=True) unavailable here ..."), printed under the table. */
static char g_torch_note[512];

static void add_row(const char *name, const char *unit, double v) {
  if (g_nrows == MAX_ROWS) return;
  row *r = &g_rows[g_nrows++];
  snprintf(r->name, sizeof r->name, "%s", name);
  snprintf(r->unit, sizeof r->unit, "%s", unit);
  r->mixp = v;
  r->torch = 0;
}

/* Waits for everything queued on the session: reading a value back does. */
static void device_sync(mixp_session *s) {
  static mixp_session *last;
  static mixp_tensor *tick;
  if (last != s) {
    mixp_tensor_release(tick);
    int64_t one[1] = {1};
    CHECK(mixp_tensor_zeros(s, MIXP_F32, one, 1, &tick));
    last = s;
  }
  double v;
  CHECK(mixp_tensor_item(tick, &v));
}

static mixp_session *gpu_session(const char *device) {
  mixp_session_options o;
  mixp_session_options_init(&o);
  o.device = device;
  o.seed = 1;
  mixp_session *s = NULL;
  if (mixp_session_create(&o, &s) != MIXP_OK) {
    fprintf(stderr, "mixp-bench: %s\n", mixp_last_error());
    exit(1);
  }
  return s;
}

/* ---- gemm ------------------------------------------------------------------------- */

static void bench_gemm(mixp_session *s, int quick) {
  int64_t shapes[8][3] = {{4096, 4096, 4096}, {8192, 8192, 8192}, {8192, 768, 2304},
                          {8192, 768, 3072},  {8192, 3072, 768},  {8192, 768, 768}};
  int nshapes = 6;
  if (quick) {
    shapes[0][0] = shapes[0][1] = shapes[0][2] = 256;
    nshapes = 1;
  }
  const mixp_dtype dts[2] = {MIXP_F16, MIXP_BF16};
  for (int i = 0; i < nshapes; ++i) {
    const int64_t m = shapes[i][0], k = shapes[i][1], n = shapes[i][2];
    for (int d = 0; d < 2; ++d) {
      int64_t sa[2] = {m, k}, sb[2] = {k, n};
      mixp_tensor *a = NULL, *b = NULL, *c = NULL;
      CHECK(mixp_tensor_randn(s, dts[d], sa, 2, &a));
      CHECK(mixp_tensor_randn(s, dts[d], sb, 2, &b));
      const double flop = 2.0 * (double)m * (double)n * (double)k;
      int reps = quick ? 3 : (int)fmax(10.0, 2e13 / flop);
      for (int w = 0; w < 3; ++w) {
        CHECK(mixp_matmul(a, b, &c));
        mixp_tensor_release(c);
      }
      device_sync(s);
      const double t0 = bench_now();
      for (int r = 0; r < reps; ++r) {
        CHECK(mixp_matmul(a, b, &c));
        mixp_tensor_release(c);
      }
      device_sync(s);
      const double t = (bench_now() - t0) / reps;
      char name[64];
      snprintf(name, sizeof name, "gemm %s %lldx%lldx%lld", mixp_dtype_name(dts[d]), (long long)m,
               (long long)k, (long long)n);
      add_row(name, "TFLOP/s", flop / t / 1e12);
      mixp_tensor_release(a);
      mixp_tensor_release(b);
    }
  }
}

/* ---- unscale + AdamW over GPT-2 124M ------------------------------------------------ */

static int gpt2_shapes(int quick, int64_t shapes[][2], int *ndims) {
  const int64_t d = quick ? 64 : 768, layers = quick ? 2 : 12, vocab = quick ? 500 : 50257,
                ctx = quick ? 64 : 1024;
  int n = 0;
#define SH2(a, b) (shapes[n][0] = (a), shapes[n][1] = (b), ndims[n++] = 2)
#define SH1(a) (shapes[n][0] = (a), shapes[n][1] = 0, ndims[n++] = 1)
  SH2(vocab, d);
  SH2(ctx, d);
  for (int l = 0; l < layers; ++l) {
    SH1(d), SH1(d), SH2(d, 3 * d), SH1(3 * d), SH2(d, d), SH1(d);
    SH1(d), SH1(d), SH2(d, 4 * d), SH1(4 * d), SH2(4 * d, d), SH1(d);
  }
  SH1(d), SH1(d);
#undef SH1
#undef SH2
  return n;
}

static void bench_adamw(mixp_session *s, int quick) {
  int64_t shapes[160][2];
  int ndims[160];
  const int np = gpt2_shapes(quick, shapes, ndims);
  mixp_tensor *params[160], *total = NULL;
  double numel = 0;
  for (int i = 0; i < np; ++i) {
    CHECK(mixp_tensor_randn(s, MIXP_F32, shapes[i], ndims[i], &params[i]));
    CHECK(mixp_tensor_set_requires_grad(params[i], 1));
    numel += (double)mixp_tensor_numel(params[i]);
    /* Every gradient becomes ones: backward of the sum of all sums. */
    mixp_tensor *t = NULL, *acc = NULL;
    CHECK(mixp_sum(params[i], NULL, 0, 0, &t));
    if (total) {
      CHECK(mixp_add(total, t, &acc));
      mixp_tensor_release(total);
      mixp_tensor_release(t);
      total = acc;
    } else {
      total = t;
    }
  }
  CHECK(mixp_backward(total, NULL));
  mixp_tensor_release(total);
  mixp_optimizer_options oo;
  mixp_optimizer_options_init(&oo, MIXP_OPTIM_ADAMW);
  oo.lr = 1e-4;
  mixp_optimizer *opt = NULL;
  CHECK(mixp_optimizer_create(s, params, np, &oo, &opt));
  /* Scale 2: every unscale really multiplies, and 120 halvings keep the
   * gradients normal. */
  mixp_grad_scaler_options so;
  mixp_grad_scaler_options_init(&so);
  so.init_scale = 2.0;
  so.growth_interval = 2147483647;
  mixp_grad_scaler *sc = NULL;
  CHECK(mixp_grad_scaler_create(s, &so, &sc));
  const int warm = quick ? 3 : 20, reps = quick ? 3 : 100;
  double t0 = 0;
  for (int i = 0; i < warm + reps; ++i) {
    if (i == warm) {
      device_sync(s);
      t0 = bench_now();
    }
    CHECK(mixp_grad_scaler_unscale(sc, opt));
    CHECK(mixp_grad_scaler_step(sc, opt));
    CHECK(mixp_grad_scaler_update(sc));
  }
  device_sync(s);
  const double t = (bench_now() - t0) / reps;
  char name[64];
  snprintf(name, sizeof name, "unscale+adamw %d tensors %.1fM", np, numel / 1e6);
  add_row(name, "GB/s", 36.0 * numel / t / 1e9);
  mixp_grad_scaler_destroy(sc);
  mixp_optimizer_destroy(opt);
  for (int i = 0; i < np; ++i) mixp_tensor_release(params[i]);
}

/* ---- launch-bound MLP step ------------------------------------------------------------ */

static void bench_mlp_launch(mixp_session *s, int quick) {
  mixp_module *lin[4];
  mixp_tensor *params[8];
  for (int i = 0; i < 4; ++i) {
    CHECK(mixp_linear_create(s, 1024, 1024, 1, MIXP_F32, &lin[i]));
    CHECK(mixp_module_parameter(lin[i], 0, &params[2 * i]));
    CHECK(mixp_module_parameter(lin[i], 1, &params[2 * i + 1]));
  }
  mixp_optimizer_options oo;
  mixp_optimizer_options_init(&oo, MIXP_OPTIM_ADAMW);
  oo.lr = 1e-4;
  mixp_optimizer *opt = NULL;
  CHECK(mixp_optimizer_create(s, params, 8, &oo, &opt));
  mixp_grad_scaler_options so;
  mixp_grad_scaler_options_init(&so);
  mixp_grad_scaler *sc = NULL;
  CHECK(mixp_grad_scaler_create(s, &so, &sc));
  mixp_autocast_options ao;
  mixp_autocast_options_init(&ao);
  ao.dtype = MIXP_F16;
  int64_t shape[2] = {64, 1024};
  mixp_tensor *x = NULL, *y = NULL;
  CHECK(mixp_tensor_randn(s, MIXP_F32, shape, 2, &x));
  CHECK(mixp_tensor_randn(s, MIXP_F32, shape, 2, &y));
  const int warm = quick ? 3 : 50, reps = quick ? 5 : 500;
  double t0 = 0;
  for (int i = 0; i < warm + reps; ++i) {
    if (i == warm) {
      device_sync(s);
      t0 = bench_now();
    }
    mixp_tensor *h = NULL, *loss = NULL, *scaled = NULL;
    CHECK(mixp_autocast_push(s, &ao));
    h = mixp_tensor_retain(x);
    for (int l = 0; l < 4; ++l) {
      mixp_tensor *o = NULL, *r = NULL;
      CHECK(mixp_module_forward(lin[l], h, &o));
      mixp_tensor_release(h);
      if (l < 3) {
        CHECK(mixp_relu(o, &r));
        mixp_tensor_release(o);
        h = r;
      } else {
        h = o;
      }
    }
    CHECK(mixp_mse_loss(h, y, MIXP_REDUCTION_MEAN, &loss));
    CHECK(mixp_autocast_pop(s));
    CHECK(mixp_optimizer_zero_grad(opt));
    CHECK(mixp_grad_scaler_scale(sc, loss, &scaled));
    CHECK(mixp_backward(scaled, NULL));
    CHECK(mixp_grad_scaler_step(sc, opt));
    CHECK(mixp_grad_scaler_update(sc));
    mixp_tensor_release(h);
    mixp_tensor_release(loss);
    mixp_tensor_release(scaled);
  }
  device_sync(s);
  add_row("mlp-launch 4x1024 b64 f16", "us/step", (bench_now() - t0) / reps * 1e6);
  mixp_tensor_release(x);
  mixp_tensor_release(y);
  mixp_grad_scaler_destroy(sc);
  mixp_optimizer_destroy(opt);
  for (int i = 0; i < 8; ++i) mixp_tensor_release(params[i]);
  for (int i = 0; i < 4; ++i) mixp_module_destroy(lin[i]);
}

/* ---- Fashion-MNIST MLP epoch under O0/O1/O2 ------------------------------------------------ */

static void bench_fmnist(mixp_session *s, int quick) {
  const int64_t n = quick ? 1024 : 60000, batch = 128;
  int64_t xs[2] = {n, 784}, ys[1] = {n};
  mixp_tensor *x_all = NULL, *y_all = NULL;
  CHECK(mixp_tensor_randn(s, MIXP_F32, xs, 2, &x_all));
  int64_t *labels = malloc(sizeof(int64_t) * (size_t)n);
  for (int64_t i = 0; i < n; ++i) labels[i] = (i * 7 + 3) % 10;
  CHECK(mixp_tensor_from_host(s, labels, sizeof(int64_t) * (size_t)n, MIXP_I64, ys, 1, &y_all));
  free(labels);
  static const char *modes[3] = {"O0", "O1", "O2"};
  for (int m = 0; m < 3; ++m) {
    mixp_module *model = NULL;
    CHECK(mixp_model_create(s, "mlp in=784 hidden=256,128 classes=10", &model));
    const int np = mixp_module_num_parameters(model);
    mixp_tensor *params[16];
    for (int i = 0; i < np && i < 16; ++i) CHECK(mixp_module_parameter(model, i, &params[i]));
    mixp_optimizer_options oo;
    mixp_optimizer_options_init(&oo, MIXP_OPTIM_ADAMW);
    mixp_optimizer *opt = NULL;
    CHECK(mixp_optimizer_create(s, params, np, &oo, &opt));
    if (m == 2) {
      mixp_decorate_options d;
      mixp_decorate_options_init(&d);
      d.dtype = MIXP_F16;
      CHECK(mixp_amp_decorate(model, opt, &d));
    }
    mixp_grad_scaler *sc = NULL;
    if (m > 0) {
      mixp_grad_scaler_options so;
      mixp_grad_scaler_options_init(&so);
      CHECK(mixp_grad_scaler_create(s, &so, &sc));
    }
    mixp_autocast_options ao;
    mixp_autocast_options_init(&ao);
    ao.dtype = MIXP_F16;
    ao.level = m == 2 ? MIXP_AMP_O2 : MIXP_AMP_O1;
    const int epochs = quick ? 1 : 3;
    double t0 = 0;
    for (int e = 0; e < 1 + epochs; ++e) {
      if (e == 1) {
        device_sync(s);
        t0 = bench_now();
      }
      for (int64_t i = 0; i + batch <= n; i += batch) {
        mixp_tensor *xb = NULL, *yb = NULL, *logits = NULL, *loss = NULL, *scaled = NULL;
        CHECK(mixp_slice(x_all, 0, i, i + batch, 1, &xb));
        CHECK(mixp_slice(y_all, 0, i, i + batch, 1, &yb));
        if (m > 0) CHECK(mixp_autocast_push(s, &ao));
        CHECK(mixp_module_forward(model, xb, &logits));
        CHECK(mixp_cross_entropy(logits, yb, MIXP_REDUCTION_MEAN, MIXP_IGNORE_INDEX_DEFAULT, &loss));
        if (m > 0) CHECK(mixp_autocast_pop(s));
        CHECK(mixp_optimizer_zero_grad(opt));
        if (sc) {
          CHECK(mixp_grad_scaler_scale(sc, loss, &scaled));
          CHECK(mixp_backward(scaled, NULL));
          CHECK(mixp_grad_scaler_step(sc, opt));
          CHECK(mixp_grad_scaler_update(sc));
        } else {
          CHECK(mixp_backward(loss, NULL));
          CHECK(mixp_optimizer_step(opt));
        }
        mixp_tensor *rel[] = {xb, yb, logits, loss, scaled};
        for (size_t k = 0; k < sizeof rel / sizeof *rel; ++k) mixp_tensor_release(rel[k]);
      }
    }
    device_sync(s);
    const double t = (bench_now() - t0) / epochs;
    char name[64];
    snprintf(name, sizeof name, "fmnist epoch %s", modes[m]);
    add_row(name, "samples/s", (double)((n / batch) * batch) / t);
    mixp_grad_scaler_destroy(sc);
    mixp_optimizer_destroy(opt);
    for (int i = 0; i < np && i < 16; ++i) mixp_tensor_release(params[i]);
    mixp_module_destroy(model);
  }
  mixp_tensor_release(x_all);
  mixp_tensor_release(y_all);
}

/* ---- the PyTorch side and the table ------------------------------------------------ */

static void run_torch(const char *python, const char *script, const char *device, const char *only,
                      int quick) {
  char cmd[2048];
  snprintf(cmd, sizeof cmd, "'%s' '%s' --device '%s'%s%s%s", python, script, device,
           only ? " --only " : "", only ? only : "", quick ? " --quick" : "");
  FILE *p = popen(cmd, "r");
  if (!p) return;
  char line[1024];
  while (fgets(line, sizeof line, p)) {
    const char *a = strstr(line, "\"name\": \""), *b = strstr(line, "\"value\": ");
    char name[64];
    bench_json_string(line, "note", g_torch_note, sizeof g_torch_note);
    if (!a || !b || sscanf(a + 9, "%63[^\"]", name) != 1) continue;
    const double v = atof(b + 9);
    for (int i = 0; i < g_nrows; ++i)
      if (!strcmp(g_rows[i].name, name)) g_rows[i].torch = v;
  }
  pclose(p);
}

static void print_table(int torch_wanted, int torch_found) {
  printf("%-36s | %-26s | %-26s | %s\n", "workload", "mixp", "torch", "mixp vs torch");
  printf("%.36s-|-%.26s-|-%.26s-|-%s\n", "------------------------------------------------",
         "------------------------------------------------",
         "------------------------------------------------", "----------------------");
  for (int i = 0; i < g_nrows; ++i) {
    const row *r = &g_rows[i];
    char mv[48], tv[48] = "n/a", ratio[48] = "n/a";
    /* Peaks: 989.5 TFLOP/s dense f16/bf16 and 3.0 TB/s, the H100 SXM figures. */
    double peak = !strcmp(r->unit, "TFLOP/s") ? 989.5 : !strcmp(r->unit, "GB/s") ? 3000.0 : 0.0;
    if (peak > 0) {
      snprintf(mv, sizeof mv, "%.1f %s (%.1f%%)", r->mixp, r->unit, 100.0 * r->mixp / peak);
      if (r->torch > 0)
        snprintf(tv, sizeof tv, "%.1f %s (%.1f%%)", r->torch, r->unit, 100.0 * r->torch / peak);
    } else {
      snprintf(mv, sizeof mv, "%.1f %s", r->mixp, r->unit);
      if (r->torch > 0) snprintf(tv, sizeof tv, "%.1f %s", r->torch, r->unit);
    }
    if (r->torch > 0) {
      /* > 1 means mixp is faster, whatever the unit's direction. */
      const double x = !strcmp(r->unit, "us/step") ? r->torch / r->mixp : r->mixp / r->torch;
      snprintf(ratio, sizeof ratio, "%.2fx", x);
    }
    printf("%-36s | %-26s | %-26s | %s\n", r->name, mv, tv, ratio);
  }
  if (g_torch_note[0]) printf("PyTorch: %s\n", g_torch_note);
  if (!torch_wanted) printf("(PyTorch reference not run: --no-torch)\n");
  else if (!torch_found)
    printf("(PyTorch reference not run: no python with torch >= 2.0; pass --python or MIXP_BENCH_PYTHON)\n");
}

/* A flag's whole-number value in [least, 10^6]; 0 (and a message) when it is not one. */
static int whole_number(const char *flag, const char *v, int least, int *out) {
  char *end;
  const long x = strtol(v, &end, 10);
  if (!*v || *end || x < least || x > 1000000) {
    fprintf(stderr, "mixp-bench: %s takes a whole number >= %d, not '%s'\n", flag, least, v);
    return 0;
  }
  *out = (int)x;
  return 1;
}

static void gpu_usage(FILE *f) {
  fprintf(f,
          "usage: mixp-bench --device cuda[:N] [--workload NAME]... [--quick] [--python PATH | --no-torch]\n"
          "                  [--torch-script PATH] [--steps N | --step-seconds S] [--batch N]\n"
          "                  [--mode fp32|o1|o2]... [--channels-last 0|1] [--compile-timeout S]\n"
          "                  [--profile DIR]\n"
          "       mixp-bench --device cpu --quick ... (the same workloads, tiny, on the CPU)\n"
          "Workloads (--workload, or --only; default: all):\n"
          "  gemm, adamw, mlp-launch, fmnist   kernels and small steps (see docs/performance.md)\n"
          "  gpt2, resnet50, mobilenet_v3_large, resnet18\n"
          "                                    whole models, fp32 / O1 / O2 (and NCHW / channels_last\n"
          "                                    for the conv nets); 'models' names all four\n"
          "Each runs beside its PyTorch reference (bench/torch/gpu_workloads.py) in the same\n"
          "invocation, with PATH (default: $MIXP_BENCH_PYTHON, else the first python3 on PATH whose\n"
          "torch is 2.x or later; on the CPU any torch, whose gaps the script names).\n"
          "Model rows: 3 warm-up steps, then as many timed steps as fit in --step-seconds (default\n"
          "2; at least 3, at most 10, 30 for resnet18) or exactly --steps N; --batch replaces the\n"
          "models' batches; --mode and --channels-last keep some rows; torch.compile (gpt2) is\n"
          "given --compile-timeout seconds (default 100; 0: not tried). --profile DIR: instead\n"
          "of timing, one profiled step per model row after its warm-up (no PyTorch): the top 20\n"
          "ops printed, DIR/<model>-b<batch>-<precision>[-nchw|-cl].trace.json written.\n"
          "--quick: tiny sizes (a smoke test). Exit status 1 when a row failed (a mixp error\n"
          "other than running out of memory, a twin that failed or has another parameter count).\n");
}

int bench_gpu_main(int argc, char **argv) {
  const char *device = "cuda", *python = NULL, *script = MIXP_BENCH_GPU_TORCH_SCRIPT;
  int quick = 0, use_torch = 1, want[4] = {0, 0, 0, 0}, any = 0;
  int want_models[16] = {0};
  static const char *names[4] = {"gemm", "adamw", "mlp-launch", "fmnist"};
  bench_models_options mo;
  memset(&mo, 0, sizeof mo);
  mo.step_seconds = -1;
  mo.compile_timeout = 100;
  mo.layout = -1;
  for (int i = 1; i < argc; ++i) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (!strcmp(a, "--help")) {
      gpu_usage(stdout);
      return 0;
    } else if (!strcmp(a, "--quick")) {
      quick = 1;
    } else if (!strcmp(a, "--no-torch")) {
      use_torch = 0;
    } else if (v && !strcmp(a, "--device")) {
      device = v, ++i;
    } else if (v && !strcmp(a, "--python")) {
      python = v, ++i;
    } else if (v && !strcmp(a, "--torch-script")) {
      script = v, ++i;
    } else if (v && (!strcmp(a, "--only") || !strcmp(a, "--workload"))) {
      int k = 0;
      while (k < 4 && strcmp(v, names[k])) ++k;
      const int mk = bench_models_find(v);
      if (k < 4) {
        want[k] = 1;
      } else if (mk >= 0) {
        want_models[mk] = 1;
      } else if (!strcmp(v, "models")) {
        for (int j = 0; j < bench_models_count(); ++j) want_models[j] = 1;
      } else {
        fprintf(stderr,
                "mixp-bench: %s takes gemm, adamw, mlp-launch, fmnist, gpt2, resnet50, mobilenet_v3_large, "
                "resnet18 or models with --device cuda, not '%s'\n", a, v);
        return 2;
      }
      any = 1;
      ++i;
    } else if (v && (!strcmp(a, "--steps") || !strcmp(a, "--batch") || !strcmp(a, "--compile-timeout"))) {
      int *out = !strcmp(a, "--steps") ? &mo.steps : !strcmp(a, "--batch") ? &mo.batch : &mo.compile_timeout;
      if (!whole_number(a, v, out == &mo.compile_timeout ? 0 : 1, out)) return 2;
      ++i;
    } else if (v && !strcmp(a, "--step-seconds")) {
      char *end;
      mo.step_seconds = strtod(v, &end), ++i;
      if (*end || !(mo.step_seconds > 0 && mo.step_seconds < 1e6)) {
        fprintf(stderr, "mixp-bench: --step-seconds takes a number of seconds > 0, not '%s'\n", v);
        return 2;
      }
    } else if (v && !strcmp(a, "--mode")) {
      const unsigned bit = !strcmp(v, "fp32") ? 1u : !strcmp(v, "o1") ? 2u : !strcmp(v, "o2") ? 4u : 0u;
      if (!bit) {
        fprintf(stderr, "mixp-bench: --mode takes fp32, o1 or o2, not '%s'\n", v);
        return 2;
      }
      mo.mode_mask |= bit, ++i;
    } else if (v && !strcmp(a, "--channels-last")) {
      if (strcmp(v, "0") && strcmp(v, "1")) {
        fprintf(stderr, "mixp-bench: --channels-last takes 0 or 1, not '%s'\n", v);
        return 2;
      }
      mo.layout = atoi(v), ++i;
    } else if (v && !strcmp(a, "--profile")) {
      mo.profile_dir = v, ++i;
    } else {
      fprintf(stderr, "mixp-bench: unknown or incomplete flag '%s'\n", a);
      gpu_usage(stderr);
      return 2;
    }
  }
  if (!any) {
    /* --profile concerns the models alone. */
    if (!mo.profile_dir) want[0] = want[1] = want[2] = want[3] = 1;
    for (int j = 0; j < bench_models_count(); ++j) want_models[j] = 1;
  }
  int any_model = 0;
  for (int j = 0; j < bench_models_count(); ++j) any_model |= want_models[j];
  if (mo.profile_dir && (want[0] || want[1] || want[2] || want[3])) {
    fprintf(stderr, "mixp-bench: --profile profiles the model workloads (gpt2, resnet50, mobilenet_v3_large, "
                    "resnet18), not gemm, adamw, mlp-launch or fmnist\n");
    return 2;
  }
  mixp_session *s = gpu_session(device);
  const int cpu = !strcmp(mixp_session_device(s), "cpu");
  printf("mixp-bench: %s\ndevice %s: %s\n\n", mixp_build_info(), mixp_session_device(s),
         mixp_session_device_note(s));
  if (cpu) printf("(on the CPU these are smoke runs of the GPU workloads' code: no comparison)\n\n");
  void (*fns[4])(mixp_session *, int) = {bench_gemm, bench_adamw, bench_mlp_launch, bench_fmnist};
  for (int k = 0; k < 4; ++k)
    if (want[k]) {
      fns[k](s, quick);
      fflush(stdout);
    }
  mixp_session_destroy(s);
  /* Timed comparisons need torch 2.x; the CPU smoke run takes any torch,
   * whose gaps the script bridges and names. */
  char found[1024];
  const char *py = use_torch && !mo.profile_dir ? bench_find_python(python, cpu ? 1 : 2, found, sizeof found) : NULL;
  const int any_old = want[0] || want[1] || want[2] || want[3];
  if (py && any_old) {
    for (int k = 0; k < 4; ++k)
      if (want[k]) run_torch(py, script, device, names[k], quick);
  }
  if (any_old) print_table(use_torch, py != NULL);
  int failures = 0;
  if (any_model) {
    mo.device = device;
    mo.quick = quick;
    mo.python = py;
    mo.script = script;
    if (mo.step_seconds < 0) mo.step_seconds = quick ? 0.2 : 2.0;
    failures = bench_models_run(&mo, want_models);
    if (use_torch && !py && !mo.profile_dir)
      printf("\n(PyTorch twins not run: no python with torch >= %d; pass --python or MIXP_BENCH_PYTHON)\n",
             cpu ? 1 : 2);
  }
  if (py) bench_print_torch(py);
  if (failures) printf("\nmixp-bench: %d row(s) FAILED (see the notes above)\n", failures);
  return failures ? 1 : 0;
}
