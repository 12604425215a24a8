// The device memory of captured graphs (mixp_graph). A graph's recorded
// calls hold raw addresses, so every block they use must stay where it is,
// unshared, for as long as the graph may replay:
//  - blocks allocated during capture, and blocks released during it, belong
//    to the graph (its private pool): the backend gets them back when the
//    graph is destroyed and no tensor holds them any more;
//  - blocks made before the capture that the calls use (inputs, parameters,
//    optimizer and scaler state) stay their tensors'; releasing one makes
//    the graph refuse to replay (it would use freed memory).
// A tensor's storage asks the session's registry before it frees its block
// (Storage::~Storage). Storage may be released on any thread (garbage
// collectors), hence the lock.
#pragma once
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

namespace mixp {

struct GraphMemory {
  struct Block {
    char *p = nullptr;
    size_t n = 0;
    bool held = false;  // a tensor's storage still holds it
  };
  std::vector<Block> blocks;          // the graph's own, sorted by address
  std::vector<const char *> touched;  // every address a call uses, sorted
  std::string stale;                  // why replay is refused; empty: replayable
};

class GraphMemoryRegistry {
 public:
  void add(GraphMemory *g);
  // Unregisters g and returns its blocks no tensor holds (the caller frees
  // them); the others go back to their storages, which free them as usual.
  std::vector<GraphMemory::Block> remove(GraphMemory *g);
  // A storage releases [p, p + n): true when a live graph owns the block
  // (it frees it later); marks stale every graph that uses it otherwise.
  bool release(void *p, size_t n) noexcept;
  // Bytes of graph blocks no tensor holds (what the graphs add to the
  // session's tensor memory).
  uint64_t held_bytes() const noexcept;
  // The reason replay of g is refused ("" when it is not), read under the lock.
  std::string stale(const GraphMemory &g) const;

 private:
  mutable std::mutex mu_;
  std::vector<GraphMemory *> live_;
};

}  // namespace mixp
