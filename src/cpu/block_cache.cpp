#include "cpu/block_cache.hpp"

#include <cstdlib>

namespace mixp::cpu {

BlockCache::~BlockCache() {
  for (auto &kv : free_)
    for (void *p : kv.second) std::free(p);
}

size_t BlockCache::round_size(size_t nbytes) noexcept {
  size_t r = (nbytes + 63) / 64 * 64;
  if (r < kMinCached) return r;
  // Round up to 1/8 steps of a power of two: at most 12.5% waste, and a
  // handful of distinct sizes per octave keep the hit rate high.
  size_t p = 1;
  while (p * 2 <= r) p *= 2;
  const size_t step = p / 8;
  return (r + step - 1) / step * step;
}

void *BlockCache::take(size_t nbytes) {
  const size_t size = round_size(nbytes ? nbytes : 1);
  if (size >= kMinCached) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = free_.find(size);
    if (it != free_.end() && !it->second.empty()) {
      void *p = it->second.back();
      it->second.pop_back();
      cached_bytes_ -= size;
      return p;
    }
  }
  return std::aligned_alloc(64, size);
}

void BlockCache::give(void *p, size_t nbytes) noexcept {
  if (!p) return;
  const size_t size = round_size(nbytes ? nbytes : 1);
  if (size >= kMinCached) {
    std::lock_guard<std::mutex> lock(mu_);
    if (cached_bytes_ + size <= kMaxCachedBytes) {
      try {
        free_[size].push_back(p);
        cached_bytes_ += size;
        return;
      } catch (...) {
        // No room for bookkeeping: fall through and free the block.
      }
    }
  }
  std::free(p);
}

}  // namespace mixp::cpu
