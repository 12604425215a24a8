package mixp

import (
	"runtime"

	"mixp.dev/mixp/internal/raw"
)

// Operations return a new tensor (recorded by autograd when an input
// requires grad) and never change their inputs. Under an autocast region
// they run in the dtype the region's policy chooses.

func (t *Tensor) unary(f func(uintptr, *uintptr) raw.Status) (*Tensor, error) {
	return tensorOut(func(out *uintptr) raw.Status { return f(t.p(), out) }, t)
}

func (t *Tensor) binary(o *Tensor, f func(uintptr, uintptr, *uintptr) raw.Status) (*Tensor, error) {
	return tensorOut(func(out *uintptr) raw.Status { return f(t.p(), o.p(), out) }, t, o)
}

func (t *Tensor) scalar(v float64, f func(uintptr, float64, *uintptr) raw.Status) (*Tensor, error) {
	return tensorOut(func(out *uintptr) raw.Status { return f(t.p(), v, out) }, t)
}

// Add is t + o (broadcasting).
func (t *Tensor) Add(o *Tensor) (*Tensor, error) { return t.binary(o, raw.Mixp_add) }

// Sub is t - o (broadcasting).
func (t *Tensor) Sub(o *Tensor) (*Tensor, error) { return t.binary(o, raw.Mixp_sub) }

// Mul is t * o elementwise (broadcasting).
func (t *Tensor) Mul(o *Tensor) (*Tensor, error) { return t.binary(o, raw.Mixp_mul) }

// Div is t / o elementwise (broadcasting).
func (t *Tensor) Div(o *Tensor) (*Tensor, error) { return t.binary(o, raw.Mixp_div) }

// Matmul is the matrix product (batched over leading dimensions).
func (t *Tensor) Matmul(o *Tensor) (*Tensor, error) { return t.binary(o, raw.Mixp_matmul) }

// AddScalar is t + v.
func (t *Tensor) AddScalar(v float64) (*Tensor, error) { return t.scalar(v, raw.Mixp_add_scalar) }

// MulScalar is t * v.
func (t *Tensor) MulScalar(v float64) (*Tensor, error) { return t.scalar(v, raw.Mixp_mul_scalar) }

// Pow is t ** v.
func (t *Tensor) Pow(v float64) (*Tensor, error) { return t.scalar(v, raw.Mixp_pow) }

// RsubScalar is v - t.
func (t *Tensor) RsubScalar(v float64) (*Tensor, error) { return t.scalar(v, raw.Mixp_rsub_scalar) }

// RdivScalar is v / t.
func (t *Tensor) RdivScalar(v float64) (*Tensor, error) { return t.scalar(v, raw.Mixp_rdiv_scalar) }

// Neg is -t.
func (t *Tensor) Neg() (*Tensor, error) { return t.unary(raw.Mixp_neg) }

// Exp is e ** t.
func (t *Tensor) Exp() (*Tensor, error) { return t.unary(raw.Mixp_exp) }

// Log is the natural logarithm.
func (t *Tensor) Log() (*Tensor, error) { return t.unary(raw.Mixp_log) }

// Sqrt is the square root.
func (t *Tensor) Sqrt() (*Tensor, error) { return t.unary(raw.Mixp_sqrt) }

// Relu is max(t, 0).
func (t *Tensor) Relu() (*Tensor, error) { return t.unary(raw.Mixp_relu) }

// Sigmoid is 1 / (1 + e ** -t).
func (t *Tensor) Sigmoid() (*Tensor, error) { return t.unary(raw.Mixp_sigmoid) }

// Tanh is the hyperbolic tangent.
func (t *Tensor) Tanh() (*Tensor, error) { return t.unary(raw.Mixp_tanh) }

// Silu is t * sigmoid(t).
func (t *Tensor) Silu() (*Tensor, error) { return t.unary(raw.Mixp_silu) }

// Hardswish is t * relu6(t + 3) / 6.
func (t *Tensor) Hardswish() (*Tensor, error) { return t.unary(raw.Mixp_hardswish) }

// Hardsigmoid is relu6(t + 3) / 6.
func (t *Tensor) Hardsigmoid() (*Tensor, error) { return t.unary(raw.Mixp_hardsigmoid) }

// Gelu is the erf GELU (PyTorch's default).
func (t *Tensor) Gelu() (*Tensor, error) {
	return t.unary(func(x uintptr, out *uintptr) raw.Status { return raw.Mixp_gelu(x, raw.MIXP_GELU_ERF, out) })
}

// GeluTanh is GELU's tanh approximation (PyTorch's approximate='tanh', GPT-2's).
func (t *Tensor) GeluTanh() (*Tensor, error) { return t.unary(raw.Mixp_gelu_tanh) }

// Contiguous is t laid out row-major (t itself, retained, when it already is).
func (t *Tensor) Contiguous() (*Tensor, error) { return t.unary(raw.Mixp_contiguous) }

