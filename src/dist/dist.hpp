// The communicator behind mixp_dist: a host transport (MPI or a world of
// one) and, on a device backend with collectives (NCCL on CUDA), the
// backend's clique. Collectives on tensors pick the path by where the
// tensor lives; data-parallel helpers (dist/data_parallel.cpp) build on them.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "backend/backend.hpp"
#include "backend/capabilities.hpp"
#include "core/tensor.hpp"
#include "dist/transport.hpp"
#include "mixp/mixp.h"

namespace mixp::dist {
class GradSync;
}

struct mixp_dist {
  static constexpr uint32_t kMagic = 0x44495354u;  // "DIST"
  uint32_t magic = kMagic;
  mixp::SessionRef session;
  std::unique_ptr<mixp::dist::HostTransport> host;
  // The session backend's collectives once it joined their clique; null:
  // tensors go through the host transport (a backend without collectives).
  mixp::DeviceCollectives *clique = nullptr;
  int64_t bucket_bytes = 0;
  std::string description;
  // Host all-reduce buffers (send, receive, own chunk), reused across calls.
  std::vector<unsigned char> scratch[3];
  // What optimizers hold (weakly) to agree on skipping steps: expires with
  // the communicator, after which they act alone.
  std::shared_ptr<mixp_dist *> self = std::make_shared<mixp_dist *>(this);
  // The step armed by mixp_dist_prepare_gradients, until average_gradients.
  std::unique_ptr<mixp::dist::GradSync> sync;
  mixp_dist_stats stats{};  // struct_size unused here

  ~mixp_dist();
  int rank() const noexcept { return host->rank(); }
  int world() const noexcept { return host->world(); }
};

namespace mixp::dist {

using Dist = mixp_dist;

// Validates a handle from the C API.
Dist *check_dist(const mixp_dist *d, const char *fn, const char *arg = "dist");

// Joins the ranks and binds to session s (see mixp_dist_create).
std::unique_ptr<Dist> create(Session *s, const mixp_dist_options &o, const char *fn);

// The collectives of the C API, on tensors of d's session (validated by the
// caller): in place for all_reduce/broadcast.
void all_reduce(Dist &d, Tensor &t, mixp_reduce_op op);
void broadcast(Dist &d, Tensor &t, int root);
TensorPtr all_gather(Dist &d, const Tensor &t);
// A View of flat[start, start + numel(like)) (flat: a contiguous 1-D
// tensor) with like's shape, contiguous, in flat's dtype; and of n elements
// of flat from start as a 1-D View.
View packed_view(const Tensor &flat, int64_t start, const Tensor &like);
View flat_range(const Tensor &flat, int64_t start, int64_t n);

// In place over the first n elements of a contiguous buffer already in a
// reduction dtype (F32, F64, I32, I64, U8): what all_reduce does after
// staging. weights (floats, Sum only): one per rank, each rank's values are
// multiplied by its weight inside the sum; null for 1. A buffer with room
// for a multiple of the world size (the tail zeroed) avoids a host copy.
// overlap: on a device clique, on the backend's second queue
// (DeviceCollectives::all_reduce_overlapped; collectives_join before reading
// buf); the host transport reduces at once either way.
void reduce_buffer(Dist &d, Tensor &buf, CollectiveOp op, int64_t n, const double *weights,
                   bool overlap = false);

// Data parallelism (dist/data_parallel.cpp).
void broadcast_module(Dist &d, mixp_module &m);
void prepare_gradients(Dist &d, mixp_optimizer &opt, int64_t local_samples, const char *fn);
void average_gradients(Dist &d, mixp_optimizer &opt, int64_t local_samples, const char *fn);

}  // namespace mixp::dist
