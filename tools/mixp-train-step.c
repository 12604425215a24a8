/* mixp-train's training step and the loops around it: one batch (forward
 * under the precision policy, scaled backward, and every --accum-steps
 * batches unscale, clip, step and update), one epoch with its progress bar
 * and periodic checkpoints, and the evaluation on held-out data. Under
 * --dist every rank runs the same calls on its shard: the gradients are
 * averaged before each step, the loss and the evaluation counts summed. */
#define _POSIX_C_SOURCE 200809L
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "mixp-train.h"

#define EVAL_BATCH 1000

double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }

/* The parameters whose gradients held NaN/Inf on a skipped step, by name
 * (the optimizer's parameters are the model's, in its order). */
static void explain_overflow(const trainer *t, int64_t step) {
  int idx[64], n = 0;
  CHECK(mixp_optimizer_nonfinite_grads(t->opt, idx, 64, &n));
  printf("step %lld: overflow, step skipped; non-finite gradients in %d parameter%s:", (long long)step, n,
         n == 1 ? "" : "s");
  for (int k = 0; k < n && k < 64; ++k) printf(" %s", mixp_module_parameter_name(t->m->zoo, idx[k]));
  printf(n > 64 ? " ...\n" : "\n");
  fflush(stdout);
}

/* --underflow-stats: per parameter, the share of the (still scaled)
 * gradient that is zero or subnormal in the AMP dtype (f16 when training
 * fp32: what switching to f16 would lose); logged as underflow/<name>, and
 * the mean and the worst parameter printed. */
static void underflow_stats(const trainer *t, int64_t step) {
  const mixp_dtype low = t->amp_on ? t->a->amp_dtype : MIXP_F16;
  double f[256];
  int n = 0;
  CHECK(mixp_optimizer_grad_underflow(t->opt, low, f, 256, &n));
  double mean = 0, worst = -1;
  int counted = 0, worst_k = -1;
  for (int k = 0; k < n && k < 256; ++k) {
    if (f[k] != f[k]) continue; /* no gradient */
    char tag[160];
    snprintf(tag, sizeof tag, "underflow/%s", mixp_module_parameter_name(t->m->zoo, k));
    run_log_scalar(t->log, tag, step, f[k]);
    mean += f[k];
    ++counted;
    if (f[k] > worst) worst = f[k], worst_k = k;
  }
  if (counted == 0) return;
  printf("step %lld: gradient underflow in %s: mean %.2f%% of elements, most in %s (%.2f%%)\n", (long long)step,
         low == MIXP_F16 ? "f16" : "bf16", 100.0 * mean / counted, mixp_module_parameter_name(t->m->zoo, worst_k),
         100.0 * worst);
  fflush(stdout);
}

double current_scale(const mixp_grad_scaler *sc) {
  double v = 1.0;
  CHECK(mixp_grad_scaler_get_scale(sc, &v));
  return v;
}

double recent_loss(const trainer *t) {
  const int64_t n = t->p.steps < 10 ? t->p.steps : 10;
  double sum = 0;
  for (int64_t i = 0; i < n; ++i) sum += t->p.recent[i];
  return n > 0 ? sum / (double)n : 0.0;
}

void save_checkpoint(const trainer *t) {
  /* Every rank holds the same parameters, optimizer and scaler state (bit
   * for bit) and the same progress: rank 0's file is the run's. */
  if (t->rank == 0) {
    train_state ts = {t->s, t->m, t->opt, t->scaler, t->loader, t->a, t->data_name, t->world};
    state_save(&ts, &t->p, t->a->save_path);
    printf("checkpoint: saved %s at step %" PRId64 "\n", t->a->save_path, t->p.steps);
    fflush(stdout);
  }
  /* No rank goes on (or ends) before the file is complete. */
  if (t->dist) CHECK(mixp_dist_barrier(t->dist));
}

/* ---- data parallelism ------------------------------------------------------------ */

/* The global batch's mean loss: the ranks' sum of loss * samples over their
 * sum of samples, reduced on the device in fp64, so that reading it is the
 * one host transfer the single-process step makes for its loss. Returns the
 * loss; *samples receives the global batch size. Every rank gets the same
 * bits (the sum runs in rank order); with one rank it is the loss itself
 * (loss * b / b is exact in fp64). */
