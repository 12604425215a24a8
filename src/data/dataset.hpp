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

  // Character-level text (mixp_dataset_text) when block_size > 0: `samples`
  // holds the whole text as token ids (one byte each, an index into
  // `vocab`), `labels` is empty, sample_shape is {block_size}, num_classes
  // the vocabulary size, and sample i is the window samples[i, i + T) with
  // the next-token targets samples[i + 1, i + T + 1).
  int64_t block_size = 0;
  std::vector<uint8_t> vocab;  // vocab[id] is the byte token `id` stands for

  bool is_text() const noexcept { return block_size > 0; }
  int64_t size() const noexcept {
    return is_text() ? int64_t(samples.size()) - block_size : int64_t(labels.size());
  }
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

// Reads any file as character-level text (data/text.cpp): MIXP_ERR_IO when
// it cannot be read, MIXP_ERR_INVALID_ARGUMENT when it has no more than
// block_size bytes.
DatasetPtr load_text(const std::string &path, int64_t block_size, const char *fn);

// Samples [start, start + count) of `d` as a new dataset (text: the windows
// starting there, sharing the vocabulary). The range must be valid.
DatasetPtr subset(const DatasetData &d, int64_t start, int64_t count);

// Fails with MIXP_ERR_INVALID_ARGUMENT (naming fn and the field) unless the
// options are usable.
void check_synthetic_options(const mixp_synthetic_options &opts, const char *fn);

}  // namespace mixp

struct mixp_dataset {
  static constexpr uint32_t kMagic = 0x44415441u;  // "DATA"
  uint32_t magic = kMagic;
  mixp::SessionRef session;
  mixp::DatasetPtr data;

  mixp_dataset(mixp::Session *s, mixp::DatasetPtr d) : session(mixp::SessionRef::share(s)), data(std::move(d)) {}
  ~mixp_dataset() { magic = 0; }
};

namespace mixp {

using Dataset = mixp_dataset;

// Validates a dataset handle from the C API.
Dataset *check_dataset(const mixp_dataset *d, const char *fn, const char *arg = "dataset");

}  // namespace mixp
