/* Hugging Face GPT-2 import and export (mixp_model_load_hf_gpt2,
 * mixp_model_save_hf_gpt2), without the network: the suite writes HF-layout
 * files itself from a zoo gpt's weights (HF names, Conv1D weights
 * transposed), imports them into other models and compares bit for bit;
 * then a round trip through 50 steps of O2 bf16 fine-tuning, and each kind
 * of bad input, after which the model must be unchanged. */
#include <sys/stat.h>
#include <unistd.h>

#include "test_util.h"

#define CONFIG "gpt n_layer=2 n_head=2 n_embd=8 vocab=13 block_size=6 gelu=tanh"
#define MAX_T 64

/* One tensor of a safetensors file the suite writes. */
typedef struct {
  char name[96];
  const char *dtype;
  int64_t shape[4];
  int ndim;
  unsigned char *bytes;
  size_t nbytes;
} hf_tensor;

typedef struct {
  hf_tensor t[MAX_T];
  int n;
} hf_file;

static char g_dir[256];

static void path_of(char *out, size_t cap, const char *leaf) {
  snprintf(out, cap, "%s/%s", g_dir, leaf);
}

/* The HF name of a gpt parameter, written independently of the library's
 * table; *conv1d says whether HF stores it transposed. */
static void hf_name(const char *mixp_name, const char *prefix, char *out, size_t cap, int *conv1d) {
  static const char *const renames[][2] = {
      {"attn.in_proj_weight", "attn.c_attn.weight"},
      {"attn.in_proj_bias", "attn.c_attn.bias"},
      {"attn.out_proj.weight", "attn.c_proj.weight"},
      {"attn.out_proj.bias", "attn.c_proj.bias"},
  };
  char buf[96];
  snprintf(buf, sizeof buf, "%s", mixp_name);
  for (size_t i = 0; i < sizeof renames / sizeof renames[0]; ++i) {
    char *at = strstr(buf, renames[i][0]);
    if (at) {
      *at = '\0';
      char head[96];
      snprintf(head, sizeof head, "%s%s", buf, renames[i][1]);
      snprintf(buf, sizeof buf, "%s", head);
    }
  }
  *conv1d = strstr(buf, ".weight") && (strstr(buf, "c_attn") || strstr(buf, "c_proj") ||
                                       strstr(buf, "c_fc"));
  snprintf(out, cap, "%s%s", prefix, buf);
}

static const char *st_dtype(mixp_dtype d) {
  return d == MIXP_BF16 ? "BF16" : d == MIXP_F16 ? "F16" : d == MIXP_I32 ? "I32" : "F32";
}

/* The bytes of tensor t (transposed when `transpose`) cast to `dtype`. */
static void tensor_bytes(const mixp_tensor *t, int transpose, mixp_dtype dtype, hf_tensor *out) {
  mixp_tensor *a = NULL, *b = NULL, *c = NULL;
  if (transpose) {
    MT_OK(mixp_transpose(t, 0, 1, &a));
    MT_OK(mixp_contiguous(a, &b));
    mixp_tensor_release(a);
  } else {
    MT_OK(mixp_contiguous(t, &b));
  }
  MT_OK(mixp_cast(b, dtype, &c));
  MT_OK(mixp_tensor_shape(c, out->shape, 4, &out->ndim));
  out->nbytes = (size_t)mixp_tensor_numel(c) * mixp_dtype_size(dtype);
  out->bytes = malloc(out->nbytes ? out->nbytes : 1);
  MT_OK(mixp_tensor_to_host(c, out->bytes, out->nbytes));
  out->dtype = st_dtype(dtype);
  mixp_tensor_release(b);
  mixp_tensor_release(c);
}

static hf_tensor *add(hf_file *f, const char *name) {
  assert_true(f->n < MAX_T);
  hf_tensor *t = &f->t[f->n++];
  memset(t, 0, sizeof *t);
  snprintf(t->name, sizeof t->name, "%s", name);
  return t;
}

/* The HF layout of model m's weights in `dtype`. */
static void from_model(hf_file *f, mixp_module *m, const char *prefix, mixp_dtype dtype) {
  f->n = 0;
  for (int i = 0; i < mixp_module_num_parameters(m); ++i) {
    char name[96];
    int conv1d = 0;
    hf_name(mixp_module_parameter_name(m, i), prefix, name, sizeof name, &conv1d);
    mixp_tensor *p = NULL;
    MT_OK(mixp_module_parameter(m, i, &p));
    tensor_bytes(p, conv1d, dtype, add(f, name));
    mixp_tensor_release(p);
  }
}

static hf_tensor *find(hf_file *f, const char *name) {
  for (int i = 0; i < f->n; ++i)
    if (strcmp(f->t[i].name, name) == 0) return &f->t[i];
  return NULL;
}

static void drop(hf_file *f, const char *name) {
  hf_tensor *t = find(f, name);
  assert_non_null(t);
  free(t->bytes);
  *t = f->t[--f->n];
}

