// libFuzzer target: the IDX (MNIST) reader (src/data/idx.cpp), plain and
// gzip. The input is split into an image file and a label file: the first
// two bytes (little-endian) give the image file's length, the rest of the
// input after it is the label file. Both are written to a private temporary
// directory (the reader works on paths, through zlib's gzopen).
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "core/error.hpp"
#include "data/dataset.hpp"

namespace {

std::string g_dir;

void write_file(const std::string &path, const uint8_t *p, size_t n) {
  FILE *f = std::fopen(path.c_str(), "wb");
  if (!f) std::abort();
  if (n && std::fwrite(p, 1, n, f) != n) std::abort();
  std::fclose(f);
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int *, char ***) {
  // Memory-backed when available: two file writes per input dominate.
  char shm[] = "/dev/shm/mixp_fuzz_idx.XXXXXX";
  char tmp[] = "/tmp/mixp_fuzz_idx.XXXXXX";
  const char *d = mkdtemp(shm);
  if (!d) d = mkdtemp(tmp);
  if (!d) std::abort();
  g_dir = d;
  std::atexit([] {
    unlink((g_dir + "/images").c_str());
    unlink((g_dir + "/labels").c_str());
    rmdir(g_dir.c_str());
  });
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 2) return 0;
  size_t split = size_t(data[0]) | (size_t(data[1]) << 8);
  data += 2;
  size -= 2;
  if (split > size) split = size;
  write_file(g_dir + "/images", data, split);
  write_file(g_dir + "/labels", data + split, size - split);
  try {
    mixp::DatasetPtr d = mixp::load_idx(g_dir + "/images", g_dir + "/labels", "fuzz");
    // What it accepted is consistent.
    const int64_t n = int64_t(d->labels.size());
    if (n < 1 || int64_t(d->samples.size()) != n * d->sample_numel()) std::abort();
    for (int64_t l : d->labels)
      if (l < 0 || l >= d->num_classes) std::abort();
  } catch (const mixp::Error &e) {
    if (e.status() != MIXP_ERR_CORRUPT && e.status() != MIXP_ERR_IO) std::abort();
  }
  return 0;
}
