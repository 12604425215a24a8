// Mini-batch loading. Pixels are U8, so the whole normalisation
// ((p * scale) - mean) / std collapses into a 256-entry table computed once
// in double and rounded once to the output dtype: a batch is a gather plus a
// table lookup, exact for every dtype, then one host-to-device copy.
#include "data/loader.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "backend/backend.hpp"
#include "core/error.hpp"
#include "core/philox.hpp"

namespace mixp {
namespace {

constexpr uint64_t kShuffleKey = 0x73687566666c65ULL;  // "shuffle": keeps it apart from other users of the seed

}  // namespace

std::vector<int64_t> epoch_order(int64_t n, bool shuffle, uint64_t seed, int64_t epoch) {
  std::vector<int64_t> order(size_t(std::max<int64_t>(n, 0)));
  for (int64_t i = 0; i < n; ++i) order[size_t(i)] = i;
  if (!shuffle) return order;
  // Fisher-Yates, draw t from the Philox stream (seed, epoch): each block
  // yields two 64-bit draws, mapped to [0, i] by a multiply-shift, whose bias
  // (< i / 2^64) is far below anything a training run can notice.
  const uint64_t key = seed ^ kShuffleKey;
  for (int64_t i = n - 1, t = 0; i > 0; --i, ++t) {
    Philox4 r = philox4x32_10(uint64_t(t) / 2, uint64_t(epoch), key);
    int w = int(t % 2) * 2;
    uint64_t u = (uint64_t(r.v[w]) << 32) | r.v[w + 1];
    auto j = int64_t((static_cast<unsigned __int128>(u) * uint64_t(i + 1)) >> 64);
    std::swap(order[size_t(i)], order[size_t(j)]);
  }
  return order;
}

int64_t global_batch_length(int64_t n, int64_t b, int shards, bool drop_last, int64_t pos) noexcept {
  const int64_t remaining = n - pos;
  if (remaining <= 0) return 0;
  const int64_t g = b > INT64_MAX / shards ? INT64_MAX : b * shards;
  if (remaining < g) return drop_last ? 0 : remaining;
  // A tail too short to give every shard a sample joins this batch.
  if (!drop_last && remaining - g > 0 && remaining - g < shards) return remaining;
  return g;
}

void check_loader_fits(const mixp_loader_options &o, int64_t n, const char *fn) {
  if (!o.drop_last && o.shard_count > 1 && n < o.shard_count)
    fail(MIXP_ERR_INVALID_ARGUMENT, fn, ": the dataset has ", n, " samples, fewer than options->shard_count = ",
         o.shard_count, " (every shard needs a sample in every batch; set drop_last)");
}

void check_loader_options(const mixp_loader_options &o, const char *fn) {
  if (o.shard_count < 1 || o.shard_count > (1 << 20))
    fail(MIXP_ERR_INVALID_ARGUMENT, fn, ": options->shard_count must be in [1, 2^20], got ", o.shard_count);
  if (o.shard_index < 0 || o.shard_index >= o.shard_count)
    fail(MIXP_ERR_INVALID_ARGUMENT, fn, ": options->shard_index must be in [0, shard_count = ",
         o.shard_count, "), got ", o.shard_index);
  if (o.batch_size < 1)
    fail(MIXP_ERR_INVALID_ARGUMENT, fn, ": options->batch_size must be >= 1, got ", o.batch_size);
  if (!dtype_valid(int(o.dtype)) || !is_float(o.dtype))
    fail(MIXP_ERR_INVALID_ARGUMENT, fn,
         ": options->dtype must be a float dtype (f32, f16, bf16 or f64), got ",
         dtype_valid(int(o.dtype)) ? dtype_name(o.dtype) : "an unknown dtype", " (",
         int(o.dtype), ")");
  if (!std::isfinite(o.scale))
    fail(MIXP_ERR_INVALID_ARGUMENT, fn, ": options->scale must be finite, got ", o.scale);
  if (!std::isfinite(o.mean))
    fail(MIXP_ERR_INVALID_ARGUMENT, fn, ": options->mean must be finite, got ", o.mean);
  if (!(o.std > 0.0) || !std::isfinite(o.std))
    fail(MIXP_ERR_INVALID_ARGUMENT, fn, ": options->std must be finite and > 0, got ", o.std);
}

Loader *check_loader(const mixp_loader *l, const char *fn, const char *arg) {
  if (!l) fail(MIXP_ERR_INVALID_ARGUMENT, fn, ": ", arg, " is NULL");
  if (l->magic != mixp_loader::kMagic)
    fail(MIXP_ERR_INVALID_ARGUMENT, fn, ": ", arg,
         " is not a live mixp_loader (destroyed, or not a loader handle)");
  return const_cast<Loader *>(l);
}

}  // namespace mixp

mixp_loader::mixp_loader(mixp::SessionRef s, mixp::DatasetPtr d, const mixp_loader_options &o)
    : session(std::move(s)), data(std::move(d)), opts(o) {
  const size_t es = mixp::dtype_size(opts.dtype);
  for (int p = 0; p < 256; ++p) {
    double x = (double(p) * opts.scale - opts.mean) / opts.std;
    unsigned char *dst = table + size_t(p) * es;
    switch (opts.dtype) {
      case MIXP_F64: std::memcpy(dst, &x, 8); break;
      case MIXP_F32: {
        float f = float(x);
        std::memcpy(dst, &f, 4);
        break;
      }
      case MIXP_F16: {
        uint16_t h = mixp::f64_to_f16_bits(x);
        std::memcpy(dst, &h, 2);
        break;
      }
      default: {
        uint16_t h = mixp::f64_to_bf16_bits(x);
        std::memcpy(dst, &h, 2);
        break;
      }
    }
  }
  order = mixp::epoch_order(data->size(), opts.shuffle != 0, opts.seed, 0);
}

