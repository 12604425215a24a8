/* Shared declarations of mixp-train's files. Public API only. The files call
 * downwards only: mixp-train.c (main, a run's setup and report) uses the
 * step (mixp-train-step.c), the models and data (mixp-train-model.c), the
 * checkpoints (mixp-train-state.c) and the logs (mixp-train-log.c); all of
 * them use the command line and errors of mixp-train-cli.c. */
#ifndef MIXP_TRAIN_H
#define MIXP_TRAIN_H

#include <stdint.h>
#include <stdio.h>

#include "mixp/mixp.h"
#include "mixp-train-log.h"

#define MAX_HIDDEN 16
#define MAX_CONFIG 1024

typedef enum data_kind {
  DATA_FASHION_MNIST,   /* falls back to DATA_SYNTHETIC when not installed */
  DATA_SYNTHETIC,       /* synthetic 1x28x28 images, like Fashion-MNIST */
  DATA_SYNTHETIC_IMAGES, /* synthetic-images:CxHxW */
  DATA_TEXT             /* text:PATH, character level (gpt) */
} data_kind;

/* --dist: how the ranks of a data-parallel run find each other. */
typedef enum dist_kind {
  DIST_NONE = 0,   /* one process, no communicator (default) */
  DIST_MPI = 1,    /* --dist / --dist mpi: the mpirun world (MIXP_DIST_MPI) */
  DIST_SINGLE = 2  /* --dist single: a world of one without MPI (MIXP_DIST_SINGLE) */
} dist_kind;

typedef struct args {
  const char *model; /* mlp, cnn, resnet18, ..., gpt */
  const char *model_config;
  const char *data;
  data_kind data_kind;
  int64_t image_c, image_h, image_w; /* DATA_SYNTHETIC_IMAGES */
  const char *text_path;             /* DATA_TEXT */
  int64_t block_size;
  const char *data_dir;
  int checkpoint_activations;
  int channels_last; /* --channels-last: the zoo key channels_last=1 */
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
  /* Mixed precision. */
  mixp_amp_level amp_level;     /* --amp O0|O1|O2 */
  mixp_dtype amp_dtype;         /* --amp-dtype f16|bf16 (default bf16) */
  mixp_scaler_mode loss_scale;  /* --loss-scale dynamic|static:N|off (default: by dtype) */
  double static_scale;          /* the N of static:N */
  double init_scale;            /* --init-scale (default 65536) */
  double clip_norm;             /* --clip-norm (0: off) */
  double label_smoothing;       /* --label-smoothing, in [0, 1] (0: off) */
  int op_stats;                 /* --op-stats: the first step's op table */
  const char *profile_path;     /* --profile FILE: the third batch's Chrome trace and top-20 table */
  int explain_overflow;         /* --explain-overflow: name the non-finite gradients of a skipped step */
  int accum_steps;              /* --accum-steps (default 1) */
  int master_weights;           /* --master-weights on|off: O2's fp32 masters (default on) */
  int master_weights_set;
  int stochastic_rounding;      /* --stochastic-rounding: bf16 parameters without masters */
  mixp_dtype optimizer_state;   /* --optimizer-state f32|bf16 (default f32) */
  mixp_numerics_mode check_numerics; /* --check-numerics off|warn|error */
  const char *check_ops;        /* --check-ops a,b: check only these ops */
  const char *skip_ops;         /* --skip-ops a,b: never check these */
  int64_t check_from, check_to; /* --check-steps A:B (to -1: no end) */
  int check_steps_set;
  int check_fp16_overflow;      /* --check-fp16-overflow */
  mixp_low_scale_action low_scale; /* --low-scale ignore|warn|error */
  int underflow_stats;          /* --underflow-stats: per-parameter gradient underflow every --log-every steps */
  int compare;                  /* --compare: O0, O1 and O2 in one table */
  int compare_numerics;         /* --compare-numerics: the first batch op by op, O0 against --amp */
  double compare_tol;           /* --compare-tol: relative error that counts as divergent (default 0.05) */
  /* Training logs (mixp-train-log.h). */
  const char *logdir;           /* --logdir: TensorBoard event files */
  const char *csv_path;         /* --csv: the same scalars as CSV */
  int log_every;                /* --log-every: steps between loss points (default 10) */
  /* Checkpoints (mixp-train-state.c). */
  const char *save_path;        /* --save PATH */
  int64_t save_every;           /* --save-every N (0: only at the end) */
  const char *resume_path;      /* --resume PATH */
  int64_t max_steps;            /* --max-steps N (0: no limit) */
  /* Data parallelism (mixp_dist_*). */
  dist_kind dist;               /* --dist [mpi|single] */
  int graph;                    /* --graph: capture the step once, replay it (mixp-train-graph.c) */
} args;

/* ---- command line and errors (mixp-train-cli.c) ------------------------------ */

/* Fills `a` from the flags; exits 0 for --help, 2 (with the usage) for bad
 * flags or combinations. */
void parse_args(int argc, char **argv, args *a);
/* "O0", "O1", "O2" or "OD", as --amp spells it. */
const char *amp_level_name(mixp_amp_level level);
void usage(FILE *f);
void bad_usage(const char *fmt, ...);
/* Prints the library's message for a failed call (it names the function
 * and what was wrong), after `what` the tool was doing if not "", and exits 1. */
void die_mixp(const char *what);
/* This process's rank under --dist (set once the communicator exists; -1
 * before and without --dist): die_mixp names it, since every rank may fail. */
extern int g_train_rank;
#define CHECK(call)                        \
  do {                                     \
    if ((call) != MIXP_OK) die_mixp(""); \
  } while (0)

