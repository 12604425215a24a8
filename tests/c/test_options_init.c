/* The options init functions: the inline *_options_init() of this header
 * and the exported *_options_init_sized() they call. Each writes exactly
 * the caller's size -- this header's sizeof, or the size an older release
 * gave the struct -- and never a byte past it; sizes no release had are
 * refused (only struct_size is written, to a value every function refuses);
 * and the create calls accept every released size. The exported symbols
 * programs compiled against 0.6 or older call are tested in
 * test_options_init_legacy.c. */
#include "test_options_init_table.h"

/* Each struct at each released size: that many bytes written, defaults equal
 * to the full struct's prefix, struct_size = the size. */
static void test_sized_writes_exactly_the_size(void **state) {
  (void)state;
  for (int i = 0; i < OI_COUNT; ++i) {
    const oi_struct *t = &oi_structs[i];
    oi_buffer full;
    oi_fill(&full);
    MT_OK(t->sized(full.bytes, t->size));
    oi_assert_untouched(&full, t->size, t->name, t->size);
    assert_int_equal(oi_struct_size(&full), t->size);
    for (int k = 0; k < 4 && t->released[k]; ++k) {
      const size_t n = t->released[k];
      oi_buffer b;
      oi_fill(&b);
      MT_OK(t->sized(b.bytes, n));
      oi_assert_untouched(&b, n, t->name, n);
      assert_int_equal(oi_struct_size(&b), n);
      assert_memory_equal(b.bytes + 4, full.bytes + 4, n - 4);
    }
  }
}

/* The inline functions pass this header's sizeof: the result equals the sized
 * call's, and the bytes after the struct are untouched. */
#define INLINE_MATCHES(T, INIT_CALL, SIZED_CALL)                      \
  do {                                                                \
    struct {                                                          \
      T v;                                                            \
      unsigned char guard[32];                                        \
    } a, b;                                                           \
    memset(&a, OI_GUARD, sizeof a);                                   \
    memset(&b, OI_GUARD, sizeof b);                                   \
    INIT_CALL;                                                        \
    MT_OK(SIZED_CALL);                                                \
    assert_int_equal(a.v.struct_size, sizeof(T));                     \
    assert_memory_equal(&a, &b, sizeof a);                            \
    for (size_t g = 0; g < sizeof a.guard; ++g)                       \
      assert_int_equal(a.guard[g], OI_GUARD);                         \
  } while (0)

static void test_inline_init_is_sized_init(void **state) {
  (void)state;
  INLINE_MATCHES(mixp_session_options, mixp_session_options_init(&a.v),
                 mixp_session_options_init_sized(&b.v, sizeof b.v));
  INLINE_MATCHES(mixp_numerics_options, mixp_numerics_options_init(&a.v),
                 mixp_numerics_options_init_sized(&b.v, sizeof b.v));
  INLINE_MATCHES(mixp_cross_entropy_options, mixp_cross_entropy_options_init(&a.v),
                 mixp_cross_entropy_options_init_sized(&b.v, sizeof b.v));
  INLINE_MATCHES(mixp_conv2d_options, mixp_conv2d_options_init(&a.v),
                 mixp_conv2d_options_init_sized(&b.v, sizeof b.v));
  INLINE_MATCHES(mixp_pool2d_options, mixp_pool2d_options_init(&a.v),
                 mixp_pool2d_options_init_sized(&b.v, sizeof b.v));
  INLINE_MATCHES(mixp_autocast_options, mixp_autocast_options_init(&a.v),
                 mixp_autocast_options_init_sized(&b.v, sizeof b.v));
  INLINE_MATCHES(mixp_optimizer_options, mixp_optimizer_options_init(&a.v, MIXP_OPTIM_SGD),
                 mixp_optimizer_options_init_sized(&b.v, sizeof b.v, MIXP_OPTIM_SGD));
  INLINE_MATCHES(mixp_grad_scaler_options, mixp_grad_scaler_options_init(&a.v),
                 mixp_grad_scaler_options_init_sized(&b.v, sizeof b.v));
  INLINE_MATCHES(mixp_decorate_options, mixp_decorate_options_init(&a.v),
                 mixp_decorate_options_init_sized(&b.v, sizeof b.v));
  INLINE_MATCHES(mixp_synthetic_options, mixp_synthetic_options_init(&a.v),
                 mixp_synthetic_options_init_sized(&b.v, sizeof b.v));
  INLINE_MATCHES(mixp_loader_options, mixp_loader_options_init(&a.v),
                 mixp_loader_options_init_sized(&b.v, sizeof b.v));
  INLINE_MATCHES(mixp_dist_options, mixp_dist_options_init(&a.v),
                 mixp_dist_options_init_sized(&b.v, sizeof b.v));
  INLINE_MATCHES(mixp_state_spec, mixp_state_spec_init(&a.v), mixp_state_spec_init_sized(&b.v, sizeof b.v));
  /* The inline functions ignore NULL without a call: the last error stays. */
  MT_FAILS(mixp_session_options_init_sized(NULL, 0), MIXP_ERR_INVALID_ARGUMENT, "options is NULL");
  mixp_session_options_init(NULL);
  mixp_optimizer_options_init(NULL, MIXP_OPTIM_ADAM);
  mixp_state_spec_init(NULL);
  assert_non_null(strstr(mixp_last_error(), "mixp_session_options_init_sized: options is NULL"));
}

