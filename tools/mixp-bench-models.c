/* mixp-bench --device cuda: whole models trained through the public API,
 * each beside its PyTorch twin (bench/torch/gpu_workloads.py --model) run
 * in the same invocation on the same device.
 *
 *   gpt2                GPT-2 124M (the zoo's gpt: 12 layers, 12 heads, 768
 *                       wide, vocab 50257, tied wte), T=1024, batch 8 (fp32,
 *                       O1 bf16, O2 bf16) and 16 (O1, O2); tokens/s and MFU
 *   resnet50            ResNet-50 v1.5, 3x224x224, batch 256, fp32 / O1 f16
 *                       / O2 f16 (GradScaler), NCHW and channels_last
 *   mobilenet_v3_large  MobileNetV3-Large, 224, batch 256, the same rows
 *   resnet18            ResNet-18 on 3x32x32, batch 128: launch-bound
 *
 * The data is one synthetic batch made on the device before the timing, so
 * no host upload happens in a timed step. A row is warm-up steps, then
 * timed steps between two device syncs (mean ms per step); with no --steps
 * the count is what fits in --step-seconds after the last warm-up step
 * (at least 3, at most the model's count), on both sides alike. Each mixp
 * row has a session of its own, so its peak memory is its own. A row that
 * fails is reported and the run goes on; running out of memory is a
 * result, not a failure. --quick makes every model tiny (the same code
 * path, the CPU smoke test of CI). */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "mixp/mixp.h"
#include "mixp-bench.h"

/* The MFU denominator: H100 SXM dense bf16 (llm.c's figure, and the one
 * the GEMM rows use). */
#define PEAK_TFLOPS 989.5

enum { LAYOUT_NONE = -1, LAYOUT_NCHW = 0, LAYOUT_CL = 1 };
enum { MODE_FP32 = 1u, MODE_O1 = 2u, MODE_O2 = 4u };

typedef struct model_def {
  const char *key;            /* --workload; the twin's --model */
  const char *title;          /* what the model is */
  const char *spec, *tiny;    /* mixp_model_create at full size and with --quick */
  int64_t item[3], tiny_item[3];
  int item_ndim;
  int tokens;                 /* token model: the spec's vocab, one target per token */
  mixp_dtype low;             /* the half type of its O1/O2 rows */
  int layouts;                /* 0: no layout key; 1: NCHW only; 3: NCHW and channels_last */
  int batches[2], tiny_batches[2]; /* [1] (0: none) runs only the low precisions */
  int warmup, steps;          /* warm-up steps; the most timed steps */
  const char *unit;
} model_def;

static const model_def k_models[] = {
    {"gpt2", "GPT-2 124M: 12 layers, 12 heads, 768 wide, vocab 50257, tied wte, T=1024",
     "gpt n_layer=12 n_head=12 n_embd=768 vocab=50257 block_size=1024",
     "gpt n_layer=2 n_head=2 n_embd=64 vocab=512 block_size=64", {1024}, {64}, 1, 1, MIXP_BF16, 0, {8, 16},
     {2, 4}, 3, 10, "tokens/s"},
    {"resnet50", "ResNet-50 v1.5, 3x224x224, 1000 classes", "resnet50 classes=1000",
     "resnet50 width=8 classes=10", {3, 224, 224}, {3, 32, 32}, 3, 0, MIXP_F16, 3, {256, 0}, {2, 0}, 3, 10,
     "images/s"},
    {"mobilenet_v3_large", "MobileNetV3-Large, 3x224x224, 1000 classes", "mobilenet_v3_large classes=1000",
     "mobilenet_v3_large width_mult=0.25 classes=10", {3, 224, 224}, {3, 32, 32}, 3, 0, MIXP_F16, 3,
     {256, 0}, {2, 0}, 3, 10, "images/s"},
    {"resnet18", "ResNet-18, 3x32x32, 10 classes (launch-bound)", "resnet18 classes=10",
     "resnet18 width=8 classes=10", {3, 32, 32}, {3, 32, 32}, 3, 0, MIXP_F16, 3, {128, 0}, {4, 0}, 3, 30,
     "images/s"},
};
#define NUM_MODELS ((int)(sizeof k_models / sizeof k_models[0]))

