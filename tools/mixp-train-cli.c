/* mixp-train's command line: the flag table, its parser and the usage text,
 * and the tool's two ways to stop (bad usage: exit 2; a failed mixp call:
 * exit 1). Every flag is one row of kFlags: its name, how its value is read
 * and where it is stored in `args`. */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mixp-train.h"

/* ---- errors ------------------------------------------------------------- */

int g_train_rank = -1;

/* The library's message names the function that failed and says what was
 * wrong with which argument; `what` adds what the tool was doing, and under
 * --dist the rank says which process failed. */
void die_mixp(const char *what) {
  char who[48] = "mixp-train";
  if (g_train_rank >= 0) snprintf(who, sizeof who, "mixp-train (rank %d)", g_train_rank);
  if (what && *what)
    fprintf(stderr, "%s: %s: %s\n", who, what, mixp_last_error());
  else
    fprintf(stderr, "%s: %s\n", who, mixp_last_error());
  exit(1);
}

void usage(FILE *f) {
  fprintf(f,
          "usage: mixp-train [options]\n"
          "Trains a model with mixp and reports test accuracy (held-out loss for gpt).\n"
          "\n"
          "  --model NAME            mlp (default), cnn, resnet18, resnet34, resnet50,\n"
          "                          mobilenet_v3_small, mobilenet_v3_large or gpt\n"
          "  --model-config \"K=V ...\" zoo model settings (see mixp_model_create), e.g.\n"
          "                          \"width=16\" or \"n_layer=4 n_embd=128\"; in_channels, classes,\n"
          "                          image_size (cnn), vocab and block_size (gpt) come from the data\n"
          "  --hidden 256,128        hidden layer widths of the MLP\n"
          "  --data NAME             fashion-mnist (default), synthetic (1x28x28),\n"
          "                          synthetic-images:CxHxW or text:PATH (gpt; any file, byte level)\n"
          "  --data-dir DIR          Fashion-MNIST directory (default /usr/share/datasets/fashion-mnist)\n"
          "  --block-size N          tokens per text sample (default 64)\n"
          "  --checkpoint-activations  recompute activations in backward instead of keeping them\n"
          "                          (one checkpoint region per block: config key checkpoint=1)\n"
          "  --channels-last         NHWC activations inside a conv model (config key channels_last=1;\n"
          "                          the default on the CPU for cnn and resnet)\n"
          "  --epochs N              training epochs (default 10)\n"
          "  --batch N               mini-batch size (default 128)\n"
          "  --optimizer NAME        adamw (default) or sgd (momentum 0.9)\n"
          "  --lr X                  learning rate (default 1e-3 for adamw, 0.05 for sgd)\n"
          "  --weight-decay X        weight decay (default 0.01 for adamw, 0 for sgd)\n"
          "  --seed N                seed of initialisation, shuffling and synthetic data (default 0)\n"
          "  --device S              cpu (default), cuda, cuda:N or auto\n"
          "  --threads N             CPU threads, 0 = all cores (default 0)\n"
          "  --limit-train N         train on at most N samples per epoch (synthetic-images: generate N)\n"
          "  --limit-test N          evaluate on at most N test samples (synthetic-images: generate N)\n"
          "\n"
          "Mixed precision:\n"
          "  --amp O0|O1|O2|OD       O0 fp32 (default); O1 autocast op lists; O2 half parameters with\n"
          "                          fp32 master weights (mixp_amp_decorate) and autocast O2; OD only\n"
          "                          GEMM-like ops in half precision, everything else fp32\n"
          "  --amp-dtype f16|bf16    low-precision type (default bf16: on a CPU never slower than f16,\n"
          "                          and it needs no loss scaling)\n"
          "  --loss-scale MODE       dynamic, static:N or off (default: dynamic for f16, off for bf16)\n"
          "  --init-scale X          initial dynamic loss scale (default 65536)\n"
          "  --clip-norm X           clip gradients to global norm X after unscaling (default off)\n"
          "  --label-smoothing X     cross-entropy label smoothing in [0, 1] (PyTorch's; default 0)\n"
          "  --op-stats              print which op ran in which dtype during the first step\n"
          "  --profile FILE          profile the third batch's step (the first two warm up): print\n"
          "                          its 20 most expensive ops and write its Chrome trace to FILE\n"
          "                          (open in chrome://tracing or ui.perfetto.dev)\n"
          "  --explain-overflow      on a step the loss scaler skips, print the parameters whose\n"
          "                          gradients were non-finite (scans them: that step waits)\n"
          "  --accum-steps N         accumulate gradients over N batches per optimizer step (default 1)\n"
          "  --graph                 capture the second step and replay it for every later batch of the\n"
          "                          same shape (mixp_graph: no per-op host work; cpu only)\n"
          "  --low-scale A           ignore (default), warn or error when the dynamic loss scale falls\n"
          "                          below 1 (no fp16 scale fits: train in bf16)\n"
          "  --underflow-stats       every --log-every steps, per parameter, the fraction of gradient\n"
          "                          elements that are zero or subnormal in the AMP dtype (f16 at O0)\n"
          "                          after scaling: printed, and logged as underflow/<name>\n"
          "  --master-weights on|off O2: keep fp32 master weights in the optimizer (default on); off\n"
          "                          updates the half parameters themselves (half the memory)\n"
          "  --stochastic-rounding   O2 bf16 without masters: round parameter updates stochastically,\n"
          "                          so updates below half a bf16 step are not lost\n"
          "  --optimizer-state T     f32 (default) or bf16: the dtype of the optimizer's moments\n"
          "  --check-numerics M      off (default), warn or error: report the first op with NaN/Inf\n"
          "  --check-ops A,B         ... only in these ops (names as --op-stats prints them)\n"
          "  --skip-ops A,B          ... never in these ops\n"
          "  --check-steps A:B       ... only in optimizer steps A to B-1 (A: for no end)\n"
          "  --check-fp16-overflow   ... and report finite values that would overflow fp16 (|x| >= 65520),\n"
          "                          to find before switching a bf16/fp32 model to fp16 what overflows\n"
          "  --compare               run O0, O1 and O2 with the same seed and print one table\n"
          "  --compare-numerics      run the first batch under O0 and under --amp (O1 if O0) from the\n"
          "                          same weights and print every op's error, forward and backward,\n"
          "                          marking the first above --compare-tol (relative, default 0.05)\n"
          "\n"
          "Training logs:\n"
          "  --logdir DIR            write TensorBoard event files to DIR (with --compare: DIR/O0,\n"
          "                          DIR/O1, DIR/O2): the loss every --log-every steps, and per epoch\n"
          "                          test accuracy, lr, loss scale, skipped steps, samples/s, peak memory\n"
          "  --csv PATH              write the same scalars to PATH as CSV (run,tag,step,value,wall_time)\n"
          "  --log-every N           steps between logged loss points (default 10)\n"
          "\n"
          "Checkpoints (safetensors; see docs/checkpoints.md):\n"
          "  --save PATH             save the whole training state to PATH at the end\n"
          "  --save-every N          ... and every N steps (a multiple of --accum-steps)\n"
          "  --resume PATH           continue the run saved in PATH (same model, data and\n"
          "                          precision flags; the result is bitwise that of an\n"
          "                          uninterrupted run with the same thread count)\n"
          "  --max-steps N           stop after N steps in all (a multiple of --accum-steps)\n"
          "\n"
          "Data-parallel training (see docs/distributed.md):\n"
          "  --dist [mpi|single]     data-parallel, one rank per process: mpi (the default) joins the\n"
          "                          ranks of `mpirun -np N mixp-train --dist ...` (one rank when\n"
          "                          started without mpirun); single is one rank without MPI. --batch\n"
          "                          is per rank (global batch: N x --batch); rank 0's initial weights\n"
          "                          are broadcast, each rank trains its shard of every global batch,\n"
          "                          gradients are averaged before each step, the test set is shared;\n"
          "                          only rank 0 prints, logs and saves (every rank reads --resume).\n"
          "                          --device cuda is cuda:<local rank>. Not with --compare(-numerics)\n"
          "\n"
          "  --help                  show this message\n");
}

