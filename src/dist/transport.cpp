// The two host transports: a world of one, and MPI through its plugin.
#include "dist/transport.hpp"

#include <cstring>
#include <string>

#include "core/error.hpp"
#include "device/loader.hpp"

namespace mixp::dist {
namespace {

class SingleProcess final : public HostTransport {
 public:
  int rank() const noexcept override { return 0; }
  int world() const noexcept override { return 1; }
  int local_rank() const noexcept override { return 0; }
  const char *describe() const noexcept override { return "single process (no MPI), rank 0 of 1"; }
  void all_to_all(const void *send, void *recv, size_t bytes) override { copy(send, recv, bytes); }
  void all_gather(const void *send, void *recv, size_t bytes) override { copy(send, recv, bytes); }
  void broadcast(void *, size_t, int) override {}
  void barrier() override {}

 private:
  static void copy(const void *send, void *recv, size_t bytes) {
    if (bytes && send != recv) std::memmove(recv, send, bytes);
  }
};

}  // namespace

std::unique_ptr<HostTransport> single_process_transport() {
  return std::make_unique<SingleProcess>();
}

std::unique_ptr<HostTransport> mpi_transport() {
  static const PluginSpec spec{
      "libmixp_mpi.so", "MIXP_MPI_PLUGIN", MIXP_TRANSPORT_PLUGIN_SYMBOL, "MPI transport",
      "is Open MPI's libmpi.so.40 missing? install openmpi-bin / libopenmpi3, or check "
      "LD_LIBRARY_PATH",
      "this libmixp was built without MPI (install libopenmpi-dev and rebuild) or the plugin was "
      "not installed beside it; MIXP_DIST_SINGLE runs one process without MPI",
      MIXP_ERR_UNSUPPORTED};
  auto entry = reinterpret_cast<mixp_transport_plugin_fn>(load_plugin_entry(spec));
  char msg[1024] = {0};
  HostTransport *t = nullptr;
  const int st = entry(kTransportAbiVersion, &t, msg, sizeof msg);
  if (st != MIXP_OK || !t) {
    msg[sizeof msg - 1] = 0;
    fail(st == MIXP_OK ? MIXP_ERR_INTERNAL : mixp_status(st),
         msg[0] ? msg : "the MPI transport plugin failed without a reason");
  }
  return std::unique_ptr<HostTransport>(t);
}

}  // namespace mixp::dist
