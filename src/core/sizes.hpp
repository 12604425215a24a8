// Sizes that cannot overflow: every element count, byte size and output
// extent mixp computes from caller-supplied numbers goes through these, so a
// huge or negative request is a clear error naming the function and the
// argument, never a wrapped product that allocates too little.
//
// The limits: a tensor holds at most 2^62 elements and PTRDIFF_MAX bytes
// (any larger request cannot be memory on any machine, and every product
// of two valid extents then still fits in int64).
#pragma once
#include <cstddef>
#include <cstdint>

#include "core/dtype.hpp"

namespace mixp {

inline constexpr int64_t kMaxElements = int64_t(1) << 62;

// a * b and a + b, false when the result does not fit in int64.
[[nodiscard]] inline bool mul_fits(int64_t a, int64_t b, int64_t *r) noexcept {
  return !__builtin_mul_overflow(a, b, r);
}
[[nodiscard]] inline bool add_fits(int64_t a, int64_t b, int64_t *r) noexcept {
  return !__builtin_add_overflow(a, b, r);
}

// a * b and a + b for non-negative sizes, failing with
// MIXP_ERR_INVALID_ARGUMENT "<fn>: <what> (a x b) is too large" when the
// result exceeds kMaxElements. Below the API (fn NULL or "") the message
// starts with `what`, and the public function that catches it adds its name.
int64_t size_mul(int64_t a, int64_t b, const char *fn, const char *what);
int64_t size_add(int64_t a, int64_t b, const char *fn, const char *what);

// The element count of `ndim` non-negative extents, failing (naming `what`,
// e.g. "the output") when it, or the product of the non-zero extents,
// exceeds kMaxElements: then no product of a tensor's extents overflows.
int64_t size_numel(const int64_t *dims, int ndim, const char *fn, const char *what);
// numel elements of dtype in bytes, failing beyond PTRDIFF_MAX.
size_t size_bytes(int64_t numel, DType dtype, const char *fn, const char *what);

// The number of positions of a window of `kernel` taps `dilation` apart
// sliding by `stride` over `in` elements padded by `pad` on both sides
// (convolution and pooling): (in + 2 pad - dilation (kernel - 1) - 1) /
// stride + 1. Fails with MIXP_ERR_INVALID_ARGUMENT when a term overflows
// and with MIXP_ERR_SHAPE when the window is larger than the padded input.
// All arguments must already be >= 0 (kernel, dilation, stride >= 1).
// With a single position any stride gives the same result, so `stride`
// is then lowered to the smallest such one: a backend never sees a huge one.
int64_t window_positions(int64_t in, int64_t pad, int64_t kernel, int64_t dilation, int64_t &stride,
                         const char *fn, const char *axis);

}  // namespace mixp