int bench_models_count(void) { return NUM_MODELS; }
int bench_models_find(const char *name) {
  for (int i = 0; i < NUM_MODELS; ++i)
    if (!strcmp(name, k_models[i].key)) return i;
  return -1;
}

/* An integer key of a spec ("n_layer=12"); fallback when it is absent. */
static int64_t spec_int(const char *spec, const char *key, int64_t fallback) {
  char pat[40];
  snprintf(pat, sizeof pat, " %s=", key);
  const char *p = strstr(spec, pat);
  return p ? atoll(p + strlen(pat)) : fallback;
}

/* ---- one table's rows -------------------------------------------------------------- */

typedef struct row {
  int torch;         /* 0: mixp, 1: PyTorch */
  char what[64];     /* the precision, as the table says it */
  int low;           /* 0: fp32; 1: O1/O2 or autocast (ratios pair fp32 with fp32, low with low) */
  int compiled;      /* PyTorch's torch.compile row */
  int layout;
  int steps;
  double ms;         /* 0: not measured */
  double peak_mib;   /* < 0: not known */
  double syncs;      /* host syncs per step; < 0: not counted */
  char note[512];    /* why a row has no numbers, or what it ran instead */
  int failed;
} row;

enum { MAX_ROWS = 24 };
typedef struct table {
  const model_def *m;
  int batch;
  const char *spec;
  int64_t item[3];
  int64_t vocab;
  int64_t mixp_params, torch_params; /* 0: not known */
  char torch_version[48], torch_note[512];
  row rows[MAX_ROWS];
  int nrows;
  int failures;
} table;

static row *new_row(table *t, int torch, int low, int layout) {
  if (t->nrows == MAX_ROWS) return NULL;
  row *r = &t->rows[t->nrows++];
  memset(r, 0, sizeof *r);
  r->torch = torch;
  r->low = low;
  r->layout = layout;
  r->peak_mib = r->syncs = -1;
  return r;
}

/* ---- the mixp side ------------------------------------------------------------------ */

/* Waits for everything queued on the session (reading a value back does). */
static mixp_status sync_device(mixp_session *s) {
  const int64_t one = 1;
  mixp_tensor *t = NULL;
  double v;
  mixp_status st = mixp_tensor_zeros(s, MIXP_F32, &one, 1, &t);
  if (st == MIXP_OK) st = mixp_tensor_item(t, &v);
  mixp_tensor_release(t);
  return st;
}

/* Warm-up steps, the last of which is timed alone to size the timed run. */
static int warmup(const bench_models_options *o, const model_def *m) { return o->quick ? 2 : m->warmup; }

/* Timed steps for a measured step of dt seconds. */
static int timed_steps(const bench_models_options *o, const model_def *m, double dt) {
  if (o->steps > 0) return o->steps;
  const int most = o->quick ? 2 : m->steps, least = most < 3 ? most : 3;
  const double fit = dt > 0 ? ceil(o->step_seconds / dt) : most;
  return fit < least ? least : fit > most ? most : (int)fit;
}

static void row_error(row *r, mixp_status st, const char *what) {
  if (st == MIXP_ERR_OUT_OF_MEMORY) {
    snprintf(r->note, sizeof r->note, "out of memory (%s): %s", what, mixp_last_error());
  } else if (strstr(mixp_last_error(), "unknown key 'channels_last'")) {
    snprintf(r->note, sizeof r->note, "n/a: the mixp model has no channels_last key");
  } else {
    snprintf(r->note, sizeof r->note, "FAILED (%s): %s", what, mixp_last_error());
    r->failed = 1;
  }
}

