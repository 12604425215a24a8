"""Layers and the model zoo (``mixp_module``), plus a Python Sequential."""

from . import capi
from . import functional
from ._handle import Handle
from .dtypes import as_dtype, float32
from .session import default_session
from .tensor import Tensor

__all__ = ["Module", "Linear", "Conv2d", "BatchNorm2d", "LayerNorm", "Embedding",
           "MultiheadAttention", "Sequential", "model", "functional"]


class Module(Handle):
    """A mixp module: parameters, buffers and a forward pass computed in C."""

    __slots__ = ("_session", "_config")
    _destroy = staticmethod(capi.mixp_module_destroy)

    def __init__(self, raw, session, config=None):
        super().__init__(raw)
        self._session = session
        self._config = config

    @property
    def session(self):
        return self._session

    def forward(self, x):
        return Tensor(capi.mixp_module_forward(self._h, x._h), self._session)

    __call__ = forward

    def named_parameters(self):
        """``[(name, Tensor)]`` in PyTorch's order (names like "layer1.0.conv1.weight")."""
        h = self._h
        return [(capi.mixp_module_parameter_name(h, i),
                 Tensor(capi.mixp_module_parameter(h, i), self._session))
                for i in range(capi.mixp_module_num_parameters(h))]

    def parameters(self):
        return [t for _, t in self.named_parameters()]

    def named_buffers(self):
        h = self._h
        return [(capi.mixp_module_buffer_name(h, i), Tensor(capi.mixp_module_buffer(h, i), self._session))
                for i in range(capi.mixp_module_num_buffers(h))]

    def buffers(self):
        return [t for _, t in self.named_buffers()]

    def num_parameters(self):
        """The total number of parameter elements."""
        return capi.mixp_module_num_parameter_elements(self._h)

    def train(self, mode=True):
        capi.mixp_module_set_training(self._h, int(bool(mode)))
        return self

    def load_safetensors(self, path, strict=True, optimizer=None):
        """Loads weights from a safetensors file, e.g. one PyTorch wrote with
        ``safetensors.torch.save_file(model.state_dict(), path)``: every
        parameter and buffer takes the tensor of its (PyTorch) name, cast to
        its dtype. ``strict`` (PyTorch's load_state_dict rule): every one must
        be in the file and every tensor of the file used. ``optimizer``: the
        optimizer holding fp32 masters of decorated (O2) parameters, whose
        masters take the values too. A failed load changes nothing and raises
        the mixp error naming the tensor. Returns self."""
        opt = None if optimizer is None else optimizer._h
        capi.mixp_module_load_safetensors(self._h, opt, str(path), int(bool(strict)))
        return self

    def load_hf_gpt2(self, path, optimizer=None):
        """Imports Hugging Face GPT-2 weights into a zoo gpt made with
        ``gelu=tanh``: ``path`` is the ``model.safetensors`` that
        ``GPT2LMHeadModel.save_pretrained`` writes, or its directory. The
        model's n_layer, n_embd, vocab and block_size must be the
        checkpoint's (n_head too: it is in the checkpoint's config.json).
        ``optimizer``: the optimizer holding fp32 masters of decorated (O2)
        parameters, whose masters take the values too. The whole file is
        checked first: a failed import changes nothing and raises the mixp
        error naming the tensors. Returns self."""
        opt = None if optimizer is None else optimizer._h
        capi.mixp_model_load_hf_gpt2(self._h, opt, str(path))
        return self

    def save_hf_gpt2(self, directory, dtype=float32, optimizer=None):
        """Writes ``directory/model.safetensors`` and ``directory/config.json``
        in the Hugging Face GPT-2 layout, so that
        ``transformers.GPT2LMHeadModel.from_pretrained(directory)`` reads the
        model. ``dtype``: float32, float16 or bfloat16. ``optimizer``: the
        optimizer holding fp32 masters of decorated parameters, which are
        written instead of the half-precision parameters. Returns self."""
        opt = None if optimizer is None else optimizer._h
        capi.mixp_model_save_hf_gpt2(self._h, opt, str(directory), int(as_dtype(dtype)))
        return self

    def eval(self):
        return self.train(False)

    def __repr__(self):
        name = self._config or type(self).__name__
        return f"<mixp.nn.Module {name}{' closed' if self.closed else ''}>"


