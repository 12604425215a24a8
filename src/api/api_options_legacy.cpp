// The exported mixp_*_options_init() symbols, for programs compiled against
// mixp.h 0.6 or older, which declared these as library functions (since 0.7
// the header makes them inline functions that call *_options_init_sized()
// with the program's own sizeof).
//
// Such a program's struct may be as small as the struct's first release:
// one built against 0.2 has a 48-byte mixp_autocast_options, and before 0.7
// this symbol wrote all 56 bytes of the library's struct, 8 past the
// caller's. So each symbol fills exactly the first released size
// (core/options.hpp) and sets struct_size to it. That never writes past any
// older program's struct, with this library or a later one; what it costs is
// that a program compiled against 0.3-0.6 which sets a field added after
// 0.2 (use_promote, state_dtype, stochastic_rounding, below_one, shard_index,
// shard_count) has that field read as its default until it is recompiled
// against 0.7 or later. These symbols never change again.
#define MIXP_LEGACY_OPTIONS_INIT  // the header declares the exported symbols
#include "mixp/mixp.h"

#include "core/options.hpp"

using mixp::first_struct_size;

extern "C" {

void mixp_session_options_init(mixp_session_options *options) {
  if (options) mixp_session_options_init_sized(options, first_struct_size<mixp_session_options>());
}

void mixp_numerics_options_init(mixp_numerics_options *options) {
  if (options) mixp_numerics_options_init_sized(options, first_struct_size<mixp_numerics_options>());
}

void mixp_cross_entropy_options_init(mixp_cross_entropy_options *options) {
  if (options) mixp_cross_entropy_options_init_sized(options, first_struct_size<mixp_cross_entropy_options>());
}

void mixp_conv2d_options_init(mixp_conv2d_options *options) {
  if (options) mixp_conv2d_options_init_sized(options, first_struct_size<mixp_conv2d_options>());
}

void mixp_pool2d_options_init(mixp_pool2d_options *options) {
  if (options) mixp_pool2d_options_init_sized(options, first_struct_size<mixp_pool2d_options>());
}

void mixp_autocast_options_init(mixp_autocast_options *options) {
  if (options) mixp_autocast_options_init_sized(options, first_struct_size<mixp_autocast_options>());
}

void mixp_optimizer_options_init(mixp_optimizer_options *options, mixp_optimizer_kind kind) {
  if (options) mixp_optimizer_options_init_sized(options, first_struct_size<mixp_optimizer_options>(), kind);
}

void mixp_grad_scaler_options_init(mixp_grad_scaler_options *options) {
  if (options) mixp_grad_scaler_options_init_sized(options, first_struct_size<mixp_grad_scaler_options>());
}

void mixp_decorate_options_init(mixp_decorate_options *options) {
  if (options) mixp_decorate_options_init_sized(options, first_struct_size<mixp_decorate_options>());
}

void mixp_synthetic_options_init(mixp_synthetic_options *options) {
  if (options) mixp_synthetic_options_init_sized(options, first_struct_size<mixp_synthetic_options>());
}

void mixp_loader_options_init(mixp_loader_options *options) {
  if (options) mixp_loader_options_init_sized(options, first_struct_size<mixp_loader_options>());
}

void mixp_dist_options_init(mixp_dist_options *options) {
  if (options) mixp_dist_options_init_sized(options, first_struct_size<mixp_dist_options>());
}

void mixp_state_spec_init(mixp_state_spec *spec) {
  if (spec) mixp_state_spec_init_sized(spec, first_struct_size<mixp_state_spec>());
}

}  // extern "C"
