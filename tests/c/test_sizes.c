/* Absurd sizes through every public function that takes one: 0, -1, 2^31,
 * 2^62, INT64_MAX (and products of them that overflow int64 or the byte
 * count). Each call must fail with a status and a message that begins with
 * the function's name -- never crash, never MIXP_ERR_INTERNAL, never return
 * a tensor of an impossible shape -- and leave its outputs untouched. The
 * memory statistics must survive a failed allocation. */
#include <unistd.h>

#include "test_util.h"

#define BIG ((int64_t)1 << 62)
/* Sizes no tensor can have alone. 2^31 is not among them: 2^31 floats fit in
 * this machine's memory, so it is absurd only in a product (below). */
static const int64_t k_huge[] = {-1, BIG, BIG + 3, INT64_MAX, INT64_MIN};
#define N_HUGE ((int)(sizeof k_huge / sizeof k_huge[0]))

/* The call failed with one of the statuses a caller can act on, named itself
 * first in its message, and left *out alone. */
#define EXPECT_REFUSED(fn, call, out, sentinel)                                                     \
  do {                                                                                            \
    const mixp_status st_ = (call);                                                               \
    if (st_ == MIXP_OK || st_ == MIXP_ERR_INTERNAL) {                                             \
      print_error("%s returned %d for an absurd size: %s\n", #call, (int)st_, mixp_last_error()); \
      fail();                                                                                     \
    }                                                                                             \
    if (strncmp(mixp_last_error(), fn ":", strlen(fn ":")) != 0) {                                \
      print_error("%s: message \"%s\" does not start with %s:\n", #call, mixp_last_error(), fn);  \
      fail();                                                                                     \
    }                                                                                             \
    assert_ptr_equal((out), (sentinel));                                                          \
  } while (0)

#define SENT ((mixp_tensor *)0x7)
#define SENTM ((mixp_module *)0x7)

/* Item: mixp_pad with (0, 2^62) made a [2, 2^62+3] tensor and wrote out of
 * bounds; on f16/bf16 it crashed. */
static void test_pad_huge(void **state) {
  (void)state;
  mixp_session *s = mt_session();
  const mixp_dtype dts[3] = {MIXP_F32, MIXP_F16, MIXP_BF16};
  const int64_t shape[2] = {2, 3};
  for (int d = 0; d < 3; ++d) {
    mixp_tensor *x = NULL;
    MT_OK(mixp_tensor_ones(s, dts[d], shape, 2, &x));
    for (int i = 0; i < N_HUGE; ++i)
      for (int side = 0; side < 2; ++side) {
        /* a negative pad crops (as in PyTorch): -1 of 3 columns is valid, -4 is not */
        const int64_t p = k_huge[i] == -1 ? -4 : k_huge[i];
        int64_t pads[2] = {side ? p : 0, side ? 0 : p};
        mixp_tensor *y = SENT;
        EXPECT_REFUSED("mixp_pad", mixp_pad(x, pads, 2, 0.0, &y), y, SENT);
        int64_t both[4] = {p, p, 1, 1};
        EXPECT_REFUSED("mixp_pad", mixp_pad(x, both, 4, 0.0, &y), y, SENT);
      }
    mixp_tensor_release(x);
  }
  mixp_session_destroy(s);
}

/* Item: adaptive_avg_pool2d to (2^62, 1), (2^32, 2^32) returned impossible
 * shapes; (INT64_MAX, INT64_MAX) crashed. */
static void test_adaptive_pool_huge(void **state) {
  (void)state;
  mixp_session *s = mt_session();
  const int64_t shape[4] = {1, 2, 4, 4};
  mixp_tensor *x = NULL, *y = SENT;
  MT_OK(mixp_tensor_ones(s, MIXP_F32, shape, 4, &x));
  const int64_t pairs[][2] = {{BIG, 1}, {(int64_t)1 << 32, (int64_t)1 << 32}, {INT64_MAX, INT64_MAX},
                              {1, BIG}, {INT64_MAX, 1}, {-1, 1}, {0, 0}};
  for (size_t i = 0; i < sizeof pairs / sizeof pairs[0]; ++i)
    for (int layout = 0; layout < 2; ++layout)
      EXPECT_REFUSED("mixp_adaptive_avg_pool2d",
                     mixp_adaptive_avg_pool2d(x, pairs[i][0], pairs[i][1], (mixp_layout)layout, &y), y, SENT);
  mixp_tensor_release(x);
  mixp_session_destroy(s);
}

/* Item: mixp_linear_create(2^62, 1) crashed (in x out fits int64, x4 bytes
 * wraps); so did (1, 2^62) and (INT64_MAX, 1). Likewise every layer size. */
static void test_layer_sizes_huge(void **state) {
  (void)state;
  mixp_session *s = mt_session();
  for (int i = 0; i < N_HUGE; ++i)
    for (int j = 0; j < 3; ++j) {
      const int64_t v = k_huge[i], small = j == 0 ? 1 : j == 1 ? 3 : (int64_t)1 << 31;
      mixp_module *m = SENTM;
      EXPECT_REFUSED("mixp_linear_create", mixp_linear_create(s, v, small, 1, MIXP_F32, &m), m, SENTM);
      EXPECT_REFUSED("mixp_linear_create", mixp_linear_create(s, small, v, 1, MIXP_F32, &m), m, SENTM);
      EXPECT_REFUSED("mixp_conv2d_create", mixp_conv2d_create(s, v, small, 1, 1, NULL, 1, MIXP_F32, &m), m,
                     SENTM);
      EXPECT_REFUSED("mixp_conv2d_create", mixp_conv2d_create(s, 1, 1, v, small, NULL, 1, MIXP_F32, &m), m,
                     SENTM);
      EXPECT_REFUSED("mixp_batchnorm2d_create", mixp_batchnorm2d_create(s, v, 1e-5, 0.1, 1, MIXP_F32, &m), m,
                     SENTM);
      EXPECT_REFUSED("mixp_layernorm_create", mixp_layernorm_create(s, v, 1e-5, 1, MIXP_F32, &m), m, SENTM);
      EXPECT_REFUSED("mixp_embedding_create", mixp_embedding_create(s, v, small, -1, MIXP_F32, &m), m, SENTM);
      EXPECT_REFUSED("mixp_embedding_create", mixp_embedding_create(s, small, v, -1, MIXP_F32, &m), m, SENTM);
      EXPECT_REFUSED("mixp_multihead_attention_create",
                     mixp_multihead_attention_create(s, v, 1, 1, 0.0, 0, MIXP_F32, &m), m, SENTM);
    }
  mixp_session_destroy(s);
}

/* Item: conv2d with stride 2^62 (a valid request: a 1x1 output) or dilation
 * 2^62 or padding INT64_MAX said "oneDNN failed" (MIXP_ERR_INTERNAL). A huge
 * stride now computes; the others fail as arguments. */
static void test_conv_geometry_huge(void **state) {
  (void)state;
  mixp_session *s = mt_session();
  const int64_t xs[4] = {1, 2, 5, 5}, ws[4] = {3, 2, 3, 3};
  mixp_tensor *x = NULL, *w = NULL, *y = NULL;
  MT_OK(mixp_tensor_ones(s, MIXP_F32, xs, 4, &x));
  MT_OK(mixp_tensor_ones(s, MIXP_F32, ws, 4, &w));
  mixp_conv2d_options o;
  mixp_conv2d_options_init(&o);
  o.stride_h = BIG;
  o.stride_w = INT64_MAX;
  MT_OK(mixp_conv2d(x, w, NULL, &o, &y)); /* one window: the top-left 3x3 */
  assert_int_equal(mixp_tensor_dim(y, 2), 1);
  assert_int_equal(mixp_tensor_dim(y, 3), 1);
  double v = 0;
  mixp_tensor *y0 = NULL;
  MT_OK(mixp_slice(y, 1, 0, 1, 1, &y0));
  MT_OK(mixp_tensor_item(y0, &v));
  assert_true(v == 18.0); /* 2 channels x 9 ones */
  mixp_tensor_release(y0);
  mixp_tensor_release(y);
  for (int i = 0; i < N_HUGE; ++i) {
    mixp_tensor *z = SENT;
    mixp_conv2d_options_init(&o);
    o.dilation_h = k_huge[i];
    EXPECT_REFUSED("mixp_conv2d", mixp_conv2d(x, w, NULL, &o, &z), z, SENT);
    mixp_conv2d_options_init(&o);
    o.pad_w = k_huge[i];
    EXPECT_REFUSED("mixp_conv2d", mixp_conv2d(x, w, NULL, &o, &z), z, SENT);
    mixp_conv2d_options_init(&o);
    o.groups = k_huge[i];
    EXPECT_REFUSED("mixp_conv2d", mixp_conv2d(x, w, NULL, &o, &z), z, SENT);
    if (k_huge[i] < 0) {
      mixp_conv2d_options_init(&o);
      o.stride_h = k_huge[i];
      EXPECT_REFUSED("mixp_conv2d", mixp_conv2d(x, w, NULL, &o, &z), z, SENT);
    }
    /* pooling: kernel, stride and padding */
    mixp_pool2d_options po;
    mixp_pool2d_options_init(&po);
    po.kernel_h = k_huge[i];
    EXPECT_REFUSED("mixp_max_pool2d", mixp_max_pool2d(x, &po, &z), z, SENT);
    mixp_pool2d_options_init(&po);
    po.kernel_w = 2;
    po.pad_w = k_huge[i];
    EXPECT_REFUSED("mixp_avg_pool2d", mixp_avg_pool2d(x, &po, &z), z, SENT);
  }
  mixp_pool2d_options po;
  mixp_pool2d_options_init(&po);
  po.kernel_h = po.kernel_w = 2;
  po.stride_h = BIG; /* one window per column of the output */
  MT_OK(mixp_max_pool2d(x, &po, &y));
  assert_int_equal(mixp_tensor_dim(y, 2), 1);
  mixp_tensor_release(y);
  mixp_tensor_release(x);
  mixp_tensor_release(w);
  mixp_session_destroy(s);
}

/* Item: arange(0.5, 0.0, 5e-324) said "cannot create std::vector larger than
 * max_size()" (MIXP_ERR_INTERNAL): a step against the range's direction is
 * an invalid argument, whatever its size. */
static void test_arange_huge(void **state) {
  (void)state;
  mixp_session *s = mt_session();
  mixp_tensor *t = SENT;
  EXPECT_REFUSED("mixp_tensor_arange", mixp_tensor_arange(s, MIXP_F32, 0.5, 0.0, 5e-324, &t), t, SENT);
  EXPECT_REFUSED("mixp_tensor_arange", mixp_tensor_arange(s, MIXP_F32, 0.0, 0.5, -5e-324, &t), t, SENT);
  EXPECT_REFUSED("mixp_tensor_arange", mixp_tensor_arange(s, MIXP_F32, 0.0, 0.5, 5e-324, &t), t, SENT);
  EXPECT_REFUSED("mixp_tensor_arange", mixp_tensor_arange(s, MIXP_F32, -1e308, 1e308, 1.0, &t), t, SENT);
  assert_int_equal(mixp_last_status(), MIXP_ERR_INVALID_ARGUMENT);
  mixp_session_destroy(s);
}

/* Found by fuzz_api: a slice step of 2^62 or INT64_MAX overflowed the
 * stride; it takes one element, as in PyTorch, forward and backward. */
static void test_slice_huge_step(void **state) {
  (void)state;
  mixp_session *s = mt_session();
  const float v[6] = {1, 2, 3, 4, 5, 6};
  const int64_t shape[2] = {2, 3};
  mixp_tensor *x = NULL;
  MT_OK(mixp_tensor_from_host(s, v, sizeof v, MIXP_F32, shape, 2, &x));
  MT_OK(mixp_tensor_set_requires_grad(x, 1));
  const int64_t steps[3] = {3, BIG, INT64_MAX};
  for (int i = 0; i < 3; ++i) {
    mixp_tensor *y = NULL, *loss = NULL, *g = NULL;
    MT_OK(mixp_slice(x, 1, 1, INT64_MAX, steps[i], &y));
    assert_int_equal(mixp_tensor_dim(y, 1), 1);
    float got[2];
    MT_OK(mixp_tensor_to_host(y, got, sizeof got));
    assert_true(got[0] == 2 && got[1] == 5);
    MT_OK(mixp_sum(y, NULL, 0, 0, &loss));
    MT_OK(mixp_backward(loss, NULL));
    MT_OK(mixp_tensor_grad(x, &g));
    float gv[6];
    MT_OK(mixp_tensor_to_host(g, gv, sizeof gv));
    assert_true(gv[1] == (float)(i + 1) && gv[4] == (float)(i + 1) && gv[0] == 0 && gv[5] == 0);
    mixp_tensor_release(g);
    mixp_tensor_release(loss);
    mixp_tensor_release(y);
  }
  mixp_tensor_release(x);
  mixp_session_destroy(s);
}

/* Shapes at the limits of every creation function, reshape and the views. */
static void test_shapes_huge(void **state) {
  (void)state;
  mixp_session *s = mt_session();
  const uint64_t base = mt_current_bytes(s);
  for (int i = 0; i < N_HUGE; ++i)
    for (int j = 0; j < N_HUGE; ++j) {
      const int64_t shape[2] = {k_huge[i], k_huge[j]};
      mixp_tensor *t = SENT;
      EXPECT_REFUSED("mixp_tensor_zeros", mixp_tensor_zeros(s, MIXP_F32, shape, 2, &t), t, SENT);
      EXPECT_REFUSED("mixp_tensor_full", mixp_tensor_full(s, MIXP_F64, shape, 2, 1.0, &t), t, SENT);
      EXPECT_REFUSED("mixp_tensor_rand", mixp_tensor_rand(s, MIXP_BF16, shape, 2, &t), t, SENT);
      EXPECT_REFUSED("mixp_tensor_randn", mixp_tensor_randn(s, MIXP_F16, shape, 2, &t), t, SENT);
      char buf[16];
      EXPECT_REFUSED("mixp_tensor_from_host", mixp_tensor_from_host(s, buf, sizeof buf, MIXP_U8, shape, 2, &t), t,
                     SENT);
    }
  const int64_t product[2] = {(int64_t)1 << 31, (int64_t)1 << 33}; /* 2^64 elements */
  mixp_tensor *t = SENT;
  EXPECT_REFUSED("mixp_tensor_zeros", mixp_tensor_zeros(s, MIXP_F32, product, 2, &t), t, SENT);
  const int64_t bytes[2] = {(int64_t)1 << 31, (int64_t)1 << 31}; /* 2^62 elements, 2^64 bytes */
  EXPECT_REFUSED("mixp_tensor_zeros", mixp_tensor_zeros(s, MIXP_F32, bytes, 2, &t), t, SENT);
  /* empty, but its extents multiply past 2^62: code walking the shape would overflow */
  const int64_t empty_huge[3] = {0, BIG, BIG};
  EXPECT_REFUSED("mixp_tensor_zeros", mixp_tensor_zeros(s, MIXP_F32, empty_huge, 3, &t), t, SENT);
  const int64_t empty_ok[3] = {0, BIG, 1};
  MT_OK(mixp_tensor_zeros(s, MIXP_F32, empty_ok, 3, &t));
  assert_int_equal(mixp_tensor_numel(t), 0);
  mixp_tensor_release(t);
  t = SENT;
  /* Item: a failed allocation left the memory statistics wrapped (the
   * storage un-counted bytes it never counted). */
  assert_true(mt_current_bytes(s) == base);
  mixp_tensor *x = NULL, *y = SENT;
  const int64_t small[2] = {2, 3};
  MT_OK(mixp_tensor_ones(s, MIXP_F32, small, 2, &x));
  for (int i = 0; i < N_HUGE; ++i) {
    const int64_t to[2] = {k_huge[i], -1};
    EXPECT_REFUSED("mixp_reshape", mixp_reshape(x, to, 2, &y), y, SENT);
    const int64_t sizes[2] = {k_huge[i], 1}; /* never 6 in all */
    mixp_tensor *outs[2] = {SENT, SENT};
    EXPECT_REFUSED("mixp_split", mixp_split(x, sizes, 2, 1, outs), outs[0], SENT);
    assert_ptr_equal(outs[1], SENT);
  }
  mixp_tensor_release(x);
  mixp_session_destroy(s);
}

/* Item: data sizes: synthetic datasets, loaders, subsets, text blocks. */
static void test_data_sizes_huge(void **state) {
  (void)state;
  mixp_session *s = mt_session();
  for (int i = 0; i < N_HUGE; ++i) {
    mixp_synthetic_options so;
    mixp_synthetic_options_init(&so);
    so.height = k_huge[i];
    mixp_dataset *d = (mixp_dataset *)0x7;
    EXPECT_REFUSED("mixp_dataset_synthetic", mixp_dataset_synthetic(s, &so, &d), d, (mixp_dataset *)0x7);
    mixp_synthetic_options_init(&so);
    so.num_samples = k_huge[i];
    EXPECT_REFUSED("mixp_dataset_synthetic", mixp_dataset_synthetic(s, &so, &d), d, (mixp_dataset *)0x7);
  }
  mixp_synthetic_options so;
  mixp_synthetic_options_init(&so);
  so.num_samples = 8;
  mixp_dataset *d = NULL;
  MT_OK(mixp_dataset_synthetic(s, &so, &d));
  for (int i = 0; i < N_HUGE; ++i) {
    mixp_dataset *sub = (mixp_dataset *)0x7;
    EXPECT_REFUSED("mixp_dataset_subset", mixp_dataset_subset(d, k_huge[i], 1, &sub), sub, (mixp_dataset *)0x7);
    EXPECT_REFUSED("mixp_dataset_subset", mixp_dataset_subset(d, 1, k_huge[i], &sub), sub, (mixp_dataset *)0x7);
    mixp_loader_options lo;
    mixp_loader_options_init(&lo);
    lo.batch_size = k_huge[i];
    mixp_loader *l = (mixp_loader *)0x7;
    if (k_huge[i] < 1) EXPECT_REFUSED("mixp_loader_create", mixp_loader_create(d, &lo, &l), l, (mixp_loader *)0x7);
    mixp_dataset *txt = (mixp_dataset *)0x7;
    EXPECT_REFUSED("mixp_dataset_text",
                   mixp_dataset_text(s, MIXP_TEST_SOURCE_DIR "/README.md", k_huge[i], &txt), txt,
                   (mixp_dataset *)0x7);
  }
  mixp_dataset_destroy(d);
  mixp_session_destroy(s);
}

/* Item: a GradScaler whose scale backed off to 0 (reachable with the default
 * min_scale 0) saved a state it could not load. */
static void test_scaler_zero_scale_round_trips(void **state) {
  (void)state;
  mixp_session *s = mt_session();
  mixp_grad_scaler_options o;
  mixp_grad_scaler_options_init(&o);
  o.init_scale = 1e-44; /* a few halvings from 0 in fp32 */
  mixp_grad_scaler *g = NULL;
  MT_OK(mixp_grad_scaler_create(s, &o, &g));
  const double inf_val = 1.0 / 0.0;
  mixp_tensor *p = mt_param(s, MIXP_F32, (const double[]){1.0}, 1);
  mixp_optimizer_options oo;
  mixp_optimizer_options_init(&oo, MIXP_OPTIM_SGD);
  mixp_optimizer *opt = NULL;
  MT_OK(mixp_optimizer_create(s, &p, 1, &oo, &opt));
  double scale = 1;
  for (int i = 0; i < 40 && scale > 0; ++i) {
    mixp_tensor *big = NULL, *loss = NULL, *scaled = NULL;
    MT_OK(mixp_mul_scalar(p, inf_val, &big)); /* an overflowing gradient */
    MT_OK(mixp_sum(big, NULL, 0, 0, &loss));
    MT_OK(mixp_optimizer_zero_grad(opt));
    MT_OK(mixp_grad_scaler_scale(g, loss, &scaled));
    MT_OK(mixp_backward(scaled, NULL));
    MT_OK(mixp_grad_scaler_step(g, opt));
    MT_OK(mixp_grad_scaler_update(g));
    MT_OK(mixp_grad_scaler_get_scale(g, &scale));
    mixp_tensor_release(big);
    mixp_tensor_release(loss);
    mixp_tensor_release(scaled);
  }
  assert_true(scale == 0.0);
  unsigned char buf[256];
  size_t n = 0;
  MT_OK(mixp_grad_scaler_save_state(g, buf, sizeof buf, &n));
  mixp_grad_scaler *h = NULL;
  MT_OK(mixp_grad_scaler_create(s, NULL, &h));
  MT_OK(mixp_grad_scaler_load_state(h, buf, n));
  double hs = 1;
  MT_OK(mixp_grad_scaler_get_scale(h, &hs));
  assert_true(hs == 0.0);
  mixp_grad_scaler_destroy(h);
  mixp_grad_scaler_destroy(g);
  mixp_optimizer_destroy(opt);
  mixp_tensor_release(p);
  mixp_session_destroy(s);
}

/* Item: messages begin with the function the caller called, also when an
 * inner public call (a layer running mixp_linear) or a view made by another
 * op (transpose through permute) failed. */
static void test_messages_name_the_called_function(void **state) {
  (void)state;
  mixp_session *s = mt_session();
  mixp_module *m = NULL;
  MT_OK(mixp_linear_create(s, 4, 2, 1, MIXP_F32, &m));
  const int64_t xs[2] = {3, 5};
  mixp_tensor *x = NULL, *y = SENT;
  MT_OK(mixp_tensor_ones(s, MIXP_F32, xs, 2, &x));
  MT_FAILS(mixp_module_forward(m, x, &y), MIXP_ERR_SHAPE, "mixp_module_forward: ");
  assert_true(strstr(mixp_last_error(), "mixp_linear") != NULL); /* the inner detail stays */
  assert_ptr_equal(y, SENT);
  MT_FAILS(mixp_transpose(x, 0, 5, &y), MIXP_ERR_INVALID_ARGUMENT, "mixp_transpose: ");
  assert_true(strncmp(mixp_last_error(), "mixp_transpose:", 15) == 0);
  mixp_module *b = SENTM;
  MT_FAILS(mixp_batchnorm2d_create(s, BIG, 1e-5, 0.1, 1, MIXP_F32, &b), MIXP_ERR_INVALID_ARGUMENT,
           "mixp_batchnorm2d_create: ");
  assert_true(strncmp(mixp_last_error(), "mixp_batchnorm2d_create:", 24) == 0);
  mixp_tensor_release(x);
  mixp_module_destroy(m);
  mixp_session_destroy(s);
}

/* Item: the calls that take a session say MIXP_ERR_STATE for a destroyed
 * session that its tensors keep alive, as the header says. */
static void test_destroyed_session_is_state(void **state) {
  (void)state;
  mixp_session *s = mt_session();
  mixp_tensor *t = NULL;
  const int64_t one[1] = {1};
  MT_OK(mixp_tensor_zeros(s, MIXP_F32, one, 1, &t));
  mixp_session_destroy(s); /* t keeps it alive */
  uint64_t c = 7;
  MT_FAILS(mixp_session_host_syncs(s, &c), MIXP_ERR_STATE, "mixp_session_host_syncs: ");
  assert_true(c == 7);
  MT_FAILS(mixp_checkpoint_begin(s), MIXP_ERR_STATE, "mixp_checkpoint_begin: ");
  MT_FAILS(mixp_checkpoint_abort(s), MIXP_ERR_STATE, "mixp_checkpoint_abort: ");
  mixp_tensor_release(t);
}

/* Item: a NUL byte inside a name from a file used to cut the message short. */
static void test_message_keeps_nul_bytes_visible(void **state) {
  (void)state;
  char path[] = "/tmp/mixp_test_sizes_XXXXXX";
  const int fd = mkstemp(path);
  assert_true(fd >= 0);
  /* A safetensors file with the weight of a Linear(1, 1) and one more tensor,
   * named "a\0b", that a strict load refuses by name. */
  const char header[] = "{\"weight\":{\"dtype\":\"F32\",\"shape\":[1,1],\"data_offsets\":[0,4]},"
                        "\"a\\u0000b\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,8]}}";
  const uint64_t hlen = sizeof header - 1;
  unsigned char len8[8];
  for (int i = 0; i < 8; ++i) len8[i] = (unsigned char)(hlen >> (8 * i));
  const float one = 1.0f;
  assert_int_equal(write(fd, len8, 8), 8);
  assert_int_equal(write(fd, header, hlen), (ssize_t)hlen);
  assert_int_equal(write(fd, &one, 4), 4);
  assert_int_equal(write(fd, &one, 4), 4);
  close(fd);
  mixp_session *s = mt_session();
  mixp_module *m = NULL;
  MT_OK(mixp_linear_create(s, 1, 1, 0, MIXP_F32, &m));
  const mixp_status st = mixp_module_load_safetensors(m, NULL, path, 1);
  assert_true(st != MIXP_OK && st != MIXP_ERR_INTERNAL);
  /* the name is in the message, escaped, with what follows it */
  assert_non_null(strstr(mixp_last_error(), "a\\x00b"));
  unlink(path);
  mixp_module_destroy(m);
  mixp_session_destroy(s);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_pad_huge),
      cmocka_unit_test(test_slice_huge_step),
      cmocka_unit_test(test_adaptive_pool_huge),
      cmocka_unit_test(test_layer_sizes_huge),
      cmocka_unit_test(test_conv_geometry_huge),
      cmocka_unit_test(test_arange_huge),
      cmocka_unit_test(test_shapes_huge),
      cmocka_unit_test(test_data_sizes_huge),
      cmocka_unit_test(test_scaler_zero_scale_round_trips),
      cmocka_unit_test(test_messages_name_the_called_function),
      cmocka_unit_test(test_destroyed_session_is_state),
      cmocka_unit_test(test_message_keeps_nul_bytes_visible),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
