#!/usr/bin/env python3
"""PyTorch references for mixp-bench's GPU workloads (mixp-bench --device
cuda runs them in the same invocation and prints the ratios).

  gemm        torch.matmul, f16 and bf16, 4096^3, 8192^3 and the GPT-2
              shapes (M=8192; K,N from 768/2304/3072): TFLOP/s
  adamw       GradScaler.unscale_ + AdamW(fused=True) over the 148 fp32
              tensors of GPT-2 124M: effective GB/s (36 bytes per parameter:
              unscale reads and writes the grad, AdamW reads p, g, m, v and
              writes p, m, v)
  mlp-launch  4 x Linear(1024) with ReLU, batch 64, fp16 autocast, GradScaler,
              AdamW: microseconds per step (launch-bound)
  fmnist      one epoch of the Fashion-MNIST MLP (784-256-128-10, batch 128,
              60000 samples already on the device) under O0 (fp32), O1 (f16
              autocast + GradScaler) and O2 (f16 weights, fp32 master copy in
              the optimizer, GradScaler): samples/s

Prints one JSON object per measurement on stdout, e.g.
  {"workload": "gemm", "name": "gemm bf16 4096x4096x4096", "value": 650.2,
   "unit": "TFLOP/s", "torch": "2.11.0"}
--device cpu (with --quick) is a smoke test that runs with CPU-only PyTorch
1.13: f16 matmuls and fused AdamW become bf16/foreach there.
"""
import argparse
import json
import time

import torch


def emit(workload, name, value, unit):
    print(json.dumps({"workload": workload, "name": name, "value": value, "unit": unit,
                      "torch": torch.__version__}), flush=True)


def sync(dev):
    if dev.type == "cuda":
        torch.cuda.synchronize(dev)


def grad_scaler(**kw):
    if hasattr(torch, "amp") and hasattr(torch.amp, "GradScaler"):
        return torch.amp.GradScaler("cuda", **kw)
    return torch.cuda.amp.GradScaler(**kw)


def timed(fn, dev, warmup, reps):
    for _ in range(warmup):
        fn()
    sync(dev)
    t0 = time.perf_counter()
    for _ in range(reps):
        fn()
    sync(dev)
    return (time.perf_counter() - t0) / reps


def gemm_shapes(quick):
    if quick:
        return [(256, 256, 256)]
    shapes = [(4096, 4096, 4096), (8192, 8192, 8192)]
    for k, n in ((768, 2304), (768, 3072), (3072, 768), (768, 768)):
        shapes.append((8192, k, n))
    return shapes


def bench_gemm(dev, quick):
    dtypes = [("f16", torch.float16), ("bf16", torch.bfloat16)]
    if dev.type == "cpu":
        dtypes = [("bf16", torch.bfloat16)]
    for m, k, n in gemm_shapes(quick):
        for label, dt in dtypes:
            a = torch.randn(m, k, device=dev, dtype=dt)
            b = torch.randn(k, n, device=dev, dtype=dt)
            reps = 3 if quick else max(10, int(2e13 / (2 * m * n * k)))
            t = timed(lambda: torch.matmul(a, b), dev, 3, reps)
            emit("gemm", f"gemm {label} {m}x{k}x{n}", 2.0 * m * n * k / t / 1e12, "TFLOP/s")


def gpt2_shapes(quick):
    d, layers, vocab, ctx = (64, 2, 500, 64) if quick else (768, 12, 50257, 1024)
    shapes = [(vocab, d), (ctx, d)]
    for _ in range(layers):
        shapes += [(d,), (d,), (d, 3 * d), (3 * d,), (d, d), (d,), (d,), (d,), (d, 4 * d),
                   (4 * d,), (4 * d, d), (d,)]
    shapes += [(d,), (d,)]
    return shapes


def bench_adamw(dev, quick):
    shapes = gpt2_shapes(quick)
    params = [torch.nn.Parameter(torch.randn(s, device=dev) * 0.02) for s in shapes]
    for p in params:
        p.grad = torch.ones_like(p)
    fused = dev.type == "cuda"
    opt = torch.optim.AdamW(params, lr=1e-4, fused=True) if fused else torch.optim.AdamW(params, lr=1e-4)
    # init_scale 2: every unscale_ really multiplies (by 1/2), and 120
    # iterations keep the halved gradients normal.
    scaler = grad_scaler(init_scale=2.0, growth_interval=1 << 30) if fused else None
    if scaler is not None:
        # The scale tensor is created by the first scale(); unscale_ needs it.
        scaler.scale(torch.ones((), device=dev))

    def step():
        if scaler is not None:
            scaler.unscale_(opt)
            scaler.step(opt)
            scaler.update()
        else:
            for p in params:
                p.grad.mul_(0.5)
            opt.step()

    reps = 3 if quick else 100
    t = timed(step, dev, 3 if quick else 20, reps)
    n = sum(p.numel() for p in params)
    emit("adamw", f"unscale+adamw {len(params)} tensors {n / 1e6:.1f}M", 36.0 * n / t / 1e9, "GB/s")


