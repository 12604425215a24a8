"""PyTorch twins of mixp's model zoo (src/models/), built from the same
configuration string mixp_model_create takes ("gpt n_layer=12 n_head=12 ...",
"resnet50 width=8 classes=10", "mobilenet_v3_large width_mult=0.25"), layer
for layer, so that the parameter counts agree (the benchmarks print both).

Written here rather than taken from torchvision, which may be absent:
  resnet        torchvision's ResNet-18/34/50 (v1.5: the stride in the
                bottleneck's 3x3 conv), with mixp's keys depth, width,
                classes, in_channels
  mobilenet_v3  torchvision's MobileNetV3 small/large (_make_divisible,
                squeeze-excitation, BatchNorm eps 0.001), keys size,
                width_mult, classes, in_channels, dropout
  gpt           mixp's gpt: GPT-2 with learned positions, pre-LN blocks,
                biased projections, exact (erf) GELU, the output tied to
                wte; keys n_layer, n_head, n_embd, vocab, block_size

Initialisation follows the originals (kaiming fan_out for convolutions,
GPT-2's N(0, 0.02) with scaled residual projections). Debian's torch 1.13
has no F.scaled_dot_product_attention: the GPT twin then composes attention
(mask, softmax, product) and NOTES says so.
"""
import math

import torch
from torch import nn
import torch.nn.functional as F

# What a twin had to do differently on this torch, for the benchmark's output.
NOTES = []


def note(text):
    if text not in NOTES:
        NOTES.append(text)


# ---- the configuration string -------------------------------------------------------

# name -> (base model, preset key, value): mixp's aliases (src/models/zoo.cpp).
ALIASES = {"resnet18": ("resnet", "depth", "18"), "resnet34": ("resnet", "depth", "34"),
           "resnet50": ("resnet", "depth", "50"),
           "mobilenet_v3_small": ("mobilenet_v3", "size", "small"),
           "mobilenet_v3_large": ("mobilenet_v3", "size", "large")}


def parse_spec(spec):
    """("resnet", {"depth": "50", ...}) from "resnet50 classes=10"."""
    words = spec.split()
    if not words:
        raise ValueError("empty model spec")
    name, keys = words[0], {}
    if name in ALIASES:
        name, key, value = ALIASES[name]
        keys[key] = value
    for w in words[1:]:
        k, sep, v = w.partition("=")
        if not sep or not k or not v:
            raise ValueError(f"'{w}' in '{spec}' is not a key=value pair")
        keys[k] = v
    return name, keys


class Keys:
    """A spec's keys, read once each; finish() refuses any key left over, as
    mixp's Config does, so that a twin never silently ignores one."""

    def __init__(self, name, keys):
        self.name, self.keys = name, dict(keys)

    def int(self, key, default):
        return int(self.keys.pop(key, default))

    def float(self, key, default):
        return float(self.keys.pop(key, default))

    def str(self, key, default):
        return self.keys.pop(key, default)

    def finish(self):
        if self.keys:
            raise ValueError(f"the {self.name} twin does not implement the key(s) {sorted(self.keys)}")


def build(spec):
    """The twin of mixp_model_create(session, spec)."""
    name, keys = parse_spec(spec)
    k = Keys(name, keys)
    if name == "gpt":
        m = Gpt(vocab=k.int("vocab", 65), block=k.int("block_size", 64), n_layer=k.int("n_layer", 2),
                n_head=k.int("n_head", 2), e=k.int("n_embd", 64))
    elif name == "resnet":
        m = ResNet(depth=k.int("depth", 18), classes=k.int("classes", 1000),
                   in_channels=k.int("in_channels", 3), width=k.int("width", 64))
    elif name == "mobilenet_v3":
        m = MobileNetV3(large=k.str("size", "large") == "large", classes=k.int("classes", 1000),
                        in_channels=k.int("in_channels", 3), width_mult=k.float("width_mult", 1.0),
                        dropout=k.float("dropout", 0.2))
    else:
        raise ValueError(f"no twin for the model '{name}' (gpt, resnet*, mobilenet_v3*)")
    k.finish()
    return m


def count_parameters(model):
    return sum(p.numel() for p in model.parameters())


def _kaiming_fan_out(module):
    for m in module.modules():
        if isinstance(m, nn.Conv2d):
            nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")
            if m.bias is not None:
                nn.init.zeros_(m.bias)


# ---- gpt ------------------------------------------------------------------------------


def causal_attention(q, k, v):
    if hasattr(F, "scaled_dot_product_attention"):
        return F.scaled_dot_product_attention(q, k, v, is_causal=True)
    note(f"torch {torch.__version__} has no F.scaled_dot_product_attention: composed causal attention")
    t = q.shape[-2]
    att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(q.shape[-1]))
    mask = torch.ones(t, t, dtype=torch.bool, device=q.device).triu(1)
    return att.masked_fill(mask, float("-inf")).softmax(-1) @ v


