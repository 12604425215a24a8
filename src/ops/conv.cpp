// conv2d: 2-D cross-correlation with stride, zero padding, dilation and
// channel groups, on NCHW or NHWC activations. The backward pass runs the
// backend's backward-data and backward-weights kernels; the bias gradient is
// the sum of the output gradient over every dim but the channel.
#include <memory>
#include <vector>

#include "autograd/node.hpp"
#include "core/error.hpp"
#include "ops/ops.hpp"

namespace mixp {
namespace {

struct Conv2dNode : Node {
  using Node::Node;
  TensorPtr x, w;  // detached, contiguous
  Conv2dGeom g;

  std::vector<TensorPtr> backward(std::vector<TensorPtr> &grads) override {
    TensorPtr gy = grads[0];
    if (gy->dtype != x->dtype) gy = cast(gy, x->dtype);
    gy = contiguous(gy);
    std::vector<TensorPtr> r(3);
    Backend &be = backend_of(*x);
    if (needs_grad(0)) {
      r[0] = empty(x->session.get(), x->dtype, shape_of(*x));
      be.conv2d_backward_data(g, view_of(*gy), view_of(*w), view_of(*r[0]));
    }
    if (needs_grad(1)) {
      r[1] = empty(x->session.get(), x->dtype, shape_of(*w));
      be.conv2d_backward_weights(g, view_of(*x), view_of(*gy), view_of(*r[1]));
    }
    if (needs_grad(2)) r[2] = sum(gy, g.nhwc ? std::vector<int>{0, 1, 2} : std::vector<int>{0, 2, 3}, false);
    return r;
  }
  void release_saved() override {
    x.reset();
    w.reset();
  }
};

void require_positive(const char *fn, const char *field, int64_t v) {
  if (v < 1) fail(MIXP_ERR_INVALID_ARGUMENT, fn, ": options->", field, " must be at least 1, got ", v);
}

void check_options(const char *fn, const mixp_conv2d_options &o) {
  if (o.layout != MIXP_NCHW && o.layout != MIXP_NHWC)
    fail(MIXP_ERR_INVALID_ARGUMENT, fn, ": options->layout must be MIXP_NCHW (0) or MIXP_NHWC (1), got ",
         int(o.layout));
  require_positive(fn, "stride_h", o.stride_h);
  require_positive(fn, "stride_w", o.stride_w);
  require_positive(fn, "dilation_h", o.dilation_h);
  require_positive(fn, "dilation_w", o.dilation_w);
  require_positive(fn, "groups", o.groups);
  if (o.pad_h < 0 || o.pad_w < 0)
    fail(MIXP_ERR_INVALID_ARGUMENT, fn, ": options->pad_h and pad_w must be >= 0, got ", o.pad_h, " and ",
         o.pad_w);
}

// The product's geometry, after checking the shapes against each other.
Conv2dGeom conv_geometry(const char *fn, const Tensor &x, const Tensor &w, const Tensor *bias,
                         const mixp_conv2d_options &o) {
  check_options(fn, o);
  const bool nhwc = o.layout == MIXP_NHWC;
  const char *lname = nhwc ? "[N, H, W, C_in] (NHWC)" : "[N, C_in, H, W] (NCHW)";
  if (x.ndim != 4) fail(MIXP_ERR_SHAPE, fn, ": x must be 4-D ", lname, ", got ", shape_str(x));
  if (w.ndim != 4)
    fail(MIXP_ERR_SHAPE, fn, ": weight must be 4-D [C_out, C_in/groups, kH, kW], got ", shape_str(w));

  Conv2dGeom g;
  g.nhwc = nhwc;
  g.n = x.shape[0];
  g.c_in = x.shape[nhwc ? 3 : 1];
  g.h = x.shape[nhwc ? 1 : 2];
  g.w = x.shape[nhwc ? 2 : 3];
  g.c_out = w.shape[0];
  g.kh = w.shape[2];
  g.kw = w.shape[3];
  g.stride_h = o.stride_h;
  g.stride_w = o.stride_w;
  g.pad_h = o.pad_h;
  g.pad_w = o.pad_w;
  g.dil_h = o.dilation_h;
  g.dil_w = o.dilation_w;
  g.groups = o.groups;
  if (g.c_in < 1 || g.c_out < 1 || g.kh < 1 || g.kw < 1)
    fail(MIXP_ERR_SHAPE, fn, ": channels and kernel sizes must be positive: x is ", shape_str(x),
         ", weight is ", shape_str(w));
  if (g.c_in % g.groups != 0)
    fail(MIXP_ERR_SHAPE, fn, ": x has ", g.c_in, " channels, which is not divisible by groups = ", g.groups,
         ": x is ", shape_str(x));
  if (g.c_out % g.groups != 0)
    fail(MIXP_ERR_SHAPE, fn, ": weight has ", g.c_out, " output channels, which is not divisible by groups = ",
         g.groups, ": weight is ", shape_str(w));
  if (w.shape[1] != g.c_in / g.groups)
    fail(MIXP_ERR_SHAPE, fn, ": weight expects ", w.shape[1], " input channels per group but x has ", g.c_in,
         " channels in ", g.groups, " group(s) (", g.c_in / g.groups, " each): x is ", shape_str(x),
         ", weight is ", shape_str(w));
  if (bias && (bias->ndim != 1 || bias->shape[0] != g.c_out))
    fail(MIXP_ERR_SHAPE, fn, ": bias must be [", g.c_out, "] (C_out of weight ", shape_str(w), "), got ",
         shape_str(*bias));
  g.oh = window_positions(g.h, g.pad_h, g.kh, g.dil_h, g.stride_h, fn, "H");
  g.ow = window_positions(g.w, g.pad_w, g.kw, g.dil_w, g.stride_w, fn, "W");
  // Any dilation of a one-tap kernel gives the same result (as any stride
  // of a single position does: window_positions lowers it): a huge one,
  // valid, becomes the 1 the backends handle.
  if (g.kh == 1) g.dil_h = 1;
  if (g.kw == 1) g.dil_w = 1;
  return g;
}

}  // namespace

TensorPtr conv2d(const TensorPtr &x_in, const TensorPtr &w_in, const TensorPtr &bias_in,
                 const mixp_conv2d_options &o) {
  const char *fn = "mixp_conv2d";
  same_session(fn, {x_in.get(), w_in.get(), bias_in.get()});
  TensorPtr x = x_in, w = w_in, bias = bias_in;
  OpScope scope(OpId::conv2d, x->session.get(), {&x, &w, &bias});
  scope.tape({x.get(), w.get(), bias.get()}, [o](const Replay &r) { return conv2d(r[0], r[1], r[2], o); });
  Session *s = scope.session();
  require_float(fn, "x", *x);
  require_float(fn, "weight", *w);
  require_same_dtype(fn, "x", *x, "weight", *w);
  if (bias) require_same_dtype(fn, "x", *x, "bias", *bias);
  Conv2dGeom g = conv_geometry(fn, *x, *w, bias.get(), o);
  g.benchmark = cudnn_benchmark(s);  // the backward keeps the forward's choice
  g.deterministic = cudnn_deterministic(s);
  const bool nhwc = g.nhwc;

  TensorPtr xc = contiguous(detach(*x)), wc = contiguous(detach(*w));
  TensorPtr bc = bias ? contiguous(detach(*bias)) : TensorPtr();
  const Shape oshape = nhwc ? Shape{g.n, g.oh, g.ow, g.c_out} : Shape{g.n, g.c_out, g.oh, g.ow};
  TensorPtr y = empty(s, x->dtype, oshape);
  if (y->numel() > 0) {
    const View bv = bc ? view_of(*bc) : View();
    backend_of(*x).conv2d(g, view_of(*xc), view_of(*wc), bc ? &bv : nullptr, view_of(*y));
  }
  if (should_record(s, {x.get(), w.get(), bias.get()})) {
    auto node = std::make_shared<Conv2dNode>(OpId::conv2d);
    node->x = xc;
    node->w = wc;
    node->g = g;
    record(node, {x.get(), w.get(), bias.get()}, {y.get()});
  }
  return scope.finish(y);
}

}  // namespace mixp
