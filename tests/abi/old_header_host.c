/* A host as one built against mixp 0.2.0 is: compiled against a frozen copy
 * of that release's header (old/mixp-0.2.0.h, see old/README.md) and run
 * against the library just built. Every options struct lies in a frame with
 * guard bytes right after it, as a struct on an old program's stack has its
 * neighbours; the program fills each with its *_options_init() (the exported
 * symbols such a program calls), trains a small CNN under bf16 autocast with
 * a grad scaler, AdamW and a shuffling loader, saves the training state,
 * loads it into fresh objects of another session, and checks that the
 * original and the restored run take the same next step -- and, after every
 * call, that no guard byte changed and that each init set struct_size to the
 * 0.2 size. Run by CTest as abi_old_header_host_0_2 (tests/abi/abi.cmake).
 * Usage: old_header_host DIR   (DIR: where to write the state file) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mixp-0.2.0.h"

#define GUARD_BYTES 64
#define GUARD_VALUE 0xA5

/* An options struct and the bytes that follow it. */
#define FRAME(T)                          \
  struct {                                \
    T v;                                  \
    unsigned char guard[GUARD_BYTES];     \
  }

static struct {
  const char *name;
  unsigned char *guard;
  size_t size;
  const uint32_t *struct_size;
  int size_reported;
} frames[32];
static int n_frames;
static int failures;

/* Sets the guard bytes and remembers the frame; call before its init. */
#define WATCH(f)                                                         \
  do {                                                                   \
    memset(&(f), 0x5A, sizeof(f.v));                                     \
    memset((f).guard, GUARD_VALUE, GUARD_BYTES);                         \
    frames[n_frames].name = #f;                                          \
    frames[n_frames].guard = (f).guard;                                  \
    frames[n_frames].size = sizeof(f.v);                                 \
    frames[n_frames].struct_size = &(f).v.struct_size;                   \
    ++n_frames;                                                          \
  } while (0)

/* Every guard byte still as set, every struct_size the 0.2 size. */
static void check_frames(const char *when) {
  for (int i = 0; i < n_frames; ++i) {
    int changed = 0, first = -1;
    for (int b = 0; b < GUARD_BYTES; ++b)
      if (frames[i].guard[b] != GUARD_VALUE) {
        ++changed;
        if (first < 0) first = b;
      }
    if (changed) {
      fprintf(stderr, "FAIL %s: %d of the %d bytes after %s (a %zu-byte 0.2 struct) changed, the first at +%d\n",
              when, changed, GUARD_BYTES, frames[i].name, frames[i].size, first);
      ++failures;
      memset(frames[i].guard, GUARD_VALUE, GUARD_BYTES); /* report each overrun once */
    }
    if (*frames[i].struct_size != frames[i].size && !frames[i].size_reported) {
      fprintf(stderr, "FAIL %s: %s.struct_size is %u, the 0.2 struct has %zu bytes\n", when, frames[i].name,
              (unsigned)*frames[i].struct_size, frames[i].size);
      frames[i].size_reported = 1;
      ++failures;
    }
  }
}

