// C ABI shims of the character-level text dataset, its vocabulary, and
// dataset subsets.
#include <cstring>

#include "api/api_common.hpp"
#include "data/dataset.hpp"
#include "mixp/mixp.h"

extern "C" {

mixp_status mixp_dataset_text(mixp_session *session, const char *path, int64_t block_size,
                              mixp_dataset **out) {
  const char *fn = "mixp_dataset_text";
  return mixp::guard(fn, [&] {
    mixp::Session *s = mixp::check_session(session, fn);
    if (!path) mixp::fail(MIXP_ERR_INVALID_ARGUMENT, fn, ": path is NULL");
    if (block_size < 1) mixp::fail(MIXP_ERR_INVALID_ARGUMENT, fn, ": block_size must be >= 1, got ", block_size);
    mixp::check_out(out, fn);
    *out = new mixp_dataset(s, mixp::load_text(path, block_size, fn));
  });
}

mixp_status mixp_dataset_vocab(const mixp_dataset *dataset, unsigned char *bytes, int capacity,
                               int *size) {
  const char *fn = "mixp_dataset_vocab";
  return mixp::guard(fn, [&] {
    const mixp::Dataset *d = mixp::check_dataset(dataset, fn);
    if (!d->data->is_text())
      mixp::fail(MIXP_ERR_INVALID_ARGUMENT, fn, ": dataset is not a text dataset (it has no vocabulary)");
    mixp::check_out(size, fn, "size");
    const int n = int(d->data->vocab.size());
    if (!bytes) mixp::fail(MIXP_ERR_INVALID_ARGUMENT, fn, ": bytes is NULL");
    if (capacity < n)
      mixp::fail(MIXP_ERR_INVALID_ARGUMENT, fn, ": capacity ", capacity, " is smaller than the vocabulary (",
                 n, " tokens; 256 always fits)");
    std::memcpy(bytes, d->data->vocab.data(), size_t(n));
    *size = n;
  });
}

mixp_status mixp_dataset_subset(const mixp_dataset *dataset, int64_t start, int64_t count,
                                mixp_dataset **out) {
  const char *fn = "mixp_dataset_subset";
  return mixp::guard(fn, [&] {
    const mixp::Dataset *d = mixp::check_dataset(dataset, fn);
    mixp::Session *s = mixp::check_session(d->session.get(), fn, "the dataset's session");
    const int64_t n = d->data->size();
    if (start < 0 || start >= n)
      mixp::fail(MIXP_ERR_INVALID_ARGUMENT, fn, ": start ", start, " is outside [0, ", n, ")");
    if (count < 1 || count > n - start)
      mixp::fail(MIXP_ERR_INVALID_ARGUMENT, fn, ": count ", count, " must be in [1, ", n - start,
                 "] for start ", start, " of ", n, " samples");
    mixp::check_out(out, fn);
    *out = new mixp_dataset(s, mixp::subset(*d->data, start, count));
  });
}

}  // extern "C"