void bad_usage(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "mixp-train: ");
  vfprintf(stderr, fmt, ap);
  fprintf(stderr, "\n");
  va_end(ap);
  usage(stderr);
  exit(2);
}

/* ---- value readers -------------------------------------------------------- */

static int64_t parse_int(const char *flag, const char *v, int64_t lo, int64_t hi) {
  char *end = NULL;
  errno = 0;
  long long x = strtoll(v, &end, 10);
  if (errno || end == v || *end != '\0' || x < lo || x > hi)
    bad_usage("%s expects an integer in [%" PRId64 ", %" PRId64 "], got '%s'", flag, lo, hi, v);
  return (int64_t)x;
}

static double parse_double(const char *flag, const char *v, double lo) {
  char *end = NULL;
  errno = 0;
  double x = strtod(v, &end);
  if (errno || end == v || *end != '\0' || !(x >= lo) || x > 1e30)
    bad_usage("%s expects a number >= %g, got '%s'", flag, lo, v);
  return x;
}

static void parse_hidden(args *a, const char *name, const char *v) {
  (void)name;
  a->n_hidden = 0;
  const char *p = v;
  while (*p) {
    char *end = NULL;
    errno = 0;
    long long x = strtoll(p, &end, 10);
    if (errno || end == p || x < 1 || x > (1 << 20) || (*end != ',' && *end != '\0'))
      bad_usage("--hidden expects comma-separated positive widths such as 256,128, got '%s'", v);
    if (a->n_hidden == MAX_HIDDEN - 1) bad_usage("--hidden allows at most %d layers", MAX_HIDDEN - 1);
    a->hidden[a->n_hidden++] = (int64_t)x;
    p = *end == ',' ? end + 1 : end;
    if (*end == ',' && *p == '\0') bad_usage("--hidden has a trailing comma: '%s'", v);
  }
  if (a->n_hidden == 0) bad_usage("--hidden needs at least one width");
}

