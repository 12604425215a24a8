// DLPack exchange: mixp_tensor_{from,to}_dlpack[_versioned]. Imports borrow
// the producer's memory through a Storage whose release calls the producer's
// deleter; exports hand out a managed tensor whose context holds a reference
// to the mixp tensor, so the storage outlives the mixp handle.
#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <string>

#include "api/api_common.hpp"
#include "api/dlpack_abi.hpp"
#include "backend/backend.hpp"
#include "core/sizes.hpp"

namespace mixp {
namespace {

// The session's device as DLPack names it: (kCPU, 0) or (kCUDA, N).
DLDevice device_of(const Session &s) {
  if (s.device.rfind("cuda", 0) == 0) {
    const size_t colon = s.device.find(':');
    const int32_t id = colon == std::string::npos ? 0 : int32_t(std::stoi(s.device.substr(colon + 1)));
    return DLDevice{dlpack::kCUDA, id};
  }
  return DLDevice{dlpack::kCPU, 0};
}

const char *device_type_name(int32_t t) {
  switch (t) {
    case dlpack::kCPU: return "kDLCPU";
    case dlpack::kCUDA: return "kDLCUDA";
    case dlpack::kCUDAHost: return "kDLCUDAHost";
    case dlpack::kCUDAManaged: return "kDLCUDAManaged";
    case 4: return "kDLOpenCL";
    case 7: return "kDLVulkan";
    case 8: return "kDLMetal";
    case 10: return "kDLROCM";
    default: return "an unknown device type";
  }
}

// mixp's dtypes as DLPack names them (one lane each), for both directions.
struct DTypeCode {
  DType dtype;
  uint8_t code, bits;
};
constexpr DTypeCode kDTypeCodes[] = {
    {MIXP_F16, dlpack::kFloat, 16}, {MIXP_F32, dlpack::kFloat, 32}, {MIXP_F64, dlpack::kFloat, 64},
    {MIXP_BF16, dlpack::kBfloat, 16}, {MIXP_I32, dlpack::kInt, 32},  {MIXP_I64, dlpack::kInt, 64},
    {MIXP_U8, dlpack::kUInt, 8},      {MIXP_BOOL, dlpack::kBool, 8},
    {MIXP_F8E4M3, dlpack::kFloat8_e4m3fn, 8}, {MIXP_F8E5M2, dlpack::kFloat8_e5m2, 8},
};

DType dtype_from(DLDataType t, const char *fn) {
  if (t.lanes != 1)
    fail(MIXP_ERR_DTYPE, fn, ": vector element types (lanes = ", int(t.lanes), ") are not supported");
  for (const DTypeCode &c : kDTypeCodes)
    if (c.code == t.code && c.bits == t.bits) return c.dtype;
  fail(MIXP_ERR_DTYPE, fn, ": DLPack element type (code ", int(t.code), ", ", int(t.bits),
       " bits) has no mixp dtype (float 16/32/64, bfloat 16, int 32/64, uint 8, bool 8, float8_e4m3fn 8,",
       " float8_e5m2 8)");
}

DLDataType dtype_to(DType t) {
  for (const DTypeCode &c : kDTypeCodes)
    if (c.dtype == t) return {c.code, c.bits, 1};
  fail(MIXP_ERR_INTERNAL, "dlpack: dtype ", int(t), " has no DLPack type");
}

// Validates a DLTensor for `s` and returns the mixp tensor over `storage`
// (whose data/nbytes are filled here); nothing is owned until the caller
// sets the storage's release.
TensorPtr wrap_dl_tensor(Session *s, const DLTensor &dl, const char *fn, std::shared_ptr<Storage> &storage) {
  const DLDevice want = device_of(*s);
  const bool cpu_ok = want.device_type == dlpack::kCPU &&
                      (dl.device.device_type == dlpack::kCPU || dl.device.device_type == dlpack::kCUDAHost);
  const bool cuda_ok = want.device_type == dlpack::kCUDA &&
                       (dl.device.device_type == dlpack::kCUDA || dl.device.device_type == dlpack::kCUDAManaged) &&
                       dl.device.device_id == want.device_id;
  if (!cpu_ok && !cuda_ok)
    fail(MIXP_ERR_DEVICE, fn, ": the tensor is on ", device_type_name(dl.device.device_type), " (device_id ",
         dl.device.device_id, "), the session on ", s->device,
         " (a cpu session takes kDLCPU or kDLCUDAHost memory; a cuda:N session kDLCUDA or kDLCUDAManaged memory of device N)");
  const DType dtype = dtype_from(dl.dtype, fn);
  if (dl.ndim < 0 || dl.ndim > MIXP_MAX_DIMS)
    fail(MIXP_ERR_INVALID_ARGUMENT, fn, ": ndim must be in [0, ", MIXP_MAX_DIMS, "], got ", dl.ndim);
  const Shape shape = check_shape(dl.shape, dl.ndim, fn, "dl_tensor.shape");
  const int64_t numel = shape.numel();
  const size_t es = dtype_size(dtype);
  int64_t strides[MIXP_MAX_DIMS];
  if (dl.strides) {
    for (int i = 0; i < dl.ndim; ++i) {
      strides[i] = dl.strides[i];
      if (strides[i] < 0)
        fail(MIXP_ERR_INVALID_ARGUMENT, fn, ": dl_tensor.strides[", i, "] is negative (", strides[i],
             "); mixp tensors have non-negative strides");
    }
  } else {
    contiguous_strides(shape, strides);
  }
  // The storage spans the elements the strides reach: 1 + sum (n_i - 1) s_i.
  int64_t extent = numel > 0 ? 1 : 0;
  if (numel > 0)
    for (int i = 0; i < dl.ndim; ++i) {
      const int64_t span = shape.d[i] - 1;
      if (span > 0 && strides[i] > (kMaxElements - extent) / span)
        fail(MIXP_ERR_INVALID_ARGUMENT, fn, ": dl_tensor.strides[", i, "] = ", strides[i],
             " reach past 2^62 elements");
      extent += span * strides[i];
    }
  if (numel > 0 && !dl.data) fail(MIXP_ERR_INVALID_ARGUMENT, fn, ": dl_tensor.data is NULL");
  if (dl.byte_offset > uint64_t(std::numeric_limits<intptr_t>::max()))
    fail(MIXP_ERR_INVALID_ARGUMENT, fn, ": dl_tensor.byte_offset ", dl.byte_offset, " is absurd");
  char *first = static_cast<char *>(dl.data) + dl.byte_offset;
  if (reinterpret_cast<uintptr_t>(first) % es != 0)
    fail(MIXP_ERR_INVALID_ARGUMENT, fn, ": data + byte_offset is not aligned to the ", es, "-byte size of ",
         dtype_name(dtype));
  storage = std::make_shared<Storage>();
  storage->session = SessionRef::share(s);
  storage->data = first;
  storage->nbytes = size_t(extent) * es;
  storage->owned = false;
  TensorPtr t = TensorPtr::adopt(new mixp_tensor());
  t->session = SessionRef::share(s);
  t->dtype = dtype;
  t->ndim = dl.ndim;
  for (int i = 0; i < dl.ndim; ++i) {
    t->shape[i] = shape.d[i];
    t->strides[i] = strides[i];
  }
  t->storage = storage;
  return t;
}

template <class Managed>
void call_deleter(void *m) {
  Managed *managed = static_cast<Managed *>(m);
  if (managed->deleter) managed->deleter(managed);
}

template <class Managed>
mixp_status import(const char *fn, mixp_session *session, Managed *managed, mixp_tensor **out,
                   void (*check)(const Managed &, const char *)) {
  return guard(fn, [&] {
    Session *s = check_session(session, fn);
    check_out(out, fn);
    if (!managed) fail(MIXP_ERR_INVALID_ARGUMENT, fn, ": managed is NULL");
    if (check) check(*managed, fn);
    std::shared_ptr<Storage> storage;
    TensorPtr t = wrap_dl_tensor(s, managed->dl_tensor, fn, storage);
    // Set last: from here on the storage owns the duty to call the deleter.
    storage->on_release = call_deleter<Managed>;
    storage->release_user = managed;
    give(out, t);
  });
}

void check_versioned(const DLManagedTensorVersioned &m, const char *fn) {
  if (m.version.major != dlpack::kMajor)
    fail(MIXP_ERR_UNSUPPORTED, fn, ": DLPack version ", m.version.major, ".", m.version.minor,
         " is not supported (major version 1 is)");
  if (m.flags & dlpack::kFlagReadOnly)
    fail(MIXP_ERR_INVALID_ARGUMENT, fn, ": the tensor is read-only (DLPACK_FLAG_BITMASK_READ_ONLY); "
         "mixp tensors are writable: pass a writable tensor or a copy");
}

// What an exported managed tensor keeps: the mixp tensor (and through it the
// storage) and the shape/strides arrays DLTensor points at.
struct ExportContext {
  Ref<mixp_tensor> tensor;
  int64_t shape[MIXP_MAX_DIMS];
  int64_t strides[MIXP_MAX_DIMS];
};

template <class Managed>
void delete_export(Managed *m) {
  delete static_cast<ExportContext *>(m->manager_ctx);
  delete m;
}

template <class Managed>
mixp_status export_tensor(const char *fn, const mixp_tensor *tensor, Managed **out) {
  return guard(fn, [&] {
    Tensor *t = check_tensor(tensor, fn, "tensor");
    check_out(out, fn);
    Session *s = t->session.get();
    // The consumer may read at once from any stream: queued work first.
    s->backend->synchronize();
    auto ctx = std::make_unique<ExportContext>();
    auto m = std::make_unique<Managed>();
    std::memset(m.get(), 0, sizeof(Managed));
    ctx->tensor = Ref<mixp_tensor>::share(t);
    for (int i = 0; i < t->ndim; ++i) {
      ctx->shape[i] = t->shape[i];
      ctx->strides[i] = t->strides[i];
    }
    DLTensor &dl = m->dl_tensor;
    dl.data = t->data();
    dl.device = device_of(*s);
    dl.ndim = t->ndim;
    dl.dtype = dtype_to(t->dtype);
    dl.shape = ctx->shape;
    dl.strides = ctx->strides;
    dl.byte_offset = 0;
    if constexpr (std::is_same_v<Managed, DLManagedTensorVersioned>) {
      m->version = DLPackVersion{dlpack::kMajor, dlpack::kMinor};
      m->flags = 0;
    }
    m->manager_ctx = ctx.release();
    m->deleter = delete_export<Managed>;
    *out = m.release();
  });
}

}  // namespace
}  // namespace mixp

