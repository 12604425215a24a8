// The plugin's one exported symbol (see src/backend/plugin.hpp): checks the
// ABI version, reports its op table, checks the driver, the GPU count and the
// ordinal, each with its own message, then builds the CudaBackend.
#include <dlfcn.h>

#include <cstdio>
#include <cstring>
#include <new>
#include <string>

#include "backend/plugin.hpp"
#include "core/error.hpp"
#include "cuda_backend.hpp"

namespace {

int report(char *msg, size_t len, int status, const std::string &text) {
  if (msg && len) {
    std::strncpy(msg, text.c_str(), len - 1);
    msg[len - 1] = 0;
  }
  return status;
}

std::string cuda_err(cudaError_t e) {
  return std::string(cudaGetErrorName(e)) + ": " + cudaGetErrorString(e);
}

}  // namespace

extern "C" __attribute__((visibility("default"))) int mixp_backend_plugin_v2(
    uint32_t abi_version, mixp::OpTableIdentity *op_table, int device, mixp::Backend **out,
    char *msg, size_t msglen) {
  using mixp::kBackendAbiVersion;
  if (abi_version != kBackendAbiVersion)
    return report(msg, msglen, MIXP_ERR_DEVICE,
                  "plugin ABI v" + std::to_string(kBackendAbiVersion) + ", libmixp expects v" +
                      std::to_string(abi_version) +
                      ": libmixp_cuda.so and libmixp.so come from different builds");
  if (!op_table) return report(msg, msglen, MIXP_ERR_INVALID_ARGUMENT, "op_table is NULL");
  *op_table = mixp::kOpTableIdentity;
  if (!out) return report(msg, msglen, MIXP_ERR_INVALID_ARGUMENT, "out is NULL");
  // The runtime is linked statically and loads the driver (libcuda.so.1) on
  // first use; look for it first so "no driver" is told apart from "no GPU".
  if (void *drv = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD); !drv) {
    drv = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!drv) {
      const char *e = dlerror();
      return report(msg, msglen, MIXP_ERR_DEVICE,
                    std::string("no GPU/driver: the NVIDIA driver library libcuda.so.1 cannot be "
                                "loaded (") +
                        (e ? e : "not found") + "); install the NVIDIA driver");
    }
  }
  int driver = 0;
  cudaError_t e = cudaDriverGetVersion(&driver);
  int count = 0;
  if (e == cudaSuccess) e = cudaGetDeviceCount(&count);
  if (e == cudaErrorInsufficientDriver || (e == cudaSuccess && driver == 0)) {
    (void)cudaGetLastError();
    return report(msg, msglen, MIXP_ERR_DEVICE,
                  "no GPU/driver: the NVIDIA driver (CUDA " + std::to_string(driver / 1000) + "." +
                      std::to_string((driver % 1000) / 10) +
                      ") is missing or older than this backend's CUDA runtime " +
                      std::to_string(CUDART_VERSION / 1000) + "." +
                      std::to_string((CUDART_VERSION % 1000) / 10) + " (" + cuda_err(e) + ")");
  }
  if (e == cudaErrorNoDevice || (e == cudaSuccess && count == 0)) {
    (void)cudaGetLastError();
    return report(msg, msglen, MIXP_ERR_DEVICE,
                  "no GPU: the NVIDIA driver is installed but reports no CUDA device" +
                      (e == cudaSuccess ? std::string() : " (" + cuda_err(e) + ")"));
  }
  if (e != cudaSuccess) {
    (void)cudaGetLastError();
    return report(msg, msglen, MIXP_ERR_DEVICE,
                  "the CUDA runtime failed to start: " + cuda_err(e));
  }
  if (device < 0 || device >= count)
    return report(msg, msglen, MIXP_ERR_DEVICE,
                  "device index out of range: cuda:" + std::to_string(device) + " asked for, " +
                      std::to_string(count) + " GPU(s) present (cuda:0 .. cuda:" +
                      std::to_string(count - 1) + ")");
  try {
    auto *b = new mixp::cuda::CudaBackend(device);
    report(msg, msglen, MIXP_OK, b->description());
    *out = b;
    return MIXP_OK;
  } catch (const mixp::Error &err) {
    return report(msg, msglen, err.status() == MIXP_ERR_OUT_OF_MEMORY ? MIXP_ERR_OUT_OF_MEMORY
                                                                      : MIXP_ERR_DEVICE,
                  std::string("the CUDA backend failed to start on cuda:") +
                      std::to_string(device) + ": " + err.what());
  } catch (const std::bad_alloc &) {
    return report(msg, msglen, MIXP_ERR_OUT_OF_MEMORY, "out of host memory starting the CUDA backend");
  } catch (const std::exception &ex) {
    return report(msg, msglen, MIXP_ERR_DEVICE,
                  std::string("the CUDA backend failed to start: ") + ex.what());
  }
}
