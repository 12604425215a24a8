/* mixp-train: the main job. Trains a model (an MLP by default, or one of
 * the zoo's CNN, ResNet, MobileNetV3 and GPT models) on Fashion-MNIST,
 * synthetic images or a text file through the public C API only, and
 * reports loss, test accuracy (held-out loss for gpt), throughput and peak
 * tensor memory.
 *
 *   mixp-train --data fashion-mnist --epochs 10
 *   mixp-train --model resnet18 --data synthetic-images:3x32x32
 *   mixp-train --model gpt --data text:README.md --block-size 64
 *   mpirun -np 2 mixp-train --dist --batch 64 --threads 1   (data-parallel: docs/distributed.md)
 *
 * Exit status: 0 on success, 1 when a mixp call fails (the library's message
 * is printed), 2 for bad command-line flags. */
#define _POSIX_C_SOURCE 200809L
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mixp-train.h"

#define MAX_PARAMS 4096

/* What one training run measured, for the final line and --compare. */
typedef struct run_result {
  double metric;         /* test accuracy, or held-out loss for gpt */
  double samples_per_sec;
  double epoch_seconds;  /* mean training time per epoch */
  double peak_mb;
  int64_t skipped;
  double loss_scale;
  int diverged;          /* the last training loss is not finite */
} run_result;

/* Everything one run holds, from setup to teardown. */
typedef struct run_ctx {
  const args *a;
  mixp_session *s;
  mixp_dataset *train, *test;
  model m;
  trainer t;
  int first_epoch;
  double t_start;
} run_ctx;

static int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }

static const char *amp_name(const args *a) {
  static char buf[32];
  if (a->amp_level == MIXP_AMP_O0) return "O0 (fp32)";
  snprintf(buf, sizeof buf, "%s %s", amp_level_name(a->amp_level), a->amp_dtype == MIXP_F16 ? "f16" : "bf16");
  return buf;
}

static double peak_mb(const mixp_session *s) {
  mixp_memory_stats st;
  memset(&st, 0, sizeof st);
  st.struct_size = sizeof st;
  CHECK(mixp_memory_stats_get(s, &st));
  return (double)st.peak_bytes / (1024.0 * 1024.0);
}

/* ---- setup ------------------------------------------------------------------ */

/* Splits "a,b,c" (NULL: none) into names pointing into buf; returns the count. */
static int split_names(const char *list, char *buf, size_t cap, const char **names, int max, const char *flag) {
  if (!list) return 0;
  if (strlen(list) >= cap) bad_usage("%s is too long", flag);
  strcpy(buf, list);
  int n = 0;
  for (char *p = strtok(buf, ","); p; p = strtok(NULL, ",")) {
    if (n == max) bad_usage("%s takes at most %d names", flag, max);
    names[n++] = p;
  }
  return n;
}

/* --dist: joins the ranks (right after the session exists, before anything
 * is printed: only rank 0 writes to stdout; the others' stdout goes to
 * /dev/null, their errors still reach stderr, naming their rank). */
static mixp_dist *open_dist(mixp_session *s, const args *a) {
  mixp_dist_options o;
  mixp_dist_options_init(&o);
  o.transport = a->dist == DIST_SINGLE ? MIXP_DIST_SINGLE : MIXP_DIST_MPI;
  mixp_dist *d = NULL;
  const mixp_status st = mixp_dist_create(s, &o, &d);
  if (st != MIXP_OK) /* MIXP_ERR_UNSUPPORTED: no MPI (the library says what is missing) */
    die_mixp(a->dist == DIST_SINGLE       ? "--dist single"
             : st == MIXP_ERR_UNSUPPORTED ? "--dist mpi (needs Open MPI and libmixp_mpi.so; --dist single needs neither)"
                                          : "--dist mpi");
  g_train_rank = mixp_dist_rank(d);
  if (g_train_rank != 0 && !freopen("/dev/null", "w", stdout)) {
    fprintf(stderr, "mixp-train (rank %d): cannot silence stdout\n", g_train_rank);
    exit(1);
  }
  return d;
}

