// Device selection: turns a session's device string into a backend.
#pragma once
#include <memory>
#include <string>

#include "backend/backend.hpp"

namespace mixp {

struct OpenedDevice {
  std::unique_ptr<Backend> backend;
  std::string name;  // "cpu" or "cuda:N"
  std::string note;  // what "auto" chose and why, or the GPU's description
};

// Opens `device`: "cpu", "cuda", "cuda:N" (through the CUDA plugin,
// device/loader.hpp) or "auto" (CUDA when the plugin loads and a GPU is
// present, otherwise the CPU, saying which in the note). Fails naming `fn`:
// MIXP_ERR_INVALID_ARGUMENT for an unknown string, the loader's
// MIXP_ERR_DEVICE for an unavailable GPU.
OpenedDevice open_device(const char *device, const char *fn);

}  // namespace mixp
