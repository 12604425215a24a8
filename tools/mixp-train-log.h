/* mixp-train's training logs: TensorBoard event files (--logdir, written by
 * tfevents.c) and a CSV of the same scalars (--csv). Both are optional; with
 * neither flag every function here does nothing. */
#ifndef MIXP_TRAIN_LOG_H
#define MIXP_TRAIN_LOG_H

#include <stdint.h>

/* Opens the CSV (when `csv_path` is not NULL) and writes its header line
 * run,tag,step,value,wall_time. Exits 1 with a message when it cannot. */
void train_logs_begin(const char *csv_path);
/* Closes the CSV; exits 1 if any write to it failed. */
void train_logs_end(void);

typedef struct run_log run_log;

/* Starts the logs of one run named `run` (the CSV's run column): an event
 * file in `logdir`, or in logdir/<run> when `subdir` (--compare puts each AMP
 * level in a directory of its own, which TensorBoard shows as its own run).
 * NULL when there is nothing to log; exits 1 when the directory or the file
 * cannot be created. */
run_log *run_log_open(const char *logdir, int subdir, const char *run);
/* One scalar point (stored as float32 in both outputs). NULL is a no-op. */
void run_log_scalar(run_log *l, const char *tag, int64_t step, double value);
/* Hands what was logged to the operating system (each epoch). */
void run_log_flush(run_log *l);
/* Flushes and closes; exits 1 if any write failed. NULL is a no-op. */
void run_log_close(run_log *l);

#endif /* MIXP_TRAIN_LOG_H */