/* A:B (optimizer steps, B exclusive) or A: (no end). */
static void parse_check_steps(args *a, const char *name, const char *v) {
  char *end = NULL;
  errno = 0;
  long long from = strtoll(v, &end, 10);
  if (errno || end == v || *end != ':' || from < 0) bad_usage("%s expects A:B or A: with 0 <= A <= B, got '%s'", name, v);
  const char *p = end + 1;
  long long to = -1;
  if (*p) {
    errno = 0;
    to = strtoll(p, &end, 10);
    if (errno || end == p || *end != '\0' || to < from) bad_usage("%s expects A:B or A: with 0 <= A <= B, got '%s'", name, v);
  }
  a->check_from = from;
  a->check_to = to;
  a->check_steps_set = 1;
}

/* fashion-mnist, synthetic, synthetic-images:CxHxW or text:PATH. */
static void parse_data(args *a, const char *name, const char *v) {
  (void)name;
  a->data = v;
  if (strcmp(v, "fashion-mnist") == 0) {
    a->data_kind = DATA_FASHION_MNIST;
  } else if (strcmp(v, "synthetic") == 0) {
    a->data_kind = DATA_SYNTHETIC;
  } else if (strncmp(v, "synthetic-images:", 17) == 0) {
    long long c = 0, h = 0, w = 0;
    char tail = 0;
    if (sscanf(v + 17, "%lldx%lldx%lld%c", &c, &h, &w, &tail) != 3 || c < 1 || h < 1 || w < 1 ||
        c > 4096 || h > 65536 || w > 65536)
      bad_usage("--data synthetic-images:CxHxW expects three positive sizes such as 3x32x32, got '%s'", v);
    a->data_kind = DATA_SYNTHETIC_IMAGES;
    a->image_c = c;
    a->image_h = h;
    a->image_w = w;
  } else if (strncmp(v, "text:", 5) == 0 && v[5] != '\0') {
    a->data_kind = DATA_TEXT;
    a->text_path = v + 5;
  } else {
    bad_usage("--data: unknown dataset '%s' (known: fashion-mnist, synthetic, "
              "synthetic-images:CxHxW, text:PATH)", v);
  }
}

/* dynamic, static:N or off. */
static void parse_loss_scale(args *a, const char *name, const char *v) {
  if (strcmp(v, "dynamic") == 0) {
    a->loss_scale = MIXP_SCALER_DYNAMIC;
  } else if (strcmp(v, "off") == 0) {
    a->loss_scale = MIXP_SCALER_DISABLED;
  } else if (strncmp(v, "static:", 7) == 0) {
    a->loss_scale = MIXP_SCALER_STATIC;
    a->static_scale = parse_double(name, v + 7, 0.0);
    if (!(a->static_scale > 0)) bad_usage("--loss-scale static:N needs N > 0");
  } else {
    bad_usage("--loss-scale: unknown mode '%s' (known: dynamic, static:N, off)", v);
  }
}

