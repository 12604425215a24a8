/* mixp-train: the main job. Trains a model (an MLP by default, or one of
 * the zoo's CNN, ResNet, MobileNetV3 and GPT models) on Fashion-MNIST,
 * synthetic images or a text file through the public C API only, and
 * reports loss, test accuracy (held-out loss for gpt), throughput and peak
 * tensor memory.
 *
 *   mixp-train --data fashion-mnist --epochs 10
 *   mixp-train --model resnet18 --data synthetic-images:3x32x32
 *   mixp-train --model gpt --data text:README.md --block-size 64
 *
 * Exit status: 0 on success, 1 when a mixp call fails (the library's message
 * is printed), 2 for bad command-line flags. */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "mixp-train.h"
#include "mixp-train-log.h"

#define EVAL_BATCH 1000
#define MAX_PARAMS 4096

/* ---- errors ------------------------------------------------------------- */

/* Every library call goes through CHECK: a failure prints the library's own
 * message (which names the function and the bad argument) and exits 1. */
void die_mixp(const char *what) {
  fprintf(stderr, "mixp-train: %s failed: %s\n", what, mixp_last_error());
  exit(1);
}

static void usage(FILE *f) {
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
          "  --amp O0|O1|O2          O0 fp32 (default); O1 autocast op lists; O2 half parameters with\n"
          "                          fp32 master weights (mixp_amp_decorate) and autocast O2\n"
          "  --amp-dtype f16|bf16    low-precision type (default bf16, the CPU's fast type)\n"
          "  --loss-scale MODE       dynamic, static:N or off (default: dynamic for f16, off for bf16)\n"
          "  --init-scale X          initial dynamic loss scale (default 65536)\n"
          "  --clip-norm X           clip gradients to global norm X after unscaling (default off)\n"
          "  --accum-steps N         accumulate gradients over N batches per optimizer step (default 1)\n"
          "  --check-numerics M      off (default), warn or error: report the first op with NaN/Inf\n"
          "  --compare               run O0, O1 and O2 with the same seed and print one table\n"
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
          "  --help                  show this message\n");
}

static void bad_usage(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "mixp-train: ");
  vfprintf(stderr, fmt, ap);
  fprintf(stderr, "\n");
  va_end(ap);
  usage(stderr);
  exit(2);
}

/* ---- flag parsing --------------------------------------------------------- */

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

