// Normalisation layers as ops: batch_norm (with running statistics),
// layer_norm and group_norm. Statistics are computed by the backend in
// double and kept in F32 (F64 for F64 inputs) whatever the input type, and
// the backward passes reuse them; a training batch_norm the backend runs as
// one library call (cuDNN's: fp32 statistics) takes that path instead
// (MIXP_BATCH_NORM).
#include <cmath>
#include <memory>
#include <vector>

#include "autograd/node.hpp"
#include "core/error.hpp"
#include "ops/ops.hpp"

namespace mixp {
namespace {

DType stat_dtype(DType x) { return x == MIXP_F64 ? MIXP_F64 : MIXP_F32; }

// A contiguous gradient in the dtype of the forward output.
TensorPtr dense_grad(const TensorPtr &g, DType dtype) {
  return contiguous(g->dtype == dtype ? g : cast(g, dtype));
}

const View *opt_view(const TensorPtr &t, View &storage) {
  if (!t) return nullptr;
  storage = view_of(*t);
  return &storage;
}

void check_eps(const char *fn, double eps) {
  if (!(eps >= 0.0 && std::isfinite(eps)))
    fail(MIXP_ERR_INVALID_ARGUMENT, fn, ": eps = ", eps, " must be finite and >= 0");
}

void require_param_shape(const char *fn, const char *arg, const Tensor &p, const Tensor &x, const Shape &shape) {
  if (shape_of(p) != shape)
    fail(MIXP_ERR_SHAPE, fn, ": ", arg, " must be ", shape_str(shape), " for x of shape ", shape_str(x), ", got ",
         shape_str(p));
}

// weight/bias (and the like) of an op: float, x's dtype, the given shape.
void check_param(const char *fn, const char *arg, const TensorPtr &p, const Tensor &x,
                 const Shape &shape) {
  if (!p) return;
  require_float(fn, arg, *p);
  require_same_dtype(fn, "x", x, arg, *p);
  require_param_shape(fn, arg, *p, x, shape);
}

// batch_norm's weight and bias: x's dtype, or any of F32/F16/BF16 beside x
// of one of those (half x with the F32 parameters mixed precision keeps, as
// cuDNN and PyTorch's CPU kernels take them; F32 x under an autocast list
// beside half parameters). They are read as F32, exactly; F64 does not mix.
void check_bn_param(const char *fn, const char *arg, const TensorPtr &p, const Tensor &x, int64_t c) {
  if (!p) return;
  require_float(fn, arg, *p);
  if (p->dtype == MIXP_F64 || x.dtype == MIXP_F64) require_same_dtype(fn, "x", x, arg, *p);
  require_param_shape(fn, arg, *p, x, Shape{c});
}

// A parameter as the backend reads it: in the statistics' dtype (exact:
// the dtype is never narrower).
TensorPtr as_stat(const TensorPtr &p, DType sd) {
  if (!p || p->dtype == sd) return p;
  return contiguous(cast(p, sd));
}

struct BatchNormNode : Node {
  using Node::Node;
  TensorPtr x, weight, mean, invstd;  // detached, contiguous; weight in the statistics' dtype
  DType grad_dtype[2] = {MIXP_F32, MIXP_F32};  // of weight's and bias's gradients: the parameters' own
  int64_t outer = 0, c = 0, inner = 0;
  bool batch_stats = true;
  bool library = false;  // the forward ran as one library call (batch_norm_train_forward)

