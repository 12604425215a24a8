/* mixp-bench: measures mixp workloads and, in the same run, their PyTorch
 * references, and prints one table with the ratios (performance is measured
 * here, never asserted in a unit test).
 *
 *   mixp-bench [--workload NAME]... [--threads N] [--steps N] [--batch N]
 *              [--python PATH | --no-torch]
 *
 * Workloads (CPU):
 *   gemm      1024^3 matrix product, f32, bf16 and f16, GFLOP/s
 *   mlp, cnn, resnet18, gpt, gpt256 (gpt at T = 256)
 *             training steps of zoo models (AdamW, cross-entropy) under
 *             O0 (fp32), O1 bf16 (autocast), O2 bf16 (decorate + fp32 master
 *             weights), O2 f16 (+ dynamic loss scaling); samples/s, beside
 *             identical PyTorch models (bench/torch/cpu_workloads.py, fp32
 *             and bf16 autocast) measured in the same run.
 *
 * With --device cuda[:N] the GPU workloads run instead (mixp-bench-gpu.c,
 * mixp-bench-models.c); with --quick they run at tiny sizes on whatever
 * device is named (--device cpu --quick: their code path, checked in CI). */
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

typedef enum mode { MODE_O0, MODE_O1_BF16, MODE_O2_BF16, MODE_O2_F16, MODE_COUNT } mode;
static const char *const k_mode_keys[MODE_COUNT] = {"o0", "o1-bf16", "o2-bf16", "o2-f16"};
static const char *const k_mode_names[MODE_COUNT] = {"mixp O0 (fp32)", "mixp O1 bf16 (autocast)",
                                                     "mixp O2 bf16 (decorate)",
                                                     "mixp O2 f16 (decorate + scaler)"};
static const bench_precision k_mode_precisions[MODE_COUNT] = {
    {MIXP_AMP_O0, MIXP_F32}, {MIXP_AMP_O1, MIXP_BF16}, {MIXP_AMP_O2, MIXP_BF16}, {MIXP_AMP_O2, MIXP_F16}};

/* The training workloads. Each has an identical PyTorch model in
 * bench/torch/cpu_workloads.py (same layers, parameter count printed by both
 * sides), the same input shapes, AdamW and cross-entropy. */
typedef struct workload {
  const char *key;   /* --workload and the torch script's name */
  const char *spec;  /* mixp_model_create */
  const char *title; /* table heading */
  int64_t item[3];   /* one sample: [784], [C, H, W], or [T] tokens */
  int item_ndim;
  int64_t vocab; /* > 0: token input, one target per token */
  int batch, steps, warmup;
} workload;

static const workload k_workloads[] = {
    {"mlp", "mlp in=784 hidden=256,128 classes=10", "mlp 784-256-128-10", {784}, 1, 0, 128, 200, 20},
    {"cnn", "cnn in_channels=1 image_size=28 classes=10", "cnn (1x28x28, 2 conv blocks)", {1, 28, 28}, 3, 0,
     128, 40, 5},
    {"resnet18", "resnet depth=18 in_channels=3 classes=10", "resnet18 (3x32x32)", {3, 32, 32}, 3, 0, 32, 30,
     5},
    {"gpt", "gpt n_layer=4 n_head=4 n_embd=128 vocab=65 block_size=64", "gpt (4 layers, 128 wide, T=64)",
     {64}, 1, 65, 16, 40, 5},
    /* The same model at T = 256, where attention's L x S terms dominate
     * (the fused attention kernel's case: docs/performance.md). */
    {"gpt256", "gpt n_layer=4 n_head=4 n_embd=128 vocab=65 block_size=256", "gpt (4 layers, 128 wide, T=256)",
     {256}, 1, 65, 16, 20, 3},
};
#define NUM_WORKLOADS ((int)(sizeof k_workloads / sizeof k_workloads[0]))

/* --model-config: keys appended to every mixp model's spec (the PyTorch
 * twins are unchanged), e.g. channels_last=0 to time the NCHW layout. */
static const char *g_model_config = NULL;
/* --graph: each mode is also timed captured once and replayed (mixp_graph). */
static int g_graph = 0;