/* ---- data ------------------------------------------------------------------ */

/* Opens the train and held-out splits the flags ask for; returns the name of
 * what was loaded (Fashion-MNIST falls back to synthetic data when missing). */
const char *open_data(mixp_session *s, const args *a, mixp_dataset **train,
                      mixp_dataset **test);

/* ---- models ----------------------------------------------------------------- */

typedef struct model {
  int is_gpt; /* a language model: logits [B, T, V], targets [B, T] */
  double label_smoothing; /* of the training loss (evaluation uses none) */
  mixp_module *zoo;
  char zoo_config[MAX_CONFIG]; /* what mixp_model_create was given */
  char config[MAX_CONFIG]; /* what is printed: the zoo configuration, or the
                              MLP's summary such as "mlp 784-256-128-10" */
} model;

/* Builds the model for data samples of `sample_shape` with `classes`
 * classes (the vocabulary size for text); with --checkpoint-activations
 * the zoo model runs each of its blocks in a checkpoint region of its own
 * (config key checkpoint=1). Exits 2 for a bad --model-config that the flags
 * alone can tell, 1 when the library refuses it. */
void model_create(mixp_session *s, const args *a, const int64_t *sample_shape, int ndim,
                  int64_t classes, model *m);
void model_destroy(model *m);
/* Parameters (new references) into `out` (capacity `cap`); returns the count. */
int model_parameters(const model *m, mixp_tensor **out, int cap);
/* Logits of a batch (owned). */
mixp_tensor *model_forward(const model *m, const mixp_tensor *x);
void model_set_training(const model *m, int training);
/* Mean cross-entropy of logits against targets (token level for gpt), with
 * the model's label smoothing when `training`. */
mixp_tensor *model_loss(const model *m, const mixp_tensor *logits, const mixp_tensor *y, int training);

/* ---- checkpoints (mixp-train-state.c) ----------------------------------------- */

/* Where the run is, beyond what the library objects hold. */
typedef struct train_progress {
  int64_t epoch;      /* the 1-based epoch to continue (or start) */
  int64_t done;       /* batches of it already trained */
  double loss_sum;    /* of those batches, weighted by batch size */
  int64_t samples;    /* (under --dist both over all ranks: the global batches) */
  int64_t steps, micro, skipped;
  double first_loss;
  double recent[10];
} train_progress;

typedef struct train_state {
  mixp_session *s;
  const model *m;
  mixp_optimizer *opt;
  mixp_grad_scaler *scaler;
  mixp_loader *loader;
  const args *a;
  const char *data_name;
  int world; /* ranks of the run (1 without --dist): part of the configuration */
} train_state;

/* Saves everything (mixp_state_save) with the run's configuration and
 * progress as JSON metadata; exits 1 on failure. */
void state_save(const train_state *ts, const train_progress *p, const char *path);
/* Restores a state saved by state_save into the objects of `ts`, after
 * checking that the file was saved with the same configuration; exits 1
 * (with both configurations printed) when it was not. */
void state_resume(const train_state *ts, train_progress *p, const char *path);
/* Exits 1, before any training, when --save's target cannot be written. */
void state_check_path(const char *path);

/* ---- the training step and loops (mixp-train-step.c) ----------------------------- */

/* --graph's captured step and its static inputs (mixp-train-graph.c). */
typedef struct graph_run {
  mixp_graph *graph;
  mixp_tensor *x, *y, *loss;
} graph_run;

typedef struct trainer {
  const model *m;
  mixp_optimizer *opt;
  mixp_session *s;
  const args *a;
  /* Mixed precision: the autocast region of each forward (when amp_on), the
   * loss scaler (mode DISABLED for O0 and bf16: a plain optimizer step). */
  int amp_on;
  mixp_autocast_options autocast;
  mixp_grad_scaler *scaler;
  mixp_loader *loader;
  const char *data_name;
  run_log *log;      /* NULL without --logdir and --csv (and on ranks other than 0) */
  /* Data parallelism (--dist): the communicator (NULL without --dist), this
   * process's rank and the number of ranks. Every rank trains its shard of
   * each global batch of world * --batch samples. */
  mixp_dist *dist;
  int rank, world;
  int64_t step_samples; /* this rank's samples in the micro-batches of the current step */
  train_progress p;  /* where the run is: what a checkpoint holds */
  int stop;          /* --max-steps reached */
  graph_run graph;   /* --graph */
} trainer;

/* --graph: runs the step on (x, y) by replaying the captured step (capturing
 * it first, on the second step) and writes its loss; returns 0, having done
 * nothing, for the warm-up step or a batch of another shape (run them eagerly). */
int graph_step(trainer *t, const mixp_tensor *x, const mixp_tensor *y, double *loss);
void graph_release(trainer *t);

typedef struct epoch_stats {
  double loss;
  int64_t samples; /* over all ranks under --dist */
  double seconds;
} epoch_stats;

double now_s(void);
/* Trains epoch `epoch` (from where t->p says it is, when resumed). */
epoch_stats train_epoch(trainer *t, int epoch, int tty);
/* Accuracy of a classifier, or the mean token loss of a language model, on
 * at most `limit` samples (all when 0). Under --dist the ranks share the
 * samples and sum their counts: every rank returns the same value. */
double evaluate(const trainer *t, mixp_dataset *test, int64_t limit);
/* Rank 0 writes the checkpoint (--save), then every rank waits for it. */
void save_checkpoint(const trainer *t);
double current_scale(const mixp_grad_scaler *sc);
/* The mean loss of the last (up to ten) steps. */
double recent_loss(const trainer *t);

#endif /* MIXP_TRAIN_H */
