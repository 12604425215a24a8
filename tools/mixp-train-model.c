/* mixp-train's models and data: the zoo's models (mixp_model_create; the
 * --hidden flag configures its mlp) configured from the data, and the
 * datasets the --data flag names. Public API only. */
#define _POSIX_C_SOURCE 200809L
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mixp-train.h"

#define SYNTH_TRAIN 60000
#define SYNTH_TEST 10000
/* Synthetic images of arbitrary size default to fewer samples (each may be
 * large); --limit-train/--limit-test choose other counts. */
#define SYNTH_IMAGES_TRAIN 8192
#define SYNTH_IMAGES_TEST 2048

static int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }

/* ---- data ------------------------------------------------------------------ */

static mixp_dataset *synthetic(mixp_session *s, int64_t n, uint64_t seed, int64_t c, int64_t h,
                               int64_t w) {
  mixp_synthetic_options o;
  mixp_synthetic_options_init(&o);
  o.num_samples = n;
  o.seed = seed;
  o.channels = c;
  o.height = h;
  o.width = w;
  mixp_dataset *d = NULL;
  CHECK(mixp_dataset_synthetic(s, &o, &d));
  return d;
}

/* The last tenth of the text's windows (at least one) is held out; the
 * block_size windows between the splits are dropped, so that no token of the
 * held-out text is a training target. */
static void open_text(mixp_session *s, const args *a, mixp_dataset **train, mixp_dataset **test) {
  mixp_dataset *all = NULL;
  CHECK(mixp_dataset_text(s, a->text_path, a->block_size, &all));
  int64_t n = mixp_dataset_size(all);
  int64_t n_test = n / 10 > 0 ? n / 10 : 1;
  int64_t n_train = n - n_test - a->block_size;
  if (n_train < 1) {
    fprintf(stderr,
            "mixp-train: %s is too short for --block-size %" PRId64 ": it has %" PRId64
            " windows, and a train/held-out split needs more than %" PRId64 "\n",
            a->text_path, a->block_size, n, n_test + a->block_size);
    exit(2);
  }
  CHECK(mixp_dataset_subset(all, 0, n_train, train));
  CHECK(mixp_dataset_subset(all, n - n_test, n_test, test));
  mixp_dataset_destroy(all);
}

const char *open_data(mixp_session *s, const args *a, mixp_dataset **train,
                      mixp_dataset **test) {
  if (a->data_kind == DATA_TEXT) {
    open_text(s, a, train, test);
    return "text";
  }
  if (a->data_kind == DATA_FASHION_MNIST) {
    mixp_status st = mixp_dataset_fashion_mnist(s, a->data_dir, 1, train);
    if (st == MIXP_OK) {
      CHECK(mixp_dataset_fashion_mnist(s, a->data_dir, 0, test));
      return "fashion-mnist";
    }
    if (st != MIXP_ERR_IO) die_mixp("opening Fashion-MNIST");
    printf("Fashion-MNIST is not available: %s\n", mixp_last_error());
    printf("`apt-get install dataset-fashion-mnist` provides it; using synthetic data instead\n");
  }
  /* Same seed base for both splits: seed s trains, s + 1 tests; they share
   * the class prototypes, so test accuracy measures generalisation. */
  const int images = a->data_kind == DATA_SYNTHETIC_IMAGES;
  int64_t ntrain = images ? SYNTH_IMAGES_TRAIN : SYNTH_TRAIN;
  int64_t ntest = images ? SYNTH_IMAGES_TEST : SYNTH_TEST;
  if (a->limit_train > 0) ntrain = images ? a->limit_train : min64(a->limit_train, ntrain);
  if (a->limit_test > 0) ntest = images ? a->limit_test : min64(a->limit_test, ntest);
  int64_t c = images ? a->image_c : 1, h = images ? a->image_h : 28, w = images ? a->image_w : 28;
  *train = synthetic(s, ntrain, a->seed, c, h, w);
  *test = synthetic(s, ntest, a->seed + 1, c, h, w);
  return images ? "synthetic-images" : "synthetic";
}

/* ---- zoo models ------------------------------------------------------------------ */

/* Whether the user's --model-config sets `key`. */
static int has_key(const char *config, const char *key) {
  size_t n = strlen(key);
  for (const char *p = config; p && *p;) {
    while (*p == ' ' || *p == '\t') ++p;
    if (strncmp(p, key, n) == 0 && p[n] == '=') return 1;
    while (*p && *p != ' ' && *p != '\t') ++p;
  }
  return 0;
}

/* Appends " key=value" unless the user's config sets the key. */
static void derive(char *config, const char *user, const char *key, int64_t value) {
  if (has_key(user, key)) return;
  size_t len = strlen(config);
  snprintf(config + len, MAX_CONFIG - len, " %s=%" PRId64, key, value);
}

/* The MLP keeps the original job's summary ("mlp 784-256-128-10"); the zoo's
 * mlp builds the same layers in the same order from the same seed. */