static void copy_tensor(hf_file *f, const char *from, const char *to) {
  hf_tensor *src = find(f, from);
  assert_non_null(src);
  hf_tensor *t = add(f, to);
  memcpy(t, src, sizeof *t);
  snprintf(t->name, sizeof t->name, "%s", to);
  t->bytes = malloc(src->nbytes);
  memcpy(t->bytes, src->bytes, src->nbytes);
}

/* An older file's causal mask buffer [1, 1, P, P] (F32) and masked_bias. */
static void add_mask(hf_file *f, const char *prefix, int layer, int64_t p, int break_at) {
  char name[96];
  snprintf(name, sizeof name, "%sh.%d.attn.bias", prefix, layer);
  hf_tensor *t = add(f, name);
  t->dtype = "F32";
  t->ndim = 4;
  t->shape[0] = t->shape[1] = 1;
  t->shape[2] = t->shape[3] = p;
  t->nbytes = (size_t)(p * p) * 4;
  float *v = malloc(t->nbytes);
  for (int64_t i = 0; i < p; ++i)
    for (int64_t j = 0; j < p; ++j) v[i * p + j] = j <= i ? 1.0f : 0.0f;
  if (break_at >= 0) v[break_at] = 1.0f - v[break_at];
  t->bytes = (unsigned char *)v;
  snprintf(name, sizeof name, "%sh.%d.attn.masked_bias", prefix, layer);
  t = add(f, name);
  t->dtype = "F32";
  t->ndim = 0;
  t->nbytes = 4;
  float mb = -1e4f;
  t->bytes = malloc(4);
  memcpy(t->bytes, &mb, 4);
}

static void free_file(hf_file *f) {
  for (int i = 0; i < f->n; ++i) free(f->t[i].bytes);
  f->n = 0;
}

/* Writes the safetensors container: 8-byte little-endian header length,
 * JSON header padded to 8 bytes, data back to back. */
static void write_file(const hf_file *f, const char *path) {
  char *hdr = malloc(65536);
  size_t len = 0, at = 0;
  len += (size_t)snprintf(hdr + len, 65536 - len, "{\"__metadata__\":{\"format\":\"pt\"}");
  for (int i = 0; i < f->n; ++i) {
    const hf_tensor *t = &f->t[i];
    len += (size_t)snprintf(hdr + len, 65536 - len, ",\"%s\":{\"dtype\":\"%s\",\"shape\":[", t->name,
                            t->dtype);
    for (int d = 0; d < t->ndim; ++d)
      len += (size_t)snprintf(hdr + len, 65536 - len, "%s%lld", d ? "," : "", (long long)t->shape[d]);
    len += (size_t)snprintf(hdr + len, 65536 - len, "],\"data_offsets\":[%zu,%zu]}", at, at + t->nbytes);
    at += t->nbytes;
  }
  hdr[len++] = '}';
  while (len % 8) hdr[len++] = ' ';
  FILE *out = fopen(path, "wb");
  assert_non_null(out);
  unsigned char le[8];
  for (int i = 0; i < 8; ++i) le[i] = (unsigned char)((uint64_t)len >> (8 * i));
  fwrite(le, 1, 8, out);
  fwrite(hdr, 1, len, out);
  for (int i = 0; i < f->n; ++i) fwrite(f->t[i].bytes, 1, f->t[i].nbytes, out);
  fclose(out);
  free(hdr);
}

/* A model whose every parameter holds distinct random values (the zoo's
 * init leaves biases at 0 and norms at 1, which would hide a swapped name). */
static mixp_module *random_gpt(mixp_session *s, const char *config, uint64_t seed) {
  mixp_module *m = NULL;
  MT_OK(mixp_model_create(s, config, &m));
  MT_OK(mixp_no_grad_begin(s));
  for (int i = 0; i < mixp_module_num_parameters(m); ++i) {
    mixp_tensor *p = NULL, *r = NULL;
    MT_OK(mixp_module_parameter(m, i, &p));
    int64_t n = mixp_tensor_numel(p);
    double *v = malloc((size_t)n * sizeof(double));
    int64_t shape[MIXP_MAX_DIMS];
    int ndim = 0;
    MT_OK(mixp_tensor_shape(p, shape, MIXP_MAX_DIMS, &ndim));
    mt_fill(v, n, -0.5, 0.5, seed * 1000 + (uint64_t)i);
    r = mt_tensor(s, MIXP_F32, v, shape, ndim);
    MT_OK(mixp_tensor_copy_(p, r));
    free(v);
    mixp_tensor_release(r);
    mixp_tensor_release(p);
  }
  MT_OK(mixp_no_grad_end(s));
  return m;
}

static mixp_tensor *tokens(mixp_session *s) {
  int64_t idx[12];
  for (int i = 0; i < 12; ++i) idx[i] = (i * 7 + 3) % 13;
  const int64_t shape[2] = {2, 6};
  mixp_tensor *x = NULL;
  MT_OK(mixp_tensor_from_host(s, idx, sizeof idx, MIXP_I64, shape, 2, &x));
  return x;
}

