#!/usr/bin/env python3
"""PyTorch reference for mixp-bench: the Fashion-MNIST MLP (784-256-128-10)
training step, batch 128, AdamW, on the CPU, fp32 and under bf16 autocast.

Prints one JSON object per configuration on stdout:
  {"name": "torch-fp32", "samples_per_sec": ..., "step_us": ..., "torch": "1.13.1"}
The input data is random (the step cost does not depend on the values).
"""
import argparse
import json
import time

import torch


def run(name, threads, batch, steps, warmup, autocast_dtype):
    torch.manual_seed(0)
    torch.set_num_threads(threads)
    model = torch.nn.Sequential(
        torch.nn.Linear(784, 256), torch.nn.ReLU(),
        torch.nn.Linear(256, 128), torch.nn.ReLU(),
        torch.nn.Linear(128, 10))
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    x = torch.randn(batch, 784)
    y = torch.randint(0, 10, (batch,))
    loss_fn = torch.nn.CrossEntropyLoss()

    def step():
        with torch.autocast("cpu", dtype=autocast_dtype or torch.bfloat16,
                            enabled=autocast_dtype is not None):
            loss = loss_fn(model(x), y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()

    for _ in range(warmup):
        step()
    t0 = time.perf_counter()
    for _ in range(steps):
        step()
    dt = time.perf_counter() - t0
    return {"name": name, "samples_per_sec": steps * batch / dt, "step_us": dt / steps * 1e6,
            "torch": torch.__version__}


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--batch", type=int, default=128)
    p.add_argument("--steps", type=int, default=200)
    p.add_argument("--warmup", type=int, default=20)
    a = p.parse_args()
    for name, dt in (("torch-fp32", None), ("torch-bf16-autocast", torch.bfloat16)):
        print(json.dumps(run(name, a.threads, a.batch, a.steps, a.warmup, dt)), flush=True)


if __name__ == "__main__":
    main()