static double global_loss(const trainer *t, const mixp_tensor *loss, int64_t b, int64_t *samples) {
  const int64_t one[1] = {1};
  mixp_tensor *l64 = NULL, *flat = NULL, *weighted = NULL, *count = NULL, *pair = NULL;
  CHECK(mixp_no_grad_begin(t->s));
  CHECK(mixp_cast(loss, MIXP_F64, &l64));
  CHECK(mixp_reshape(l64, one, 1, &flat));
  CHECK(mixp_mul_scalar(flat, (double)b, &weighted));
  CHECK(mixp_tensor_full(t->s, MIXP_F64, one, 1, (double)b, &count));
  const mixp_tensor *parts[2] = {weighted, count};
  CHECK(mixp_cat(parts, 2, 0, &pair));
  CHECK(mixp_no_grad_end(t->s));
  CHECK(mixp_dist_all_reduce(t->dist, pair, MIXP_REDUCE_SUM));
  double v[2] = {0, 0};
  CHECK(mixp_tensor_to_host(pair, v, sizeof v));
  mixp_tensor *tmp[] = {l64, flat, weighted, count, pair};
  for (int i = 0; i < 5; ++i) mixp_tensor_release(tmp[i]);
  *samples = (int64_t)v[1];
  return v[0] / v[1];
}

/* ---- --profile ---------------------------------------------------------------- */

static void write_profile(trainer *t) {
  mixp_profile *prof = NULL;
  CHECK(mixp_profile_end(t->s, &prof));
  printf("\nprofile of batch 3 (%s):\n%s", t->a->profile_path, mixp_profile_report(prof, 20));
  if (mixp_profile_write_trace(prof, t->a->profile_path) != MIXP_OK) die_mixp("--profile");
  mixp_profile_destroy(prof);
  fflush(stdout);
}

/* ---- one batch --------------------------------------------------------------- */

static double end_step(trainer *t, double lv);

/* One micro-batch; returns its loss (the global batch's under --dist) and
 * its size (over all ranks) in *samples. */
static double train_step(trainer *t, const mixp_tensor *x, const mixp_tensor *y, int64_t *samples) {
  const args *a = t->a;
  train_progress *p = &t->p;
  double glv = 0;
  if (a->graph && graph_step(t, x, y, &glv)) {
    int found_inf = 0;
    CHECK(mixp_grad_scaler_found_inf(t->scaler, &found_inf));
    p->skipped += found_inf != 0;
    *samples = mixp_tensor_dim(y, 0);
    return end_step(t, glv);
  }
  const int first = p->micro % a->accum_steps == 0;
  const int last = (p->micro + 1) % a->accum_steps == 0;
  const int64_t b = mixp_tensor_dim(y, 0);
  if (first) {
    CHECK(mixp_optimizer_zero_grad(t->opt));
    t->step_samples = 0;
  }
  t->step_samples += b;
  /* --op-stats: the ops of the first batch's forward, backward and step. */
  const int count_ops = a->op_stats && p->steps == 0;
  if (count_ops) CHECK(mixp_session_op_stats_start(t->s));
  /* --profile: the third step, once the first two have warmed up the
   * kernels' plans and caches (only rank 0 writes the file). */
  const int profiled = a->profile_path && p->steps == 2 && t->rank <= 0;
  if (profiled) CHECK(mixp_profile_begin(t->s));
  if (t->amp_on) CHECK(mixp_autocast_push(t->s, &t->autocast));
  mixp_tensor *logits = model_forward(t->m, x);
  mixp_tensor *loss = model_loss(t->m, logits, y, 1);
  if (t->amp_on) CHECK(mixp_autocast_pop(t->s));
  double lv = 0;
  *samples = b;
  if (t->dist) lv = global_loss(t, loss, b, samples);
  else CHECK(mixp_tensor_item(loss, &lv));
  /* The accumulated gradient is that of the mean over the N batches. */
  mixp_tensor *objective = loss, *scaled = NULL;
  if (a->accum_steps > 1) CHECK(mixp_mul_scalar(loss, 1.0 / a->accum_steps, &objective));
  CHECK(mixp_grad_scaler_scale(t->scaler, objective, &scaled));
  /* --dist: every rank's gradients become the global batch's (each rank
   * weighed by its samples in this step), before they are unscaled,
   * clipped or applied; overflow skips are agreed on from here. The last
   * micro-batch's backward already reduces the buckets whose gradients are
   * final (on CUDA beside the rest of backward). */
  if (last && t->dist) CHECK(mixp_dist_prepare_gradients(t->dist, t->opt, t->step_samples));
  CHECK(mixp_backward(scaled, NULL));
  if (last && t->dist) CHECK(mixp_dist_average_gradients(t->dist, t->opt, t->step_samples));
  if (last && a->underflow_stats && (p->steps + 1) % a->log_every == 0) underflow_stats(t, p->steps + 1);
  if (last) {
    if (a->clip_norm > 0) {
      CHECK(mixp_grad_scaler_unscale(t->scaler, t->opt)); /* clip the true gradients */
      CHECK(mixp_clip_grad_norm(t->opt, a->clip_norm, NULL));
    }
    CHECK(mixp_grad_scaler_step(t->scaler, t->opt));
    CHECK(mixp_grad_scaler_update(t->scaler));
    int found_inf = 0;
    CHECK(mixp_grad_scaler_found_inf(t->scaler, &found_inf));
    p->skipped += found_inf != 0;
    if (found_inf && a->explain_overflow) explain_overflow(t, p->steps + 1);
  }
  if (count_ops) {
    CHECK(mixp_session_op_stats_stop(t->s));
    printf("op stats (first step):\n%s", mixp_session_op_stats_report(t->s));
    fflush(stdout);
  }
  if (profiled) write_profile(t);
  if (objective != loss) mixp_tensor_release(objective);
  mixp_tensor_release(scaled);
  mixp_tensor_release(loss);
  mixp_tensor_release(logits);
  return end_step(t, lv);
}

