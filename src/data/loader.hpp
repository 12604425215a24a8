// The mini-batch loader: walks a dataset in a per-epoch order (a Fisher-Yates
// shuffle keyed by (seed, epoch), so epoch e's order does not depend on how
// many epochs came before), normalises pixels through a 256-entry table in
// the output dtype, and hands out [B, C, H, W] input and I64 [B] label tensors.
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

#include "core/options.hpp"
#include "data/dataset.hpp"

namespace mixp {

// The length of the global batch that starts at sample `pos` of an epoch of
// n samples, with `shards` shards of batch_size b (a global batch is
// shards * b samples; the last one may be shorter, and a remainder shorter
// than `shards` joins the batch before it); 0 when the epoch is over.
int64_t global_batch_length(int64_t n, int64_t b, int shards, bool drop_last, int64_t pos) noexcept;

// The sample order of one epoch: a permutation of [0, n) (identity when
// !shuffle). Pure function of its arguments.
std::vector<int64_t> epoch_order(int64_t n, bool shuffle, uint64_t seed, int64_t epoch);

// Fails with MIXP_ERR_INVALID_ARGUMENT (naming fn and the field) unless the
// options are usable.
void check_loader_options(const mixp_loader_options &opts, const char *fn);
// ... and for a dataset of n samples (sharding needs a sample per shard).
void check_loader_fits(const mixp_loader_options &opts, int64_t n, const char *fn);

}  // namespace mixp

struct mixp_loader {
  static constexpr uint32_t kMagic = 0x4c4f4144u;  // "LOAD"
  uint32_t magic = kMagic;
  mixp::SessionRef session;
  mixp::DatasetPtr data;
  mixp_loader_options opts{};

  int64_t epoch = 0;
  int64_t pos = 0;             // next position in `order`
  bool epoch_done = false;     // MIXP_DONE was returned for `epoch`
  std::vector<int64_t> order;  // of the current epoch
  // table[p] holds ((p * scale) - mean) / std for pixel value p, already
  // rounded once to the output dtype (up to 8 bytes per entry).
  unsigned char table[256 * 8] = {};

  mixp_loader(mixp::SessionRef s, mixp::DatasetPtr d, const mixp_loader_options &o);
  ~mixp_loader() { magic = 0; }

  int64_t num_batches() const noexcept;
  // The next batch; false (outputs untouched) at the end of the epoch.
  // Text datasets give I64 token windows [B, T] and their targets [B, T].
  bool next(mixp::TensorPtr *inputs, mixp::TensorPtr *labels);

 private:
  // Images: normalised pixels [B, C, H, W] and I64 labels [B] of the
  // samples order_p[0, b).
  void gather_images(mixp::Session &s, const int64_t *order_p, int64_t b, mixp::TensorPtr *x,
                     mixp::TensorPtr *y) const;
};

namespace mixp {

using Loader = mixp_loader;

// Validates a loader handle from the C API.
Loader *check_loader(const mixp_loader *l, const char *fn, const char *arg = "loader");

}  // namespace mixp
