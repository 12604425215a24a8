// CRC-32C (Castagnoli, the polynomial of iSCSI, ext4 and SSE4.2's crc32
// instruction), computed in portable C++ so that a checkpoint's checksums
// are the same on every machine. Used per tensor in training-state files.
#pragma once
#include <cstddef>
#include <cstdint>

namespace mixp::state {

// Extends `crc` (0 to start) over n bytes; crc32c(crc32c(0, a), b) is the
// CRC of a followed by b.
uint32_t crc32c(uint32_t crc, const void *data, size_t n) noexcept;

}  // namespace mixp::state