using namespace mixp;

mixp_status mixp_tensor_from_dlpack(mixp_session *session, DLManagedTensor *managed, mixp_tensor **out) {
  return import<DLManagedTensor>("mixp_tensor_from_dlpack", session, managed, out, nullptr);
}

mixp_status mixp_tensor_from_dlpack_versioned(mixp_session *session, DLManagedTensorVersioned *managed,
                                              mixp_tensor **out) {
  return import<DLManagedTensorVersioned>("mixp_tensor_from_dlpack_versioned", session, managed, out,
                                          check_versioned);
}

mixp_status mixp_tensor_to_dlpack(const mixp_tensor *tensor, DLManagedTensor **out) {
  return export_tensor<DLManagedTensor>("mixp_tensor_to_dlpack", tensor, out);
}

mixp_status mixp_tensor_to_dlpack_versioned(const mixp_tensor *tensor, DLManagedTensorVersioned **out) {
  return export_tensor<DLManagedTensorVersioned>("mixp_tensor_to_dlpack_versioned", tensor, out);
}

void mixp_dlpack_release(DLManagedTensor *managed) {
  if (managed && managed->deleter) managed->deleter(managed);
}

void mixp_dlpack_release_versioned(DLManagedTensorVersioned *managed) {
  if (managed && managed->deleter) managed->deleter(managed);
}
