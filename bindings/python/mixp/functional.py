"""Operations as functions (``mixp.functional``, also ``mixp.nn.functional``).

Each is one C call; names follow torch.nn.functional where the C API has the
operation. Every result is a new Tensor of its first input's session.
"""

from . import capi
from .tensor import Tensor, _as_tensor

__all__ = [
    "matmul", "bmm", "linear", "relu", "gelu", "gelu_tanh", "sigmoid", "tanh", "silu", "hardswish",
    "hardsigmoid", "softmax", "log_softmax", "cross_entropy", "mse_loss", "dropout", "cat",
    "split", "conv2d", "max_pool2d", "avg_pool2d", "adaptive_avg_pool2d", "batch_norm",
    "layer_norm", "group_norm", "embedding", "scaled_dot_product_attention", "pad", "scaled_matmul",
]

_REDUCTION = {"mean": capi.MIXP_REDUCTION_MEAN, "sum": capi.MIXP_REDUCTION_SUM,
              "none": capi.MIXP_REDUCTION_NONE}
_LAYOUT = {"NCHW": capi.MIXP_NCHW, "NHWC": capi.MIXP_NHWC}


def _h(t):
    return None if t is None else t._h


def _pair(v):
    return (v, v) if isinstance(v, int) else tuple(v)


def matmul(a, b):
    return a._new(capi.mixp_matmul(a._h, _as_tensor(b, a)._h))


def bmm(a, b):
    return a._new(capi.mixp_bmm(a._h, b._h))


def linear(x, weight, bias=None):
    return x._new(capi.mixp_linear(x._h, weight._h, _h(bias)))


def scaled_matmul(a, scale_a, b, scale_b, bias=None, out_dtype=None, fast_accum=False, amax=None):
    """``(scale_a * scale_b) * (a @ b) + bias`` for fp8 ``a`` [M,K] and ``b`` [K,N]
    (mixp.float8_e4m3fn / float8_e5m2, not both e5m2) with one-element float32
    scale tensors, in ``out_dtype`` (default bfloat16); ``amax`` (a one-element
    float32 tensor) receives max |result|. torch._scaled_mm's product; mixp.h's
    mixp_scaled_matmul states the exact semantics."""
    from .dtypes import as_dtype, bfloat16
    dt = bfloat16 if out_dtype is None else as_dtype(out_dtype)
    flags = capi.MIXP_SCALED_MATMUL_FAST_ACCUM if fast_accum else 0
    return a._new(capi.mixp_scaled_matmul(a._h, scale_a._h, b._h, scale_b._h, _h(bias), int(dt), flags,
                                          _h(amax)))


# Functions that are also Tensor methods are those methods (one definition).
relu = Tensor.relu


def gelu(x, approximate="none"):
    approx = capi.MIXP_GELU_TANH if approximate == "tanh" else capi.MIXP_GELU_ERF
    return x._new(capi.mixp_gelu(x._h, approx))


def gelu_tanh(x):
    """GELU's tanh approximation (torch's gelu(x, approximate='tanh'); GPT-2's)."""
    return x._new(capi.mixp_gelu_tanh(x._h))


sigmoid = Tensor.sigmoid


tanh = Tensor.tanh


def silu(x):
    return x._new(capi.mixp_silu(x._h))


def hardswish(x):
    return x._new(capi.mixp_hardswish(x._h))


def hardsigmoid(x):
    return x._new(capi.mixp_hardsigmoid(x._h))


softmax = Tensor.softmax


log_softmax = Tensor.log_softmax


def cross_entropy(logits, target, reduction="mean", ignore_index=capi.MIXP_IGNORE_INDEX_DEFAULT,
                  label_smoothing=0.0):
    """Softmax cross-entropy of logits [N, C] against int64 class indices [N].

    ``label_smoothing`` in [0, 1] is PyTorch's: the target is (1 - e) on the
    class plus e / C on every class."""
    target = target if isinstance(target, Tensor) else Tensor.from_numpy(target, session=logits.session)
    if label_smoothing == 0.0:
        return logits._new(capi.mixp_cross_entropy(logits._h, target._h, _REDUCTION[reduction],
                                                   int(ignore_index)))
    o = capi.mixp_cross_entropy_options()
    o.reduction = _REDUCTION[reduction]
    o.ignore_index = int(ignore_index)
    o.label_smoothing = float(label_smoothing)
    return logits._new(capi.mixp_cross_entropy_ex(logits._h, target._h, o))


