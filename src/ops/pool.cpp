// max_pool2d, avg_pool2d and adaptive_avg_pool2d on NCHW or NHWC input.
// Max pooling keeps the position of each window's first maximum (I32 or
// I64, as the backend chooses: pool_index_dtype) for its backward pass; the
// averages need only the geometry.
#include <memory>
#include <vector>

#include "autograd/node.hpp"
#include "core/error.hpp"
#include "ops/ops.hpp"

namespace mixp {
namespace {

struct Pool2dNode : Node {
  using Node::Node;
  Pool2dGeom g;
  DType dtype = MIXP_F32;
  Shape xshape;
  TensorPtr indices;  // Max only

  std::vector<TensorPtr> backward(std::vector<TensorPtr> &grads) override {
    TensorPtr gy = grads[0];
    if (gy->dtype != dtype) gy = cast(gy, dtype);
    gy = contiguous(gy);
    TensorPtr gx = empty(gy->session.get(), dtype, xshape);
    const View iv = indices ? view_of(*indices) : View();
    backend_of(*gy).pool2d_backward(g, view_of(*gy), indices ? &iv : nullptr, view_of(*gx));
    return {gx};
  }
  void release_saved() override { indices.reset(); }
};

void check_layout(const char *fn, const char *arg, int layout) {
  if (layout != MIXP_NCHW && layout != MIXP_NHWC)
    fail(MIXP_ERR_INVALID_ARGUMENT, fn, ": ", arg, " must be MIXP_NCHW (0) or MIXP_NHWC (1), got ", layout);
}

// Checks x and fills the input part of g.
void input_geometry(const char *fn, const Tensor &x, mixp_layout layout, Pool2dGeom &g) {
  require_float(fn, "x", x);
  g.nhwc = layout == MIXP_NHWC;
  if (x.ndim != 4)
    fail(MIXP_ERR_SHAPE, fn, ": x must be 4-D ", g.nhwc ? "[N, H, W, C] (NHWC)" : "[N, C, H, W] (NCHW)",
         ", got ", shape_str(x));
  g.n = x.shape[0];
  g.c = x.shape[g.nhwc ? 3 : 1];
  g.h = x.shape[g.nhwc ? 1 : 2];
  g.w = x.shape[g.nhwc ? 2 : 3];
}

// Runs the kernel on x and records the backward pass.
TensorPtr run_pool(OpScope &scope, const TensorPtr &x, const Pool2dGeom &g) {
  Session *s = scope.session();
  TensorPtr xc = contiguous(detach(*x));
  const Shape oshape = g.nhwc ? Shape{g.n, g.oh, g.ow, g.c} : Shape{g.n, g.c, g.oh, g.ow};
  TensorPtr y = empty(s, x->dtype, oshape);
  TensorPtr idx = g.kind == PoolKind::Max ? empty(s, backend_of(*x).pool_index_dtype(g), oshape) : TensorPtr();
  if (y->numel() > 0) {
    const View iv = idx ? view_of(*idx) : View();
    backend_of(*x).pool2d(g, view_of(*xc), view_of(*y), idx ? &iv : nullptr);
  }
  if (should_record(s, {x.get()})) {
    auto node = std::make_shared<Pool2dNode>(scope.op());
    node->g = g;
    node->dtype = x->dtype;
    node->xshape = shape_of(*x);
    node->indices = idx;
    record(node, {x.get()}, {y.get()});
  }
  return scope.finish(y);
}

TensorPtr window_pool(PoolKind kind, OpId op, const TensorPtr &x_in, const mixp_pool2d_options &o) {
  const char *fn = op_info(op).c_function;
  TensorPtr x = x_in;
  OpScope scope(op, x->session.get(), {&x});
  scope.tape({x.get()}, [=](const Replay &r) { return window_pool(kind, op, r[0], o); });
  check_layout(fn, "options->layout", int(o.layout));
  Pool2dGeom g;
  g.kind = kind;
  input_geometry(fn, *x, o.layout, g);
  if (o.kernel_h < 1 || o.kernel_w < 1)
    fail(MIXP_ERR_INVALID_ARGUMENT, fn, ": options->kernel_h and kernel_w must be at least 1, got ", o.kernel_h,
         " and ", o.kernel_w);
  if (o.stride_h < 0 || o.stride_w < 0)
    fail(MIXP_ERR_INVALID_ARGUMENT, fn, ": options->stride_h and stride_w must be positive (0 = the kernel size), got ",
         o.stride_h, " and ", o.stride_w);
  if (o.pad_h < 0 || o.pad_w < 0)
    fail(MIXP_ERR_INVALID_ARGUMENT, fn, ": options->pad_h and pad_w must be >= 0, got ", o.pad_h, " and ", o.pad_w);
  // PyTorch's rule: every window then holds at least one input element.
  if (o.pad_h > o.kernel_h / 2 || o.pad_w > o.kernel_w / 2)
    fail(MIXP_ERR_INVALID_ARGUMENT, fn, ": options->pad_h/pad_w (", o.pad_h, ", ", o.pad_w,
         ") must be at most half of the kernel (", o.kernel_h, "x", o.kernel_w, ")");
  if (kind == PoolKind::Avg && o.count_include_pad != 0 && o.count_include_pad != 1)
    fail(MIXP_ERR_INVALID_ARGUMENT, fn, ": options->count_include_pad must be 0 or 1, got ", o.count_include_pad);
  g.kh = o.kernel_h;
  g.kw = o.kernel_w;
  g.stride_h = o.stride_h ? o.stride_h : o.kernel_h;
  g.stride_w = o.stride_w ? o.stride_w : o.kernel_w;
  g.pad_h = o.pad_h;
  g.pad_w = o.pad_w;
  g.count_include_pad = o.count_include_pad != 0;
  g.oh = window_positions(g.h, g.pad_h, g.kh, 1, g.stride_h, fn, "H");
  g.ow = window_positions(g.w, g.pad_w, g.kw, 1, g.stride_w, fn, "W");
  return run_pool(scope, x, g);
}

}  // namespace

TensorPtr max_pool2d(const TensorPtr &x, const mixp_pool2d_options &o) {
  return window_pool(PoolKind::Max, OpId::max_pool2d, x, o);
}

TensorPtr avg_pool2d(const TensorPtr &x, const mixp_pool2d_options &o) {
  return window_pool(PoolKind::Avg, OpId::avg_pool2d, x, o);
}

TensorPtr adaptive_avg_pool2d(const TensorPtr &x_in, int64_t out_h, int64_t out_w, mixp_layout layout) {
  const char *fn = "mixp_adaptive_avg_pool2d";
  TensorPtr x = x_in;
  OpScope scope(OpId::adaptive_avg_pool2d, x->session.get(), {&x});
  scope.tape({x.get()}, [=](const Replay &r) { return adaptive_avg_pool2d(r[0], out_h, out_w, layout); });
  check_layout(fn, "layout", int(layout));
  Pool2dGeom g;
  g.kind = PoolKind::AdaptiveAvg;
  input_geometry(fn, *x, layout, g);
  if (out_h < 1 || out_w < 1)
    fail(MIXP_ERR_INVALID_ARGUMENT, fn, ": out_h and out_w must be at least 1, got ", out_h, " and ", out_w);
  if (g.h < 1 || g.w < 1)
    fail(MIXP_ERR_SHAPE, fn, ": x must have a non-empty image (H, W >= 1), got ", shape_str(*x));
  g.oh = out_h;
  g.ow = out_w;
  return run_pool(scope, x, g);
}

}  // namespace mixp
