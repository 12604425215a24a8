"""Tensors: numpy in and out, shape/dtype properties, operators, autograd."""

import numbers

import numpy as np

from . import capi
from ._handle import Handle
from .dtypes import as_dtype, bfloat16, dtype as _dtype_cls, float32, from_numpy_dtype
from .errors import DTypeError, InvalidArgumentError
from .session import default_session

__all__ = ["Tensor", "tensor", "from_numpy", "zeros", "ones", "full", "arange", "rand",
           "randn"]


class Tensor(Handle):
    """A reference-counted n-dimensional array (``mixp_tensor``).

    Create one with :func:`from_numpy`, :func:`tensor`, :func:`zeros`, ... or
    get one from an operation. ``close()`` drops the reference now; the
    garbage collector does it otherwise.
    """

    __slots__ = ("_session",)
    _destroy = staticmethod(capi.mixp_tensor_release)
    __array_priority__ = 1000  # numpy scalars on the left defer to our operators

    def __init__(self, raw, session):
        super().__init__(raw)
        self._session = session

    @classmethod
    def _wrap(cls, raw, session):
        return None if raw is None else cls(raw, session)

    def _new(self, raw):
        return Tensor(raw, self._session)

    @property
    def session(self):
        return self._session

    # ---- numpy ---------------------------------------------------------------
    @staticmethod
    def from_numpy(array, dtype=None, *, copy=True, session=None):
        """A tensor from a numpy array (or anything ``np.asarray`` accepts).

        copy=True copies the values. copy=False borrows the array's memory
        (zero-copy): the array must be writable, C-contiguous and of the
        tensor's exact dtype; it is kept alive until the tensor, and every view
        of it, is released, and in-place updates (an optimizer step on a
        borrowed parameter) write into it. ``dtype=mixp.bfloat16`` takes
        floats (rounded by mixp) or uint16 bit patterns; an ml_dtypes
        ``bfloat16`` array is taken as bf16 bits without a float32 detour
        (``t.numpy(bf16_bits=True).view(ml_dtypes.bfloat16)`` goes back).
        """
        session = session or default_session()
        if not copy:
            return _borrow(array, dtype, session)
        arr = np.asarray(array)
        target = None if dtype is None else as_dtype(dtype)
        if arr.dtype.name == "bfloat16" and arr.dtype.itemsize == 2 and target in (None, bfloat16):
            # ml_dtypes' bfloat16 (JAX, TensorFlow): its bits, no float32 detour.
            arr, target = arr.view(np.uint16), bfloat16
        if target is not None and target.is_float8 and arr.dtype in (np.uint8, target.numpy):
            # fp8 codes (uint8, or ml_dtypes' own type): taken as they are.
            arr = _c_order(arr.view(np.uint8))
            raw = capi.mixp_tensor_from_host(session._h, arr, int(target), arr.shape)
            return Tensor(raw, session)
        if target is not None and target.is_float8:
            t = Tensor.from_numpy(np.asarray(arr, dtype=np.float32), session=session)
            return t.to(target)
        if target is bfloat16:
            if arr.dtype == np.uint16:  # raw bits
                arr = _c_order(arr)
                raw = capi.mixp_tensor_from_host(session._h, arr, int(bfloat16), arr.shape)
                return Tensor(raw, session)
            t = Tensor.from_numpy(np.asarray(arr, dtype=np.float32), session=session)
            return t.to(bfloat16)
        own = from_numpy_dtype(arr.dtype)
        if target is None:
            if own is None:
                raise DTypeError(f"mixp.from_numpy: numpy dtype {arr.dtype} has no mixp dtype "
                                 "(float32, float16, float64, int32, int64, uint8, bool)")
            target = own
        if own is not target:
            if own is None and arr.dtype.kind not in "biuf":
                raise DTypeError(f"mixp.from_numpy: cannot convert numpy dtype {arr.dtype} "
                                 f"to {target!r}")
            arr = arr.astype(target.numpy)
        arr = _c_order(arr)
        raw = capi.mixp_tensor_from_host(session._h, arr, int(target), arr.shape)
        return Tensor(raw, session)

    def numpy(self, *, bf16_bits=False):
        """A new numpy array with the values (bf16: float32, or uint16 bits)."""
        dt = self.dtype
        if dt is bfloat16 and not bf16_bits:
            with self._session.no_grad():
                return self.to(float32).numpy()
        np_dtype = np.uint16 if dt is bfloat16 else dt.numpy
        out = np.empty(self.shape, dtype=np_dtype)
        capi.mixp_tensor_to_host(self._h, out)
        return out

    def __array__(self, dtype=None):
        a = self.numpy()
        return a if dtype is None else a.astype(dtype)

    # ---- DLPack (the array API's exchange protocol) -----------------------------
    def __dlpack__(self, *, stream=None, max_version=None, dl_device=None, copy=None):
        """A DLPack capsule sharing this tensor's memory (no copy).

        ``max_version`` >= (1, 0) gives a DLPack 1.0 ("dltensor_versioned")
        capsule, else the legacy one numpy < 2 and older consumers take.
        ``copy=True`` shares a fresh copy instead; ``copy=False`` is what
        happens anyway. On CUDA the session's queued work is waited for first,
        so ``stream`` (the consumer's) needs no further ordering.
        ``dl_device`` other than this tensor's raises BufferError.
        """
        if dl_device is not None and tuple(dl_device) != self.__dlpack_device__():
            raise BufferError(f"mixp: __dlpack__: the tensor is on {self.__dlpack_device__()}, "
                              f"not {tuple(dl_device)}")
        src = self
        if copy:
            src = Tensor(capi.mixp_tensor_zeros(self._session._h, int(self.dtype), list(self.shape)),
                         self._session)
            with self._session.no_grad():
                src.copy_(self)
        versioned = max_version is not None and tuple(max_version)[0] >= 1
        return capi.mixp_swig_to_dlpack(src._h, 1 if versioned else 0)

    def __dlpack_device__(self):
        """(device type, index): (1, 0) for the CPU (kDLCPU), (2, N) for cuda:N (kDLCUDA)."""
        dev = self._session.device
        if dev.startswith("cuda"):
            return (2, int(dev.split(":")[1]) if ":" in dev else 0)
        return (1, 0)

    def tolist(self):
        return self.numpy().tolist()

    def item(self):
        """The value of a one-element tensor as a Python float (int/bool for those dtypes)."""
        v = capi.mixp_tensor_item(self._h)
        dt = self.dtype
        if dt is _dtype_cls.bool_:
            return bool(v)
        if not dt.is_floating_point:
            return int(v)
        return v

    def __float__(self):
        return float(capi.mixp_tensor_item(self._h))

    def __int__(self):
        return int(capi.mixp_tensor_item(self._h))

    def __bool__(self):
        return bool(capi.mixp_tensor_item(self._h))

    # ---- properties ------------------------------------------------------------
    @property
    def shape(self):
        return capi.mixp_tensor_shape(self._h)

    def size(self, dim=None):
        return self.shape if dim is None else self.shape[dim]

    @property
    def dtype(self):
        return _dtype_cls(capi.mixp_tensor_dtype(self._h))

    @property
    def ndim(self):
        return capi.mixp_tensor_ndim(self._h)

    def dim(self):
        return self.ndim

    def numel(self):
        return capi.mixp_tensor_numel(self._h)

    def stride(self, dim=None):
        if dim is None:
            return tuple(capi.mixp_tensor_stride(self._h, d) for d in range(self.ndim))
        return capi.mixp_tensor_stride(self._h, dim)

    def is_contiguous(self):
        return bool(capi.mixp_tensor_is_contiguous(self._h))

    def __len__(self):
        shape = self.shape
        if not shape:
            raise TypeError("len() of a 0-d tensor")
        return shape[0]

    def __repr__(self):
        if self.closed:
            return "<mixp.Tensor closed>"
        grad = ", requires_grad=True" if self.requires_grad else ""
        return f"mixp.Tensor({np.array2string(self.numpy(), threshold=20)}, dtype={self.dtype!r}{grad})"

    # ---- autograd -----------------------------------------------------------------
    @property
    def requires_grad(self):
        return bool(capi.mixp_tensor_requires_grad(self._h))

    @requires_grad.setter
    def requires_grad(self, value):
        capi.mixp_tensor_set_requires_grad(self._h, int(bool(value)))

    def requires_grad_(self, value=True):
        self.requires_grad = value
        return self

    @property
    def is_leaf(self):
        return bool(capi.mixp_tensor_is_leaf(self._h))

    @property
    def grad(self):
        """The accumulated gradient (a new Tensor), or None."""
        return Tensor._wrap(capi.mixp_tensor_grad(self._h), self._session)

    def zero_grad(self):
        capi.mixp_tensor_zero_grad(self._h)

    def detach(self):
        return self._new(capi.mixp_tensor_detach(self._h))

    def backward(self, gradient=None):
        """Back-propagates from this tensor (one element, or with ``gradient``)."""
        seed = None if gradient is None else _as_tensor(gradient, self)._h
        capi.mixp_backward(self._h, seed)

    def copy_(self, src):
        """Copies ``src`` (a Tensor, array or scalar; broadcast, converted) into self."""
        capi.mixp_tensor_copy_(self._h, _as_tensor(src, self)._h)
        return self

    def retain(self):
        """Another Tensor object sharing this tensor (a new C reference)."""
        return self._new(capi.mixp_tensor_retain(self._h))

    # ---- conversions and views -------------------------------------------------------
    def to(self, dtype):
        return self._new(capi.mixp_cast(self._h, int(as_dtype(dtype))))

    def float(self):
        return self.to(_dtype_cls.float32)

    def half(self):
        return self.to(_dtype_cls.float16)

    def bfloat16(self):
        return self.to(bfloat16)

    def double(self):
        return self.to(_dtype_cls.float64)

    def long(self):
        return self.to(_dtype_cls.int64)

    def reshape(self, *shape):
        shape = shape[0] if len(shape) == 1 and not isinstance(shape[0], numbers.Integral) else shape
        return self._new(capi.mixp_reshape(self._h, shape))

    view = reshape

    def transpose(self, dim0, dim1):
        return self._new(capi.mixp_transpose(self._h, dim0, dim1))

    @property
    def T(self):
        return self.transpose(-2, -1) if self.ndim >= 2 else self

    def permute(self, *dims):
        dims = dims[0] if len(dims) == 1 and not isinstance(dims[0], numbers.Integral) else dims
        return self._new(capi.mixp_permute(self._h, dims))

    def contiguous(self):
        return self._new(capi.mixp_contiguous(self._h))

    def flatten(self, start_dim=0, end_dim=-1):
        return self._new(capi.mixp_flatten(self._h, start_dim, end_dim))

    def slice(self, dim, start, end, step=1):
        return self._new(capi.mixp_slice(self._h, dim, start, end, step))

    def __getitem__(self, index):
        """Basic indexing: ints and slices (step >= 1) per leading dimension."""
        if not isinstance(index, tuple):
            index = (index,)
        out, dim, drop = self, 0, []
        for item in index:
            if isinstance(item, slice):
                start, stop, step = item.start, item.stop, item.step
                out = out.slice(dim, 0 if start is None else start,
                                2**62 if stop is None else stop, 1 if step is None else step)
            elif isinstance(item, numbers.Integral):
                i = int(item)
                out = out.slice(dim, i, i + 1 if i != -1 else 2**62, 1)
                drop.append(dim)
            else:
                raise TypeError(f"mixp.Tensor indices must be ints or slices, not {type(item).__name__}")
            dim += 1
        if drop:
            shape = [s for d, s in enumerate(out.shape) if d not in drop]
            out = out.reshape(shape)
        return out

    # ---- reductions and functions ------------------------------------------------------
    def sum(self, dim=None, keepdim=False):
        return self._new(capi.mixp_sum(self._h, _dims(dim), int(keepdim)))

    def mean(self, dim=None, keepdim=False):
        return self._new(capi.mixp_mean(self._h, _dims(dim), int(keepdim)))

    def max(self, dim, keepdim=False):
        """``(values, indices)`` along ``dim``."""
        values, indices = capi.mixp_max(self._h, dim, int(keepdim))
        return self._new(values), self._new(indices)

    def argmax(self, dim, keepdim=False):
        return self._new(capi.mixp_argmax(self._h, dim, int(keepdim)))

    def softmax(self, dim):
        return self._new(capi.mixp_softmax(self._h, dim))

    def log_softmax(self, dim):
        return self._new(capi.mixp_log_softmax(self._h, dim))

    def relu(self):
        return self._new(capi.mixp_relu(self._h))

    def sigmoid(self):
        return self._new(capi.mixp_sigmoid(self._h))

    def tanh(self):
        return self._new(capi.mixp_tanh(self._h))

    def exp(self):
        return self._new(capi.mixp_exp(self._h))

    def log(self):
        return self._new(capi.mixp_log(self._h))

    def sqrt(self):
        return self._new(capi.mixp_sqrt(self._h))

    # ---- operators ---------------------------------------------------------------
    def __add__(self, other):
        if isinstance(other, numbers.Real):
            return self._new(capi.mixp_add_scalar(self._h, float(other)))
        return self._new(capi.mixp_add(self._h, _as_tensor(other, self)._h))

    __radd__ = __add__

    def __sub__(self, other):
        if isinstance(other, numbers.Real):
            return self._new(capi.mixp_add_scalar(self._h, -float(other)))
        return self._new(capi.mixp_sub(self._h, _as_tensor(other, self)._h))

    def __rsub__(self, other):
        if isinstance(other, numbers.Real):
            return self._new(capi.mixp_rsub_scalar(self._h, float(other)))
        return self._new(capi.mixp_sub(_as_tensor(other, self)._h, self._h))

    def __mul__(self, other):
        if isinstance(other, numbers.Real):
            return self._new(capi.mixp_mul_scalar(self._h, float(other)))
        return self._new(capi.mixp_mul(self._h, _as_tensor(other, self)._h))

    __rmul__ = __mul__

    def __truediv__(self, other):
        # x / s divides (a 0-d tensor of s, broadcast): x * (1/s) rounds differently.
        return self._new(capi.mixp_div(self._h, _as_tensor(other, self)._h))

    def __rtruediv__(self, other):
        if isinstance(other, numbers.Real):
            return self._new(capi.mixp_rdiv_scalar(self._h, float(other)))
        return self._new(capi.mixp_div(_as_tensor(other, self)._h, self._h))

    def __neg__(self):
        return self._new(capi.mixp_neg(self._h))

    def __pow__(self, exponent):
        return self._new(capi.mixp_pow(self._h, float(exponent)))

    def __matmul__(self, other):
        return self._new(capi.mixp_matmul(self._h, _as_tensor(other, self)._h))

    def __rmatmul__(self, other):
        return self._new(capi.mixp_matmul(_as_tensor(other, self)._h, self._h))

    # Views and in-place semantics make value hashing meaningless; identity it is.
    __hash__ = object.__hash__


