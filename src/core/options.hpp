// Versioned options structs from the C API: each begins with struct_size,
// which is checked here in one place. Every options struct is still at its
// first version, so exactly sizeof(T) is accepted; when a field is appended,
// this is where older (smaller) sizes become readable.
#pragma once
#include <string>
#include <type_traits>

#include "core/error.hpp"

namespace mixp {

// Fails with MIXP_ERR_INVALID_ARGUMENT unless o.struct_size matches T.
// `arg` names the struct ("options"); `hint` says how to fill it right.
template <class T>
void check_struct_size(const T &o, const char *fn, const char *arg, const std::string &hint) {
  if (o.struct_size != sizeof(T))
    fail(MIXP_ERR_INVALID_ARGUMENT, fn, ": ", arg, "->struct_size is ", o.struct_size, ", expected ",
         sizeof(T), " (", hint, ")");
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
  return *o;
}

}  // namespace mixp
