/* mixp-train: the main job. Trains a multi-layer perceptron on Fashion-MNIST
 * (or on synthetic data when the dataset is not installed) through the public
 * C API only, and reports loss, test accuracy and throughput.
 *
 *   mixp-train --data fashion-mnist --epochs 10
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

#include "mixp/mixp.h"

#define MAX_HIDDEN 16
#define SYNTH_TRAIN 60000
#define SYNTH_TEST 10000
#define EVAL_BATCH 1000

typedef struct args {
  const char *model;
  const char *data;
  const char *data_dir;
  int epochs;
  int64_t batch;
  double lr;
  int lr_set;
  int adamw;
  double weight_decay;
  int wd_set;
  uint64_t seed;
  const char *device;
  int threads;
  int64_t limit_train;
  int64_t limit_test;
  int64_t hidden[MAX_HIDDEN];
  int n_hidden;
} args;

/* ---- errors ------------------------------------------------------------- */

static void die_mixp(const char *what) {
  fprintf(stderr, "mixp-train: %s failed: %s\n", what, mixp_last_error());
  exit(1);
}

/* Every library call goes through CHECK: a failure prints the library's own
 * message (which names the function and the bad argument) and exits 1. */
#define CHECK(call)                            \
  do {                                         \
    if ((call) != MIXP_OK) die_mixp(#call);    \
  } while (0)

static void usage(FILE *f) {
  fprintf(f,
          "usage: mixp-train [options]\n"
          "Trains an MLP classifier with mixp and reports test accuracy.\n"
          "\n"
          "  --model mlp             model (only mlp for now)\n"
          "  --hidden 256,128        hidden layer widths of the MLP\n"
          "  --data NAME             fashion-mnist (default) or synthetic\n"
          "  --data-dir DIR          Fashion-MNIST directory (default /usr/share/datasets/fashion-mnist)\n"
          "  --epochs N              training epochs (default 10)\n"
          "  --batch N               mini-batch size (default 128)\n"
          "  --optimizer NAME        adamw (default) or sgd (momentum 0.9)\n"
          "  --lr X                  learning rate (default 1e-3 for adamw, 0.05 for sgd)\n"
          "  --weight-decay X        weight decay (default 0.01 for adamw, 0 for sgd)\n"
          "  --seed N                seed of initialisation, shuffling and synthetic data (default 0)\n"
          "  --device S              cpu (default), cuda, cuda:N or auto\n"
          "  --threads N             CPU threads, 0 = all cores (default 0)\n"
          "  --limit-train N         train on at most N samples per epoch\n"
          "  --limit-test N          evaluate on at most N test samples\n"
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

static void parse_args(int argc, char **argv, args *a) {
  memset(a, 0, sizeof *a);
  a->model = "mlp";
  a->data = "fashion-mnist";
  a->epochs = 10;
  a->batch = 128;
  a->adamw = 1;
  a->device = "cpu";
  a->hidden[0] = 256;
  a->hidden[1] = 128;
  a->n_hidden = 2;
  for (int i = 1; i < argc; ++i) {
    const char *flag = argv[i];
    if (strcmp(flag, "--help") == 0 || strcmp(flag, "-h") == 0) {
      usage(stdout);
      exit(0);
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
                                        "--limit-train", "--limit-test"};
    int is_known = 0;
    for (size_t k = 0; k < sizeof known / sizeof known[0]; ++k) is_known |= strcmp(name, known[k]) == 0;
    if (!is_known) bad_usage("unknown flag '%s'", name);
    if (eq) {
      value = eq + 1;
    } else {
      if (i + 1 >= argc) bad_usage("%s needs a value", name);
      value = argv[++i];
    }
    if (strcmp(name, "--model") == 0) {
      if (strcmp(value, "mlp") != 0) bad_usage("--model: unknown model '%s' (known: mlp)", value);
      a->model = value;
    } else if (strcmp(name, "--hidden") == 0) {
      parse_hidden(a, value);
    } else if (strcmp(name, "--data") == 0) {
      if (strcmp(value, "fashion-mnist") != 0 && strcmp(value, "synthetic") != 0)
        bad_usage("--data: unknown dataset '%s' (known: fashion-mnist, synthetic)", value);
      a->data = value;
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
    } else if (strcmp(name, "--limit-train") == 0) {
      a->limit_train = parse_int(name, value, 1, INT64_MAX);
    } else { /* --limit-test, the last known flag */
      a->limit_test = parse_int(name, value, 1, INT64_MAX);
    }
  }
  if (!a->lr_set) a->lr = a->adamw ? 1e-3 : 0.05;
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

/* ---- the model ------------------------------------------------------------- */

typedef struct mlp {
  mixp_module *layers[MAX_HIDDEN];
  int n;
  int64_t in_features;
} mlp;

static void mlp_create(mixp_session *s, int64_t in, const args *a, int64_t classes, mlp *m) {
  m->n = 0;
  m->in_features = in;
  int64_t prev = in;
  for (int i = 0; i <= a->n_hidden; ++i) {
    int64_t width = i < a->n_hidden ? a->hidden[i] : classes;
    CHECK(mixp_linear_create(s, prev, width, 1, MIXP_F32, &m->layers[m->n]));
    m->n++;
    prev = width;
  }
}

static void mlp_destroy(mlp *m) {
  for (int i = 0; i < m->n; ++i) mixp_module_destroy(m->layers[i]);
  m->n = 0;
}

/* logits = L_n(relu(... relu(L_1(flatten(x))))) */
static mixp_tensor *mlp_forward(const mlp *m, const mixp_tensor *x) {
  int64_t flat[2] = {mixp_tensor_dim(x, 0), m->in_features};
  mixp_tensor *h = NULL;
  CHECK(mixp_reshape(x, flat, 2, &h));
  for (int i = 0; i < m->n; ++i) {
    mixp_tensor *y = NULL;
    CHECK(mixp_module_forward(m->layers[i], h, &y));
    mixp_tensor_release(h);
    h = y;
    if (i + 1 < m->n) {
      CHECK(mixp_relu(h, &y));
      mixp_tensor_release(h);
      h = y;
    }
  }
  return h;
}

static void mlp_set_training(const mlp *m, int training) {
  for (int i = 0; i < m->n; ++i) CHECK(mixp_module_set_training(m->layers[i], training));
}

/* ---- data ---------------------------------------------------------------- */

static mixp_dataset *synthetic(mixp_session *s, int64_t n, uint64_t seed) {
  mixp_synthetic_options o;
  mixp_synthetic_options_init(&o);
  o.num_samples = n;
  o.seed = seed;
  mixp_dataset *d = NULL;
  CHECK(mixp_dataset_synthetic(s, &o, &d));
  return d;
}

static int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }

/* Opens the train and test splits; falls back to synthetic data when
 * Fashion-MNIST is not installed. Returns the name of what was loaded. */
static const char *open_data(mixp_session *s, const args *a, mixp_dataset **train,
                             mixp_dataset **test) {
  if (strcmp(a->data, "fashion-mnist") == 0) {
    mixp_status st = mixp_dataset_fashion_mnist(s, a->data_dir, 1, train);
    if (st == MIXP_OK) {
      CHECK(mixp_dataset_fashion_mnist(s, a->data_dir, 0, test));
      return "fashion-mnist";
    }
    if (st != MIXP_ERR_IO) die_mixp("mixp_dataset_fashion_mnist");
    printf("Fashion-MNIST is not available: %s\n", mixp_last_error());
    printf("`apt-get install dataset-fashion-mnist` provides it; using synthetic data instead\n");
  }
  /* Same seed base for both splits: seed s trains, s + 1 tests; they share
   * the class prototypes, so test accuracy measures generalisation. */
  int64_t ntrain = a->limit_train > 0 ? min64(a->limit_train, SYNTH_TRAIN) : SYNTH_TRAIN;
  int64_t ntest = a->limit_test > 0 ? min64(a->limit_test, SYNTH_TEST) : SYNTH_TEST;
  *train = synthetic(s, ntrain, a->seed);
  *test = synthetic(s, ntest, a->seed + 1);
  return "synthetic";
}

/* ---- training and evaluation ------------------------------------------------ */

static double evaluate(const mlp *m, mixp_dataset *test, int64_t limit, mixp_session *s) {
  mixp_loader_options lo;
  mixp_loader_options_init(&lo);
  lo.batch_size = EVAL_BATCH;
  lo.shuffle = 0;
  mixp_loader *loader = NULL;
  CHECK(mixp_loader_create(test, &lo, &loader));
  mlp_set_training(m, 0);
  CHECK(mixp_no_grad_begin(s));
  int64_t seen = 0, correct = 0;
  int64_t pred[EVAL_BATCH], label[EVAL_BATCH];
  mixp_tensor *x = NULL, *y = NULL;
  mixp_status st = MIXP_DONE;
  while ((limit <= 0 || seen < limit) && (st = mixp_loader_next(loader, &x, &y)) == MIXP_OK) {
    int64_t b = mixp_tensor_dim(y, 0);
    mixp_tensor *logits = mlp_forward(m, x);
    mixp_tensor *am = NULL;
    CHECK(mixp_argmax(logits, 1, 0, &am));
    CHECK(mixp_tensor_to_host(am, pred, (size_t)b * sizeof(int64_t)));
    CHECK(mixp_tensor_to_host(y, label, (size_t)b * sizeof(int64_t)));
    int64_t use = limit > 0 ? min64(b, limit - seen) : b;
    for (int64_t i = 0; i < use; ++i) correct += pred[i] == label[i];
    seen += use;
    mixp_tensor_release(am);
    mixp_tensor_release(logits);
    mixp_tensor_release(x);
    mixp_tensor_release(y);
  }
  if (limit <= 0 || seen < limit) {
    if (st != MIXP_DONE) die_mixp("mixp_loader_next");
  }
  CHECK(mixp_no_grad_end(s));
  mlp_set_training(m, 1);
  mixp_loader_destroy(loader);
  return seen > 0 ? (double)correct / (double)seen : 0.0;
}

typedef struct epoch_stats {
  double loss;
  int64_t samples;
  double seconds;
} epoch_stats;

static epoch_stats train_epoch(const mlp *m, mixp_optimizer *opt, mixp_loader *loader,
                               const args *a, int epoch, int tty) {
  epoch_stats r = {0, 0, 0};
  int64_t batches = mixp_loader_num_batches(loader);
  if (a->limit_train > 0) batches = min64(batches, (a->limit_train + a->batch - 1) / a->batch);
  double t0 = now_s(), last_draw = 0, loss_sum = 0;
  int64_t done = 0;
  mixp_tensor *x = NULL, *y = NULL;
  mixp_status st = MIXP_DONE;
  while ((st = mixp_loader_next(loader, &x, &y)) == MIXP_OK) {
    if (done < batches) {
      mixp_tensor *logits = mlp_forward(m, x);
      mixp_tensor *loss = NULL;
      CHECK(mixp_cross_entropy(logits, y, MIXP_REDUCTION_MEAN, MIXP_IGNORE_INDEX_DEFAULT, &loss));
      CHECK(mixp_optimizer_zero_grad(opt));
      CHECK(mixp_backward(loss, NULL));
      CHECK(mixp_optimizer_step(opt));
      double lv = 0;
      CHECK(mixp_tensor_item(loss, &lv));
      int64_t b = mixp_tensor_dim(y, 0);
      loss_sum += lv * (double)b;
      r.samples += b;
      ++done;
      mixp_tensor_release(loss);
      mixp_tensor_release(logits);
      double t = now_s();
      if (tty && (t - last_draw > 0.1 || done == batches)) {
        progress(epoch, a->epochs, done, batches, loss_sum / (double)r.samples,
                 (double)r.samples / (t - t0));
        last_draw = t;
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
  r.loss = r.samples > 0 ? loss_sum / (double)r.samples : 0.0;
  return r;
}

int main(int argc, char **argv) {
  args a;
  parse_args(argc, argv, &a);
  int tty = isatty(STDOUT_FILENO);
  double t_start = now_s();

  mixp_session_options so;
  mixp_session_options_init(&so);
  so.device = a.device;
  so.seed = a.seed;
  so.num_threads = a.threads;
  mixp_session *s = NULL;
  CHECK(mixp_session_create(&so, &s));
  printf("mixp %s | device: %s | threads: %d\n", mixp_version(), mixp_session_device(s),
         mixp_session_num_threads(s));
  if (mixp_session_device_note(s)[0]) printf("note: %s\n", mixp_session_device_note(s));

  mixp_dataset *train = NULL, *test = NULL;
  const char *data_name = open_data(s, &a, &train, &test);
  int64_t shape[MIXP_MAX_DIMS];
  int ndim = 0;
  CHECK(mixp_dataset_sample_shape(train, shape, &ndim));
  int64_t in_features = 1;
  for (int i = 0; i < ndim; ++i) in_features *= shape[i];
  int64_t classes = mixp_dataset_num_classes(train);
  int64_t ntrain = mixp_dataset_size(train), ntest = mixp_dataset_size(test);
  if (a.limit_train > 0) ntrain = min64(ntrain, a.limit_train);
  if (a.limit_test > 0) ntest = min64(ntest, a.limit_test);
  printf("data: %s, %" PRId64 " train / %" PRId64 " test samples of %" PRId64 " features, %" PRId64
         " classes\n",
         data_name, ntrain, ntest, in_features, classes);

  mlp m;
  mlp_create(s, in_features, &a, classes, &m);
  mixp_tensor *params[2 * MAX_HIDDEN];
  int np = 0;
  int64_t nweights = 0;
  for (int i = 0; i < m.n; ++i) {
    int k = mixp_module_num_parameters(m.layers[i]);
    if (k < 0) die_mixp("mixp_module_num_parameters");
    for (int j = 0; j < k && np < 2 * MAX_HIDDEN; ++j) {
      CHECK(mixp_module_parameter(m.layers[i], j, &params[np]));
      nweights += mixp_tensor_numel(params[np]);
      ++np;
    }
  }
  printf("model: mlp %" PRId64, in_features);
  for (int i = 0; i < a.n_hidden; ++i) printf("-%" PRId64, a.hidden[i]);
  printf("-%" PRId64 " (%" PRId64 " parameters)\n", classes, nweights);

  mixp_optimizer_options oo;
  mixp_optimizer_options_init(&oo, a.adamw ? MIXP_OPTIM_ADAMW : MIXP_OPTIM_SGD);
  oo.lr = a.lr;
  if (!a.adamw) oo.momentum = 0.9;
  if (a.wd_set) oo.weight_decay = a.weight_decay;
  mixp_optimizer *opt = NULL;
  CHECK(mixp_optimizer_create(s, params, np, &oo, &opt));
  for (int i = 0; i < np; ++i) mixp_tensor_release(params[i]);
  printf("optimizer: %s lr=%g weight_decay=%g%s | batch %" PRId64 " | epochs %d\n",
         a.adamw ? "adamw" : "sgd", oo.lr, oo.weight_decay, a.adamw ? "" : " momentum=0.9",
         a.batch, a.epochs);
  fflush(stdout);

  mixp_loader_options lo;
  mixp_loader_options_init(&lo);
  lo.batch_size = a.batch;
  lo.shuffle = 1;
  lo.seed = a.seed;
  mixp_loader *loader = NULL;
  CHECK(mixp_loader_create(train, &lo, &loader));

  double acc = 0, train_seconds = 0;
  int64_t train_samples = 0;
  for (int e = 1; e <= a.epochs; ++e) {
    epoch_stats r = train_epoch(&m, opt, loader, &a, e, tty);
    double t0 = now_s();
    acc = evaluate(&m, test, a.limit_test, s);
    double eval_s = now_s() - t0;
    train_seconds += r.seconds;
    train_samples += r.samples;
    printf("epoch %d/%d: train_loss=%.4f test_accuracy=%.4f samples_per_sec=%.0f time=%.1fs\n",
           e, a.epochs, r.loss, acc, r.seconds > 0 ? (double)r.samples / r.seconds : 0.0,
           r.seconds + eval_s);
    fflush(stdout);
  }
  printf("final: test_accuracy=%.4f epochs=%d time=%.1fs samples_per_sec=%.0f\n", acc, a.epochs,
         now_s() - t_start, train_seconds > 0 ? (double)train_samples / train_seconds : 0.0);

  mixp_loader_destroy(loader);
  mixp_optimizer_destroy(opt);
  mlp_destroy(&m);
  mixp_dataset_destroy(train);
  mixp_dataset_destroy(test);
  mixp_session_destroy(s);
  return 0;
}
