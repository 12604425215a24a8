/* Damaged and mismatched training-state files, and misuse of the state
 * functions: every failure has the documented status, a message naming the
 * problem (the tensor, where there is one), and leaves every object exactly
 * as it was. */
#include <dirent.h>

#include "test_state_util.h"

static unsigned char *read_all(const char *path, size_t *n) {
  FILE *f = fopen(path, "rb");
  assert_non_null(f);
  fseek(f, 0, SEEK_END);
  long sz = ftell(f);
  fseek(f, 0, SEEK_SET);
  unsigned char *b = (unsigned char *)malloc((size_t)sz + 1);
  assert_int_equal(fread(b, 1, (size_t)sz, f), (size_t)sz);
  fclose(f);
  *n = (size_t)sz;
  return b;
}

static void write_all(const char *path, const unsigned char *b, size_t n) {
  FILE *f = fopen(path, "wb");
  assert_non_null(f);
  if (n) assert_int_equal(fwrite(b, 1, n, f), n);
  fclose(f);
}

/* What a failed load must leave untouched. */
typedef struct snapshot {
  unsigned char *params;
  size_t n;
  int64_t steps, epoch;
  double scale, lr;
} snapshot;

static snapshot take(const st_run *r) {
  snapshot s;
  s.params = st_param_bytes(r->model, &s.n);
  s.steps = mixp_optimizer_step_count(r->opt);
  s.epoch = mixp_loader_epoch(r->loader);
  MT_OK(mixp_grad_scaler_get_scale(r->scaler, &s.scale));
  MT_OK(mixp_optimizer_get_lr(r->opt, &s.lr));
  return s;
}

static void assert_unchanged(const st_run *r, const snapshot *before) {
  snapshot now = take(r);
  assert_int_equal(now.n, before->n);
  assert_memory_equal(now.params, before->params, now.n);
  assert_int_equal(now.steps, before->steps);
  assert_int_equal(now.epoch, before->epoch);
  assert_true(now.scale == before->scale);
  assert_true(now.lr == before->lr);
  free(now.params);
}

/* A checkpoint of a run after a few steps, and a second run to load into. */
static void saved_run(const char *path, st_run *target) {
  st_run a;
  st_build(&a, 5, 1, MIXP_F16);
  for (int i = 0; i < 3; ++i) st_step(&a);
  mixp_state_spec spec;
  st_spec(&a, &spec);
  MT_OK(mixp_state_save(a.s, path, &spec));
  st_destroy(&a);
  st_build(target, 6, 1, MIXP_F16);
  st_step(target);
}

static void test_truncated_and_padded(void **state) {
  (void)state;
  char path[512], bad[512];
  st_path(path, sizeof path, "good.safetensors");
  st_path(bad, sizeof bad, "bad.safetensors");
  st_run t;
  saved_run(path, &t);
  snapshot before = take(&t);
  size_t n = 0;
  unsigned char *b = read_all(path, &n);
  mixp_state_spec spec;
  st_spec(&t, &spec);
  const size_t cuts[] = {0, 1, 7, 8, 9, 100, n / 2, n - 4, n - 1};
  for (size_t i = 0; i < sizeof cuts / sizeof cuts[0]; ++i) {
    write_all(bad, b, cuts[i]);
    MT_FAILS(mixp_state_load(t.s, bad, &spec, NULL), MIXP_ERR_CORRUPT, "is corrupt");
    assert_unchanged(&t, &before);
  }
  unsigned char *longer = (unsigned char *)malloc(n + 3);
  memcpy(longer, b, n);
  memcpy(longer + n, "xyz", 3);
  write_all(bad, longer, n + 3);
  MT_FAILS(mixp_state_load(t.s, bad, &spec, NULL), MIXP_ERR_CORRUPT, "is corrupt");
  assert_unchanged(&t, &before);
  /* The intact file still loads. */
  MT_OK(mixp_state_load(t.s, path, &spec, NULL));
  free(longer);
  free(b);
  free(before.params);
  st_destroy(&t);
  unlink(path);
  unlink(bad);
}

/* One flipped bit anywhere (every header byte, and spread over the data)
 * is caught: by the parser, the layout checks or a checksum. */
