// The DLPack ABI (https://dmlc.github.io/dlpack/latest/c_api.html), written
// from the specification so that libmixp builds without dlpack.h: the
// legacy DLManagedTensor (DLPack < 1.0, what numpy 1.22-1.26 and PyTorch's
// default capsule use) and DLManagedTensorVersioned (DLPack >= 1.0). The
// layouts are the standard's; the C API (mixp.h) names the structs only by
// their tags, which are the same as dlpack.h's, so callers pass pointers to
// dlpack.h's own types.
#pragma once
#include <cstdint>

extern "C" {

struct DLDevice {
  int32_t device_type;  // DLDeviceType
  int32_t device_id;
};

struct DLDataType {
  uint8_t code;  // DLDataTypeCode
  uint8_t bits;
  uint16_t lanes;
};

struct DLTensor {
  void *data;
  DLDevice device;
  int32_t ndim;
  DLDataType dtype;
  int64_t *shape;
  int64_t *strides;  // in elements; NULL: compact row-major
  uint64_t byte_offset;
};

struct DLManagedTensor {
  DLTensor dl_tensor;
  void *manager_ctx;
  void (*deleter)(DLManagedTensor *self);
};

struct DLPackVersion {
  uint32_t major;
  uint32_t minor;
};

struct DLManagedTensorVersioned {
  DLPackVersion version;
  void *manager_ctx;
  void (*deleter)(DLManagedTensorVersioned *self);
  uint64_t flags;
  DLTensor dl_tensor;
};

}  // extern "C"

namespace mixp::dlpack {

// DLDeviceType values.
constexpr int32_t kCPU = 1, kCUDA = 2, kCUDAHost = 3, kCUDAManaged = 13;
// DLDataTypeCode values (kBool since DLPack 0.8, same number everywhere).
constexpr uint8_t kInt = 0, kUInt = 1, kFloat = 2, kBfloat = 4, kBool = 6;
// The 8-bit floats, from DLPack 1.1 (Debian's dlpack.h 0.6 lacks them):
// kDLFloat8_e4m3fn (OCP E4M3, no infinity: PyTorch's float8_e4m3fn) and
// kDLFloat8_e5m2, 8 bits each.
constexpr uint8_t kFloat8_e4m3fn = 10, kFloat8_e5m2 = 12;
// DLManagedTensorVersioned::flags bits.
constexpr uint64_t kFlagReadOnly = 1u << 0, kFlagIsCopied = 1u << 1;
// The version mixp produces.
constexpr uint32_t kMajor = 1, kMinor = 0;

}  // namespace mixp::dlpack
