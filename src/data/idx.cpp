// The IDX format of MNIST and Fashion-MNIST: a big-endian magic number
// (0x0000 08 NN: unsigned bytes, NN dimensions), NN big-endian uint32 sizes,
// then the values. zlib's gzread reads gzip and plain files alike, so one
// reader serves both. The parser is written for hostile input (a fuzz target
// drives it): sizes in headers are never trusted for allocation up front, and
// every short read is reported as a truncation naming the file.
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "core/error.hpp"
#include "data/dataset.hpp"

namespace mixp {
namespace {

constexpr uint32_t kImagesMagic = 0x00000803u;
constexpr uint32_t kLabelsMagic = 0x00000801u;
// No real IDX file comes near this; it bounds what a forged header can make
// us attempt (16 GiB of pixels).
constexpr uint64_t kMaxBytes = uint64_t(1) << 34;
// Read granularity: growing the buffer as data arrives means a header that
// lies about its size costs at most one chunk beyond the real data.
constexpr size_t kChunk = size_t(1) << 24;
// gzip cannot shrink data by much more than 1000:1, and images far less: a
// file that promises more than this many bytes per byte on disk (beyond a
// small allowance) is a decompression bomb, refused before inflating it.
constexpr uint64_t kMaxExpansion = 64;
constexpr uint64_t kExpansionAllowance = uint64_t(1) << 26;

class IdxFile {
 public:
  IdxFile(const std::string &path, const char *fn) : path_(path), fn_(fn) {
    errno = 0;
    f_ = gzopen(path.c_str(), "rb");
    if (!f_) {
      int e = errno;
      fail(MIXP_ERR_IO, fn_, ": cannot open '", path_, "': ",
           e ? std::strerror(e) : "out of memory");
    }
    gzbuffer(f_, 1u << 17);
    std::error_code ec;
    disk_bytes_ = std::filesystem::file_size(path, ec);
    if (ec) disk_bytes_ = 0;
  }

  // Fails unless `n` payload bytes are plausible for a file of this size.
  // (A plain file cannot promise more than it holds: that is "truncated".)
  void check_expansion(uint64_t n, const char *what) const {
    if (!gzdirect(f_) && n > kExpansionAllowance && n / kMaxExpansion > disk_bytes_)
      fail(MIXP_ERR_CORRUPT, fn_, ": '", path_, "' is implausible: its header promises ", n, " bytes of ",
           what, " from a ", disk_bytes_, "-byte file (more than ", kMaxExpansion,
           " to 1; a decompression bomb?)");
  }
  IdxFile(const IdxFile &) = delete;
  IdxFile &operator=(const IdxFile &) = delete;
  ~IdxFile() {
    if (f_) gzclose(f_);
  }

  const std::string &path() const noexcept { return path_; }

  // Reads up to n bytes; returns how many arrived (fewer only at the end of
  // the data). Read errors fail: MIXP_ERR_IO for the OS, CORRUPT for gzip.
  size_t read(void *dst, size_t n) {
    size_t got = 0;
    auto *p = static_cast<unsigned char *>(dst);
    while (got < n) {
      unsigned want = unsigned(std::min<size_t>(n - got, size_t(INT_MAX) / 2));
      errno = 0;
      int r = gzread(f_, p + got, want);
      if (r < 0) raise_read_error();
      if (r == 0) break;
      got += size_t(r);
    }
    if (got < n) {
      // A gzip stream cut short reads as a short count plus Z_BUF_ERROR; a
      // damaged one as Z_DATA_ERROR. Both are corruption, reported here so
      // the message says why rather than just "truncated".
      int err = Z_OK;
      gzerror(f_, &err);
      if (err == Z_DATA_ERROR || err == Z_ERRNO) raise_read_error();
    }
    return got;
  }

  uint32_t read_u32(const char *what) {
    unsigned char b[4];
    size_t got = read(b, 4);
    if (got < 4)
      fail(MIXP_ERR_CORRUPT, fn_, ": '", path_, "' is truncated: the header ends inside ", what,
           " (", got, " of 4 bytes)");
    return (uint32_t(b[0]) << 24) | (uint32_t(b[1]) << 16) | (uint32_t(b[2]) << 8) | uint32_t(b[3]);
  }

