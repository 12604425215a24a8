// The safetensors container (https://github.com/huggingface/safetensors):
// an 8-byte little-endian header length N, N bytes of JSON
//   {"__metadata__": {"key": "value", ...},
//    "name": {"dtype": "F32", "shape": [2, 3], "data_offsets": [begin, end]}, ...}
// then the tensor bytes, little-endian, row-major, offsets relative to the
// end of the header.
//
// parse() is a pure function over a byte buffer, written for hostile input
// (a fuzz target drives it): the JSON reader is specialised to this one
// schema, iterative (nesting is at most three levels), bounded in size, and
// every offset, shape and size is checked before anything trusts it.
//
// mixp's convention on top: every tensor's CRC-32C (over its name, dtype,
// shape and bytes) in the metadata as "crc32c.<name>", and one over the
// other metadata entries as "crc32c.__metadata__".
#pragma once
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace mixp::state {

// Larger headers are refused (the Python package's own limit is 100 MB).
constexpr uint64_t kMaxHeaderBytes = uint64_t(100) << 20;
// Dimensions a shape may have in a file we read (mixp tensors have fewer;
// that is checked when a tensor is applied).
constexpr size_t kMaxFileDims = 64;

struct Entry {
  std::string name;
  std::string dtype;  // "F32", "BF16", "I64", ...
  size_t elem_size = 0;
  std::vector<int64_t> shape;
  uint64_t begin = 0, end = 0;  // relative to the data section
  uint64_t nbytes() const noexcept { return end - begin; }
};

struct File {
  std::vector<Entry> tensors;                  // in header order
  std::map<std::string, size_t> index;         // name -> position in tensors
  std::map<std::string, std::string> metadata;
  uint64_t data_offset = 0;                    // 8 + N

  const Entry *find(const std::string &name) const noexcept {
    auto it = index.find(name);
    return it == index.end() ? nullptr : &tensors[it->second];
  }
  const std::string *meta(const std::string &key) const noexcept {
    auto it = metadata.find(key);
    return it == metadata.end() ? nullptr : &it->second;
  }
};

// Element size of a safetensors dtype name, 0 when unknown.
size_t dtype_elem_size(const std::string &dtype) noexcept;

// Parses and validates the whole layout of `size` bytes: header length,
// JSON, dtypes, shapes against byte counts, and data offsets that tile the
// data section exactly (no gap, no overlap, nothing after it). Fails with
// MIXP_ERR_CORRUPT; messages start with `what` (e.g. "fn: 'path'") and name
// the offending tensor.
File parse(const uint8_t *data, size_t size, const std::string &what);

// Parses only the header from its first bytes (`avail` of them, which must
// cover 8 + N) and checks the layout against `file_size`.
File parse_header(const uint8_t *data, size_t avail, uint64_t file_size, const std::string &what);

// The checksum mixp stores for a tensor and for the metadata.
uint32_t tensor_crc(const Entry &e, const uint8_t *bytes) noexcept;
uint32_t metadata_crc(const std::map<std::string, std::string> &metadata) noexcept;
std::string crc_hex(uint32_t crc);

// Checks every "crc32c.*" entry present (and, with `require`, that every
// tensor and the metadata have one). `data` is the whole file. Fails with
// MIXP_ERR_CORRUPT naming the tensor.
void verify_checksums(const File &f, const uint8_t *data, bool require, const std::string &what);

// Builds "8-byte length + JSON header" for tensors laid out back to back in
// the given order, metadata included; the header is padded with spaces to a
// multiple of 8 bytes so that the data section is aligned.
struct OutTensor {
  std::string name;
  std::string dtype;
  std::vector<int64_t> shape;
  uint64_t nbytes = 0;
};
std::string build_header(const std::vector<OutTensor> &tensors,
                         const std::map<std::string, std::string> &metadata);

// JSON string literal of s (quotes included).
std::string json_quote(const std::string &s);

}  // namespace mixp::state
