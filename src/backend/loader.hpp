// Finding and loading the CUDA backend plugin (libmixp_cuda.so) with dlopen,
// so that libmixp.so itself never links CUDA.
#pragma once
#include <memory>
#include <string>

#include "backend/backend.hpp"

namespace mixp {

// Creates the CUDA backend for device ordinal `index`, loading the plugin on
// first use. The plugin is searched in MIXP_BACKEND_PATH (the plugin file
// itself or a directory holding it), then beside libmixp.so. Throws
// MIXP_ERR_DEVICE saying which of these went wrong: no plugin (with every
// path tried and dlerror), a plugin that cannot load (a missing CUDA
// library), an ABI mismatch, no driver, no GPU, an index out of range.
// `description` receives the device's one-line description on success.
std::unique_ptr<Backend> create_cuda_backend(int index, std::string *description);

}  // namespace mixp