/* One profiled step: the top-20 ops printed, the trace written. */
static mixp_status profile_step(const bench_models_options *o, table *t, row *r, bench_trainer *tr,
                                const mixp_tensor *x, const mixp_tensor *y) {
  /* <model>-b<batch>-<precision>[-nchw|-cl].trace.json */
  char name[160], path[1200];
  snprintf(name, sizeof name, "%s-b%d-%s%s", t->m->key, t->batch, bench_precision_key(tr->precision),
           r->layout == LAYOUT_CL ? "-cl" : r->layout == LAYOUT_NCHW ? "-nchw" : "");
  snprintf(path, sizeof path, "%s/%s.trace.json", o->profile_dir, name);
  mixp_status st = mixp_profile_begin(tr->session);
  if (st != MIXP_OK) return st;
  const mixp_status step = bench_trainer_step(tr, x, y);
  mixp_profile *p = NULL;
  st = mixp_profile_end(tr->session, &p);
  if (step != MIXP_OK) {
    mixp_profile_destroy(p);
    return step;
  }
  if (st != MIXP_OK) return st;
  st = mixp_profile_write_trace(p, path);
  printf("\nprofile of one %s step, batch %d (%s, %s): %lld op calls; trace %s\n```\n%s```\n", t->m->key,
         t->batch, r->what, r->layout == LAYOUT_CL ? "channels_last" : r->layout == LAYOUT_NCHW ? "NCHW" : "-",
         (long long)mixp_profile_length(p), st == MIXP_OK ? path : "not written", mixp_profile_report(p, 20));
  if (st != MIXP_OK) printf("(trace not written: %s)\n", mixp_last_error());
  snprintf(r->note, sizeof r->note, "profiled: %.480s", st == MIXP_OK ? path : "trace not written");
  mixp_profile_destroy(p);
  fflush(stdout);
  return MIXP_OK;
}

/* Warm-up, then either the timed steps or one profiled step. */
static mixp_status measure(const bench_models_options *o, table *t, row *r, bench_trainer *tr,
                           const mixp_tensor *x, const mixp_tensor *y, const char **what) {
  mixp_session *s = tr->session;
  mixp_status st = MIXP_OK;
  *what = "warm-up step";
  for (int i = 0; i + 1 < warmup(o, t->m) && st == MIXP_OK; ++i) st = bench_trainer_step(tr, x, y);
  /* The last warm-up step alone, to size the timed run. */
  if (st == MIXP_OK) st = sync_device(s);
  const double w0 = bench_now();
  if (st == MIXP_OK) st = bench_trainer_step(tr, x, y);
  if (st == MIXP_OK) st = sync_device(s);
  if (st != MIXP_OK) return st;
  if (o->profile_dir) {
    *what = "profiled step";
    return profile_step(o, t, r, tr, x, y);
  }
  const int n = timed_steps(o, t->m, bench_now() - w0);
  *what = "timed step";
  uint64_t syncs0 = 0, syncs1 = 0;
  if ((st = mixp_memory_stats_reset_peak(s)) != MIXP_OK) return st;
  if ((st = mixp_session_host_syncs(s, &syncs0)) != MIXP_OK) return st;
  const double t0 = bench_now();
  for (int i = 0; i < n && st == MIXP_OK; ++i) st = bench_trainer_step(tr, x, y);
  if (st == MIXP_OK) st = sync_device(s);
  const double elapsed = bench_now() - t0;
  if (st != MIXP_OK) return st;
  if ((st = mixp_session_host_syncs(s, &syncs1)) != MIXP_OK) return st;
  mixp_memory_stats ms;
  memset(&ms, 0, sizeof ms);
  ms.struct_size = sizeof ms;
  if ((st = mixp_memory_stats_get(s, &ms)) != MIXP_OK) return st;
  r->steps = n;
  r->ms = elapsed / n * 1e3;
  /* 0 from a library that does not fill the field yet: unknown, not 0. */
  r->peak_mib = ms.device_peak_bytes > 0 ? (double)ms.device_peak_bytes / (1024.0 * 1024.0) : -1;
  /* The closing sync_device reads one value back. */
  r->syncs = (double)(syncs1 - syncs0 - (syncs1 > syncs0 ? 1 : 0)) / n;
  return MIXP_OK;
}