class GptBlock(nn.Module):
    def __init__(self, e, heads):
        super().__init__()
        self.heads = heads
        self.ln_1 = nn.LayerNorm(e)
        self.in_proj = nn.Linear(e, 3 * e)  # mixp's in_proj_weight/in_proj_bias
        self.out_proj = nn.Linear(e, e)
        self.ln_2 = nn.LayerNorm(e)
        self.c_fc = nn.Linear(e, 4 * e)
        self.c_proj = nn.Linear(4 * e, e)

    def forward(self, x):
        b, t, e = x.shape
        q, k, v = self.in_proj(self.ln_1(x)).split(e, dim=-1)
        q, k, v = (z.view(b, t, self.heads, e // self.heads).transpose(1, 2) for z in (q, k, v))
        a = causal_attention(q, k, v)
        x = x + self.out_proj(a.transpose(1, 2).reshape(b, t, e))
        return x + self.c_proj(F.gelu(self.c_fc(self.ln_2(x))))


class Gpt(nn.Module):
    """mixp's gpt: learned positions, pre-LN blocks, output tied to wte."""

    def __init__(self, vocab=65, block=64, n_layer=4, n_head=4, e=128):
        super().__init__()
        if e % n_head:
            raise ValueError(f"gpt: n_embd={e} must be divisible by n_head={n_head}")
        self.wte = nn.Embedding(vocab, e)
        self.wpe = nn.Embedding(block, e)
        self.h = nn.Sequential(*[GptBlock(e, n_head) for _ in range(n_layer)])
        self.ln_f = nn.LayerNorm(e)
        # GPT-2's initialisation, as src/models/gpt.cpp draws it.
        for name, p in self.named_parameters():
            if name.endswith("bias"):
                nn.init.zeros_(p)
            elif p.dim() == 2:
                residual = name.endswith("out_proj.weight") or name.endswith("c_proj.weight")
                nn.init.normal_(p, 0.0, 0.02 / math.sqrt(2 * n_layer) if residual else 0.02)

    def forward(self, idx):
        pos = torch.arange(idx.shape[1], device=idx.device)
        x = self.ln_f(self.h(self.wte(idx) + self.wpe(pos)))
        return F.linear(x, self.wte.weight)


# ---- resnet -----------------------------------------------------------------------------


class BasicBlock(nn.Module):
    expansion = 1

    def __init__(self, cin, planes, stride):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, planes, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(planes)
        self.conv2 = nn.Conv2d(planes, planes, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(planes)
        self.downsample = None
        if stride != 1 or cin != planes:
            self.downsample = nn.Sequential(nn.Conv2d(cin, planes, 1, stride, bias=False),
                                            nn.BatchNorm2d(planes))

    def forward(self, x):
        h = F.relu(self.bn1(self.conv1(x)))
        h = self.bn2(self.conv2(h))
        return F.relu(h + (self.downsample(x) if self.downsample is not None else x))


class Bottleneck(nn.Module):
    """v1.5: the stride sits in the 3x3 convolution."""
    expansion = 4

    def __init__(self, cin, planes, stride):
        super().__init__()
        out = planes * self.expansion
        self.conv1 = nn.Conv2d(cin, planes, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(planes)
        self.conv2 = nn.Conv2d(planes, planes, 3, stride, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(planes)
        self.conv3 = nn.Conv2d(planes, out, 1, bias=False)
        self.bn3 = nn.BatchNorm2d(out)
        self.downsample = None
        if stride != 1 or cin != out:
            self.downsample = nn.Sequential(nn.Conv2d(cin, out, 1, stride, bias=False), nn.BatchNorm2d(out))

    def forward(self, x):
        h = F.relu(self.bn1(self.conv1(x)))
        h = F.relu(self.bn2(self.conv2(h)))
        h = self.bn3(self.conv3(h))
        return F.relu(h + (self.downsample(x) if self.downsample is not None else x))


class ResNet(nn.Module):
    """torchvision's resnet18/34/50: 7x7 stem, max pool, four stages."""
    LAYERS = {18: (BasicBlock, (2, 2, 2, 2)), 34: (BasicBlock, (3, 4, 6, 3)), 50: (Bottleneck, (3, 4, 6, 3))}

    def __init__(self, depth=18, classes=1000, in_channels=3, width=64):
        super().__init__()
        if depth not in self.LAYERS:
            raise ValueError(f"resnet: depth {depth} is not 18, 34 or 50")
        block, layers = self.LAYERS[depth]
        self.stem = nn.Sequential(nn.Conv2d(in_channels, width, 7, 2, 3, bias=False),
                                  nn.BatchNorm2d(width), nn.ReLU(), nn.MaxPool2d(3, 2, 1))
        blocks, cin = [], width
        for stage, n in enumerate(layers):
            planes = width << stage
            for b in range(n):
                blocks.append(block(cin, planes, 2 if stage > 0 and b == 0 else 1))
                cin = planes * block.expansion
        self.blocks = nn.Sequential(*blocks)
        self.fc = nn.Linear(cin, classes)
        _kaiming_fan_out(self)

    def forward(self, x):
        h = self.blocks(self.stem(x))
        return self.fc(torch.flatten(F.adaptive_avg_pool2d(h, 1), 1))


# ---- mobilenet_v3 ----------------------------------------------------------------------


def make_divisible(v, divisor=8):
    """torchvision's _make_divisible: a multiple of 8, never more than 10% below v."""
    nv = max(divisor, int(v + divisor / 2) // divisor * divisor)
    return nv + divisor if nv < 0.9 * v else nv


def conv_bn_act(cin, cout, k, stride, groups, act):
    layers = [nn.Conv2d(cin, cout, k, stride, (k - 1) // 2, groups=groups, bias=False),
              nn.BatchNorm2d(cout, eps=0.001, momentum=0.01)]
    if act is not None:
        layers.append(act())
    return nn.Sequential(*layers)


class SqueezeExcitation(nn.Module):
    def __init__(self, c, squeeze):
        super().__init__()
        self.fc1 = nn.Conv2d(c, squeeze, 1)
        self.fc2 = nn.Conv2d(squeeze, c, 1)

    def forward(self, x):
        s = F.adaptive_avg_pool2d(x, 1)
        return x * F.hardsigmoid(self.fc2(F.relu(self.fc1(s))))


class InvertedResidual(nn.Module):
    def __init__(self, cin, k, expanded, cout, se, act, stride):
        super().__init__()
        self.residual = stride == 1 and cin == cout
        layers = []
        if expanded != cin:
            layers.append(conv_bn_act(cin, expanded, 1, 1, 1, act))
        layers.append(conv_bn_act(expanded, expanded, k, stride, expanded, act))
        if se:
            layers.append(SqueezeExcitation(expanded, make_divisible(expanded // 4)))
        layers.append(conv_bn_act(expanded, cout, 1, 1, 1, None))
        self.block = nn.Sequential(*layers)

    def forward(self, x):
        y = self.block(x)
        return y + x if self.residual else y


class MobileNetV3(nn.Module):
    RE, HS = nn.ReLU, nn.Hardswish
    # (in, kernel, expanded, out, se, activation, stride): torchvision's table.
    LARGE = [(16, 3, 16, 16, False, RE, 1), (16, 3, 64, 24, False, RE, 2), (24, 3, 72, 24, False, RE, 1),
             (24, 5, 72, 40, True, RE, 2), (40, 5, 120, 40, True, RE, 1), (40, 5, 120, 40, True, RE, 1),
             (40, 3, 240, 80, False, HS, 2), (80, 3, 200, 80, False, HS, 1), (80, 3, 184, 80, False, HS, 1),
             (80, 3, 184, 80, False, HS, 1), (80, 3, 480, 112, True, HS, 1), (112, 3, 672, 112, True, HS, 1),
             (112, 5, 672, 160, True, HS, 2), (160, 5, 960, 160, True, HS, 1), (160, 5, 960, 160, True, HS, 1)]
    SMALL = [(16, 3, 16, 16, True, RE, 2), (16, 3, 72, 24, False, RE, 2), (24, 3, 88, 24, False, RE, 1),
             (24, 5, 96, 40, True, HS, 2), (40, 5, 240, 40, True, HS, 1), (40, 5, 240, 40, True, HS, 1),
             (40, 5, 120, 48, True, HS, 1), (48, 5, 144, 48, True, HS, 1), (48, 5, 288, 96, True, HS, 2),
             (96, 5, 576, 96, True, HS, 1), (96, 5, 576, 96, True, HS, 1)]

    def __init__(self, large=True, classes=1000, in_channels=3, width_mult=1.0, dropout=0.2):
        super().__init__()
        table = [(make_divisible(i * width_mult), k, make_divisible(e * width_mult),
                  make_divisible(o * width_mult), se, act, s)
                 for i, k, e, o, se, act, s in (self.LARGE if large else self.SMALL)]
        features = [conv_bn_act(in_channels, table[0][0], 3, 2, 1, nn.Hardswish)]
        features += [InvertedResidual(*c) for c in table]
        last_in = table[-1][3]
        features.append(conv_bn_act(last_in, 6 * last_in, 1, 1, 1, nn.Hardswish))
        self.features = nn.Sequential(*features)
        last_channel = make_divisible((1280 if large else 1024) * width_mult)
        self.classifier = nn.Sequential(nn.Linear(6 * last_in, last_channel), nn.Hardswish(),
                                        nn.Dropout(dropout), nn.Linear(last_channel, classes))
        _kaiming_fan_out(self)
        for m in self.classifier:
            if isinstance(m, nn.Linear):
                nn.init.normal_(m.weight, 0, 0.01)
                nn.init.zeros_(m.bias)

    def forward(self, x):
        h = F.adaptive_avg_pool2d(self.features(x), 1)
        return self.classifier(torch.flatten(h, 1))
