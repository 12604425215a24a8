/* mixp-train's training logs (see mixp-train-log.h). A failed write is
 * fatal: a run whose logs silently stopped would mislead whoever plots them. */
#define _POSIX_C_SOURCE 200809L
#include "mixp-train-log.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tfevents.h"

static FILE *csv;
static const char *csv_name;

static void die_io(const char *what, const char *path) {
  fprintf(stderr, "mixp-train: %s '%s': %s\n", what, path, strerror(errno));
  exit(1);
}

void train_logs_begin(const char *csv_path) {
  if (!csv_path) return;
  csv_name = csv_path;
  csv = fopen(csv_path, "w");
  if (!csv) die_io("--csv: cannot create", csv_path);
  if (fputs("run,tag,step,value,wall_time\n", csv) < 0) die_io("--csv: cannot write", csv_path);
}

void train_logs_end(void) {
  if (!csv) return;
  if (ferror(csv) | fclose(csv)) die_io("--csv: cannot write", csv_name);
  csv = NULL;
}

struct run_log {
  tfevents_writer *events;
  char path[4096]; /* the event file, for messages */
  char run[64];
};

run_log *run_log_open(const char *logdir, int subdir, const char *run) {
  if (!logdir && !csv) return NULL;
  run_log *l = calloc(1, sizeof *l);
  if (!l) {
    fprintf(stderr, "mixp-train: out of memory\n");
    exit(1);
  }
  snprintf(l->run, sizeof l->run, "%s", run);
  if (logdir) {
    char dir[4096];
    if (subdir)
      snprintf(dir, sizeof dir, "%s/%s", logdir, run);
    else
      snprintf(dir, sizeof dir, "%s", logdir);
    l->events = tfevents_open(dir, l->path, sizeof l->path);
    if (!l->events) die_io("--logdir: cannot create", l->path);
  }
  return l;
}

static double wall_time_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

void run_log_scalar(run_log *l, const char *tag, int64_t step, double value) {
  if (!l) return;
  /* TensorBoard keeps float32: the CSV gets the same float32, printed with
   * the 9 significant digits that round-trip it. */
  const float v = (float)value;
  if (l->events && tfevents_add_scalar(l->events, tag, step, v) != 0)
    die_io("--logdir: cannot write", l->path);
  if (csv && fprintf(csv, "%s,%s,%lld,%.9g,%.6f\n", l->run, tag, (long long)step, (double)v,
                     wall_time_now()) < 0)
    die_io("--csv: cannot write", csv_name);
}

void run_log_flush(run_log *l) {
  if (!l) return;
  if (l->events && tfevents_flush(l->events) != 0) die_io("--logdir: cannot write", l->path);
  if (csv && fflush(csv) != 0) die_io("--csv: cannot write", csv_name);
}

void run_log_close(run_log *l) {
  if (!l) return;
  run_log_flush(l);
  if (l->events && tfevents_close(l->events) != 0) die_io("--logdir: cannot write", l->path);
  free(l);
}