static void run_mixp_row(const bench_models_options *o, table *t, bench_precision p, int layout) {
  row *r = new_row(t, 0, p.level != MIXP_AMP_O0, layout);
  if (!r) return;
  snprintf(r->what, sizeof r->what, "%s%s", p.level == MIXP_AMP_O0 ? "fp32 (O0)" : bench_precision_name(p),
           p.level != MIXP_AMP_O0 && p.dtype == MIXP_F16 ? " + GradScaler" : "");
  char spec[400];
  snprintf(spec, sizeof spec, "%s", t->spec);
  if (layout != LAYOUT_NONE)
    snprintf(spec + strlen(spec), sizeof spec - strlen(spec), " channels_last=%d", layout);
  mixp_session_options so;
  mixp_session_options_init(&so);
  so.device = o->device;
  so.seed = 1;
  so.allow_tf32 = 0; /* fp32 is fp32, as PyTorch's side is told */
  mixp_session *s = NULL;
  mixp_status st = mixp_session_create(&so, &s);
  if (st != MIXP_OK) {
    row_error(r, st, "session");
    return;
  }
  if (mixp_session_tf32(s)) snprintf(r->what + strlen(r->what), sizeof r->what - strlen(r->what), " (TF32 on)");
  bench_trainer tr;
  st = bench_trainer_init(&tr, s, spec, t->vocab, p);
  /* A model without the key (MobileNetV3) is NCHW throughout: its NCHW row
   * is the model as it is. */
  if (st != MIXP_OK && layout == LAYOUT_NCHW && strstr(mixp_last_error(), "unknown key 'channels_last'"))
    st = bench_trainer_init(&tr, s, t->spec, t->vocab, p);
  if (st != MIXP_OK) {
    row_error(r, st, "model");
  } else {
    if (t->mixp_params == 0) t->mixp_params = tr.param_count;
    mixp_tensor *x = NULL, *y = NULL;
    const char *what = "batch";
    st = bench_make_batch(s, t->item, t->m->item_ndim, t->vocab, t->batch, &x, &y);
    if (st == MIXP_OK) st = measure(o, t, r, &tr, x, y, &what);
    if (st != MIXP_OK) row_error(r, st, what);
    mixp_tensor_release(x);
    mixp_tensor_release(y);
    bench_trainer_free(&tr);
  }
  mixp_session_destroy(s);
  if (r->failed) t->failures++;
}

/* ---- the PyTorch side -------------------------------------------------------------- */

