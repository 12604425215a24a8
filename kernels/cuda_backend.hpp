// The CUDA implementation of mixp::Backend (src/backend/backend.hpp), built
// into libmixp_cuda.so and loaded by libmixp.so with dlopen (see
// kernels/plugin.cpp and src/device/loader.cpp). Every method enqueues work
// on the session's one stream and returns without waiting, except the ones
// whose contract hands a value to the host (copy_to_host, count_values),
// which synchronise and count that synchronisation in `host_syncs` so tests
// can prove that a GradScaler training step needs none.
//
// Where each method lives (one concept per file):
//   runtime.cu      construction, stream, memory pool, copies, synchronize
//   gemm.cu         gemm (cuBLASLt, algorithm cache, epilogues)
//   scaled_gemm.cu  scaled_gemm (cuBLASLt FP8, the TN transpose, scale checks, amax)
//   elementwise.cu  copy, fill, unary, unary_backward, binary
//   reduce.cu       sum_rows, sum_cols, max_dim, count_values
//   softmax.cu      softmax, softmax_backward, cross_entropy(+backward)
//   random.cu       rand_uniform, rand_normal, dropout_mask (CPU's Philox)
//   amp.cu          non_finite_check_and_unscale, update_scale, grad_norm_sq,
//                   clip_coefficient, scale_grads (multi-tensor apply)
//   optim.cu        sgd_step, adam_step (fused SGD / Adam(W), backend/optimizer_args.hpp)
//   conv.cu         conv2d (+backward) through cuDNN
//   attention.cpp   attention_forward/backward: cuDNN's fused SDPA through
//                   the cuDNN frontend (only with its headers, else declined)
//   pool.cu norm.cu embedding.cu
//   batch_norm_library.cpp  batch_norm_train_forward/backward: cuDNN's batch
//                   norm (one call each way; fp32 statistics)
//   timing.cu       timing_mark, timing_elapsed_ms, timing_reset (profiler)
//   collectives.cpp clique_id, clique_join/leave, all_reduce (also overlapped,
//                   on a second stream), broadcast, all_gather (NCCL, opened
//                   with dlopen on first use)
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <cuda_runtime.h>

#include "backend/backend.hpp"
#include "backend/capabilities.hpp"

