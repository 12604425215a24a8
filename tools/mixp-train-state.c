/* mixp-train's checkpoints: --save, --save-every and --resume through
 * mixp_state_save/mixp_state_load. The file holds the model, optimizer,
 * scaler, loader and RNG state, plus the run's own counters as the extra
 * F64 tensor "mixp_train.progress", and the configuration as JSON in the
 * "user" metadata; resuming with another configuration is refused. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mixp-train.h"

#define PROGRESS_FIELDS 18
#define CONFIG_JSON 4096

static const char *const progress_name = "mixp_train.progress";

/* Appends s as a JSON string literal. */
static void json_str(char *out, size_t cap, const char *s) {
  size_t n = strlen(out);
  if (n + 2 >= cap) return;
  out[n++] = '"';
  for (; *s && n + 8 < cap; ++s) {
    unsigned char c = (unsigned char)*s;
    if (c == '"' || c == '\\') {
      out[n++] = '\\';
      out[n++] = (char)c;
    } else if (c < 0x20) {
      n += (size_t)snprintf(out + n, cap - n, "\\u%04x", c);
    } else {
      out[n++] = (char)c;
    }
  }
  out[n++] = '"';
  out[n] = '\0';
}

/* What must match between the saving and the resuming run: the model, the
 * data, the precision and loss-scale mode, the optimizer and the batch. */
static void config_json(const train_state *ts, char *out, size_t cap) {
  const args *a = ts->a;
  static const char *const scale_modes[] = {"auto", "dynamic", "static", "off"};
  char amp[32];
  if (a->amp_level == MIXP_AMP_O0) snprintf(amp, sizeof amp, "O0");
  else snprintf(amp, sizeof amp, "O%d %s", (int)a->amp_level, a->amp_dtype == MIXP_F16 ? "f16" : "bf16");
  out[0] = '\0';
  strcat(out, "{\"tool\":\"mixp-train\",\"model\":");
  json_str(out, cap, ts->m->config);
  strcat(out, ",\"data\":");
  json_str(out, cap, ts->data_name);
  strcat(out, ",\"amp\":");
  json_str(out, cap, amp);
  strcat(out, ",\"loss_scale\":");
  json_str(out, cap, scale_modes[mixp_grad_scaler_mode(ts->scaler)]);
  size_t n = strlen(out);
  snprintf(out + n, cap - n,
           ",\"optimizer\":\"%s\",\"batch\":%" PRId64 ",\"accum_steps\":%d,\"checkpoint_activations\":%d}",
           a->adamw ? "adamw" : "sgd", a->batch, a->accum_steps, a->checkpoint_activations);
}

/* The spec's arrays point into this. */
typedef struct handles {
  mixp_module *module;
  mixp_optimizer *opt;
  mixp_grad_scaler *scaler;
  mixp_loader *loader;
  mixp_tensor *progress;
} handles;

static void spec_of(const train_state *ts, mixp_tensor *progress, handles *h, mixp_state_spec *spec) {
  h->module = ts->m->zoo;
  h->opt = ts->opt;
  h->scaler = ts->scaler;
  h->loader = ts->loader;
  h->progress = progress;
  mixp_state_spec_init(spec);
  spec->modules = &h->module;
  spec->num_modules = 1;
  spec->optimizers = &h->opt;
  spec->num_optimizers = 1;
  spec->scalers = &h->scaler;
  spec->num_scalers = 1;
  spec->loaders = &h->loader;
  spec->num_loaders = 1;
  spec->tensors = &h->progress;
  spec->tensor_names = &progress_name;
  spec->num_tensors = 1;
}

void state_save(const train_state *ts, const train_progress *p, const char *path) {
  double v[PROGRESS_FIELDS] = {(double)p->epoch, (double)p->done, p->loss_sum, (double)p->samples,
                               (double)p->steps, (double)p->micro, (double)p->skipped, p->first_loss};
  memcpy(v + 8, p->recent, sizeof p->recent);
  int64_t shape[1] = {PROGRESS_FIELDS};
  mixp_tensor *progress = NULL;
  CHECK(mixp_tensor_from_host(ts->s, v, sizeof v, MIXP_F64, shape, 1, &progress));
  char config[CONFIG_JSON];
  config_json(ts, config, sizeof config);
  mixp_state_spec spec;
  handles h;
  spec_of(ts, progress, &h, &spec);
  spec.step = p->steps;
  spec.user_metadata = config;
  CHECK(mixp_state_save(ts->s, path, &spec));
  mixp_tensor_release(progress);
}

void state_resume(const train_state *ts, train_progress *p, const char *path) {
  char saved[CONFIG_JSON], now[CONFIG_JSON];
  size_t len = 0;
  if (mixp_state_read_metadata(path, "user", saved, sizeof saved, &len) != MIXP_OK)
    die_mixp("--resume");
  config_json(ts, now, sizeof now);
  if (strcmp(saved, now) != 0) {
    fprintf(stderr,
            "mixp-train: --resume %s: the checkpoint was saved by another configuration\n"
            "  saved: %s\n  now:   %s\n",
            path, saved, now);
    exit(1);
  }
  int64_t shape[1] = {PROGRESS_FIELDS};
  mixp_tensor *progress = NULL;
  CHECK(mixp_tensor_zeros(ts->s, MIXP_F64, shape, 1, &progress));
  mixp_state_spec spec;
  handles h;
  spec_of(ts, progress, &h, &spec);
  CHECK(mixp_state_load(ts->s, path, &spec, NULL));
  double v[PROGRESS_FIELDS];
  CHECK(mixp_tensor_to_host(progress, v, sizeof v));
  mixp_tensor_release(progress);
  p->epoch = (int64_t)v[0];
  p->done = (int64_t)v[1];
  p->loss_sum = v[2];
  p->samples = (int64_t)v[3];
  p->steps = (int64_t)v[4];
  p->micro = (int64_t)v[5];
  p->skipped = (int64_t)v[6];
  p->first_loss = v[7];
  memcpy(p->recent, v + 8, sizeof p->recent);
}
