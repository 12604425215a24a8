"""Mixed precision: ``autocast`` regions, ``GradScaler`` and O2 ``decorate``.

The names follow PyTorch (torch.amp.autocast, torch.amp.GradScaler) and
Paddle (paddle.amp.decorate); the work is done by the C library.
"""

import functools

from . import capi
from ._handle import Handle
from .dtypes import as_dtype, bfloat16, float16
from .session import default_session
from .tensor import Tensor

__all__ = ["autocast", "GradScaler", "decorate", "policy"]

_LEVELS = {"O0": capi.MIXP_AMP_O0, "O1": capi.MIXP_AMP_O1, "O2": capi.MIXP_AMP_O2,
           "OD": capi.MIXP_AMP_OD}
_POLICIES = {capi.MIXP_CAST_NONE: "none", capi.MIXP_CAST_LOWER: "lower",
             capi.MIXP_CAST_FP32: "fp32", capi.MIXP_CAST_PROMOTE: "promote"}


class autocast:
    """``with mixp.amp.autocast(dtype=mixp.bfloat16, level="O1"): ...``

    Inside the region each operation casts its float inputs by its policy
    (GEMM-like ops to ``dtype``, range-sensitive ops to float32). Regions nest
    (the inner one wins until it closes); a region is re-entrant as a
    decorator. ``custom_white_list``/``custom_black_list`` force op names to
    low precision / float32 (Paddle's names). ``level="OD"`` (Paddle's) runs
    only the low-precision list (GEMM-like ops) in ``dtype``, every other
    op in float32. ``use_promote=True`` (O2, Paddle's use_promote) keeps an
    op off the low-precision list in float32 when any input is float32.
    """

    def __init__(self, dtype=bfloat16, level="O1", enabled=True, cache_enabled=True,
                 custom_white_list=None, custom_black_list=None, session=None, use_promote=False):
        self.dtype = as_dtype(dtype)
        self.level = level
        self.enabled = bool(enabled)
        self.cache_enabled = bool(cache_enabled)
        self.custom_white_list = list(custom_white_list or [])
        self.custom_black_list = list(custom_black_list or [])
        self._session = session
        self.use_promote = bool(use_promote)

    def __enter__(self):
        o = capi.mixp_autocast_options()
        o.enabled = int(self.enabled)
        o.dtype = int(self.dtype)
        o.level = _LEVELS.get(self.level, self.level)
        o.cache_enabled = int(self.cache_enabled)
        o.use_promote = int(self.use_promote)
        session = self._session or default_session()
        capi.mixp_swig_autocast_push(session._h, o, self.custom_white_list, self.custom_black_list)
        self._entered_session = session
        return self

    def __exit__(self, *exc):
        capi.mixp_autocast_pop(self._entered_session._h)
        return False

    def __call__(self, fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with autocast(self.dtype, self.level, self.enabled, self.cache_enabled,
                          self.custom_white_list, self.custom_black_list, self._session,
                          self.use_promote):
                return fn(*args, **kwargs)
        return wrapper


class autocast_policy:
    """``with mixp.amp.autocast_policy("O2 bf16 black=softmax promote=1"): ...``

    The region one line of text describes (``mixp_autocast_push_policy``):
    a level (O0/O1/O2/OD), a dtype (bf16/f16) and ``white=``, ``black=``,
    ``promote=``, ``cache=``, ``enabled=`` words, for configuration kept as text.
    """

    def __init__(self, policy, session=None):
        self.policy = str(policy)
        self._session = session

    def __enter__(self):
        session = self._session or default_session()
        capi.mixp_autocast_push_policy(session._h, self.policy)
        self._entered_session = session
        return self

    def __exit__(self, *exc):
        capi.mixp_autocast_pop(self._entered_session._h)
        return False


def policy(op_name, session=None):
    """What ``op_name`` does with its inputs now: ``(policy, dtype)``, e.g. ``("lower", mixp.bfloat16)``."""
    from .dtypes import dtype as _dtype
    info = capi.mixp_autocast_policy_info()
    capi.mixp_autocast_policy((session or default_session())._h, op_name, info)
    return _POLICIES[info.cast], _dtype(info.dtype)


_MODES = {"auto": capi.MIXP_SCALER_AUTO, "dynamic": capi.MIXP_SCALER_DYNAMIC,
          "static": capi.MIXP_SCALER_STATIC, "disabled": capi.MIXP_SCALER_DISABLED}
_MODE_NAMES = {v: k for k, v in _MODES.items()}


_BELOW_ONE = {"ignore": capi.MIXP_LOW_SCALE_IGNORE, "warn": capi.MIXP_LOW_SCALE_WARN,
              "error": capi.MIXP_LOW_SCALE_ERROR}


class GradScaler(Handle):
    """Dynamic loss scaling with PyTorch's algorithm and method names.

    ``scale(loss)``, ``unscale_(optimizer)``, ``step(optimizer)``,
    ``update(new_scale=None)``, ``get_scale()``, ``state_dict()``,
    ``load_state_dict()``. ``mode`` is "dynamic" (PyTorch's behaviour, the
    default), "static", "disabled", or "auto" (disabled when created inside a
    bf16 autocast region). ``enabled=False`` means "disabled". ``below_one``
    ("ignore", the default, "warn" or "error") says what happens when the
    scale falls below 1, where no fp16 scale fits: a warning once, or
    ``scale()`` raising NumericError while it stays there.
    """

    __slots__ = ("_session",)
    _destroy = staticmethod(capi.mixp_grad_scaler_destroy)

    def __init__(self, init_scale=2.0**16, growth_factor=2.0, backoff_factor=0.5,
                 growth_interval=2000, enabled=True, mode="dynamic", hysteresis=1,
                 decr_every_n_nan_or_inf=1, min_scale=0.0, max_scale=float("inf"), session=None,
                 below_one="ignore"):
        o = capi.mixp_grad_scaler_options()
        o.mode = _MODES[mode] if enabled else capi.MIXP_SCALER_DISABLED
        o.init_scale = float(init_scale)
        o.growth_factor = float(growth_factor)
        o.backoff_factor = float(backoff_factor)
        o.growth_interval = int(growth_interval)
        o.hysteresis = int(hysteresis)
        o.decr_every_n_nan_or_inf = int(decr_every_n_nan_or_inf)
        o.min_scale = float(min_scale)
        o.max_scale = float(max_scale)
        o.below_one = _BELOW_ONE[below_one]
        s = session or default_session()
        super().__init__(capi.mixp_grad_scaler_create(s._h, o))
        self._session = s

    def scale(self, loss):
        """The loss times the current scale (back-propagate this one)."""
        return Tensor(capi.mixp_grad_scaler_scale(self._h, loss._h), loss.session)

    def unscale_(self, optimizer):
        """Divides the optimizer's gradients by the scale (once per step) and checks them."""
        capi.mixp_grad_scaler_unscale(self._h, optimizer._h)

    def step(self, optimizer):
        """Unscales if needed, then steps, skipping the update when an overflow was found."""
        capi.mixp_grad_scaler_step(self._h, optimizer._h)

    def update(self, new_scale=None):
        """Grows or backs off the scale; ``new_scale`` sets it instead."""
        if new_scale is None:
            capi.mixp_grad_scaler_update(self._h)
        else:
            value = new_scale.item() if isinstance(new_scale, Tensor) else float(new_scale)
            capi.mixp_grad_scaler_update_to(self._h, value)

    def get_scale(self):
        return capi.mixp_grad_scaler_get_scale(self._h)

    def is_enabled(self):
        return self.mode != "disabled"

    @property
    def mode(self):
        return _MODE_NAMES[capi.mixp_grad_scaler_mode(self._h)]

    @property
    def found_inf(self):
        """Whether the last update saw an overflow."""
        return bool(capi.mixp_grad_scaler_found_inf(self._h))

    @property
    def growth_tracker(self):
        return capi.mixp_grad_scaler_growth_tracker(self._h)

    @property
    def skipped_steps(self):
        """Optimizer steps skipped for an Inf/NaN since this scaler was made
        (counted on the device; reading it waits for it)."""
        return capi.mixp_grad_scaler_skipped_steps(self._h)

    def state_dict(self):
        """The scaler's state: readable fields plus the exact serialised state."""
        size = capi.mixp_grad_scaler_state_size(self._h)
        buf = bytearray(size)
        written = capi.mixp_grad_scaler_save_state(self._h, buf)
        return {"scale": self.get_scale(), "growth_tracker": self.growth_tracker,
                "mode": self.mode, "mixp_state": bytes(buf[:written])}

    def load_state_dict(self, state):
        """Restores a ``state_dict()`` (mode and options included)."""
        capi.mixp_grad_scaler_load_state(self._h, state["mixp_state"])


def decorate(models, optimizers=None, dtype=float16, master_weights=True, master_grad=False,
             keep_norm_fp32=True):
    """O2 ("pure half"): casts the models' float32 parameters to ``dtype``.

    With optimizers, each keeps an fp32 master copy of every cast parameter.
    Call before training; parameters fetched earlier still refer to the old
    fp32 tensors (fetch them again). Returns ``(models, optimizers)`` as given
    (Paddle's paddle.amp.decorate).
    """
    o = capi.mixp_decorate_options()
    o.dtype = int(as_dtype(dtype))
    o.master_weights = int(bool(master_weights))
    o.master_grad = int(bool(master_grad))
    o.keep_norm_fp32 = int(bool(keep_norm_fp32))
    model_list = models if isinstance(models, (list, tuple)) else [models]
    opt = optimizers
    if isinstance(optimizers, (list, tuple)):
        if len(optimizers) != 1:
            raise ValueError("mixp.amp.decorate: one optimizer (holding every model's parameters) or None")
        opt = optimizers[0]
    for m in model_list:
        capi.mixp_amp_decorate(m._h, None if opt is None else opt._h, o)
    return (models, optimizers) if optimizers is not None else models
