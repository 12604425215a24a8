"""Optimizers (SGD, Adam, AdamW with fp32 master weights) and LR schedules."""

from . import capi
from ._handle import Handle
from .dtypes import as_dtype

__all__ = ["Optimizer", "SGD", "Adam", "AdamW", "clip_grad_norm_", "lr_schedule_value"]

_SCHEDULES = {"constant": capi.MIXP_LR_CONSTANT, "warmup_cosine": capi.MIXP_LR_WARMUP_COSINE}


def _options(kind, lr, schedule, warmup_steps, total_steps, min_lr, state_dtype=None,
             stochastic_rounding=False, **fields):
    o = capi.mixp_optimizer_options(kind)
    if lr is not None:
        o.lr = float(lr)
    if state_dtype is not None:
        o.state_dtype = int(as_dtype(state_dtype))
    o.stochastic_rounding = int(bool(stochastic_rounding))
    o.schedule = _SCHEDULES[schedule]
    o.warmup_steps = int(warmup_steps)
    o.total_steps = int(total_steps)
    o.min_lr = float(min_lr)
    for name, value in fields.items():
        if value is not None:
            setattr(o, name, value)
    return o


class Optimizer(Handle):
    """An optimizer over a list of parameters (``mixp_optimizer``).

    It keeps references to the parameters; ``params`` may be Tensors or a
    module (whose parameters are taken). Every optimizer takes the memory
    options ``state_dtype`` (``mixp.float32``, the default, or
    ``mixp.bfloat16``: the moments / momentum stored in bf16, half the
    memory) and ``stochastic_rounding`` (bf16 parameters kept without fp32
    masters are written with stochastic rounding, so updates smaller than
    half a bf16 step are not lost).
    """

    __slots__ = ("_session", "params")
    _destroy = staticmethod(capi.mixp_optimizer_destroy)

    def __init__(self, params, options):
        params = list(params.parameters() if hasattr(params, "parameters") else params)
        if not params:
            raise ValueError("mixp optimizer: empty parameter list")
        session = params[0].session
        super().__init__(capi.mixp_optimizer_create(session._h, [p._h for p in params], options))
        self._session = session
        self.params = params

    def step(self):
        capi.mixp_optimizer_step(self._h)

    def zero_grad(self):
        """Drops every gradient (PyTorch's set_to_none=True)."""
        capi.mixp_optimizer_zero_grad(self._h)

    @property
    def lr(self):
        """The learning rate the next step will use (setting it sets the base lr)."""
        return capi.mixp_optimizer_get_lr(self._h)

    @lr.setter
    def lr(self, value):
        capi.mixp_optimizer_set_lr(self._h, float(value))

    @property
    def step_count(self):
        return capi.mixp_optimizer_step_count(self._h)

    def grad_underflow(self, low=None):
        """Per parameter, the fraction of its gradient's elements that are
        zero or subnormal in ``low`` (default ``mixp.float16``), as they are
        now: after backward and before unscale it shows what the loss scale
        failed to lift (NaN for a parameter without a gradient). Scans the
        gradients once per parameter: call it every N steps."""
        from .dtypes import float16
        low = int(as_dtype(float16 if low is None else low))
        out = []
        k = 0
        while True:
            value, size = capi.mixp_swig_optimizer_grad_underflow(self._h, low, k)
            if k >= size:
                return out
            out.append(value)
            k += 1

    def nonfinite_grads(self):
        """Indices (into the parameters given at construction) of those whose
        gradient holds NaN or Inf now: what overflowed on a skipped step.
        Scans the gradients (waits for the device)."""
        found = []
        while True:
            i = capi.mixp_swig_optimizer_nonfinite_grad(self._h, len(found))
            if i < 0:
                return found
            found.append(i)


class SGD(Optimizer):
    __slots__ = ()

    def __init__(self, params, lr=0.01, momentum=0.0, dampening=0.0, nesterov=False,
                 weight_decay=0.0, schedule="constant", warmup_steps=0, total_steps=0, min_lr=0.0,
                 state_dtype=None, stochastic_rounding=False):
        super().__init__(params, _options(capi.MIXP_OPTIM_SGD, lr, schedule, warmup_steps, total_steps,
                                          min_lr, state_dtype, stochastic_rounding,
                                          momentum=float(momentum), dampening=float(dampening),
                                          nesterov=int(bool(nesterov)), weight_decay=float(weight_decay)))


class Adam(Optimizer):
    __slots__ = ()
    _kind = capi.MIXP_OPTIM_ADAM
    _default_wd = 0.0

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=None,
                 schedule="constant", warmup_steps=0, total_steps=0, min_lr=0.0,
                 state_dtype=None, stochastic_rounding=False):
        wd = self._default_wd if weight_decay is None else weight_decay
        super().__init__(params, _options(self._kind, lr, schedule, warmup_steps, total_steps, min_lr,
                                          state_dtype, stochastic_rounding,
                                          beta1=float(betas[0]), beta2=float(betas[1]), eps=float(eps),
                                          weight_decay=float(wd)))


class AdamW(Adam):
    """AdamW: decoupled weight decay (default 0.01, as PyTorch)."""

    __slots__ = ()
    _kind = capi.MIXP_OPTIM_ADAMW
    _default_wd = 0.01


def clip_grad_norm_(optimizer, max_norm):
    """Clips the optimizer's gradients by their global L2 norm; returns the norm before (a Tensor)."""
    from .tensor import Tensor
    return Tensor(capi.mixp_clip_grad_norm(optimizer._h, float(max_norm)), optimizer._session)


def lr_schedule_value(step, lr, schedule="warmup_cosine", warmup_steps=0, total_steps=0, min_lr=0.0):
    """The learning rate a schedule gives at ``step`` (no optimizer needed)."""
    o = _options(capi.MIXP_OPTIM_ADAMW, lr, schedule, warmup_steps, total_steps, min_lr)
    return capi.mixp_lr_schedule_value(o, int(step))
