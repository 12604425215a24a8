// Parameter initialisation for layers and models, through the public API.
#include <cstring>
#include <string>
#include <vector>

#include "nn/api_call.hpp"

namespace mixp::nn {
namespace {

mixp_dtype work_dtype(mixp_dtype dtype) { return dtype == MIXP_F64 ? MIXP_F64 : MIXP_F32; }

TensorPtr to_dtype(TensorPtr t, mixp_dtype dtype) {
  if (mixp_tensor_dtype(t.get()) == dtype) return t;
  return call(mixp_cast, t.get(), dtype);
}

std::vector<int64_t> shape_vec(const TensorPtr &t) {
  std::vector<int64_t> shape(MIXP_MAX_DIMS);
  int nd = 0;
  check(mixp_tensor_shape(t.get(), shape.data(), MIXP_MAX_DIMS, &nd));
  shape.resize(size_t(nd));
  return shape;
}

// Copies `src` into the parameter without recording (the values change, the
// tensor object stays, so optimizers holding it see the new values).
void assign_(const TensorPtr &p, const TensorPtr &src) {
  NoGrad ng(mixp_tensor_session(p.get()));
  check(mixp_tensor_copy_(p.get(), src.get()));
}

}  // namespace

TensorPtr uniform_tensor(mixp_session *s, mixp_dtype dtype, const int64_t *shape, int ndim,
                         double bound) {
  NoGrad ng(s);
  TensorPtr u = call(mixp_tensor_rand, s, work_dtype(dtype), shape, ndim);
  u = call(mixp_mul_scalar, u.get(), 2.0 * bound);
  u = call(mixp_add_scalar, u.get(), -bound);
  return to_dtype(u, dtype);
}

TensorPtr normal_tensor(mixp_session *s, mixp_dtype dtype, const int64_t *shape, int ndim,
                        double std) {
  NoGrad ng(s);
  TensorPtr n = call(mixp_tensor_randn, s, work_dtype(dtype), shape, ndim);
  if (std != 1.0) n = call(mixp_mul_scalar, n.get(), std);
  return to_dtype(n, dtype);
}

TensorPtr full_tensor(mixp_session *s, mixp_dtype dtype, const int64_t *shape, int ndim,
                      double value) {
  return call(mixp_tensor_full, s, dtype, shape, ndim, value);
}

TensorPtr as_parameter(TensorPtr t) {
  check(mixp_tensor_set_requires_grad(t.get(), 1));
  return t;
}

void fill_normal_(const TensorPtr &p, double std) {
  std::vector<int64_t> shape = shape_vec(p);
  assign_(p, normal_tensor(mixp_tensor_session(p.get()), mixp_tensor_dtype(p.get()), shape.data(),
                           int(shape.size()), std));
}

void fill_uniform_(const TensorPtr &p, double bound) {
  std::vector<int64_t> shape = shape_vec(p);
  assign_(p, uniform_tensor(mixp_tensor_session(p.get()), mixp_tensor_dtype(p.get()),
                            shape.data(), int(shape.size()), bound));
}

void fill_constant_(const TensorPtr &p, double value) {
  std::vector<int64_t> shape = shape_vec(p);
  assign_(p, full_tensor(mixp_tensor_session(p.get()), mixp_tensor_dtype(p.get()), shape.data(),
                         int(shape.size()), value));
}

TensorPtr parameter_named(const mixp_module *m, const char *name) {
  int n = mixp_module_num_parameters(m);
  for (int i = 0; i < n; ++i) {
    const char *pn = mixp_module_parameter_name(m, i);
    if (pn && std::strcmp(pn, name) == 0) {
      mixp_tensor *t = nullptr;
      check(mixp_module_parameter(m, i, &t));
      return TensorPtr::adopt(t);
    }
  }
  fail(MIXP_ERR_INTERNAL, "module has no parameter named '", name, "'");
}

int ndim_of(const TensorPtr &t) { return mixp_tensor_ndim(t.get()); }

int64_t dim_of(const TensorPtr &t, int d) { return mixp_tensor_dim(t.get(), d); }

std::string shape_string(const TensorPtr &t) {
  std::vector<int64_t> shape = shape_vec(t);
  return shape_str(shape.data(), int(shape.size()));
}

}  // namespace mixp::nn

namespace mixp::nn {

bool autocast_casts(mixp_session *s, const char *op) {
  mixp_autocast_policy_info info;
  info.struct_size = sizeof info;
  check(mixp_autocast_policy(s, op, &info));
  return info.cast != MIXP_CAST_NONE;
}

}  // namespace mixp::nn
