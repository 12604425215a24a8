// libmixp_mpi.so: the host transport over MPI (Open MPI on Debian), built
// only when CMake finds MPI, loaded by libmixp.so on the first
// mixp_dist_create (src/dist/transport.cpp). MPI is initialised by the first
// transport and finalised by the destructor of the last one: a process
// launched by mpirun that exits without MPI_Finalize is reported as failed.
#include <mpi.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <string>

#include "core/error.hpp"
#include "dist/transport.hpp"

namespace mixp::dist {
namespace {

std::mutex g_mutex;
int g_live = 0;           // transports alive in this process
bool g_we_init = false;   // MPI_Init was ours (then MPI_Finalize is ours too)

std::string mpi_error(int code) {
  char text[MPI_MAX_ERROR_STRING] = {0};
  int len = 0;
  if (MPI_Error_string(code, text, &len) != MPI_SUCCESS) return "MPI error " + std::to_string(code);
  return std::string(text, size_t(len));
}

void check(int code, const char *call) {
  if (code != MPI_SUCCESS) fail(MIXP_ERR_DEVICE, "MPI: ", call, " failed: ", mpi_error(code));
}

// MPI counts are int: larger messages go in pieces of at most 1 GiB.
constexpr size_t kPiece = size_t(1) << 30;

class MpiTransport final : public HostTransport {
 public:
  MpiTransport() {
    check(MPI_Comm_dup(MPI_COMM_WORLD, &comm_), "MPI_Comm_dup");
    // Failures come back as codes (then errors) instead of aborting the job.
    MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN);
    check(MPI_Comm_rank(comm_, &rank_), "MPI_Comm_rank");
    check(MPI_Comm_size(comm_, &world_), "MPI_Comm_size");
    MPI_Comm node;
    check(MPI_Comm_split_type(comm_, MPI_COMM_TYPE_SHARED, rank_, MPI_INFO_NULL, &node),
          "MPI_Comm_split_type");
    MPI_Comm_rank(node, &local_rank_);
    MPI_Comm_free(&node);
    char lib[MPI_MAX_LIBRARY_VERSION_STRING] = {0};
    int len = 0;
    MPI_Get_library_version(lib, &len);
    std::string first(lib, size_t(len));
    if (size_t nl = first.find_first_of("\n,"); nl != std::string::npos) first.resize(nl);
    description_ = "MPI (" + first + "), rank " + std::to_string(rank_) + " of " +
                   std::to_string(world_);
  }
  ~MpiTransport() override {
    MPI_Comm_free(&comm_);
    std::lock_guard<std::mutex> lock(g_mutex);
    if (--g_live == 0 && g_we_init) MPI_Finalize();
  }
  int rank() const noexcept override { return rank_; }
  int world() const noexcept override { return world_; }
  int local_rank() const noexcept override { return local_rank_; }
  const char *describe() const noexcept override { return description_.c_str(); }

  // Both exchanges are pairwise rounds of MPI_Sendrecv (round k: send to
  // rank + k, receive from rank - k), in pieces, so no size limit applies.
  void all_to_all(const void *send, void *recv, size_t bytes) override {
    auto *out = static_cast<char *>(recv);
    const auto *in = static_cast<const char *>(send);
    std::memcpy(out + size_t(rank_) * bytes, in + size_t(rank_) * bytes, bytes);
    for (int k = 1; k < world_; ++k) {
      const int to = (rank_ + k) % world_, from = (rank_ - k + world_) % world_;
      exchange(in + size_t(to) * bytes, to, out + size_t(from) * bytes, from, bytes);
    }
  }
  void all_gather(const void *send, void *recv, size_t bytes) override {
    auto *out = static_cast<char *>(recv);
    std::memcpy(out + size_t(rank_) * bytes, send, bytes);
    for (int k = 1; k < world_; ++k) {
      const int to = (rank_ + k) % world_, from = (rank_ - k + world_) % world_;
      exchange(send, to, out + size_t(from) * bytes, from, bytes);
    }
  }
  void broadcast(void *buf, size_t bytes, int root) override {
    auto *p = static_cast<char *>(buf);
    for (size_t off = 0; off < bytes; off += kPiece)
      check(MPI_Bcast(p + off, int(std::min(kPiece, bytes - off)), MPI_BYTE, root, comm_), "MPI_Bcast");
  }
  void barrier() override { check(MPI_Barrier(comm_), "MPI_Barrier"); }

 private:
  void exchange(const void *send, int to, void *recv, int from, size_t bytes) {
    const auto *s = static_cast<const char *>(send);
    auto *r = static_cast<char *>(recv);
    for (size_t off = 0; off < bytes; off += kPiece) {
      const int n = int(std::min(kPiece, bytes - off));
      check(MPI_Sendrecv(s + off, n, MPI_BYTE, to, 0, r + off, n, MPI_BYTE, from, 0, comm_,
                         MPI_STATUS_IGNORE),
            "MPI_Sendrecv");
    }
  }


  MPI_Comm comm_ = MPI_COMM_NULL;
  int rank_ = 0, world_ = 1, local_rank_ = 0;
  std::string description_;
};

int report(char *msg, size_t len, int status, const std::string &text) {
  if (msg && len) {
    std::strncpy(msg, text.c_str(), len - 1);
    msg[len - 1] = 0;
  }
  return status;
}

}  // namespace
}  // namespace mixp::dist

extern "C" __attribute__((visibility("default"))) int mixp_transport_plugin_v1(
    uint32_t abi_version, mixp::dist::HostTransport **out, char *msg, size_t msglen) {
  using namespace mixp::dist;
  if (abi_version != kTransportAbiVersion)
    return report(msg, msglen, MIXP_ERR_UNSUPPORTED,
                  "libmixp_mpi.so has transport ABI v" + std::to_string(kTransportAbiVersion) +
                      ", libmixp expects v" + std::to_string(abi_version) +
                      ": the two come from different builds");
  if (!out) return report(msg, msglen, MIXP_ERR_INVALID_ARGUMENT, "out is NULL");
  try {
    std::lock_guard<std::mutex> lock(g_mutex);
    int finalized = 0, initialized = 0;
    MPI_Finalized(&finalized);
    if (finalized)
      return report(msg, msglen, MIXP_ERR_STATE,
                    "MPI was finalised (the last communicator of this process was destroyed); "
                    "MPI cannot be initialised twice in one process");
    MPI_Initialized(&initialized);
    if (!initialized) {
      // Serialized: a communicator may move between threads, one at a time.
      int provided = 0;
      int rc = MPI_Init_thread(nullptr, nullptr, MPI_THREAD_SERIALIZED, &provided);
      if (rc != MPI_SUCCESS)
        return report(msg, msglen, MIXP_ERR_DEVICE, "MPI_Init_thread failed: " + mpi_error(rc));
      g_we_init = true;
    }
    auto *t = new MpiTransport();
    ++g_live;
    *out = t;
    return MIXP_OK;
  } catch (const mixp::Error &e) {
    return report(msg, msglen, e.status(), e.message());
  } catch (const std::exception &e) {
    return report(msg, msglen, MIXP_ERR_INTERNAL, e.what());
  }
}
