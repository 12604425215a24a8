// Whole-file reads and crash-safe writes for training-state files.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace mixp::state {

// The whole file; MIXP_ERR_IO (naming fn and path) when it cannot be read.
std::vector<uint8_t> read_file(const std::string &path, const char *fn);

// Reads at most `max` bytes from the start of the file and reports its size.
std::vector<uint8_t> read_prefix(const std::string &path, size_t max, uint64_t *file_size,
                                 const char *fn);

struct Piece {
  const void *data;
  size_t size;
};

// Writes the pieces, in order, so that `path` holds either its old content
// or all of the new one whatever happens (crash, SIGKILL, power loss): a
// temporary file in the same directory, fsync, rename over `path`, fsync of
// the directory. MIXP_ERR_IO on failure (the temporary file is removed).
void write_atomic(const std::string &path, const std::vector<Piece> &pieces, const char *fn);

}  // namespace mixp::state