/* The model's logits for tokens() as float32 bytes (malloc'd). */
static float *logits(mixp_module *m, mixp_session *s, size_t *n) {
  mixp_tensor *x = tokens(s), *y = NULL, *y32 = NULL;
  MT_OK(mixp_module_forward(m, x, &y));
  MT_OK(mixp_cast(y, MIXP_F32, &y32));
  *n = (size_t)mixp_tensor_numel(y32);
  float *v = malloc(*n * sizeof(float));
  MT_OK(mixp_tensor_to_host(y32, v, *n * sizeof(float)));
  mixp_tensor_release(x);
  mixp_tensor_release(y);
  mixp_tensor_release(y32);
  return v;
}

/* Every parameter's bytes, concatenated (malloc'd), to compare models. */
static unsigned char *snapshot(mixp_module *m, size_t *n) {
  size_t cap = 1 << 16;
  unsigned char *out = malloc(cap);
  *n = 0;
  for (int i = 0; i < mixp_module_num_parameters(m); ++i) {
    mixp_tensor *p = NULL;
    MT_OK(mixp_module_parameter(m, i, &p));
    size_t b = (size_t)mixp_tensor_numel(p) * mixp_dtype_size(mixp_tensor_dtype(p));
    while (*n + b > cap) out = realloc(out, cap *= 2);
    MT_OK(mixp_tensor_to_host(p, out + *n, b));
    *n += b;
    mixp_tensor_release(p);
  }
  return out;
}

static void assert_same_logits(mixp_module *a, mixp_module *b, mixp_session *s) {
  size_t na = 0, nb = 0;
  float *la = logits(a, s, &na), *lb = logits(b, s, &nb);
  assert_int_equal(na, nb);
  assert_memory_equal(la, lb, na * sizeof(float));
  free(la);
  free(lb);
}

static void assert_same_params(mixp_module *a, mixp_module *b) {
  size_t na = 0, nb = 0;
  unsigned char *sa = snapshot(a, &na), *sb = snapshot(b, &nb);
  assert_int_equal(na, nb);
  assert_memory_equal(sa, sb, na);
  free(sa);
  free(sb);
}

/* transformers' current layout (prefixed, lm_head omitted) and the older
 * GPT2Model one (no prefix, lm_head stored tied, causal masks) import to
 * the same parameters, so the logits are bit-identical. */
static void test_import_matches_source_model(void **state) {
  mixp_session *s = *state;
  mixp_module *src = random_gpt(s, CONFIG, 1);
  for (int layout = 0; layout < 2; ++layout) {
    hf_file f;
    const char *prefix = layout == 0 ? "transformer." : "";
    from_model(&f, src, prefix, MIXP_F32);
    if (layout == 1) {
      copy_tensor(&f, "wte.weight", "lm_head.weight");
      add_mask(&f, prefix, 0, 6, -1);
      add_mask(&f, prefix, 1, 6, -1);
    }
    char path[300];
    path_of(path, sizeof path, "import.safetensors");
    write_file(&f, path);
    free_file(&f);
    mixp_module *dst = random_gpt(s, CONFIG, 2);
    MT_OK(mixp_model_load_hf_gpt2(dst, NULL, path));
    assert_same_params(src, dst);
    assert_same_logits(src, dst, s);
    mixp_module_destroy(dst);
  }
  mixp_module_destroy(src);
}

/* A BF16 file imports each value rounded once: the parameters equal the
 * source's cast to bf16 and back; a directory path finds model.safetensors. */
static void test_import_bf16_file_and_directory(void **state) {
  mixp_session *s = *state;
  mixp_module *src = random_gpt(s, CONFIG, 3);
  hf_file f;
  from_model(&f, src, "transformer.", MIXP_BF16);
  char dir[300], path[340];
  path_of(dir, sizeof dir, "bf16dir");
  mkdir(dir, 0777);
  snprintf(path, sizeof path, "%s/model.safetensors", dir);
  write_file(&f, path);
  free_file(&f);
  mixp_module *dst = random_gpt(s, CONFIG, 4);
  MT_OK(mixp_model_load_hf_gpt2(dst, NULL, dir));
  for (int i = 0; i < mixp_module_num_parameters(src); ++i) {
    mixp_tensor *p = NULL, *q = NULL, *h = NULL, *back = NULL;
    MT_OK(mixp_module_parameter(src, i, &p));
    MT_OK(mixp_module_parameter(dst, i, &q));
    MT_OK(mixp_cast(p, MIXP_BF16, &h));
    MT_OK(mixp_cast(h, MIXP_F32, &back));
    double *want = mt_values(back), *got = mt_values(q);
    assert_memory_equal(want, got, (size_t)mixp_tensor_numel(p) * sizeof(double));
    free(want);
    free(got);
    mixp_tensor_release(p);
    mixp_tensor_release(q);
    mixp_tensor_release(h);
    mixp_tensor_release(back);
  }
  mixp_module_destroy(dst);
  mixp_module_destroy(src);
}