// Detach is a view of t's values outside the autograd graph.
func (t *Tensor) Detach() (*Tensor, error) { return t.unary(raw.Mixp_tensor_detach) }

// Cast converts to another dtype (round to nearest even).
func (t *Tensor) Cast(d DType) (*Tensor, error) {
	return t.unary(func(x uintptr, out *uintptr) raw.Status { return raw.Mixp_cast(x, raw.Mixp_dtype(d), out) })
}

// Reshape is a view (or copy) with another shape; one entry may be -1.
func (t *Tensor) Reshape(shape ...int64) (*Tensor, error) {
	return t.unary(func(x uintptr, out *uintptr) raw.Status { return raw.Mixp_reshape(x, shape, out) })
}

// Permute reorders the dimensions (a view): dimension i of the result is
// dimension dims[i] of t.
func (t *Tensor) Permute(dims ...int) (*Tensor, error) {
	return t.unary(func(x uintptr, out *uintptr) raw.Status { return raw.Mixp_permute(x, int32s(dims), out) })
}

// Transpose swaps two dimensions (a view).
func (t *Tensor) Transpose(d0, d1 int) (*Tensor, error) {
	return t.unary(func(x uintptr, out *uintptr) raw.Status { return raw.Mixp_transpose(x, d0, d1, out) })
}

// Flatten merges dimensions start..end (inclusive; negative counts from the end).
func (t *Tensor) Flatten(start, end int) (*Tensor, error) {
	return t.unary(func(x uintptr, out *uintptr) raw.Status { return raw.Mixp_flatten(x, start, end, out) })
}

// Slice is the view [start:end:step] along dim.
func (t *Tensor) Slice(dim int, start, end, step int64) (*Tensor, error) {
	return t.unary(func(x uintptr, out *uintptr) raw.Status { return raw.Mixp_slice(x, dim, start, end, step, out) })
}

func int32s(v []int) []int32 {
	r := make([]int32, len(v))
	for i, x := range v {
		r[i] = int32(x)
	}
	return r
}

// Sum reduces over dims (all dimensions when none are given).
func (t *Tensor) Sum(keepdim bool, dims ...int) (*Tensor, error) {
	return t.unary(func(x uintptr, out *uintptr) raw.Status { return raw.Mixp_sum(x, int32s(dims), b2i(keepdim), out) })
}

// Mean averages over dims (all dimensions when none are given).
func (t *Tensor) Mean(keepdim bool, dims ...int) (*Tensor, error) {
	return t.unary(func(x uintptr, out *uintptr) raw.Status { return raw.Mixp_mean(x, int32s(dims), b2i(keepdim), out) })
}

// Max is the largest value along dim and its index (I64), the first one
// on ties.
func (t *Tensor) Max(dim int, keepdim bool) (values, indices *Tensor, err error) {
	var v, i uintptr
	err = check(raw.Mixp_max(t.p(), dim, b2i(keepdim), &v, &i))
	runtime.KeepAlive(t)
	if err != nil {
		return nil, nil, err
	}
	return newTensor(v), newTensor(i), nil
}

// Argmax is the index of the largest value along dim (I64).
func (t *Tensor) Argmax(dim int, keepdim bool) (*Tensor, error) {
	return t.unary(func(x uintptr, out *uintptr) raw.Status { return raw.Mixp_argmax(x, dim, b2i(keepdim), out) })
}

// Softmax along dim.
func (t *Tensor) Softmax(dim int) (*Tensor, error) {
	return t.unary(func(x uintptr, out *uintptr) raw.Status { return raw.Mixp_softmax(x, dim, out) })
}

// LogSoftmax along dim.
func (t *Tensor) LogSoftmax(dim int) (*Tensor, error) {
	return t.unary(func(x uintptr, out *uintptr) raw.Status { return raw.Mixp_log_softmax(x, dim, out) })
}

// Dropout zeroes elements with probability p in training mode (scaling the rest).
func (t *Tensor) Dropout(p float64, training bool) (*Tensor, error) {
	return t.unary(func(x uintptr, out *uintptr) raw.Status { return raw.Mixp_dropout(x, p, b2i(training), out) })
}

// Reduction of a loss.
type Reduction int

// Loss reductions.
const (
	Mean Reduction = 0
	Sum  Reduction = 1
	None Reduction = 2
)

// CrossEntropy is the cross-entropy of logits [N, C] against I64 class
// indices [N]; targets equal to -100 are ignored, as in PyTorch.
func CrossEntropy(logits, target *Tensor, r Reduction) (*Tensor, error) {
	return tensorOut(func(out *uintptr) raw.Status {
		return raw.Mixp_cross_entropy(logits.p(), target.p(), raw.Mixp_reduction(r), -100, out)
	}, logits, target)
}

// MSELoss is the mean (or sum) squared error.
func MSELoss(a, b *Tensor, r Reduction) (*Tensor, error) {
	return tensorOut(func(out *uintptr) raw.Status {
		return raw.Mixp_mse_loss(a.p(), b.p(), raw.Mixp_reduction(r), out)
	}, a, b)
}

