#include "device/device.hpp"

#include <cctype>

#include "core/error.hpp"
#include "cpu/cpu_backend.hpp"
#include "cpu/precision_paths.hpp"
#include "device/loader.hpp"

namespace mixp {
namespace {

// Parses "cuda" / "cuda:N"; returns false when `dev` is not of that form.
bool parse_cuda(const std::string &dev, int *index) {
  if (dev == "cuda") {
    *index = 0;
    return true;
  }
  if (dev.rfind("cuda:", 0) != 0 || dev.size() == 5 || dev.size() > 9) return false;
  int v = 0;
  for (size_t i = 5; i < dev.size(); ++i) {
    if (!std::isdigit(static_cast<unsigned char>(dev[i]))) return false;
    v = v * 10 + (dev[i] - '0');
  }
  *index = v;
  return true;
}

}  // namespace

OpenedDevice open_device(const char *device, const char *fn) {
  const std::string dev = device ? device : "cpu";
  OpenedDevice d;
  d.name = "cpu";
  int cuda_index = -1;
  if (dev == "cpu") {
  } else if (dev == "auto") {
    try {
      std::string desc;
      d.backend = create_cuda_backend(0, &desc);
      d.name = "cuda:0";
      d.note = "device 'auto': using cuda:0 (" + desc + ")";
    } catch (const Error &e) {
      d.note = std::string("device 'auto': cuda is unavailable, using cpu: ") + e.message();
    }
  } else if (parse_cuda(dev, &cuda_index)) {
    try {
      d.backend = create_cuda_backend(cuda_index, &d.note);
    } catch (const Error &e) {
      fail(e.status(), fn, ": device '", dev, "' is unavailable: ", e.message());
    }
    d.name = "cuda:" + std::to_string(cuda_index);
  } else {
    fail(MIXP_ERR_INVALID_ARGUMENT, fn, ": unknown device '", dev,
         "' (expected \"cpu\", \"cuda\", \"cuda:N\" or \"auto\")");
  }
  if (!d.backend) {
    d.backend = std::make_unique<CpuBackend>();
    // A CPU session describes its CPU as a CUDA session its GPU.
    d.note = d.note.empty() ? cpu::describe_cpu() : d.note + "; " + cpu::describe_cpu();
  }
  return d;
}

}  // namespace mixp
