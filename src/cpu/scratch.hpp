// An fp32 buffer an operation reuses across calls for its temporaries (the
// fp32 copies of half operands, say): a fresh vector would cost a zero fill
// and, above the allocator's mmap threshold, page faults on every call. Owned
// by a per-session object; a session is used by one thread at a time.
#pragma once
#include <cstddef>
#include <memory>

namespace mixp::cpu {

class ScratchBuffer {
 public:
  // At least n floats, uninitialised (the caller writes before it reads);
  // valid until the next get().
  float *get(size_t n) {
    if (n > capacity_) {
      data_.reset(new float[n]);
      capacity_ = n;
    }
    return data_.get();
  }

 private:
  std::unique_ptr<float[]> data_;
  size_t capacity_ = 0;
};

}  // namespace mixp::cpu
