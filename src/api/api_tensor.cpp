// Tensor creation, host transfer, queries and in-place copies.
#include <cmath>
#include <cstring>

#include "api/api_common.hpp"
#include "autograd/node.hpp"
#include "core/step_capture.hpp"
#include "ops/ops.hpp"

using namespace mixp;

namespace {

void check_nbytes(const char *fn, size_t nbytes, const Shape &shape, DType dtype) {
  const size_t expected = size_bytes(shape.numel(), dtype, fn, "the shape");
  if (nbytes != expected)
    fail(MIXP_ERR_INVALID_ARGUMENT, fn, ": nbytes is ", nbytes, " but shape ", shape_str(shape), " of ",
         dtype_name(dtype), " needs ", expected);
}

}  // namespace

extern "C" {

mixp_status mixp_tensor_from_host(mixp_session *session, const void *data, size_t nbytes, mixp_dtype dtype,
                                  const int64_t *shape, int ndim, mixp_tensor **out) {
  const char *fn = "mixp_tensor_from_host";
  return guard(fn, [&] {
    Session *s = check_session(session, fn);
    check_out(out, fn);
    check_dtype(dtype, fn);
    Shape sh = check_shape(shape, ndim, fn);
    check_nbytes(fn, nbytes, sh, dtype);
    if (!data && nbytes) fail(MIXP_ERR_INVALID_ARGUMENT, fn, ": data is NULL");
    TensorPtr t = empty(s, dtype, sh);
    if (nbytes) s->backend->copy_from_host(t->data(), data, nbytes);
    give(out, t);
  });
}

mixp_status mixp_tensor_borrow_host(mixp_session *session, void *data, size_t nbytes, mixp_dtype dtype,
                                    const int64_t *shape, int ndim, mixp_release_fn on_release,
                                    void *user_data, mixp_tensor **out) {
  const char *fn = "mixp_tensor_borrow_host";
  return guard(fn, [&] {
    Session *s = check_session(session, fn);
    check_out(out, fn);
    check_dtype(dtype, fn);
    Shape sh = check_shape(shape, ndim, fn);
    check_nbytes(fn, nbytes, sh, dtype);
    if (!data) fail(MIXP_ERR_INVALID_ARGUMENT, fn, ": data is NULL");
    if (reinterpret_cast<uintptr_t>(data) % dtype_size(dtype) != 0)
      fail(MIXP_ERR_INVALID_ARGUMENT, fn, ": data is not aligned to the ", dtype_size(dtype), "-byte size of ",
           dtype_name(dtype));
    if (s->device != "cpu")
      fail(MIXP_ERR_DEVICE, fn, ": host memory can only be borrowed by a cpu session, not ", s->device);
    auto storage = std::make_shared<Storage>();
    storage->session = SessionRef::share(s);
    storage->data = data;
    storage->nbytes = nbytes;
    storage->owned = false;
    // Set last: from here on the storage owns the duty to call on_release.
    storage->on_release = on_release;
    storage->release_user = user_data;
    give(out, wrap_storage(s, dtype, sh, std::move(storage)));
  });
}

mixp_status mixp_tensor_to_host(const mixp_tensor *tensor, void *dst, size_t nbytes) {
  const char *fn = "mixp_tensor_to_host";
  return guard(fn, [&] {
    Tensor *t = check_tensor(tensor, fn, "tensor");
    check_nbytes(fn, nbytes, shape_of(*t), t->dtype);
    if (!dst && nbytes) fail(MIXP_ERR_INVALID_ARGUMENT, fn, ": dst is NULL");
    if (!nbytes) return;
    TensorPtr c = share(t);
    if (!t->is_contiguous()) {
      apply_threads(t->session.get());
      c = clone(c);
    }
    t->session->backend->copy_to_host(dst, c->data(), nbytes);
  });
}

static mixp_status make_filled(const char *fn, mixp_session *session, mixp_dtype dtype, const int64_t *shape,
                               int ndim, double value, mixp_tensor **out) {
  return guard(fn, [&] {
    Session *s = check_session(session, fn);
    check_out(out, fn);
    check_dtype(dtype, fn);
    Shape sh = check_shape(shape, ndim, fn);
    apply_threads(s);
    give(out, full(s, dtype, sh, value));
  });
}

mixp_status mixp_tensor_zeros(mixp_session *s, mixp_dtype dtype, const int64_t *shape, int ndim,
                              mixp_tensor **out) {
  return make_filled("mixp_tensor_zeros", s, dtype, shape, ndim, 0.0, out);
}

mixp_status mixp_tensor_ones(mixp_session *s, mixp_dtype dtype, const int64_t *shape, int ndim,
                             mixp_tensor **out) {
  return make_filled("mixp_tensor_ones", s, dtype, shape, ndim, 1.0, out);
}

mixp_status mixp_tensor_full(mixp_session *s, mixp_dtype dtype, const int64_t *shape, int ndim, double value,
                             mixp_tensor **out) {
  return make_filled("mixp_tensor_full", s, dtype, shape, ndim, value, out);
}

mixp_status mixp_tensor_arange(mixp_session *session, mixp_dtype dtype, double start, double end, double step,
                               mixp_tensor **out) {
  const char *fn = "mixp_tensor_arange";
  return guard(fn, [&] {
    Session *s = check_session(session, fn);
    check_out(out, fn);
    check_dtype(dtype, fn);
    if (!std::isfinite(start) || !std::isfinite(end) || !std::isfinite(step))
      fail(MIXP_ERR_INVALID_ARGUMENT, fn, ": start, end and step must be finite");
    if (step == 0) fail(MIXP_ERR_INVALID_ARGUMENT, fn, ": step must not be 0");
    // Signs, not the product: (end - start) * step underflows to 0 for a
    // denormal step.
    if ((end > start && step < 0) || (end < start && step > 0))
      fail(MIXP_ERR_INVALID_ARGUMENT, fn, ": step ", step, " goes away from end (start ", start, ", end ", end, ")");
    const double count = std::ceil((end - start) / step);
    if (!(count >= 0) || count > double(int64_t(1) << 40))
      fail(MIXP_ERR_INVALID_ARGUMENT, fn, ": the range from ", start, " to ", end, " by ", step,
           " has too many elements (at most 2^40)");
    const int64_t n = int64_t(count);
    std::vector<double> v(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) v[size_t(i)] = start + double(i) * step;
    TensorPtr src = empty(s, MIXP_F64, Shape{n});
    // A captured step (mixp_graph) uploads the same values at every replay.
    if (n && s->capture) s->capture->upload_constant(src->data(), v.data(), size_t(n) * sizeof(double));
    else if (n) s->backend->copy_from_host(src->data(), v.data(), size_t(n) * sizeof(double));
    apply_threads(s);
    give(out, dtype == MIXP_F64 ? src : cast(src, dtype));
  });
}

static mixp_status make_random(const char *fn, bool normal, mixp_session *session, mixp_dtype dtype,
                               const int64_t *shape, int ndim, mixp_tensor **out) {
  return guard(fn, [&] {
    Session *s = check_session(session, fn);
    check_out(out, fn);
    check_dtype(dtype, fn);
    if (!is_float(dtype))
      fail(MIXP_ERR_DTYPE, fn, ": dtype must be a float type (f32, f64, f16, bf16), got ", dtype_name(dtype));
    Shape sh = check_shape(shape, ndim, fn);
    apply_threads(s);
    give(out, normal ? rand_normal(s, dtype, sh) : rand_uniform(s, dtype, sh));
  });
}

mixp_status mixp_tensor_rand(mixp_session *s, mixp_dtype dtype, const int64_t *shape, int ndim,
                             mixp_tensor **out) {
  return make_random("mixp_tensor_rand", false, s, dtype, shape, ndim, out);
}

mixp_status mixp_tensor_randn(mixp_session *s, mixp_dtype dtype, const int64_t *shape, int ndim,
                              mixp_tensor **out) {
  return make_random("mixp_tensor_randn", true, s, dtype, shape, ndim, out);
}

mixp_tensor *mixp_tensor_retain(mixp_tensor *t) {
  if (t) RefTraits<mixp_tensor>::inc(t);
  return t;
}

void mixp_tensor_release(mixp_tensor *t) {
  if (t && t->magic == mixp_tensor::kMagic) RefTraits<mixp_tensor>::dec(t);
}

mixp_dtype mixp_tensor_dtype(const mixp_tensor *t) {
  return guard_value("mixp_tensor_dtype", MIXP_F32, [&] { return check_tensor(t, "mixp_tensor_dtype", "tensor")->dtype; });
}

int mixp_tensor_ndim(const mixp_tensor *t) {
  return guard_value("mixp_tensor_ndim", -1, [&] { return check_tensor(t, "mixp_tensor_ndim", "tensor")->ndim; });
}

int64_t mixp_tensor_dim(const mixp_tensor *t, int dim) {
  return guard_value("mixp_tensor_dim", int64_t(-1), [&] {
    Tensor *x = check_tensor(t, "mixp_tensor_dim", "tensor");
    return x->shape[wrap_dim(dim, x->ndim, "mixp_tensor_dim")];
  });
}

int64_t mixp_tensor_stride(const mixp_tensor *t, int dim) {
  return guard_value("mixp_tensor_stride", int64_t(0), [&] {
    Tensor *x = check_tensor(t, "mixp_tensor_stride", "tensor");
    return x->strides[wrap_dim(dim, x->ndim, "mixp_tensor_stride")];
  });
}

mixp_status mixp_tensor_shape(const mixp_tensor *t, int64_t *shape, int capacity, int *ndim) {
  const char *fn = "mixp_tensor_shape";
  return guard(fn, [&] {
    Tensor *x = check_tensor(t, fn, "tensor");
    check_out(ndim, fn, "ndim");
    if (x->ndim > 0 && !shape) fail(MIXP_ERR_INVALID_ARGUMENT, fn, ": shape is NULL");
    if (capacity < x->ndim)
      fail(MIXP_ERR_INVALID_ARGUMENT, fn, ": capacity ", capacity, " is smaller than ndim ", x->ndim);
    for (int i = 0; i < x->ndim; ++i) shape[i] = x->shape[i];
    *ndim = x->ndim;
  });
}

int64_t mixp_tensor_numel(const mixp_tensor *t) {
  return guard_value("mixp_tensor_numel", int64_t(-1), [&] { return check_tensor(t, "mixp_tensor_numel", "tensor")->numel(); });
}

int mixp_tensor_is_contiguous(const mixp_tensor *t) {
  return guard_value("mixp_tensor_is_contiguous", 0,
                     [&] { return check_tensor(t, "mixp_tensor_is_contiguous", "tensor")->is_contiguous() ? 1 : 0; });
}

mixp_session *mixp_tensor_session(const mixp_tensor *t) {
  return guard_value("mixp_tensor_session", static_cast<mixp_session *>(nullptr),
                     [&] { return check_tensor(t, "mixp_tensor_session", "tensor")->session.get(); });
}

mixp_status mixp_tensor_item(const mixp_tensor *tensor, double *value) {
  const char *fn = "mixp_tensor_item";
  return guard(fn, [&] {
    Tensor *t = check_tensor(tensor, fn, "tensor");
    check_out(value, fn, "value");
    if (t->numel() != 1)
      fail(MIXP_ERR_SHAPE, fn, ": tensor has ", t->numel(), " elements (shape ", shape_str(*t), "), expected 1");
    alignas(8) unsigned char buf[8];
    t->session->backend->copy_to_host(buf, t->data(), t->elem_size());
    *value = element_to_double(buf, t->dtype);
  });
}

mixp_status mixp_tensor_copy_(mixp_tensor *dst, const mixp_tensor *src) {
  const char *fn = "mixp_tensor_copy_";
  return guard(fn, [&] {
    Tensor *d = check_tensor(dst, fn, "dst");
    Tensor *s = check_tensor(src, fn, "src");
    same_session(fn, {d, s});
    OpScope scope(OpId::copy_, d->session.get());
    scope.writes(*d);
    if (d->requires_grad && d->session->grad_enabled())
      fail(MIXP_ERR_STATE, fn, ": dst requires grad; an in-place copy would bypass autograd "
           "(wrap it in mixp_no_grad_begin/end, as optimizers do)");
    copy_into(*d, *s);
  });
}

}  // extern "C"
