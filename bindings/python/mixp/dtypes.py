"""mixp's element types and their numpy counterparts.

numpy has no bfloat16: ``Tensor.numpy()`` returns bf16 tensors as float32
(exact: every bf16 value is a float32), or as their raw uint16 bit patterns
with ``numpy(bf16_bits=True)``; ``from_numpy(a, dtype=mixp.bfloat16)`` takes a
float array (rounded to nearest even by mixp) or a uint16 array of bits.

The 8-bit floats (``float8_e4m3fn``, ``float8_e5m2``: storage types) are
ml_dtypes' ``float8_e4m3fn`` / ``float8_e5m2`` arrays in numpy when ml_dtypes
is importable, and uint8 arrays of their codes otherwise
(``HAVE_ML_DTYPES`` says which); ``from_numpy(a, dtype=mixp.float8_e4m3fn)``
takes such codes, an ml_dtypes array, or floats (rounded by mixp).
"""

import enum

import numpy as np

try:
    import ml_dtypes as _ml_dtypes
except ImportError:
    _ml_dtypes = None

HAVE_ML_DTYPES = _ml_dtypes is not None

from . import capi
from .errors import DTypeError

__all__ = ["dtype", "float32", "float16", "bfloat16", "float64", "int32", "int64", "uint8",
           "bool_", "float8_e4m3fn", "float8_e5m2", "from_numpy_dtype", "HAVE_ML_DTYPES"]


class dtype(enum.IntEnum):
    """A mixp element type (the values are the C ``mixp_dtype`` values)."""

    float32 = capi.MIXP_F32
    float16 = capi.MIXP_F16
    bfloat16 = capi.MIXP_BF16
    float64 = capi.MIXP_F64
    int32 = capi.MIXP_I32
    int64 = capi.MIXP_I64
    uint8 = capi.MIXP_U8
    bool_ = capi.MIXP_BOOL
    float8_e4m3fn = capi.MIXP_F8E4M3
    float8_e5m2 = capi.MIXP_F8E5M2

    @property
    def itemsize(self):
        """Bytes per element."""
        return capi.mixp_dtype_size(int(self))

    @property
    def is_floating_point(self):
        return self in (dtype.float32, dtype.float16, dtype.bfloat16, dtype.float64)

    @property
    def is_float8(self):
        """An 8-bit float storage type (casts, copies, views, scaled products only)."""
        return self in (dtype.float8_e4m3fn, dtype.float8_e5m2)

    @property
    def numpy(self):
        """The numpy dtype of ``Tensor.numpy()`` (float32 for bfloat16; for the
        8-bit floats ml_dtypes' type, or uint8 codes without ml_dtypes)."""
        return _TO_NUMPY[self]

    def __repr__(self):
        return "mixp." + self.name

    __str__ = __repr__


float32 = dtype.float32
float16 = dtype.float16
bfloat16 = dtype.bfloat16
float64 = dtype.float64
int32 = dtype.int32
int64 = dtype.int64
uint8 = dtype.uint8
bool_ = dtype.bool_
float8_e4m3fn = dtype.float8_e4m3fn
float8_e5m2 = dtype.float8_e5m2

_TO_NUMPY = {
    float32: np.dtype(np.float32), float16: np.dtype(np.float16), bfloat16: np.dtype(np.float32),
    float64: np.dtype(np.float64), int32: np.dtype(np.int32), int64: np.dtype(np.int64),
    uint8: np.dtype(np.uint8), bool_: np.dtype(np.bool_),
    float8_e4m3fn: np.dtype(_ml_dtypes.float8_e4m3fn if _ml_dtypes else np.uint8),
    float8_e5m2: np.dtype(_ml_dtypes.float8_e5m2 if _ml_dtypes else np.uint8),
}
# (uint8 stays uint8: fp8 codes in a uint8 array need dtype= to be fp8.)
_FROM_NUMPY = {v: k for k, v in _TO_NUMPY.items()
               if k is not bfloat16 and (HAVE_ML_DTYPES or not k.is_float8)}


def from_numpy_dtype(np_dtype):
    """The mixp dtype holding numpy ``np_dtype`` exactly, or None."""
    return _FROM_NUMPY.get(np.dtype(np_dtype).newbyteorder("="))


def as_dtype(value):
    """Accepts a mixp dtype, its name ("f32", "bf16", "float16", ...) or a numpy dtype."""
    if isinstance(value, dtype):
        return value
    if isinstance(value, str):
        key = value.lower()
        aliases = {"f32": float32, "f16": float16, "bf16": bfloat16, "f64": float64,
                   "i32": int32, "i64": int64, "u8": uint8, "bool": bool_, "half": float16,
                   "f8e4m3": float8_e4m3fn, "f8e5m2": float8_e5m2,
                   "float": float32, "double": float64, "long": int64, "int": int32}
        if key in aliases:
            return aliases[key]
        if key in dtype.__members__:
            return dtype[key]
        raise DTypeError(f"mixp: unknown dtype name {value!r}")
    if isinstance(value, int) and not isinstance(value, bool):
        try:
            return dtype(value)
        except ValueError:
            raise DTypeError(f"mixp: unknown dtype value {value}") from None
    found = from_numpy_dtype(value)
    if found is None:
        raise DTypeError(f"mixp: numpy dtype {np.dtype(value)} has no mixp dtype "
                         "(float32, float16, float64, int32, int64, uint8, bool; bfloat16 via float32 or uint16 bits)")
    return found
