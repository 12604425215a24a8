/* A host that loads libmixp at run time, as a language runtime or a plugin
 * system does: dlopen the versioned file, resolve each entry point with
 * dlsym, check the version, and call through the pointers. The header is
 * used for its types and constants only. Quoted in docs/embedding.md; built
 * as build/tools/mixp-example-dlopen and run by the test suite.
 * Build: cc dlopen_host.c -I/usr/local/include -ldl
 * Run:   ./a.out [path/to/libmixp.so.0]   (default: the loader's search path) */
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>
#include <mixp/mixp.h>

static struct {
  int (*version_number)(void);
  const char *(*version)(void);
  const char *(*last_error)(void);
  mixp_status (*session_options_init_sized)(mixp_session_options *, size_t);
  mixp_status (*session_create)(const mixp_session_options *, mixp_session **);
  void (*session_destroy)(mixp_session *);
  mixp_status (*tensor_from_host)(mixp_session *, const void *, size_t, mixp_dtype,
                                  const int64_t *, int, mixp_tensor **);
  mixp_status (*sum)(const mixp_tensor *, const int *, int, int, mixp_tensor **);
  mixp_status (*tensor_item)(const mixp_tensor *, double *);
  void (*tensor_release)(mixp_tensor *);
} api;

/* dlsym returns a void *; POSIX guarantees it converts to a function pointer. */
#define LOAD(name)                                                      \
  do {                                                                  \
    void *sym_ = dlsym(lib, "mixp_" #name);                             \
    if (!sym_) {                                                        \
      fprintf(stderr, "libmixp lacks mixp_%s: %s\n", #name, dlerror()); \
      return 1;                                                         \
    }                                                                   \
    memcpy(&api.name, &sym_, sizeof sym_);                              \
  } while (0)

int main(int argc, char **argv) {
  /* The SONAME: libmixp.so.0 stays loadable by this program until the ABI
   * breaks, which bumps the major version and the file name with it. */
  const char *path = argc > 1 ? argv[1] : "libmixp.so.0";
  void *lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    fprintf(stderr, "cannot load %s: %s\n", path, dlerror());
    return 1;
  }
  LOAD(version_number);
  LOAD(version);
  LOAD(last_error);
  LOAD(session_options_init_sized);
  LOAD(session_create);
  LOAD(session_destroy);
  LOAD(tensor_from_host);
  LOAD(sum);
  LOAD(tensor_item);
  LOAD(tensor_release);

  /* Same major version, and at least the minor version this program was
   * compiled against (functions and struct fields are only ever added). */
  int v = api.version_number();
  if (v / 10000 != MIXP_VERSION_MAJOR || v < MIXP_VERSION_NUMBER) {
    fprintf(stderr, "libmixp %s is too old or incompatible (need %d.%d)\n", api.version(),
            MIXP_VERSION_MAJOR, MIXP_VERSION_MINOR);
    return 1;
  }
  printf("loaded libmixp %s\n", api.version());

  /* Options structs are filled by the sized entry point with this program's
   * sizeof (what the header's inline mixp_session_options_init() does), so
   * no library can write past the struct. */
  mixp_session_options so;
  if (api.session_options_init_sized(&so, sizeof so) != MIXP_OK) {
    fprintf(stderr, "%s\n", api.last_error());
    return 1;
  }

  /* A refused call: a status, a message naming the argument, nothing created. */
  so.device = "tpu";
  mixp_session *s = NULL;
  mixp_status st = api.session_create(&so, &s);
  printf("device \"tpu\": status %d: %s\n", (int)st, api.last_error());

  so.device = "cpu";
  if (api.session_create(&so, &s) != MIXP_OK) {
    fprintf(stderr, "%s\n", api.last_error());
    return 1;
  }
  const float data[4] = {1, 2, 3, 4};
  const int64_t shape[1] = {4};
  mixp_tensor *t = NULL, *total = NULL;
  double value = 0;
  if (api.tensor_from_host(s, data, sizeof data, MIXP_F32, shape, 1, &t) != MIXP_OK ||
      api.sum(t, NULL, 0, 0, &total) != MIXP_OK || api.tensor_item(total, &value) != MIXP_OK) {
    fprintf(stderr, "%s\n", api.last_error());
    return 1;
  }
  printf("sum of 1..4 = %g\n", value);
  api.tensor_release(total); /* every owned handle is released exactly once */
  api.tensor_release(t);
  api.session_destroy(s);
  dlclose(lib);
  return 0;
}
