// A cache of freed host blocks, keyed by rounded size. A training step frees
// and re-allocates the same activation sizes every iteration; serving them
// from this cache avoids malloc's mmap/munmap round trips and the page faults
// of touching fresh pages (glibc maps blocks above its mmap threshold anew).
#pragma once
#include <cstddef>
#include <map>
#include <mutex>
#include <vector>

namespace mixp::cpu {

class BlockCache {
 public:
  // Blocks below this size are left to malloc, which is fast for them.
  static constexpr size_t kMinCached = 64 * 1024;
  // Free bytes kept at most; beyond it freed blocks go back to the system.
  static constexpr size_t kMaxCachedBytes = size_t(512) << 20;

  ~BlockCache();
  // Returns a 64-byte aligned block of at least `nbytes`, or null when the
  // system is out of memory.
  void *take(size_t nbytes);
  void give(void *p, size_t nbytes) noexcept;

 private:
  static size_t round_size(size_t nbytes) noexcept;
  std::mutex mu_;  // storage may be released on any thread (GC finalizers)
  std::map<size_t, std::vector<void *>> free_;
  size_t cached_bytes_ = 0;
};

}  // namespace mixp::cpu
