// How layers (src/nn/) and the model zoo (src/models/) call operations: only
// through the public C functions (docs/architecture.md's layer table: they
// sit above the ops, like any embedding host). A failed call becomes a mixp::Error that carries the
// callee's status and message unchanged, so the shim that started the
// forward pass reports exactly what went wrong and where.
#pragma once
#include <memory>
#include <utility>

#include "core/error.hpp"
#include "core/tensor.hpp"
#include "mixp/mixp.h"
#include "nn/module.hpp"

namespace mixp::nn {

// Throws the failure of a public call as a mixp::Error.
inline void check(mixp_status st) {
  if (st != MIXP_OK) throw Error(st, mixp_last_error());
}

// Calls fn(args..., &out) and takes ownership of out.
template <class... P, class... A>
TensorPtr call(mixp_status (*fn)(P...), A &&...args) {
  mixp_tensor *out = nullptr;
  check(fn(std::forward<A>(args)..., &out));
  return TensorPtr::adopt(out);
}

// Takes ownership of the module a public *_create function stored in `m`.
// `m` is a reference so that it is read after the call in `adopt(create(...,
// &m), m)` has run (argument evaluation order is unspecified).
inline std::unique_ptr<Module> adopt(mixp_status st, mixp_module *const &m) {
  check(st);
  return std::unique_ptr<Module>(m);
}

// A no-grad region for the lifetime of the guard (parameter initialisation).
class NoGrad {
 public:
  explicit NoGrad(mixp_session *s) : s_(s) { check(mixp_no_grad_begin(s_)); }
  ~NoGrad() { mixp_no_grad_end(s_); }
  NoGrad(const NoGrad &) = delete;
  NoGrad &operator=(const NoGrad &) = delete;

 private:
  mixp_session *s_;
};

// Tensor factories for parameters and buffers (session stream, PyTorch's
// distributions). Draws run in fp32 (fp64 for F64) and are rounded once to
// `dtype`, as PyTorch's init of a half tensor would be.
TensorPtr uniform_tensor(mixp_session *s, mixp_dtype dtype, const int64_t *shape, int ndim,
                         double bound);
TensorPtr normal_tensor(mixp_session *s, mixp_dtype dtype, const int64_t *shape, int ndim,
                        double std);
TensorPtr full_tensor(mixp_session *s, mixp_dtype dtype, const int64_t *shape, int ndim,
                      double value);
// Marks a freshly made tensor as a parameter (requires grad) and returns it.
TensorPtr as_parameter(TensorPtr t);

// Re-initialisation of an existing parameter in place (its dtype is kept),
// for architectures whose init differs from the layers' defaults.
void fill_normal_(const TensorPtr &p, double std);
void fill_uniform_(const TensorPtr &p, double bound);
void fill_constant_(const TensorPtr &p, double value);

// A parameter of a module by its dotted name (a new reference); fails with
// MIXP_ERR_INTERNAL when there is none: callers name parameters they made.
TensorPtr parameter_named(const mixp_module *m, const char *name);

// Shape helpers over the public tensor queries.
int ndim_of(const TensorPtr &t);
int64_t dim_of(const TensorPtr &t, int d);
std::string shape_string(const TensorPtr &t);

}  // namespace mixp::nn

namespace mixp::nn {

// Whether operation `op` casts its inputs under the session's current
// autocast state (then a layer leaves dtype reconciliation to it).
bool autocast_casts(mixp_session *s, const char *op);

// Normalisation layers keep fp32 parameters when O2 decorate casts the rest
// of a model to half: outside autocast they run `f` on the input cast to the
// parameters' dtype and return the result in the input's dtype (what cuDNN's
// mixed batch norm does); otherwise they run `f` on x as is.
template <class F>
TensorPtr in_param_dtype(const TensorPtr &x, mixp_dtype param_dtype, const char *op, F &&f) {
  mixp_dtype xd = mixp_tensor_dtype(x.get());
  if (xd == param_dtype || !(xd == MIXP_F32 || xd == MIXP_F16 || xd == MIXP_BF16 || xd == MIXP_F64) ||
      autocast_casts(mixp_tensor_session(x.get()), op))
    return f(x);
  TensorPtr y = f(call(mixp_cast, x.get(), param_dtype));
  return call(mixp_cast, y.get(), xd);
}

}  // namespace mixp::nn