static mixp_session *open_session(const args *a, mixp_dist **dist) {
  mixp_session_options so;
  mixp_session_options_init(&so);
  so.device = a->device;
  /* one GPU per rank: the launcher's local rank picks it */
  char device[32];
  if (a->dist && strcmp(a->device, "cuda") == 0) {
    snprintf(device, sizeof device, "cuda:%d", mixp_dist_env_local_rank());
    so.device = device;
  }
  so.seed = a->seed;
  so.num_threads = a->threads;
  so.check_numerics = a->check_numerics;
  mixp_session *s = NULL;
  CHECK(mixp_session_create(&so, &s));
  *dist = a->dist ? open_dist(s, a) : NULL;
  if (a->check_ops || a->skip_ops || a->check_steps_set || a->check_fp16_overflow) {
    /* The op lists split at commas (copies: the flags' text stays intact). */
    char inc_buf[1024] = "", exc_buf[1024] = "";
    const char *inc[64], *exc[64];
    mixp_numerics_options no;
    mixp_numerics_options_init(&no);
    no.mode = a->check_numerics;
    no.include_ops = inc;
    no.n_include = split_names(a->check_ops, inc_buf, sizeof inc_buf, inc, 64, "--check-ops");
    no.exclude_ops = exc;
    no.n_exclude = split_names(a->skip_ops, exc_buf, sizeof exc_buf, exc, 64, "--skip-ops");
    no.start_step = a->check_from;
    no.end_step = a->check_to;
    no.fp16_overflow = a->check_fp16_overflow;
    CHECK(mixp_session_set_numerics_options(s, &no));
  }
  printf("mixp %s | device: %s | threads: %d\n", mixp_version(), mixp_session_device(s),
         mixp_session_num_threads(s));
  /* A CPU session's note describes the CPU ("cpu: <units>; fp32: ...; bf16:
   * ...; f16: ..."), a CUDA session's the GPU. */
  const char *note = mixp_session_device_note(s);
  if (note[0]) printf("%s%s\n", strncmp(note, "cpu: ", 5) == 0 ? "" : "note: ", note);
  /* e.g. "dist: MPI (Open MPI v4.1.4), rank 0 of 2" */
  if (*dist) printf("dist: %s\n", mixp_dist_describe(*dist));
  return s;
}

static void describe_data(const run_ctx *r, const char *data_name, const int64_t *shape, int ndim) {
  const args *a = r->a;
  int64_t in_features = 1;
  for (int i = 0; i < ndim; ++i) in_features *= shape[i];
  const int64_t classes = mixp_dataset_num_classes(r->train);
  int64_t ntrain = mixp_dataset_size(r->train), ntest = mixp_dataset_size(r->test);
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
}

static mixp_optimizer *make_optimizer(run_ctx *r) {
  const args *a = r->a;
  mixp_tensor *params[MAX_PARAMS];
  const int np = model_parameters(&r->m, params, MAX_PARAMS);
  int64_t nweights = 0;
  for (int i = 0; i < np; ++i) nweights += mixp_tensor_numel(params[i]);
  printf("model: %s (%" PRId64 " parameters)%s\n", r->m.config, nweights,
         a->checkpoint_activations ? " | activation checkpointing" : "");
  mixp_optimizer_options oo;
  mixp_optimizer_options_init(&oo, a->adamw ? MIXP_OPTIM_ADAMW : MIXP_OPTIM_SGD);
  oo.lr = a->lr;
  if (!a->adamw) oo.momentum = 0.9;
  if (a->wd_set) oo.weight_decay = a->weight_decay;
  oo.state_dtype = a->optimizer_state;
  oo.stochastic_rounding = a->stochastic_rounding;
  mixp_optimizer *opt = NULL;
  CHECK(mixp_optimizer_create(r->s, params, np, &oo, &opt));
  for (int i = 0; i < np; ++i) mixp_tensor_release(params[i]);
  char batch[96];
  if (r->t.dist)
    snprintf(batch, sizeof batch, "batch %" PRId64 " per rank x %d = %" PRId64, a->batch, r->t.world,
             a->batch * r->t.world);
  else
    snprintf(batch, sizeof batch, "batch %" PRId64, a->batch);
  printf("optimizer: %s lr=%g weight_decay=%g%s%s%s | %s | epochs %d\n",
         a->adamw ? "adamw" : "sgd", oo.lr, oo.weight_decay, a->adamw ? "" : " momentum=0.9",
         oo.state_dtype == MIXP_BF16 ? " state=bf16" : "", oo.stochastic_rounding ? " stochastic-rounding" : "",
         batch, a->epochs);
  return opt;
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
  o.below_one = a->low_scale;
  mixp_grad_scaler *sc = NULL;
  CHECK(mixp_grad_scaler_create(s, &o, &sc));
  return sc;
}