/* ---- the flag table ---------------------------------------------------------- */

typedef enum flag_kind {
  SWITCH,   /* no value: stores 1 in an int */
  INT,      /* int in [lo, hi] */
  I64,      /* int64_t in [lo, hi] */
  U64,      /* uint64_t in [lo, hi] */
  REAL,     /* double >= lo; with positive set: > 0 */
  TEXT,     /* const char *; with nonempty set: not "" */
  CHOICE,   /* one of choices[]: stores values[k] in an int (or the string) */
  OPTIONAL, /* CHOICE whose value may be left out: `--flag` alone is its first choice */
  CUSTOM    /* parse(a, name, value) */
} flag_kind;

typedef struct flag {
  const char *name;
  flag_kind kind;
  size_t offset;         /* of the field in args */
  int64_t lo, hi;        /* INT, I64, U64 ranges; REAL's minimum is lo */
  const char *choices;   /* CHOICE: "a,b,c" */
  const int *values;     /* CHOICE: stored per choice; NULL stores the string */
  void (*parse)(args *, const char *, const char *);
  size_t given;          /* offset of an int set to 1 when the flag is given, or 0 */
  int nonempty;          /* TEXT must not be empty; REAL must be > 0 */
} flag;

#define AT(field) offsetof(args, field)
static const int kAmpLevels[] = {MIXP_AMP_O0, MIXP_AMP_O1, MIXP_AMP_O2, MIXP_AMP_OD};
static const int kAmpDtypes[] = {MIXP_F16, MIXP_BF16};
static const int kNumerics[] = {MIXP_NUMERICS_OFF, MIXP_NUMERICS_WARN, MIXP_NUMERICS_ERROR};
static const int kOptimizers[] = {1, 0}; /* args.adamw */
static const int kOnOff[] = {1, 0};
static const int kStateDtypes[] = {MIXP_F32, MIXP_BF16};
static const int kLowScale[] = {MIXP_LOW_SCALE_IGNORE, MIXP_LOW_SCALE_WARN, MIXP_LOW_SCALE_ERROR};
static const int kDist[] = {DIST_MPI, DIST_SINGLE};