/* One training configuration; returns the median step time in seconds.
 * With `graph` the last warm-up step is captured and the timed steps are
 * its replays. */
static double bench_model(const workload *w, int threads, int batch, int steps, mode m, int64_t *params_out,
                          int graph) {
  mixp_session *s = new_session(threads);
  char spec[512];
  snprintf(spec, sizeof spec, "%s%s%s", w->spec, g_model_config ? " " : "", g_model_config ? g_model_config : "");
  bench_trainer tr;
  CHECK(bench_trainer_init(&tr, s, spec, w->vocab, k_mode_precisions[m]));
  if (params_out) *params_out = tr.param_count;
  mixp_tensor *x = NULL, *y = NULL;
  CHECK(bench_make_batch(s, w->item, w->item_ndim, w->vocab, batch, &x, &y));
  const int warmup = w->warmup;
  double *t = malloc(sizeof(double) * (size_t)steps);
  mixp_graph *g = NULL;
  for (int i = 0; i < warmup + steps; ++i) {
    double t0 = bench_now();
    if (g) {
      CHECK(mixp_graph_replay(g));
    } else if (graph && i == warmup - 1) {
      CHECK(mixp_graph_capture_begin(s));
      CHECK(bench_trainer_step(&tr, x, y));
      CHECK(mixp_graph_capture_end(s, &g));
    } else {
      CHECK(bench_trainer_step(&tr, x, y));
    }
    if (i >= warmup) t[i - warmup] = bench_now() - t0;
  }
  mixp_graph_destroy(g);
  double med = median(t, steps);
  free(t);
  mixp_tensor_release(x);
  mixp_tensor_release(y);
  bench_trainer_free(&tr);
  mixp_session_destroy(s);
  return med;
}

/* ---- the PyTorch side ------------------------------------------------------ */

typedef struct torch_result {
  double fp32, bf16; /* samples/s; 0 when not measured */
  int64_t params;
  char version[32];
} torch_result;

/* Runs the PyTorch twin of one workload and reads its JSON lines. */
static void run_torch(const char *python, const char *script, const workload *w, int threads, int batch,
                      int steps, torch_result *out) {
  memset(out, 0, sizeof *out);
  char cmd[2048];
  snprintf(cmd, sizeof cmd, "'%s' '%s' --workload %s --threads %d --batch %d --steps %d --warmup %d 2>/dev/null",
           python, script, w->key, threads, batch, steps, w->warmup);
  FILE *p = popen(cmd, "r");
  if (!p) return;
  char line[512];
  while (fgets(line, sizeof line, p)) {
    const char *v = strstr(line, "\"torch\": \"");
    if (v) sscanf(v + 10, "%31[^\"]", out->version);
    if (strstr(line, "\"name\": \"torch-fp32\"")) out->fp32 = bench_json_number(line, "samples_per_sec");
    if (strstr(line, "\"name\": \"torch-bf16-autocast\"")) out->bf16 = bench_json_number(line, "samples_per_sec");
    if (strstr(line, "\"params\": ")) out->params = (int64_t)bench_json_number(line, "params");
  }
  pclose(p);
}

/* ---- the table ----------------------------------------------------------------- */