static unsigned char *read_all(const char *path, size_t *n) {
  FILE *f = fopen(path, "rb");
  assert_non_null(f);
  fseek(f, 0, SEEK_END);
  long size = ftell(f);
  fseek(f, 0, SEEK_SET);
  unsigned char *b = malloc((size_t)size + 1);
  assert_int_equal(fread(b, 1, (size_t)size, f), (size_t)size);
  b[size] = 0;
  fclose(f);
  *n = (size_t)size;
  return b;
}

/* The export is the layout the suite writes (same names, transposes and
 * bytes, in the order of the model's parameters), with the config.json
 * transformers needs. */
static void test_export_layout(void **state) {
  mixp_session *s = *state;
  mixp_module *m = random_gpt(s, CONFIG, 5);
  char dir[300], path[340];
  path_of(dir, sizeof dir, "export");
  MT_OK(mixp_model_save_hf_gpt2(m, NULL, dir, MIXP_F32));
  snprintf(path, sizeof path, "%s/model.safetensors", dir);
  size_t n = 0;
  unsigned char *got = read_all(path, &n);
  assert_non_null(strstr((const char *)got + 8,
                         "\"transformer.h.1.attn.c_attn.weight\":{\"dtype\":\"F32\",\"shape\":[8,24]"));
  assert_null(strstr((const char *)got + 8, "lm_head"));
  /* The tensor bytes: the suite's own HF layout of the model, in order. */
  hf_file f;
  from_model(&f, m, "transformer.", MIXP_F32);
  uint64_t hlen = 0;
  for (int i = 7; i >= 0; --i) hlen = (hlen << 8) | got[i];
  size_t at = 8 + (size_t)hlen;
  for (int i = 0; i < f.n; ++i) {
    assert_true(at + f.t[i].nbytes <= n);
    assert_memory_equal(got + at, f.t[i].bytes, f.t[i].nbytes);
    at += f.t[i].nbytes;
  }
  assert_int_equal(at, n);
  free_file(&f);
  free(got);
  snprintf(path, sizeof path, "%s/config.json", dir);
  unsigned char *cfg = read_all(path, &n);
  const char *want[] = {"\"model_type\": \"gpt2\"", "\"n_layer\": 2", "\"n_head\": 2",
                        "\"n_embd\": 8", "\"vocab_size\": 13", "\"n_positions\": 6",
                        "\"activation_function\": \"gelu_new\"", "\"tie_word_embeddings\": true"};
  for (size_t i = 0; i < sizeof want / sizeof want[0]; ++i)
    if (!strstr((const char *)cfg, want[i])) {
      print_error("config.json lacks %s:\n%s\n", want[i], cfg);
      fail();
    }
  free(cfg);
  mixp_module_destroy(m);
}

/* One AdamW step of O2 bf16 on next-token targets. */
static void o2_step(mixp_session *s, mixp_module *m, mixp_optimizer *opt) {
  mixp_autocast_options ao;
  mixp_autocast_options_init(&ao);
  ao.level = MIXP_AMP_O2;
  ao.dtype = MIXP_BF16;
  mixp_tensor *x = tokens(s), *t = NULL, *y = NULL, *y2 = NULL, *loss = NULL;
  int64_t tg[12];
  for (int i = 0; i < 12; ++i) tg[i] = (i * 7 + 10) % 13;
  const int64_t ts[1] = {12}, flat[2] = {-1, 13};
  MT_OK(mixp_tensor_from_host(s, tg, sizeof tg, MIXP_I64, ts, 1, &t));
  MT_OK(mixp_autocast_push(s, &ao));
  MT_OK(mixp_module_forward(m, x, &y));
  MT_OK(mixp_reshape(y, flat, 2, &y2));
  MT_OK(mixp_cross_entropy(y2, t, MIXP_REDUCTION_MEAN, MIXP_IGNORE_INDEX_DEFAULT, &loss));
  MT_OK(mixp_autocast_pop(s));
  MT_OK(mixp_optimizer_zero_grad(opt));
  MT_OK(mixp_backward(loss, NULL));
  MT_OK(mixp_optimizer_step(opt));
  mixp_tensor *all[5] = {x, t, y, y2, loss};
  for (int i = 0; i < 5; ++i) mixp_tensor_release(all[i]);
}

static void export_to(mixp_module *m, mixp_optimizer *opt, const char *leaf, unsigned char **bytes,
                      size_t *n) {
  char dir[300], path[340];
  path_of(dir, sizeof dir, leaf);
  MT_OK(mixp_model_save_hf_gpt2(m, opt, dir, MIXP_F32));
  snprintf(path, sizeof path, "%s/model.safetensors", dir);
  *bytes = read_all(path, n);
}

/* import -> 50 steps of O2 bf16 fine-tuning -> export (the fp32 masters)
 * -> import into a fresh model -> export: the two exports are the same
 * bytes, so every tensor came back; the decorated parameters are the
 * masters' bf16 rounding; and an import into the decorated model with its
 * optimizer restores the masters exactly. */
