// The *_options_init_sized() entry points: the header's inline
// *_options_init() functions pass the size of the program's own struct, and
// only that many bytes are written (core/options.hpp lists the sizes each
// release gave a struct).
#pragma once
#include <cstdint>
#include <cstring>

#include "api/api_common.hpp"
#include "core/options.hpp"

namespace mixp {

// Writes the first `size` bytes of `defaults` (a full struct of this
// library's version) to *o and sets o->struct_size = size. A size no release
// gave T fails with MIXP_ERR_INVALID_ARGUMENT; then only struct_size is
// written (when it fits in `size`): to `size` itself, which every function
// refuses with a message naming it, or 0 for a size beyond uint32_t.
template <class T>
mixp_status init_options_sized(T *o, size_t size, const T &defaults, const char *fn,
                               const char *arg = "options") {
  return guard(fn, [&] {
    if (!o) fail(MIXP_ERR_INVALID_ARGUMENT, fn, ": ", arg, " is NULL");
    if (!released_struct_size<T>(size)) {
      if (size >= sizeof(uint32_t)) o->struct_size = size <= UINT32_MAX ? uint32_t(size) : 0u;
      if (size > sizeof(T))
        fail(MIXP_ERR_INVALID_ARGUMENT, fn, ": size is ", size, ", expected ", struct_sizes_text<T>(),
             " (larger than this library's, ", MIXP_VERSION_MAJOR, ".", MIXP_VERSION_MINOR,
             ": was the program compiled against a newer mixp.h?)");
      fail(MIXP_ERR_INVALID_ARGUMENT, fn, ": size is ", size, ", expected ", struct_sizes_text<T>(),
           " (sizeof the struct in a released mixp.h)");
    }
    std::memcpy(static_cast<void *>(o), static_cast<const void *>(&defaults), size);
    o->struct_size = uint32_t(size);
  });
}

// A full struct of this library's version filled by `fill` (taking T&).
template <class T, class Fill>
T defaults_of(Fill &&fill) {
  T v;
  std::memset(static_cast<void *>(&v), 0, sizeof v);
  fill(v);
  return v;
}

}  // namespace mixp