static const flag kFlags[] = {
    {"--model", CHOICE, AT(model), 0, 0,
     "mlp,cnn,resnet18,resnet34,resnet50,mobilenet_v3_small,mobilenet_v3_large,gpt", NULL, NULL, 0, 0},
    {"--model-config", TEXT, AT(model_config), 0, 0, NULL, NULL, NULL, 0, 0},
    {"--hidden", CUSTOM, 0, 0, 0, NULL, NULL, parse_hidden, 0, 0},
    {"--data", CUSTOM, 0, 0, 0, NULL, NULL, parse_data, 0, 0},
    {"--data-dir", TEXT, AT(data_dir), 0, 0, NULL, NULL, NULL, 0, 0},
    {"--block-size", I64, AT(block_size), 1, 1 << 20, NULL, NULL, NULL, 0, 0},
    {"--checkpoint-activations", SWITCH, AT(checkpoint_activations), 0, 0, NULL, NULL, NULL, 0, 0},
    {"--channels-last", SWITCH, AT(channels_last), 0, 0, NULL, NULL, NULL, 0, 0},
    {"--epochs", INT, AT(epochs), 1, 100000, NULL, NULL, NULL, 0, 0},
    {"--batch", I64, AT(batch), 1, 1 << 20, NULL, NULL, NULL, 0, 0},
    {"--optimizer", CHOICE, AT(adamw), 0, 0, "adamw,sgd", kOptimizers, NULL, 0, 0},
    {"--lr", REAL, AT(lr), 0, 0, NULL, NULL, NULL, AT(lr_set), 0},
    {"--weight-decay", REAL, AT(weight_decay), 0, 0, NULL, NULL, NULL, AT(wd_set), 0},
    {"--seed", U64, AT(seed), 0, INT64_MAX, NULL, NULL, NULL, 0, 0},
    {"--device", TEXT, AT(device), 0, 0, NULL, NULL, NULL, 0, 0},
    {"--threads", INT, AT(threads), 0, 4096, NULL, NULL, NULL, 0, 0},
    {"--limit-train", I64, AT(limit_train), 1, INT64_MAX, NULL, NULL, NULL, 0, 0},
    {"--limit-test", I64, AT(limit_test), 1, INT64_MAX, NULL, NULL, NULL, 0, 0},
    {"--amp", CHOICE, AT(amp_level), 0, 0, "O0,O1,O2,OD", kAmpLevels, NULL, 0, 0},
    {"--amp-dtype", CHOICE, AT(amp_dtype), 0, 0, "f16,bf16", kAmpDtypes, NULL, 0, 0},
    {"--loss-scale", CUSTOM, 0, 0, 0, NULL, NULL, parse_loss_scale, 0, 0},
    {"--init-scale", REAL, AT(init_scale), 0, 0, NULL, NULL, NULL, 0, 1},
    {"--clip-norm", REAL, AT(clip_norm), 0, 0, NULL, NULL, NULL, 0, 0},
    {"--label-smoothing", REAL, AT(label_smoothing), 0, 0, NULL, NULL, NULL, 0, 0},
    {"--op-stats", SWITCH, AT(op_stats), 0, 0, NULL, NULL, NULL, 0, 0},
    {"--profile", TEXT, AT(profile_path), 0, 0, NULL, NULL, NULL, 0, 1},
    {"--explain-overflow", SWITCH, AT(explain_overflow), 0, 0, NULL, NULL, NULL, 0, 0},
    {"--accum-steps", INT, AT(accum_steps), 1, 1 << 20, NULL, NULL, NULL, 0, 0},
    {"--graph", SWITCH, AT(graph), 0, 0, NULL, NULL, NULL, 0, 0},
    {"--master-weights", CHOICE, AT(master_weights), 0, 0, "on,off", kOnOff, NULL, AT(master_weights_set), 0},
    {"--stochastic-rounding", SWITCH, AT(stochastic_rounding), 0, 0, NULL, NULL, NULL, 0, 0},
    {"--optimizer-state", CHOICE, AT(optimizer_state), 0, 0, "f32,bf16", kStateDtypes, NULL, 0, 0},
    {"--check-numerics", CHOICE, AT(check_numerics), 0, 0, "off,warn,error", kNumerics, NULL, 0, 0},
    {"--check-ops", TEXT, AT(check_ops), 0, 0, NULL, NULL, NULL, 0, 1},
    {"--skip-ops", TEXT, AT(skip_ops), 0, 0, NULL, NULL, NULL, 0, 1},
    {"--check-steps", CUSTOM, 0, 0, 0, NULL, NULL, parse_check_steps, 0, 0},
    {"--check-fp16-overflow", SWITCH, AT(check_fp16_overflow), 0, 0, NULL, NULL, NULL, 0, 0},
    {"--low-scale", CHOICE, AT(low_scale), 0, 0, "ignore,warn,error", kLowScale, NULL, 0, 0},
    {"--underflow-stats", SWITCH, AT(underflow_stats), 0, 0, NULL, NULL, NULL, 0, 0},
    {"--compare", SWITCH, AT(compare), 0, 0, NULL, NULL, NULL, 0, 0},
    {"--compare-numerics", SWITCH, AT(compare_numerics), 0, 0, NULL, NULL, NULL, 0, 0},
    {"--compare-tol", REAL, AT(compare_tol), 0, 0, NULL, NULL, NULL, 0, 1},
    {"--logdir", TEXT, AT(logdir), 0, 0, NULL, NULL, NULL, 0, 1},
    {"--csv", TEXT, AT(csv_path), 0, 0, NULL, NULL, NULL, 0, 1},
    {"--log-every", INT, AT(log_every), 1, INT_MAX, NULL, NULL, NULL, 0, 0},
    {"--save", TEXT, AT(save_path), 0, 0, NULL, NULL, NULL, 0, 1},
    {"--save-every", I64, AT(save_every), 1, INT64_MAX, NULL, NULL, NULL, 0, 0},
    {"--resume", TEXT, AT(resume_path), 0, 0, NULL, NULL, NULL, 0, 1},
    {"--max-steps", I64, AT(max_steps), 1, INT64_MAX, NULL, NULL, NULL, 0, 0},
    {"--dist", OPTIONAL, AT(dist), 0, 0, "mpi,single", kDist, NULL, 0, 0},
};