def bench_mlp_launch(dev, quick):
    torch.manual_seed(0)
    layers = []
    for i in range(4):
        layers.append(torch.nn.Linear(1024, 1024))
        if i < 3:
            layers.append(torch.nn.ReLU())
    model = torch.nn.Sequential(*layers).to(dev)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    cuda = dev.type == "cuda"
    scaler = grad_scaler() if cuda else None
    x = torch.randn(64, 1024, device=dev)
    y = torch.randn(64, 1024, device=dev)
    dt = torch.float16 if cuda else torch.bfloat16

    def step():
        with torch.autocast(dev.type, dtype=dt):
            loss = torch.nn.functional.mse_loss(model(x).float(), y)
        opt.zero_grad(set_to_none=True)
        if scaler is not None:
            scaler.scale(loss).backward()
            scaler.step(opt)
            scaler.update()
        else:
            loss.backward()
            opt.step()

    t = timed(step, dev, 3 if quick else 50, 5 if quick else 500)
    emit("mlp-launch", "mlp-launch 4x1024 b64 f16", t * 1e6, "us/step")


def bench_fmnist(dev, quick):
    n = 1024 if quick else 60000
    batch = 128
    x_all = torch.randn(n, 784, device=dev)
    y_all = torch.randint(0, 10, (n,), device=dev)
    cuda = dev.type == "cuda"
    low = torch.float16 if cuda else torch.bfloat16
    for mode in ("O0", "O1", "O2"):
        torch.manual_seed(0)
        model = torch.nn.Sequential(torch.nn.Linear(784, 256), torch.nn.ReLU(),
                                    torch.nn.Linear(256, 128), torch.nn.ReLU(),
                                    torch.nn.Linear(128, 10)).to(dev)
        masters = None
        if mode == "O2":
            # Apex O2: half model, fp32 master weights stepped by the optimizer.
            masters = [p.detach().clone().float().requires_grad_() for p in model.parameters()]
            model = model.to(low)
            opt = torch.optim.AdamW(masters, lr=1e-3)
        else:
            opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
        scaler = grad_scaler() if (cuda and mode != "O0") else None

        def epoch():
            for i in range(0, n - batch + 1, batch):
                xb, yb = x_all[i:i + batch], y_all[i:i + batch]
                if mode == "O2":
                    xb = xb.to(low)
                with torch.autocast(dev.type, dtype=low, enabled=mode == "O1"):
                    loss = torch.nn.functional.cross_entropy(model(xb).float(), yb)
                opt.zero_grad(set_to_none=True)
                if mode == "O2":
                    for p in model.parameters():
                        p.grad = None
                (scaler.scale(loss) if scaler else loss).backward()
                if mode == "O2":
                    for m, p in zip(masters, model.parameters()):
                        m.grad = p.grad.float()
                if scaler:
                    scaler.step(opt)
                    scaler.update()
                else:
                    opt.step()
                if mode == "O2":
                    with torch.no_grad():
                        for m, p in zip(masters, model.parameters()):
                            p.copy_(m)

        t = timed(epoch, dev, 1, 1 if quick else 3)
        emit("fmnist", f"fmnist epoch {mode}", (n // batch) * batch / t, "samples/s")


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--device", default="cuda")
    p.add_argument("--only", choices=["gemm", "adamw", "mlp-launch", "fmnist"], action="append")
    p.add_argument("--quick", action="store_true", help="tiny sizes (smoke test)")
    a = p.parse_args()
    dev = torch.device(a.device)
    if dev.type == "cuda":
        torch.backends.cuda.matmul.allow_tf32 = False
    workloads = a.only or ["gemm", "adamw", "mlp-launch", "fmnist"]
    for w in workloads:
        {"gemm": bench_gemm, "adamw": bench_adamw, "mlp-launch": bench_mlp_launch,
         "fmnist": bench_fmnist}[w](dev, a.quick)


if __name__ == "__main__":
    main()