/* Whether the session's device note says that `dtype` cannot beat fp32 here
 * (the note's documented "<dtype>: <path> (not faster than fp32)" part). */
static int low_precision_not_faster(const mixp_session *s, mixp_dtype dtype) {
  char key[16];
  snprintf(key, sizeof key, "; %s: ", dtype == MIXP_F16 ? "f16" : "bf16");
  const char *part = strstr(mixp_session_device_note(s), key);
  if (!part) return 0;
  const char *end = strchr(part + 2, ';');
  const char *slow = strstr(part, "(not faster than fp32)");
  return slow && (!end || slow < end);
}

static void describe_precision(const args *a, const mixp_session *s, const mixp_grad_scaler *scaler) {
  static const char *const scaler_modes[] = {"auto", "dynamic", "static", "off"};
  printf("precision: %s | loss scale: %s", amp_name(a), scaler_modes[mixp_grad_scaler_mode(scaler)]);
  if (a->clip_norm > 0) printf(" | clip norm %g", a->clip_norm);
  if (a->accum_steps > 1) printf(" | accumulate %d batches", a->accum_steps);
  if (a->check_numerics != MIXP_NUMERICS_OFF)
    printf(" | check numerics: %s", a->check_numerics == MIXP_NUMERICS_WARN ? "warn" : "error");
  printf("\n");
  static int said;  /* once per process, --compare included */
  if (a->amp_level != MIXP_AMP_O0 && !said && low_precision_not_faster(s, a->amp_dtype)) {
    const char *d = a->amp_dtype == MIXP_F16 ? "f16" : "bf16";
    printf("note: this cpu has no %s matrix unit in use, so %s products are computed in fp32: %s keeps its numerics "
           "and memory savings here but cannot be faster than O0 (see the cpu line above)\n",
           d, d, amp_name(a));
    said = 1;
  }
  fflush(stdout);
}

/* Session (and communicator), data, model, optimizer (decorated for O2),
 * scaler and loader; the trainer resumed from --resume when given. */
