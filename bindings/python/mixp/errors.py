"""mixp's exceptions: one class per mixp_status, all deriving from Error.

Each class also derives from the built-in exception a Python caller would
catch for that kind of problem, so ``except ValueError`` catches a bad shape
and ``except MemoryError`` an allocation failure. The message is the C
library's own (``mixp_last_error()``, read inside the failing wrapper call),
naming the function, the argument and the expected and actual values.
"""

__all__ = [
    "Error", "InvalidArgumentError", "ShapeError", "DTypeError", "DeviceError",
    "OutOfMemoryError", "StateError", "CorruptError", "IOError_", "NumericError",
    "UnsupportedError", "InternalError",
]


class Error(Exception):
    """Base class of every mixp error. ``status`` is the C ``mixp_status``."""

    status = None

    def __init__(self, message, status=None):
        super().__init__(message)
        if status is not None:
            self.status = status


class InvalidArgumentError(Error, ValueError):
    """MIXP_ERR_INVALID_ARGUMENT: a NULL handle, an out-of-range value, an unknown name."""
    status = -1


class ShapeError(Error, ValueError):
    """MIXP_ERR_SHAPE: shapes that do not fit together."""
    status = -2


class DTypeError(Error, ValueError):
    """MIXP_ERR_DTYPE: a dtype the operation does not accept (also numpy dtypes mixp lacks)."""
    status = -3


class DeviceError(Error, RuntimeError):
    """MIXP_ERR_DEVICE: unknown or unavailable device, or tensors of different sessions."""
    status = -4


class OutOfMemoryError(Error, MemoryError):
    """MIXP_ERR_OUT_OF_MEMORY: an allocation failed; the session stays usable."""
    status = -5


class StateError(Error, RuntimeError):
    """MIXP_ERR_STATE: the call is not valid now (unscale twice, use after close, ...)."""
    status = -6


class CorruptError(Error, ValueError):
    """MIXP_ERR_CORRUPT: a truncated or malformed file or buffer."""
    status = -7


class IOError_(Error, OSError):
    """MIXP_ERR_IO: a file could not be opened, read or written."""
    status = -8


class NumericError(Error, ArithmeticError):
    """MIXP_ERR_NUMERIC: a non-finite value where the numerics checker forbids it."""
    status = -9


class UnsupportedError(Error, NotImplementedError):
    """MIXP_ERR_UNSUPPORTED: a valid request this build cannot serve."""
    status = -10


class InternalError(Error, RuntimeError):
    """MIXP_ERR_INTERNAL: a bug in mixp; the message says where."""
    status = -11


_BY_STATUS = {cls.status: cls for cls in (
    InvalidArgumentError, ShapeError, DTypeError, DeviceError, OutOfMemoryError, StateError,
    CorruptError, IOError_, NumericError, UnsupportedError, InternalError)}


def _from_status(status, message):
    """The exception for a failed status (called by the raw module's wrappers)."""
    cls = _BY_STATUS.get(status, Error)
    return cls(message, status)
