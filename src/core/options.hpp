// Versioned structs from the C API: each begins with struct_size, which is
// checked here in one place. A struct is accepted at every size a released
// mixp.h gave it (StructVersions, below); the fields an older, smaller
// struct lacks read as their defaults.
#pragma once
#include <algorithm>
#include <cstddef>
#include <cstring>
#include <string>
#include <type_traits>

#include "core/error.hpp"
#include "mixp/mixp.h"

namespace mixp {

// The history of a struct: every size a released mixp.h gave it, oldest
// first, the last being sizeof(T). A program compiled against any of those
// headers passes its own size, and every one of them must stay accepted
// (by the create calls and by mixp_*_options_init_sized()) for as long as the
// SONAME stays libmixp.so.0. The exported mixp_*_options_init() symbols
// that programs compiled against 0.6 or older call fill sizes[0] bytes only,
// the struct as first released (api/api_options_legacy.cpp).
//
// Appending a field to a struct: add the struct's previous size (offsetof the
// new field) before sizeof(T) and name the new last field, and say since
// which version it exists in mixp.h and in docs/embedding.md. The
// static_assert below fails until the entry names the last field.
template <class T>
struct StructVersions;  // every versioned struct has an entry below

namespace detail {
constexpr size_t round_up(size_t n, size_t a) { return (n + a - 1) / a * a; }
}  // namespace detail

#define MIXP_STRUCT_HISTORY(T, LAST, ...)                                                           \
  template <>                                                                                       \
  struct StructVersions<T> {                                                                        \
    static constexpr size_t sizes[] = {__VA_ARGS__};                                                \
    static constexpr size_t count = sizeof(sizes) / sizeof(sizes[0]);                               \
  };                                                                                                \
  static_assert(sizeof(T) == detail::round_up(offsetof(T, LAST) + sizeof(T::LAST), alignof(T)),     \
                #T " has a field after " #LAST ": add its new size to its StructVersions entry"); \
  static_assert(StructVersions<T>::sizes[StructVersions<T>::count - 1] == sizeof(T),                \
                #T ": the last size of its history must be sizeof(" #T ")")

// (Sizes below in bytes on LP64, versions by the library's release.)
// 40 in 0.1-0.8; 48 since 0.9 (cudnn_benchmark, cudnn_deterministic). The
// old size is its tail-padded sizeof, not the new field's offset (36).
MIXP_STRUCT_HISTORY(mixp_session_options, cudnn_deterministic,
                    detail::round_up(offsetof(mixp_session_options, cudnn_benchmark), alignof(mixp_session_options)),
                    sizeof(mixp_session_options));
// 24 since 0.2.
MIXP_STRUCT_HISTORY(mixp_cross_entropy_options, label_smoothing, sizeof(mixp_cross_entropy_options));
// 72 since 0.1.
MIXP_STRUCT_HISTORY(mixp_conv2d_options, layout, sizeof(mixp_conv2d_options));
// 64 since 0.1.
MIXP_STRUCT_HISTORY(mixp_pool2d_options, layout, sizeof(mixp_pool2d_options));
// 48 in 0.1-0.2; 56 since 0.3 (use_promote).
MIXP_STRUCT_HISTORY(mixp_autocast_options, use_promote, offsetof(mixp_autocast_options, use_promote),
                    sizeof(mixp_autocast_options));
// 12 since 0.1 (an answer struct: the caller sets struct_size).
MIXP_STRUCT_HISTORY(mixp_autocast_policy_info, dtype, sizeof(mixp_autocast_policy_info));
// 104 in 0.1-0.3; 112 since 0.4 (state_dtype, stochastic_rounding).
MIXP_STRUCT_HISTORY(mixp_optimizer_options, stochastic_rounding, offsetof(mixp_optimizer_options, state_dtype),
                    sizeof(mixp_optimizer_options));
// 72 in 0.1-0.3; 80 since 0.4 (below_one).
MIXP_STRUCT_HISTORY(mixp_grad_scaler_options, below_one, offsetof(mixp_grad_scaler_options, below_one),
                    sizeof(mixp_grad_scaler_options));
// 20 since 0.1.
MIXP_STRUCT_HISTORY(mixp_decorate_options, keep_norm_fp32, sizeof(mixp_decorate_options));
// 64 since 0.1.
MIXP_STRUCT_HISTORY(mixp_synthetic_options, noise, sizeof(mixp_synthetic_options));
// 64 in 0.1-0.4; 72 since 0.5 (shard_index, shard_count).
MIXP_STRUCT_HISTORY(mixp_loader_options, shard_count, offsetof(mixp_loader_options, shard_index),
                    sizeof(mixp_loader_options));
// 64 since 0.4.
MIXP_STRUCT_HISTORY(mixp_numerics_options, fp16_overflow, sizeof(mixp_numerics_options));
// 16 since 0.5.
MIXP_STRUCT_HISTORY(mixp_dist_options, bucket_bytes, sizeof(mixp_dist_options));
// 120 since 0.1.
MIXP_STRUCT_HISTORY(mixp_state_spec, user_metadata, sizeof(mixp_state_spec));

#undef MIXP_STRUCT_HISTORY

// The size of a struct's first released version: what the exported
// mixp_*_options_init() symbols fill.
template <class T>
constexpr size_t first_struct_size() {
  return StructVersions<T>::sizes[0];
}

// Whether `size` is one a released mixp.h gave T.
template <class T>
constexpr bool released_struct_size(size_t size) {
  for (size_t s : StructVersions<T>::sizes)
    if (s == size) return true;
  return false;
}

// "56 or 48": the accepted sizes, the current one first.
template <class T>
std::string struct_sizes_text() {
  std::string t = std::to_string(sizeof(T));
  for (size_t i = StructVersions<T>::count - 1; i-- > 0;) t += str(" or ", StructVersions<T>::sizes[i]);
  return t;
}

// Fails with MIXP_ERR_INVALID_ARGUMENT unless o.struct_size is one of T's
// released sizes. `arg` names the struct ("options"); `hint` says how to fill
// it right.
template <class T>
void check_struct_size(const T &o, const char *fn, const char *arg, const std::string &hint) {
  if (released_struct_size<T>(o.struct_size)) return;
  if (o.struct_size > sizeof(T))
    fail(MIXP_ERR_INVALID_ARGUMENT, fn, ": ", arg, "->struct_size is ", o.struct_size, ", expected ",
         struct_sizes_text<T>(), " (larger than this library's, ", MIXP_VERSION_MAJOR, ".", MIXP_VERSION_MINOR,
         ": compiled against a newer mixp.h? ", hint, ")");
  fail(MIXP_ERR_INVALID_ARGUMENT, fn, ": ", arg, "->struct_size is ", o.struct_size, ", expected ",
       struct_sizes_text<T>(), " (", hint, ")");
}

// The caller's options, or the defaults for NULL. `fill` sets the defaults:
// the C init function (taking T*) or an internal one (taking T&).
template <class T, class Fill>
T read_options(const T *o, Fill &&fill, const char *fn, const char *init_name, const char *arg = "options") {
  T v;
  if constexpr (std::is_invocable_v<Fill, T *>) fill(&v);
  else fill(v);
  if (!o) return v;
  check_struct_size(*o, fn, arg, str("fill ", arg, " with ", init_name, "()"));
  // An older, smaller struct: its prefix over the defaults.
  std::memcpy(static_cast<void *>(&v), static_cast<const void *>(o), o->struct_size);
  v.struct_size = sizeof(T);
  return v;
}

// Hands an answer struct (the library fills it, the caller sets struct_size,
// already checked) to the caller: the fields `full` has, up to the caller's
// struct_size, so a struct of an older header gets no byte past its end.
template <class T>
void write_answer(T *dst, T full) {
  const uint32_t size = dst->struct_size;
  full.struct_size = size;
  std::memcpy(static_cast<void *>(dst), static_cast<const void *>(&full), std::min<size_t>(size, sizeof(T)));
}

}  // namespace mixp
