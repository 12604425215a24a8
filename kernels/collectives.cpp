// Device collectives through NCCL (data parallelism, src/dist/).
//
// NCCL is opened with dlopen on the first clique_id/clique_join, never
// linked: libmixp_cuda.so must load, and train on one GPU, where NCCL is
// absent. <nccl.h> provides the types only; the functions come from dlsym.
// Collectives are queued on the session's one stream, so they are ordered
// with the kernels of the step (the gradients they reduce, the optimizer
// step that reads the result) with no host synchronisation. Overlapped
// all-reduces (gradient buckets during backward) go to the clique's own
// stream instead: an event fences each after the work queued before it, and
// collectives_join fences the session's stream after all of them.
#include <dlfcn.h>
#include <nccl.h>

#include <cstdio>
#include <cstring>
#include <string>

#include "core/error.hpp"
#include "cuda_backend.hpp"

namespace mixp::cuda {

struct CudaBackend::Clique {
  ncclComm_t comm = nullptr;
  std::string description;  // what clique_join returned, valid while joined
  // The overlapped collectives' stream, made on first use, and its fences.
  cudaStream_t side = nullptr;
  cudaEvent_t queued = nullptr;    // recorded on the session's stream before each
  cudaEvent_t finished = nullptr;  // recorded on `side` by collectives_join
  bool pending = false;            // overlapped work not yet joined
};

namespace {

// The entry points of libnccl.so.2, resolved once per process. The library
// stays loaded for good (RTLD_NODELETE): communicators of other sessions
// may still use it.
struct Nccl {
  decltype(&ncclGetVersion) get_version;
  decltype(&ncclGetUniqueId) get_unique_id;
  decltype(&ncclCommInitRank) comm_init_rank;
  decltype(&ncclCommDestroy) comm_destroy;
  decltype(&ncclAllReduce) all_reduce;
  decltype(&ncclBroadcast) broadcast;
  decltype(&ncclAllGather) all_gather;
  decltype(&ncclGetErrorString) error_string;
};

constexpr const char *kNcclSoname = "libnccl.so.2";

template <class F>
void resolve(void *lib, const char *name, F *fn) {
  *fn = reinterpret_cast<F>(dlsym(lib, name));
  if (!*fn)
    fail(MIXP_ERR_DEVICE, "NCCL (", kNcclSoname, ") has no ", name,
         ": NCCL 2.x is needed (install a newer one or put its directory on LD_LIBRARY_PATH)");
}

Nccl load_nccl() {
  void *lib = dlopen(kNcclSoname, RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
  if (!lib) {
    const char *e = dlerror();
    fail(MIXP_ERR_DEVICE, "NCCL (", kNcclSoname, ") cannot be loaded: ", e ? e : "not found",
         "; install NCCL or put its directory on LD_LIBRARY_PATH (PyTorch's wheel carries one "
         "in site-packages/nvidia/nccl/lib)");
  }
  Nccl n{};
  resolve(lib, "ncclGetVersion", &n.get_version);
  resolve(lib, "ncclGetUniqueId", &n.get_unique_id);
  resolve(lib, "ncclCommInitRank", &n.comm_init_rank);
  resolve(lib, "ncclCommDestroy", &n.comm_destroy);
  resolve(lib, "ncclAllReduce", &n.all_reduce);
  resolve(lib, "ncclBroadcast", &n.broadcast);
  resolve(lib, "ncclAllGather", &n.all_gather);
  resolve(lib, "ncclGetErrorString", &n.error_string);
  return n;
}

// A failed load throws out of the initialiser, so the next call tries again.
const Nccl &nccl() {
  static const Nccl n = load_nccl();
  return n;
}

void check(ncclResult_t r, const char *call) {
  if (r != ncclSuccess)
    fail(MIXP_ERR_DEVICE, "cuda: ", call, " failed: ", nccl().error_string(r), " (NCCL error ",
         int(r), ")");
}

ncclDataType_t nccl_type(DType t, const char *fn) {
  switch (t) {
    case MIXP_F32: return ncclFloat32;
    case MIXP_F64: return ncclFloat64;
    case MIXP_I32: return ncclInt32;
    case MIXP_I64: return ncclInt64;
    case MIXP_U8: return ncclUint8;
    default:
      fail(MIXP_ERR_DTYPE, "cuda ", fn, ": dtype ", dtype_name(t),
           " is not one of f32, f64, i32, i64, u8");
  }
}

// NCCL_VERSION_CODE: major*10000 + minor*100 + patch since 2.9, major*1000
// + minor*100 + patch before.
std::string version_string(int code) {
  const int major = code >= 10000 ? code / 10000 : code / 1000;
  const int rest = code >= 10000 ? code % 10000 : code % 1000;
  char s[48];
  std::snprintf(s, sizeof s, "NCCL %d.%d.%d", major, rest / 100, rest % 100);
  return s;
}

}  // namespace

void CudaBackend::LeaveClique::operator()(Clique *c) const noexcept {
  // clique_leave waited for the streams, so no queued collective is cut
  // short (a failed join has queued none).
  if (c->comm) nccl().comm_destroy(c->comm);
  if (c->queued) cudaEventDestroy(c->queued);
  if (c->finished) cudaEventDestroy(c->finished);
  if (c->side) cudaStreamDestroy(c->side);
  delete c;
}

CudaBackend::Clique &CudaBackend::joined(const char *fn) {
  if (!clique_) fail(MIXP_ERR_STATE, "cuda ", fn, ": no clique joined");
  return *clique_;
}

void CudaBackend::clique_id(unsigned char id[kCliqueIdBytes]) {
  static_assert(sizeof(ncclUniqueId) == kCliqueIdBytes, "kCliqueIdBytes is NCCL's id size");
  ncclUniqueId u;
  check(nccl().get_unique_id(&u), "ncclGetUniqueId");
  std::memcpy(id, &u, sizeof u);
}

const char *CudaBackend::clique_join(const unsigned char id[kCliqueIdBytes], int world, int rank) {
  if (clique_)
    fail(MIXP_ERR_STATE, "cuda clique_join: already in a clique (", clique_->description,
         "); leave it first");
  const Nccl &n = nccl();
  int code = 0;
  check(n.get_version(&code), "ncclGetVersion");
  std::unique_ptr<Clique, LeaveClique> c(new Clique{nullptr, version_string(code)});
  ncclUniqueId u;
  std::memcpy(&u, id, sizeof u);
  // NCCL binds the communicator to the calling thread's current device.
  MIXP_CUDA_CHECK(cudaSetDevice(device_));
  ncclComm_t comm = nullptr;  // kept only once NCCL made it: a failed init cleans up after itself
  check(n.comm_init_rank(&comm, world, u, rank), "ncclCommInitRank");
  c->comm = comm;
  clique_ = std::move(c);
  return clique_->description.c_str();
}

void CudaBackend::clique_leave() noexcept {
  if (!clique_) return;
  cudaSetDevice(device_);
  if (clique_->side) cudaStreamSynchronize(clique_->side);
  if (cudaStreamSynchronize(stream_) == cudaSuccess) note_host_sync();
  clique_.reset();
}

void CudaBackend::all_reduce(const View &buf, CollectiveOp op) {
  Clique &c = joined("all_reduce");
  const ncclDataType_t t = nccl_type(buf.dtype, "all_reduce");
  const ncclRedOp_t r = op == CollectiveOp::Max ? ncclMax : ncclSum;
  check(nccl().all_reduce(buf.data, buf.data, size_t(buf.numel()), t, r, c.comm, stream_),
        "ncclAllReduce");
}

void CudaBackend::all_reduce_overlapped(const View &buf, CollectiveOp op) {
  Clique &c = joined("all_reduce_overlapped");
  const ncclDataType_t t = nccl_type(buf.dtype, "all_reduce_overlapped");
  const ncclRedOp_t r = op == CollectiveOp::Max ? ncclMax : ncclSum;
  if (!c.side) {
    // Made once per clique; a failure leaves nothing half made.
    cudaStream_t side = nullptr;
    cudaEvent_t queued = nullptr, finished = nullptr;
    MIXP_CUDA_CHECK(cudaSetDevice(device_));
    cudaError_t e = cudaStreamCreateWithFlags(&side, cudaStreamNonBlocking);
    if (e == cudaSuccess) e = cudaEventCreateWithFlags(&queued, cudaEventDisableTiming);
    if (e == cudaSuccess) e = cudaEventCreateWithFlags(&finished, cudaEventDisableTiming);
    if (e != cudaSuccess) {
      if (queued) cudaEventDestroy(queued);
      if (side) cudaStreamDestroy(side);
      MIXP_CUDA_CHECK(e);
    }
    c.side = side;
    c.queued = queued;
    c.finished = finished;
  }
  MIXP_CUDA_CHECK(cudaEventRecord(c.queued, stream_));
  MIXP_CUDA_CHECK(cudaStreamWaitEvent(c.side, c.queued, 0));
  c.pending = true;
  check(nccl().all_reduce(buf.data, buf.data, size_t(buf.numel()), t, r, c.comm, c.side),
        "ncclAllReduce");
}

void CudaBackend::collectives_join() {
  if (!clique_ || !clique_->pending) return;
  Clique &c = *clique_;
  MIXP_CUDA_CHECK(cudaEventRecord(c.finished, c.side));
  MIXP_CUDA_CHECK(cudaStreamWaitEvent(stream_, c.finished, 0));
  c.pending = false;
}

// Broadcast and all_gather only move elements: any dtype goes as bytes.
void CudaBackend::broadcast(const View &buf, int root) {
  Clique &c = joined("broadcast");
  const size_t bytes = size_t(buf.numel()) * dtype_size(buf.dtype);
  check(nccl().broadcast(buf.data, buf.data, bytes, ncclUint8, root, c.comm, stream_),
        "ncclBroadcast");
}

void CudaBackend::all_gather(const View &in, const View &out) {
  Clique &c = joined("all_gather");
  const size_t bytes = size_t(in.numel()) * dtype_size(in.dtype);
  check(nccl().all_gather(in.data, out.data, bytes, ncclUint8, c.comm, stream_), "ncclAllGather");
}

}  // namespace mixp::cuda