static void mlp_config(const args *a, int64_t in, int64_t classes, model *m) {
  int len = snprintf(m->config, sizeof m->config, "mlp %" PRId64, in);
  size_t zlen = (size_t)snprintf(m->zoo_config, sizeof m->zoo_config, "mlp in=%" PRId64 " hidden=", in);
  for (int i = 0; i < a->n_hidden; ++i) {
    if (len > 0 && (size_t)len < sizeof m->config)
      len += snprintf(m->config + len, sizeof m->config - (size_t)len, "-%" PRId64, a->hidden[i]);
    if (zlen < sizeof m->zoo_config)
      zlen += (size_t)snprintf(m->zoo_config + zlen, sizeof m->zoo_config - zlen, "%s%" PRId64,
                               i ? "," : "", a->hidden[i]);
  }
  if (len > 0 && (size_t)len < sizeof m->config)
    snprintf(m->config + len, sizeof m->config - (size_t)len, "-%" PRId64, classes);
  if (zlen < sizeof m->zoo_config)
    snprintf(m->zoo_config + zlen, sizeof m->zoo_config - zlen, " classes=%" PRId64, classes);
}

static void zoo_config(const args *a, const int64_t *shape, int ndim, int64_t classes, model *m) {
  const char *user = a->model_config ? a->model_config : "";
  m->is_gpt = strcmp(a->model, "gpt") == 0;
  snprintf(m->config, sizeof m->config, "%s", a->model);
  if (m->is_gpt) {
    derive(m->config, user, "vocab", classes);
    derive(m->config, user, "block_size", a->block_size);
  } else {
    if (ndim != 3) {
      fprintf(stderr, "mixp-train: --model %s needs image data [C, H, W]\n", a->model);
      exit(2);
    }
    derive(m->config, user, "in_channels", shape[0]);
    derive(m->config, user, "classes", classes);
    if (strcmp(a->model, "cnn") == 0) {
      if (shape[1] != shape[2] && !has_key(user, "image_size")) {
        fprintf(stderr,
                "mixp-train: --model cnn needs square images, got %" PRId64 "x%" PRId64 "\n",
                shape[1], shape[2]);
        exit(2);
      }
      derive(m->config, user, "image_size", shape[1]);
    }
  }
  size_t len = strlen(m->config);
  if (*user) snprintf(m->config + len, sizeof m->config - len, " %s", user);
  snprintf(m->zoo_config, sizeof m->zoo_config, "%s", m->config);
}

/* ---- the model interface ---------------------------------------------------------- */

void model_create(mixp_session *s, const args *a, const int64_t *shape, int ndim, int64_t classes,
                  model *m) {
  memset(m, 0, sizeof *m);
  m->label_smoothing = a->label_smoothing;
  if (strcmp(a->model, "mlp") == 0) {
    int64_t in = 1;
    for (int i = 0; i < ndim; ++i) in *= shape[i];
    mlp_config(a, in, classes, m);
  } else {
    zoo_config(a, shape, ndim, classes, m);
  }
  /* Each block of the model becomes a region of its own; the user's
   * --model-config may still say checkpoint=0. */
  if (a->checkpoint_activations) {
    const char *user = a->model_config ? a->model_config : "";
    derive(m->zoo_config, user, "checkpoint", 1);
    if (strcmp(a->model, "mlp") != 0) derive(m->config, user, "checkpoint", 1);
  }
  if (a->channels_last) {
    if (strcmp(a->model, "mlp") == 0 || m->is_gpt) {
      fprintf(stderr, "mixp-train: --channels-last needs a convolutional model (cnn, resnet*, mobilenet_v3_*)\n");
      exit(2);
    }
    const char *user = a->model_config ? a->model_config : "";
    derive(m->zoo_config, user, "channels_last", 1);
    derive(m->config, user, "channels_last", 1);
  }
  CHECK(mixp_model_create(s, m->zoo_config, &m->zoo));
}

void model_destroy(model *m) {
  mixp_module_destroy(m->zoo);
  memset(m, 0, sizeof *m);
}

int model_parameters(const model *m, mixp_tensor **out, int cap) {
  int k = mixp_module_num_parameters(m->zoo);
  if (k < 0) die_mixp("listing the model's parameters");
  if (k > cap) {
    fprintf(stderr, "mixp-train: the model has more than %d parameter tensors\n", cap);
    exit(1);
  }
  for (int j = 0; j < k; ++j) CHECK(mixp_module_parameter(m->zoo, j, &out[j]));
  return k;
}

mixp_tensor *model_forward(const model *m, const mixp_tensor *x) {
  mixp_tensor *y = NULL;
  CHECK(mixp_module_forward(m->zoo, x, &y));
  return y;
}

void model_set_training(const model *m, int training) {
  CHECK(mixp_module_set_training(m->zoo, training));
}

mixp_tensor *model_loss(const model *m, const mixp_tensor *logits, const mixp_tensor *y, int training) {
  mixp_tensor *loss = NULL;
  mixp_cross_entropy_options o;
  mixp_cross_entropy_options_init(&o);
  o.label_smoothing = training ? m->label_smoothing : 0.0;
  if (!m->is_gpt) {
    CHECK(mixp_cross_entropy_ex(logits, y, &o, &loss));
    return loss;
  }
  /* Every position predicts its next token: [B, T, V] -> [B*T, V]. */
  const int64_t v = mixp_tensor_dim(logits, -1), flat_y[1] = {-1}, flat_l[2] = {-1, v};
  mixp_tensor *l2 = NULL, *y2 = NULL;
  CHECK(mixp_reshape(logits, flat_l, 2, &l2));
  CHECK(mixp_reshape(y, flat_y, 1, &y2));
  CHECK(mixp_cross_entropy_ex(l2, y2, &o, &loss));
  mixp_tensor_release(l2);
  mixp_tensor_release(y2);
  return loss;
}