static void setup(run_ctx *r, const args *a) {
  memset(r, 0, sizeof *r);
  r->a = a;
  r->t_start = now_s();
  trainer *t = &r->t;
  if (a->save_path && !a->dist) state_check_path(a->save_path);
  r->s = open_session(a, &t->dist);
  t->rank = t->dist ? mixp_dist_rank(t->dist) : 0;
  t->world = t->dist ? mixp_dist_world_size(t->dist) : 1;
  if (a->dist && t->rank == 0) { /* only rank 0 writes files */
    if (a->save_path) state_check_path(a->save_path);
    train_logs_begin(a->csv_path);
  }
  const char *data_name = open_data(r->s, a, &r->train, &r->test);
  int64_t shape[MIXP_MAX_DIMS];
  int ndim = 0;
  CHECK(mixp_dataset_sample_shape(r->train, shape, &ndim));
  describe_data(r, data_name, shape, ndim);
  model_create(r->s, a, shape, ndim, mixp_dataset_num_classes(r->train), &r->m);
  /* every rank starts from rank 0's weights (before O2 makes its masters) */
  if (t->dist) CHECK(mixp_dist_broadcast_module(t->dist, r->m.zoo));

  t->m = &r->m;
  t->s = r->s;
  t->a = a;
  t->data_name = data_name;
  t->opt = make_optimizer(r);
  if (a->amp_level == MIXP_AMP_O2) { /* half parameters with fp32 masters in the optimizer */
    mixp_decorate_options d;
    mixp_decorate_options_init(&d);
    d.dtype = a->amp_dtype;
    d.master_weights = a->master_weights;
    CHECK(mixp_amp_decorate(r->m.zoo, t->opt, &d));
  }
  t->scaler = make_scaler(r->s, a);
  describe_precision(a, r->s, t->scaler);
  t->amp_on = a->amp_level != MIXP_AMP_O0;
  mixp_autocast_options_init(&t->autocast);
  t->autocast.level = a->amp_level;
  t->autocast.dtype = a->amp_dtype;

  mixp_loader_options lo;
  mixp_loader_options_init(&lo);
  lo.batch_size = a->batch;
  lo.shuffle = 1;
  lo.seed = a->seed;
  /* --dist: --batch samples per rank, its part of each global batch */
  lo.shard_index = t->rank;
  lo.shard_count = t->world;
  CHECK(mixp_loader_create(r->train, &lo, &t->loader));

  t->p.epoch = 1;
  if (a->resume_path) {
    train_state ts = {r->s, &r->m, t->opt, t->scaler, t->loader, a, data_name, t->world};
    state_resume(&ts, &t->p, a->resume_path);
    printf("resumed: %s at step %" PRId64 ", epoch %" PRId64 " (%" PRId64 " batches into it)\n",
           a->resume_path, t->p.steps, t->p.epoch, t->p.done);
  }
  r->first_epoch = (int)t->p.epoch;
  t->log = run_log_open(t->rank == 0 ? a->logdir : NULL, a->compare, amp_level_name(a->amp_level));
}

/* ---- the epochs ----------------------------------------------------------------- */

static void log_epoch(const trainer *t, const epoch_stats *e, double metric, const char *metric_tag,
                      int64_t skipped, double epoch_peak) {
  if (!t->log) return;
  const int64_t step = t->p.steps;
  double lr = 0;
  CHECK(mixp_optimizer_get_lr(t->opt, &lr));
  run_log_scalar(t->log, "train/epoch_loss", step, e->loss);
  run_log_scalar(t->log, metric_tag, step, metric);
  run_log_scalar(t->log, "train/lr", step, lr);
  run_log_scalar(t->log, "amp/epoch_loss_scale", step, current_scale(t->scaler));
  run_log_scalar(t->log, "amp/skipped_steps", step, (double)skipped);
  run_log_scalar(t->log, "perf/samples_per_sec", step, e->seconds > 0 ? (double)e->samples / e->seconds : 0.0);
  run_log_scalar(t->log, "perf/peak_mem_mb", step, epoch_peak);
  run_log_flush(t->log);
}

/* Trains the remaining epochs, evaluating after each. */
static run_result train_epochs(run_ctx *r, int tty) {
  const args *a = r->a;
  trainer *t = &r->t;
  const char *metric_name = r->m.is_gpt ? "val_loss" : "test_accuracy";
  const char *metric_tag = r->m.is_gpt ? "eval/loss" : "eval/accuracy";
  run_result res;
  memset(&res, 0, sizeof res);
  double train_seconds = 0;
  int64_t train_samples = 0;
  int epochs_run = 0;
  for (int e = r->first_epoch; e <= a->epochs && !t->stop; ++e, ++epochs_run) {
    CHECK(mixp_memory_stats_reset_peak(r->s));
    const int64_t skipped_before = t->p.skipped;
    const epoch_stats st = train_epoch(t, e, tty);
    const double epoch_peak = peak_mb(r->s);
    if (epoch_peak > res.peak_mb) res.peak_mb = epoch_peak;
    const double t0 = now_s();
    res.metric = evaluate(t, r->test, a->limit_test);
    const double eval_s = now_s() - t0;
    train_seconds += st.seconds;
    train_samples += st.samples;
    printf("epoch %d/%d: train_loss=%.4f %s=%.4f samples_per_sec=%.0f time=%.1fs peak_mem_mb=%.1f",
           e, a->epochs, st.loss, metric_name, res.metric,
           st.seconds > 0 ? (double)st.samples / st.seconds : 0.0, st.seconds + eval_s, epoch_peak);
    if (t->amp_on)
      printf(" loss_scale=%g skipped_steps=%" PRId64, current_scale(t->scaler), t->p.skipped - skipped_before);
    printf("\n");
    fflush(stdout);
    log_epoch(t, &st, res.metric, metric_tag, t->p.skipped - skipped_before, epoch_peak);
  }
  if (epochs_run == 0) /* resumed after the last epoch: nothing to train */
    res.metric = evaluate(t, r->test, a->limit_test);
  res.samples_per_sec = train_seconds > 0 ? (double)train_samples / train_seconds : 0.0;
  res.epoch_seconds = train_seconds / (epochs_run > 0 ? epochs_run : 1);
  res.skipped = t->p.skipped;
  res.loss_scale = current_scale(t->scaler);
  res.diverged = t->p.steps > 0 && !isfinite(t->p.recent[(t->p.steps - 1) % 10]);
  return res;
}