static void test_round_trip_after_o2_bf16_fine_tuning(void **state) {
  mixp_session *s = *state;
  mixp_module *src = random_gpt(s, CONFIG, 6);
  char path[300];
  path_of(path, sizeof path, "pretrained.safetensors");
  hf_file f;
  from_model(&f, src, "transformer.", MIXP_F32);
  write_file(&f, path);
  free_file(&f);

  mixp_module *m = random_gpt(s, CONFIG, 7);
  MT_OK(mixp_model_load_hf_gpt2(m, NULL, path));
  int n = mixp_module_num_parameters(m);
  mixp_tensor *ps[64];
  for (int i = 0; i < n; ++i) MT_OK(mixp_module_parameter(m, i, &ps[i]));
  mixp_optimizer_options oo;
  mixp_optimizer_options_init(&oo, MIXP_OPTIM_ADAMW);
  oo.lr = 1e-3;
  mixp_optimizer *opt = NULL;
  MT_OK(mixp_optimizer_create(s, ps, n, &oo, &opt));
  for (int i = 0; i < n; ++i) mixp_tensor_release(ps[i]);
  mixp_decorate_options d;
  mixp_decorate_options_init(&d);
  d.dtype = MIXP_BF16;
  MT_OK(mixp_amp_decorate(m, opt, &d));
  for (int k = 0; k < 50; ++k) o2_step(s, m, opt);

  unsigned char *e1 = NULL, *e2 = NULL, *e3 = NULL;
  size_t n1 = 0, n2 = 0, n3 = 0;
  export_to(m, opt, "tuned", &e1, &n1);
  mixp_module *fresh = random_gpt(s, CONFIG, 8);
  char tuned[300];
  path_of(tuned, sizeof tuned, "tuned");
  MT_OK(mixp_model_load_hf_gpt2(fresh, NULL, tuned));
  export_to(fresh, NULL, "tuned_again", &e2, &n2);
  assert_int_equal(n1, n2);
  assert_memory_equal(e1, e2, n1);
  /* Fine-tuning moved the weights: the export is not the pretrained file. */
  size_t n0 = 0;
  unsigned char *e0 = NULL;
  export_to(src, NULL, "pretrained_export", &e0, &n0);
  assert_int_equal(n0, n1);
  assert_true(memcmp(e0, e1, n0) != 0);
  /* The tuned model's bf16 parameters are the rounding of what came back. */
  for (int i = 0; i < n; ++i) {
    mixp_tensor *p = NULL, *q = NULL, *qc = NULL;
    MT_OK(mixp_module_parameter(m, i, &p));
    MT_OK(mixp_module_parameter(fresh, i, &q));
    MT_OK(mixp_cast(q, mixp_tensor_dtype(p), &qc));
    double *a = mt_values(p), *b = mt_values(qc);
    assert_memory_equal(a, b, (size_t)mixp_tensor_numel(p) * sizeof(double));
    free(a);
    free(b);
    mixp_tensor_release(p);
    mixp_tensor_release(q);
    mixp_tensor_release(qc);
  }
  /* Five more steps, then the import restores masters and parameters. */
  for (int k = 0; k < 5; ++k) o2_step(s, m, opt);
  MT_OK(mixp_model_load_hf_gpt2(m, opt, tuned));
  export_to(m, opt, "restored", &e3, &n3);
  assert_int_equal(n1, n3);
  assert_memory_equal(e1, e3, n1);
  free(e0);
  free(e1);
  free(e2);
  free(e3);
  mixp_optimizer_destroy(opt);
  mixp_module_destroy(fresh);
  mixp_module_destroy(m);
  mixp_module_destroy(src);
}

/* A bad file fails naming the tensor, and the model is unchanged. */
static void expect_refused(mixp_session *s, mixp_module *m, hf_file *f, mixp_status st,
                           const char *n1, const char *n2) {
  char path[300];
  path_of(path, sizeof path, "bad.safetensors");
  write_file(f, path);
  size_t nb = 0, na = 0;
  unsigned char *before = snapshot(m, &nb);
  MT_FAILS2(mixp_model_load_hf_gpt2(m, NULL, path), st, n1, n2);
  unsigned char *after = snapshot(m, &na);
  assert_int_equal(nb, na);
  assert_memory_equal(before, after, nb);
  free(before);
  free(after);
  (void)s;
}