/* Index of `value` in the comma-separated list, or -1. */
static int choice_index(const char *list, const char *value) {
  const size_t n = strlen(value);
  int k = 0;
  for (const char *p = list; *p; ++k) {
    const char *comma = strchr(p, ',');
    const size_t len = comma ? (size_t)(comma - p) : strlen(p);
    if (len == n && strncmp(p, value, n) == 0) return k;
    p += len + (comma != NULL);
  }
  return -1;
}

static void store(args *a, const flag *f, const char *v) {
  char *field = (char *)a + f->offset;
  switch (f->kind) {
    case SWITCH: *(int *)field = 1; break;
    case INT: *(int *)field = (int)parse_int(f->name, v, f->lo, f->hi); break;
    case I64: *(int64_t *)field = parse_int(f->name, v, f->lo, f->hi); break;
    case U64: *(uint64_t *)field = (uint64_t)parse_int(f->name, v, f->lo, f->hi); break;
    case REAL:
      *(double *)field = parse_double(f->name, v, (double)f->lo);
      if (f->nonempty && !(*(double *)field > 0)) bad_usage("%s must be > 0", f->name);
      break;
    case TEXT:
      if (f->nonempty && !*v) bad_usage("%s needs a value", f->name);
      *(const char **)field = v;
      break;
    case CHOICE:
    case OPTIONAL: {
      const int k = v ? choice_index(f->choices, v) : 0;
      if (k < 0) {
        char known[256] = "";
        for (const char *p = f->choices; *p && strlen(known) + 3 < sizeof known; ++p)
          strncat(known, *p == ',' ? ", " : (char[2]){*p, 0}, sizeof known - strlen(known) - 1);
        bad_usage("%s: unknown value '%s' (known: %s)", f->name, v, known);
      }
      if (f->values) *(int *)field = f->values[k];
      else *(const char **)field = v;
      break;
    }
    case CUSTOM: f->parse(a, f->name, v); break;
  }
  if (f->given) *(int *)((char *)a + f->given) = 1;
}

static const flag *find_flag(const char *name) {
  for (size_t k = 0; k < sizeof kFlags / sizeof kFlags[0]; ++k)
    if (strcmp(kFlags[k].name, name) == 0) return &kFlags[k];
  return NULL;
}

static void set_defaults(args *a) {
  memset(a, 0, sizeof *a);
  a->model = "mlp";
  a->data = "fashion-mnist";
  a->data_kind = DATA_FASHION_MNIST;
  a->block_size = 64;
  a->epochs = 10;
  a->batch = 128;
  a->adamw = 1;
  a->device = "cpu";
  a->hidden[0] = 256;
  a->hidden[1] = 128;
  a->n_hidden = 2;
  a->amp_level = MIXP_AMP_O0;
  a->amp_dtype = MIXP_BF16;
  a->loss_scale = MIXP_SCALER_AUTO;
  a->init_scale = 65536.0;
  a->accum_steps = 1;
  a->master_weights = 1;
  a->compare_tol = 0.05;
  a->optimizer_state = MIXP_F32;
  a->check_numerics = MIXP_NUMERICS_OFF;
  a->check_to = -1;
  a->log_every = 10;
}

