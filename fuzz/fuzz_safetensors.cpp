// libFuzzer target: the reader of training-state files (src/state/
// safetensors.cpp) on arbitrary bytes. Besides "no crash, leak, hang or
// undefined behaviour", it checks two properties of every file the parser
// accepts: re-serialising what it parsed gives a file that parses to the
// same tensors, and checksum verification terminates cleanly.
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>

#include "core/error.hpp"
#include "state/safetensors.hpp"

using namespace mixp::state;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const std::string what = "fuzz";
  File f;
  try {
    f = parse(data, size, what);
  } catch (const mixp::Error &e) {
    if (e.status() != MIXP_ERR_CORRUPT) std::abort();  // only CORRUPT is documented
    return 0;
  }
  try {
    verify_checksums(f, data, false, what);
  } catch (const mixp::Error &e) {
    if (e.status() != MIXP_ERR_CORRUPT) std::abort();
  }
  // Round trip: the same tensors laid out in header order.
  std::vector<OutTensor> out;
  std::string bytes;
  for (const Entry &e : f.tensors) {
    out.push_back({e.name, e.dtype, e.shape, e.nbytes()});
    bytes.append(reinterpret_cast<const char *>(data + f.data_offset + e.begin), size_t(e.nbytes()));
  }
  std::string file = build_header(out, f.metadata) + bytes;
  File g = parse(reinterpret_cast<const uint8_t *>(file.data()), file.size(), what);
  if (g.tensors.size() != f.tensors.size() || g.metadata != f.metadata) std::abort();
  for (size_t i = 0; i < f.tensors.size(); ++i) {
    const Entry &a = f.tensors[i], &b = g.tensors[i];
    if (a.name != b.name || a.dtype != b.dtype || a.shape != b.shape || a.nbytes() != b.nbytes() ||
        std::memcmp(data + f.data_offset + a.begin, file.data() + g.data_offset + b.begin,
                    size_t(a.nbytes())) != 0)
      std::abort();
  }
  return 0;
}
