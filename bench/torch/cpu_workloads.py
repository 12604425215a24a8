#!/usr/bin/env python3
"""PyTorch twins of mixp-bench's CPU workloads, measured on the CPU in fp32
and under bf16 autocast.

Each model is layer for layer the mixp zoo model of the same name (see
src/models/; resnet18 and gpt come from twins.py): the parameter count is
printed so that mixp-bench can show both. Inputs and targets are random (a step's cost does not depend on the
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

from twins import Gpt, ResNet


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


# name: (model factory, one sample's shape, vocabulary (token input) or 0)
WORKLOADS = {
    "mlp": (mlp, (784,), 0),
    "cnn": (cnn, (1, 28, 28), 0),
    "resnet18": (lambda: ResNet(depth=18, classes=10), (3, 32, 32), 0),
    "gpt": (Gpt, (64,), 65),
    "gpt256": (lambda: Gpt(block=256), (256,), 65),
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