  std::vector<TensorPtr> backward(std::vector<TensorPtr> &grads) override {
    if (released) fail(MIXP_ERR_STATE, "backward of batch_norm: saved tensors were already freed");
    TensorPtr gy = dense_grad(grads[0], x->dtype);
    Session *s = x->session.get();
    std::vector<TensorPtr> r(3);
    if (needs_grad(0)) r[0] = empty(s, x->dtype, shape_of(*x));
    for (size_t i = 1; i < 3; ++i)
      if (needs_grad(i)) r[i] = empty(s, MIXP_F64, Shape{c});
    View wv, gxv, gwv, gbv;
    Backend &be = backend_of(*x);
    BatchNormTrainArgs a;
    if (library) {
      a.x = view_of(*x);
      a.gy = view_of(*gy);
      a.mean = view_of(*mean);
      a.invstd = view_of(*invstd);
      a.weight = opt_view(weight, wv);
      a.gx = opt_view(r[0], gxv);
      a.gw = opt_view(r[1], gwv);
      a.gb = opt_view(r[2], gbv);
      a.outer = outer;
      a.c = c;
      a.inner = inner;
    }
    if (c > 0 && !(library && be.batch_norm_train_backward(a)))
      be.batch_norm_backward(view_of(*x), view_of(*gy), outer, c, inner, view_of(*mean), view_of(*invstd),
                             opt_view(weight, wv), batch_stats, opt_view(r[0], gxv), opt_view(r[1], gwv),
                             opt_view(r[2], gbv));
    for (size_t i = 1; i < 3; ++i)
      if (r[i]) r[i] = cast(r[i], grad_dtype[i - 1]);
    return r;
  }
  void release_saved() override {
    x.reset();
    weight.reset();
    mean.reset();
    invstd.reset();
  }
};

// layer_norm and group_norm share the kernel and the node.
struct GroupNormNode : Node {
  using Node::Node;
  TensorPtr x, weight, mean, rstd;  // detached, contiguous
  GroupNormGeom geom;
  Shape param_shape;

