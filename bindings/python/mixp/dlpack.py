"""DLPack import: any array that speaks the array API's exchange protocol
(numpy >= 1.22, PyTorch, JAX, CuPy, ...) becomes a mixp tensor sharing its
memory; :meth:`Tensor.__dlpack__` goes the other way."""

from . import capi
from .session import Session, default_session
from .tensor import Tensor

__all__ = ["from_dlpack"]

_KDL_CPU, _KDL_CUDA, _KDL_CUDA_HOST, _KDL_CUDA_MANAGED = 1, 2, 3, 13


def from_dlpack(x, *, session=None):
    """A tensor sharing ``x``'s memory (no copy).

    ``x`` is an object with ``__dlpack__``/``__dlpack_device__`` or a raw
    unconsumed DLPack capsule. The producer's memory stays alive until the
    tensor and all its views are released; writes through either side are
    seen by the other. ``session`` defaults to the default session for CPU
    memory and to a new ``cuda:N`` session for memory of GPU N. bf16 arrives
    as bf16 (no float32 detour). Read-only producers (a DLPack 1.0 capsule
    flagged read-only) are refused: mixp tensors are writable.
    """
    if not hasattr(x, "__dlpack__"):
        capsule = x
    else:
        dev_type, dev_id = x.__dlpack_device__()
        if session is None:
            if dev_type in (_KDL_CUDA, _KDL_CUDA_MANAGED):
                session = Session(device=f"cuda:{dev_id}")
            else:
                session = default_session()
        kwargs = {}
        if dev_type in (_KDL_CUDA, _KDL_CUDA_MANAGED):
            # The producer must finish its work before mixp's own stream
            # reads the memory: ask it to order against the legacy default
            # stream (1), which mixp's first use waits for.
            kwargs["stream"] = 1
        try:
            capsule = x.__dlpack__(max_version=(1, 0), **kwargs)
        except TypeError:  # a producer from before DLPack 1.0's keywords
            capsule = x.__dlpack__(**kwargs)
    session = session or default_session()
    raw = capi.mixp_swig_from_dlpack(session._h, capsule)
    return Tensor(raw, session)