static void run_torch_twin(const bench_models_options *o, table *t, unsigned modes, const char *layouts,
                           int compile) {
  char rows[32] = "", cmd[2048];
  if (modes & MODE_FP32) strcat(rows, "fp32,");
  if (modes & (MODE_O1 | MODE_O2)) strcat(rows, compile ? "amp,compile," : "amp,");
  if (!*rows) return;
  rows[strlen(rows) - 1] = 0;
  char item[64];
  if (t->m->item_ndim == 3)
    snprintf(item, sizeof item, "%lldx%lldx%lld", (long long)t->item[0], (long long)t->item[1],
             (long long)t->item[2]);
  else
    snprintf(item, sizeof item, "%lld", (long long)t->item[0]);
  char steps[64];
  if (o->steps > 0) snprintf(steps, sizeof steps, "--steps %d", o->steps);
  else snprintf(steps, sizeof steps, "--steps %d --step-seconds %g", o->quick ? 2 : t->m->steps, o->step_seconds);
  snprintf(cmd, sizeof cmd,
           "'%s' '%s' --device '%s' --model %s --spec '%s' --item %s --batch %d --amp-dtype %s "
           "--channels-last %s --rows %s --warmup %d %s --compile-timeout %d",
           o->python, o->script, o->device, t->m->key, t->spec, item, t->batch,
           t->m->low == MIXP_F16 ? "f16" : "bf16", layouts, rows, warmup(o, t->m), steps, o->compile_timeout);
  fflush(stdout);
  FILE *p = popen(cmd, "r");
  if (!p) {
    snprintf(t->torch_note, sizeof t->torch_note, "FAILED: could not run %s", o->python);
    t->failures++;
    return;
  }
  char line[2048];
  int got_params = 0;
  while (fgets(line, sizeof line, p)) {
    char kind[32] = "", buf[400];
    if (bench_json_string(line, "model", buf, sizeof buf) && strstr(line, "\"params\": ")) {
      got_params = 1;
      t->torch_params = (int64_t)bench_json_number(line, "params");
      bench_json_string(line, "torch", t->torch_version, sizeof t->torch_version);
      bench_json_string(line, "note", t->torch_note, sizeof t->torch_note);
      continue;
    }
    if (!bench_json_string(line, "row", kind, sizeof kind)) continue;
    const int low = strcmp(kind, "fp32") != 0;
    row *r = new_row(t, 1, low, (int)bench_json_number(line, "channels_last"));
    if (!r) continue;
    r->compiled = !strcmp(kind, "compile");
    char what[64] = "";
    bench_json_string(line, "what", what, sizeof what);
    snprintf(r->what, sizeof r->what, "%s", what);
    r->steps = (int)bench_json_number(line, "steps");
    r->ms = bench_json_number(line, "ms_per_step");
    const double peak = bench_json_number(line, "peak_bytes");
    r->peak_mib = peak > 0 ? peak / (1024.0 * 1024.0) : -1;
    if (bench_json_string(line, "error", buf, sizeof buf)) {
      snprintf(r->note, sizeof r->note, "FAILED: %s", buf);
      r->failed = 1;
      t->failures++;
    } else if (bench_json_string(line, "oom", buf, sizeof buf)) {
      snprintf(r->note, sizeof r->note, "out of memory: %s", buf);
    } else if (bench_json_string(line, "skipped", buf, sizeof buf)) {
      snprintf(r->note, sizeof r->note, "skipped: %s", buf);
    } else if (bench_json_string(line, "note", buf, sizeof buf)) {
      snprintf(r->note, sizeof r->note, "%s", buf);
    }
  }
  const int rc = pclose(p);
  if (!got_params) {
    snprintf(t->torch_note, sizeof t->torch_note,
             "FAILED: the PyTorch twin printed no parameter count (exit status %d; its stderr is above)",
             rc != -1 && WIFEXITED(rc) ? WEXITSTATUS(rc) : rc);
    t->failures++;
  }
}

/* ---- the table ------------------------------------------------------------------------ */

static const char *layout_name(int layout) {
  return layout == LAYOUT_CL ? "channels_last" : layout == LAYOUT_NCHW ? "NCHW" : "-";
}

/* Commas every three digits, for parameter counts. */
static const char *grouped(int64_t v, char *buf, size_t size) {
  char raw[32];
  snprintf(raw, sizeof raw, "%lld", (long long)v);
  const size_t n = strlen(raw);
  size_t o = 0;
  for (size_t i = 0; i < n && o + 2 < size; ++i) {
    buf[o++] = raw[i];
    if (raw[i] != '-' && (n - i - 1) % 3 == 0 && i + 1 < n) buf[o++] = ',';
  }
  buf[o] = 0;
  return buf;
}

static const row *find_torch(const table *t, int low, int layout, int compiled) {
  for (int i = 0; i < t->nrows; ++i) {
    const row *r = &t->rows[i];
    if (r->torch && r->low == low && r->layout == layout && r->compiled == compiled && r->ms > 0) return r;
  }
  return NULL;
}

/* Appends to a line of the table. */
static void cat(char *line, size_t size, const char *fmt, const char *v) {
  const size_t n = strlen(line);
  if (n + 1 < size) snprintf(line + n, size - n, fmt, v);
}

