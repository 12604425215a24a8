// A stand-in for libmixp_cuda.so that answers the loader's handshake with
// an op table chosen by MIXP_FAKE_PLUGIN_TABLE, so that the loader's
// refusal of a plugin built from another table (device/loader.cpp) is
// exercised without a GPU or CUDA (tests/c/test_plugin_table.c):
//   same         this build's table: the loader must pass on the plugin's
//                own answer ("fake plugin: no device")
//   one_more_op  a table with one op more, as a plugin built after a row
//                was added
//   renamed      as many ops, another name hash, as a plugin built from a
//                table whose rows were renamed or reordered
// It never creates a backend.
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "backend/plugin.hpp"

extern "C" __attribute__((visibility("default"))) int mixp_backend_plugin_v2(
    uint32_t abi_version, mixp::OpTableIdentity *op_table, int device, mixp::Backend **out,
    char *msg, size_t msglen) {
  (void)device;
  (void)out;
  if (abi_version != mixp::kBackendAbiVersion) {
    std::snprintf(msg, msglen, "fake plugin: ABI v%u asked for", unsigned(abi_version));
    return MIXP_ERR_DEVICE;
  }
  mixp::OpTableIdentity table = mixp::kOpTableIdentity;
  const char *mode = std::getenv("MIXP_FAKE_PLUGIN_TABLE");
  if (mode && std::strcmp(mode, "one_more_op") == 0) {
    table.op_count += 1;
    table.name_hash ^= 0x9e3779b97f4a7c15ull;
  } else if (mode && std::strcmp(mode, "renamed") == 0) {
    table.name_hash ^= 0x9e3779b97f4a7c15ull;
  }
  *op_table = table;
  std::snprintf(msg, msglen, "fake plugin: no device (table %s)", mode ? mode : "same");
  return MIXP_ERR_DEVICE;
}
