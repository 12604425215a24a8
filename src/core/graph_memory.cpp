#include "core/graph_memory.hpp"

#include <algorithm>

namespace mixp {

void GraphMemoryRegistry::add(GraphMemory *g) {
  std::lock_guard<std::mutex> lock(mu_);
  live_.push_back(g);
}

std::vector<GraphMemory::Block> GraphMemoryRegistry::remove(GraphMemory *g) {
  std::vector<GraphMemory::Block> unheld;
  unheld.reserve(g->blocks.size());
  std::lock_guard<std::mutex> lock(mu_);
  live_.erase(std::remove(live_.begin(), live_.end(), g), live_.end());
  for (const GraphMemory::Block &b : g->blocks)
    if (!b.held) unheld.push_back(b);
  return unheld;
}

bool GraphMemoryRegistry::release(void *p, size_t n) noexcept {
  std::lock_guard<std::mutex> lock(mu_);
  if (live_.empty()) return false;
  char *lo = static_cast<char *>(p), *hi = lo + (n ? n : 1);
  bool owned = false;
  for (GraphMemory *g : live_) {
    auto b = std::lower_bound(g->blocks.begin(), g->blocks.end(), lo,
                              [](const GraphMemory::Block &x, char *q) { return x.p < q; });
    if (b != g->blocks.end() && b->p == lo) {
      b->held = false;
      owned = true;
      continue;
    }
    auto t = std::lower_bound(g->touched.begin(), g->touched.end(), lo);
    if (t != g->touched.end() && *t < hi && g->stale.empty())
      g->stale = "a tensor the captured step uses (made before the capture: an input, a parameter, "
                 "optimizer or scaler state) was released or replaced since the capture";
  }
  return owned;
}

uint64_t GraphMemoryRegistry::held_bytes() const noexcept {
  std::lock_guard<std::mutex> lock(mu_);
  uint64_t total = 0;
  for (const GraphMemory *g : live_)
    for (const GraphMemory::Block &b : g->blocks)
      if (!b.held) total += b.n;
  return total;
}

std::string GraphMemoryRegistry::stale(const GraphMemory &g) const {
  std::lock_guard<std::mutex> lock(mu_);
  return g.stale;
}

}  // namespace mixp
