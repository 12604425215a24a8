// The CPU side of mixp_graph: a backend that stands in for the session's
// own while a step is captured. Each call runs on the real backend at once
// (the captured step is also a real step) and is appended, arguments by
// value, to a list that a replay runs again on the same memory without
// autograd, autocast or dispatch. The list is device-neutral: it holds the
// backend calls, not kernels.
//
// What a replay must not repeat as captured, it resolves again:
//  - Philox offsets (dropout, random fills, stochastic rounding, fused
//    attention) are shifted by the distance between the session's offset at
//    the replay and at the capture, so replays draw what eager steps would;
//    a seed equal to the session's at capture becomes the session's seed now;
//  - host state (an optimizer's step count, its learning rate) advances in
//    the host steps of core/step_capture.hpp.
// Memory: every block allocated or released during capture becomes the
// graph's (core/graph_memory.hpp), so no recorded address is reused.
// Reads of device memory from the host, and uploads, cannot be replayed and
// fail with MIXP_ERR_STATE; the calls before them stay recorded.
#pragma once
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "backend/backend.hpp"
#include "core/graph_memory.hpp"
#include "core/step_capture.hpp"

namespace mixp::graph {

// What one replay changes in the recorded arguments.
struct Replay {
  uint64_t shift = 0;                    // added to every Philox offset
  uint64_t seed_then = 0, seed_now = 0;  // the session's seed at capture and now
  uint64_t seed(uint64_t s) const noexcept { return s == seed_then ? seed_now : s; }
};

using Call = std::function<void(Backend &, const Replay &)>;

// What a capture leaves behind.
struct Recording {
  std::vector<Call> calls;
  struct Owner {
    std::weak_ptr<const void> alive;
    const char *what;
  };
  std::vector<Owner> owners;  // of the host steps: each must outlive the replays
  GraphMemory memory;         // sorted by finish()
  // Blocks made before the capture and released during it (the graph keeps
  // them): a call that used one would replay on a value that is gone.
  std::vector<const char *> released_inputs;
};

class Recorder final : public Backend, public StepCapture {
 public:
  Recorder(std::unique_ptr<Backend> real, uint64_t seed, uint64_t rng_begin)
      : real_(std::move(real)), seed_(seed), rng_begin_(rng_begin) {}
  uint64_t seed() const noexcept { return seed_; }
  uint64_t rng_begin() const noexcept { return rng_begin_; }
  // Ends the recording: hands back the real backend and the recording (its
  // memory sorted). The recorder is empty afterwards.
  std::unique_ptr<Backend> finish(Recording *out);
  Backend &real() noexcept { return *real_; }

  // StepCapture
  void host_step(std::weak_ptr<const void> owner, const char *what, std::vector<const void *> uses,
                 std::function<void(uint64_t)> fn) override;
  void upload_constant(void *dst, const void *src, size_t n) override;
  void pause() noexcept override { ++paused_; }
  void resume() noexcept override { --paused_; }

