// The CUDA session runtime: device, stream, library handles, the
// stream-ordered memory pool and its statistics, host<->device copies.
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <limits>

#include "core/error.hpp"
#include "cuda_backend.hpp"
#include "libs.hpp"
#include "library_origins.hpp"

namespace mixp::cuda {

namespace {
const char *file_base(const char *file) {
  const char *s = std::strrchr(file, '/');
  return s ? s + 1 : file;
}
}  // namespace

void fail_cuda(cudaError_t err, const char *what, const char *file, int line) {
  const mixp_status st =
      err == cudaErrorMemoryAllocation ? MIXP_ERR_OUT_OF_MEMORY : MIXP_ERR_DEVICE;
  // Allocation failures are not sticky: clear it so the session stays usable.
  if (err == cudaErrorMemoryAllocation) (void)cudaGetLastError();
  fail(st, "cuda: ", what, " failed: ", cudaGetErrorName(err), " (", cudaGetErrorString(err),
       ") at ", file_base(file), ":", line);
}

void fail_cublas(cublasStatus_t st, const char *what, const char *file, int line) {
  fail(st == CUBLAS_STATUS_ALLOC_FAILED ? MIXP_ERR_OUT_OF_MEMORY : MIXP_ERR_DEVICE, "cuda: ",
       what, " failed: ", cublasGetStatusName(st), " (", cublasGetStatusString(st), ") at ",
       file_base(file), ":", line);
}

void fail_cudnn(cudnnStatus_t st, const char *what, const char *file, int line) {
  fail(st == CUDNN_STATUS_ALLOC_FAILED ? MIXP_ERR_OUT_OF_MEMORY : MIXP_ERR_DEVICE, "cuda: ",
       what, " failed: ", cudnnGetErrorString(st), " at ", file_base(file), ":", line);
}

CudaBackend::Libs::~Libs() {
  destroy_gemm_plans(*this);
  destroy_conv_plans(*this);
  for (int i = 0; i < kStagingSlots; ++i) {
    if (staging_done[i]) cudaEventDestroy(staging_done[i]);
    if (staging[i]) cudaFreeHost(staging[i]);
  }
  if (workspace) cudaFree(workspace);
  attention.reset();  // the frontend's plans before the handle they were built on
  if (dnn) cudnnDestroy(dnn);
  if (blas) cublasDestroy(blas);
  if (lt) cublasLtDestroy(lt);
  if (pool) cudaMemPoolDestroy(pool);
}

namespace {
// Everything the constructor creates, in order; split out so that a failure
// half-way releases what was made (the destructor does not run then).
void init_runtime(int device, cudaStream_t *stream, CudaBackend::Libs &L);
}  // namespace

CudaBackend::CudaBackend(int device_index) : device_(device_index), libs_(new Libs) {
  try {
    init_runtime(device_, &stream_, *libs_);
  } catch (...) {
    libs_.reset();
    if (stream_) cudaStreamDestroy(stream_);
    throw;
  }
}

namespace {
void init_runtime(int device, cudaStream_t *stream, CudaBackend::Libs &L) {
  // The plugin's entry point has already checked the driver and the ordinal.
  MIXP_CUDA_CHECK(cudaSetDevice(device));
  cudaDeviceProp prop{};
  MIXP_CUDA_CHECK(cudaGetDeviceProperties(&prop, device));
  L.sm = prop.major * 10 + prop.minor;
  int drv = 0, rt = 0;
  cudaDriverGetVersion(&drv);
  cudaRuntimeGetVersion(&rt);
  char desc[512];
  std::snprintf(desc, sizeof desc, "%s, sm_%d, %.1f GiB, driver %d.%d, runtime %d.%d, cuBLASLt %zu, cuDNN %zu",
                prop.name, L.sm, double(prop.totalGlobalMem) / double(1ull << 30), drv / 1000,
                (drv % 1000) / 10, rt / 1000, (rt % 1000) / 10, cublasLtGetVersion(),
                cudnnGetVersion());
  L.description = desc;
#ifdef MIXP_HAVE_CUDNN_FRONTEND
  L.description += ", fused attention: cuDNN frontend " MIXP_CUDNN_FRONTEND_VERSION;
#else
  L.description += ", fused attention: none (built without the cuDNN frontend headers; composed)";
#endif
  L.description += "; " + library_origins();

  // Non-blocking: never serialised with the legacy default stream that other
  // code in the process may use.
  MIXP_CUDA_CHECK(cudaStreamCreateWithFlags(stream, cudaStreamNonBlocking));

  // A pool of our own gives per-session statistics; memory freed to it is
  // kept for reuse (release threshold = max) instead of returned at every
  // synchronisation, like PyTorch's caching allocator.
  cudaMemPoolProps pp{};
  pp.allocType = cudaMemAllocationTypePinned;
  pp.handleTypes = cudaMemHandleTypeNone;
  pp.location.type = cudaMemLocationTypeDevice;
  pp.location.id = device;
  MIXP_CUDA_CHECK(cudaMemPoolCreate(&L.pool, &pp));
  uint64_t keep = std::numeric_limits<uint64_t>::max();
  MIXP_CUDA_CHECK(cudaMemPoolSetAttribute(L.pool, cudaMemPoolAttrReleaseThreshold, &keep));
  // Kernels' scratch comes from this pool too (common.cuh's Scratch): the
  // device's default pool belongs to the process (PyTorch, CuPy, the host
  // application) and keeps the settings its owner gave it.

  MIXP_CUBLAS_CHECK(cublasLtCreate(&L.lt));
  MIXP_CUBLAS_CHECK(cublasCreate(&L.blas));
  MIXP_CUBLAS_CHECK(cublasSetStream(L.blas, *stream));
  L.workspace_bytes = L.sm >= 90 ? (size_t(32) << 20) : (size_t(4) << 20);
  MIXP_CUDA_CHECK(cudaMalloc(&L.workspace, L.workspace_bytes));
  MIXP_CUBLAS_CHECK(cublasSetWorkspace(L.blas, L.workspace, L.workspace_bytes));
}
}  // namespace

CudaBackend::~CudaBackend() {
  // The communicator's collectives run on the stream: it goes first.
  clique_leave();
  // Queued frees and kernels must finish before the pool and handles go.
  if (stream_) cudaStreamSynchronize(stream_);
  if (index_error_) cudaFreeHost(index_error_);
  for (cudaEvent_t e : timing_events_) cudaEventDestroy(e);
  libs_.reset();
  if (stream_) cudaStreamDestroy(stream_);
}

const std::string &CudaBackend::description() const noexcept { return libs_->description; }

cudnnHandle_t cudnn_handle(CudaBackend &be) {
  CudaBackend::Libs &L = be.libs();
  if (!L.dnn) {
    MIXP_CUDNN_CHECK(cudnnCreate(&L.dnn));
    MIXP_CUDNN_CHECK(cudnnSetStream(L.dnn, be.stream()));
  }
  return L.dnn;
}

void *CudaBackend::allocate(size_t nbytes) {
  void *p = nullptr;
  cudaError_t e = cudaMallocFromPoolAsync(&p, nbytes, libs_->pool, stream_);
  if (e == cudaErrorMemoryAllocation) {
    // Memory cached in the pool may be what is missing: wait for the
    // queued frees, give the cache back to the device and try once more.
    (void)cudaGetLastError();
    MIXP_CUDA_CHECK(cudaStreamSynchronize(stream_));
    note_host_sync();
    cudaMemPoolTrimTo(libs_->pool, 0);
    e = cudaMallocFromPoolAsync(&p, nbytes, libs_->pool, stream_);
  }
  if (e == cudaErrorMemoryAllocation) {
    (void)cudaGetLastError();
    size_t free_b = 0, total_b = 0;
    cudaMemGetInfo(&free_b, &total_b);
    fail(MIXP_ERR_OUT_OF_MEMORY, "cuda: out of memory allocating ", nbytes, " bytes on cuda:",
         device_, " (", free_b >> 20, " MiB free of ", total_b >> 20, " MiB)");
  }
  if (e != cudaSuccess) fail_cuda(e, "cudaMallocFromPoolAsync", __FILE__, __LINE__);
  return p;
}

// The pool counts every stream-ordered allocation (tensors and the kernels'
// scratch alike); the cuBLASLt workspace is the one allocation outside it.
bool CudaBackend::device_memory(DeviceMemory *out) const noexcept {
  uint64_t v[4] = {};
  const cudaMemPoolAttr attrs[4] = {cudaMemPoolAttrUsedMemCurrent, cudaMemPoolAttrUsedMemHigh,
                                    cudaMemPoolAttrReservedMemCurrent, cudaMemPoolAttrReservedMemHigh};
  for (int i = 0; i < 4; ++i)
    if (cudaMemPoolGetAttribute(libs_->pool, attrs[i], &v[i]) != cudaSuccess) {
      (void)cudaGetLastError();
      return false;
    }
  const uint64_t ws = libs_->workspace_bytes;
  DeviceMemory m;
  m.used = v[0] + ws;
  // A high-water mark just reset may read 0 until the next allocation.
  m.used_peak = std::max(v[1], v[0]) + ws;
  m.reserved = v[2] + ws;
  m.reserved_peak = std::max(v[3], v[2]) + ws;
  *out = m;
  return true;
}

void CudaBackend::reset_device_memory_peak() noexcept {
  // The high-water attributes accept only 0, which restarts them from the
  // current value.
  uint64_t zero = 0;
  if (cudaMemPoolSetAttribute(libs_->pool, cudaMemPoolAttrUsedMemHigh, &zero) != cudaSuccess ||
      cudaMemPoolSetAttribute(libs_->pool, cudaMemPoolAttrReservedMemHigh, &zero) != cudaSuccess)
    (void)cudaGetLastError();
}

void CudaBackend::deallocate(void *p, size_t) noexcept {
  if (p) cudaFreeAsync(p, stream_);
}

void CudaBackend::copy_from_host(void *dst, const void *src, size_t nbytes) {
  // Every upload goes through the ring of pinned staging slots, in slot-sized
  // pieces: a true DMA queued behind the work before it, and `src` free for
  // reuse when this returns. (A pageable cudaMemcpyAsync above the driver's
  // own staging size is synchronous and would wait uncounted.) A slot is
  // reused once its previous copy is done; that wait, the only one here, is
  // counted, and happens only with more than kStagingSlots pieces in flight:
  // a large upload overlaps its memcpy into one slot with the DMA of others.
  Libs &L = *libs_;
  const char *from = static_cast<const char *>(src);
  char *to = static_cast<char *>(dst);
  while (nbytes > 0) {
    const size_t piece = nbytes < Libs::kStagingSlotBytes ? nbytes : Libs::kStagingSlotBytes;
    const int i = L.staging_next;
    L.staging_next = (i + 1) % Libs::kStagingSlots;
    if (!L.staging[i]) {
      MIXP_CUDA_CHECK(cudaMallocHost(&L.staging[i], Libs::kStagingSlotBytes));
      MIXP_CUDA_CHECK(cudaEventCreateWithFlags(&L.staging_done[i], cudaEventDisableTiming));
    } else {
      cudaError_t q = cudaEventQuery(L.staging_done[i]);
      if (q == cudaErrorNotReady) {
        MIXP_CUDA_CHECK(cudaEventSynchronize(L.staging_done[i]));
        note_host_sync();
      } else if (q != cudaSuccess) {
        fail_cuda(q, "cudaEventQuery(staging)", __FILE__, __LINE__);
      }
    }
    std::memcpy(L.staging[i], from, piece);
    MIXP_CUDA_CHECK(cudaMemcpyAsync(to, L.staging[i], piece, cudaMemcpyHostToDevice, stream_));
    MIXP_CUDA_CHECK(cudaEventRecord(L.staging_done[i], stream_));
    from += piece;
    to += piece;
    nbytes -= piece;
  }
}

void CudaBackend::copy_to_host(void *dst, const void *src, size_t nbytes) {
  if (nbytes == 0 && !index_checks_armed()) return;
  if (index_checks_armed()) {
    // A bad index found on the device fails this call before `dst` is
    // written (a failed call changes nothing); the copy then finds the
    // stream idle, so this is still one wait for the caller.
    MIXP_CUDA_CHECK(cudaStreamSynchronize(stream_));
    note_host_sync();
    raise_deferred_index_error();
    if (nbytes == 0) return;
    MIXP_CUDA_CHECK(cudaMemcpyAsync(dst, src, nbytes, cudaMemcpyDeviceToHost, stream_));
    MIXP_CUDA_CHECK(cudaStreamSynchronize(stream_));
    return;
  }
  MIXP_CUDA_CHECK(cudaMemcpyAsync(dst, src, nbytes, cudaMemcpyDeviceToHost, stream_));
  MIXP_CUDA_CHECK(cudaStreamSynchronize(stream_));
  note_host_sync();
}

void CudaBackend::synchronize() {
  MIXP_CUDA_CHECK(cudaStreamSynchronize(stream_));
  note_host_sync();
  raise_deferred_index_error();
}

}  // namespace mixp::cuda