/* ---- report and teardown ---------------------------------------------------------- */

static void report(run_ctx *r, const run_result *res) {
  const args *a = r->a;
  const trainer *t = &r->t;
  const char *metric_name = r->m.is_gpt ? "val_loss" : "test_accuracy";
  if (a->save_path) save_checkpoint(t);
  if (a->save_path || a->resume_path)
    printf("state: steps=%" PRId64 " last_loss=%a %s=%a\n", t->p.steps,
           t->p.steps > 0 ? t->p.recent[(t->p.steps - 1) % 10] : 0.0, metric_name, res->metric);
  /* The whole run in one point per measure: what plot_runs.py compares. */
  run_log_scalar(t->log, r->m.is_gpt ? "final/val_loss" : "final/accuracy", t->p.steps, res->metric);
  run_log_scalar(t->log, "final/samples_per_sec", t->p.steps, res->samples_per_sec);
  run_log_scalar(t->log, "final/peak_mem_mb", t->p.steps, res->peak_mb);
  run_log_scalar(t->log, "final/skipped_steps", t->p.steps, (double)res->skipped);
  run_log_close(t->log);
  if (r->m.is_gpt)
    printf("final: val_loss=%.4f first_loss=%.4f last_loss=%.4f epochs=%d time=%.1fs "
           "samples_per_sec=%.0f peak_mem_mb=%.1f\n",
           res->metric, t->p.first_loss, recent_loss(t), a->epochs, now_s() - r->t_start,
           res->samples_per_sec, res->peak_mb);
  else
    printf("final: test_accuracy=%.4f epochs=%d time=%.1fs samples_per_sec=%.0f peak_mem_mb=%.1f\n",
           res->metric, a->epochs, now_s() - r->t_start, res->samples_per_sec, res->peak_mb);
  if (res->diverged && t->rank == 0) {
    fflush(stdout);
    fprintf(stderr,
            "mixp-train: training diverged: the last loss is %g (step %" PRId64 "); try a smaller --lr "
            "or --weight-decay, --clip-norm, or a loss scale\n",
            t->p.steps > 0 ? t->p.recent[(t->p.steps - 1) % 10] : 0.0, t->p.steps);
  }
}

static void teardown(run_ctx *r) {
  graph_release(&r->t);
  mixp_grad_scaler_destroy(r->t.scaler);
  mixp_loader_destroy(r->t.loader);
  mixp_optimizer_destroy(r->t.opt);
  model_destroy(&r->m);
  mixp_dataset_destroy(r->train);
  mixp_dataset_destroy(r->test);
  mixp_dist_destroy(r->t.dist); /* collective: every rank ends together */
  mixp_session_destroy(r->s);
}

static run_result run(const args *a, int tty) {
  run_ctx r;
  setup(&r, a);
  /* No progress bar under mpirun: it gives every rank a terminal, even when
   * its own output goes to a file or a pipe. */
  const run_result res = train_epochs(&r, tty && a->dist != DIST_MPI);
  report(&r, &res);
  teardown(&r);
  return res;
}

