// Datasets: an immutable block of U8 samples [N, C, H, W] plus I64 labels,
// held in host memory. The block sits behind a shared_ptr so that loaders
// keep it (and the session) alive after mixp_dataset_destroy().
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/session.hpp"
#include "core/tensor.hpp"
#include "mixp/mixp.h"

namespace mixp {

struct DatasetData {
  std::vector<uint8_t> samples;  // N * sample_numel bytes, sample after sample
  std::vector<int64_t> labels;   // N entries in [0, num_classes)
  Shape sample_shape;            // e.g. {1, 28, 28}
  int64_t num_classes = 0;

  int64_t size() const noexcept { return int64_t(labels.size()); }
  int64_t sample_numel() const noexcept { return sample_shape.numel(); }
};
using DatasetPtr = std::shared_ptr<const DatasetData>;

// Reads an idx3-ubyte image file and its idx1-ubyte label file (gzip or
// plain). Errors name `fn` and the file: MIXP_ERR_IO when a file cannot be
// opened or read, MIXP_ERR_CORRUPT when it is truncated or malformed.
DatasetPtr load_idx(const std::string &images_path, const std::string &labels_path,
                    const char *fn);

// The split `train` (or test) of the Fashion-MNIST layout found in `dir`.
DatasetPtr load_fashion_mnist(const std::string &dir, bool train, const char *fn);

// The synthetic classification set described at mixp_dataset_synthetic();
// `opts` must already be validated. Uses the session's thread count.
DatasetPtr make_synthetic(const Session *s, const mixp_synthetic_options &opts);

// Fails with MIXP_ERR_INVALID_ARGUMENT (naming fn and the field) unless the
// options are usable.
void check_synthetic_options(const mixp_synthetic_options &opts, const char *fn);

}  // namespace mixp

struct mixp_dataset {
  static constexpr uint32_t kMagic = 0x44415441u;  // "DATA"
  uint32_t magic = kMagic;
  mixp::SessionRef session;
  mixp::DatasetPtr data;

  ~mixp_dataset() { magic = 0; }
};

namespace mixp {

using Dataset = mixp_dataset;

// Validates a dataset handle from the C API.
Dataset *check_dataset(const mixp_dataset *d, const char *fn, const char *arg = "dataset");

}  // namespace mixp
