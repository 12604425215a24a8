package mixp

import (
	"fmt"
	"math"
	"runtime"
	"unsafe"

	"mixp.dev/mixp/internal/raw"
)

// DType is an element type (values fixed by the C ABI).
type DType int

// The element types of mixp.h.
const (
	F32  DType = 0
	F16  DType = 1
	BF16 DType = 2
	F64  DType = 3
	I32  DType = 4
	I64  DType = 5
	U8   DType = 6
	Bool DType = 7
	// The 8-bit float storage types (casts, copies, views and scaled
	// products take them; other ops refuse them).
	F8E4M3 DType = 8
	F8E5M2 DType = 9
)

func (d DType) String() string { return raw.Mixp_dtype_name(raw.Mixp_dtype(d)) }

// Size is the size of one element in bytes (0 for an unknown dtype).
func (d DType) Size() int { return int(raw.Mixp_dtype_size(raw.Mixp_dtype(d))) }

// Tensor is one reference to a mixp tensor. Close drops it (a finalizer
// drops it otherwise); views and results hold references of their own.
type Tensor struct{ h handle }

func (t *Tensor) hdl() *handle { return &t.h }

func (t *Tensor) p() uintptr {
	if t == nil {
		return 0
	}
	return t.h.ptr
}

func newTensor(ptr uintptr) *Tensor {
	t := &Tensor{}
	track(t, ptr, raw.Mixp_tensor_release)
	return t
}

// Close releases this reference. Closing twice is harmless.
func (t *Tensor) Close() error {
	if t != nil {
		t.h.close()
	}
	return nil
}

// tensorOut runs a C call that writes one tensor and wraps the result.
func tensorOut(call func(out *uintptr) raw.Status, keep ...any) (*Tensor, error) {
	var out uintptr
	err := check(call(&out))
	runtime.KeepAlive(keep)
	if err != nil {
		return nil, err
	}
	return newTensor(out), nil
}

// FromBytes copies host memory (row-major, little-endian elements of dtype)
// into a new tensor of the given shape.
func FromBytes(s *Session, data []byte, dtype DType, shape ...int64) (*Tensor, error) {
	return tensorOut(func(out *uintptr) raw.Status {
		return raw.Mixp_tensor_from_host(s.p(), data, raw.Mixp_dtype(dtype), shape, out)
	}, s)
}

// FromFloat32 copies float32 values into a new F32 tensor.
func FromFloat32(s *Session, data []float32, shape ...int64) (*Tensor, error) {
	return FromBytes(s, bytesOf(data), F32, shape...)
}

// FromInt64 copies int64 values into a new I64 tensor (e.g. class labels).
func FromInt64(s *Session, data []int64, shape ...int64) (*Tensor, error) {
	return FromBytes(s, bytesOf(data), I64, shape...)
}

func bytesOf[T float32 | float64 | int64 | int32](v []T) []byte {
	if len(v) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(&v[0])), len(v)*int(unsafe.Sizeof(v[0])))
}

func shaped(s *Session, dtype DType, shape []int64, f func(uintptr, raw.Mixp_dtype, []int64, *uintptr) raw.Status) (*Tensor, error) {
	return tensorOut(func(out *uintptr) raw.Status { return f(s.p(), raw.Mixp_dtype(dtype), shape, out) }, s)
}

// Zeros is a new tensor of zeros.
func Zeros(s *Session, dtype DType, shape ...int64) (*Tensor, error) {
	return shaped(s, dtype, shape, raw.Mixp_tensor_zeros)
}

// Ones is a new tensor of ones.
func Ones(s *Session, dtype DType, shape ...int64) (*Tensor, error) {
	return shaped(s, dtype, shape, raw.Mixp_tensor_ones)
}

// Rand is a new tensor of uniform [0, 1) values from the session's stream.
func Rand(s *Session, dtype DType, shape ...int64) (*Tensor, error) {
	return shaped(s, dtype, shape, raw.Mixp_tensor_rand)
}

// Randn is a new tensor of standard normal values from the session's stream.
func Randn(s *Session, dtype DType, shape ...int64) (*Tensor, error) {
	return shaped(s, dtype, shape, raw.Mixp_tensor_randn)
}

// Full is a new tensor filled with value.
func Full(s *Session, dtype DType, value float64, shape ...int64) (*Tensor, error) {
	return tensorOut(func(out *uintptr) raw.Status {
		return raw.Mixp_tensor_full(s.p(), raw.Mixp_dtype(dtype), shape, value, out)
	}, s)
}

// Arange is [start, start+step, ...) below end.
func Arange(s *Session, dtype DType, start, end, step float64) (*Tensor, error) {
	return tensorOut(func(out *uintptr) raw.Status {
		return raw.Mixp_tensor_arange(s.p(), raw.Mixp_dtype(dtype), start, end, step, out)
	}, s)
}

