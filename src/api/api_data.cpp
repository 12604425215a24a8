// C ABI shims of the datasets and loaders group.
#include "api/api_common.hpp"
#include "api/options_init.hpp"
#include "core/options.hpp"
#include "data/dataset.hpp"
#include "data/loader.hpp"
#include "ops/profile.hpp"
#include "mixp/mixp.h"

namespace {

constexpr const char *kFashionMnistDir = "/usr/share/datasets/fashion-mnist";


}  // namespace

extern "C" {

mixp_status mixp_dataset_idx_open(mixp_session *session, const char *images_path,
                                  const char *labels_path, mixp_dataset **out) {
  const char *fn = "mixp_dataset_idx_open";
  return mixp::guard(fn, [&] {
    mixp::Session *s = mixp::check_session(session, fn);
    if (!images_path) mixp::fail(MIXP_ERR_INVALID_ARGUMENT, fn, ": images_path is NULL");
    if (!labels_path) mixp::fail(MIXP_ERR_INVALID_ARGUMENT, fn, ": labels_path is NULL");
    mixp::check_out(out, fn);
    *out = new mixp_dataset(s, mixp::load_idx(images_path, labels_path, fn));
  });
}

mixp_status mixp_dataset_fashion_mnist(mixp_session *session, const char *dir, int train,
                                       mixp_dataset **out) {
  const char *fn = "mixp_dataset_fashion_mnist";
  return mixp::guard(fn, [&] {
    mixp::Session *s = mixp::check_session(session, fn);
    if (train != 0 && train != 1)
      mixp::fail(MIXP_ERR_INVALID_ARGUMENT, fn, ": train must be 1 (training split) or 0 (test split), got ",
                 train);
    mixp::check_out(out, fn);
    *out = new mixp_dataset(s, mixp::load_fashion_mnist(dir ? dir : kFashionMnistDir, train == 1, fn));
  });
}

mixp_status mixp_synthetic_options_init_sized(mixp_synthetic_options *options, size_t size) {
  static const mixp_synthetic_options defaults =
      mixp::defaults_of<mixp_synthetic_options>([](mixp_synthetic_options &d) {
        d.struct_size = sizeof d;
        d.num_samples = 4096;
        d.channels = 1;
        d.height = 28;
        d.width = 28;
        d.num_classes = 10;
        d.seed = 1;
        d.noise = 0.35;
      });
  return mixp::init_options_sized(options, size, defaults, "mixp_synthetic_options_init_sized");
}

mixp_status mixp_dataset_synthetic(mixp_session *session, const mixp_synthetic_options *options,
                                   mixp_dataset **out) {
  const char *fn = "mixp_dataset_synthetic";
  return mixp::guard(fn, [&] {
    mixp::Session *s = mixp::check_session(session, fn);
    mixp_synthetic_options o =
        mixp::read_options(options, mixp_synthetic_options_init, fn, "mixp_synthetic_options_init");
    mixp::check_synthetic_options(o, fn);
    mixp::check_out(out, fn);
    *out = new mixp_dataset(s, mixp::make_synthetic(s, o));
  });
}

void mixp_dataset_destroy(mixp_dataset *dataset) {
  // A pointer that is not a live dataset is ignored rather than freed twice.
  if (dataset && dataset->magic == mixp_dataset::kMagic) delete dataset;
}

int64_t mixp_dataset_size(const mixp_dataset *dataset) {
  return mixp::guard_value<int64_t>("mixp_dataset_size", -1, [&] {
    return mixp::check_dataset(dataset, "mixp_dataset_size")->data->size();
  });
}

int64_t mixp_dataset_num_classes(const mixp_dataset *dataset) {
  return mixp::guard_value<int64_t>("mixp_dataset_num_classes", -1, [&] {
    return mixp::check_dataset(dataset, "mixp_dataset_num_classes")->data->num_classes;
  });
}

mixp_status mixp_dataset_sample_shape(const mixp_dataset *dataset, int64_t *shape, int *ndim) {
  const char *fn = "mixp_dataset_sample_shape";
  return mixp::guard(fn, [&] {
    mixp::Dataset *d = mixp::check_dataset(dataset, fn);
    mixp::check_out(shape, fn, "shape");
    mixp::check_out(ndim, fn, "ndim");
    const mixp::Shape &ss = d->data->sample_shape;
    for (int i = 0; i < ss.ndim; ++i) shape[i] = ss[i];
    *ndim = ss.ndim;
  });
}

mixp_status mixp_loader_options_init_sized(mixp_loader_options *options, size_t size) {
  static const mixp_loader_options defaults = mixp::defaults_of<mixp_loader_options>([](mixp_loader_options &d) {
    d.struct_size = sizeof d;
    d.batch_size = 64;
    d.shuffle = 1;
    d.drop_last = 0;
    d.seed = 0;
    d.dtype = MIXP_F32;
    d.scale = 1.0 / 255.0;
    d.mean = 0.0;
    d.std = 1.0;
    d.shard_index = 0;
    d.shard_count = 1;
  });
  return mixp::init_options_sized(options, size, defaults, "mixp_loader_options_init_sized");
}

mixp_status mixp_loader_create(mixp_dataset *dataset, const mixp_loader_options *options,
                               mixp_loader **out) {
  const char *fn = "mixp_loader_create";
  return mixp::guard(fn, [&] {
    mixp::Dataset *d = mixp::check_dataset(dataset, fn);
    mixp_loader_options o =
        mixp::read_options(options, mixp_loader_options_init, fn, "mixp_loader_options_init");
    mixp::check_loader_options(o, fn);
    mixp::check_out(out, fn);
    mixp::check_session(d->session.get(), fn, "the dataset's session");
    mixp::check_loader_fits(o, d->data->size(), fn);
    *out = new mixp_loader(d->session, d->data, o);
  });
}

void mixp_loader_destroy(mixp_loader *loader) {
  if (loader && loader->magic == mixp_loader::kMagic) delete loader;
}

mixp_status mixp_loader_next(mixp_loader *loader, mixp_tensor **inputs, mixp_tensor **labels) {
  const char *fn = "mixp_loader_next";
  bool got = false;
  mixp_status st = mixp::guard(fn, [&] {
    mixp::Loader *l = mixp::check_loader(loader, fn);
    mixp::check_out(inputs, fn, "inputs");
    mixp::check_out(labels, fn, "labels");
    mixp::TensorPtr x, y;
    mixp::ProfileScope profiled(l->session.get(), "loader_next");
    got = l->next(&x, &y);
    if (got) {
      mixp::give(inputs, std::move(x));
      mixp::give(labels, std::move(y));
    }
  });
  if (st != MIXP_OK) return st;
  return got ? MIXP_OK : MIXP_DONE;
}

int64_t mixp_loader_num_batches(const mixp_loader *loader) {
  return mixp::guard_value<int64_t>("mixp_loader_num_batches", -1, [&] {
    return mixp::check_loader(loader, "mixp_loader_num_batches")->num_batches();
  });
}

int64_t mixp_loader_epoch(const mixp_loader *loader) {
  return mixp::guard_value<int64_t>("mixp_loader_epoch", -1, [&] {
    return mixp::check_loader(loader, "mixp_loader_epoch")->epoch;
  });
}

}  // extern "C"
