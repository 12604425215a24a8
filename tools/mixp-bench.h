/* What the parts of mixp-bench share: mixp-bench.c (the CPU workloads and
 * the command line), mixp-bench-gpu.c (the --device cuda workloads and their
 * table), mixp-bench-models.c (the --device cuda whole-model workloads),
 * mixp-bench-train.c (a zoo model's training step, timed by both) and
 * mixp-bench-torch.c (the PyTorch references' interpreter, used by both).
 * Calls go one way: mixp-bench.c -> mixp-bench-gpu.c -> mixp-bench-models.c,
 * and each of them down to mixp-bench-train.c and mixp-bench-torch.c. */
#ifndef MIXP_BENCH_H
#define MIXP_BENCH_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "mixp/mixp.h"

/* A benchmark has no way to go on after a failed call: say which and stop. */
#define CHECK(call)                                                              \
  do {                                                                           \
    if ((call) != MIXP_OK) {                                                     \
      fprintf(stderr, "mixp-bench: %s failed: %s\n", #call, mixp_last_error()); \
      exit(1);                                                                   \
    }                                                                            \
  } while (0)

/* Monotonic wall-clock seconds. */
static inline double bench_now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* ---- the PyTorch references' interpreter (mixp-bench-torch.c) ------------- */

/* The interpreter that runs the PyTorch references: `given` (--python) if
 * set, else $MIXP_BENCH_PYTHON, else the first python3 on PATH whose torch's
 * major version is at least min_major; NULL when the chosen one has no such
 * torch. Timed comparisons ask for 2 (Debian's 1.13 computes fp32 on the
 * CPU through OpenBLAS and would flatter mixp); the CPU smoke run of the GPU
 * workloads accepts 1, whose gaps the script bridges and names. May return
 * buf (size bytes). */
const char *bench_find_python(const char *given, int min_major, char *buf, size_t size);

/* Prints "PyTorch <version> from <path>" as `python` reports it. */
void bench_print_torch(const char *python);

/* The number after `"key": ` in a JSON line as Python's json.dumps writes
 * it; 0 when the key is missing or its value is not a number (null). */
static inline double bench_json_number(const char *line, const char *key) {
  char pat[64];
  snprintf(pat, sizeof pat, "\"%s\": ", key);
  const char *p = strstr(line, pat);
  return p ? atof(p + strlen(pat)) : 0.0;
}

/* The string value of `"key": "..."` in a JSON line (escapes are kept as
 * written); 0 when the key is missing. */
static inline int bench_json_string(const char *line, const char *key, char *out, size_t size) {
  char pat[64];
  snprintf(pat, sizeof pat, "\"%s\": \"", key);
  const char *p = strstr(line, pat);
  if (!p || size == 0) return 0;
  p += strlen(pat);
  size_t n = 0;
  while (p[n] && !(p[n] == '"' && (n == 0 || p[n - 1] != '\\'))) ++n;
  if (n >= size) n = size - 1;
  memcpy(out, p, n);
  out[n] = 0;
  return 1;
}

/* ---- a zoo model's training step (mixp-bench-train.c) ----------------------- */

/* fp32 (level O0), or autocast at O1 or O2 in dtype (F16 or BF16). O2 also
 * decorates the model (half parameters, fp32 master weights); F16 adds a
 * dynamic GradScaler. */
typedef struct bench_precision {
  mixp_amp_level level;
  mixp_dtype dtype;
} bench_precision;

/* "fp32", "O1 bf16", ... for tables; "fp32", "o1-bf16", ... for names. */
const char *bench_precision_name(bench_precision p);
const char *bench_precision_key(bench_precision p);

/* A model with AdamW (default hyper-parameters) over its parameters, and
 * what its precision needs. */
typedef struct bench_trainer {
  mixp_session *session; /* borrowed */
  mixp_module *model;
  mixp_tensor **params;
  int num_params;
  mixp_optimizer *opt;
  mixp_grad_scaler *scaler; /* f16 only */
  mixp_autocast_options autocast;
  bench_precision precision;
  int64_t vocab;       /* > 0: [B, T, vocab] logits, one target per token */
  int64_t param_count; /* elements over all parameters */
} bench_trainer;

/* Builds mixp_model_create(s, spec) and the rest; on failure nothing is left
 * to free and the status says why (mixp_last_error() has the message). */
mixp_status bench_trainer_init(bench_trainer *t, mixp_session *s, const char *spec, int64_t vocab,
                               bench_precision p);
/* One training step on inputs x and targets y (no host sync). */
mixp_status bench_trainer_step(bench_trainer *t, const mixp_tensor *x, const mixp_tensor *y);
void bench_trainer_free(bench_trainer *t);

/* Elements over all of a model's parameters; -1 on failure. */
int64_t bench_count_parameters(const mixp_module *model);

/* One batch on the session's device: F32 samples of shape [batch, item...]
 * (random), or for vocab > 0 I64 tokens [batch, item[0]]; I64 targets, one
 * per sample or per token. */
mixp_status bench_make_batch(mixp_session *s, const int64_t *item, int item_ndim, int64_t vocab, int batch,
                             mixp_tensor **x, mixp_tensor **y);

/* ---- the --device cuda side ------------------------------------------------- */

/* The --device cuda[:N] workloads (mixp-bench-gpu.c); also --quick on any
 * device. */
int bench_gpu_main(int argc, char **argv);

/* The whole-model workloads (mixp-bench-models.c), selected by name; see
 * bench_models_usage(). */
typedef struct bench_models_options {
  const char *device;       /* the sessions' device */
  int quick;                /* tiny sizes (the CPU smoke test) */
  const char *python;       /* the references' interpreter, NULL: none */
  const char *script;       /* bench/torch/gpu_workloads.py */
  int steps;                /* > 0: exactly this many timed steps */
  double step_seconds;      /* else: timed steps within about this time (capped by the model's count) */
  int compile_timeout;      /* seconds torch.compile may take; 0: not tried */
  const char *profile_dir;  /* non-NULL: profile one step per row instead of timing */
  unsigned mode_mask;       /* bit 0 fp32, 1 O1, 2 O2; 0: all */
  int layout;               /* -1: both; 0 NCHW; 1 channels_last (convolutional models) */
  int batch;                /* > 0: instead of the models' batches */
} bench_models_options;

/* Index of a model workload name, or -1; the number of them. */
int bench_models_find(const char *name);
int bench_models_count(void);
/* Runs the selected models (want[i] for model i) and prints their tables;
 * returns the number of rows that failed (a mixp error other than running
 * out of memory, a twin whose parameter count differs or whose script
 * failed). */
int bench_models_run(const bench_models_options *o, const int *want);

#endif
