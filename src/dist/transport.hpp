// The host transport: how the ranks of a data-parallel run move host memory
// between them. MPI (src/dist/mpi/, the plugin libmixp_mpi.so, loaded on
// demand so that libmixp.so never links MPI) or a world of one process.
// Collectives on tensors (src/dist/dist.hpp) are built from these four
// operations; every one is called by every rank in the same order.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>

#define MIXP_TRANSPORT_PLUGIN_SYMBOL "mixp_transport_plugin_v1"

namespace mixp::dist {

// Bump with every change to this header: libmixp.so and libmixp_mpi.so must
// come from the same build.
inline constexpr uint32_t kTransportAbiVersion = 1;

class HostTransport {
 public:
  // Leaves the world (MPI: the last transport of the process finalises).
  virtual ~HostTransport() = default;
  virtual int rank() const noexcept = 0;
  virtual int world() const noexcept = 0;
  // This rank's index among the ranks on its host.
  virtual int local_rank() const noexcept = 0;
  // One line: the transport and its library.
  virtual const char *describe() const noexcept = 0;
  // send holds world() blocks of `bytes` each, block r for rank r; recv
  // receives world() blocks, block r from rank r.
  virtual void all_to_all(const void *send, void *recv, size_t bytes) = 0;
  // recv receives world() blocks of `bytes`, block r = rank r's send.
  virtual void all_gather(const void *send, void *recv, size_t bytes) = 0;
  // Rank root's buf into everyone's.
  virtual void broadcast(void *buf, size_t bytes, int root) = 0;
  virtual void barrier() = 0;
};

// The transport of a process launched alone: rank 0 of a world of one.
std::unique_ptr<HostTransport> single_process_transport();
// The MPI world of this process, through libmixp_mpi.so. Throws
// MIXP_ERR_UNSUPPORTED naming what is missing (the plugin, libmpi) and
// MIXP_ERR_STATE once MPI was finalised.
std::unique_ptr<HostTransport> mpi_transport();

}  // namespace mixp::dist

// The plugin's entry point: checks abi_version, initialises MPI if this
// process has not, and returns MIXP_OK with a transport in *out (owned by
// the caller); otherwise a status and the reason in msg (NUL-terminated).
using mixp_transport_plugin_fn = int (*)(uint32_t abi_version, mixp::dist::HostTransport **out,
                                         char *msg, size_t msglen);
