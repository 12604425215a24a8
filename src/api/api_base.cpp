// Versions, build information, status strings and the thread-local error.
#include <string>

#include "api/api_common.hpp"
#include "cpu/precision_paths.hpp"
#include "cpu/simd.hpp"
#include "build_config.h"

namespace mixp {
const char *last_error_message() noexcept;
mixp_status last_error_status() noexcept;
}  // namespace mixp

#define MIXP_STR2(x) #x
#define MIXP_STR(x) MIXP_STR2(x)

extern "C" {

const char *mixp_version(void) {
  return MIXP_STR(MIXP_VERSION_MAJOR) "." MIXP_STR(MIXP_VERSION_MINOR) "." MIXP_STR(MIXP_VERSION_PATCH);
}

int mixp_version_number(void) { return MIXP_VERSION_NUMBER; }

const char *mixp_build_info(void) {
  // Built once; function-local statics are initialised thread-safely.
  static const std::string info = [] {
    std::string s = std::string("mixp ") + mixp_version() + " (commit " MIXP_GIT_COMMIT ", " MIXP_COMPILER "); " +
                    mixp::cpu::describe_cpu() + "; cpu kernels: " + mixp::cpu::kernel_isa_note() +
                    "; cpu backend: oneDNN + OpenMP; cuda backend: ";
    const std::string archs = MIXP_CUDA_ARCHS;
    if (archs.empty())
      s += std::string("not built (CUDA toolkit found at configure time: ") + MIXP_CUDA_TOOLKIT_FOUND + ")";
    else
      s += "built, sm " + archs;
    return s;
  }();
  return info.c_str();
}

const char *mixp_status_string(mixp_status status) {
  switch (status) {
    case MIXP_OK: return "ok";
    case MIXP_DONE: return "done";
    case MIXP_ERR_INVALID_ARGUMENT: return "invalid argument";
    case MIXP_ERR_SHAPE: return "shape mismatch";
    case MIXP_ERR_DTYPE: return "dtype mismatch";
    case MIXP_ERR_DEVICE: return "device error";
    case MIXP_ERR_OUT_OF_MEMORY: return "out of memory";
    case MIXP_ERR_STATE: return "invalid state";
    case MIXP_ERR_CORRUPT: return "corrupt data";
    case MIXP_ERR_IO: return "i/o error";
    case MIXP_ERR_NUMERIC: return "non-finite value";
    case MIXP_ERR_UNSUPPORTED: return "unsupported";
    case MIXP_ERR_INTERNAL: return "internal error";
  }
  return "unknown status";
}

const char *mixp_last_error(void) { return mixp::last_error_message(); }

mixp_status mixp_last_status(void) { return mixp::last_error_status(); }

size_t mixp_dtype_size(mixp_dtype dtype) { return mixp::dtype_size(dtype); }

const char *mixp_dtype_name(mixp_dtype dtype) { return mixp::dtype_name(dtype); }

}  // extern "C"
