// Dataset handle validation (the parsers and generators live in idx.cpp and
// synthetic.cpp).
#include "data/dataset.hpp"

#include "core/error.hpp"

namespace mixp {

Dataset *check_dataset(const mixp_dataset *d, const char *fn, const char *arg) {
  if (!d) fail(MIXP_ERR_INVALID_ARGUMENT, fn, ": ", arg, " is NULL");
  if (d->magic != mixp_dataset::kMagic || !d->data)
    fail(MIXP_ERR_INVALID_ARGUMENT, fn, ": ", arg,
         " is not a live mixp_dataset (destroyed, or not a dataset handle)");
  return const_cast<Dataset *>(d);
}

}  // namespace mixp
