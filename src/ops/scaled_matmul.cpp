// scaled_matmul: the product of two fp8 matrices with per-tensor scales
// (the semantics are mixp_scaled_matmul's in mixp.h, the device contract
// ScaledGemmArgs in backend/backend.hpp). Arguments are checked here, on
// the host, from their metadata only: the scale values stay on the device,
// where a bad one poisons the result instead of costing a sync.
#include "autograd/node.hpp"
#include "core/error.hpp"
#include "ops/ops.hpp"

namespace mixp {

namespace {

void check_fp8_matrix(const char *fn, const char *arg, const Tensor &t) {
  if (!is_fp8(t.dtype))
    fail(MIXP_ERR_DTYPE, fn, ": ", arg, " must be MIXP_F8E4M3 or MIXP_F8E5M2, got ", dtype_name(t.dtype),
         " (quantise it with mixp_cast)");
  if (t.ndim != 2) fail(MIXP_ERR_SHAPE, fn, ": ", arg, " must be 2-D, got ", shape_str(t));
}

void check_scale(const char *fn, const char *arg, const Tensor &t) {
  if (t.dtype != MIXP_F32) fail(MIXP_ERR_DTYPE, fn, ": ", arg, " must be F32, got ", dtype_name(t.dtype));
  if (t.numel() != 1) fail(MIXP_ERR_SHAPE, fn, ": ", arg, " must have one element, got ", shape_str(t));
}

// A matrix the kernels address by row and column strides, one of them 1.
TensorPtr addressable_matrix(const TensorPtr &t) {
  const bool unit = t->strides[1] == 1 || t->strides[0] == 1 || t->shape[0] <= 1 || t->shape[1] <= 1;
  return unit ? t : contiguous(t);
}

View matrix_view(const Tensor &t) {
  View v = view_of(t);
  // A side of size 1 may carry any stride; give the kernels a unit one.
  if (t.shape[1] <= 1) v.strides[1] = 1;
  else if (t.shape[0] <= 1 && v.strides[1] != 1) v.strides[0] = 1;
  return v;
}

void check_args(const char *fn, const Tensor &a, const Tensor &sa, const Tensor &b, const Tensor &sb,
                const Tensor *bias, DType out_dtype, unsigned flags, const Tensor *amax) {
  check_fp8_matrix(fn, "a", a);
  check_fp8_matrix(fn, "b", b);
  if (a.dtype == MIXP_F8E5M2 && b.dtype == MIXP_F8E5M2)
    fail(MIXP_ERR_DTYPE, fn, ": a and b are both f8e5m2; one must be f8e4m3 (E5M2 x E5M2 products have no",
         " fp8 unit; gradients are E5M2, the weights and activations they meet E4M3)");
  if (a.shape[1] != b.shape[0])
    fail(MIXP_ERR_SHAPE, fn, ": inner dimensions differ: a is ", shape_str(a), ", b is ", shape_str(b));
  check_scale(fn, "scale_a", sa);
  check_scale(fn, "scale_b", sb);
  if (out_dtype != MIXP_F32 && out_dtype != MIXP_F16 && out_dtype != MIXP_BF16)
    fail(MIXP_ERR_DTYPE, fn, ": out_dtype must be MIXP_F32, MIXP_F16 or MIXP_BF16, got ",
         dtype_valid(int(out_dtype)) ? dtype_name(out_dtype) : str(int(out_dtype)).c_str());
  const DType bias_dtype = out_dtype == MIXP_F16 ? MIXP_F16 : MIXP_BF16;
  if (bias && bias->dtype != bias_dtype)
    fail(MIXP_ERR_DTYPE, fn, ": bias must be ", dtype_name(bias_dtype), " for out_dtype ", dtype_name(out_dtype),
         ", got ", dtype_name(bias->dtype));
  if (bias && (bias->ndim != 1 || bias->shape[0] != b.shape[1]))
    fail(MIXP_ERR_SHAPE, fn, ": bias must be [", b.shape[1], "], got ", shape_str(*bias));
  if (amax) check_scale(fn, "amax", *amax);
  if (flags & ~unsigned(MIXP_SCALED_MATMUL_FAST_ACCUM))
    fail(MIXP_ERR_INVALID_ARGUMENT, fn, ": flags = ", flags, " has bits other than MIXP_SCALED_MATMUL_FAST_ACCUM");
}

}  // namespace

TensorPtr scaled_matmul(const TensorPtr &a_in, const TensorPtr &scale_a_in, const TensorPtr &b_in,
                        const TensorPtr &scale_b_in, const TensorPtr &bias_in, DType out_dtype, unsigned flags,
                        Tensor *amax) {
  const char *fn = "mixp_scaled_matmul";
  same_session(fn, {a_in.get(), scale_a_in.get(), b_in.get(), scale_b_in.get(), bias_in.get(), amax});
  TensorPtr a = a_in, sa = scale_a_in, b = b_in, sb = scale_b_in, bias = bias_in;
  OpScope scope(OpId::scaled_matmul, a->session.get(), {&a, &sa, &b, &sb, &bias});
  // A replay recomputes the product; the amax was taken by the first run.
  scope.tape({a.get(), sa.get(), b.get(), sb.get(), bias.get()}, [out_dtype, flags](const Replay &r) {
    return scaled_matmul(r[0], r[1], r[2], r[3], r[4], out_dtype, flags, nullptr);
  });
  check_args(fn, *a, *sa, *b, *sb, bias.get(), out_dtype, flags, amax);
  Session *s = scope.session();
  if (should_record(s, {sa.get(), sb.get(), bias.get()}))
    fail(MIXP_ERR_UNSUPPORTED, fn, ": scale_a, scale_b or bias requires grad, and a scaled product records no",
         " gradient (detach them, or run the product under no_grad)");
  if (amax) scope.writes(*amax);
  TensorPtr aa = addressable_matrix(a), ba = addressable_matrix(b);
  TensorPtr out = empty(s, out_dtype, Shape{a->shape[0], b->shape[1]});
  TensorPtr bc = bias ? contiguous(bias) : TensorPtr();
  ScaledGemmArgs g;
  g.m = a->shape[0];
  g.k = a->shape[1];
  g.n = b->shape[1];
  g.a = matrix_view(*aa);
  g.b = matrix_view(*ba);
  g.scale_a = view_of(*sa);
  g.scale_b = view_of(*sb);
  if (bc) g.bias = view_of(*bc);
  g.d = view_of(*out);
  if (amax) g.amax = view_of(*amax);
  g.fast_accum = (flags & MIXP_SCALED_MATMUL_FAST_ACCUM) != 0;
  backend_of(*out).scaled_gemm(g);
  return scope.finish(out);
}

}  // namespace mixp
