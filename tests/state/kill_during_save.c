/* Crash safety of mixp_state_save: a child process saves a 16 MB state over
 * the same path again and again (version k holds the value k everywhere and
 * "k" as its user metadata); the parent kills it with SIGKILL at random
 * moments, 25 times, and after each kill loads the file: it must load, and
 * be one complete version no older than the last one seen.
 *
 * A kill during a save leaves its temporary file; the next save of the same
 * path must remove it (the parent saves once after each such kill and
 * checks that no temporary is left).
 *
 *   kill_during_save DIR          (the test; exits 0 on success)
 *   kill_during_save child PATH K (internal: saves versions K, K+1, ...) */
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "mixp/mixp.h"

#define NUMEL (4 * 1024 * 1024)
#define KILLS 25

static void die(const char *what) {
  fprintf(stderr, "kill_during_save: %s failed: %s\n", what, mixp_last_error());
  exit(1);
}
#define CHECK(call)                            \
  do {                                         \
    if ((call) != MIXP_OK) die(#call);         \
  } while (0)

static mixp_session *session(void) {
  mixp_session_options o;
  mixp_session_options_init(&o);
  o.num_threads = 1;
  mixp_session *s = NULL;
  CHECK(mixp_session_create(&o, &s));
  return s;
}

static void spec_for(mixp_state_spec *spec, mixp_tensor **t, const char **name, const char *meta) {
  mixp_state_spec_init(spec);
  *name = "big";
  spec->tensors = t;
  spec->tensor_names = name;
  spec->num_tensors = 1;
  spec->user_metadata = meta;
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Saves version k over path from this process. */
static void save_version(mixp_session *s, const char *path, long k) {
  int64_t shape[1] = {NUMEL};
  mixp_tensor *t = NULL;
  CHECK(mixp_tensor_full(s, MIXP_F32, shape, 1, (double)k, &t));
  char meta[32];
  snprintf(meta, sizeof meta, "%ld", k);
  mixp_state_spec spec;
  const char *name;
  spec_for(&spec, &t, &name, meta);
  CHECK(mixp_state_save(s, path, &spec));
  mixp_tensor_release(t);
}

/* Saves versions k, k+1, ... forever; writes one byte to fd 1 after the
 * first save so the parent knows the child is running. */
static int child(const char *path, long k) {
  mixp_session *s = session();
  for (;; ++k) {
    save_version(s, path, k);
    if (write(1, "s", 1) != 1) return 1;
  }
}

/* Loads PATH and returns its version; exits 1 unless it is complete. */
static long check_file(mixp_session *s, const char *path) {
  int64_t shape[1] = {NUMEL};
  mixp_tensor *t = NULL;
  CHECK(mixp_tensor_zeros(s, MIXP_F32, shape, 1, &t));
  mixp_state_spec spec;
  const char *name;
  spec_for(&spec, &t, &name, NULL);
  CHECK(mixp_state_load(s, path, &spec, NULL));
  char meta[32];
  size_t len = 0;
  CHECK(mixp_state_read_metadata(path, "user", meta, sizeof meta, &len));
  long version = strtol(meta, NULL, 10);
  float *v = (float *)malloc(NUMEL * sizeof(float));
  CHECK(mixp_tensor_to_host(t, v, NUMEL * sizeof(float)));
  for (long i = 0; i < NUMEL; ++i)
    if (v[i] != (float)version) {
      fprintf(stderr, "kill_during_save: element %ld is %g in version %ld\n", i, v[i], version);
      exit(1);
    }
  free(v);
  mixp_tensor_release(t);
  return version;
}

/* Whether a save is writing its temporary file right now. */
static int temp_file_exists(const char *dir, const char *base) {
  DIR *d = opendir(dir);
  if (!d) return 0;
  char stem[256];
  snprintf(stem, sizeof stem, "%s.mixp-tmp.", base);
  int found = 0;
  struct dirent *e;
  while (!found && (e = readdir(d)) != NULL) found = strncmp(e->d_name, stem, strlen(stem)) == 0;
  closedir(d);
  return found;
}

/* Counts the temporary files of `base` in `dir`; with `remove`, deletes them. */
static int temp_files(const char *dir, const char *base, int remove) {
  DIR *d = opendir(dir);
  if (!d) return 0;
  int n = 0;
  struct dirent *e;
  char stem[256];
  snprintf(stem, sizeof stem, "%s.mixp-tmp.", base);
  while ((e = readdir(d)) != NULL) {
    if (strncmp(e->d_name, stem, strlen(stem)) != 0) continue;
    char p[1024];
    snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
    if (remove) unlink(p);
    ++n;
  }
  closedir(d);
  return n;
}

int main(int argc, char **argv) {
  if (argc == 4 && strcmp(argv[1], "child") == 0) return child(argv[2], atol(argv[3]));
  if (argc != 2) {
    fprintf(stderr, "usage: kill_during_save DIR\n");
    return 2;
  }
  const char *dir = argv[1];
  const char *base = "kill_during_save.safetensors";
  char path[1024];
  snprintf(path, sizeof path, "%s/%s", dir, base);
  unlink(path);
  temp_files(dir, base, 1);

  mixp_session *s = session();
  /* Version 0, and how long one save takes here. */
  double t0 = now_s();
  {
    int64_t shape[1] = {NUMEL};
    mixp_tensor *t = NULL;
    CHECK(mixp_tensor_full(s, MIXP_F32, shape, 1, 0.0, &t));
    mixp_state_spec spec;
    const char *name;
    spec_for(&spec, &t, &name, "0");
    for (int i = 0; i < 3; ++i) CHECK(mixp_state_save(s, path, &spec));
    mixp_tensor_release(t);
  }
  const double save_s = (now_s() - t0) / 3;
  srand(12345);
  long last = check_file(s, path), next = 1;
  int torn = 0, newer = 0;
  for (int kill_no = 0; kill_no < KILLS; ++kill_no) {
    int fds[2];
    if (pipe(fds) != 0) return perror("pipe"), 1;
    pid_t pid = fork();
    if (pid < 0) return perror("fork"), 1;
    if (pid == 0) {
      dup2(fds[1], 1);
      close(fds[0]);
      char k[32];
      snprintf(k, sizeof k, "%ld", next);
      execl(argv[0], argv[0], "child", path, k, (char *)NULL);
      _exit(127);
    }
    close(fds[1]);
    char c;
    if (read(fds[0], &c, 1) != 1) {
      fprintf(stderr, "kill_during_save: the child died before its first save\n");
      return 1;
    }
    if (kill_no % 2 == 0) {
      /* Anywhere within the next two saves (staging, checksums, writing,
       * fsync, rename)... */
      const double delay = save_s * 2.0 * (double)rand() / RAND_MAX;
      usleep((useconds_t)(delay * 1e6));
    } else {
      /* ... or, every other time, while the temporary file is being
       * written or synced, whatever the speed of this machine. */
      const double deadline = now_s() + 10 * save_s + 1.0;
      while (!temp_file_exists(dir, base) && now_s() < deadline) usleep(200);
      usleep((useconds_t)(rand() % 2000));
    }
    kill(pid, SIGKILL);
    int status = 0;
    waitpid(pid, &status, 0);
    close(fds[0]);
    if (!WIFSIGNALED(status) || WTERMSIG(status) != SIGKILL) {
      fprintf(stderr, "kill_during_save: the child ended on its own (status %d)\n", status);
      return 1;
    }
    long v = check_file(s, path);
    if (v < last) {
      fprintf(stderr, "kill_during_save: version went back from %ld to %ld\n", last, v);
      return 1;
    }
    newer += v > last;
    last = v;
    next = v + 1000; /* versions of the next child are distinct from this one's */
    if (temp_files(dir, base, 0) > 0) {
      ++torn;
      /* The next save of the path cleans up after the killed writer. */
      save_version(s, path, last);
      if (temp_files(dir, base, 0) != 0) {
        fprintf(stderr, "kill_during_save: a save left the killed writer's temporary file behind\n");
        return 1;
      }
    }
  }
  printf("kill_during_save: %d kills (save takes %.1f ms here); %d hit a save in progress "
         "(temporary file left behind, removed by the next save); the file always loaded complete; "
         "last version %ld, "
         "%d kills after a newer version landed\n",
         KILLS, save_s * 1e3, torn, last, newer);
  mixp_session_destroy(s);
  unlink(path);
  if (torn < KILLS / 4) {
    fprintf(stderr, "kill_during_save: only %d kills landed while a file was written; the test proved too little\n", torn);
    return 1;
  }
  return 0;
}