static void print_table(const bench_models_options *o, table *t) {
  const model_def *m = t->m;
  char a[40], b[40];
  printf("\n### %s, batch %d: %s\n\n`%s`", m->key, t->batch, o->quick ? "tiny (--quick)" : m->title, t->spec);
  if (m->tokens) printf(", T=%lld", (long long)t->item[0]);
  else printf(", %lldx%lldx%lld", (long long)t->item[0], (long long)t->item[1], (long long)t->item[2]);
  printf(". Parameters: mixp %s", t->mixp_params > 0 ? grouped(t->mixp_params, a, sizeof a) : "n/a");
  const int differ = t->mixp_params > 0 && t->torch_params > 0 && t->mixp_params != t->torch_params;
  if (t->torch_params > 0)
    printf(", PyTorch twin %s (%s)", grouped(t->torch_params, b, sizeof b), differ ? "DIFFERENT" : "equal");
  if (t->torch_version[0]) printf("; PyTorch %s", t->torch_version);
  printf(".\n");
  if (differ) {
    printf("FAILED: the parameter counts differ, so the twin is not the same model: its rows are no "
           "comparison.\n");
    t->failures++;
  }
  if (t->torch_note[0]) printf("PyTorch: %s\n", t->torch_note);
  double flop_per_token = 0;
  if (m->tokens && t->mixp_params > 0) {
    /* llm.c's count: 6N for the weights' products forward and backward,
     * 6*L*T*C for causal attention's scores and values (counted once). */
    const double l = (double)spec_int(t->spec, "n_layer", 0), c = (double)spec_int(t->spec, "n_embd", 0);
    flop_per_token = 6.0 * (double)t->mixp_params + 6.0 * l * (double)t->item[0] * c;
  }
  const int mfu_col = flop_per_token > 0, compile_col = m->tokens;
  char line[1024] = "";
  cat(line, sizeof line, "\n| side | precision | layout | %s | ms/step | steps |", m->unit);
  if (mfu_col) cat(line, sizeof line, "%s", " MFU |");
  cat(line, sizeof line, "%s", " peak MiB | host syncs/step | vs torch eager |");
  if (compile_col) cat(line, sizeof line, "%s", " vs torch compile |");
  cat(line, sizeof line, "%s", " note |\n|---|---|---|---|---|---|---|---|---|---|");
  if (mfu_col) cat(line, sizeof line, "%s", "---|");
  if (compile_col) cat(line, sizeof line, "%s", "---|");
  puts(line);
  const double per_step = m->tokens ? (double)t->batch * (double)t->item[0] : (double)t->batch;
  for (int i = 0; i < t->nrows; ++i) {
    const row *r = &t->rows[i];
    char v[64];
    line[0] = 0;
    cat(line, sizeof line, "| %s |", r->torch ? "torch" : "mixp");
    cat(line, sizeof line, " %s |", r->what);
    cat(line, sizeof line, " %s |", layout_name(r->layout));
    const double per_sec = r->ms > 0 ? per_step / (r->ms * 1e-3) : 0;
#define CELL(...) (snprintf(v, sizeof v, __VA_ARGS__), cat(line, sizeof line, " %s |", v))
    if (r->ms > 0) {
      CELL("%.0f", per_sec);
      CELL("%.2f", r->ms);
      CELL("%d", r->steps);
      if (mfu_col) CELL("%.1f%%", 100.0 * per_sec * flop_per_token / (PEAK_TFLOPS * 1e12));
      if (r->peak_mib >= 0) CELL("%.0f", r->peak_mib);
      else CELL("n/a");
      if (r->syncs >= 0) CELL("%.2g", r->syncs);
      else CELL("-");
      /* > 1: mixp is faster. fp32 against fp32, O1/O2 against autocast, same layout. */
      const row *e = r->torch || differ ? NULL : find_torch(t, r->low, r->layout, 0);
      const row *c = r->torch || differ ? NULL : find_torch(t, r->low, r->layout, 1);
      if (e) CELL("%.2fx", e->ms / r->ms);
      else CELL("%s", "");
      if (compile_col) {
        if (c) CELL("%.2fx", c->ms / r->ms);
        else CELL("%s", "");
      }
    } else {
      for (int k = 0; k < 6 + mfu_col + compile_col; ++k) CELL("%s", "");
    }
#undef CELL
    cat(line, sizeof line, " %s |", r->note);
    puts(line);
  }
  fflush(stdout);
}

/* ---- the run -------------------------------------------------------------------------- */

