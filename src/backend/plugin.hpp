// The one entry point a backend plugin (libmixp_cuda.so) exports. Backend is
// a C++ interface, so libmixp.so and the plugin must come from the same
// headers; the entry point checks kBackendAbiVersion before anything else,
// then reports the op table it was built with, which the loader compares
// with its own (core/op_table_identity.hpp).
#pragma once
#include <cstddef>
#include <cstdint>

#include "backend/backend.hpp"
#include "core/op_table_identity.hpp"

// v2: the entry point reports its op table (v1 plugins have no such
// argument, so the loader does not find them rather than misread them).
#define MIXP_BACKEND_PLUGIN_SYMBOL "mixp_backend_plugin_v2"

// Once abi_version matches, writes the op table the plugin was built with to
// *op_table (before any other check, so that the loader can refuse a plugin
// from another table whatever else goes wrong), then creates the backend of
// device `device` (a CUDA ordinal) in *out and returns MIXP_OK; the caller
// owns *out (delete it through the virtual destructor). On failure returns
// MIXP_ERR_DEVICE (ABI mismatch, no driver, no GPU, index out of range, a
// library that failed to start) or MIXP_ERR_OUT_OF_MEMORY, leaves *out
// untouched and writes the reason, NUL-terminated, to msg. On success msg
// receives a one-line description of the device. msg may be null when
// msglen is 0.
using mixp_backend_plugin_fn = int (*)(uint32_t abi_version, mixp::OpTableIdentity *op_table,
                                       int device, mixp::Backend **out, char *msg, size_t msglen);