static void test_bad_files_change_nothing(void **state) {
  mixp_session *s = *state;
  mixp_module *src = random_gpt(s, CONFIG, 9), *m = random_gpt(s, CONFIG, 10);
  hf_file f;
  /* A wrong shape. */
  from_model(&f, src, "transformer.", MIXP_F32);
  find(&f, "transformer.h.1.mlp.c_fc.weight")->shape[0] = 32;
  find(&f, "transformer.h.1.mlp.c_fc.weight")->shape[1] = 8;
  expect_refused(s, m, &f, MIXP_ERR_SHAPE, "'transformer.h.1.mlp.c_fc.weight' has shape [32,8]",
                 "[8,32]");
  free_file(&f);
  /* A missing tensor (the last one, after every other staged). */
  from_model(&f, src, "transformer.", MIXP_F32);
  drop(&f, "transformer.ln_f.bias");
  expect_refused(s, m, &f, MIXP_ERR_SHAPE, "lacks 1 of the gpt's", "'transformer.ln_f.bias'");
  free_file(&f);
  /* An unknown tensor. */
  from_model(&f, src, "transformer.", MIXP_F32);
  copy_tensor(&f, "transformer.ln_f.bias", "transformer.ln_g.bias");
  expect_refused(s, m, &f, MIXP_ERR_SHAPE, "no gpt parameter takes", "'transformer.ln_g.bias'");
  free_file(&f);
  /* A tensor of an integer dtype. */
  from_model(&f, src, "transformer.", MIXP_F32);
  find(&f, "transformer.h.0.ln_2.weight")->dtype = "I32";
  expect_refused(s, m, &f, MIXP_ERR_DTYPE, "'transformer.h.0.ln_2.weight' is I32", "F32, F16 or BF16");
  free_file(&f);
  /* An untied lm_head. */
  from_model(&f, src, "transformer.", MIXP_F32);
  copy_tensor(&f, "transformer.wte.weight", "lm_head.weight");
  find(&f, "lm_head.weight")->bytes[5] ^= 1;
  expect_refused(s, m, &f, MIXP_ERR_SHAPE, "'lm_head.weight'", "untied");
  free_file(&f);
  /* A mask that is not causal. */
  from_model(&f, src, "", MIXP_F32);
  add_mask(&f, "", 1, 6, 4);
  expect_refused(s, m, &f, MIXP_ERR_SHAPE, "'h.1.attn.bias' is not the causal mask", "[0, 0, 0, 4]");
  free_file(&f);
  /* A GPT-2 of another size: three layers, a wider vocabulary. */
  {
    mixp_module *big = random_gpt(s, "gpt n_layer=3 n_head=2 n_embd=8 vocab=17 block_size=6 gelu=tanh", 11);
    from_model(&f, big, "transformer.", MIXP_F32);
    expect_refused(s, m, &f, MIXP_ERR_SHAPE, "n_layer=3 (the model has n_layer=2)",
                   "vocab_size=17 (the model has vocab=13)");
    free_file(&f);
    mixp_module_destroy(big);
  }
  /* No GPT-2 at all: another network's weights. */
  {
    f.n = 0;
    hf_tensor *t = add(&f, "encoder.layer.0.weight");
    t->dtype = "F32";
    t->ndim = 2;
    t->shape[0] = t->shape[1] = 2;
    t->nbytes = 16;
    t->bytes = calloc(1, 16);
    expect_refused(s, m, &f, MIXP_ERR_SHAPE, "lacks 28 of the gpt's 28 tensors", "'wte.weight'");
    free_file(&f);
  }
  /* The same tensor with and without the prefix. */
  from_model(&f, src, "transformer.", MIXP_F32);
  copy_tensor(&f, "transformer.wpe.weight", "wpe.weight");
  expect_refused(s, m, &f, MIXP_ERR_SHAPE, "both 'wpe.weight' and 'transformer.wpe.weight'", "twice");
  free_file(&f);
  /* Not a safetensors file at all, and no file. */
  {
    char path[300];
    path_of(path, sizeof path, "garbage.safetensors");
    FILE *g = fopen(path, "wb");
    fputs("not a safetensors file", g);
    fclose(g);
    MT_FAILS(mixp_model_load_hf_gpt2(m, NULL, path), MIXP_ERR_CORRUPT, "garbage.safetensors");
    path_of(path, sizeof path, "absent.safetensors");
    MT_FAILS(mixp_model_load_hf_gpt2(m, NULL, path), MIXP_ERR_IO, "absent.safetensors");
  }
  mixp_module_destroy(m);
  mixp_module_destroy(src);
}

static void write_text(const char *path, const char *text) {
  FILE *f = fopen(path, "wb");
  assert_non_null(f);
  fputs(text, f);
  fclose(f);
}

/* A config.json beside the weights is checked too: n_head (which no tensor
 * shows), the architecture's keys; nested values are skipped. */
