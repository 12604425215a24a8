/* What the two halves of mixp-bench share: mixp-bench.c (the CPU workloads
 * and the command line) and mixp-bench-gpu.c (the --device cuda workloads). */
#ifndef MIXP_BENCH_H
#define MIXP_BENCH_H

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "mixp/mixp.h"

/* A benchmark has no way to go on after a failed call: say which and stop. */
#define CHECK(call)                                                              \
  do {                                                                           \
    if ((call) != MIXP_OK) {                                                     \
      fprintf(stderr, "mixp-bench: %s failed: %s\n", #call, mixp_last_error()); \
      exit(1);                                                                   \
    }                                                                            \
  } while (0)

/* Monotonic wall-clock seconds. */
static inline double bench_now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* The interpreter that runs the PyTorch references: `given` (--python) if
 * set, else $MIXP_BENCH_PYTHON, else the first python3 on PATH whose torch
 * is 2.x or later; NULL when the chosen one has no torch >= 2.0. May return
 * buf (size bytes). */
const char *bench_find_python(const char *given, char *buf, size_t size);

/* The --device cuda[:N] workloads (mixp-bench-gpu.c). */
int bench_gpu_main(int argc, char **argv);

#endif