static void test_bit_flips(void **state) {
  (void)state;
  char path[512], bad[512];
  st_path(path, sizeof path, "good.safetensors");
  st_path(bad, sizeof bad, "flip.safetensors");
  st_run t;
  saved_run(path, &t);
  snapshot before = take(&t);
  size_t n = 0;
  unsigned char *b = read_all(path, &n);
  uint64_t hlen = 0;
  for (int i = 7; i >= 0; --i) hlen = (hlen << 8) | b[i];
  mixp_state_spec spec;
  st_spec(&t, &spec);
  uint64_t x = 12345;
  int data_flips = 0, header_flips = 0;
  for (size_t pos = 0; pos < n; pos += pos < 8 + hlen ? 1 : 1 + (n - 8 - hlen) / 300) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    const unsigned char bit = (unsigned char)(1u << (x % 8));
    b[pos] ^= bit;
    write_all(bad, b, n);
    mixp_status st = mixp_state_load(t.s, bad, &spec, NULL);
    if (st != MIXP_ERR_CORRUPT) {
      print_error("flip of bit %d at byte %zu (header %llu bytes): status %d (%s)\n", (int)(x % 8),
                  pos, (unsigned long long)hlen, (int)st, mixp_last_error());
      fail();
    }
    if (pos >= 8 + hlen) {
      assert_non_null(strstr(mixp_last_error(), "does not match its checksum"));
      assert_non_null(strstr(mixp_last_error(), "tensor '"));
      ++data_flips;
    } else {
      ++header_flips;
    }
    b[pos] ^= bit;
  }
  assert_true(data_flips >= 250);
  assert_true(header_flips > 500);
  assert_unchanged(&t, &before);
  free(b);
  free(before.params);
  st_destroy(&t);
  unlink(path);
  unlink(bad);
}

static void test_wrong_model_and_spec(void **state) {
  (void)state;
  char path[512];
  st_path(path, sizeof path, "good.safetensors");
  st_run t;
  saved_run(path, &t);
  snapshot before = take(&t);
  mixp_state_spec spec;
  st_spec(&t, &spec);

  /* Another architecture. */
  mixp_module *other = NULL;
  MT_OK(mixp_model_create(t.s, "mlp in=36 hidden=24,10 classes=4 dropout=0.2", &other));
  spec.modules = &other;
  MT_FAILS(mixp_state_load(t.s, path, &spec, NULL), MIXP_ERR_SHAPE, "tensor '4.weight' has shape [12,24] in the file, the target's is [10,24]");
  spec.modules = &t.model;
  /* A spec without the scaler: the file holds one nothing takes. */
  spec.num_scalers = 0;
  MT_FAILS(mixp_state_load(t.s, path, &spec, NULL), MIXP_ERR_SHAPE, "'__mixp__.scaler0'");
  spec.num_scalers = 1;
  /* Without the RNG. */
  spec.include_rng = 0;
  MT_FAILS(mixp_state_load(t.s, path, &spec, NULL), MIXP_ERR_SHAPE, "'__mixp__.rng'");
  spec.include_rng = 1;
  /* A module prefix the file does not have. */
  const char *prefix = "net.";
  spec.module_prefixes = &prefix;
  MT_FAILS(mixp_state_load(t.s, path, &spec, NULL), MIXP_ERR_SHAPE, "no tensor 'net.");
  spec.module_prefixes = NULL;
  /* A loader over a dataset of another size. */
  mixp_dataset *small = NULL;
  mixp_loader *small_loader = NULL;
  MT_OK(mixp_dataset_subset(t.data, 0, 100, &small));
  mixp_loader_options lo;
  mixp_loader_options_init(&lo);
  lo.batch_size = 16;
  MT_OK(mixp_loader_create(small, &lo, &small_loader));
  spec.loaders = &small_loader;
  MT_FAILS(mixp_state_load(t.s, path, &spec, NULL), MIXP_ERR_SHAPE, "'__mixp__.loader0'");
  spec.loaders = &t.loader;
  /* An optimizer of another kind. */
  int np = mixp_module_num_parameters(t.model);
  mixp_tensor *params[16];
  for (int i = 0; i < np; ++i) MT_OK(mixp_module_parameter(t.model, i, &params[i]));
  mixp_optimizer *sgd = mt_sgd(t.s, params, np, 0.1);
  for (int i = 0; i < np; ++i) mixp_tensor_release(params[i]);
  spec.optimizers = &sgd;
  MT_FAILS(mixp_state_load(t.s, path, &spec, NULL), MIXP_ERR_SHAPE, "optimizer kind");
  spec.optimizers = &t.opt;
  assert_unchanged(&t, &before);

  /* A weights-only safetensors file is not a training state. */
  char plain[512];
  st_path(plain, sizeof plain, "plain.safetensors");
  static const char hdr[] = "{\"w\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}";
  unsigned char file[8 + sizeof hdr - 1 + 4];
  uint64_t hl = sizeof hdr - 1;
  for (int i = 0; i < 8; ++i) file[i] = (unsigned char)(hl >> (8 * i));
  memcpy(file + 8, hdr, hl);
  memset(file + 8 + hl, 0, 4);
  write_all(plain, file, sizeof file);
  MT_FAILS(mixp_state_load(t.s, plain, &spec, NULL), MIXP_ERR_CORRUPT, "not a mixp training-state file");
  assert_unchanged(&t, &before);

  mixp_optimizer_destroy(sgd);
  mixp_loader_destroy(small_loader);
  mixp_dataset_destroy(small);
  mixp_module_destroy(other);
  free(before.params);
  st_destroy(&t);
  unlink(path);
  unlink(plain);
}

