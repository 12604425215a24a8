// The tensor: shape/strides/offset over a shared storage, plus autograd
// metadata. mixp_tensor is the C handle and the implementation at once.
#pragma once
#include <atomic>
#include <cstdint>
#include <memory>
#include <vector>

#include "core/dtype.hpp"
#include "core/refcount.hpp"
#include "core/session.hpp"
#include "core/sizes.hpp"

namespace mixp {
struct Node;

// A block of device memory owned by (or borrowed into) a session.
struct Storage {
  SessionRef session;
  void *data = nullptr;
  size_t nbytes = 0;
  bool owned = true;             // freed through the backend when dropped
  mixp_release_fn on_release = nullptr;  // for borrowed host memory
  void *release_user = nullptr;
  ~Storage();
};
}  // namespace mixp

struct mixp_tensor {
  static constexpr uint32_t kMagic = 0x54454e53u;  // "TENS"
  uint32_t magic = kMagic;
  std::atomic<int> refs{1};

  mixp::SessionRef session;
  mixp::DType dtype = MIXP_F32;
  int ndim = 0;
  int64_t shape[MIXP_MAX_DIMS] = {};
  int64_t strides[MIXP_MAX_DIMS] = {};  // in elements
  int64_t offset = 0;                   // in elements, into storage
  std::shared_ptr<mixp::Storage> storage;
  bool is_view = false;  // shares storage with another tensor it was derived from

  // Autograd.
  bool requires_grad = false;
  mixp::Ref<mixp_tensor> grad;
  // The dtype .grad is kept in: the tensor's own dtype, or F32 for half
  // parameters decorated with master_grad (Paddle's O2 master_grad).
  mixp::DType grad_dtype = MIXP_F32;
  bool grad_dtype_set = false;
  std::shared_ptr<mixp::Node> grad_fn;  // null for leaves
  int output_nr = 0;
  // Set on values made inside a checkpoint region: (region serial << 32) |
  // (tape slot + 1), so the tape refers to them without holding them.
  uint64_t checkpoint_tag = 0;

  ~mixp_tensor() { magic = 0; }

  // Every tensor's shape was checked against the size limits when it was
  // made (core/sizes.hpp), so the product cannot overflow.
  int64_t numel() const noexcept {
    int64_t n = 1;
    for (int i = 0; i < ndim; ++i) n *= shape[i];
    return n;
  }
  bool is_contiguous() const noexcept;
  bool is_leaf() const noexcept { return !grad_fn; }
  size_t elem_size() const noexcept { return mixp::dtype_size(dtype); }
  // Pointer to the first element.
  void *data() const noexcept {
    return static_cast<char *>(storage->data) + offset * int64_t(elem_size());
  }
  template <class T>
  T *data_as() const noexcept {
    return static_cast<T *>(data());
  }
};

namespace mixp {

using Tensor = mixp_tensor;

template <>
struct RefTraits<mixp_tensor> {
  static void inc(mixp_tensor *t) noexcept { t->refs.fetch_add(1, std::memory_order_relaxed); }
  static void dec(mixp_tensor *t) noexcept {
    if (t->refs.fetch_sub(1, std::memory_order_acq_rel) == 1) delete t;
  }
};
using TensorPtr = Ref<mixp_tensor>;

// A shape as a small value type (for internal APIs).
struct Shape {
  int ndim = 0;
  int64_t d[MIXP_MAX_DIMS] = {};
  Shape() = default;
  Shape(std::initializer_list<int64_t> l) {
    for (int64_t v : l) d[ndim++] = v;
  }
  Shape(const int64_t *p, int n) : ndim(n) {
    for (int i = 0; i < n; ++i) d[i] = p[i];
  }
  // A Shape may be a request not yet checked (an op's computed output):
  // the product saturates at INT64_MAX instead of wrapping, and empty()
  // refuses such shapes with the size limits of core/sizes.hpp.
  int64_t numel() const noexcept {
    int64_t n = 1;
    bool over = false;
    for (int i = 0; i < ndim; ++i) {
      if (d[i] == 0) return 0;
      over = over || !mul_fits(n, d[i], &n);
    }
    return over ? INT64_MAX : n;
  }
  int64_t &operator[](int i) noexcept { return d[i]; }
  int64_t operator[](int i) const noexcept { return d[i]; }
  bool operator==(const Shape &o) const noexcept {
    if (ndim != o.ndim) return false;
    for (int i = 0; i < ndim; ++i)
      if (d[i] != o.d[i]) return false;
    return true;
  }
  bool operator!=(const Shape &o) const noexcept { return !(*this == o); }
};
Shape shape_of(const Tensor &t);
std::string shape_str(const Shape &s);
inline std::string shape_str(const Tensor &t) { return shape_str(shape_of(t)); }

// Validates a shape passed through the C API (ndim range, NULL, negatives).
Shape check_shape(const int64_t *shape, int ndim, const char *fn, const char *arg = "shape");
// Validates a tensor handle from the C API and returns it (non-const: the
// library mutates autograd metadata behind const handles, like PyTorch).
Tensor *check_tensor(const mixp_tensor *t, const char *fn, const char *arg);
// Normalises a possibly negative dim to [0, ndim); fails naming fn/arg.
int wrap_dim(int dim, int ndim, const char *fn, const char *arg = "dim");

// Allocates an uninitialised contiguous tensor. Fails with
// MIXP_ERR_INVALID_ARGUMENT for a shape beyond the size limits (a negative
// extent, more than 2^62 elements, more than PTRDIFF_MAX bytes) and with
// MIXP_ERR_OUT_OF_MEMORY when the backend cannot allocate it.
TensorPtr empty(Session *s, DType dtype, const Shape &shape);
// Like empty, with like's shape and its dimensions laid out densely in the
// order of like's strides (dense_strides_in_order, backend/view.hpp).
TensorPtr empty_in_order_of(Session *s, DType dtype, const Tensor &like);
// A contiguous tensor header over an existing storage.
TensorPtr wrap_storage(Session *s, DType dtype, const Shape &shape, std::shared_ptr<Storage> storage);
// Zero-filled contiguous tensor.
TensorPtr zeros(Session *s, DType dtype, const Shape &shape);
// Filled contiguous tensor.
TensorPtr full(Session *s, DType dtype, const Shape &shape, double value);
// A new tensor header over the same storage with the given geometry (a view).
TensorPtr make_view(const Tensor &base, const Shape &shape, const int64_t *strides, int64_t offset);
// Same storage and geometry, no autograd history.
TensorPtr detach(const Tensor &t);
// Fills `strides` with row-major strides for `shape`.
void contiguous_strides(const Shape &shape, int64_t *strides) noexcept;

}  // namespace mixp
