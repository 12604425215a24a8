// Device time for the profiler (ops/profile.cpp): a CUDA event recorded on
// the session's stream per mark. Events are kept in a pool and reused after
// timing_reset, so a profiled step creates events only the first time.
#include "core/error.hpp"
#include "cuda_backend.hpp"

namespace mixp::cuda {

uint64_t CudaBackend::timing_mark() {
  if (timing_used_ == timing_events_.size()) {
    cudaEvent_t e = nullptr;
    MIXP_CUDA_CHECK(cudaEventCreate(&e));
    timing_events_.push_back(e);
  }
  MIXP_CUDA_CHECK(cudaEventRecord(timing_events_[timing_used_], stream_));
  return ++timing_used_;  // handles are 1-based: 0 means "no mark"
}

double CudaBackend::timing_elapsed_ms(uint64_t from, uint64_t to) {
  if (from == 0 || to == 0 || from > timing_used_ || to > timing_used_)
    fail(MIXP_ERR_INTERNAL, "cuda: timing marks ", from, " and ", to, " were not handed out (",
         timing_used_, " were)");
  cudaEvent_t a = timing_events_[from - 1], b = timing_events_[to - 1];
  // The profiler synchronises (and counts that wait) before reading marks.
  MIXP_CUDA_CHECK(cudaEventSynchronize(b));
  float ms = 0.0f;
  MIXP_CUDA_CHECK(cudaEventElapsedTime(&ms, a, b));
  return double(ms);
}

void CudaBackend::timing_reset() noexcept { timing_used_ = 0; }

}  // namespace mixp::cuda