static void parse_hidden(args *a, const char *v) {
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

/* fashion-mnist, synthetic, synthetic-images:CxHxW or text:PATH. */
static void parse_data(args *a, const char *v) {
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

static void parse_args(int argc, char **argv, args *a) {
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
  a->check_numerics = MIXP_NUMERICS_OFF;
  a->log_every = 10;
  for (int i = 1; i < argc; ++i) {
    const char *flag = argv[i];
    if (strcmp(flag, "--help") == 0 || strcmp(flag, "-h") == 0) {
      usage(stdout);
      exit(0);
    }
    if (strcmp(flag, "--checkpoint-activations") == 0) {
      a->checkpoint_activations = 1;
      continue;
    }
    if (strcmp(flag, "--compare") == 0) {
      a->compare = 1;
      continue;
    }
    if (strncmp(flag, "--", 2) != 0) bad_usage("unexpected argument '%s'", flag);
    /* Both "--flag value" and "--flag=value". */
    char name[64];
    const char *value = NULL;
    const char *eq = strchr(flag, '=');
    size_t len = eq ? (size_t)(eq - flag) : strlen(flag);
    if (len >= sizeof name) bad_usage("unknown flag '%s'", flag);
    memcpy(name, flag, len);
    name[len] = '\0';
    static const char *const known[] = {"--model", "--hidden", "--data", "--data-dir",
                                        "--epochs", "--batch", "--lr", "--optimizer",
                                        "--weight-decay", "--seed", "--device", "--threads",
                                        "--model-config", "--block-size",
                                        "--limit-train", "--limit-test", "--amp", "--amp-dtype",
                                        "--loss-scale", "--init-scale", "--clip-norm",
                                        "--accum-steps", "--check-numerics", "--logdir",
                                        "--csv", "--log-every"};
    static const char *const state_flags[] = {"--save", "--save-every", "--resume", "--max-steps"};
    int is_known = 0;
    for (size_t k = 0; k < sizeof known / sizeof known[0]; ++k) is_known |= strcmp(name, known[k]) == 0;
    for (size_t k = 0; k < sizeof state_flags / sizeof state_flags[0]; ++k)
      is_known |= strcmp(name, state_flags[k]) == 0;
    if (!is_known) bad_usage("unknown flag '%s'", name);
    if (eq) {
      value = eq + 1;
    } else {
      if (i + 1 >= argc) bad_usage("%s needs a value", name);
      value = argv[++i];
    }
    if (strcmp(name, "--model") == 0) {
      static const char *const models[] = {"mlp", "cnn", "resnet18", "resnet34", "resnet50",
                                           "mobilenet_v3_small", "mobilenet_v3_large", "gpt"};
      int ok = 0;
      for (size_t k = 0; k < sizeof models / sizeof models[0]; ++k) ok |= strcmp(value, models[k]) == 0;
      if (!ok)
        bad_usage("--model: unknown model '%s' (known: mlp, cnn, resnet18, resnet34, resnet50, "
                  "mobilenet_v3_small, mobilenet_v3_large, gpt)", value);
      a->model = value;
    } else if (strcmp(name, "--model-config") == 0) {
      if (strlen(value) > MAX_CONFIG / 2) bad_usage("--model-config is too long");
      a->model_config = value;
    } else if (strcmp(name, "--hidden") == 0) {
      parse_hidden(a, value);
    } else if (strcmp(name, "--data") == 0) {
      parse_data(a, value);
    } else if (strcmp(name, "--block-size") == 0) {
      a->block_size = parse_int(name, value, 1, 1 << 20);
    } else if (strcmp(name, "--data-dir") == 0) {
      a->data_dir = value;
    } else if (strcmp(name, "--epochs") == 0) {
      a->epochs = (int)parse_int(name, value, 1, 100000);
    } else if (strcmp(name, "--batch") == 0) {
      a->batch = parse_int(name, value, 1, 1 << 20);
    } else if (strcmp(name, "--lr") == 0) {
      a->lr = parse_double(name, value, 0.0);
      a->lr_set = 1;
    } else if (strcmp(name, "--optimizer") == 0) {
      if (strcmp(value, "adamw") == 0)
        a->adamw = 1;
      else if (strcmp(value, "sgd") == 0)
        a->adamw = 0;
      else
        bad_usage("--optimizer: unknown optimizer '%s' (known: adamw, sgd)", value);
    } else if (strcmp(name, "--weight-decay") == 0) {
      a->weight_decay = parse_double(name, value, 0.0);
      a->wd_set = 1;
    } else if (strcmp(name, "--seed") == 0) {
      a->seed = (uint64_t)parse_int(name, value, 0, INT64_MAX);
    } else if (strcmp(name, "--device") == 0) {
      a->device = value;
    } else if (strcmp(name, "--threads") == 0) {
      a->threads = (int)parse_int(name, value, 0, 4096);
    } else if (strcmp(name, "--amp") == 0) {
      if (strcmp(value, "O0") == 0) a->amp_level = MIXP_AMP_O0;
      else if (strcmp(value, "O1") == 0) a->amp_level = MIXP_AMP_O1;
      else if (strcmp(value, "O2") == 0) a->amp_level = MIXP_AMP_O2;
      else bad_usage("--amp: unknown level '%s' (known: O0, O1, O2)", value);
    } else if (strcmp(name, "--amp-dtype") == 0) {
      if (strcmp(value, "f16") == 0) a->amp_dtype = MIXP_F16;
      else if (strcmp(value, "bf16") == 0) a->amp_dtype = MIXP_BF16;
      else bad_usage("--amp-dtype: unknown dtype '%s' (known: f16, bf16)", value);
    } else if (strcmp(name, "--loss-scale") == 0) {
      if (strcmp(value, "dynamic") == 0) {
        a->loss_scale = MIXP_SCALER_DYNAMIC;
      } else if (strcmp(value, "off") == 0) {
        a->loss_scale = MIXP_SCALER_DISABLED;
      } else if (strncmp(value, "static:", 7) == 0) {
        a->loss_scale = MIXP_SCALER_STATIC;
        a->static_scale = parse_double(name, value + 7, 0.0);
        if (!(a->static_scale > 0)) bad_usage("--loss-scale static:N needs N > 0");
      } else {
        bad_usage("--loss-scale: unknown mode '%s' (known: dynamic, static:N, off)", value);
      }
    } else if (strcmp(name, "--init-scale") == 0) {
      a->init_scale = parse_double(name, value, 0.0);
      if (!(a->init_scale > 0)) bad_usage("--init-scale must be > 0");
    } else if (strcmp(name, "--clip-norm") == 0) {
      a->clip_norm = parse_double(name, value, 0.0);
    } else if (strcmp(name, "--accum-steps") == 0) {
      a->accum_steps = (int)parse_int(name, value, 1, 1 << 20);
    } else if (strcmp(name, "--check-numerics") == 0) {
      if (strcmp(value, "off") == 0) a->check_numerics = MIXP_NUMERICS_OFF;
      else if (strcmp(value, "warn") == 0) a->check_numerics = MIXP_NUMERICS_WARN;
      else if (strcmp(value, "error") == 0) a->check_numerics = MIXP_NUMERICS_ERROR;
      else bad_usage("--check-numerics: unknown mode '%s' (known: off, warn, error)", value);
    } else if (strcmp(name, "--logdir") == 0) {
      if (!*value) bad_usage("--logdir needs a directory");
      a->logdir = value;
    } else if (strcmp(name, "--csv") == 0) {
      if (!*value) bad_usage("--csv needs a file name");
      a->csv_path = value;
    } else if (strcmp(name, "--log-every") == 0) {
      a->log_every = (int)parse_int(name, value, 1, INT_MAX);
    } else if (strcmp(name, "--save") == 0) {
      a->save_path = value;
    } else if (strcmp(name, "--save-every") == 0) {
      a->save_every = parse_int(name, value, 1, INT64_MAX);
    } else if (strcmp(name, "--resume") == 0) {
      a->resume_path = value;
    } else if (strcmp(name, "--max-steps") == 0) {
      a->max_steps = parse_int(name, value, 1, INT64_MAX);
    } else if (strcmp(name, "--limit-train") == 0) {
      a->limit_train = parse_int(name, value, 1, INT64_MAX);
    } else { /* --limit-test, the last known flag */
      a->limit_test = parse_int(name, value, 1, INT64_MAX);
    }
  }
  if (!a->lr_set) a->lr = a->adamw ? 1e-3 : 0.05;
  const int gpt = strcmp(a->model, "gpt") == 0;
  if (gpt != (a->data_kind == DATA_TEXT))
    bad_usage(gpt ? "--model gpt needs --data text:PATH"
                  : "--data text:PATH needs --model gpt (the other models classify images)");
  if (a->model_config && strcmp(a->model, "mlp") == 0)
    bad_usage("--model-config is for the zoo models; the MLP takes --hidden");
  if (a->save_every && !a->save_path) bad_usage("--save-every needs --save PATH");
  if (a->max_steps % a->accum_steps != 0)
    bad_usage("--max-steps must be a multiple of --accum-steps (%d)", a->accum_steps);
  if (a->save_every % a->accum_steps != 0)
    bad_usage("--save-every must be a multiple of --accum-steps (%d)", a->accum_steps);
  if (a->compare && (a->save_path || a->resume_path))
    bad_usage("--compare runs three trainings; it takes no --save or --resume");
}

/* ---- time and progress ------------------------------------------------------ */

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void progress(int epoch, int epochs, int64_t done, int64_t total, double loss,
                     double rate) {
  char bar[31];
  int filled = total > 0 ? (int)(30 * done / total) : 30;
  for (int i = 0; i < 30; ++i) bar[i] = i < filled ? '#' : '.';
  bar[30] = '\0';
  printf("\r\033[Kepoch %d/%d [%s] %" PRId64 "/%" PRId64 " loss %.4f %.0f samples/s", epoch,
         epochs, bar, done, total, loss, rate);
  fflush(stdout);
}

static int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }

static double peak_mb(const mixp_session *s) {
  mixp_memory_stats st;
  memset(&st, 0, sizeof st);
  st.struct_size = sizeof st;
  CHECK(mixp_memory_stats_get(s, &st));
  return (double)st.peak_bytes / (1024.0 * 1024.0);
}

/* ---- evaluation -------------------------------------------------------------- */

/* Accuracy of a classifier, or the mean token loss of a language model, on
 * at most `limit` samples (all when 0). */
/* ac: the autocast region of the training forward (NULL for fp32): an O2
 * model has half weights and is evaluated under the same policy. */
static double evaluate(const model *m, mixp_dataset *test, int64_t limit, mixp_session *s,
                       const mixp_autocast_options *ac) {
  mixp_loader_options lo;
  mixp_loader_options_init(&lo);
  lo.batch_size = m->is_gpt ? 64 : EVAL_BATCH;
  lo.shuffle = 0;
  mixp_loader *loader = NULL;
  CHECK(mixp_loader_create(test, &lo, &loader));
  model_set_training(m, 0);
  CHECK(mixp_no_grad_begin(s));
  int64_t seen = 0, correct = 0;
  double loss_sum = 0;
  int64_t pred[EVAL_BATCH], label[EVAL_BATCH];
  mixp_tensor *x = NULL, *y = NULL;
  mixp_status st = MIXP_DONE;
  while ((limit <= 0 || seen < limit) && (st = mixp_loader_next(loader, &x, &y)) == MIXP_OK) {
    int64_t b = mixp_tensor_dim(y, 0);
    int64_t use = limit > 0 ? min64(b, limit - seen) : b;
    if (ac) CHECK(mixp_autocast_push(s, ac));
    mixp_tensor *logits = model_forward(m, x);
    if (ac) CHECK(mixp_autocast_pop(s));
    if (m->is_gpt) {
      /* Whole batches only: the mean is per token, batches are equal-sized
       * but for the last one, which is weighted by its size. */
      mixp_tensor *loss = model_loss(m, logits, y);
      double lv = 0;
      CHECK(mixp_tensor_item(loss, &lv));
      loss_sum += lv * (double)b;
      use = b;
      mixp_tensor_release(loss);
    } else {
      mixp_tensor *am = NULL;
      CHECK(mixp_argmax(logits, 1, 0, &am));
      CHECK(mixp_tensor_to_host(am, pred, (size_t)b * sizeof(int64_t)));
      CHECK(mixp_tensor_to_host(y, label, (size_t)b * sizeof(int64_t)));
      for (int64_t i = 0; i < use; ++i) correct += pred[i] == label[i];
      mixp_tensor_release(am);
    }
    seen += use;
    mixp_tensor_release(logits);
    mixp_tensor_release(x);
    mixp_tensor_release(y);
  }
  if (limit <= 0 || seen < limit) {
    if (st != MIXP_DONE) die_mixp("mixp_loader_next");
  }
  CHECK(mixp_no_grad_end(s));
  model_set_training(m, 1);
  mixp_loader_destroy(loader);
  if (seen == 0) return 0.0;
  return m->is_gpt ? loss_sum / (double)seen : (double)correct / (double)seen;
}

/* ---- training -------------------------------------------------------------------- */

typedef struct trainer {
  const model *m;
  mixp_optimizer *opt;
  mixp_session *s;
  const args *a;
  int64_t steps;
  double first_loss;     /* of the first step */
  double recent[10];     /* the last steps' losses, a ring */
  /* Mixed precision: the autocast region of each forward (when amp_on), the
   * loss scaler (mode DISABLED for O0 and bf16: a plain optimizer step). */
  int amp_on;
  mixp_autocast_options autocast;
  mixp_grad_scaler *scaler;
  int64_t micro;         /* batches seen, for gradient accumulation */
  int64_t skipped;       /* optimizer steps skipped for non-finite gradients */
  run_log *log;          /* NULL without --logdir and --csv */
  /* The epoch in progress (a checkpoint holds them, so that a resumed epoch
   * reports what an uninterrupted one would). */
  int epoch;             /* the epoch in progress, or the next one between epochs */
  int64_t ep_done;       /* batches trained in it */
  double ep_loss_sum;
  int64_t ep_samples;
  int stop;              /* --max-steps reached */
  mixp_loader *loader;
  const char *data_name;
} trainer;

/* One batch: forward under the precision policy, backward of the (scaled)
 * loss; every accum_steps batches also unscale, clip, step and update the
 * scale. Returns the batch's loss. */
static double current_scale(const mixp_grad_scaler *sc) {
  double v = 1.0;
  CHECK(mixp_grad_scaler_get_scale(sc, &v));
  return v;
}

static double train_step(trainer *t, const mixp_tensor *x, const mixp_tensor *y) {
  const args *a = t->a;
  const int first = t->micro % a->accum_steps == 0;
  const int last = (t->micro + 1) % a->accum_steps == 0;
  if (first) CHECK(mixp_optimizer_zero_grad(t->opt));
  if (t->amp_on) CHECK(mixp_autocast_push(t->s, &t->autocast));
  mixp_tensor *logits = model_forward(t->m, x);
  mixp_tensor *loss = model_loss(t->m, logits, y);
  if (t->amp_on) CHECK(mixp_autocast_pop(t->s));
  double lv = 0;
  CHECK(mixp_tensor_item(loss, &lv));
  /* The accumulated gradient is that of the mean over the N batches. */
  mixp_tensor *objective = loss, *scaled = NULL;
  if (a->accum_steps > 1) CHECK(mixp_mul_scalar(loss, 1.0 / a->accum_steps, &objective));
  CHECK(mixp_grad_scaler_scale(t->scaler, objective, &scaled));
  CHECK(mixp_backward(scaled, NULL));
  if (last) {
    if (a->clip_norm > 0) {
      CHECK(mixp_grad_scaler_unscale(t->scaler, t->opt)); /* clip the true gradients */
      CHECK(mixp_clip_grad_norm(t->opt, a->clip_norm, NULL));
    }
    CHECK(mixp_grad_scaler_step(t->scaler, t->opt));
    CHECK(mixp_grad_scaler_update(t->scaler));
    int found_inf = 0;
    CHECK(mixp_grad_scaler_found_inf(t->scaler, &found_inf));
    t->skipped += found_inf != 0;
  }
  t->micro++;
  if (objective != loss) mixp_tensor_release(objective);
  mixp_tensor_release(scaled);
  mixp_tensor_release(loss);
  mixp_tensor_release(logits);
  if (t->steps == 0) t->first_loss = lv;
  t->recent[t->steps % 10] = lv;
  t->steps++;
  if (t->log && t->steps % a->log_every == 0) {
    run_log_scalar(t->log, "train/loss", t->steps, lv);
    run_log_scalar(t->log, "amp/loss_scale", t->steps, current_scale(t->scaler));
  }
  return lv;
}

/* The trainer's counters as a checkpoint holds them, and back. */
static train_progress progress_of(const trainer *t) {
  train_progress p;
  memset(&p, 0, sizeof p);
  p.epoch = t->epoch;
  p.done = t->ep_done;
  p.loss_sum = t->ep_loss_sum;
  p.samples = t->ep_samples;
  p.steps = t->steps;
  p.micro = t->micro;
  p.skipped = t->skipped;
  p.first_loss = t->first_loss;
  memcpy(p.recent, t->recent, sizeof p.recent);
  return p;
}

static void restore_progress(trainer *t, const train_progress *p) {
  t->epoch = (int)p->epoch;
  t->ep_done = p->done;
  t->ep_loss_sum = p->loss_sum;
  t->ep_samples = p->samples;
  t->steps = p->steps;
  t->micro = p->micro;
  t->skipped = p->skipped;
  t->first_loss = p->first_loss;
  memcpy(t->recent, p->recent, sizeof t->recent);
}

static void save_checkpoint(const trainer *t) {
  train_progress p = progress_of(t);
  train_state ts = {t->s, t->m, t->opt, t->scaler, t->loader, t->a, t->data_name};
  state_save(&ts, &p, t->a->save_path);
  printf("checkpoint: saved %s at step %" PRId64 "\n", t->a->save_path, t->steps);
  fflush(stdout);
}

/* The mean loss of the last (up to ten) steps. */
static double recent_loss(const trainer *t) {
  int64_t n = t->steps < 10 ? t->steps : 10;
  double sum = 0;
  for (int64_t i = 0; i < n; ++i) sum += t->recent[i];
  return n > 0 ? sum / (double)n : 0.0;
}

typedef struct epoch_stats {
  double loss;
  int64_t samples;
  double seconds;
} epoch_stats;

static epoch_stats train_epoch(trainer *t, mixp_loader *loader, int epoch, int tty) {
  const args *a = t->a;
  epoch_stats r = {0, 0, 0};
  int64_t batches = mixp_loader_num_batches(loader);
  if (a->limit_train > 0) batches = min64(batches, (a->limit_train + a->batch - 1) / a->batch);
  double t0 = now_s(), last_draw = 0;
  t->epoch = epoch;
  const int64_t samples0 = t->ep_samples; /* > 0 in a resumed epoch */
  mixp_tensor *x = NULL, *y = NULL;
  mixp_status st = MIXP_DONE;
  while ((st = mixp_loader_next(loader, &x, &y)) == MIXP_OK) {
    if (t->ep_done < batches) {
      double lv = train_step(t, x, y);
      int64_t b = mixp_tensor_dim(y, 0);
      t->ep_loss_sum += lv * (double)b;
      t->ep_samples += b;
      ++t->ep_done;
      double now = now_s();
      if (tty && (now - last_draw > 0.1 || t->ep_done == batches)) {
        progress(epoch, a->epochs, t->ep_done, batches, t->ep_loss_sum / (double)t->ep_samples,
                 (double)(t->ep_samples - samples0) / (now - t0));
        last_draw = now;
      }
      if (a->save_every > 0 && t->steps % a->save_every == 0) save_checkpoint(t);
      if (a->max_steps > 0 && t->steps >= a->max_steps) {
        t->stop = 1;
        mixp_tensor_release(x);
        mixp_tensor_release(y);
        st = MIXP_DONE;
        break;
      }
    }
    /* With --limit-train the rest of the epoch is drawn but not trained on,
     * so the next epoch starts on a fresh shuffle. */
    mixp_tensor_release(x);
    mixp_tensor_release(y);
  }
  if (st != MIXP_DONE) die_mixp("mixp_loader_next");
  if (tty) printf("\r\033[K");
  r.seconds = now_s() - t0;
  r.samples = t->ep_samples - samples0;
  r.loss = t->ep_samples > 0 ? t->ep_loss_sum / (double)t->ep_samples : 0.0;
  if (!t->stop) { /* the epoch is over: a checkpoint resumes at the next */
    t->epoch = epoch + 1;
    t->ep_done = 0;
    t->ep_loss_sum = 0;
    t->ep_samples = 0;
  }
  return r;
}

/* What one training run measured, for the final line and --compare. */
typedef struct run_result {
  double metric;         /* test accuracy, or held-out loss for gpt */
  double samples_per_sec;
  double epoch_seconds;  /* mean training time per epoch */
  double peak_mb;
  int64_t skipped;
  double loss_scale;
} run_result;

static const char *amp_name(const args *a) {
  static char buf[32];
  if (a->amp_level == MIXP_AMP_O0) return "O0 (fp32)";
  snprintf(buf, sizeof buf, "O%d %s", (int)a->amp_level, a->amp_dtype == MIXP_F16 ? "f16" : "bf16");
  return buf;
}

/* O2: half parameters with fp32 masters in the optimizer. */
static void decorate_model(const model *m, mixp_optimizer *opt, mixp_dtype dtype) {
  mixp_decorate_options d;
  mixp_decorate_options_init(&d);
  d.dtype = dtype;
  CHECK(mixp_amp_decorate(m->zoo, opt, &d));
}

static mixp_grad_scaler *make_scaler(mixp_session *s, const args *a) {
  mixp_grad_scaler_options o;
  mixp_grad_scaler_options_init(&o);
  o.init_scale = a->init_scale;
  if (a->amp_level == MIXP_AMP_O0) o.mode = MIXP_SCALER_DISABLED;
  else if (a->loss_scale == MIXP_SCALER_AUTO)
    o.mode = a->amp_dtype == MIXP_F16 ? MIXP_SCALER_DYNAMIC : MIXP_SCALER_DISABLED;
  else o.mode = a->loss_scale;
  if (o.mode == MIXP_SCALER_STATIC) o.init_scale = a->static_scale;
  mixp_grad_scaler *sc = NULL;
  CHECK(mixp_grad_scaler_create(s, &o, &sc));
  return sc;
}


static run_result run(const args *a, int tty) {
  double t_start = now_s();
  mixp_session_options so;
  mixp_session_options_init(&so);
  so.device = a->device;
  so.seed = a->seed;
  so.num_threads = a->threads;
  so.check_numerics = a->check_numerics;
  mixp_session *s = NULL;
  CHECK(mixp_session_create(&so, &s));
  printf("mixp %s | device: %s | threads: %d\n", mixp_version(), mixp_session_device(s),
         mixp_session_num_threads(s));
  if (mixp_session_device_note(s)[0]) printf("note: %s\n", mixp_session_device_note(s));

  mixp_dataset *train = NULL, *test = NULL;
  const char *data_name = open_data(s, a, &train, &test);
  int64_t shape[MIXP_MAX_DIMS];
  int ndim = 0;
  CHECK(mixp_dataset_sample_shape(train, shape, &ndim));
  int64_t in_features = 1;
  for (int i = 0; i < ndim; ++i) in_features *= shape[i];
  int64_t classes = mixp_dataset_num_classes(train);
  int64_t ntrain = mixp_dataset_size(train), ntest = mixp_dataset_size(test);
  if (a->limit_train > 0) ntrain = min64(ntrain, a->limit_train);
  if (a->limit_test > 0) ntest = min64(ntest, a->limit_test);
  if (a->data_kind == DATA_TEXT)
    printf("data: text %s, %" PRId64 " train / %" PRId64 " held-out windows of %" PRId64
           " tokens, vocabulary of %" PRId64 "\n",
           a->text_path, ntrain, ntest, a->block_size, classes);
  else
    printf("data: %s, %" PRId64 " train / %" PRId64 " test samples of %" PRId64
           " features, %" PRId64 " classes\n",
           data_name, ntrain, ntest, in_features, classes);

  model m;
  model_create(s, a, shape, ndim, classes, &m);
  mixp_tensor *params[MAX_PARAMS];
  int np = model_parameters(&m, params, MAX_PARAMS);
  int64_t nweights = 0;
  for (int i = 0; i < np; ++i) nweights += mixp_tensor_numel(params[i]);
  printf("model: %s (%" PRId64 " parameters)%s\n", m.config, nweights,
         a->checkpoint_activations ? " | activation checkpointing" : "");

  mixp_optimizer_options oo;
  mixp_optimizer_options_init(&oo, a->adamw ? MIXP_OPTIM_ADAMW : MIXP_OPTIM_SGD);
  oo.lr = a->lr;
  if (!a->adamw) oo.momentum = 0.9;
  if (a->wd_set) oo.weight_decay = a->weight_decay;
  mixp_optimizer *opt = NULL;
  CHECK(mixp_optimizer_create(s, params, np, &oo, &opt));
  for (int i = 0; i < np; ++i) mixp_tensor_release(params[i]);
  printf("optimizer: %s lr=%g weight_decay=%g%s | batch %" PRId64 " | epochs %d\n",
         a->adamw ? "adamw" : "sgd", oo.lr, oo.weight_decay, a->adamw ? "" : " momentum=0.9",
         a->batch, a->epochs);
  if (a->amp_level == MIXP_AMP_O2) decorate_model(&m, opt, a->amp_dtype);
  mixp_grad_scaler *scaler = make_scaler(s, a);
  static const char *const scaler_modes[] = {"auto", "dynamic", "static", "off"};
  printf("precision: %s | loss scale: %s", amp_name(a), scaler_modes[mixp_grad_scaler_mode(scaler)]);
  if (a->clip_norm > 0) printf(" | clip norm %g", a->clip_norm);
  if (a->accum_steps > 1) printf(" | accumulate %d batches", a->accum_steps);
  if (a->check_numerics != MIXP_NUMERICS_OFF)
    printf(" | check numerics: %s", a->check_numerics == MIXP_NUMERICS_WARN ? "warn" : "error");
  printf("\n");
  fflush(stdout);

  mixp_loader_options lo;
  mixp_loader_options_init(&lo);
  lo.batch_size = a->batch;
  lo.shuffle = 1;
  lo.seed = a->seed;
  mixp_loader *loader = NULL;
  CHECK(mixp_loader_create(train, &lo, &loader));

  trainer t;
  memset(&t, 0, sizeof t);
  t.m = &m;
  t.opt = opt;
  t.s = s;
  t.a = a;
  t.scaler = scaler;
  t.amp_on = a->amp_level != MIXP_AMP_O0;
  mixp_autocast_options_init(&t.autocast);
  t.autocast.level = a->amp_level;
  t.autocast.dtype = a->amp_dtype;
  t.loader = loader;
  t.data_name = data_name;
  t.epoch = 1;
  int first_epoch = 1;
  if (a->resume_path) {
    train_progress p;
    train_state ts = {s, &m, opt, scaler, loader, a, data_name};
    state_resume(&ts, &p, a->resume_path);
    restore_progress(&t, &p);
    first_epoch = (int)p.epoch;
    printf("resumed: %s at step %" PRId64 ", epoch %d (%" PRId64 " batches into it)\n",
           a->resume_path, t.steps, first_epoch, t.ep_done);
  }
  double train_seconds = 0;
  int64_t train_samples = 0;
  run_result res;
  memset(&res, 0, sizeof res);
  const char *metric_name = m.is_gpt ? "val_loss" : "test_accuracy";
  const char *metric_tag = m.is_gpt ? "eval/loss" : "eval/accuracy";
  static const char *const level_names[] = {"O0", "O1", "O2"};
  t.log = run_log_open(a->logdir, a->compare, level_names[a->amp_level]);
  int epochs_run = 0;
  for (int e = first_epoch; e <= a->epochs && !t.stop; ++e, ++epochs_run) {
    CHECK(mixp_memory_stats_reset_peak(s));
    const int64_t skipped_before = t.skipped;
    epoch_stats r = train_epoch(&t, loader, e, tty);
    double epoch_peak = peak_mb(s);
    if (epoch_peak > res.peak_mb) res.peak_mb = epoch_peak;
    double t0 = now_s();
    res.metric = evaluate(&m, test, a->limit_test, s, t.amp_on ? &t.autocast : NULL);
    double eval_s = now_s() - t0;
    train_seconds += r.seconds;
    train_samples += r.samples;
    printf("epoch %d/%d: train_loss=%.4f %s=%.4f samples_per_sec=%.0f time=%.1fs peak_mem_mb=%.1f",
           e, a->epochs, r.loss, metric_name, res.metric,
           r.seconds > 0 ? (double)r.samples / r.seconds : 0.0, r.seconds + eval_s, epoch_peak);
    if (t.amp_on)
      printf(" loss_scale=%g skipped_steps=%" PRId64, current_scale(scaler), t.skipped - skipped_before);
    printf("\n");
    fflush(stdout);
    if (t.log) {
      double lr = 0;
      CHECK(mixp_optimizer_get_lr(opt, &lr));
      run_log_scalar(t.log, "train/epoch_loss", t.steps, r.loss);
      run_log_scalar(t.log, metric_tag, t.steps, res.metric);
      run_log_scalar(t.log, "train/lr", t.steps, lr);
      run_log_scalar(t.log, "amp/epoch_loss_scale", t.steps, current_scale(scaler));
      run_log_scalar(t.log, "amp/skipped_steps", t.steps, (double)(t.skipped - skipped_before));
      run_log_scalar(t.log, "perf/samples_per_sec", t.steps,
                     r.seconds > 0 ? (double)r.samples / r.seconds : 0.0);
      run_log_scalar(t.log, "perf/peak_mem_mb", t.steps, epoch_peak);
      run_log_flush(t.log);
    }
  }
  if (epochs_run == 0) /* resumed after the last epoch: nothing to train */
    res.metric = evaluate(&m, test, a->limit_test, s, t.amp_on ? &t.autocast : NULL);
  if (a->save_path) save_checkpoint(&t);
  if (a->save_path || a->resume_path)
    printf("state: steps=%" PRId64 " last_loss=%a %s=%a\n", t.steps,
           t.steps > 0 ? t.recent[(t.steps - 1) % 10] : 0.0, metric_name, res.metric);
  res.samples_per_sec = train_seconds > 0 ? (double)train_samples / train_seconds : 0.0;
  res.epoch_seconds = train_seconds / (epochs_run > 0 ? epochs_run : 1);
  res.skipped = t.skipped;
  res.loss_scale = current_scale(scaler);
  /* The whole run in one point per measure: what plot_runs.py compares. */
  run_log_scalar(t.log, m.is_gpt ? "final/val_loss" : "final/accuracy", t.steps, res.metric);
  run_log_scalar(t.log, "final/samples_per_sec", t.steps, res.samples_per_sec);
  run_log_scalar(t.log, "final/peak_mem_mb", t.steps, res.peak_mb);
  run_log_scalar(t.log, "final/skipped_steps", t.steps, (double)res.skipped);
  run_log_close(t.log);
  if (m.is_gpt)
    printf("final: val_loss=%.4f first_loss=%.4f last_loss=%.4f epochs=%d time=%.1fs "
           "samples_per_sec=%.0f peak_mem_mb=%.1f\n",
           res.metric, t.first_loss, recent_loss(&t), a->epochs, now_s() - t_start, res.samples_per_sec,
           res.peak_mb);
  else
    printf("final: test_accuracy=%.4f epochs=%d time=%.1fs samples_per_sec=%.0f peak_mem_mb=%.1f\n",
           res.metric, a->epochs, now_s() - t_start, res.samples_per_sec, res.peak_mb);

  mixp_grad_scaler_destroy(scaler);
  mixp_loader_destroy(loader);
  mixp_optimizer_destroy(opt);
  model_destroy(&m);
  mixp_dataset_destroy(train);
  mixp_dataset_destroy(test);
  mixp_session_destroy(s);
  return res;
}

int main(int argc, char **argv) {
  args a;
  parse_args(argc, argv, &a);
  int tty = isatty(STDOUT_FILENO);
  train_logs_begin(a.csv_path);
  if (!a.compare) {
    run(&a, tty);
    train_logs_end();
    return 0;
  }
  /* O0, O1 and O2 with the same seed: same initialisation, same batches. */
  run_result r[3];
  args runs[3];
  for (int k = 0; k < 3; ++k) {
    runs[k] = a;
    runs[k].amp_level = (mixp_amp_level)k;
    printf("=== %s ===\n", amp_name(&runs[k]));
    r[k] = run(&runs[k], tty);
    printf("\n");
  }
  const char *metric = strcmp(a.model, "gpt") == 0 ? "val_loss" : "test_acc";
  printf("%-12s %12s %12s %13s %10s %9s %9s\n", "precision", "samples/s", "epoch_s", "peak_mem_mb", metric,
         "skipped", "speed-up");
  for (int k = 0; k < 3; ++k)
    printf("%-12s %12.0f %12.2f %13.1f %10.4f %9" PRId64 " %8.2fx\n", amp_name(&runs[k]), r[k].samples_per_sec,
           r[k].epoch_seconds, r[k].peak_mb, r[k].metric, r[k].skipped,
           r[0].samples_per_sec > 0 ? r[k].samples_per_sec / r[0].samples_per_sec : 0.0);
  train_logs_end();
  return 0;
}
