"""mixp: mixed-precision training from Python.

An idiomatic layer over the SWIG module ``mixp.capi`` (the C API of
``libmixp.so`` function for function). Quick tour::

    import mixp
    model = mixp.nn.model("mlp hidden=256,128")
    opt = mixp.optim.AdamW(model.parameters(), lr=1e-3)
    scaler = mixp.amp.GradScaler()
    for x, y in mixp.data.DataLoader(mixp.data.synthetic()):
        with mixp.amp.autocast(dtype=mixp.bfloat16):
            loss = mixp.functional.cross_entropy(model(x), y)
        opt.zero_grad()
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()

Data-parallel training (one process per rank, ``mpirun -np N``) is in
:mod:`mixp.dist`. Errors raise :class:`mixp.Error` subclasses carrying the C
library's message.
"""

from . import capi
from . import _cuda_plugin
from .errors import (Error, InvalidArgumentError, ShapeError, DTypeError, DeviceError,
                     OutOfMemoryError, StateError, CorruptError, IOError_, NumericError,
                     UnsupportedError, InternalError)
from .dtypes import dtype, float32, float16, bfloat16, float64, int32, int64, uint8, bool_, float8_e4m3fn, float8_e5m2
from .session import Session, default_session, set_default_session, no_grad
from .tensor import Tensor, tensor, from_numpy, zeros, ones, full, arange, rand, randn
from .dlpack import from_dlpack
from . import functional
from . import nn
from . import optim
from . import amp
from . import data
from . import dist
from .state import save_state, load_state
from .trace import trace, Trace
from .profile import profile, Profile
from .graph import graph, Graph
from .functional import (matmul, relu, gelu, gelu_tanh, sigmoid, tanh, softmax, log_softmax, cross_entropy,
                         mse_loss, cat, split)

__version__ = capi.mixp_version()
_cuda_plugin_path, _cuda_plugin_origin = _cuda_plugin.select(__version__)


def build_info():
    """One line: version, commit, compiler, backends, and which CUDA plugin a
    cuda session loads (a session's ``device_note`` then names the files its
    cuBLAS and cuDNN were loaded from)."""
    return f"{capi.mixp_build_info()}; cuda plugin: {_cuda_plugin_origin}"


def ops():
    """The stable names of every operation (as used by autocast lists)."""
    return [capi.mixp_op_name(i) for i in range(capi.mixp_op_count())]


__all__ = [
    "capi", "Error", "InvalidArgumentError", "ShapeError", "DTypeError", "DeviceError",
    "OutOfMemoryError", "StateError", "CorruptError", "IOError_", "NumericError",
    "UnsupportedError", "InternalError", "dtype", "float32", "float16", "bfloat16", "float64",
    "int32", "int64", "uint8", "bool_", "float8_e4m3fn", "float8_e5m2", "Session", "default_session", "set_default_session",
    "no_grad", "Tensor", "tensor", "from_numpy", "from_dlpack", "zeros", "ones", "full", "arange", "rand",
    "randn", "functional", "nn", "optim", "amp", "data", "dist", "matmul", "relu", "gelu", "gelu_tanh", "sigmoid",
    "tanh", "softmax", "log_softmax", "cross_entropy", "mse_loss", "cat", "split", "build_info",
    "ops", "save_state", "load_state", "trace", "Trace", "profile", "Profile", "graph", "Graph", "__version__",
]
