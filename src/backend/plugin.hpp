// The one entry point a backend plugin (libmixp_cuda.so) exports. Backend is
// a C++ interface, so libmixp.so and the plugin must come from the same
// headers; the entry point checks kBackendAbiVersion before anything else.
#pragma once
#include <cstddef>
#include <cstdint>

#include "backend/backend.hpp"

#define MIXP_BACKEND_PLUGIN_SYMBOL "mixp_backend_plugin_v1"

// Creates the backend of device `device` (a CUDA ordinal) in *out and returns
// MIXP_OK; the caller owns *out (delete it through the virtual destructor).
// On failure returns MIXP_ERR_DEVICE (ABI mismatch, no driver, no GPU, index
// out of range, a library that failed to start) or MIXP_ERR_OUT_OF_MEMORY,
// leaves *out untouched and writes the reason, NUL-terminated, to msg. On
// success msg receives a one-line description of the device. msg may be
// null when msglen is 0.
using mixp_backend_plugin_fn = int (*)(uint32_t abi_version, int device, mixp::Backend **out,
                                       char *msg, size_t msglen);
