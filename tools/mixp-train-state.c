#define _POSIX_C_SOURCE 200809L
/* mixp-train's checkpoints: --save, --save-every and --resume through
 * mixp_state_save/mixp_state_load. The file holds the model, optimizer,
 * scaler, loader and RNG state, and in the "user" metadata, as JSON, the
 * run's configuration and its own counters (exact, in hexadecimal floats):
 * {"config":{...},"progress":["0x1p+0",...]}. No tensor beyond the
 * library's, so the file also loads strictly as weights. Resuming with
 * another configuration is refused. Every value read back is checked before use:
 * the checksums guard against damage, not against a forged file. */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "mixp-train.h"

#define PROGRESS_FIELDS 18
#define CONFIG_JSON 4096
#define METADATA_JSON (CONFIG_JSON + 1024)

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
 * data, the precision and loss-scale mode, the optimizer, the batch and the
 * number of ranks. */
static void config_json(const train_state *ts, char *out, size_t cap) {
  const args *a = ts->a;
  static const char *const scale_modes[] = {"auto", "dynamic", "static", "off"};
  char amp[32];
  if (a->amp_level == MIXP_AMP_O0) snprintf(amp, sizeof amp, "O0");
  else snprintf(amp, sizeof amp, "%s %s", amp_level_name(a->amp_level), a->amp_dtype == MIXP_F16 ? "f16" : "bf16");
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
           ",\"optimizer\":\"%s\",\"batch\":%" PRId64 ",\"accum_steps\":%d,\"checkpoint_activations\":%d",
           a->adamw ? "adamw" : "sgd", a->batch, a->accum_steps, a->checkpoint_activations);
  /* --dist with several ranks: --batch is per rank, so the number of ranks
   * is part of the run (absent for one rank: those files are the same as a
   * single process's, and resume either way). */
  n = strlen(out);
  if (ts->world > 1) snprintf(out + n, cap - n, ",\"ranks\":%d", ts->world);
  n = strlen(out);
  snprintf(out + n, cap - n, "}");
}

/* The spec's arrays point into this. */
typedef struct handles {
  mixp_module *module;
  mixp_optimizer *opt;
  mixp_grad_scaler *scaler;
  mixp_loader *loader;
} handles;

static void spec_of(const train_state *ts, handles *h, mixp_state_spec *spec) {
  h->module = ts->m->zoo;
  h->opt = ts->opt;
  h->scaler = ts->scaler;
  h->loader = ts->loader;
  mixp_state_spec_init(spec);
  spec->modules = &h->module;
  spec->num_modules = 1;
  spec->optimizers = &h->opt;
  spec->num_optimizers = 1;
  spec->scalers = &h->scaler;
  spec->num_scalers = 1;
  spec->loaders = &h->loader;
  spec->num_loaders = 1;
}

/* {"config":CONFIG,"progress":[ */
static void metadata_prefix(const train_state *ts, char *out, size_t cap) {
  char config[CONFIG_JSON];
  config_json(ts, config, sizeof config);
  snprintf(out, cap, "{\"config\":%s,\"progress\":[", config);
}

static void progress_values(const train_progress *p, double v[PROGRESS_FIELDS]) {
  const double head[8] = {(double)p->epoch, (double)p->done, p->loss_sum, (double)p->samples,
                          (double)p->steps, (double)p->micro, (double)p->skipped, p->first_loss};
  memcpy(v, head, sizeof head);
  memcpy(v + 8, p->recent, sizeof p->recent);
}

