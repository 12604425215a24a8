// Character-level text datasets: a file's bytes become token ids over the
// sorted set of distinct bytes it contains; samples are all windows of
// block_size tokens, each with its next-token targets. Also dataset subsets
// (contiguous sample ranges), which is how a text gets a held-out split.
#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include "core/error.hpp"
#include "data/dataset.hpp"

namespace mixp {

DatasetPtr load_text(const std::string &path, int64_t block_size, const char *fn) {
  std::FILE *f = std::fopen(path.c_str(), "rb");
  if (!f) fail(MIXP_ERR_IO, fn, ": cannot open '", path, "': ", std::strerror(errno));
  std::vector<uint8_t> bytes;
  unsigned char buf[1 << 16];
  size_t got = 0;
  while ((got = std::fread(buf, 1, sizeof buf, f)) > 0) bytes.insert(bytes.end(), buf, buf + got);
  const bool bad = std::ferror(f) != 0;
  const int err = errno;
  std::fclose(f);
  if (bad) fail(MIXP_ERR_IO, fn, ": cannot read '", path, "': ", std::strerror(err));
  if (int64_t(bytes.size()) <= block_size)
    fail(MIXP_ERR_INVALID_ARGUMENT, fn, ": '", path, "' has ", bytes.size(),
         " bytes; a block_size of ", block_size, " needs more than that many");

  auto d = std::make_shared<DatasetData>();
  bool present[256] = {};
  for (uint8_t b : bytes) present[b] = true;
  uint8_t id_of[256] = {};
  for (int b = 0; b < 256; ++b)
    if (present[b]) {
      id_of[b] = uint8_t(d->vocab.size());
      d->vocab.push_back(uint8_t(b));
    }
  for (uint8_t &b : bytes) b = id_of[b];
  d->samples = std::move(bytes);
  d->block_size = block_size;
  d->sample_shape = Shape{block_size};
  d->num_classes = int64_t(d->vocab.size());
  return d;
}

DatasetPtr subset(const DatasetData &d, int64_t start, int64_t count) {
  auto r = std::make_shared<DatasetData>();
  r->sample_shape = d.sample_shape;
  r->num_classes = d.num_classes;
  r->block_size = d.block_size;
  r->vocab = d.vocab;
  if (d.is_text()) {
    // The windows starting in the range need block_size more tokens.
    auto first = d.samples.begin() + start;
    r->samples.assign(first, first + count + d.block_size);
  } else {
    const int64_t n = d.sample_numel();
    auto first = d.samples.begin() + start * n;
    r->samples.assign(first, first + count * n);
    r->labels.assign(d.labels.begin() + start, d.labels.begin() + start + count);
  }
  return r;
}

}  // namespace mixp
