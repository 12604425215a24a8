// Where the plugin's CUDA libraries were loaded from, for the session's device
// note: with pip installs (NVIDIA's wheels under site-packages/nvidia/*/lib),
// conda environments and system toolkits side by side, "which cuDNN is this?"
// is the first question a bug report needs answered.
#include <cublasLt.h>
#include <cublas_v2.h>
#include <cudnn.h>
#include <dlfcn.h>

#include <string>

#include "library_origins.hpp"

namespace mixp::cuda {
namespace {

// The file of the shared object that defines fn (its real path as loaded).
std::string file_of(const void *fn) {
  Dl_info info{};
  if (dladdr(fn, &info) == 0 || !info.dli_fname || !*info.dli_fname) return "unknown file";
  return info.dli_fname;
}

}  // namespace

std::string library_origins() {
  return "cuBLASLt from " + file_of(reinterpret_cast<const void *>(&cublasLtCreate)) +
         ", cuBLAS from " + file_of(reinterpret_cast<const void *>(&cublasCreate_v2)) +
         ", cuDNN from " + file_of(reinterpret_cast<const void *>(&cudnnCreate)) +
         ", plugin " + file_of(reinterpret_cast<const void *>(&library_origins));
}

}  // namespace mixp::cuda