#define CHECK(call)                                                                 \
  do {                                                                              \
    mixp_status st_ = (call);                                                       \
    if (st_ != MIXP_OK) {                                                           \
      fprintf(stderr, "FAIL %s: status %d: %s\n", #call, (int)st_, mixp_last_error()); \
      exit(1);                                                                      \
    }                                                                               \
    check_frames(#call);                                                            \
  } while (0)

#define EXPECT(cond)                                          \
  do {                                                        \
    if (!(cond)) {                                            \
      fprintf(stderr, "FAIL line %d: %s\n", __LINE__, #cond); \
      ++failures;                                             \
    }                                                         \
  } while (0)

/* One model: conv 1->4 (3x3, pad 1) -> relu -> 2x2 max pool -> flatten -> linear 64->4. */
typedef struct {
  mixp_module *conv, *fc;
  mixp_optimizer *opt;
  mixp_grad_scaler *scaler;
  mixp_loader *loader;
  mixp_dataset *data;
} run;

static FRAME(mixp_session_options) so;
static FRAME(mixp_synthetic_options) syn;
static FRAME(mixp_loader_options) lo;
static FRAME(mixp_conv2d_options) geom;
static FRAME(mixp_pool2d_options) pool;
static FRAME(mixp_autocast_options) ac;
static FRAME(mixp_optimizer_options) oo;
static FRAME(mixp_grad_scaler_options) gso;
static FRAME(mixp_cross_entropy_options) ceo;
static FRAME(mixp_decorate_options) deco;
static FRAME(mixp_state_spec) spec;

static void make_run(mixp_session *s, run *r) {
  CHECK(mixp_dataset_synthetic(s, &syn.v, &r->data));
  CHECK(mixp_loader_create(r->data, &lo.v, &r->loader));
  CHECK(mixp_conv2d_create(s, 1, 4, 3, 3, &geom.v, 1, MIXP_F32, &r->conv));
  CHECK(mixp_linear_create(s, 4 * 4 * 4, 4, 1, MIXP_F32, &r->fc));
  mixp_tensor *params[4];
  for (int i = 0; i < 2; ++i) {
    CHECK(mixp_module_parameter(r->conv, i, &params[i]));
    CHECK(mixp_module_parameter(r->fc, i, &params[2 + i]));
  }
  CHECK(mixp_optimizer_create(s, params, 4, &oo.v, &r->opt));
  for (int i = 0; i < 4; ++i) mixp_tensor_release(params[i]);
  CHECK(mixp_grad_scaler_create(s, &gso.v, &r->scaler));
}

static void free_run(run *r) {
  mixp_loader_destroy(r->loader);
  mixp_dataset_destroy(r->data);
  mixp_grad_scaler_destroy(r->scaler);
  mixp_optimizer_destroy(r->opt);
  mixp_module_destroy(r->fc);
  mixp_module_destroy(r->conv);
}

/* One training step on the loader's next batch (a new epoch starts when one
 * ends); returns the loss. */
static double step(mixp_session *s, run *r) {
  mixp_tensor *x = NULL, *y = NULL;
  mixp_status st = mixp_loader_next(r->loader, &x, &y);
  if (st == MIXP_DONE) st = mixp_loader_next(r->loader, &x, &y);
  CHECK(st);
  mixp_tensor *c = NULL, *a = NULL, *p = NULL, *f = NULL, *logits = NULL, *loss = NULL, *scaled = NULL;
  CHECK(mixp_autocast_push(s, &ac.v));
  CHECK(mixp_module_forward(r->conv, x, &c));
  CHECK(mixp_relu(c, &a));
  CHECK(mixp_max_pool2d(a, &pool.v, &p));
  CHECK(mixp_flatten(p, 1, -1, &f));
  CHECK(mixp_module_forward(r->fc, f, &logits));
  CHECK(mixp_autocast_pop(s));
  CHECK(mixp_cross_entropy_ex(logits, y, &ceo.v, &loss));
  double value = 0;
  CHECK(mixp_tensor_item(loss, &value));
  CHECK(mixp_optimizer_zero_grad(r->opt));
  CHECK(mixp_grad_scaler_scale(r->scaler, loss, &scaled));
  CHECK(mixp_backward(scaled, NULL));
  CHECK(mixp_grad_scaler_step(r->scaler, r->opt));
  CHECK(mixp_grad_scaler_update(r->scaler));
  mixp_tensor *ts[] = {x, y, c, a, p, f, logits, loss, scaled};
  for (size_t i = 0; i < sizeof ts / sizeof ts[0]; ++i) mixp_tensor_release(ts[i]);
  return value;
}

static void fill_spec(run *r, mixp_module **modules, const char **prefixes) {
  modules[0] = r->conv;
  modules[1] = r->fc;
  spec.v.modules = modules;
  spec.v.module_prefixes = prefixes;
  spec.v.num_modules = 2;
  spec.v.optimizers = &r->opt;
  spec.v.num_optimizers = 1;
  spec.v.scalers = &r->scaler;
  spec.v.num_scalers = 1;
  spec.v.loaders = &r->loader;
  spec.v.num_loaders = 1;
}

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: %s DIR\n", argv[0]);
    return 2;
  }
  /* The check an 0.2 program makes: same major version, at least 0.2. */
  const int v = mixp_version_number();
  if (v / 10000 != MIXP_VERSION_MAJOR || v < MIXP_VERSION_NUMBER) {
    fprintf(stderr, "FAIL: library %s is not compatible with header 0.2.0\n", mixp_version());
    return 1;
  }

  WATCH(so);
  mixp_session_options_init(&so.v);
  WATCH(syn);
  mixp_synthetic_options_init(&syn.v);
  WATCH(lo);
  mixp_loader_options_init(&lo.v);
  WATCH(geom);
  mixp_conv2d_options_init(&geom.v);
  WATCH(pool);
  mixp_pool2d_options_init(&pool.v);
  WATCH(ac);
  mixp_autocast_options_init(&ac.v);
  WATCH(oo);
  mixp_optimizer_options_init(&oo.v, MIXP_OPTIM_ADAMW);
  WATCH(gso);
  mixp_grad_scaler_options_init(&gso.v);
  WATCH(ceo);
  mixp_cross_entropy_options_init(&ceo.v);
  WATCH(deco);
  mixp_decorate_options_init(&deco.v);
  WATCH(spec);
  mixp_state_spec_init(&spec.v);
  check_frames("the *_options_init() calls");

  /* The defaults 0.2 documents. */
  EXPECT(strcmp(so.v.device, "cpu") == 0 && so.v.num_threads == 0);
  EXPECT(syn.v.num_samples == 4096 && syn.v.num_classes == 10);
  EXPECT(lo.v.batch_size == 64 && lo.v.shuffle == 1 && lo.v.dtype == MIXP_F32);
  EXPECT(geom.v.stride_h == 1 && geom.v.groups == 1 && geom.v.layout == MIXP_NCHW);
  EXPECT(pool.v.kernel_h == 2 && pool.v.count_include_pad == 1);
  EXPECT(ac.v.enabled == 1 && ac.v.dtype == MIXP_BF16 && ac.v.level == MIXP_AMP_O1 && ac.v.cache_enabled == 1);
  EXPECT(oo.v.kind == MIXP_OPTIM_ADAMW && oo.v.lr == 1e-3 && oo.v.weight_decay == 0.01 && oo.v.min_lr == 0.0);
  EXPECT(gso.v.init_scale == 65536.0 && gso.v.growth_interval == 2000 && gso.v.hysteresis == 1);
  EXPECT(ceo.v.reduction == MIXP_REDUCTION_MEAN && ceo.v.ignore_index == MIXP_IGNORE_INDEX_DEFAULT);
  EXPECT(deco.v.dtype == MIXP_F16 && deco.v.master_weights == 1 && deco.v.keep_norm_fp32 == 1);
  EXPECT(spec.v.include_rng == 1 && spec.v.num_modules == 0 && spec.v.user_metadata == NULL);

  so.v.seed = 7;
  so.v.num_threads = 2;
  syn.v.num_samples = 256;
  syn.v.height = syn.v.width = 8;
  syn.v.num_classes = 4;
  lo.v.batch_size = 32;
  lo.v.seed = 3;
  geom.v.pad_h = geom.v.pad_w = 1;
  oo.v.lr = 1e-2;
  gso.v.mode = MIXP_SCALER_DYNAMIC;
  gso.v.init_scale = 1024;
  ceo.v.label_smoothing = 0.1;
  spec.v.step = 12;

  mixp_session *s = NULL, *s2 = NULL;
  CHECK(mixp_session_create(&so.v, &s));
  run a;
  make_run(s, &a);
  double first = 0, loss = 0;
  for (int i = 0; i < 12; ++i) {
    loss = step(s, &a);
    if (i == 0) first = loss;
  }
  printf("0.2 host: loss %.4f after 1 step, %.4f after 12\n", first, loss);
  EXPECT(loss < first);

  /* Save, then load into fresh objects of another session. */
  char path[4096];
  snprintf(path, sizeof path, "%s/old_header_host_0_2.safetensors", argv[1]);
  mixp_module *modules[2];
  const char *prefixes[2] = {"conv.", "fc."};
  fill_spec(&a, modules, prefixes);
  CHECK(mixp_state_save(s, path, &spec.v));

  so.v.seed = 99;
  CHECK(mixp_session_create(&so.v, &s2));
  run b;
  make_run(s2, &b);
  fill_spec(&b, modules, prefixes);
  int64_t saved_step = -1;
  CHECK(mixp_state_load(s2, path, &spec.v, &saved_step));
  EXPECT(saved_step == 12);

  /* The next step of the original and of the restored run agree. */
  const double next_a = step(s, &a), next_b = step(s2, &b);
  printf("0.2 host: step 13 loss %.6f (original), %.6f (restored)\n", next_a, next_b);
  EXPECT(next_a == next_b);

  free_run(&b);
  free_run(&a);
  mixp_session_destroy(s2);
  mixp_session_destroy(s);
  remove(path);
  check_frames("the end");
  if (failures) {
    fprintf(stderr, "%d failure(s)\n", failures);
    return 1;
  }
  printf("0.2 host: library %s, %d options structs, no guard byte changed\n", mixp_version(), n_frames);
  return 0;
}
