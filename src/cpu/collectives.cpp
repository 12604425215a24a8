// The CPU backend has no device collectives: its memory is the host's, which
// the communicator (src/dist/) moves through the host transport (MPI) itself.
// These are reached only by a caller that ignored has_collectives().
#include "core/error.hpp"
#include "cpu/cpu_backend.hpp"

namespace mixp {
namespace {

[[noreturn]] void no_collectives(const char *what) {
  fail(MIXP_ERR_UNSUPPORTED, "the CPU backend has no device collectives (", what,
       "); CPU tensors go through the host transport");
}

}  // namespace

void CpuBackend::clique_id(unsigned char *) { no_collectives("clique_id"); }
const char *CpuBackend::clique_join(const unsigned char *, int, int) { no_collectives("clique_join"); }
void CpuBackend::all_reduce(const View &, CollectiveOp) { no_collectives("all_reduce"); }
void CpuBackend::all_reduce_overlapped(const View &, CollectiveOp) {
  no_collectives("all_reduce_overlapped");
}
void CpuBackend::broadcast(const View &, int) { no_collectives("broadcast"); }
void CpuBackend::all_gather(const View &, const View &) { no_collectives("all_gather"); }

}  // namespace mixp
