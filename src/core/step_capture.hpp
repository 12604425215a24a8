// What the layers above the backend see of a training step being captured
// (mixp_graph_capture_begin .. _end; the recorder is src/graph/). While a
// session captures, its backend records every call and replays the list
// later without autograd, autocast or dispatch. Two kinds of work cannot be
// a recorded call and come here instead:
//  - host state that must advance at every replay as in an eager step (an
//    optimizer's step count, hence its learning rate and schedule): a host
//    step, run now and again in its place at each replay;
//  - state made once (an optimizer's buffers on its first step): made while
//    the recording is paused, so a replay does not zero it again.
#pragma once
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

namespace mixp {

class StepCapture {
 public:
  // Runs fn(0) now, unrecorded, and fn(shift) at every replay in its place
  // among the recorded calls; shift is what the replay adds to the Philox
  // offsets drawn during capture (fn adds it to any offset it took then).
  // `uses` are the device addresses fn reads or writes (a replay is refused
  // once a block holding one was released); `owner` expiring refuses it too,
  // and `what` names the owner in that message ("an optimizer").
  virtual void host_step(std::weak_ptr<const void> owner, const char *what,
                         std::vector<const void *> uses, std::function<void(uint64_t)> fn) = 0;
  // Uploads n bytes that are the same at every step (a constant an op
  // builds on the host from its arguments, such as arange's values): copied
  // now, and the same bytes again at every replay.
  virtual void upload_constant(void *dst, const void *src, size_t n) = 0;
  // While paused, calls run on the device unrecorded and the memory they
  // allocate belongs to its tensors, not to the graph. Nests.
  virtual void pause() noexcept = 0;
  virtual void resume() noexcept = 0;

 protected:
  ~StepCapture() = default;
};

// Pauses the session's capture, if any, for a scope.
class CapturePause {
 public:
  explicit CapturePause(StepCapture *c) noexcept : c_(c) {
    if (c_) c_->pause();
  }
  ~CapturePause() {
    if (c_) c_->resume();
  }
  CapturePause(const CapturePause &) = delete;
  CapturePause &operator=(const CapturePause &) = delete;

 private:
  StepCapture *c_;
};

}  // namespace mixp
