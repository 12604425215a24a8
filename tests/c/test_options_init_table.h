/* The versioned structs of mixp.h and the sizes each release gave them,
 * shared by test_options_init.c (the inline *_options_init() functions and
 * the exported *_options_init_sized()) and test_options_init_legacy.c (the
 * exported *_options_init() symbols of programs compiled against 0.6 or
 * older). Each entry: the name, sizeof in this header, the released sizes
 * oldest first, and a call of the sized entry point through a void
 * pointer. */
#ifndef MIXP_TEST_OPTIONS_INIT_TABLE_H
#define MIXP_TEST_OPTIONS_INIT_TABLE_H

#include "test_util.h"

#define OI_SIZED(T, FN)                                                          \
  static mixp_status oi_sized_##T(void *o, size_t n) { return FN((T *)o, n); }
OI_SIZED(mixp_session_options, mixp_session_options_init_sized)
OI_SIZED(mixp_numerics_options, mixp_numerics_options_init_sized)
OI_SIZED(mixp_cross_entropy_options, mixp_cross_entropy_options_init_sized)
OI_SIZED(mixp_conv2d_options, mixp_conv2d_options_init_sized)
OI_SIZED(mixp_pool2d_options, mixp_pool2d_options_init_sized)
OI_SIZED(mixp_autocast_options, mixp_autocast_options_init_sized)
OI_SIZED(mixp_grad_scaler_options, mixp_grad_scaler_options_init_sized)
OI_SIZED(mixp_decorate_options, mixp_decorate_options_init_sized)
OI_SIZED(mixp_synthetic_options, mixp_synthetic_options_init_sized)
OI_SIZED(mixp_loader_options, mixp_loader_options_init_sized)
OI_SIZED(mixp_dist_options, mixp_dist_options_init_sized)
OI_SIZED(mixp_state_spec, mixp_state_spec_init_sized)
static mixp_status oi_sized_mixp_optimizer_options(void *o, size_t n) {
  return mixp_optimizer_options_init_sized((mixp_optimizer_options *)o, n, MIXP_OPTIM_ADAMW);
}
#undef OI_SIZED

typedef struct {
  const char *name;     /* the sized function */
  size_t size;          /* sizeof in this header */
  size_t released[4];   /* every released size, oldest first; 0 ends the list */
  mixp_status (*sized)(void *, size_t);
} oi_struct;

/* A struct never extended has one size; one that grew lists where each
 * older release's struct ended (docs/embedding.md has the versions). */
#define OI_ONE(T, FN) {#FN, sizeof(T), {sizeof(T)}, oi_sized_##T}
#define OI_TWO(T, FN, FIELD) {#FN, sizeof(T), {offsetof(T, FIELD), sizeof(T)}, oi_sized_##T}
/* An older struct that ended in tail padding: its size is the new field's
 * offset rounded up to the struct's alignment. */
#define OI_PADDED(T, FIELD) ((offsetof(T, FIELD) + _Alignof(T) - 1) / _Alignof(T) * _Alignof(T))
static const oi_struct oi_structs[] = {
    {"mixp_session_options_init_sized", sizeof(mixp_session_options),                      /* 0.9 */
     {OI_PADDED(mixp_session_options, cudnn_benchmark), sizeof(mixp_session_options)},
     oi_sized_mixp_session_options},
    OI_ONE(mixp_numerics_options, mixp_numerics_options_init_sized),
    OI_ONE(mixp_cross_entropy_options, mixp_cross_entropy_options_init_sized),
    OI_ONE(mixp_conv2d_options, mixp_conv2d_options_init_sized),
    OI_ONE(mixp_pool2d_options, mixp_pool2d_options_init_sized),
    OI_TWO(mixp_autocast_options, mixp_autocast_options_init_sized, use_promote),          /* 0.3 */
    OI_TWO(mixp_optimizer_options, mixp_optimizer_options_init_sized, state_dtype),        /* 0.4 */
    OI_TWO(mixp_grad_scaler_options, mixp_grad_scaler_options_init_sized, below_one),      /* 0.4 */
    OI_ONE(mixp_decorate_options, mixp_decorate_options_init_sized),
    OI_ONE(mixp_synthetic_options, mixp_synthetic_options_init_sized),
    OI_TWO(mixp_loader_options, mixp_loader_options_init_sized, shard_index),              /* 0.5 */
    OI_ONE(mixp_dist_options, mixp_dist_options_init_sized),
    OI_ONE(mixp_state_spec, mixp_state_spec_init_sized),
};
#undef OI_ONE
#undef OI_TWO
#undef OI_PADDED
#define OI_COUNT ((int)(sizeof oi_structs / sizeof oi_structs[0]))

/* A struct of up to 256 bytes with 64 guard bytes after the part written. */
#define OI_GUARD 0xA5
typedef union {
  max_align_t align;
  unsigned char bytes[256 + 64];
} oi_buffer;

static inline void oi_fill(oi_buffer *b) { memset(b->bytes, OI_GUARD, sizeof b->bytes); }

/* Asserts that no byte from `from` on was written. */
static inline void oi_assert_untouched(const oi_buffer *b, size_t from, const char *what, size_t size) {
  for (size_t i = from; i < sizeof b->bytes; ++i)
    if (b->bytes[i] != OI_GUARD) {
      print_error("%s (size %zu) wrote byte %zu: only %zu may be written\n", what, size, i, from);
      fail();
    }
}

static inline uint32_t oi_struct_size(const oi_buffer *b) {
  uint32_t v;
  memcpy(&v, b->bytes, sizeof v);
  return v;
}

#endif