static void run_workload(const workload *w, int threads, int batch, int steps, const char *python,
                         const char *script) {
  double sps[MODE_COUNT], us[MODE_COUNT];
  int64_t params = 0;
  double replay_us[MODE_COUNT] = {0};
  for (int m = 0; m < MODE_COUNT; ++m) {
    const double med = bench_model(w, threads, batch, steps, (mode)m, m == 0 ? &params : NULL, 0);
    sps[m] = batch / med;
    us[m] = med * 1e6;
    if (g_graph) replay_us[m] = bench_model(w, threads, batch, steps, (mode)m, NULL, 1) * 1e6;
  }
  torch_result t;
  memset(&t, 0, sizeof t);
  if (python) run_torch(python, script, w, threads, batch, steps, &t);
  printf("%s, batch %d, AdamW: %lld parameters", w->title, batch, (long long)params);
  if (t.params > 0) printf(" (PyTorch twin: %lld%s)", (long long)t.params, t.params == params ? "" : " DIFFERENT");
  printf("\n%-34s %12s %12s %12s %10s\n", "", "samples/s", "us/step", "vs mixp O0", "vs torch");
  for (int m = 0; m < MODE_COUNT; ++m) {
    /* fp32 against torch fp32, the low-precision modes against its bf16 autocast. */
    const double tv = m == MODE_O0 ? t.fp32 : t.bf16;
    char vs[32] = "n/a";
    if (tv > 0) snprintf(vs, sizeof vs, "%.2fx", sps[m] / tv);
    printf("%-34s %12.0f %12.1f %11.2fx %10s\n", k_mode_names[m], sps[m], us[m], sps[m] / sps[0], vs);
    if (g_graph)
      printf("%-34s %12.0f %12.1f %11.2fx %9.2fx eager\n", "  replayed (mixp_graph)", batch / replay_us[m] * 1e6,
             replay_us[m], us[0] / replay_us[m], us[m] / replay_us[m]);
  }
  if (t.fp32 > 0) printf("%-34s %12.0f %12.1f %11.2fx\n", "torch fp32", t.fp32, batch / t.fp32 * 1e6, t.fp32 / sps[0]);
  if (t.bf16 > 0)
    printf("%-34s %12.0f %12.1f %11.2fx\n", "torch bf16 autocast", t.bf16, batch / t.bf16 * 1e6, t.bf16 / sps[0]);
  printf("\n");
  fflush(stdout);
}

static void usage(FILE *f) {
  fprintf(f,
          "usage: mixp-bench [--workload mlp|cnn|resnet18|gpt|gpt256|gemm]... [--threads N] [--steps N] [--batch N]\n"
          "                  [--python PATH | --no-torch] [--torch-script PATH]\n"
          "                  [--only o0|o1-bf16|o2-bf16|o2-f16] [--model-config \"K=V ...\"] [--device cpu]\n"
          "                  [--graph]\n"
          "       mixp-bench --device cuda[:N] ... (GPU workloads; --device cuda --help)\n"
          "       mixp-bench --device cpu --quick ... (the GPU workloads at tiny sizes on the CPU)\n"
          "Measures mixp's training steps under O0/O1/O2 beside identical PyTorch models\n"
          "(bench/torch/cpu_workloads.py, fp32 and bf16 autocast) in the same run.\n"
          "PyTorch is run with --python PATH, else $MIXP_BENCH_PYTHON, else the first\n"
          "python3 on PATH whose torch is 2.x or later (e.g. a venv: pip install torch).\n"
          "--batch and --steps override every workload's defaults; --only runs one mode of\n"
          "one workload without PyTorch (for profilers). --model-config adds keys to every\n"
          "mixp model's configuration, not the PyTorch twins' (e.g. channels_last=0 for cnn\n"
          "and resnet18). --graph also times each mode captured once and replayed (mixp_graph).\n");
}