/* Misuse: NULL, sizes no release had (too small, between two releases, a
 * newer header's, beyond uint32_t). Nothing but struct_size is written. */
static void test_sized_misuse(void **state) {
  (void)state;
  for (int i = 0; i < OI_COUNT; ++i) {
    const oi_struct *t = &oi_structs[i];
    MT_FAILS(t->sized(NULL, t->size), MIXP_ERR_INVALID_ARGUMENT, t->name);
    assert_non_null(strstr(mixp_last_error(), "is NULL"));
    const size_t bad[] = {0, 3, 4, t->released[0] - 8, t->size + 8, t->size * 2, (size_t)UINT32_MAX + 1 + t->size};
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; ++k) {
      oi_buffer b;
      oi_fill(&b);
      MT_FAILS(t->sized(b.bytes, bad[k]), MIXP_ERR_INVALID_ARGUMENT, t->name);
      if (strncmp(mixp_last_error(), t->name, strlen(t->name)) != 0 || !strstr(mixp_last_error(), "size is")) {
        print_error("%s: message \"%s\"\n", t->name, mixp_last_error());
        fail();
      }
      if (bad[k] > t->size && !strstr(mixp_last_error(), "newer mixp.h")) {
        print_error("%s: message \"%s\" does not suspect a newer header\n", t->name, mixp_last_error());
        fail();
      }
      if (bad[k] < 4) {
        oi_assert_untouched(&b, 0, t->name, bad[k]);
        continue;
      }
      /* struct_size tells every later call that the struct is not valid */
      assert_int_equal(oi_struct_size(&b), bad[k] <= UINT32_MAX ? (uint32_t)bad[k] : 0u);
      oi_assert_untouched(&b, 4, t->name, bad[k]);
    }
  }
  /* a size between two releases' */
  oi_buffer b;
  oi_fill(&b);
  MT_FAILS(mixp_autocast_options_init_sized((mixp_autocast_options *)b.bytes, 52), MIXP_ERR_INVALID_ARGUMENT,
           "size is 52, expected 56 or 48");
  oi_assert_untouched(&b, 4, "52", 52);
}

/* The create calls accept each released size (the fields an older struct
 * lacks read as their defaults) and refuse what a failed init left. */
static void test_create_accepts_released_sizes(void **state) {
  (void)state;
  mixp_session *s = mt_session();
  mixp_tensor *p = NULL;
  const int64_t shape[1] = {4};
  MT_OK(mixp_tensor_zeros(s, MIXP_F32, shape, 1, &p));
  MT_OK(mixp_tensor_set_requires_grad(p, 1));

  mixp_autocast_options ac;
  MT_OK(mixp_autocast_options_init_sized(&ac, offsetof(mixp_autocast_options, use_promote)));
  MT_OK(mixp_autocast_push(s, &ac));
  MT_OK(mixp_autocast_pop(s));
  MT_FAILS(mixp_autocast_options_init_sized(&ac, sizeof ac + 8), MIXP_ERR_INVALID_ARGUMENT, "newer");
  MT_FAILS(mixp_autocast_push(s, &ac), MIXP_ERR_INVALID_ARGUMENT, "struct_size is 64, expected 56 or 48");
  assert_non_null(strstr(mixp_last_error(), "newer mixp.h"));

  mixp_optimizer_options oo;
  mixp_optimizer *opt = NULL;
  MT_OK(mixp_optimizer_options_init_sized(&oo, offsetof(mixp_optimizer_options, state_dtype), MIXP_OPTIM_ADAM));
  MT_OK(mixp_optimizer_create(s, &p, 1, &oo, &opt));
  mixp_optimizer_destroy(opt);
  MT_FAILS(mixp_optimizer_options_init_sized(&oo, 3, MIXP_OPTIM_ADAM), MIXP_ERR_INVALID_ARGUMENT, "size is 3");

  mixp_grad_scaler_options gso;
  mixp_grad_scaler *gs = NULL;
  MT_OK(mixp_grad_scaler_options_init_sized(&gso, offsetof(mixp_grad_scaler_options, below_one)));
  MT_OK(mixp_grad_scaler_create(s, &gso, &gs));
  mixp_grad_scaler_destroy(gs);

  mixp_synthetic_options so;
  mixp_dataset *d = NULL;
  mixp_synthetic_options_init(&so);
  so.num_samples = 16;
  MT_OK(mixp_dataset_synthetic(s, &so, &d));
  mixp_loader_options lo;
  mixp_loader *l = NULL;
  MT_OK(mixp_loader_options_init_sized(&lo, offsetof(mixp_loader_options, shard_index)));
  lo.batch_size = 4;
  MT_OK(mixp_loader_create(d, &lo, &l));
  assert_int_equal(mixp_loader_num_batches(l), 4);
  mixp_loader_destroy(l);
  MT_FAILS(mixp_loader_options_init_sized(&lo, offsetof(mixp_loader_options, shard_count)),
           MIXP_ERR_INVALID_ARGUMENT, "expected 72 or 64");
  MT_FAILS(mixp_loader_create(d, &lo, &l), MIXP_ERR_INVALID_ARGUMENT, "struct_size is 68");
  mixp_dataset_destroy(d);

  mixp_tensor_release(p);
  mixp_session_destroy(s);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_sized_writes_exactly_the_size),
      cmocka_unit_test(test_inline_init_is_sized_init),
      cmocka_unit_test(test_sized_misuse),
      cmocka_unit_test(test_create_accepts_released_sizes),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
