// The session: device, RNG stream, threads, grad mode, memory statistics.
// mixp_session is reference-counted: tensors keep their session alive, so a
// host that destroys the session before its tensors (garbage collectors do)
// stays safe; a destroyed session only refuses new work.
#pragma once
#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/graph_memory.hpp"
#include "core/op_trace.hpp"
#include "core/profile.hpp"
#include "core/refcount.hpp"
#include "mixp/mixp.h"

namespace mixp {
class Backend;
namespace autocast {
struct SessionState;
}
struct CheckpointRegion;
class StepCapture;

// Told by a backward pass about each leaf gradient as soon as it is final
// (every node that feeds the leaf has run): what data parallelism needs to
// start averaging a bucket of gradients while the rest of backward runs
// (dist/data_parallel.cpp). `grad` is the value the leaf's .grad will hold
// once the pass ends (the accumulated sum, in the leaf's gradient dtype);
// the pass writes the leaves only at its end, so a failed pass still
// changes none. Throwing fails the pass.
struct LeafGradObserver {
  virtual void final_grad(mixp_tensor &leaf, const Ref<mixp_tensor> &grad) = 0;

 protected:
  ~LeafGradObserver() = default;
};
}  // namespace mixp

struct mixp_session {
  static constexpr uint32_t kMagic = 0x53455353u;  // "SESS"
  uint32_t magic = kMagic;
  std::atomic<int> refs{1};
  bool closed = false;  // mixp_session_destroy() was called

  std::string device = "cpu";
  std::string device_note;
  int num_threads = 1;
  uint64_t seed = 0;
  uint64_t rng_offset = 0;  // Philox counter; advanced by every random draw

  std::vector<bool> grad_mode_stack;  // pushed by no_grad regions
  bool grad_enabled() const noexcept { return grad_mode_stack.empty() || grad_mode_stack.back(); }

  std::unique_ptr<mixp::Backend> backend;

  // Mixed precision: the autocast stack and cast cache
  // (src/autocast/autocast.hpp), created on the first mixp_autocast_push.
  std::shared_ptr<mixp::autocast::SessionState> autocast;
  // Depth of nested operations: autocast and the numerics checker act at
  // depth 0 only, i.e. on the ops a user calls, not on their internals.
  int op_depth = 0;
  mixp_numerics_mode numerics = MIXP_NUMERICS_OFF;
  std::string numerics_report;
  // The checker's filter (mixp_session_set_numerics_options): op names to
  // check only / never, the step range [start, end) (end -1: open) over
  // numerics_step, which every mixp_optimizer_step advances, and whether
  // values that would overflow fp16 are reported too.
  struct NumericsFilter {
    std::vector<std::string> include, exclude;
    int64_t start_step = 0, end_step = -1;
    bool fp16_overflow = false;
  } numerics_filter;
  int64_t numerics_step = 0;
  // The op trace being recorded (mixp_trace_begin .. mixp_trace_end), or null.
  std::unique_ptr<mixp::OpTrace> trace;
  // The profile being recorded (mixp_profile_begin .. mixp_profile_end), or
  // null: one branch per op when off (ops/profile.hpp).
  std::unique_ptr<mixp::Profile> profile;
  // Op statistics (mixp_session_op_stats_start): while on, every op a user
  // calls (depth 0; autocast's casts included) counts one call for its
  // output's dtype, separately for the ops a backward pass runs.
  // op_stats[(op * 2 + backward) * kDTypeSlots + dtype].
  bool op_stats_on = false;
  std::vector<uint64_t> op_stats;
  std::string op_stats_report;
  // scaled_dot_product_attention calls by path while op statistics are on:
  // [0] fused, [1] composed (ops/attention.cpp).
  uint64_t attention_paths[2] = {0, 0};
  int backward_depth = 0;  // > 0 while mixp_backward runs
  uint64_t numerics_warnings = 0;
  bool allow_tf32 = false;
  // How convolutions choose their algorithm (mixp_session_set_cudnn), and
  // the environment's MIXP_CUDNN_BENCHMARK / _DETERMINISTIC read when the
  // session was created, which win when set (-1: unset).
  bool cudnn_benchmark = false, cudnn_deterministic = true;
  int env_cudnn_benchmark = -1, env_cudnn_deterministic = -1;

  // Activation checkpointing (autograd/checkpoint.hpp): the open region, and
  // a counter giving each region a distinct tag for the values it makes.
  std::shared_ptr<mixp::CheckpointRegion> checkpoint;
  uint32_t checkpoint_serial = 0;
  bool checkpoint_replaying = false;  // a region's ops are being run again

  // The communicator bound to this session (src/dist/; at most one), and its
  // rank for the numerics checker's reports (-1: none).
  mixp_dist *dist = nullptr;
  int dist_rank = -1;
  // Taken (and cleared) by the next backward pass: armed by
  // mixp_dist_prepare_gradients for that one pass.
  mixp::LeafGradObserver *leaf_grad_observer = nullptr;

  mixp_log_fn log_fn = nullptr;
  void *log_user = nullptr;
  void log(mixp_log_level level, const std::string &message) const noexcept;

  // The step being captured (mixp_graph_capture_begin .. _end; its recorder
  // is the backend meanwhile), or null; and the memory of the live graphs.
  mixp::StepCapture *capture = nullptr;
  mixp::GraphMemoryRegistry graphs;

  std::atomic<uint64_t> mem_current{0};
  std::atomic<uint64_t> mem_peak{0};

  ~mixp_session();

  // Reserves n counters of the Philox stream and returns the first.
  uint64_t take_rng(uint64_t n) noexcept {
    uint64_t o = rng_offset;
    rng_offset += n;
    return o;
  }
  void note_alloc(uint64_t n) noexcept;
  void note_free(uint64_t n) noexcept { mem_current.fetch_sub(n, std::memory_order_relaxed); }
};

namespace mixp {

using Session = mixp_session;

template <>
struct RefTraits<mixp_session> {
  static void inc(mixp_session *s) noexcept { s->refs.fetch_add(1, std::memory_order_relaxed); }
  static void dec(mixp_session *s) noexcept {
    if (s->refs.fetch_sub(1, std::memory_order_acq_rel) == 1) delete s;
  }
};
using SessionRef = Ref<mixp_session>;

// Validates a session handle from the C API: non-NULL, live magic, not
// closed. `fn` and `arg` name the caller and the argument in the message.
Session *check_session(const mixp_session *s, const char *fn, const char *arg = "session");

// Sets the calling thread's OpenMP thread count to the session's; called at
// the start of every operation (it is a per-thread setting in OpenMP).
void apply_threads(const Session *s) noexcept;

// Whether F32 products may use TF32: MIXP_TF32_OVERRIDE=0|1 wins over the
// session's switch (like NVIDIA_TF32_OVERRIDE).
bool tf32_enabled(const Session *s) noexcept;

// The convolution algorithm choice in force: the environment's override
// (MIXP_CUDNN_BENCHMARK / MIXP_CUDNN_DETERMINISTIC) when set, else the
// session's switch.
bool cudnn_benchmark(const Session *s) noexcept;
bool cudnn_deterministic(const Session *s) noexcept;

// mixp_session_create's checks of the options that are not the device.
void check_session_options(const mixp_session_options &opts, const char *fn);
// Creates a session on an opened device (device/device.hpp); `note` is
// logged at INFO level.
SessionRef make_session(const mixp_session_options &opts, std::unique_ptr<Backend> backend,
                        std::string device, std::string note);

}  // namespace mixp
