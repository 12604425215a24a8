// Where the plugin's CUDA libraries were loaded from, for the session's device
// note: with pip installs (NVIDIA's wheels under site-packages/nvidia/*/lib),
// conda environments and system toolkits side by side, "which cuDNN is this?"
// is the first question a bug report needs answered.
#include <cublasLt.h>
#include <cublas_v2.h>
#include <cudnn.h>
#include <dlfcn.h>

#include <cstdlib>
#include <string>

#include "library_origins.hpp"

namespace mixp::cuda {
namespace {

// The file of the shared object that defines fn, as its real path: the
// loader reports the path it opened, which through a RUNPATH such as the
// wheel's $ORIGIN/../nvidia/cu13/lib reads ".../mixp_cuda13/../nvidia/...";
// the real path also names the versioned file (libcudnn.so.9.x.y).
std::string file_of(const void *fn) {
  Dl_info info{};
  if (dladdr(fn, &info) == 0 || !info.dli_fname || !*info.dli_fname) return "unknown file";
  char *real = realpath(info.dli_fname, nullptr);
  if (!real) return info.dli_fname;
  std::string r = real;
  free(real);
  return r;
}

}  // namespace

std::string library_origins() {
  return "cuBLASLt from " + file_of(reinterpret_cast<const void *>(&cublasLtCreate)) +
         ", cuBLAS from " + file_of(reinterpret_cast<const void *>(&cublasCreate_v2)) +
         ", cuDNN from " + file_of(reinterpret_cast<const void *>(&cudnnCreate)) +
         ", plugin " + file_of(reinterpret_cast<const void *>(&library_origins));
}

}  // namespace mixp::cuda
