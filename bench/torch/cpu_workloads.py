#!/usr/bin/env python3
"""PyTorch twins of mixp-bench's CPU workloads, measured on the CPU in fp32
and under bf16 autocast.

Each model is layer for layer the mixp zoo model of the same name (see
src/models/): the parameter count is printed so that mixp-bench can show
both. Inputs and targets are random (a step's cost does not depend on the
values); the step is forward, cross-entropy, zero_grad, backward, AdamW.

Prints JSON lines on stdout:
  {"workload": "cnn", "params": 421738, "torch": "2.x"}
  {"name": "torch-fp32", "samples_per_sec": ..., "step_us": ..., "torch": "2.x"}
  {"name": "torch-bf16-autocast", ...}
"""
import argparse
import json
import statistics
import time

import torch
from torch import nn
import torch.nn.functional as F


def mlp():
    return nn.Sequential(nn.Linear(784, 256), nn.ReLU(), nn.Linear(256, 128), nn.ReLU(),
                         nn.Linear(128, 10))


def cnn(in_channels=1, image=28, width=32, blocks=2, hidden=128, classes=10, p=0.25):
    layers, c, side = [], in_channels, image
    for i in range(blocks):
        out = width << i
        layers += [nn.Conv2d(c, out, 3, 1, 1, bias=False), nn.BatchNorm2d(out), nn.ReLU(),
                   nn.MaxPool2d(2, 2)]
        c, side = out, side // 2
    return nn.Sequential(*layers, nn.Flatten(), nn.Dropout(p), nn.Linear(c * side * side, hidden),
                         nn.ReLU(), nn.Dropout(p), nn.Linear(hidden, classes))


class BasicBlock(nn.Module):
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


class ResNet18(nn.Module):
    """torchvision's resnet18 (7x7 stem, max pool, [2, 2, 2, 2] basic blocks)."""

    def __init__(self, in_channels=3, classes=10, width=64):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(in_channels, width, 7, 2, 3, bias=False),
                                  nn.BatchNorm2d(width), nn.ReLU(), nn.MaxPool2d(3, 2, 1))
        blocks, cin = [], width
        for stage in range(4):
            planes = width << stage
            for b in range(2):
                blocks.append(BasicBlock(cin, planes, 2 if stage > 0 and b == 0 else 1))
                cin = planes
        self.blocks = nn.Sequential(*blocks)
        self.fc = nn.Linear(cin, classes)

    def forward(self, x):
        h = self.blocks(self.stem(x))
        return self.fc(torch.flatten(F.adaptive_avg_pool2d(h, 1), 1))


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
        a = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.out_proj(a.transpose(1, 2).reshape(b, t, e))
        return x + self.c_proj(F.gelu(self.c_fc(self.ln_2(x))))


class Gpt(nn.Module):
    """mixp's gpt: learned positions, pre-LN blocks, output tied to wte."""

    def __init__(self, vocab=65, block=64, n_layer=4, n_head=4, e=128):
        super().__init__()
        self.wte = nn.Embedding(vocab, e)
        self.wpe = nn.Embedding(block, e)
        self.h = nn.Sequential(*[GptBlock(e, n_head) for _ in range(n_layer)])
        self.ln_f = nn.LayerNorm(e)

    def forward(self, idx):
        pos = torch.arange(idx.shape[1])
        x = self.ln_f(self.h(self.wte(idx) + self.wpe(pos)))
        return F.linear(x, self.wte.weight)


# name: (model factory, one sample's shape, vocabulary (token input) or 0)
WORKLOADS = {
    "mlp": (mlp, (784,), 0),
    "cnn": (cnn, (1, 28, 28), 0),
    "resnet18": (ResNet18, (3, 32, 32), 0),
    "gpt": (Gpt, (64,), 65),
}


def run(name, workload, threads, batch, steps, warmup, autocast_dtype):
    torch.manual_seed(0)
    torch.set_num_threads(threads)
    factory, item, vocab = WORKLOADS[workload]
    model = factory()
    model.train()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    if vocab:
        x = torch.randint(0, vocab, (batch,) + item)
        y = torch.randint(0, vocab, (batch * item[0],))
    else:
        x = torch.randn((batch,) + item)
        y = torch.randint(0, 10, (batch,))

    def step():
        with torch.autocast("cpu", dtype=autocast_dtype or torch.bfloat16,
                            enabled=autocast_dtype is not None):
            logits = model(x)
            loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()

    for _ in range(warmup):
        step()
    times = []
    for _ in range(steps):
        t0 = time.perf_counter()
        step()
        times.append(time.perf_counter() - t0)
    dt = statistics.median(times)  # the median step, as mixp-bench takes
    return {"name": name, "samples_per_sec": batch / dt, "step_us": dt * 1e6,
            "torch": torch.__version__}


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--workload", choices=sorted(WORKLOADS), default="mlp")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--batch", type=int, default=128)
    p.add_argument("--steps", type=int, default=200)
    p.add_argument("--warmup", type=int, default=20)
    a = p.parse_args()
    params = sum(q.numel() for q in WORKLOADS[a.workload][0]().parameters())
    print(json.dumps({"workload": a.workload, "params": params, "torch": torch.__version__}), flush=True)
    for name, dt in (("torch-fp32", None), ("torch-bf16-autocast", torch.bfloat16)):
        print(json.dumps(run(name, a.workload, a.threads, a.batch, a.steps, a.warmup, dt)), flush=True)


if __name__ == "__main__":
    main()
