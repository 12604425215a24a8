// The synthetic classification set: K class prototypes with pixels uniform in
// [0, 255]; sample i has a Philox-drawn label and is its class prototype plus
// Gaussian noise of standard deviation noise * 255, clamped and rounded to U8.
//
// The prototypes depend only on the sample geometry and the class count, not
// on the seed: the seed draws labels and noise. Datasets made with different
// seeds are therefore independent draws of one task, which is what a
// train/test split needs (mixp-train uses seed s for training and s + 1 for
// testing). Every value is a pure function of its index, so the data is the
// same for any thread count.
#include <algorithm>
#include <cmath>

#include "core/error.hpp"
#include "core/philox.hpp"
#include "data/dataset.hpp"

namespace mixp {
namespace {

// Distinct Philox counter_hi words keep the three streams apart.
constexpr uint64_t kProtoStream = 0x70726f746fULL;  // "proto"
constexpr uint64_t kLabelStream = 0x6c6162656cULL;  // "label"
constexpr uint64_t kNoiseStream = 0x6e6f697365ULL;  // "noise"
constexpr uint64_t kProtoKey = 0x6d69787073796eULL;  // fixed: see above
// Bounds a request to what a host could plausibly hold (256 GiB).
constexpr int64_t kMaxBytes = int64_t(1) << 38;

}  // namespace

void check_synthetic_options(const mixp_synthetic_options &o, const char *fn) {
  auto positive = [&](int64_t v, const char *field) {
    if (v < 1) fail(MIXP_ERR_INVALID_ARGUMENT, fn, ": options->", field, " must be >= 1, got ", v);
  };
  positive(o.num_samples, "num_samples");
  positive(o.channels, "channels");
  positive(o.height, "height");
  positive(o.width, "width");
  positive(o.num_classes, "num_classes");
  if (o.num_classes > (int64_t(1) << 31))
    fail(MIXP_ERR_INVALID_ARGUMENT, fn, ": options->num_classes must be <= 2^31, got ",
         o.num_classes);
  if (!(o.noise >= 0.0) || !std::isfinite(o.noise))
    fail(MIXP_ERR_INVALID_ARGUMENT, fn, ": options->noise must be finite and >= 0, got ", o.noise);
  // Checked in steps so that no product can overflow.
  int64_t bytes = o.num_samples;
  for (int64_t d : {o.channels, o.height, o.width}) {
    if (d > kMaxBytes / bytes)
      fail(MIXP_ERR_INVALID_ARGUMENT, fn, ": ", o.num_samples, " samples of ", o.channels, "x",
           o.height, "x", o.width, " exceed the ", kMaxBytes, "-byte limit");
    bytes *= d;
  }
  const int64_t numel = bytes / o.num_samples;
  if (o.num_classes > kMaxBytes / numel)
    fail(MIXP_ERR_INVALID_ARGUMENT, fn, ": ", o.num_classes, " class prototypes of ", o.channels,
         "x", o.height, "x", o.width, " exceed the ", kMaxBytes, "-byte limit");
}

DatasetPtr make_synthetic(const Session *s, const mixp_synthetic_options &o) {
  apply_threads(s);
  const int64_t n = o.num_samples, k = o.num_classes;
  const int64_t numel = o.channels * o.height * o.width;
  const uint64_t seed = o.seed;

  std::vector<float> protos(size_t(k * numel));
  const int64_t np = int64_t(protos.size());
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < np; ++i) {
    Philox4 r = philox4x32_10(uint64_t(i) / 4, kProtoStream, kProtoKey);
    protos[size_t(i)] = uniform_from_u32(r.v[i % 4]) * 255.0f;
  }

  auto d = std::make_shared<DatasetData>();
  d->labels.resize(size_t(n));
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < n; ++i) {
    Philox4 r = philox4x32_10(uint64_t(i) / 4, kLabelStream, seed);
    d->labels[size_t(i)] = int64_t((uint64_t(r.v[i % 4]) * uint64_t(k)) >> 32);
  }

  d->samples.resize(size_t(n * numel));
  const int64_t total = n * numel;
  const int64_t blocks = (total + 3) / 4;
  const double sigma = o.noise * 255.0;
  uint8_t *out = d->samples.data();
  const int64_t *labels = d->labels.data();
  const float *pr = protos.data();
#pragma omp parallel for schedule(static)
  for (int64_t b = 0; b < blocks; ++b) {
    // One Philox block gives two Box-Muller pairs, i.e. four normals.
    Philox4 r = philox4x32_10(uint64_t(b), kNoiseStream, seed);
    double z[4];
    for (int p = 0; p < 2; ++p) {
      double u1 = (double(r.v[2 * p]) + 1.0) / 4294967296.0;  // (0, 1]
      double u2 = double(r.v[2 * p + 1]) / 4294967296.0;
      double rad = std::sqrt(-2.0 * std::log(u1));
      double th = 6.283185307179586476925286766559 * u2;
      z[2 * p] = rad * std::cos(th);
      z[2 * p + 1] = rad * std::sin(th);
    }
    for (int j = 0; j < 4; ++j) {
      int64_t e = 4 * b + j;
      if (e >= total) break;
      int64_t sample = e / numel, pix = e % numel;
      double v = double(pr[labels[sample] * numel + pix]) + sigma * z[j];
      v = std::clamp(v, 0.0, 255.0);
      out[e] = uint8_t(std::floor(v + 0.5));
    }
  }

  d->sample_shape = Shape{o.channels, o.height, o.width};
  d->num_classes = k;
  return d;
}

}  // namespace mixp