namespace mixp::cuda {

// Throws mixp's error (MIXP_ERR_DEVICE, or MIXP_ERR_OUT_OF_MEMORY for
// cudaErrorMemoryAllocation) naming the failed call, file and line.
[[noreturn]] void fail_cuda(cudaError_t err, const char *what, const char *file, int line);
#define MIXP_CUDA_CHECK(call)                                                        \
  do {                                                                               \
    cudaError_t mixp_err_ = (call);                                                  \
    if (mixp_err_ != cudaSuccess) ::mixp::cuda::fail_cuda(mixp_err_, #call, __FILE__, __LINE__); \
  } while (0)

// The core, and every optional capability (each accessor returns this).
class CudaBackend final : public Backend,
                          public DeviceCollectives,
                          public DeviceTimer,
                          public DeviceMemoryStats {
 public:
  explicit CudaBackend(int device_index);
  ~CudaBackend() override;
  const char *name() const noexcept override { return "cuda"; }

  int device() const noexcept { return device_; }
  cudaStream_t stream() const noexcept { return stream_; }
  // Device->host synchronisations performed so far (copy_to_host,
  // synchronize, count_values, ...).
  uint64_t host_syncs() const noexcept override { return host_syncs_; }
  void note_host_sync() noexcept { ++host_syncs_; }

  void *allocate(size_t nbytes) override;
  void deallocate(void *p, size_t nbytes) noexcept override;
  void copy_from_host(void *dst, const void *src, size_t nbytes) override;
  void copy_to_host(void *dst, const void *src, size_t nbytes) override;
  void synchronize() override;
  // One line: device name, sm, memory, driver/runtime/library versions.
  const std::string &description() const noexcept;

  void copy(const View &src, const View &dst) override;
  void fill(const View &dst, double value) override;
  void causal_mask(const View &dst, int64_t rows, int64_t cols) override;
  void unary(UnaryOp op, const View &x, const View &y, double s) override;
  void unary_backward(UnaryOp op, const View &x, const View &y, const View &gy, const View &gx,
                      double s) override;
  void binary(BinaryOp op, const View &a, const View &b, const View &out) override;

  void sum_rows(const View &x, int64_t rows, int64_t cols, const View &out, double scale) override;
  void sum_cols(const View &x, int64_t rows, int64_t cols, const View &out, double scale) override;
  void max_dim(const View &x, int64_t outer, int64_t n, int64_t inner, const View *values,
               const View &indices) override;
  void softmax(const View &x, int64_t outer, int64_t n, int64_t inner, bool log,
               const View &y) override;
  void softmax_backward(const View &y, const View &gy, int64_t outer, int64_t n, int64_t inner,
                        bool log, const View &gx) override;
  void cross_entropy(const View &logits, const View &target, int64_t n, int64_t c,
                     int64_t ignore_index, double label_smoothing, const View &losses) override;
  void cross_entropy_backward(const View &logits, const View &target, int64_t n, int64_t c,
                              int64_t ignore_index, double label_smoothing, const View &row_scale,
                              const View &glogits) override;
  // indices.cu: deferred validation (see raise_deferred_index_error) and
  // max's gradient scatter.
  void check_indices(const IndexCheck &chk, const View &indices, const View *inv_count) override;
  void scatter_dim(const View &src, const View &indices, int64_t outer, int64_t n, int64_t inner,
                   const View &dst) override;
  // True once any check_indices kernel has been queued in this session: from
  // then on every synchronisation looks at the error slot (kernels replayed
  // from a CUDA graph write it too, with no host call in between).
  bool index_checks_armed() const noexcept { return index_error_ != nullptr; }
  // Call right after a full stream synchronisation: every queued check has
  // run, so the first bad index any of them found (in stream order) is
  // reported as MIXP_ERR_INVALID_ARGUMENT naming the op, the position and
  // the value; the slot is cleared and the session stays usable.
  void raise_deferred_index_error();

  void rand_uniform(const View &out, uint64_t seed, uint64_t offset) override;
  void rand_normal(const View &out, uint64_t seed, uint64_t offset) override;
  void dropout_mask(const View &mask, double p, uint64_t seed, uint64_t offset) override;

  void count_values(const View &x, double tiny_below, double huge_from, ValueCounts *out) override;

  void gemm(const GemmArgs &args) override;
  void scaled_gemm(const ScaledGemmArgs &args) override;  // scaled_gemm.cu (cuBLASLt FP8, sm_89+)
  // gemm.cu: the bias gradient folded into the weight gradient (BGRADB).
  bool gemm_row_sums(const GemmArgs &args, void *row_sums) override;

  void non_finite_check_and_unscale(const View *grads, int n, const View &found_inf,
                                    const View &inv_scale) override;
  void update_scale(const ScaleUpdate &u) override;
  void grad_norm_sq(const View *grads, int n, const View &out) override;
  void clip_coefficient(const View &norm_sq, double max_norm, const View &total_norm,
                        const View &coef, const View &found_inf) override;
  void scale_grads(const View *grads, int n, const View &coef) override;

  // optim.cu
  void sgd_step(const optim::ParamArgs *params, int count, const optim::SgdArgs &args,
                const float *found_inf) override;
  void adam_step(const optim::ParamArgs *params, int count, const optim::AdamArgs &args,
                 const float *found_inf) override;

  void conv2d(const Conv2dGeom &g, const View &x, const View &w, const View *bias,
              const View &y) override;
  void conv2d_backward_data(const Conv2dGeom &g, const View &gy, const View &w,
                            const View &gx) override;
  void conv2d_backward_weights(const Conv2dGeom &g, const View &x, const View &gy,
                               const View &gw) override;
  void pool2d(const Pool2dGeom &g, const View &x, const View &y, const View *indices) override;
  DType pool_index_dtype(const Pool2dGeom &) const noexcept override { return MIXP_I64; }  // pool.cu's kernels
  void pool2d_backward(const Pool2dGeom &g, const View &gy, const View *indices,
                       const View &gx) override;

  void batch_norm_stats(const View &x, int64_t outer, int64_t c, int64_t inner, double eps,
                        const View &mean, const View &var, const View &invstd) override;
  void batch_norm_forward(const View &x, int64_t outer, int64_t c, int64_t inner,
                          const View &mean, const View &invstd, const View *weight,
                          const View *bias, const View &y) override;
  void batch_norm_backward(const View &x, const View &gy, int64_t outer, int64_t c, int64_t inner,
                           const View &mean, const View &invstd, const View *weight,
                           bool batch_stats, const View *gx, const View *gw,
                           const View *gb) override;
  void group_norm_forward(const GroupNormGeom &g, const View &x, const View *weight,
                          const View *bias, double eps, const View &y, const View &mean,
                          const View &rstd) override;
  void group_norm_backward(const GroupNormGeom &g, const View &x, const View &gy,
                           const View &mean, const View &rstd, const View *weight,
                           const View *gx, const View *gw, const View *gb) override;
  void embedding(const View &weight, const View &indices, const View &out) override;
  void embedding_backward(const View &gy, const View &indices, int64_t padding_idx,
                          const View &gw) override;

  // batch_norm_library.cpp: F32/F16/BF16 training batch norm through cuDNN.
  bool batch_norm_train_forward(const BatchNormTrainArgs &a) override;
  bool batch_norm_train_backward(const BatchNormTrainArgs &a) override;

#ifdef MIXP_HAVE_CUDNN_FRONTEND
  // attention.cpp: F16/BF16 cases cuDNN's engines run; the rest declined.
  bool attention_forward(const AttentionArgs &a) override;
  bool attention_backward(const AttentionArgs &a) override;
#endif

  DeviceCollectives *collectives() noexcept override { return this; }
  DeviceTimer *timer() noexcept override { return this; }
  DeviceMemoryStats *memory_stats() noexcept override { return this; }

  // collectives.cpp: NCCL on the session's stream (ordered with the step's
  // kernels); the library is loaded on the first clique_id/clique_join.
  void clique_id(unsigned char id[kCliqueIdBytes]) override;
  const char *clique_join(const unsigned char id[kCliqueIdBytes], int world, int rank) override;
  // Waits for the stream (the queued collectives) before destroying the
  // communicator; ~CudaBackend calls it while the stream still exists.
  void clique_leave() noexcept override;
  void all_reduce(const View &buf, CollectiveOp op) override;
  // On the clique's own stream, fenced by events against the session's.
  void all_reduce_overlapped(const View &buf, CollectiveOp op) override;
  void collectives_join() override;
  void broadcast(const View &buf, int root) override;
  void all_gather(const View &in, const View &out) override;

  // timing.cu: CUDA events on the stream, kept in a pool and reused after
  // timing_reset, for the profiler's device times.
  uint64_t timing_mark() override;
  double timing_elapsed_ms(uint64_t from, uint64_t to) override;
  void timing_reset() noexcept override;
  // runtime.cu: the pool's own statistics plus the fixed cuBLASLt workspace.
  bool device_memory(DeviceMemory *out) const noexcept override;
  void reset_device_memory_peak() noexcept override;

  // Library handles and scratch owned by runtime.cu / gemm.cu / conv.cu
  // (defined in kernels/libs.hpp).
  struct Libs;
  Libs &libs() noexcept { return *libs_; }

 private:
  int device_ = 0;
  cudaStream_t stream_ = nullptr;
  uint64_t host_syncs_ = 0;
  std::unique_ptr<Libs> libs_;
  // The NCCL communicator while in a clique, else null (collectives.cpp,
  // which alone sees NCCL's types).
  struct Clique;
  struct LeaveClique {
    void operator()(Clique *c) const noexcept;
  };
  std::unique_ptr<Clique, LeaveClique> clique_;
  Clique &joined(const char *fn);  // the clique, or MIXP_ERR_STATE
  // timing.cu: every event made so far; the first timing_used_ are handed out.
  std::vector<cudaEvent_t> timing_events_;
  size_t timing_used_ = 0;

 public:
  // Written by the check kernels through a mapped pinned page, read by the
  // host after a synchronisation without a copy. check == 0: no error;
  // otherwise the 1-based entry of checks_ that failed.
  struct IndexErrorSlot {
    int32_t check;
    int32_t unused;
    int64_t pos, value;
  };

 private:
  struct IndexCheckInfo {
    std::string fn, what, note;
    int64_t limit;
  };
  IndexErrorSlot *index_error_ = nullptr;      // host address
  IndexErrorSlot *index_error_dev_ = nullptr;  // the same page, device address
  // Every distinct check ever queued, never cleared, so the id a kernel
  // writes names its op even when the kernel was replayed from a captured
  // graph long after the host call (a training loop repeats the same few).
  std::vector<IndexCheckInfo> checks_;
};

// Scratch device memory ordered on the stream, from the session's own pool
// (CudaBackend::allocate: the process's default pool, which other libraries
// in the process own and tune, is never touched): returned to the pool
// after the kernels that use it, so it never waits for the device.
struct Scratch {
  void *p = nullptr;
  size_t n = 0;
  CudaBackend &be;
  Scratch(CudaBackend &backend, size_t nbytes) : n(nbytes), be(backend) {
    if (nbytes) p = be.allocate(nbytes);
  }
  ~Scratch() { be.deallocate(p, n); }
  Scratch(const Scratch &) = delete;
  Scratch &operator=(const Scratch &) = delete;
  template <class T> T *as() const { return static_cast<T *>(p); }
};

// layer_norm_rows.cu: layer norm's forward and input gradient (group_norm
// with one group and s == 1 over rows x len) with a warp per row; false,
// having launched nothing, for rows it does not take (norm.cu runs them).
bool layer_norm_rows_forward(CudaBackend &be, int64_t rows, int64_t len, const View &x, const View *weight,
                             const View *bias, double eps, const View &y, const View &mean, const View &rstd);
bool layer_norm_rows_gx(CudaBackend &be, int64_t rows, int64_t len, const View &x, const View &gy,
                        const View &mean, const View &rstd, const View *weight, const View &gx);

// random.cu: dst[0] = seed, dst[1] = offset (device memory), written by a
// one-thread kernel on the stream: no upload to wait for (cuDNN's dropout
// reads its Philox seed and offset from device memory).
void write_philox_args(CudaBackend &be, int64_t *dst, uint64_t seed, uint64_t offset);

}  // namespace mixp::cuda