/* The progress and logs of a finished micro-batch of loss lv. */
static double end_step(trainer *t, double lv) {
  const args *a = t->a;
  train_progress *p = &t->p;
  p->micro++;
  if (p->steps == 0) p->first_loss = lv;
  p->recent[p->steps % 10] = lv;
  p->steps++;
  if (t->log && p->steps % a->log_every == 0) {
    run_log_scalar(t->log, "train/loss", p->steps, lv);
    run_log_scalar(t->log, "amp/loss_scale", p->steps, current_scale(t->scaler));
  }
  return lv;
}

/* ---- one epoch --------------------------------------------------------------- */

static void progress_bar(int epoch, int epochs, int64_t done, int64_t total, double loss,
                         double rate) {
  char bar[31];
  int filled = total > 0 ? (int)(30 * done / total) : 30;
  for (int i = 0; i < 30; ++i) bar[i] = i < filled ? '#' : '.';
  bar[30] = '\0';
  printf("\r\033[Kepoch %d/%d [%s] %" PRId64 "/%" PRId64 " loss %.4f %.0f samples/s", epoch,
         epochs, bar, done, total, loss, rate);
  fflush(stdout);
}

epoch_stats train_epoch(trainer *t, int epoch, int tty) {
  const args *a = t->a;
  train_progress *p = &t->p;
  epoch_stats r = {0, 0, 0};
  int64_t batches = mixp_loader_num_batches(t->loader);
  /* ceil(limit / global batch), written so that a limit near INT64_MAX
   * cannot overflow (the global batch is --batch times the ranks) */
  const int64_t global_batch = a->batch * t->world;
  if (a->limit_train > 0)
    batches = min64(batches, a->limit_train / global_batch + (a->limit_train % global_batch != 0));
  double t0 = now_s(), last_draw = 0;
  p->epoch = epoch;
  const int64_t samples0 = p->samples; /* > 0 in a resumed epoch */
  mixp_tensor *x = NULL, *y = NULL;
  mixp_status st = MIXP_DONE;
  while ((st = mixp_loader_next(t->loader, &x, &y)) == MIXP_OK) {
    if (p->done < batches) {
      int64_t b = 0;
      const double lv = train_step(t, x, y, &b);
      p->loss_sum += lv * (double)b;
      p->samples += b;
      ++p->done;
      const double now = now_s();
      if (tty && (now - last_draw > 0.1 || p->done == batches)) {
        progress_bar(epoch, a->epochs, p->done, batches, p->loss_sum / (double)p->samples,
                     (double)(p->samples - samples0) / (now - t0));
        last_draw = now;
      }
      if (a->save_every > 0 && p->steps % a->save_every == 0) save_checkpoint(t);
      if (a->max_steps > 0 && p->steps >= a->max_steps) {
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
  if (st != MIXP_DONE) die_mixp("reading the next training batch");
  if (tty) printf("\r\033[K");
  r.seconds = now_s() - t0;
  r.samples = p->samples - samples0;
  r.loss = p->samples > 0 ? p->loss_sum / (double)p->samples : 0.0;
  if (!t->stop) { /* the epoch is over: a checkpoint resumes at the next */
    p->epoch = epoch + 1;
    p->done = 0;
    p->loss_sum = 0;
    p->samples = 0;
  }
  return r;
}

/* ---- evaluation -------------------------------------------------------------- */

/* --dist: the ranks' models must agree on their buffers too (batch norm's
 * running statistics follow each rank's own batches): rank 0's are the
 * run's, the ones its checkpoints hold. Parameters are equal already. */
static void agree_on_buffers(const trainer *t) {
  const int n = mixp_module_num_buffers(t->m->zoo);
  for (int i = 0; i < n; ++i) {
    mixp_tensor *buf = NULL;
    CHECK(mixp_module_buffer(t->m->zoo, i, &buf));
    CHECK(mixp_dist_broadcast(t->dist, buf, 0));
    mixp_tensor_release(buf);
  }
}

double evaluate(const trainer *t, mixp_dataset *test, int64_t limit) {
  const model *m = t->m;
  const mixp_autocast_options *ac = t->amp_on ? &t->autocast : NULL;
  const int64_t batch = m->is_gpt ? 64 : EVAL_BATCH;
  mixp_loader_options lo;
  mixp_loader_options_init(&lo);
  lo.batch_size = batch;
  lo.shuffle = 0;
  /* --dist with several ranks: each rank evaluates its shard of the first
   * samples a single process would evaluate (the first `limit`, or for a
   * language model the whole batches that cover them) and the counts are
   * summed; without enough samples for every rank, every rank evaluates
   * them all (the same model on the same data: the same result). */
  mixp_dataset *subset = NULL;
  int sharded = 0;
  if (t->dist && t->world > 1) {
    agree_on_buffers(t);
    const int64_t size = mixp_dataset_size(test);
    int64_t n = size;
    if (limit > 0 && limit < size) n = m->is_gpt ? min64(size, (limit / batch + (limit % batch != 0)) * batch) : limit;
    if (n >= t->world) {
      if (n < size) CHECK(mixp_dataset_subset(test, 0, n, &subset));
      lo.shard_index = t->rank;
      lo.shard_count = t->world;
      sharded = 1;
      limit = 0; /* the subset is the limit */
    }
  }
  mixp_loader *loader = NULL;
  CHECK(mixp_loader_create(subset ? subset : test, &lo, &loader));
  mixp_dataset_destroy(subset); /* the loader keeps it */
  model_set_training(m, 0);
  CHECK(mixp_no_grad_begin(t->s));
  int64_t seen = 0, correct = 0;
  double loss_sum = 0;
  /* a shard's batch is one sample longer when the tail joins the last batch */
  int64_t pred[EVAL_BATCH + 1], label[EVAL_BATCH + 1];
  mixp_tensor *x = NULL, *y = NULL;
  mixp_status st = MIXP_DONE;
  while ((limit <= 0 || seen < limit) && (st = mixp_loader_next(loader, &x, &y)) == MIXP_OK) {
    int64_t b = mixp_tensor_dim(y, 0);
    int64_t use = limit > 0 ? min64(b, limit - seen) : b;
    /* an O2 model has half weights and is evaluated under the same policy */
    if (ac) CHECK(mixp_autocast_push(t->s, ac));
    mixp_tensor *logits = model_forward(m, x);
    if (ac) CHECK(mixp_autocast_pop(t->s));
    if (m->is_gpt) {
      /* Whole batches only: the mean is per token, batches are equal-sized
       * but for the last one, which is weighted by its size. */
      mixp_tensor *loss = model_loss(m, logits, y, 0);
      double lv = 0;
      CHECK(mixp_tensor_item(loss, &lv));
      loss_sum += lv * (double)b;
      use = b;
      mixp_tensor_release(loss);
    } else {
      if (b > EVAL_BATCH + 1) {
        fprintf(stderr, "mixp-train: internal error: an evaluation batch of %" PRId64 " samples\n", b);
        exit(1);
      }
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
  if ((limit <= 0 || seen < limit) && st != MIXP_DONE) die_mixp("reading the next test batch");
  CHECK(mixp_no_grad_end(t->s));
  model_set_training(m, 1);
  mixp_loader_destroy(loader);
  if (sharded) { /* the ranks' sums, exact for the counts (< 2^53) */
    double v[3] = {(double)seen, (double)correct, loss_sum};
    const int64_t three[1] = {3};
    mixp_tensor *sums = NULL;
    CHECK(mixp_tensor_from_host(t->s, v, sizeof v, MIXP_F64, three, 1, &sums));
    CHECK(mixp_dist_all_reduce(t->dist, sums, MIXP_REDUCE_SUM));
    CHECK(mixp_tensor_to_host(sums, v, sizeof v));
    mixp_tensor_release(sums);
    seen = (int64_t)v[0];
    correct = (int64_t)v[1];
    loss_sum = v[2];
  }
  if (seen == 0) return 0.0;
  return m->is_gpt ? loss_sum / (double)seen : (double)correct / (double)seen;
}