// DType is the tensor's element type.
func (t *Tensor) DType() DType {
	d := DType(raw.Mixp_tensor_dtype(t.p()))
	runtime.KeepAlive(t)
	return d
}

// Shape is the tensor's shape (nil and an error after Close).
func (t *Tensor) Shape() ([]int64, error) {
	buf := make([]int64, 8)
	var nd int32
	err := check(raw.Mixp_tensor_shape(t.p(), buf, &nd))
	runtime.KeepAlive(t)
	if err != nil {
		return nil, err
	}
	return buf[:nd], nil
}

// Numel is the number of elements.
func (t *Tensor) Numel() int64 {
	n := raw.Mixp_tensor_numel(t.p())
	runtime.KeepAlive(t)
	return n
}

// Bytes copies the tensor's elements to host memory (row-major).
func (t *Tensor) Bytes() ([]byte, error) {
	n := t.Numel() // -1 once closed: then mixp_tensor_to_host reports the NULL tensor
	if n < 0 {
		n = 0
	}
	buf := make([]byte, n*int64(t.DType().Size()))
	err := check(raw.Mixp_tensor_to_host(t.p(), buf))
	runtime.KeepAlive(t)
	if err != nil {
		return nil, err
	}
	return buf, nil
}

// Float32s copies an F32 tensor to host memory; other float dtypes are
// converted (rounding F64) first, without recording autograd.
func (t *Tensor) Float32s() ([]float32, error) {
	src := t
	if t.DType() != F32 {
		c, err := t.Cast(F32)
		if err != nil {
			return nil, err
		}
		defer c.Close()
		src = c
	}
	b, err := src.Bytes()
	if err != nil {
		return nil, err
	}
	out := make([]float32, len(b)/4)
	for i := range out {
		out[i] = math.Float32frombits(uint32(b[4*i]) | uint32(b[4*i+1])<<8 | uint32(b[4*i+2])<<16 | uint32(b[4*i+3])<<24)
	}
	return out, nil
}

// Item is the value of a one-element tensor.
func (t *Tensor) Item() (float64, error) {
	var v float64
	err := check(raw.Mixp_tensor_item(t.p(), &v))
	runtime.KeepAlive(t)
	return v, err
}

// CopyFrom copies src's values into t (same shape; dtypes may differ).
func (t *Tensor) CopyFrom(src *Tensor) error {
	err := check(raw.Mixp_tensor_copy_(t.p(), src.p()))
	runtime.KeepAlive(t)
	runtime.KeepAlive(src)
	return err
}

// Retain is a second reference to the same tensor, closed independently.
func (t *Tensor) Retain() (*Tensor, error) {
	p := raw.Mixp_tensor_retain(t.p())
	runtime.KeepAlive(t)
	if p == 0 {
		return nil, &Error{Status: StatusInvalidArgument, Message: "mixp_tensor_retain: the tensor is closed"}
	}
	return newTensor(p), nil
}

// SetRequiresGrad marks a leaf tensor as a parameter to differentiate.
func (t *Tensor) SetRequiresGrad(on bool) error {
	err := check(raw.Mixp_tensor_set_requires_grad(t.p(), b2i(on)))
	runtime.KeepAlive(t)
	return err
}

// RequiresGrad reports whether gradients flow to or through t.
func (t *Tensor) RequiresGrad() bool {
	r := raw.Mixp_tensor_requires_grad(t.p()) != 0
	runtime.KeepAlive(t)
	return r
}

// Grad is the accumulated gradient (nil, nil when there is none yet).
func (t *Tensor) Grad() (*Tensor, error) {
	var out uintptr
	err := check(raw.Mixp_tensor_grad(t.p(), &out))
	runtime.KeepAlive(t)
	if err != nil || out == 0 {
		return nil, err
	}
	return newTensor(out), nil
}

// ZeroGrad drops the accumulated gradient.
func (t *Tensor) ZeroGrad() error {
	err := check(raw.Mixp_tensor_zero_grad(t.p()))
	runtime.KeepAlive(t)
	return err
}

// Backward differentiates a scalar t (seed 1) into every leaf that requires grad.
func (t *Tensor) Backward() error {
	err := check(raw.Mixp_backward(t.p(), 0))
	runtime.KeepAlive(t)
	return err
}

// String describes the tensor, e.g. "Tensor(f32, [2 3])".
func (t *Tensor) String() string {
	sh, err := t.Shape()
	if err != nil {
		return "Tensor(closed)"
	}
	return fmt.Sprintf("Tensor(%s, %v)", t.DType(), sh)
}
