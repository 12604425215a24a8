// CUDA index kernels: validation of class targets / embedding indices
// without a host round trip, and the scatter of max's gradient.
//
// Validation is deferred, like PyTorch's device-side asserts but recoverable:
// a one-block kernel finds the first index outside [0, limit) (a fixed
// reduction tree: deterministic) and, unless an earlier check in stream order
// already failed, writes (check, position, value) into a mapped pinned page
// of the session. The host looks at that page after every synchronisation
// the caller asked for anyway (copy_to_host, synchronize, count_values),
// whether or not a check was queued since the last one (a replayed CUDA
// graph runs checks without host calls), and then fails that call with MIXP_ERR_INVALID_ARGUMENT naming the op,
// e.g. "mixp_cross_entropy: target[12] = 57 is out of range [0, 10) ...
// (detected on the device)". Meanwhile the consumers never touch memory out
// of bounds: cross_entropy writes a NaN loss and a zero gradient row,
// embedding a zero row and no gradient (embedding.cu, softmax.cu).
#include <cstring>

#include "common.cuh"

namespace mixp::cuda {
namespace {

constexpr int kCheckThreads = 512;

__global__ void check_indices_kernel(const int64_t *idx, int64_t n, int64_t limit, bool has_ignore,
                                     int64_t ignore, double *inv_count,
                                     CudaBackend::IndexErrorSlot *slot, int32_t check_id) {
  __shared__ int64_t s_bad[kCheckThreads];
  __shared__ unsigned long long s_cnt[kCheckThreads];
  int64_t bad = INT64_MAX;
  unsigned long long cnt = 0;
  for (int64_t i = threadIdx.x; i < n; i += blockDim.x) {
    const int64_t t = idx[i];
    if (has_ignore && t == ignore) continue;
    if (t < 0 || t >= limit) {
      if (i < bad) bad = i;
    } else {
      ++cnt;
    }
  }
  s_bad[threadIdx.x] = bad;
  s_cnt[threadIdx.x] = cnt;
  __syncthreads();
  for (int w = blockDim.x / 2; w > 0; w >>= 1) {
    if (threadIdx.x < w) {
      if (s_bad[threadIdx.x + w] < s_bad[threadIdx.x]) s_bad[threadIdx.x] = s_bad[threadIdx.x + w];
      s_cnt[threadIdx.x] += s_cnt[threadIdx.x + w];
    }
    __syncthreads();
  }
  if (threadIdx.x != 0) return;
  if (inv_count) *inv_count = 1.0 / double(s_cnt[0]);
  volatile CudaBackend::IndexErrorSlot *vs = slot;
  if (s_bad[0] != INT64_MAX && vs->check == 0) {
    vs->pos = s_bad[0];
    vs->value = idx[s_bad[0]];
    __threadfence_system();  // the position and value before the flag
    vs->check = check_id;
  }
}

// dst[o, k, i] = idx[o, i] == k ? src[o, i] : 0, as a gather (no atomics,
// no separate zero fill); elements are copied as raw bits of their size.
template <class U>
__global__ void scatter_dim_kernel(const U *src, const int64_t *idx, int64_t outer, int64_t n,
                                   int64_t inner, U *dst) {
  const int64_t total = outer * n * inner, plane = n * inner;
  for (int64_t e = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; e < total;
       e += int64_t(gridDim.x) * blockDim.x) {
    const int64_t o = e / plane, r = e - o * plane, k = r / inner, i = r - k * inner;
    const int64_t from = o * inner + i;
    dst[e] = idx[from] == k ? src[from] : U(0);
  }
}

}  // namespace

void CudaBackend::check_indices(const IndexCheck &chk, const View &indices, const View *inv_count) {
  if (indices.dtype != MIXP_I64) fail(MIXP_ERR_INTERNAL, "cuda check_indices: indices must be i64");
  if (inv_count && inv_count->dtype != MIXP_F64)
    fail(MIXP_ERR_INTERNAL, "cuda check_indices: inv_count must be f64");
  if (!index_error_) {
    void *host = nullptr, *dev = nullptr;
    MIXP_CUDA_CHECK(cudaHostAlloc(&host, sizeof(IndexErrorSlot), cudaHostAllocMapped));
    std::memset(host, 0, sizeof(IndexErrorSlot));
    cudaError_t e = cudaHostGetDevicePointer(&dev, host, 0);
    if (e != cudaSuccess) {
      cudaFreeHost(host);
      fail_cuda(e, "cudaHostGetDevicePointer", __FILE__, __LINE__);
    }
    index_error_ = static_cast<IndexErrorSlot *>(host);
    index_error_dev_ = static_cast<IndexErrorSlot *>(dev);
  }
  size_t k = 0;
  while (k < checks_.size() &&
         !(checks_[k].limit == chk.limit && checks_[k].fn == chk.fn &&
           checks_[k].what == chk.what && checks_[k].note == chk.note))
    ++k;
  if (k == checks_.size()) {
    if (k >= size_t(INT32_MAX))
      fail(MIXP_ERR_INTERNAL, "cuda check_indices: too many distinct checks");
    checks_.push_back(IndexCheckInfo{chk.fn, chk.what, chk.note, chk.limit});
  }
  check_indices_kernel<<<1, kCheckThreads, 0, stream()>>>(
      static_cast<const int64_t *>(indices.data), indices.numel(), chk.limit, chk.has_ignore,
      chk.ignore, inv_count ? static_cast<double *>(inv_count->data) : nullptr, index_error_dev_,
      int32_t(k + 1));
  MIXP_CUDA_LAUNCHED();
}

void CudaBackend::raise_deferred_index_error() {
  if (!index_error_) return;
  volatile IndexErrorSlot *s = index_error_;
  const int32_t id = s->check;
  if (id == 0) return;
  const int64_t pos = s->pos, value = s->value;
  s->check = 0;
  if (size_t(id) > checks_.size())
    fail(MIXP_ERR_INTERNAL, "cuda: the index error slot names check ", id, " of ", checks_.size());
  const IndexCheckInfo &c = checks_[size_t(id - 1)];
  fail(MIXP_ERR_INVALID_ARGUMENT, c.fn, ": ", c.what, "[", pos, "] = ", value,
       " is out of range [0, ", c.limit, ")", c.note, " (detected on the device)");
}

void CudaBackend::scatter_dim(const View &src, const View &indices, int64_t outer, int64_t n,
                              int64_t inner, const View &dst) {
  if (indices.dtype != MIXP_I64 || src.dtype != dst.dtype)
    fail(MIXP_ERR_INTERNAL, "cuda scatter_dim: expected i64 indices and one dtype");
  const int64_t total = outer * n * inner;
  if (total == 0) return;
  const int64_t *idx = static_cast<const int64_t *>(indices.data);
  const unsigned grid = grid_for(total);
  switch (dtype_size(src.dtype)) {
    case 8:
      scatter_dim_kernel<uint64_t><<<grid, kThreads, 0, stream()>>>(
          static_cast<const uint64_t *>(src.data), idx, outer, n, inner, static_cast<uint64_t *>(dst.data));
      break;
    case 4:
      scatter_dim_kernel<uint32_t><<<grid, kThreads, 0, stream()>>>(
          static_cast<const uint32_t *>(src.data), idx, outer, n, inner, static_cast<uint32_t *>(dst.data));
      break;
    case 2:
      scatter_dim_kernel<uint16_t><<<grid, kThreads, 0, stream()>>>(
          static_cast<const uint16_t *>(src.data), idx, outer, n, inner, static_cast<uint16_t *>(dst.data));
      break;
    case 1:
      scatter_dim_kernel<uint8_t><<<grid, kThreads, 0, stream()>>>(
          static_cast<const uint8_t *>(src.data), idx, outer, n, inner, static_cast<uint8_t *>(dst.data));
      break;
    default: fail(MIXP_ERR_INTERNAL, "cuda scatter_dim: unsupported element size");
  }
  MIXP_CUDA_LAUNCHED();
}

}  // namespace mixp::cuda