int main(int argc, char **argv) {
  /* The GPU workloads: on a GPU, or at tiny sizes (--quick) on any device,
   * which is how CI runs their code on the CPU. */
  for (int i = 1; i < argc; ++i)
    if ((i + 1 < argc && !strcmp(argv[i], "--device") && !strncmp(argv[i + 1], "cuda", 4)) ||
        !strcmp(argv[i], "--quick"))
      return bench_gpu_main(argc, argv);
  int threads = 2, steps = 0, batch = 0, use_torch = 1, only = -1, want_gemm = 0, any = 0;
  int want[NUM_WORKLOADS] = {0};
  const char *script = MIXP_BENCH_TORCH_SCRIPT, *python_flag = NULL;
  for (int i = 1; i < argc; ++i) {
    const char *a = argv[i];
    const char *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (!strcmp(a, "--help")) {
      usage(stdout);
      return 0;
    } else if (!strcmp(a, "--graph")) {
      g_graph = 1;
    } else if (!strcmp(a, "--no-torch")) {
      use_torch = 0;
    } else if (v && !strcmp(a, "--threads")) {
      threads = atoi(v), ++i;
    } else if (v && !strcmp(a, "--steps")) {
      steps = atoi(v), ++i;
    } else if (v && !strcmp(a, "--batch")) {
      batch = atoi(v), ++i;
    } else if (v && !strcmp(a, "--workload")) {
      int k = 0;
      while (k < NUM_WORKLOADS && strcmp(v, k_workloads[k].key)) ++k;
      if (k < NUM_WORKLOADS) {
        want[k] = 1;
      } else if (!strcmp(v, "gemm")) {
        want_gemm = 1;
      } else {
        fprintf(stderr, "mixp-bench: --workload takes mlp, cnn, resnet18, gpt, gpt256 or gemm, not '%s'\n", v);
        return 2;
      }
      any = 1;
      ++i;
    } else if (v && !strcmp(a, "--only")) {
      for (int k = 0; k < MODE_COUNT; ++k)
        if (!strcmp(v, k_mode_keys[k])) only = k;
      if (only < 0) {
        fprintf(stderr, "mixp-bench: --only takes o0, o1-bf16, o2-bf16 or o2-f16, not '%s'\n", v);
        return 2;
      }
      ++i;
    } else if (v && !strcmp(a, "--model-config")) {
      if (strlen(v) > 256) {
        fprintf(stderr, "mixp-bench: --model-config is longer than 256 characters\n");
        return 2;
      }
      g_model_config = v, ++i;
    } else if (v && !strcmp(a, "--torch-script")) {
      script = v, ++i;
    } else if (v && !strcmp(a, "--python")) {
      python_flag = v, ++i;
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
  if (threads < 1 || steps < 0 || batch < 0) {
    fprintf(stderr, "mixp-bench: --threads must be >= 1, --steps and --batch >= 1 (0: the workload's default)\n");
    return 2;
  }
  if (!any) {
    want_gemm = 1;
    for (int k = 0; k < NUM_WORKLOADS; ++k) want[k] = 1;
  }
  printf("mixp-bench: %s\nthreads=%d\n\n", mixp_build_info(), threads);

  if (only >= 0) {
    /* One mode of one workload, for profilers: no table, no reference. */
    int k = 0;
    while (k < NUM_WORKLOADS && !want[k]) ++k;
    if (k == NUM_WORKLOADS) k = 0;
    const workload *w = &k_workloads[k];
    const int b = batch ? batch : w->batch;
    const double med = bench_model(w, threads, b, steps ? steps : w->steps, (mode)only, NULL, 0);
    printf("%s %s: %.0f samples/s, %.1f us/step\n", w->key, k_mode_keys[only], b / med, med * 1e6);
    if (g_graph) {
      const double rep = bench_model(w, threads, b, steps ? steps : w->steps, (mode)only, NULL, 1);
      printf("%s %s replayed: %.0f samples/s, %.1f us/step (%.2fx eager)\n", w->key, k_mode_keys[only], b / rep,
             rep * 1e6, med / rep);
    }
    return 0;
  }
  char found[1024];
  const char *python = use_torch ? bench_find_python(python_flag, 2, found, sizeof found) : NULL;
  if (use_torch && !python)
    printf("(PyTorch reference not run: %s has no torch >= 2.0; make a venv with `pip install torch` and pass "
           "--python or MIXP_BENCH_PYTHON)\n\n",
           python_flag ? python_flag : getenv("MIXP_BENCH_PYTHON") ? getenv("MIXP_BENCH_PYTHON") : "no python3 on PATH");
  if (want_gemm) {
    printf("%-34s %12s\n", "gemm 1024^3", "GFLOP/s");
    printf("%-34s %12.1f\n", "mixp f32", bench_gemm(threads, MIXP_F32, 20));
    printf("%-34s %12.1f\n", "mixp bf16", bench_gemm(threads, MIXP_BF16, 20));
    printf("%-34s %12.1f\n\n", "mixp f16", bench_gemm(threads, MIXP_F16, 20));
  }
  for (int k = 0; k < NUM_WORKLOADS; ++k)
    if (want[k])
      run_workload(&k_workloads[k], threads, batch ? batch : k_workloads[k].batch,
                   steps ? steps : k_workloads[k].steps, python, script);
  if (python) bench_print_torch(python);
  return 0;
}