def _session(session):
    return session or default_session()


class Linear(Module):
    """y = x W^T + b (PyTorch's initialisation)."""

    __slots__ = ()

    def __init__(self, in_features, out_features, bias=True, dtype=float32, session=None):
        s = _session(session)
        super().__init__(capi.mixp_linear_create(s._h, in_features, out_features, int(bool(bias)),
                                                 int(as_dtype(dtype))), s)


class Conv2d(Module):
    __slots__ = ()

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1,
                 groups=1, bias=True, layout="NCHW", dtype=float32, session=None):
        s = _session(session)
        kh, kw = functional._pair(kernel_size)
        o = capi.mixp_conv2d_options()
        o.stride_h, o.stride_w = functional._pair(stride)
        o.pad_h, o.pad_w = functional._pair(padding)
        o.dilation_h, o.dilation_w = functional._pair(dilation)
        o.groups = groups
        o.layout = functional._LAYOUT[layout]
        super().__init__(capi.mixp_conv2d_create(s._h, in_channels, out_channels, kh, kw, o,
                                                 int(bool(bias)), int(as_dtype(dtype))), s)


class BatchNorm2d(Module):
    __slots__ = ()

    def __init__(self, num_features, eps=1e-5, momentum=0.1, affine=True, dtype=float32,
                 session=None):
        s = _session(session)
        super().__init__(capi.mixp_batchnorm2d_create(s._h, num_features, float(eps), float(momentum),
                                                      int(bool(affine)), int(as_dtype(dtype))), s)


class LayerNorm(Module):
    __slots__ = ()

    def __init__(self, normalized_size, eps=1e-5, affine=True, dtype=float32, session=None):
        s = _session(session)
        super().__init__(capi.mixp_layernorm_create(s._h, normalized_size, float(eps),
                                                    int(bool(affine)), int(as_dtype(dtype))), s)


class Embedding(Module):
    __slots__ = ()

    def __init__(self, num_embeddings, dim, padding_idx=None, dtype=float32, session=None):
        s = _session(session)
        pad = -1 if padding_idx is None else padding_idx
        super().__init__(capi.mixp_embedding_create(s._h, num_embeddings, dim, pad,
                                                    int(as_dtype(dtype))), s)


class MultiheadAttention(Module):
    """Self-attention on [B, T, E] input (batch_first=True)."""

    __slots__ = ()

    def __init__(self, embed_dim, num_heads, bias=True, dropout=0.0, causal=False, dtype=float32,
                 session=None):
        s = _session(session)
        super().__init__(capi.mixp_multihead_attention_create(
            s._h, embed_dim, num_heads, int(bool(bias)), float(dropout), int(bool(causal)),
            int(as_dtype(dtype))), s)


def model(config, session=None):
    """A model of the zoo, e.g. ``model("mlp hidden=256,128")`` or ``model("resnet18 classes=10")``.

    See docs/model-zoo.md for the names and keys.
    """
    s = _session(session)
    return Module(capi.mixp_model_create(s._h, config), s, config)


class Sequential:
    """Modules and callables applied in order (a Python container: the C API has none)."""

    def __init__(self, *layers):
        self.layers = list(layers)

    def __call__(self, x):
        for layer in self.layers:
            x = layer(x)
        return x

    forward = __call__

    def named_parameters(self):
        out = []
        for i, layer in enumerate(self.layers):
            if isinstance(layer, (Module, Sequential)):
                out += [(f"{i}.{n}", t) for n, t in layer.named_parameters()]
        return out

    def parameters(self):
        return [t for _, t in self.named_parameters()]

    def train(self, mode=True):
        for layer in self.layers:
            if isinstance(layer, (Module, Sequential)):
                layer.train(mode)
        return self

    def eval(self):
        return self.train(False)

    def close(self):
        for layer in self.layers:
            if isinstance(layer, (Module, Sequential)):
                layer.close()