  const char *name() const noexcept override { return real_->name(); }
  void *allocate(size_t nbytes) override;
  void deallocate(void *p, size_t nbytes) noexcept override;
  void copy_from_host(void *dst, const void *src, size_t nbytes) override;
  void copy_to_host(void *dst, const void *src, size_t nbytes) override;
  void synchronize() override { real_->synchronize(); }
  uint64_t host_syncs() const noexcept override { return real_->host_syncs(); }

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
  void softmax(const View &x, int64_t outer, int64_t n, int64_t inner, bool log, const View &y) override;
  void softmax_backward(const View &y, const View &gy, int64_t outer, int64_t n, int64_t inner, bool log,
                        const View &gx) override;
  void cross_entropy(const View &logits, const View &target, int64_t n, int64_t c, int64_t ignore_index,
                     double label_smoothing, const View &losses) override;
  void cross_entropy_backward(const View &logits, const View &target, int64_t n, int64_t c,
                              int64_t ignore_index, double label_smoothing, const View &row_scale,
                              const View &glogits) override;
  void check_indices(const IndexCheck &chk, const View &indices, const View *inv_count) override;
  void scatter_dim(const View &src, const View &indices, int64_t outer, int64_t n, int64_t inner,
                   const View &dst) override;
  void rand_uniform(const View &out, uint64_t seed, uint64_t offset) override;
  void rand_normal(const View &out, uint64_t seed, uint64_t offset) override;
  void dropout_mask(const View &mask, double p, uint64_t seed, uint64_t offset) override;
  void count_values(const View &x, double tiny_below, double huge_from, ValueCounts *out) override;
  void gemm(const GemmArgs &args) override;
  void scaled_gemm(const ScaledGemmArgs &args) override;
  void non_finite_check_and_unscale(const View *grads, int n, const View &found_inf,
                                    const View &inv_scale) override;
  void update_scale(const ScaleUpdate &u) override;
  void grad_norm_sq(const View *grads, int n, const View &out) override;
  void clip_coefficient(const View &norm_sq, double max_norm, const View &total_norm, const View &coef,
                        const View &found_inf) override;
  void scale_grads(const View *grads, int n, const View &coef) override;
  void sgd_step(const optim::ParamArgs *params, int count, const optim::SgdArgs &args,
                const float *found_inf) override;
  void adam_step(const optim::ParamArgs *params, int count, const optim::AdamArgs &args,
                 const float *found_inf) override;
  void conv2d(const Conv2dGeom &g, const View &x, const View &w, const View *bias, const View &y) override;
  void conv2d_backward_data(const Conv2dGeom &g, const View &gy, const View &w, const View &gx) override;
  void conv2d_backward_weights(const Conv2dGeom &g, const View &x, const View &gy, const View &gw) override;
  DType pool_index_dtype(const Pool2dGeom &g) const noexcept override { return real_->pool_index_dtype(g); }
  void pool2d(const Pool2dGeom &g, const View &x, const View &y, const View *indices) override;
  void pool2d_backward(const Pool2dGeom &g, const View &gy, const View *indices, const View &gx) override;
  void batch_norm_stats(const View &x, int64_t outer, int64_t c, int64_t inner, double eps, const View &mean,
                        const View &var, const View &invstd) override;
  void batch_norm_forward(const View &x, int64_t outer, int64_t c, int64_t inner, const View &mean,
                          const View &invstd, const View *weight, const View *bias, const View &y) override;
  void batch_norm_backward(const View &x, const View &gy, int64_t outer, int64_t c, int64_t inner,
                           const View &mean, const View &invstd, const View *weight, bool batch_stats,
                           const View *gx, const View *gw, const View *gb) override;
  void group_norm_forward(const GroupNormGeom &g, const View &x, const View *weight, const View *bias,
                          double eps, const View &y, const View &mean, const View &rstd) override;
  void group_norm_backward(const GroupNormGeom &g, const View &x, const View &gy, const View &mean,
                           const View &rstd, const View *weight, const View *gx, const View *gw,
                           const View *gb) override;
  void embedding(const View &weight, const View &indices, const View &out) override;
  void embedding_backward(const View &gy, const View &indices, int64_t padding_idx, const View &gw) override;
  // No collectives and no device timer while capturing (capture_begin
  // refuses a session with a communicator); the memory figures are the
  // real backend's.
  DeviceMemoryStats *memory_stats() noexcept override { return real_->memory_stats(); }
  bool attention_forward(const AttentionArgs &a) override;
  bool attention_backward(const AttentionArgs &a) override;
  bool gemm_row_sums(const GemmArgs &args, void *row_sums) override;
  // batch_norm_train_forward/backward are not forwarded: a capture takes the
  // composed batch norm, which is what the CPU (the one device that
  // captures) runs anyway. A device whose eager steps take a library batch
  // norm must forward them here before it captures, or its replays would
  // differ from its eager steps in the statistics' last bits.

 private:
  // Runs f on the real backend now, then keeps it for the replays (unless
  // paused). f(Backend &, const Replay &).
  template <class F>
  void record(F &&f) {
    f(*real_, Replay{0, seed_, seed_});
    if (!paused_) out_.calls.emplace_back(std::forward<F>(f));
  }
  template <class Step>
  void record_optimizer_step(const optim::ParamArgs *params, int count, const float *found_inf, Step step);
  void touch(const void *p);
  void touch(const View &v) { touch(v.data); }
  void touch(const View *v) {
    if (v) touch(v->data);
  }

  std::unique_ptr<Backend> real_;
  uint64_t seed_, rng_begin_;
  Recording out_;
  // Storage may be released on any thread (garbage collectors): the block
  // bookkeeping below is under mem_mu_.
  std::mutex mem_mu_;
  std::unordered_map<char *, size_t> blocks_;  // address -> index in out_.memory.blocks
  int paused_ = 0;
};

// An optional View argument kept by value.
struct OptView {
  View v;
  bool has = false;
  explicit OptView(const View *p) : has(p != nullptr) {
    if (p) v = *p;
  }
  const View *get() const noexcept { return has ? &v : nullptr; }
};

}  // namespace mixp::graph