static void test_config_json_checked(void **state) {
  mixp_session *s = *state;
  mixp_module *src = random_gpt(s, CONFIG, 15), *m = random_gpt(s, CONFIG, 16);
  char dir[300], weights[340], cfg[340];
  path_of(dir, sizeof dir, "with_config");
  mkdir(dir, 0777);
  snprintf(weights, sizeof weights, "%s/model.safetensors", dir);
  snprintf(cfg, sizeof cfg, "%s/config.json", dir);
  hf_file f;
  from_model(&f, src, "transformer.", MIXP_F32);
  write_file(&f, weights);
  free_file(&f);
  static const struct {
    const char *json;
    mixp_status st;
    const char *n1, *n2;
  } bad[] = {
      {"{\"model_type\": \"gpt2\", \"n_head\": 4, \"n_layer\": 2}", MIXP_ERR_SHAPE,
       "n_head=4 (the model has n_head=2)", "config.json"},
      {"{\"model_type\": \"gpt_neo\"}", MIXP_ERR_INVALID_ARGUMENT, "model_type 'gpt_neo'", "not 'gpt2'"},
      {"{\"activation_function\": \"relu\"}", MIXP_ERR_INVALID_ARGUMENT,
       "activation_function 'relu'", "gelu_new"},
      {"{\"layer_norm_epsilon\": 1e-06}", MIXP_ERR_INVALID_ARGUMENT, "layer_norm_epsilon 1e-06", "1e-5"},
      {"{\"tie_word_embeddings\": false}", MIXP_ERR_INVALID_ARGUMENT, "tie_word_embeddings is false",
       "ties"},
      {"{\"n_inner\": 64}", MIXP_ERR_SHAPE, "n_inner=64 (the model has 4 * n_embd=32)", "sizes"},
      {"{\"n_head\": ", MIXP_ERR_CORRUPT, "config.json' is not valid JSON", "expected a value"},
  };
  size_t nb = 0;
  unsigned char *before = snapshot(m, &nb);
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; ++i) {
    write_text(cfg, bad[i].json);
    MT_FAILS2(mixp_model_load_hf_gpt2(m, NULL, dir), bad[i].st, bad[i].n1, bad[i].n2);
    MT_FAILS(mixp_model_load_hf_gpt2(m, NULL, weights), bad[i].st, bad[i].n1);
  }
  size_t na = 0;
  unsigned char *after = snapshot(m, &na);
  assert_memory_equal(before, after, nb);
  free(before);
  free(after);
  /* What transformers writes: nested objects and lists, nulls, floats. */
  write_text(cfg,
             "{\n  \"activation_function\": \"gelu_new\",\n  \"architectures\": [\"GPT2LMHeadModel\"],\n"
             "  \"attn_pdrop\": 0.1, \"bos_token_id\": 50256, \"layer_norm_epsilon\": 1e-05,\n"
             "  \"model_type\": \"gpt2\", \"n_embd\": 8, \"n_head\": 2, \"n_inner\": null,\n"
             "  \"n_layer\": 2, \"n_positions\": 6, \"vocab_size\": 13, \"pad_token_id\": null,\n"
             "  \"task_specific_params\": {\"text-generation\": {\"do_sample\": true, \"max_length\": 50}},\n"
             "  \"summary_type\": \"cls_index\", \"transformers_version\": \"5.24.0\", \"x\": [[1, {\"y\": []}]]\n}\n");
  MT_OK(mixp_model_load_hf_gpt2(m, NULL, dir));
  assert_same_params(src, m);
  mixp_module_destroy(m);
  mixp_module_destroy(src);
}

/* Models that are not GPT-2's: the erf GELU, another zoo model. */
static void test_models_that_are_not_gpt2(void **state) {
  mixp_session *s = *state;
  mixp_module *src = random_gpt(s, CONFIG, 12);
  hf_file f;
  from_model(&f, src, "transformer.", MIXP_F32);
  char path[300], dir[300];
  path_of(path, sizeof path, "ok.safetensors");
  write_file(&f, path);
  free_file(&f);
  path_of(dir, sizeof dir, "never");
  mixp_module *erf = NULL, *mlp = NULL;
  MT_OK(mixp_model_create(s, "gpt n_layer=2 n_head=2 n_embd=8 vocab=13 block_size=6", &erf));
  MT_FAILS2(mixp_model_load_hf_gpt2(erf, NULL, path), MIXP_ERR_INVALID_ARGUMENT, "gelu=erf",
            "create the model with gelu=tanh");
  MT_FAILS(mixp_model_save_hf_gpt2(erf, NULL, dir, MIXP_F32), MIXP_ERR_INVALID_ARGUMENT, "gelu=tanh");
  MT_OK(mixp_model_create(s, "mlp in=4 hidden=3 classes=2", &mlp));
  MT_FAILS(mixp_model_load_hf_gpt2(mlp, NULL, path), MIXP_ERR_INVALID_ARGUMENT, "not a zoo gpt");
  MT_FAILS(mixp_model_save_hf_gpt2(mlp, NULL, dir, MIXP_F32), MIXP_ERR_INVALID_ARGUMENT,
           "not a zoo gpt");
  struct stat st;
  assert_int_not_equal(stat(dir, &st), 0); /* nothing was written */
  MT_FAILS(mixp_model_create(s, "gpt gelu=exact", &erf), MIXP_ERR_INVALID_ARGUMENT,
           "expected one of erf, tanh");
  mixp_module_destroy(erf);
  mixp_module_destroy(mlp);
  mixp_module_destroy(src);
}

/* gelu=tanh changes the MLP's activation only: the same seed draws the
 * same weights, and the logits move by GELU's approximation error. */