  // Reads exactly n payload bytes (growing `out` as they arrive), then checks
  // that nothing follows them.
  void read_payload(std::vector<uint8_t> &out, uint64_t n, const char *what) {
    out.clear();
    out.reserve(size_t(std::min<uint64_t>(n, kChunk)));
    uint64_t have = 0;
    while (have < n) {
      size_t chunk = size_t(std::min<uint64_t>(n - have, kChunk));
      out.resize(size_t(have) + chunk);
      size_t got = read(out.data() + have, chunk);
      have += got;
      if (got < chunk)
        fail(MIXP_ERR_CORRUPT, fn_, ": '", path_, "' is truncated: the header promises ", n,
             " bytes of ", what, " but only ", have, " follow it");
    }
    unsigned char extra[64];
    size_t trailing = read(extra, sizeof extra);
    if (trailing > 0)
      fail(MIXP_ERR_CORRUPT, fn_, ": '", path_, "' is malformed: ", trailing == sizeof extra ? "at least " : "",
           trailing, " unexpected bytes follow the ", n, " bytes of ", what,
           " its header declares");
  }

 private:
  [[noreturn]] void raise_read_error() {
    int err = Z_OK;
    const char *msg = gzerror(f_, &err);
    if (err == Z_ERRNO) {
      int e = errno;
      fail(MIXP_ERR_IO, fn_, ": cannot read '", path_, "': ", e ? std::strerror(e) : "I/O error");
    }
    fail(MIXP_ERR_CORRUPT, fn_, ": '", path_, "' is not a valid gzip stream: ",
         msg ? msg : "unknown zlib error");
  }

  gzFile f_ = nullptr;
  uint64_t disk_bytes_ = 0;
  std::string path_;
  const char *fn_;
};

std::string hex32(uint32_t v) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "0x%08x", v);
  return buf;
}

void check_magic(IdxFile &f, uint32_t want, const char *kind, const char *fn) {
  uint32_t magic = f.read_u32("the magic number");
  if (magic != want)
    fail(MIXP_ERR_CORRUPT, fn, ": '", f.path(), "' has a bad magic number ", hex32(magic),
         " (expected ", hex32(want), ", an ", kind, " file)");
}

}  // namespace

DatasetPtr load_idx(const std::string &images_path, const std::string &labels_path,
                    const char *fn) {
  IdxFile images(images_path, fn);
  check_magic(images, kImagesMagic, "idx3-ubyte image", fn);
  uint32_t n = images.read_u32("the image count");
  uint32_t rows = images.read_u32("the row count");
  uint32_t cols = images.read_u32("the column count");
  if (n == 0) fail(MIXP_ERR_CORRUPT, fn, ": '", images_path, "' has wrong dims: it holds 0 images");
  if (rows == 0 || cols == 0)
    fail(MIXP_ERR_CORRUPT, fn, ": '", images_path, "' has wrong dims: images of ", rows, "x", cols,
         " pixels (both must be positive)");
  uint64_t pixels = uint64_t(n) * rows * cols;
  if (uint64_t(rows) * cols > kMaxBytes || pixels > kMaxBytes)
    fail(MIXP_ERR_CORRUPT, fn, ": '", images_path, "' has wrong dims: ", n, " images of ", rows,
         "x", cols, " pixels exceed the ", kMaxBytes, "-byte limit");

  IdxFile labels(labels_path, fn);
  check_magic(labels, kLabelsMagic, "idx1-ubyte label", fn);
  uint32_t nl = labels.read_u32("the label count");
  if (nl != n)
    fail(MIXP_ERR_CORRUPT, fn, ": count mismatch: '", images_path, "' holds ", n, " images but '",
         labels_path, "' holds ", nl, " labels");

  images.check_expansion(pixels, "pixels");
  labels.check_expansion(n, "labels");
  auto d = std::make_shared<DatasetData>();
  std::vector<uint8_t> raw_labels;
  labels.read_payload(raw_labels, n, "labels");
  images.read_payload(d->samples, pixels, "pixels");

  d->labels.assign(raw_labels.begin(), raw_labels.end());
  d->num_classes = int64_t(*std::max_element(raw_labels.begin(), raw_labels.end())) + 1;
  d->sample_shape = Shape{1, int64_t(rows), int64_t(cols)};
  return d;
}

DatasetPtr load_fashion_mnist(const std::string &dir, bool train, const char *fn) {
  const char *prefix = train ? "train" : "t10k";
  auto find = [&](const char *kind) {
    std::string base = dir;
    if (!base.empty() && base.back() != '/') base += '/';
    base += std::string(prefix) + "-" + kind;
    std::error_code ec;
    for (const std::string &p : {base + ".gz", base})
      if (std::filesystem::is_regular_file(p, ec)) return p;
    fail(MIXP_ERR_IO, fn, ": no ", prefix, "-", kind, "[.gz] in '", dir,
         "'; the Fashion-MNIST files come with Debian's dataset package: "
         "apt-get install dataset-fashion-mnist");
  };
  std::string images = find("images-idx3-ubyte");
  std::string labels = find("labels-idx1-ubyte");
  return load_idx(images, labels, fn);
}

}  // namespace mixp