def _c_order(arr):
    # (np.ascontiguousarray would turn a 0-d array into a 1-d one.)
    return arr if arr.flags.c_contiguous else arr.copy(order="C")


def _dims(dim):
    if dim is None:
        return []
    if isinstance(dim, numbers.Integral):
        return [int(dim)]
    return list(dim)


def _as_tensor(value, like):
    """``value`` as a Tensor of ``like``'s session (scalars take ``like``'s dtype)."""
    if isinstance(value, Tensor):
        return value
    if isinstance(value, numbers.Real):
        raw = capi.mixp_tensor_full(like._session._h, int(like.dtype), [], float(value))
        return Tensor(raw, like._session)
    return Tensor.from_numpy(value, session=like._session)


def _borrow(array, dtype, session):
    if not isinstance(array, np.ndarray):
        raise TypeError("mixp.from_numpy(copy=False) needs a numpy array")
    own = from_numpy_dtype(array.dtype)
    target = own if dtype is None else as_dtype(dtype)
    if target is bfloat16 and array.dtype == np.uint16:
        own = bfloat16
    if not (array.flags.writeable and array.flags.c_contiguous):
        raise InvalidArgumentError("mixp.from_numpy(copy=False): the array must be writable and "
                                   "C-contiguous (mixp may write into borrowed memory); use copy=True")
    if own is None or own is not target:
        raise DTypeError(f"mixp.from_numpy(copy=False): a {array.dtype} array cannot be borrowed "
                         f"as {target!r} (zero-copy needs the exact dtype; use copy=True)")
    raw = capi.mixp_swig_borrow_buffer(session._h, array, int(target), array.shape)
    return Tensor(raw, session)


