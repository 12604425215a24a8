#include "core/tensor.hpp"

#include "backend/backend.hpp"
#include "core/error.hpp"

namespace mixp {

Storage::~Storage() {
  if (owned) {
    if (data) {
      // A captured graph may own the block (and free it when destroyed).
      if (!session->graphs.release(data, nbytes ? nbytes : 1)) session->backend->deallocate(data, nbytes);
      session->note_free(nbytes);
    }
  } else if (on_release) {
    if (data) session->graphs.release(data, nbytes ? nbytes : 1);  // borrowed: never a graph's block
    on_release(release_user);
  }
}

}  // namespace mixp

bool mixp_tensor::is_contiguous() const noexcept {
  int64_t expected = 1;
  for (int i = ndim - 1; i >= 0; --i) {
    if (shape[i] == 1) continue;
    if (strides[i] != expected) return false;
    expected *= shape[i];
  }
  return true;
}

namespace mixp {

Shape shape_of(const Tensor &t) { return Shape(t.shape, t.ndim); }

View view_of(const Tensor &t) noexcept {
  View v;
  v.data = t.storage ? t.data() : nullptr;
  v.dtype = t.dtype;
  v.ndim = t.ndim;
  for (int i = 0; i < t.ndim; ++i) {
    v.shape[i] = t.shape[i];
    v.strides[i] = t.strides[i];
  }
  return v;
}

Shape check_shape(const int64_t *shape, int ndim, const char *fn, const char *arg) {
  if (ndim < 0 || ndim > MIXP_MAX_DIMS)
    fail(MIXP_ERR_INVALID_ARGUMENT, fn, ": ndim must be in [0, ", MIXP_MAX_DIMS, "], got ", ndim);
  if (ndim > 0 && !shape) fail(MIXP_ERR_INVALID_ARGUMENT, fn, ": ", arg, " is NULL but ndim is ", ndim);
  Shape s(shape, ndim);
  for (int i = 0; i < ndim; ++i)
    if (shape[i] < 0)
      fail(MIXP_ERR_INVALID_ARGUMENT, fn, ": ", arg, "[", i, "] is negative (", shape[i], ")");
  size_numel(shape, ndim, fn, arg);
  return s;
}

Tensor *check_tensor(const mixp_tensor *t, const char *fn, const char *arg) {
  if (!t) fail(MIXP_ERR_INVALID_ARGUMENT, fn, ": ", arg, " is NULL");
  if (t->magic != mixp_tensor::kMagic)
    fail(MIXP_ERR_INVALID_ARGUMENT, fn, ": ", arg, " is not a valid mixp_tensor (released?)");
  return const_cast<Tensor *>(t);
}

int wrap_dim(int dim, int ndim, const char *fn, const char *arg) {
  if (dim < -ndim || dim >= ndim || (ndim == 0))
    fail(MIXP_ERR_INVALID_ARGUMENT, fn, ": ", arg, " ", dim, " is out of range for a tensor with ",
         ndim, " dimension", ndim == 1 ? "" : "s");
  return dim < 0 ? dim + ndim : dim;
}

void contiguous_strides(const Shape &shape, int64_t *strides) noexcept {
  int64_t st = 1;
  for (int i = shape.ndim - 1; i >= 0; --i) {
    strides[i] = st;
    st *= shape.d[i] > 0 ? shape.d[i] : 1;
  }
}

TensorPtr empty(Session *s, DType dtype, const Shape &shape) {
  const size_t nbytes = size_bytes(size_numel(shape.d, shape.ndim, nullptr, "a tensor of shape"), dtype,
                                   nullptr, "a tensor");
  auto storage = std::make_shared<Storage>();
  storage->session = SessionRef::share(s);
  // Allocate at least one byte so every storage has a distinct address. The
  // byte count is set once the memory is there: a storage whose allocation
  // failed gives nothing back to the statistics.
  storage->data = s->backend->allocate(nbytes ? nbytes : 1);
  storage->nbytes = nbytes;
  s->note_alloc(nbytes);
  return wrap_storage(s, dtype, shape, std::move(storage));
}

TensorPtr empty_in_order_of(Session *s, DType dtype, const Tensor &like) {
  TensorPtr t = empty(s, dtype, shape_of(like));
  dense_strides_in_order(view_of(like), t->strides);
  return t;
}

TensorPtr wrap_storage(Session *s, DType dtype, const Shape &shape, std::shared_ptr<Storage> storage) {
  TensorPtr t = TensorPtr::adopt(new mixp_tensor());
  t->session = SessionRef::share(s);
  t->dtype = dtype;
  t->ndim = shape.ndim;
  for (int i = 0; i < shape.ndim; ++i) t->shape[i] = shape.d[i];
  contiguous_strides(shape, t->strides);
  t->storage = std::move(storage);
  return t;
}

TensorPtr zeros(Session *s, DType dtype, const Shape &shape) { return full(s, dtype, shape, 0.0); }

TensorPtr full(Session *s, DType dtype, const Shape &shape, double value) {
  TensorPtr t = empty(s, dtype, shape);
  if (t->numel() > 0) s->backend->fill(view_of(*t), value);
  return t;
}

TensorPtr make_view(const Tensor &base, const Shape &shape, const int64_t *strides, int64_t offset) {
  TensorPtr t = TensorPtr::adopt(new mixp_tensor());
  t->session = base.session;
  t->dtype = base.dtype;
  t->ndim = shape.ndim;
  for (int i = 0; i < shape.ndim; ++i) {
    t->shape[i] = shape.d[i];
    t->strides[i] = strides[i];
  }
  t->offset = offset;
  t->storage = base.storage;
  t->is_view = true;
  return t;
}

TensorPtr detach(const Tensor &t) {
  TensorPtr d = make_view(t, shape_of(t), t.strides, t.offset);
  d->is_view = t.is_view;
  return d;
}

}  // namespace mixp