static void run_table(const bench_models_options *o, const model_def *m, int batch, int first, table *t) {
  memset(t, 0, sizeof *t);
  t->m = m;
  t->batch = batch;
  t->spec = o->quick ? m->tiny : m->spec;
  for (int d = 0; d < 3; ++d) t->item[d] = o->quick ? m->tiny_item[d] : m->item[d];
  t->vocab = m->tokens ? spec_int(t->spec, "vocab", 0) : 0;
  unsigned modes = o->mode_mask ? o->mode_mask : (MODE_FP32 | MODE_O1 | MODE_O2);
  /* A second batch is a throughput point for the half precisions only. */
  if (!first) modes &= ~MODE_FP32;
  int layouts[2], nl = 0;
  if (m->layouts == 0) layouts[nl++] = LAYOUT_NONE;
  for (int l = 0; l < 2; ++l)
    if ((m->layouts >> l & 1) && (o->layout < 0 || o->layout == l)) layouts[nl++] = l;
  const bench_precision precs[3] = {{MIXP_AMP_O0, MIXP_F32}, {MIXP_AMP_O1, m->low}, {MIXP_AMP_O2, m->low}};
  for (int li = 0; li < nl; ++li)
    for (int k = 0; k < 3; ++k)
      if (modes >> k & 1) run_mixp_row(o, t, precs[k], layouts[li]);
  if (o->python && !o->profile_dir && nl > 0) {
    char ls[16] = "";
    for (int li = 0; li < nl; ++li)
      snprintf(ls + strlen(ls), sizeof ls - strlen(ls), "%s%d", li ? "," : "", layouts[li]);
    /* torch.compile once per model, at its first batch (another batch
     * would compile again). */
    run_torch_twin(o, t, modes, ls, m->tokens && first && o->compile_timeout > 0);
  }
  print_table(o, t);
}

int bench_models_run(const bench_models_options *o, const int *want) {
  if (o->profile_dir && mkdir(o->profile_dir, 0777) != 0 && errno != EEXIST) {
    fprintf(stderr, "mixp-bench: cannot make the profile folder '%s': %s\n", o->profile_dir, strerror(errno));
    return 1;
  }
  printf("\n## Whole models (%s%s)\n\n", o->device, o->quick ? ", --quick: tiny models" : "");
  if (o->profile_dir) {
    printf("One profiled step per row after its warm-up (mixp_profile_report, top 20 ops by device time); "
           "traces in %s.\n", o->profile_dir);
  } else {
    printf("Both sides train the same model on one synthetic batch already on the device (AdamW, "
           "cross-entropy): warm-up steps, then timed steps between two device syncs (mean ms/step). "
           "TF32 off on both sides. mixp: O1 = autocast, O2 = decorate (half weights, fp32 masters), "
           "GradScaler with f16. PyTorch: eager, AdamW(fused=True), autocast (+ GradScaler with f16), "
           "cudnn.benchmark=True, SDPA(is_causal=True) in GPT");
    if (o->compile_timeout > 0)
      printf("; torch.compile of the same model and loss where compile, warm-up and timed steps take at most "
             "%d s", o->compile_timeout);
    printf(". MFU: model FLOPs per token 6N + 6*L*T*C on %.1f TFLOP/s (H100 SXM dense bf16). Peak MiB: mixp's "
           "device_peak_bytes (tensors, workspaces, kernel scratch), PyTorch's max_memory_allocated, both "
           "reset after the warm-up. Ratios > 1: mixp faster.\n",
           PEAK_TFLOPS);
    if (!o->python) printf("(PyTorch twins not run)\n");
  }
  int failures = 0;
  for (int i = 0; i < NUM_MODELS; ++i) {
    if (!want[i]) continue;
    const model_def *m = &k_models[i];
    const int *batches = o->quick ? m->tiny_batches : m->batches;
    /* A profile is of each model once, at its first batch. */
    const int nb = o->batch > 0 || batches[1] == 0 || o->profile_dir ? 1 : 2;
    for (int b = 0; b < nb; ++b) {
      table t;
      run_table(o, m, o->batch > 0 ? o->batch : batches[b], b == 0, &t);
      failures += t.failures;
    }
  }
  return failures;
}
