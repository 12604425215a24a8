// The optional capabilities of a backend (see the top of backend.hpp): each
// a family of methods that only make sense together, handed out by a
// Backend accessor that returns null when the device lacks the family.
// Part of the plugin contract, like backend.hpp.
#pragma once
#include <cstddef>
#include <cstdint>

#include "backend/backend.hpp"

namespace mixp {

// The reductions of DeviceCollectives::all_reduce.
enum class CollectiveOp { Sum, Max };

// The size of a clique id (NCCL's ncclUniqueId), made by rank 0 and sent to
// the other ranks over the host transport.
inline constexpr size_t kCliqueIdBytes = 128;

// A backend that has a capability implements all of its methods (it
// usually inherits the interface and returns `this` from the accessor).
// Nobody owns a capability through its interface: the protected destructors
// say so.

// Device collectives (data parallelism, src/dist/): the backend joins a
// clique of ranks (NCCL on CUDA) and runs the collectives on its own memory
// and queue. Without them (the CPU, whose memory the host reads) the
// communicator moves the tensors through its host transport.
class DeviceCollectives {
 public:
  // Makes a new clique's id (rank 0 does, then sends it to the others).
  virtual void clique_id(unsigned char id[kCliqueIdBytes]) = 0;
  // Joins the clique `id` as `rank` of `world` (every rank calls it; blocks
  // until all have). One clique per backend at a time. Returns a one-line
  // description (library and version), or fails with MIXP_ERR_DEVICE naming
  // what is missing (the library, a device).
  virtual const char *clique_join(const unsigned char id[kCliqueIdBytes], int world, int rank) = 0;
  // Leaves the clique (no-op without one).
  virtual void clique_leave() noexcept = 0;
  // In place over contiguous `buf` (F32, F64, I32, I64 or U8), on every rank
  // of the clique; the result is identical on every rank.
  virtual void all_reduce(const View &buf, CollectiveOp op) = 0;
  // all_reduce on a second queue, after the work queued so far: the work
  // queued next runs beside it (data parallelism overlaps the gradient
  // buckets with the rest of backward). buf must stay alive and untouched
  // until collectives_join(). Overlapped collectives run in call order.
  virtual void all_reduce_overlapped(const View &buf, CollectiveOp op) = 0;
  // Orders the work queued from now on after every overlapped collective
  // (without waiting on the host); a no-op when none is pending.
  virtual void collectives_join() = 0;
  // Rank root's contiguous buf (any dtype) into everyone's.
  virtual void broadcast(const View &buf, int root) = 0;
  // out (contiguous, world * in.numel() elements of in's dtype, any dtype) =
  // every rank's contiguous `in`, rank 0 first.
  virtual void all_gather(const View &in, const View &out) = 0;

 protected:
  ~DeviceCollectives() = default;
};

// Device time for the profiler (ops/profile.cpp), for a backend whose work
// runs after the call returns (queued on a stream). Without it the work ran
// during the call, and the profiler's host clock times it.
class DeviceTimer {
 public:
  // Puts a timing mark in the queue and returns its handle (> 0).
  virtual uint64_t timing_mark() = 0;
  // Milliseconds of device time between marks `from` and `to` (handed out
  // since the last timing_reset, `from` queued first), waiting for the
  // device to pass `to`.
  virtual double timing_elapsed_ms(uint64_t from, uint64_t to) = 0;
  // Every mark handed out so far may be reused; their handles are dead.
  virtual void timing_reset() noexcept = 0;

 protected:
  ~DeviceTimer() = default;
};

// What the device holds for this backend beyond the tensors the session
// counts itself: bytes in use (tensors and every kernel's scratch) and bytes
// reserved (in use or cached by its memory pool), now and at their
// high-water marks since the last reset_device_memory_peak(). Without it
// (the CPU: its scratch comes from the C++ heap) the session's tensor counts
// are all there is.
struct DeviceMemory {
  uint64_t used = 0, used_peak = 0, reserved = 0, reserved_peak = 0;
};
class DeviceMemoryStats {
 public:
  // Writes *out and returns true; false (the device could not answer now)
  // leaves *out untouched, so the caller keeps its own counts, as without
  // the capability.
  virtual bool device_memory(DeviceMemory *out) const noexcept = 0;
  virtual void reset_device_memory_peak() noexcept = 0;

 protected:
  ~DeviceMemoryStats() = default;
};

}  // namespace mixp
