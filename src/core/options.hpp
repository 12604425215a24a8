// Versioned options structs from the C API: each begins with struct_size,
// which is checked here in one place. A struct accepts its current size and
// the size of its first version (StructVersions, specialised where a field
// was appended), whose missing fields read as their defaults.
#pragma once
#include <cstring>
#include <string>
#include <type_traits>

#include "core/error.hpp"

namespace mixp {

// The size of a struct's first released version; sizeof(T) for a struct
// never extended. A specialisation sits beside the code that reads the
// struct, before its first read_options().
template <class T>
struct StructVersions {
  static constexpr size_t first = sizeof(T);
};

// Fails with MIXP_ERR_INVALID_ARGUMENT unless o.struct_size is T's size or
// its first version's. `arg` names the struct ("options"); `hint` says how
// to fill it right.
template <class T>
void check_struct_size(const T &o, const char *fn, const char *arg, const std::string &hint) {
  if (o.struct_size != sizeof(T) && o.struct_size != StructVersions<T>::first)
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
  // An older, smaller struct: its prefix over the defaults.
  std::memcpy(static_cast<void *>(&v), static_cast<const void *>(o), o->struct_size);
  v.struct_size = sizeof(T);
  return v;
}

}  // namespace mixp