static int count_temp_files(const char *dir, const char *stem) {
  DIR *d = opendir(dir);
  int n = 0;
  struct dirent *e;
  while ((e = readdir(d)) != NULL)
    if (strncmp(e->d_name, stem, strlen(stem)) == 0 && strstr(e->d_name, ".mixp-tmp.")) ++n;
  closedir(d);
  return n;
}

static void test_misuse(void **state) {
  (void)state;
  char path[512];
  st_path(path, sizeof path, "misuse.safetensors");
  st_run t;
  st_build(&t, 1, 0, MIXP_F32);
  mixp_state_spec spec;
  st_spec(&t, &spec);
  MT_OK(mixp_state_save(t.s, path, &spec));
  const char *dir = getenv("TMPDIR") && *getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
  char stem[64];
  snprintf(stem, sizeof stem, "mixp_test_%d_misuse", (int)getpid());
  assert_int_equal(count_temp_files(dir, stem), 0);

  MT_FAILS(mixp_state_save(NULL, path, &spec), MIXP_ERR_INVALID_ARGUMENT, "session is NULL");
  MT_FAILS(mixp_state_load(NULL, path, &spec, NULL), MIXP_ERR_INVALID_ARGUMENT, "session is NULL");
  MT_FAILS(mixp_state_save(t.s, NULL, &spec), MIXP_ERR_INVALID_ARGUMENT, "path is NULL");
  MT_FAILS(mixp_state_load(t.s, "", &spec, NULL), MIXP_ERR_INVALID_ARGUMENT, "path is empty");
  MT_FAILS(mixp_state_save(t.s, path, NULL), MIXP_ERR_INVALID_ARGUMENT, "spec is NULL");
  MT_FAILS(mixp_state_load(t.s, path, NULL, NULL), MIXP_ERR_INVALID_ARGUMENT, "spec is NULL");
  mixp_state_spec bad = spec;
  bad.struct_size = 4;
  MT_FAILS(mixp_state_save(t.s, path, &bad), MIXP_ERR_INVALID_ARGUMENT, "spec->struct_size");
  bad = spec;
  bad.num_modules = -1;
  MT_FAILS(mixp_state_save(t.s, path, &bad), MIXP_ERR_INVALID_ARGUMENT, "spec->num_modules must be >= 0");
  bad = spec;
  bad.optimizers = NULL;
  MT_FAILS(mixp_state_load(t.s, path, &bad, NULL), MIXP_ERR_INVALID_ARGUMENT, "spec->optimizers is NULL");
  bad = spec;
  bad.include_rng = 2;
  MT_FAILS(mixp_state_save(t.s, path, &bad), MIXP_ERR_INVALID_ARGUMENT, "include_rng must be 0 or 1");
  mixp_module *mods[2] = {t.model, t.model};
  bad = spec;
  bad.modules = mods;
  bad.num_modules = 2;
  MT_FAILS(mixp_state_save(t.s, path, &bad), MIXP_ERR_INVALID_ARGUMENT, "listed twice");
  mixp_module *lin = NULL;
  MT_OK(mixp_linear_create(t.s, 2, 2, 1, MIXP_F32, &lin));
  mixp_module *nulls[1] = {NULL};
  bad.modules = nulls;
  bad.num_modules = 1;
  MT_FAILS(mixp_state_save(t.s, path, &bad), MIXP_ERR_INVALID_ARGUMENT, "spec->modules[0] is NULL");
  /* Two modules whose names collide, then told apart by prefixes. */
  mixp_module *lin2 = NULL;
  MT_OK(mixp_linear_create(t.s, 2, 2, 1, MIXP_F32, &lin2));
  mixp_module *two[2] = {lin, lin2};
  bad = spec;
  bad.modules = two;
  bad.num_modules = 2;
  MT_FAILS(mixp_state_save(t.s, path, &bad), MIXP_ERR_INVALID_ARGUMENT, "two tensors are named 'weight'");
  const char *prefixes[2] = {"a.", NULL};
  bad.module_prefixes = prefixes;
  MT_FAILS(mixp_state_save(t.s, path, &bad), MIXP_ERR_INVALID_ARGUMENT, "module_prefixes[1] is NULL");
  prefixes[1] = "b.";
  char path2[512];
  st_path(path2, sizeof path2, "prefixed.safetensors");
  MT_OK(mixp_state_save(t.s, path2, &bad));
  MT_OK(mixp_state_load(t.s, path2, &bad, NULL));
  unlink(path2);
  /* Extra tensors: names required, none reserved. */
  double v[2] = {1, 2};
  mixp_tensor *w = mt_param(t.s, MIXP_F32, v, 2);
  const char *names[1] = {"__mixp__.mine"};
  bad = spec;
  bad.tensors = &w;
  bad.num_tensors = 1;
  MT_FAILS(mixp_state_save(t.s, path, &bad), MIXP_ERR_INVALID_ARGUMENT, "tensor_names is NULL");
  bad.tensor_names = names;
  MT_FAILS(mixp_state_save(t.s, path, &bad), MIXP_ERR_INVALID_ARGUMENT, "reserved");
  names[0] = NULL;
  MT_FAILS(mixp_state_save(t.s, path, &bad), MIXP_ERR_INVALID_ARGUMENT, "tensor_names[0] is NULL");
  /* Objects of another session. */
  mixp_session *other = mt_session();
  mixp_tensor *ow = mt_param(other, MIXP_F32, v, 2);
  mixp_optimizer *oopt = mt_sgd(other, &ow, 1, 0.1);
  bad = spec;
  bad.optimizers = &oopt;
  MT_FAILS(mixp_state_save(t.s, path, &bad), MIXP_ERR_DEVICE, "spec->optimizers[0] belongs to a different session");
  MT_FAILS(mixp_state_load(t.s, path, &bad, NULL), MIXP_ERR_DEVICE, "different session");
  /* I/O. */
  MT_FAILS(mixp_state_save(t.s, "/nonexistent-dir/x.safetensors", &spec), MIXP_ERR_IO, "cannot create");
  MT_FAILS(mixp_state_load(t.s, "/nonexistent-dir/x.safetensors", &spec, NULL), MIXP_ERR_IO, "cannot open");
  MT_FAILS(mixp_state_load(t.s, dir, &spec, NULL), MIXP_ERR_IO, "not a regular file");
  /* A scaler in the middle of a step. */
  mixp_grad_scaler_options go;
  mixp_grad_scaler_options_init(&go);
  go.mode = MIXP_SCALER_DYNAMIC;
  mixp_grad_scaler *sc = NULL;
  MT_OK(mixp_grad_scaler_create(t.s, &go, &sc));
  mixp_tensor *sq = NULL, *l = NULL, *scaled = NULL;
  MT_OK(mixp_mul(w, w, &sq));
  MT_OK(mixp_sum(sq, NULL, 0, 0, &l));
  MT_OK(mixp_grad_scaler_scale(sc, l, &scaled));
  MT_OK(mixp_backward(scaled, NULL));
  mixp_optimizer *wopt = mt_sgd(t.s, &w, 1, 0.1);
  MT_OK(mixp_grad_scaler_unscale(sc, wopt));
  bad = spec;
  bad.scalers = &sc;
  MT_FAILS(mixp_state_save(t.s, path, &bad), MIXP_ERR_STATE, "between unscale()/step() and update()");
  MT_FAILS(mixp_state_load(t.s, path, &bad, NULL), MIXP_ERR_STATE, "between unscale()/step() and update()");
  /* The file is still the first one and loads. */
  MT_OK(mixp_state_load(t.s, path, &spec, NULL));
  assert_int_equal(count_temp_files(dir, stem), 0);

  mixp_optimizer_destroy(wopt);
  mixp_tensor_release(scaled);
  mixp_tensor_release(l);
  mixp_tensor_release(sq);
  mixp_grad_scaler_destroy(sc);
  mixp_optimizer_destroy(oopt);
  mixp_tensor_release(ow);
  mixp_session_destroy(other);
  mixp_tensor_release(w);
  mixp_module_destroy(lin);
  mixp_module_destroy(lin2);
  st_destroy(&t);
  unlink(path);
}

static void test_spec_init(void **state) {
  (void)state;
  mixp_state_spec spec;
  memset(&spec, 0xab, sizeof spec);
  mixp_state_spec_init(&spec);
  assert_int_equal(spec.struct_size, sizeof spec);
  assert_int_equal(spec.include_rng, 1);
  assert_int_equal(spec.num_modules, 0);
  assert_null(spec.modules);
  assert_null(spec.user_metadata);
  mixp_state_spec_init(NULL); /* ignored */
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_spec_init),
      cmocka_unit_test(test_truncated_and_padded),
      cmocka_unit_test(test_bit_flips),
      cmocka_unit_test(test_wrong_model_and_spec),
      cmocka_unit_test(test_misuse),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