int64_t mixp_loader::num_batches() const noexcept {
  const int64_t n = data->size(), b = opts.batch_size, w = opts.shard_count;
  const int64_t g = b > INT64_MAX / w ? INT64_MAX : b * w;
  const int64_t full = n / g, rem = n % g;
  // A remainder of fewer than w samples joins the last full batch.
  return opts.drop_last || rem == 0 || rem < w ? full : full + 1;
}

bool mixp_loader::next(mixp::TensorPtr *inputs, mixp::TensorPtr *labels) {
  using namespace mixp;
  Session *s = check_session(session.get(), "mixp_loader_next", "the loader's session");
  apply_threads(s);

  // Work on copies of the epoch state and commit only once both tensors
  // exist, so that a failure (out of memory) leaves the loader as it was.
  int64_t next_epoch = epoch, next_pos = pos;
  std::vector<int64_t> fresh;
  const std::vector<int64_t> *ord = &order;
  if (epoch_done) {
    ++next_epoch;
    next_pos = 0;
    fresh = epoch_order(data->size(), opts.shuffle != 0, opts.seed, next_epoch);
    ord = &fresh;
  }
  const int64_t global = global_batch_length(data->size(), opts.batch_size, opts.shard_count,
                                             opts.drop_last != 0, next_pos);
  if (global == 0) {
    if (epoch_done) order.swap(fresh);
    epoch = next_epoch;
    pos = next_pos;
    epoch_done = true;
    return false;
  }

  // This shard's contiguous part of the global batch.
  const int64_t w = opts.shard_count, r = opts.shard_index;
  const auto cut = [&](int64_t k) { return int64_t((__int128(global) * k) / w); };
  const int64_t b = cut(r + 1) - cut(r);
  const int64_t *order_p = ord->data() + next_pos + cut(r);
  TensorPtr x, y;
  if (data->is_text()) {
    // Token windows: x = tokens[i, i + T), y = tokens[i + 1, i + T + 1).
    const int64_t T = data->block_size;
    std::vector<int64_t> xbuf(size_t(b * T)), ybuf(size_t(b * T));
    const uint8_t *tok = data->samples.data();
    for (int64_t i = 0; i < b; ++i) {
      const uint8_t *w = tok + order_p[i];
      for (int64_t t = 0; t < T; ++t) {
        xbuf[size_t(i * T + t)] = w[t];
        ybuf[size_t(i * T + t)] = w[t + 1];
      }
    }
    x = empty(s, MIXP_I64, Shape{b, T});
    y = empty(s, MIXP_I64, Shape{b, T});
    s->backend->copy_from_host(x->data(), xbuf.data(), xbuf.size() * sizeof(int64_t));
    s->backend->copy_from_host(y->data(), ybuf.data(), ybuf.size() * sizeof(int64_t));
  } else {
    gather_images(*s, order_p, b, &x, &y);
  }

  if (epoch_done) order.swap(fresh);
  epoch = next_epoch;
  pos = next_pos + global;
  epoch_done = false;
  *inputs = std::move(x);
  *labels = std::move(y);
  return true;
}

void mixp_loader::gather_images(mixp::Session &ses, const int64_t *order_p, int64_t b,
                                mixp::TensorPtr *x_out, mixp::TensorPtr *y_out) const {
  using namespace mixp;
  Session *s = &ses;
  const int64_t numel = data->sample_numel();
  const size_t es = dtype_size(opts.dtype);
  Shape xs;
  xs.ndim = data->sample_shape.ndim + 1;
  xs[0] = b;
  for (int i = 0; i < data->sample_shape.ndim; ++i) xs[i + 1] = data->sample_shape[i];

  std::vector<unsigned char> xbuf(size_t(b * numel) * es);
  std::vector<int64_t> ybuf(static_cast<size_t>(b));
  const uint8_t *src = data->samples.data();
  const bool big = b * numel >= (int64_t(1) << 16);
#pragma omp parallel for schedule(static) if (big)
  for (int64_t i = 0; i < b; ++i) {
    const int64_t idx = order_p[i];
    ybuf[size_t(i)] = data->labels[size_t(idx)];
    const uint8_t *px = src + idx * numel;
    unsigned char *dst = xbuf.data() + size_t(i * numel) * es;
    switch (es) {
      case 8:
        for (int64_t k = 0; k < numel; ++k) std::memcpy(dst + 8 * k, table + 8 * px[k], 8);
        break;
      case 4:
        for (int64_t k = 0; k < numel; ++k) std::memcpy(dst + 4 * k, table + 4 * px[k], 4);
        break;
      default:
        for (int64_t k = 0; k < numel; ++k) std::memcpy(dst + 2 * k, table + 2 * px[k], 2);
        break;
    }
  }

  TensorPtr x = empty(s, opts.dtype, xs);
  TensorPtr y = empty(s, MIXP_I64, Shape{b});
  s->backend->copy_from_host(x->data(), xbuf.data(), xbuf.size());
  s->backend->copy_from_host(y->data(), ybuf.data(), ybuf.size() * sizeof(int64_t));
  *x_out = std::move(x);
  *y_out = std::move(y);
}
