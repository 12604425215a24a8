// Finding and loading plugins with dlopen -- the CUDA backend
// (libmixp_cuda.so), the MPI transport (libmixp_mpi.so) -- so that libmixp.so
// itself never links CUDA or MPI.
#pragma once
#include <memory>
#include <string>

#include "backend/backend.hpp"
#include "core/op_table_identity.hpp"

namespace mixp {

// Where a plugin is looked for and what its failures say.
struct PluginSpec {
  const char *file;         // "libmixp_cuda.so"
  const char *env;          // the variable naming the plugin or its directory
  const char *symbol;       // its one entry point
  const char *what;         // "CUDA backend", for messages
  const char *load_hint;    // why a plugin that exists may not load
  const char *absent_hint;  // why there may be none
  mixp_status status;       // of every failure
};

// The entry point of `spec`'s plugin, searched in $env (the file itself or a
// directory holding it), then beside libmixp.so, and loaded once per process
// (never unloaded). Throws spec.status with every path tried and dlerror.
void *load_plugin_entry(const PluginSpec &spec);

// Why a plugin built from op table `plugin` cannot serve a libmixp built from
// `host` (callers have found them different): both counts and hashes, and
// the remedy.
std::string op_table_mismatch(const char *plugin_file, const OpTableIdentity &plugin,
                              const OpTableIdentity &host);

// Creates the CUDA backend for device ordinal `index`, loading the plugin on
// first use. The plugin is searched in MIXP_BACKEND_PATH (the plugin file
// itself or a directory holding it), then beside libmixp.so. Throws
// MIXP_ERR_DEVICE saying which of these went wrong: no plugin (with every
// path tried and dlerror), a plugin that cannot load (a missing CUDA
// library), an ABI mismatch, a plugin built from another op table (refused
// whatever else it reported), no driver, no GPU, an index out of range.
// `description` receives the device's one-line description on success.
std::unique_ptr<Backend> create_cuda_backend(int index, std::string *description);

}  // namespace mixp