def mse_loss(a, b, reduction="mean"):
    return a._new(capi.mixp_mse_loss(a._h, _as_tensor(b, a)._h, _REDUCTION[reduction]))


def dropout(x, p=0.5, training=True):
    return x._new(capi.mixp_dropout(x._h, float(p), int(bool(training))))


def cat(tensors, dim=0):
    tensors = list(tensors)
    return tensors[0]._new(capi.mixp_cat([t._h for t in tensors], dim))


def split(x, sizes, dim=0):
    """Pieces of the given sizes along ``dim`` (views); an int is a piece size."""
    if isinstance(sizes, int):
        n = x.shape[dim]
        sizes = [sizes] * (n // sizes) + ([n % sizes] if n % sizes else [])
    return [x._new(r) for r in capi.mixp_split(x._h, list(sizes), dim)]


def conv2d(x, weight, bias=None, stride=1, padding=0, dilation=1, groups=1, layout="NCHW"):
    o = capi.mixp_conv2d_options()
    o.stride_h, o.stride_w = _pair(stride)
    o.pad_h, o.pad_w = _pair(padding)
    o.dilation_h, o.dilation_w = _pair(dilation)
    o.groups = groups
    o.layout = _LAYOUT[layout]
    return x._new(capi.mixp_conv2d(x._h, weight._h, _h(bias), o))


def _pool_options(kernel_size, stride, padding, layout, count_include_pad=True):
    o = capi.mixp_pool2d_options()
    o.kernel_h, o.kernel_w = _pair(kernel_size)
    o.stride_h, o.stride_w = _pair(stride if stride is not None else 0)
    o.pad_h, o.pad_w = _pair(padding)
    o.count_include_pad = int(bool(count_include_pad))
    o.layout = _LAYOUT[layout]
    return o


def max_pool2d(x, kernel_size=2, stride=None, padding=0, layout="NCHW"):
    return x._new(capi.mixp_max_pool2d(x._h, _pool_options(kernel_size, stride, padding, layout)))


def avg_pool2d(x, kernel_size=2, stride=None, padding=0, count_include_pad=True, layout="NCHW"):
    o = _pool_options(kernel_size, stride, padding, layout, count_include_pad)
    return x._new(capi.mixp_avg_pool2d(x._h, o))


def adaptive_avg_pool2d(x, output_size, layout="NCHW"):
    out_h, out_w = _pair(output_size)
    return x._new(capi.mixp_adaptive_avg_pool2d(x._h, out_h, out_w, _LAYOUT[layout]))


def batch_norm(x, running_mean=None, running_var=None, weight=None, bias=None, training=False,
               momentum=0.1, eps=1e-5, layout="NCHW"):
    return x._new(capi.mixp_batch_norm(x._h, _h(weight), _h(bias), _h(running_mean),
                                       _h(running_var), int(bool(training)), float(momentum),
                                       float(eps), _LAYOUT[layout]))


def layer_norm(x, normalized_shape, weight=None, bias=None, eps=1e-5):
    ndim = 1 if isinstance(normalized_shape, int) else len(normalized_shape)
    return x._new(capi.mixp_layer_norm(x._h, ndim, _h(weight), _h(bias), float(eps)))


def group_norm(x, num_groups, weight=None, bias=None, eps=1e-5):
    return x._new(capi.mixp_group_norm(x._h, num_groups, _h(weight), _h(bias), float(eps)))


def embedding(indices, weight, padding_idx=None):
    pad = -1 if padding_idx is None else padding_idx
    return weight._new(capi.mixp_embedding(weight._h, indices._h, pad))


def scaled_dot_product_attention(q, k, v, dropout_p=0.0, is_causal=False, scale=None):
    return q._new(capi.mixp_scaled_dot_product_attention(
        q._h, k._h, v._h, int(bool(is_causal)), float(dropout_p), 0.0 if scale is None else float(scale)))


def pad(x, pads, value=0.0):
    return x._new(capi.mixp_pad(x._h, list(pads), float(value)))