static void test_gelu_option(void **state) {
  mixp_session *s = *state;
  mixp_module *a = NULL, *b = NULL;
  MT_OK(mixp_session_set_seed(s, 77));
  MT_OK(mixp_model_create(s, "gpt n_layer=2 n_head=2 n_embd=8 vocab=13 block_size=6 gelu=erf", &a));
  MT_OK(mixp_session_set_seed(s, 77));
  MT_OK(mixp_model_create(s, CONFIG, &b));
  assert_same_params(a, b);
  size_t na = 0, nb = 0;
  float *la = logits(a, s, &na), *lb = logits(b, s, &nb);
  double most = 0;
  for (size_t i = 0; i < na; ++i) most = fmax(most, fabs((double)la[i] - (double)lb[i]));
  assert_true(most > 0 && most < 1e-2);
  free(la);
  free(lb);
  mixp_module_destroy(a);
  mixp_module_destroy(b);
}

static void test_misuse(void **state) {
  mixp_session *s = *state;
  mixp_module *m = random_gpt(s, CONFIG, 13);
  char path[300], file[300];
  path_of(path, sizeof path, "misuse");
  MT_FAILS(mixp_model_load_hf_gpt2(NULL, NULL, path), MIXP_ERR_INVALID_ARGUMENT, "model");
  MT_FAILS(mixp_model_load_hf_gpt2(m, NULL, NULL), MIXP_ERR_INVALID_ARGUMENT, "path is NULL");
  MT_FAILS(mixp_model_load_hf_gpt2(m, NULL, ""), MIXP_ERR_INVALID_ARGUMENT, "path is empty");
  MT_FAILS(mixp_model_save_hf_gpt2(NULL, NULL, path, MIXP_F32), MIXP_ERR_INVALID_ARGUMENT, "model");
  MT_FAILS(mixp_model_save_hf_gpt2(m, NULL, NULL, MIXP_F32), MIXP_ERR_INVALID_ARGUMENT, "dir is NULL");
  MT_FAILS(mixp_model_save_hf_gpt2(m, NULL, "", MIXP_F32), MIXP_ERR_INVALID_ARGUMENT, "dir is empty");
  MT_FAILS(mixp_model_save_hf_gpt2(m, NULL, path, MIXP_I64), MIXP_ERR_DTYPE, "MIXP_F32, MIXP_F16 or MIXP_BF16");
  MT_FAILS(mixp_model_save_hf_gpt2(m, NULL, path, MIXP_F64), MIXP_ERR_DTYPE, "got f64");
  MT_FAILS(mixp_model_save_hf_gpt2(m, NULL, path, (mixp_dtype)-1), MIXP_ERR_INVALID_ARGUMENT,
           "unknown dtype -1");
  MT_FAILS(mixp_model_save_hf_gpt2(m, NULL, path, (mixp_dtype)INT32_MAX), MIXP_ERR_INVALID_ARGUMENT,
           "unknown dtype");
  /* An optimizer of another session. */
  mixp_session *other = mt_session();
  double v[2] = {1, 2};
  mixp_tensor *p = mt_param(other, MIXP_F32, v, 2);
  mixp_optimizer *opt = mt_sgd(other, &p, 1, 0.1);
  MT_FAILS(mixp_model_load_hf_gpt2(m, opt, path), MIXP_ERR_DEVICE, "different session");
  MT_FAILS(mixp_model_save_hf_gpt2(m, opt, path, MIXP_F32), MIXP_ERR_DEVICE, "different session");
  mixp_optimizer_destroy(opt);
  mixp_tensor_release(p);
  mixp_session_destroy(other);
  /* A directory path that is a file. */
  path_of(file, sizeof file, "plain_file");
  FILE *g = fopen(file, "wb");
  fclose(g);
  MT_FAILS(mixp_model_save_hf_gpt2(m, NULL, file, MIXP_F32), MIXP_ERR_IO, "not a directory");
  /* Each dtype exports and imports back; F16 values round once. */
  mixp_dtype dts[3] = {MIXP_F32, MIXP_F16, MIXP_BF16};
  for (int i = 0; i < 3; ++i) {
    MT_OK(mixp_model_save_hf_gpt2(m, NULL, path, dts[i]));
    mixp_module *back = random_gpt(s, CONFIG, 14);
    MT_OK(mixp_model_load_hf_gpt2(back, NULL, path));
    if (dts[i] == MIXP_F32) assert_same_params(m, back);
    mixp_module_destroy(back);
  }
  mixp_module_destroy(m);
}

static int setup(void **state) {
  snprintf(g_dir, sizeof g_dir, "%s/mixp_hf_gpt2_XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
  if (!mkdtemp(g_dir)) return -1;
  return mt_setup_session(state);
}

static int teardown(void **state) {
  char cmd[400];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", g_dir);
  if (system(cmd) != 0) return -1;
  return mt_teardown_session(state);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_import_matches_source_model),
      cmocka_unit_test(test_import_bf16_file_and_directory),
      cmocka_unit_test(test_export_layout),
      cmocka_unit_test(test_round_trip_after_o2_bf16_fine_tuning),
      cmocka_unit_test(test_bad_files_change_nothing),
      cmocka_unit_test(test_config_json_checked),
      cmocka_unit_test(test_models_that_are_not_gpt2),
      cmocka_unit_test(test_gelu_option),
      cmocka_unit_test(test_misuse),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