/* ---- main ---------------------------------------------------------------------------- */

/* O0, O1 and O2 with the same seed (same initialisation, same batches) and
 * one table of what each measured. */
static int compare(const args *a, int tty) {
  run_result r[3];
  args runs[3];
  for (int k = 0; k < 3; ++k) {
    runs[k] = *a;
    runs[k].amp_level = (mixp_amp_level)k;
    printf("=== %s ===\n", amp_name(&runs[k]));
    r[k] = run(&runs[k], tty);
    printf("\n");
  }
  const char *metric = strcmp(a->model, "gpt") == 0 ? "val_loss" : "test_acc";
  printf("%-12s %12s %12s %13s %10s %9s %9s\n", "precision", "samples/s", "epoch_s", "peak_mem_mb", metric,
         "skipped", "speed-up");
  int diverged = 0;
  for (int k = 0; k < 3; ++k) {
    printf("%-12s %12.0f %12.2f %13.1f %10.4f %9" PRId64 " %8.2fx\n", amp_name(&runs[k]), r[k].samples_per_sec,
           r[k].epoch_seconds, r[k].peak_mb, r[k].metric, r[k].skipped,
           r[0].samples_per_sec > 0 ? r[k].samples_per_sec / r[0].samples_per_sec : 0.0);
    diverged |= r[k].diverged;
  }
  return diverged;
}

/* --compare-numerics: the first batch under O0 and under --amp (O1 when O0
 * was asked for), same seed, so the same weights and batch; every op's
 * output and every gradient compared in execution order (mixp_trace_*).
 * The gradients are those of the unscaled loss, so the runs compare. */
static int compare_numerics(const args *a) {
  args runs[2] = {*a, *a};
  runs[0].amp_level = MIXP_AMP_O0;
  if (runs[1].amp_level == MIXP_AMP_O0) runs[1].amp_level = MIXP_AMP_O1;
  mixp_trace *tr[2] = {NULL, NULL};
  for (int k = 0; k < 2; ++k) {
    printf("=== %s ===\n", amp_name(&runs[k]));
    run_ctx r;
    setup(&r, &runs[k]);
    trainer *t = &r.t;
    mixp_tensor *x = NULL, *y = NULL;
    CHECK(mixp_loader_next(t->loader, &x, &y));
    CHECK(mixp_optimizer_zero_grad(t->opt));
    CHECK(mixp_trace_begin(r.s));
    if (t->amp_on) CHECK(mixp_autocast_push(r.s, &t->autocast));
    mixp_tensor *logits = model_forward(t->m, x);
    mixp_tensor *loss = model_loss(t->m, logits, y, 1);
    if (t->amp_on) CHECK(mixp_autocast_pop(r.s));
    CHECK(mixp_backward(loss, NULL));
    CHECK(mixp_trace_end(r.s, &tr[k]));
    mixp_tensor *tmp[] = {x, y, logits, loss};
    for (int i = 0; i < 4; ++i) mixp_tensor_release(tmp[i]);
    teardown(&r);
    printf("\n");
  }
  int64_t first = -1;
  const char *report = NULL;
  CHECK(mixp_trace_compare(tr[0], tr[1], a->compare_tol, &first, &report));
  printf("op by op: %s against %s (the first batch; casts left out)\n%s", amp_name(&runs[1]), amp_name(&runs[0]),
         report);
  mixp_trace_destroy(tr[0]);
  mixp_trace_destroy(tr[1]);
  return 0;
}

int main(int argc, char **argv) {
  args a;
  parse_args(argc, argv, &a);
  const int tty = isatty(STDOUT_FILENO);
  if (!a.dist) train_logs_begin(a.csv_path); /* --dist: rank 0, in setup */
  const int diverged = a.compare_numerics ? compare_numerics(&a) : a.compare ? compare(&a, tty) : run(&a, tty).diverged;
  train_logs_end();
  return diverged ? 1 : 0;
}
