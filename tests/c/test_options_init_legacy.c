/* The exported mixp_*_options_init() symbols, which programs compiled
 * against mixp.h 0.6 or older call (since 0.7 the header's init functions
 * are inline; this suite asks for the old declarations). Each fills the
 * struct as first released and sets struct_size to that size, so it never
 * writes past an older program's struct: before 0.7 they wrote the
 * library's whole struct, 8 bytes past a 0.2 program's autocast, optimizer,
 * grad-scaler and loader options. tests/abi/old_header_host.c runs a whole
 * 0.2 program the same way. */
#define MIXP_LEGACY_OPTIONS_INIT
#include "test_options_init_table.h"

#define OI_LEGACY(T, FN) \
  static void oi_legacy_##T(void *o) { FN((T *)o); }
OI_LEGACY(mixp_session_options, mixp_session_options_init)
OI_LEGACY(mixp_numerics_options, mixp_numerics_options_init)
OI_LEGACY(mixp_cross_entropy_options, mixp_cross_entropy_options_init)
OI_LEGACY(mixp_conv2d_options, mixp_conv2d_options_init)
OI_LEGACY(mixp_pool2d_options, mixp_pool2d_options_init)
OI_LEGACY(mixp_autocast_options, mixp_autocast_options_init)
OI_LEGACY(mixp_grad_scaler_options, mixp_grad_scaler_options_init)
OI_LEGACY(mixp_decorate_options, mixp_decorate_options_init)
OI_LEGACY(mixp_synthetic_options, mixp_synthetic_options_init)
OI_LEGACY(mixp_loader_options, mixp_loader_options_init)
OI_LEGACY(mixp_dist_options, mixp_dist_options_init)
OI_LEGACY(mixp_state_spec, mixp_state_spec_init)
static void oi_legacy_mixp_optimizer_options(void *o) {
  mixp_optimizer_options_init((mixp_optimizer_options *)o, MIXP_OPTIM_ADAMW);
}
#undef OI_LEGACY

/* In the order of oi_structs. */
static void (*const oi_legacy[])(void *) = {
    oi_legacy_mixp_session_options,   oi_legacy_mixp_numerics_options,  oi_legacy_mixp_cross_entropy_options,
    oi_legacy_mixp_conv2d_options,    oi_legacy_mixp_pool2d_options,    oi_legacy_mixp_autocast_options,
    oi_legacy_mixp_optimizer_options, oi_legacy_mixp_grad_scaler_options, oi_legacy_mixp_decorate_options,
    oi_legacy_mixp_synthetic_options, oi_legacy_mixp_loader_options,    oi_legacy_mixp_dist_options,
    oi_legacy_mixp_state_spec,
};

/* Each symbol writes the first released size, with the same defaults as the
 * sized entry point at that size. */
static void test_legacy_symbols_write_the_first_release(void **state) {
  (void)state;
  assert_int_equal(sizeof oi_legacy / sizeof oi_legacy[0], OI_COUNT);
  for (int i = 0; i < OI_COUNT; ++i) {
    const oi_struct *t = &oi_structs[i];
    const size_t first = t->released[0];
    oi_buffer a, b;
    oi_fill(&a);
    oi_fill(&b);
    char legacy[64]; /* the exported symbol's name: the sized one's without "_sized" */
    snprintf(legacy, sizeof legacy, "%.*s", (int)(strlen(t->name) - strlen("_sized")), t->name);
    oi_legacy[i](a.bytes);
    oi_assert_untouched(&a, first, legacy, first);
    assert_int_equal(oi_struct_size(&a), first);
    MT_OK(t->sized(b.bytes, first));
    assert_memory_equal(a.bytes, b.bytes, sizeof a.bytes);
    oi_legacy[i](NULL); /* ignored */
  }
  /* The 0.2 sizes of the structs that grew since (LP64). */
  assert_int_equal(offsetof(mixp_autocast_options, use_promote), 48);
  assert_int_equal(offsetof(mixp_optimizer_options, state_dtype), 104);
  assert_int_equal(offsetof(mixp_grad_scaler_options, below_one), 72);
  assert_int_equal(offsetof(mixp_loader_options, shard_index), 64);
}

/* What the old symbols give is accepted everywhere, with the later fields
 * at their defaults: a program compiled against 0.3-0.6 that sets one of
 * them after the old init has it ignored until it is recompiled. */
static void test_legacy_struct_is_accepted(void **state) {
  (void)state;
  mixp_session *s = mt_session();
  mixp_autocast_options ac;
  mixp_autocast_options_init(&ac);
  ac.use_promote = 7; /* past struct_size: not read, so not refused either */
  MT_OK(mixp_autocast_push(s, &ac));
  MT_OK(mixp_autocast_pop(s));

  mixp_synthetic_options so;
  mixp_dataset *d = NULL;
  mixp_synthetic_options_init(&so);
  so.num_samples = 16;
  MT_OK(mixp_dataset_synthetic(s, &so, &d));
  mixp_loader_options lo;
  mixp_loader *l = NULL;
  mixp_loader_options_init(&lo);
  lo.batch_size = 4;
  lo.shard_count = 4; /* past struct_size: the loader is not sharded */
  MT_OK(mixp_loader_create(d, &lo, &l));
  assert_int_equal(mixp_loader_num_batches(l), 4);
  mixp_loader_destroy(l);
  mixp_dataset_destroy(d);
  mixp_session_destroy(s);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_legacy_symbols_write_the_first_release),
      cmocka_unit_test(test_legacy_struct_is_accepted),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
