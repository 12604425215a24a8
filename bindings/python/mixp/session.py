"""Sessions: a device, a random stream, a thread count and the grad-mode stack."""

import contextlib

from . import capi
from ._handle import Handle

__all__ = ["Session", "default_session", "set_default_session", "no_grad"]

_NUMERICS = {"off": capi.MIXP_NUMERICS_OFF, "warn": capi.MIXP_NUMERICS_WARN,
             "error": capi.MIXP_NUMERICS_ERROR}


class Session(Handle):
    """A mixp session (``mixp_session``).

    Every tensor, module, optimizer, scaler and dataset belongs to one session;
    a session and its objects are used by one thread at a time.

    Args:
        device: "cpu" (default), "cuda", "cuda:N" or "auto".
        seed: seed of the session's Philox random stream.
        num_threads: CPU threads for kernels (0: all cores).
        allow_tf32: allow TF32 for F32 matrix products on GPUs.
        check_numerics: "off", "warn" or "error".
        cudnn_benchmark: choose convolution algorithms by timing them
            (PyTorch's cudnn.benchmark; MIXP_CUDNN_BENCHMARK wins).
        cudnn_deterministic: bitwise-reproducible convolution algorithms only
            (default; MIXP_CUDNN_DETERMINISTIC wins).
    """

    __slots__ = ("_log_callback",)
    _destroy = staticmethod(capi.mixp_session_destroy)

    def __init__(self, device="cpu", seed=0, num_threads=0, allow_tf32=False,
                 check_numerics="off", cudnn_benchmark=False, cudnn_deterministic=True):
        opts = capi.mixp_session_options()
        opts.seed = int(seed)
        opts.num_threads = int(num_threads)
        opts.allow_tf32 = int(bool(allow_tf32))
        opts.cudnn_benchmark = int(bool(cudnn_benchmark))
        opts.cudnn_deterministic = int(bool(cudnn_deterministic))
        opts.check_numerics = _NUMERICS.get(check_numerics, check_numerics)
        super().__init__(capi.mixp_swig_session_create(opts, device))
        self._log_callback = None

    @property
    def device(self):
        return capi.mixp_session_device(self._h)

    @property
    def device_note(self):
        return capi.mixp_session_device_note(self._h)

    @property
    def num_threads(self):
        return capi.mixp_session_num_threads(self._h)

    def manual_seed(self, seed):
        """Re-seeds the random stream (the same seed reproduces the same tensors)."""
        capi.mixp_session_set_seed(self._h, int(seed))

    @property
    def allow_tf32(self):
        return bool(capi.mixp_session_tf32(self._h))

    @allow_tf32.setter
    def allow_tf32(self, allow):
        capi.mixp_session_set_tf32(self._h, int(bool(allow)))

    @property
    def cudnn(self):
        """``(benchmark, deterministic)``: how convolutions choose their
        algorithm, after the environment's overrides (mixp_session_cudnn)."""
        benchmark, deterministic = capi.mixp_session_cudnn(self._h)
        return bool(benchmark), bool(deterministic)

    def set_cudnn(self, benchmark=False, deterministic=True):
        """Sets how later convolutions choose their algorithm (mixp_session_set_cudnn)."""
        capi.mixp_session_set_cudnn(self._h, int(bool(benchmark)), int(bool(deterministic)))

    def set_numerics_check(self, mode):
        """``"off"``, ``"warn"`` or ``"error"`` (see mixp_session_set_numerics_check)."""
        capi.mixp_session_set_numerics_check(self._h, _NUMERICS.get(mode, mode))

    def set_numerics_options(self, mode="warn", include=None, exclude=None, steps=None,
                             fp16_overflow=False):
        """The numerics checker narrowed and widened (Paddle's TensorCheckerConfig):
        ``include``/``exclude`` op names, ``steps=(start, end)`` counted in
        optimizer steps from now (``end`` None: no end), and ``fp16_overflow``
        to also report finite values an fp16 could not hold (|x| >= 65520)."""
        o = capi.mixp_numerics_options()
        o.mode = _NUMERICS.get(mode, mode)
        if steps is not None:
            start, end = steps
            o.start_step = int(start)
            o.end_step = -1 if end is None else int(end)
        o.fp16_overflow = int(bool(fp16_overflow))
        capi.mixp_swig_set_numerics_options(self._h, o, list(include or []), list(exclude or []))

    @property
    def numerics_report(self):
        return capi.mixp_session_numerics_report(self._h)

    def set_log_callback(self, fn):
        """Routes log messages to ``fn(level, message)``; None restores stderr."""
        capi.mixp_session_set_log_callback(self._h, fn)
        self._log_callback = fn  # kept alive while C may call it

    def memory_stats(self):
        """The session's memory in bytes: ``current_bytes``/``peak_bytes`` of
        tensor storage, and what the device really holds, scratch and
        workspaces included: ``device_bytes``/``device_peak_bytes`` (compare
        with ``torch.cuda.max_memory_allocated``) and
        ``reserved_bytes``/``reserved_peak_bytes`` (the memory pool's)."""
        st = capi.mixp_memory_stats()
        capi.mixp_memory_stats_get(self._h, st)
        keys = ("current_bytes", "peak_bytes", "device_bytes", "device_peak_bytes",
                "reserved_bytes", "reserved_peak_bytes")
        return {k: int(getattr(st, k)) for k in keys}

    def reset_peak_memory(self):
        capi.mixp_memory_stats_reset_peak(self._h)

    @property
    def grad_enabled(self):
        return bool(capi.mixp_grad_enabled(self._h))

    @contextlib.contextmanager
    def no_grad(self):
        """A region in which operations record no autograd graph."""
        capi.mixp_no_grad_begin(self._h)
        try:
            yield
        finally:
            capi.mixp_no_grad_end(self._h)

    def op_stats(self):
        """``with session.op_stats() as stats:`` counts every op called inside,
        by output dtype and pass (Paddle's collect_operator_stats);
        ``stats.count("linear", mixp.bfloat16)``, ``stats.count("linear",
        mixp.float32, backward=True)`` and ``print(stats)`` (the table) after."""
        return _OpStats(self)

    def __repr__(self):
        if self.closed:
            return "<mixp.Session closed>"
        return f"<mixp.Session device={self.device!r} threads={self.num_threads}>"


_default = None


def default_session():
    """The session used when none is given (created on first use: cpu, seed 0)."""
    global _default
    if _default is None or _default.closed:
        _default = Session()
    return _default


def set_default_session(session):
    """Makes ``session`` the default; returns the previous default (or None)."""
    global _default
    previous, _default = _default, session
    return previous


def no_grad(session=None):
    """``with mixp.no_grad(): ...`` on ``session`` (default: the default session)."""
    return (session or default_session()).no_grad()


class _OpStats:
    """The op counts of a ``with session.op_stats()`` region."""

    def __init__(self, session):
        self._session = session

    def __enter__(self):
        capi.mixp_session_op_stats_start(self._session._h)
        return self

    def __exit__(self, *exc):
        capi.mixp_session_op_stats_stop(self._session._h)
        return False

    def count(self, op, dtype, backward=False):
        """Calls of ``op`` (a mixp.ops() name) whose output had ``dtype``."""
        from .dtypes import as_dtype
        return capi.mixp_session_op_stats_count(self._session._h, op, int(bool(backward)),
                                                int(as_dtype(dtype)))

    def __str__(self):
        return capi.mixp_session_op_stats_report(self._session._h)