/* Combinations the flags alone rule out. */
static void check_combinations(args *a) {
  if (!a->lr_set) a->lr = a->adamw ? 1e-3 : 0.05;
  const int gpt = strcmp(a->model, "gpt") == 0;
  if (gpt != (a->data_kind == DATA_TEXT))
    bad_usage(gpt ? "--model gpt needs --data text:PATH"
                  : "--data text:PATH needs --model gpt (the other models classify images)");
  if (a->model_config && strcmp(a->model, "mlp") == 0)
    bad_usage("--model-config is for the zoo models; the MLP takes --hidden");
  if (a->model_config && strlen(a->model_config) > MAX_CONFIG / 2) bad_usage("--model-config is too long");
  if (a->save_every && !a->save_path) bad_usage("--save-every needs --save PATH");
  if (a->label_smoothing > 1.0) bad_usage("--label-smoothing must be in [0, 1]");
  if (a->max_steps % a->accum_steps != 0)
    bad_usage("--max-steps must be a multiple of --accum-steps (%d)", a->accum_steps);
  if (a->save_every % a->accum_steps != 0)
    bad_usage("--save-every must be a multiple of --accum-steps (%d)", a->accum_steps);
  const int o2 = a->amp_level == MIXP_AMP_O2 || a->compare;
  if (a->master_weights_set && !o2)
    bad_usage("--master-weights is O2's choice: use it with --amp O2 (or --compare)");
  if (a->stochastic_rounding && (!o2 || a->master_weights || a->amp_dtype != MIXP_BF16))
    bad_usage("--stochastic-rounding rounds bf16 parameters kept without fp32 masters: "
              "use it with --amp O2 --amp-dtype bf16 --master-weights off");
  if ((a->check_ops || a->skip_ops || a->check_steps_set || a->check_fp16_overflow) &&
      a->check_numerics == MIXP_NUMERICS_OFF)
    bad_usage("--check-ops, --skip-ops, --check-steps and --check-fp16-overflow narrow or widen the "
              "numerics checker: add --check-numerics warn or error");
  if (a->compare_numerics && (a->compare || a->save_path || a->resume_path))
    bad_usage("--compare-numerics runs one batch twice; it takes no --compare, --save or --resume");
  if (a->profile_path && (a->compare || a->compare_numerics))
    bad_usage("--profile records one step of one run; it takes no --compare or --compare-numerics");
  if (a->compare && (a->save_path || a->resume_path))
    bad_usage("--compare runs three trainings; it takes no --save or --resume");
  if (a->graph && (a->dist || a->accum_steps > 1 || a->profile_path || a->op_stats || a->explain_overflow ||
                   a->underflow_stats || a->check_numerics != MIXP_NUMERICS_OFF || a->compare || a->compare_numerics ||
                   a->low_scale != MIXP_LOW_SCALE_IGNORE))
    bad_usage("--graph replays one captured step, which reads nothing on the host: it takes no --dist, "
              "--accum-steps, --profile, --op-stats, --explain-overflow, --underflow-stats, --check-numerics, "
              "--low-scale, --compare or --compare-numerics");
  if (a->dist && (a->compare || a->compare_numerics))
    bad_usage("--dist trains one run across the ranks; it takes no --compare or --compare-numerics "
              "(run them without --dist, in one process)");
}

const char *amp_level_name(mixp_amp_level level) {
  switch (level) {
    case MIXP_AMP_O0: return "O0";
    case MIXP_AMP_O1: return "O1";
    case MIXP_AMP_O2: return "O2";
    case MIXP_AMP_OD: return "OD";
  }
  return "?";
}

void parse_args(int argc, char **argv, args *a) {
  set_defaults(a);
  for (int i = 1; i < argc; ++i) {
    const char *arg = argv[i];
    if (strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0) {
      usage(stdout);
      exit(0);
    }
    if (strncmp(arg, "--", 2) != 0) bad_usage("unexpected argument '%s'", arg);
    /* Both "--flag value" and "--flag=value". */
    char name[64];
    const char *eq = strchr(arg, '=');
    const size_t len = eq ? (size_t)(eq - arg) : strlen(arg);
    if (len >= sizeof name) bad_usage("unknown flag '%s'", arg);
    memcpy(name, arg, len);
    name[len] = '\0';
    const flag *f = find_flag(name);
    if (!f) bad_usage("unknown flag '%s'", name);
    const char *value = NULL;
    if (f->kind == SWITCH) {
      if (eq) bad_usage("%s takes no value", name);
    } else if (eq) {
      value = eq + 1;
    } else if (f->kind == OPTIONAL) {
      /* the next argument is the value unless it is a flag (or absent) */
      if (i + 1 < argc && strncmp(argv[i + 1], "--", 2) != 0) value = argv[++i];
      /* else value stays NULL: the first choice */
    } else {
      if (i + 1 >= argc) bad_usage("%s needs a value", name);
      value = argv[++i];
    }
    store(a, f, value);
  }
  check_combinations(a);
}