  std::vector<TensorPtr> backward(std::vector<TensorPtr> &grads) override {
    if (released) fail(MIXP_ERR_STATE, "backward of ", name(), ": saved tensors were already freed");
    TensorPtr gy = dense_grad(grads[0], x->dtype);
    Session *s = x->session.get();
    std::vector<TensorPtr> r(3);
    if (needs_grad(0)) r[0] = empty(s, x->dtype, shape_of(*x));
    if (needs_grad(1)) r[1] = empty(s, x->dtype, param_shape);
    if (needs_grad(2)) r[2] = empty(s, x->dtype, param_shape);
    View wv, gxv, gwv, gbv;
    if (x->numel() > 0)
      backend_of(*x).group_norm_backward(geom, view_of(*x), view_of(*gy), view_of(*mean),
                                         view_of(*rstd), opt_view(weight, wv),
                                         opt_view(r[0], gxv), opt_view(r[1], gwv),
                                         opt_view(r[2], gbv));
    else
      for (size_t i = 1; i < 3; ++i)
        if (r[i]) backend_of(*x).fill(view_of(*r[i]), 0.0);
    return r;
  }
  void release_saved() override {
    x.reset();
    weight.reset();
    mean.reset();
    rstd.reset();
  }
};

TensorPtr dense(const TensorPtr &t) { return t ? contiguous(detach(*t)) : TensorPtr(); }

// The shared forward of layer_norm and group_norm.
TensorPtr group_norm_impl(const OpScope &scope, const TensorPtr &x, const TensorPtr &weight,
                          const TensorPtr &bias, double eps, const GroupNormGeom &geom,
                          const Shape &param_shape) {
  Session *s = scope.session();
  TensorPtr xc = dense(x), wc = dense(weight), bc = dense(bias);
  TensorPtr y = empty(s, x->dtype, shape_of(*x));
  const DType sd = stat_dtype(x->dtype);
  TensorPtr mean = empty(s, sd, Shape{geom.n * geom.groups});
  TensorPtr rstd = empty(s, sd, Shape{geom.n * geom.groups});
  View wv, bv;
  if (y->numel() > 0)
    backend_of(*x).group_norm_forward(geom, view_of(*xc), opt_view(wc, wv), opt_view(bc, bv),
                                      eps, view_of(*y), view_of(*mean), view_of(*rstd));
  if (should_record(s, {x.get(), weight.get(), bias.get()})) {
    auto node = std::make_shared<GroupNormNode>(scope.op());
    node->x = xc;
    node->weight = wc;
    node->mean = mean;
    node->rstd = rstd;
    node->geom = geom;
    node->param_shape = param_shape;
    record(node, {x.get(), weight.get(), bias.get()}, {y.get()});
  }
  return scope.finish(y);
}

// x as [outer, c, inner] around its channel dim (1 for NCHW, the last for
// NHWC), after checking x, the layout and the scalars.
struct BnGeom {
  int64_t outer = 1, c = 0, inner = 1;
};

BnGeom bn_geometry(const char *fn, const Tensor &x, mixp_layout layout, double eps,
                   double momentum) {
  require_float(fn, "x", x);
  if (layout != MIXP_NCHW && layout != MIXP_NHWC)
    fail(MIXP_ERR_INVALID_ARGUMENT, fn, ": layout = ", int(layout),
         " is not a mixp_layout (0 NCHW, 1 NHWC)");
  if (x.ndim < 2)
    fail(MIXP_ERR_SHAPE, fn, ": x must have at least 2 dims ([N, C, ...]), got ", shape_str(x));
  check_eps(fn, eps);
  if (!std::isfinite(momentum))
    fail(MIXP_ERR_INVALID_ARGUMENT, fn, ": momentum = ", momentum, " is not finite");
  const int cdim = layout == MIXP_NHWC ? x.ndim - 1 : 1;
  BnGeom g;
  g.c = x.shape[cdim];
  for (int i = 0; i < cdim; ++i) g.outer *= x.shape[i];
  for (int i = cdim + 1; i < x.ndim; ++i) g.inner *= x.shape[i];
  return g;
}

void check_running_stats(const char *fn, const TensorPtr &running_mean,
                         const TensorPtr &running_var, const Tensor &x, int64_t c, bool training) {
  const TensorPtr *stats[2] = {&running_mean, &running_var};
  const char *stat_names[2] = {"running_mean", "running_var"};
  for (int i = 0; i < 2; ++i) {
    const TensorPtr &r = *stats[i];
    if (!r) {
      if (!training)
        fail(MIXP_ERR_INVALID_ARGUMENT, fn, ": ", stat_names[i], " is NULL; eval mode needs both running statistics");
      continue;
    }
    require_float(fn, stat_names[i], *r);
    if (shape_of(*r) != Shape{c})
      fail(MIXP_ERR_SHAPE, fn, ": ", stat_names[i], " must be [", c, "] for x of shape ",
           shape_str(x), ", got ", shape_str(*r));
    if (r->requires_grad)
      fail(MIXP_ERR_STATE, fn, ": ", stat_names[i],
           " requires grad; running statistics are buffers updated in place");
  }
}

// The per-channel statistics batch_norm normalises with, in the statistics'
// dtype; var (the biased batch variance) only from a batch.
struct BnStats {
  TensorPtr mean, invstd, var;
};

// Training: the batch's own statistics, from the kernel.
BnStats batch_stats(const Tensor &xc, int64_t outer, int64_t c, int64_t inner, double eps) {
  Session *s = xc.session.get();
  const DType sd = stat_dtype(xc.dtype);
  BnStats st;
  st.mean = empty(s, sd, Shape{c});
  st.var = empty(s, sd, Shape{c});
  st.invstd = empty(s, sd, Shape{c});
  if (c > 0)
    backend_of(xc).batch_norm_stats(view_of(xc), outer, c, inner, eps, view_of(*st.mean),
                                    view_of(*st.var), view_of(*st.invstd));
  return st;
}

// Evaluation: the running statistics, invstd = 1 / sqrt(running_var + eps).
BnStats running_stats(const Tensor &running_mean, const Tensor &running_var, DType sd, double eps) {
  BnStats st;
  st.mean = contiguous(cast(detach(running_mean), sd));
  TensorPtr rv = cast(detach(running_var), sd);
  st.invstd = contiguous(unary(UnaryOp::RdivScalar, unary(UnaryOp::Sqrt, add_scalar(rv, eps)), 1.0));
  return st;
}

// PyTorch's running-statistics rule: (1 - momentum) * running + weight *
// batch, the weight being momentum (times m / (m - 1) for the unbiased
// variance).
TensorPtr blended(const Tensor &running, DType sd, double momentum, const TensorPtr &batch,
                  double weight) {
  return add(mul_scalar(cast(detach(running), sd), 1.0 - momentum), mul_scalar(batch, weight));
}

// Which path training batch norm takes: MIXP_BATCH_NORM=library|native|auto
// (unset: auto, the backend's library call wherever it runs the case; native:
// the core kernels, double statistics, on every device). Read at every
// call, so a benchmark can compare the two; any other value fails naming fn.
enum class BnPath { automatic, library, native };  // in env_choice's order
BnPath batch_norm_path(const char *fn) {
  return BnPath(env_choice(fn, "MIXP_BATCH_NORM", {"auto", "library", "native"}));
}

// The running statistics a library call blends in place: the buffers
// themselves when they are dense in the statistics' dtype and nothing after
// the call can fail the op (no numerics check), else copies that the op
// stores after its checks, so that a failed call changes nothing.
TensorPtr blend_target(const Session &s, const TensorPtr &running, DType sd) {
  if (s.numerics == MIXP_NUMERICS_OFF && running->dtype == sd && running->is_contiguous()) return running;
  return running->dtype == sd ? clone(detach(*running)) : contiguous(cast(detach(*running), sd));
}

// One batch_norm call's dense inputs and resolved settings, shared by the
// steps below.
struct BnCall {
  Session *s = nullptr;
  BnGeom g;
  DType sd = MIXP_F32;  // the statistics' dtype
  TensorPtr xc, y, wc, bc, running_mean, running_var;
  double eps = 0.0, momentum = 0.0;
  bool update = false;  // blend the running statistics
};

// The training forward as one library call (Backend::batch_norm_train_forward),
// unless MIXP_BATCH_NORM=native: true when the backend took it, having written
// y, st->mean and st->invstd and blended the running statistics into
// *lib_mean / *lib_var (blend_target). The call updates both running
// statistics or none. (With the numerics checker on, a backend that declines
// has cost two copies of [c] floats.)
bool library_forward(const char *fn, const BnCall &c, BnStats *st, TensorPtr *lib_mean, TensorPtr *lib_var) {
  const BnPath path = batch_norm_path(fn);
  if (path == BnPath::native || c.y->numel() == 0 || c.g.c == 0 ||
      (c.update && !(c.running_mean && c.running_var)))
    return false;
  st->mean = empty(c.s, c.sd, Shape{c.g.c});
  st->invstd = empty(c.s, c.sd, Shape{c.g.c});
  if (c.update) {
    *lib_mean = blend_target(*c.s, c.running_mean, c.sd);
    *lib_var = blend_target(*c.s, c.running_var, c.sd);
  }
  BatchNormTrainArgs a;
  View wv, bv, rmv, rvv;
  a.x = view_of(*c.xc);
  a.y = view_of(*c.y);
  a.mean = view_of(*st->mean);
  a.invstd = view_of(*st->invstd);
  a.weight = opt_view(c.wc, wv);
  a.bias = opt_view(c.bc, bv);
  a.running_mean = opt_view(*lib_mean, rmv);
  a.running_var = opt_view(*lib_var, rvv);
  a.outer = c.g.outer;
  a.c = c.g.c;
  a.inner = c.g.inner;
  a.eps = c.eps;
  a.momentum = c.momentum;
  Backend &be = backend_of(*c.xc);
  if (be.batch_norm_train_forward(a)) return true;
  if (path == BnPath::library)
    fail(MIXP_ERR_UNSUPPORTED, fn, ": MIXP_BATCH_NORM=library, but the ", be.name(),
         " backend has no library batch norm for ", dtype_name(c.xc->dtype), " x of shape ", shape_str(*c.xc),
         " with eps = ", c.eps, c.wc ? "" : " and no weight");
  *lib_mean = *lib_var = nullptr;
  return false;
}

// PyTorch's running-statistics rule for the core kernels' statistics:
// running = (1 - momentum) * running + momentum * batch, with the unbiased
// variance; computed now, stored by the op after its checks.
void blend_running_stats(const BnCall &c, const BnStats &st, TensorPtr *new_mean, TensorPtr *new_var) {
  NoGradGuard ng(c.s);
  const int64_t m = c.g.outer * c.g.inner;
  if (c.running_mean) *new_mean = blended(*c.running_mean, c.sd, c.momentum, st.mean, c.momentum);
  if (c.running_var)
    *new_var = blended(*c.running_var, c.sd, c.momentum, st.var, c.momentum * double(m) / double(m - 1));
}

}  // namespace

TensorPtr batch_norm(const TensorPtr &x_in, const TensorPtr &weight_in, const TensorPtr &bias_in,
                     const TensorPtr &running_mean, const TensorPtr &running_var, bool training,
                     double momentum, double eps, mixp_layout layout) {
  static const char *fn = "mixp_batch_norm";
  Session *s = same_session(fn, {x_in.get(), weight_in.get(), bias_in.get(), running_mean.get(),
                                 running_var.get()});
  TensorPtr x = x_in, weight = weight_in, bias = bias_in;
  // Autocast brings x alone to the region's dtype (O2): the parameters keep
  // theirs, and the kernels compute in fp32 either way.
  OpScope scope(OpId::batch_norm, s, {&x});
  scope.tape({x.get(), weight.get(), bias.get(), running_mean.get(), running_var.get()},
             [=](const Replay &r) {
               return batch_norm(r[0], r[1], r[2], r[3], r[4], training, momentum, eps, layout);
             });
  BnCall c;
  c.g = bn_geometry(fn, *x, layout, eps, momentum);
  check_bn_param(fn, "weight", weight, *x, c.g.c);
  check_bn_param(fn, "bias", bias, *x, c.g.c);
  check_running_stats(fn, running_mean, running_var, *x, c.g.c, training);
  if (training && c.g.outer * c.g.inner <= 1)
    fail(MIXP_ERR_SHAPE, fn, ": expected more than 1 value per channel when training, x is ",
         shape_str(*x));

  c.s = s;
  c.sd = stat_dtype(x->dtype);
  c.xc = dense(x);
  c.y = empty(s, x->dtype, shape_of(*x));
  c.running_mean = running_mean;
  c.running_var = running_var;
  c.eps = eps;
  c.momentum = momentum;
  // A checkpoint replay recomputes the output only: the statistics were
  // updated once, by the forward pass.
  c.update = training && (running_mean || running_var) && !s->checkpoint_replaying;
  BnStats st;
  bool library = false;
  TensorPtr lib_mean, lib_var;  // what the library call blended (blend_target)
  {
    NoGradGuard ng(s);
    c.wc = as_stat(dense(weight), c.sd);
    c.bc = as_stat(dense(bias), c.sd);
    if (training) library = library_forward(fn, c, &st, &lib_mean, &lib_var);
    if (!library)
      st = training ? batch_stats(*c.xc, c.g.outer, c.g.c, c.g.inner, eps)
                    : running_stats(*running_mean, *running_var, c.sd, eps);
  }
  View wv, bv;
  if (!library && c.y->numel() > 0)
    backend_of(*x).batch_norm_forward(view_of(*c.xc), c.g.outer, c.g.c, c.g.inner, view_of(*st.mean),
                                      view_of(*st.invstd), opt_view(c.wc, wv), opt_view(c.bc, bv), view_of(*c.y));
  if (should_record(s, {x.get(), weight.get(), bias.get()})) {
    auto node = std::make_shared<BatchNormNode>(OpId::batch_norm);
    node->x = c.xc;
    node->weight = c.wc;
    node->grad_dtype[0] = weight ? weight->dtype : x->dtype;
    node->grad_dtype[1] = bias ? bias->dtype : x->dtype;
    node->mean = st.mean;
    node->invstd = st.invstd;
    node->outer = c.g.outer;
    node->c = c.g.c;
    node->inner = c.g.inner;
    node->batch_stats = training;
    node->library = library;
    record(node, {x.get(), weight.get(), bias.get()}, {c.y.get()});
  }

  // The new running statistics are computed first and stored last, after
  // the numerics check, so that a failing call leaves them untouched.
  TensorPtr new_mean, new_var;
  if (library) {
    if (lib_mean != running_mean) new_mean = lib_mean;
    if (lib_var != running_var) new_var = lib_var;
  } else if (c.update) {
    blend_running_stats(c, st, &new_mean, &new_var);
  }
  TensorPtr out = scope.finish(c.y);
  if (new_mean) copy_into(*running_mean, *new_mean);
  if (new_var) copy_into(*running_var, *new_var);
  return out;
}

TensorPtr layer_norm(const TensorPtr &x_in, int normalized_ndim, const TensorPtr &weight_in,
                     const TensorPtr &bias_in, double eps) {
  static const char *fn = "mixp_layer_norm";
  Session *s = same_session(fn, {x_in.get(), weight_in.get(), bias_in.get()});
  TensorPtr x = x_in, weight = weight_in, bias = bias_in;
  OpScope scope(OpId::layer_norm, s, {&x, &weight, &bias});
  scope.tape({x.get(), weight.get(), bias.get()},
             [=](const Replay &r) { return layer_norm(r[0], normalized_ndim, r[1], r[2], eps); });
  require_float(fn, "x", *x);
  if (normalized_ndim < 1 || normalized_ndim > x->ndim)
    fail(MIXP_ERR_INVALID_ARGUMENT, fn, ": normalized_ndim = ", normalized_ndim,
         " must be in [1, ", x->ndim, "] for x of shape ", shape_str(*x));
  check_eps(fn, eps);
  const int lead = x->ndim - normalized_ndim;
  Shape pshape(x->shape + lead, normalized_ndim);
  check_param(fn, "weight", weight, *x, pshape);
  check_param(fn, "bias", bias, *x, pshape);
  GroupNormGeom g;
  g.n = 1;
  for (int i = 0; i < lead; ++i) g.n *= x->shape[i];
  g.c = pshape.numel();
  g.s = 1;
  g.groups = 1;
  return group_norm_impl(scope, x, weight, bias, eps, g, pshape);
}

TensorPtr group_norm(const TensorPtr &x_in, int64_t groups, const TensorPtr &weight_in,
                     const TensorPtr &bias_in, double eps) {
  static const char *fn = "mixp_group_norm";
  Session *s = same_session(fn, {x_in.get(), weight_in.get(), bias_in.get()});
  TensorPtr x = x_in, weight = weight_in, bias = bias_in;
  OpScope scope(OpId::group_norm, s, {&x, &weight, &bias});
  scope.tape({x.get(), weight.get(), bias.get()},
             [=](const Replay &r) { return group_norm(r[0], groups, r[1], r[2], eps); });
  require_float(fn, "x", *x);
  if (x->ndim < 2)
    fail(MIXP_ERR_SHAPE, fn, ": x must have at least 2 dims ([N, C, ...]), got ", shape_str(*x));
  check_eps(fn, eps);
  const int64_t c = x->shape[1];
  if (groups < 1 || c % groups != 0)
    fail(MIXP_ERR_INVALID_ARGUMENT, fn, ": groups = ", groups, " must be >= 1 and divide the ", c,
         " channels of x (shape ", shape_str(*x), ")");
  check_param(fn, "weight", weight, *x, Shape{c});
  check_param(fn, "bias", bias, *x, Shape{c});
  GroupNormGeom g;
  g.n = x->shape[0];
  g.c = c;
  g.s = 1;
  for (int i = 2; i < x->ndim; ++i) g.s *= x->shape[i];
  g.groups = groups;
  return group_norm_impl(scope, x, weight, bias, eps, g, Shape{c});
}

}  // namespace mixp