def from_numpy(array, dtype=None, *, copy=True, session=None):
    """See :meth:`Tensor.from_numpy`."""
    return Tensor.from_numpy(array, dtype, copy=copy, session=session)


def tensor(data, dtype=None, *, requires_grad=False, session=None):
    """A tensor holding a copy of ``data`` (nested lists, scalars or arrays).

    Python floats become float32 unless ``dtype`` says otherwise (as PyTorch).
    """
    arr = np.asarray(data)
    if dtype is None and arr.dtype == np.float64 and not isinstance(data, np.ndarray):
        dtype = float32
    t = Tensor.from_numpy(arr, dtype, session=session)
    if requires_grad:
        t.requires_grad = True
    return t


def _shape(shape):
    if len(shape) == 1 and not isinstance(shape[0], numbers.Integral):
        return tuple(shape[0])
    return shape


def zeros(*shape, dtype=float32, requires_grad=False, session=None):
    session = session or default_session()
    t = Tensor(capi.mixp_tensor_zeros(session._h, int(as_dtype(dtype)), _shape(shape)), session)
    return t.requires_grad_() if requires_grad else t


def ones(*shape, dtype=float32, requires_grad=False, session=None):
    session = session or default_session()
    t = Tensor(capi.mixp_tensor_ones(session._h, int(as_dtype(dtype)), _shape(shape)), session)
    return t.requires_grad_() if requires_grad else t


def full(shape, value, dtype=float32, session=None):
    session = session or default_session()
    if isinstance(shape, numbers.Integral):
        shape = (shape,)
    return Tensor(capi.mixp_tensor_full(session._h, int(as_dtype(dtype)), shape, float(value)),
                  session)


def arange(start, end=None, step=1, dtype=float32, session=None):
    session = session or default_session()
    if end is None:
        start, end = 0, start
    return Tensor(capi.mixp_tensor_arange(session._h, int(as_dtype(dtype)), float(start),
                                          float(end), float(step)), session)


def rand(*shape, dtype=float32, session=None):
    session = session or default_session()
    return Tensor(capi.mixp_tensor_rand(session._h, int(as_dtype(dtype)), _shape(shape)), session)


def randn(*shape, dtype=float32, session=None):
    session = session or default_session()
    return Tensor(capi.mixp_tensor_randn(session._h, int(as_dtype(dtype)), _shape(shape)), session)