// Pad adds (before, after) pairs of `value` starting from the last dim;
// negative amounts crop.
func (t *Tensor) Pad(value float64, pads ...int64) (*Tensor, error) {
	return t.unary(func(x uintptr, out *uintptr) raw.Status { return raw.Mixp_pad(x, pads, value, out) })
}

// Embedding looks up rows of weight [V, D] by the I64 indices (paddingIdx
// -1 for none: that row gets no gradient).
func Embedding(weight, indices *Tensor, paddingIdx int64) (*Tensor, error) {
	return tensorOut(func(out *uintptr) raw.Status {
		return raw.Mixp_embedding(weight.p(), indices.p(), paddingIdx, out)
	}, weight, indices)
}

// LayerNorm normalises over the last normalizedNdim dims; weight and bias
// may be nil.
func LayerNorm(x *Tensor, normalizedNdim int, weight, bias *Tensor, eps float64) (*Tensor, error) {
	return tensorOut(func(out *uintptr) raw.Status {
		return raw.Mixp_layer_norm(x.p(), normalizedNdim, weight.p(), bias.p(), eps, out)
	}, x, weight, bias)
}

// GroupNorm normalises x [N, C, ...] over groups of C/groups channels;
// weight and bias ([C]) may be nil.
func GroupNorm(x *Tensor, groups int64, weight, bias *Tensor, eps float64) (*Tensor, error) {
	return tensorOut(func(out *uintptr) raw.Status {
		return raw.Mixp_group_norm(x.p(), groups, weight.p(), bias.p(), eps, out)
	}, x, weight, bias)
}

// ScaledDotProductAttention is softmax(q k^T * scale [+ causal mask]) v over
// [..., L, E] inputs; scale <= 0 means 1/sqrt(E).
func ScaledDotProductAttention(q, k, v *Tensor, causal bool, dropoutP, scale float64) (*Tensor, error) {
	return tensorOut(func(out *uintptr) raw.Status {
		return raw.Mixp_scaled_dot_product_attention(q.p(), k.p(), v.p(), b2i(causal), dropoutP, scale, out)
	}, q, k, v)
}

// Bmm is the batched matrix product of a [B, M, K] and b [B, K, N].
func Bmm(a, b *Tensor) (*Tensor, error) { return a.binary(b, raw.Mixp_bmm) }

// Linear is x @ weight^T + bias (bias may be nil).
func Linear(x, weight, bias *Tensor) (*Tensor, error) {
	return tensorOut(func(out *uintptr) raw.Status {
		return raw.Mixp_linear(x.p(), weight.p(), bias.p(), out)
	}, x, weight, bias)
}

// ScaledMatmulFastAccum lets the device accumulate with fewer bits
// (cuBLASLt's fast accumulation; the CPU ignores it).
const ScaledMatmulFastAccum = uint(raw.MIXP_SCALED_MATMUL_FAST_ACCUM)

// ScaledMatmul is the fp8 product (scaleA * scaleB) * (a x b) + bias of
// a [M, K] and b [K, N] (F8E4M3 or F8E5M2, not both E5M2) with one-element
// F32 dequantisation scales, rounded once to outDType (F32, F16, BF16).
// bias (nil, or [N] BF16, F16 for an F16 output) and amax (nil, or a
// one-element F32 tensor receiving max |D| on the device) are optional;
// flags is 0 or ScaledMatmulFastAccum. Not differentiable.
func ScaledMatmul(a, scaleA, b, scaleB, bias *Tensor, outDType DType, flags uint, amax *Tensor) (*Tensor, error) {
	return tensorOut(func(out *uintptr) raw.Status {
		return raw.Mixp_scaled_matmul(a.p(), scaleA.p(), b.p(), scaleB.p(), bias.p(), raw.Mixp_dtype(outDType),
			flags, amax.p(), out)
	}, a, scaleA, b, scaleB, bias, amax)
}

func ptrs(ts []*Tensor) []uintptr {
	r := make([]uintptr, len(ts))
	for i, t := range ts {
		r[i] = t.p()
	}
	return r
}

// Cat concatenates tensors along dim.
func Cat(ts []*Tensor, dim int) (*Tensor, error) {
	return tensorOut(func(out *uintptr) raw.Status { return raw.Mixp_cat(ptrs(ts), dim, out) }, ts)
}

// Split cuts t along dim into pieces of the given sizes.
func (t *Tensor) Split(dim int, sizes ...int64) ([]*Tensor, error) {
	outs := make([]uintptr, len(sizes))
	err := check(raw.Mixp_split(t.p(), sizes, dim, outs))
	runtime.KeepAlive(t)
	if err != nil {
		return nil, err
	}
	r := make([]*Tensor, len(outs))
	for i, p := range outs {
		r[i] = newTensor(p)
	}
	return r, nil
}
