/* Finding and naming the Python that runs the PyTorch references, for both
 * sides of mixp-bench: the CPU workloads (mixp-bench.c) and the --device
 * cuda ones (mixp-bench-gpu.c). Its own file so that those two depend on it
 * and not on each other (mixp-bench.c only hands --device cuda over to
 * bench_gpu_main). */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mixp-bench.h"

/* Whether `python` imports a torch whose major version is at least min_major
 * (Debian's python3-torch is 1.13, whose fp32 path is OpenBLAS: it would
 * flatter mixp in a timed comparison). */
static int has_torch(const char *python, int min_major) {
  char cmd[1200];
  snprintf(cmd, sizeof cmd,
           "'%s' -c 'import sys, torch; sys.exit(int(torch.__version__.split(\".\")[0]) < %d)' >/dev/null 2>&1",
           python, min_major);
  return system(cmd) == 0;
}

const char *bench_find_python(const char *given, int min_major, char *buf, size_t size) {
  if (given && *given) return has_torch(given, min_major) ? given : NULL;
  const char *env = getenv("MIXP_BENCH_PYTHON");
  if (env && *env) return has_torch(env, min_major) ? env : NULL;
  const char *path = getenv("PATH");
  if (!path) return NULL;
  /* The first python3 on PATH with such a torch. */
  while (*path) {
    const char *end = strchr(path, ':');
    const size_t len = end ? (size_t)(end - path) : strlen(path);
    if (len > 0 && len + 9 < size && !memchr(path, '\'', len)) {
      snprintf(buf, size, "%.*s/python3", (int)len, path);
      if (access(buf, X_OK) == 0 && has_torch(buf, min_major)) return buf;
    }
    path += len + (end ? 1 : 0);
  }
  return NULL;
}

void bench_print_torch(const char *python) {
  char cmd[1200];
  snprintf(cmd, sizeof cmd, "'%s' -c 'import torch; print(\"PyTorch\", torch.__version__, \"from\", torch.__file__)'",
           python);
  fflush(stdout);
  if (system(cmd) != 0) printf("(could not print the PyTorch version)\n");
}