void state_save(const train_state *ts, const train_progress *p, const char *path) {
  char meta[METADATA_JSON];
  metadata_prefix(ts, meta, sizeof meta);
  double v[PROGRESS_FIELDS];
  progress_values(p, v);
  for (int i = 0; i < PROGRESS_FIELDS; ++i) {
    const size_t n = strlen(meta);
    /* hexadecimal: exact, so that a resumed run continues bit for bit */
    snprintf(meta + n, sizeof meta - n, "%s\"%a\"", i ? "," : "", v[i]);
  }
  strncat(meta, "]}", sizeof meta - strlen(meta) - 1);
  mixp_state_spec spec;
  handles h;
  spec_of(ts, &h, &spec);
  spec.step = p->steps;
  spec.user_metadata = meta;
  CHECK(mixp_state_save(ts->s, path, &spec));
}

/* Reads the progress array that follows the prefix; 0 when it is not what
 * state_save writes. */
static int parse_progress(const char *s, double v[PROGRESS_FIELDS]) {
  for (int i = 0; i < PROGRESS_FIELDS; ++i) {
    if (i && *s++ != ',') return 0;
    if (*s++ != '"') return 0;
    char *end = NULL;
    v[i] = strtod(s, &end);
    if (end == s || *end != '"') return 0;
    s = end + 1;
  }
  return strcmp(s, "]}") == 0;
}

static void not_ours(const char *path, const char *why) {
  fprintf(stderr, "mixp-train: --resume %s: %s: the file is not a mixp-train checkpoint of this run\n", path,
          why);
  exit(1);
}

void state_resume(const train_state *ts, train_progress *p, const char *path) {
  char saved[METADATA_JSON], prefix[METADATA_JSON];
  size_t len = 0;
  if (mixp_state_read_metadata(path, "user", saved, sizeof saved, &len) != MIXP_OK)
    die_mixp("--resume");
  metadata_prefix(ts, prefix, sizeof prefix);
  if (strncmp(saved, prefix, strlen(prefix)) != 0) {
    fprintf(stderr,
            "mixp-train: --resume %s: the checkpoint was saved by another configuration\n"
            "  saved: %s\n  now:   %s...\n",
            path, saved, prefix);
    exit(1);
  }
  double v[PROGRESS_FIELDS];
  if (!parse_progress(saved + strlen(prefix), v)) not_ours(path, "its progress record is malformed");
  /* Counters: whole numbers in range, before any conversion to an integer. */
  const double max_count = 9007199254740992.0; /* 2^53: exact in a double */
  const double max_epoch = (double)ts->a->epochs + 1;
  static const char *const names[7] = {"epoch", "batch in epoch", "", "samples", "steps",
                                       "micro-batches", "skipped steps"};
  for (int i = 0; i < 7; ++i) {
    if (i == 2) continue; /* loss_sum: a float */
    const double lo = i == 0 ? 1 : 0, hi = i == 0 ? max_epoch : max_count;
    if (!(v[i] >= lo && v[i] <= hi) || v[i] != floor(v[i])) {
      char why[160];
      snprintf(why, sizeof why, "its %s (%g) is not a count in [%g, %g]", names[i], v[i], lo, hi);
      not_ours(path, why);
    }
  }
  /* every batch is one step and one micro-batch */
  if (v[5] != v[4] || v[6] > v[4] || v[1] > v[4]) not_ours(path, "its counters disagree");
  mixp_state_spec spec;
  handles h;
  spec_of(ts, &h, &spec);
  CHECK(mixp_state_load(ts->s, path, &spec, NULL));
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

void state_check_path(const char *path) {
  struct stat st;
  if (stat(path, &st) == 0 && S_ISDIR(st.st_mode)) {
    fprintf(stderr, "mixp-train: --save %s: is a directory\n", path);
    exit(1);
  }
  char dir[4096];
  const char *slash = strrchr(path, '/');
  if (!slash) snprintf(dir, sizeof dir, ".");
  else if (slash == path) snprintf(dir, sizeof dir, "/");
  else snprintf(dir, sizeof dir, "%.*s", (int)(slash - path), path);
  if (access(dir, W_OK | X_OK) != 0) {
    fprintf(stderr, "mixp-train: --save %s: cannot write in '%s': %s\n", path, dir, strerror(errno));
    exit(1);
  }
}
