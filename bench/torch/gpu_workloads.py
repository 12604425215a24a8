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
              AdamW(fused=True): microseconds per step (launch-bound)
  fmnist      one epoch of the Fashion-MNIST MLP (784-256-128-10, batch 128,
              60000 samples already on the device) under O0 (fp32), O1 (f16
              autocast + GradScaler) and O2 (f16 weights, fp32 master copy in
              the optimizer, GradScaler), AdamW(fused=True): samples/s

Every optimizer is AdamW(fused=True): with it GradScaler.step hands found_inf
to the kernel on the device instead of reading it on the host each step (a
sync that mixp never makes). Where this torch has no fused AdamW for the
device, the default one runs and the output says so.

Prints one JSON object per measurement on stdout, e.g.
  {"workload": "gemm", "name": "gemm bf16 4096x4096x4096", "value": 650.2,
   "unit": "TFLOP/s", "torch": "2.11.0"}

--model NAME --spec SPEC ... times the twin of a mixp zoo model instead
(twins.py builds it from the spec mixp_model_create takes; mixp-bench
--device cuda passes the same spec to both sides):
  rows fp32 (TF32 off), amp (autocast in --amp-dtype, GradScaler for f16) and
  compile (amp with the model and loss under torch.compile, in a child
  process given --compile-timeout seconds), for each --channels-last value
  (1: model and input in torch.channels_last; -1: not a convolutional model);
  cudnn.benchmark on. Warm-up steps, then --steps timed steps or, with
  --step-seconds, as many as fit in that time after the last warm-up step
  (at least min(3, --steps), at most --steps); mean ms per step between two
  synchronisations; peak memory is torch.cuda.max_memory_allocated after
  reset_peak_memory_stats at the end of the warm-up. Lines:
  {"row": "amp", "what": "bf16 autocast (eager)", "channels_last": -1,
   "steps": 10, "ms_per_step": 61.2, "peak_bytes": 123456, ...}
  {"model": "gpt2", "params": 124439808, "torch": "2.11.0", "note": "..."}
  A row that fails prints "error" (or "oom", or "skipped" for torch.compile)
  instead of numbers, and the next row runs. With --profile N, each row
  then profiles one more step and prints its N kernels with the most
  device time: {"profile": "gpt2 amp channels_last=-1", "kernel": "...",
  "calls": 12, "device_ms": 3.1}.

--device cpu (with --quick) is a smoke test of the same code, with any torch
since 1.13 (Debian's): where that torch lacks something (f16 autocast,
GradScaler or fused AdamW on the CPU, scaled_dot_product_attention,
torch.compile), the row falls back and its note says to what.
"""
import argparse
import contextlib
import gc
import json
import math
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

import torch
import torch.nn.functional as F

import twins


def emit(workload, name, value, unit):
    out = {"workload": workload, "name": name, "value": value, "unit": unit, "torch": torch.__version__}
    if twins.NOTES:
        out["note"] = "; ".join(twins.NOTES)
    print(json.dumps(out), flush=True)


def adamw(params, lr):
    """AdamW(fused=True), else (older torch, or a device it has no fused
    kernel for) the default AdamW, with a note saying so."""
    params = list(params)
    try:
        return torch.optim.AdamW(params, lr=lr, fused=True)
    except (RuntimeError, TypeError, ValueError) as e:
        twins.note(f"AdamW(fused=True) unavailable here ({type(e).__name__}: {str(e).splitlines()[0][:120]}): "
                   "default AdamW")
        return torch.optim.AdamW(params, lr=lr)


def sync(dev):
    if dev.type == "cuda":
        torch.cuda.synchronize(dev)


def grad_scaler(**kw):
    if hasattr(torch, "amp") and hasattr(torch.amp, "GradScaler"):
        return torch.amp.GradScaler("cuda", **kw)
    return torch.cuda.amp.GradScaler(**kw)


def backward_step(loss, opt, scaler):
    """zero_grad, backward and the optimizer's step, through the GradScaler
    when there is one (scale, step, update: no host sync with a fused AdamW)."""
    opt.zero_grad(set_to_none=True)
    if scaler is not None:
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
    else:
        loss.backward()
        opt.step()


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
    opt = adamw(params, lr=1e-4)
    fused = dev.type == "cuda"
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
    opt = adamw(model.parameters(), lr=1e-4)
    cuda = dev.type == "cuda"
    scaler = grad_scaler() if cuda else None
    x = torch.randn(64, 1024, device=dev)
    y = torch.randn(64, 1024, device=dev)
    dt = torch.float16 if cuda else torch.bfloat16

    def step():
        with torch.autocast(dev.type, dtype=dt):
            loss = torch.nn.functional.mse_loss(model(x).float(), y)
        backward_step(loss, opt, scaler)

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
            opt = adamw(masters, lr=1e-3)
        else:
            opt = adamw(model.parameters(), lr=1e-3)
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


# ---- whole models (--model) ----------------------------------------------------------


def low_dtype(dev, name):
    """The autocast dtype asked for, or bf16 (with a note) where this torch
    cannot autocast the device to it (f16 on the CPU before torch 2.x)."""
    want = {"f16": torch.float16, "bf16": torch.bfloat16}[name]
    a = torch.ones(2, 2, device=dev)
    try:
        with torch.autocast(dev.type, dtype=want):
            got = (a @ a).dtype
    except RuntimeError:  # 1.13: "AutocastCPU only support Bfloat16"
        got = None
    if got == want:
        return want
    twins.note(f"torch {torch.__version__} cannot autocast {dev.type} to {name}: bf16 autocast instead")
    return torch.bfloat16


def amp_scaler(dev):
    """A GradScaler for f16 on dev, or None (with a note) where this torch has none."""
    if hasattr(torch, "amp") and hasattr(torch.amp, "GradScaler"):
        return torch.amp.GradScaler(dev.type)
    if dev.type == "cuda":
        return torch.cuda.amp.GradScaler()
    twins.note(f"torch {torch.__version__} has no GradScaler for {dev.type}: f16 rows without loss scaling")
    return None


def is_oom(e):
    oom = getattr(torch.cuda, "OutOfMemoryError", ())
    return (oom and isinstance(e, oom)) or "out of memory" in str(e)


def one_line(e):
    text = str(e).strip().splitlines()
    return f"{type(e).__name__}: {text[0][:300] if text else ''}"


def describe(kind, low, scaled):
    """The row's precision as the table says it."""
    if kind == "fp32":
        return "fp32 (eager)"
    name = {torch.float16: "f16", torch.bfloat16: "bf16"}[low]
    return f"{name} autocast{' + GradScaler' if scaled else ''} ({'torch.compile' if kind == 'compile' else 'eager'})"


def model_row(a, dev, kind, layout, low):
    """One row: a fresh twin, its AdamW and scaler, timed as the C side times
    mixp. Returns (the row's JSON object, the parameter count)."""
    torch.manual_seed(0)
    # Drawn on the device where torch can (2.0+: torch.device is a context
    # manager): GPT-2's 124M parameters initialise in milliseconds there.
    with dev if hasattr(dev, "__enter__") else contextlib.nullcontext():
        model = twins.build(a.spec)
    model = model.to(dev)
    params = twins.count_parameters(model)
    model.train()
    item = tuple(int(v) for v in a.item.split("x"))
    if len(item) == 1:  # tokens [B, T], one target per token
        vocab = model.wte.num_embeddings
        x = torch.randint(0, vocab, (a.batch,) + item, device=dev)
        y = torch.randint(0, vocab, (a.batch * item[0],), device=dev)
    else:
        x = torch.randn((a.batch,) + item, device=dev)
        y = torch.randint(0, 10, (a.batch,), device=dev)
    if layout == 1:
        model = model.to(memory_format=torch.channels_last)
        x = x.contiguous(memory_format=torch.channels_last)
    amp = kind != "fp32"
    scaler = amp_scaler(dev) if amp and low == torch.float16 else None
    opt = adamw(model.parameters(), lr=1e-3)

    def loss_of(x, y):
        with torch.autocast(dev.type, dtype=low, enabled=amp):
            logits = model(x)
            return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), y)

    if kind == "compile":
        # The model and its loss, as nanoGPT compiles them; the optimizer
        # step stays the fused kernel.
        loss_of = torch.compile(loss_of)

    def step():
        backward_step(loss_of(x, y), opt, scaler)

    for _ in range(a.warmup - 1):
        step()
    sync(dev)
    w0 = time.perf_counter()
    step()
    sync(dev)
    n = a.steps
    if a.step_seconds:
        # As many steps as fit, sized on the last warm-up step (as mixp-bench does).
        dt = time.perf_counter() - w0
        n = max(min(3, a.steps), min(a.steps, math.ceil(a.step_seconds / dt) if dt > 0 else a.steps))
    cuda = dev.type == "cuda"
    if cuda:
        torch.cuda.reset_peak_memory_stats(dev)
    t0 = time.perf_counter()
    for _ in range(n):
        step()
    sync(dev)
    elapsed = time.perf_counter() - t0
    if a.profile:
        profile_step(step, dev, a.profile, f"{a.model} {kind} channels_last={layout}")
    return {"row": kind, "what": describe(kind, low, scaler is not None), "channels_last": layout,
            "batch": a.batch, "steps": n, "ms_per_step": elapsed / n * 1e3,
            "samples_per_sec": a.batch * n / elapsed,
            "peak_bytes": torch.cuda.max_memory_allocated(dev) if cuda else None}, params


def profile_step(step, dev, top, what):
    """One more step under torch.profiler: its top kernels (ops on the CPU)
    by device time, one JSON line each, for setting beside mixp's own
    profile of the same step (mixp-bench --profile)."""
    from torch.profiler import profile, ProfilerActivity
    cuda = dev.type == "cuda"
    with profile(activities=[ProfilerActivity.CUDA if cuda else ProfilerActivity.CPU]) as prof:
        step()
        sync(dev)

    def device_us(e):
        for name in ("device_time_total", "cuda_time_total", "self_cpu_time_total"):
            v = getattr(e, name, None)
            if v:
                return float(v)
        return 0.0

    events = sorted(prof.key_averages(), key=device_us, reverse=True)
    total = sum(device_us(e) for e in events)
    print(json.dumps({"profile": what, "kernels": len(events), "device_ms": total / 1e3}), flush=True)
    for e in events[:top]:
        print(json.dumps({"profile": what, "kernel": e.key[:120], "calls": e.count,
                          "device_ms": device_us(e) / 1e3}), flush=True)


def emit_row(out):
    print(json.dumps(out), flush=True)


def run_row(a, dev, kind, layout, low):
    """model_row, with its failure reported as a row; returns the parameter count or 0."""
    try:
        out, params = model_row(a, dev, kind, layout, low)
        emit_row(out)
        return params
    except Exception as e:  # a failed row must not stop the others
        if is_oom(e):
            key, why = "oom", one_line(e)
        elif kind == "compile":  # a reason to skip the row, like the time budget
            key, why = "skipped", f"torch.compile failed: {one_line(e)}"
        else:
            key, why = "error", one_line(e)
        emit_row({"row": kind, "what": describe(kind, low, False), "channels_last": layout, "batch": a.batch,
                  key: why})
        return 0
    finally:
        gc.collect()
        if dev.type == "cuda":
            torch.cuda.empty_cache()


def compile_row(a, dev, layout, low):
    """The compile row in a child process: torch.compile cannot be
    interrupted, and a budget the GPU window can afford is a wall-clock one."""
    skipped = {"row": "compile", "what": describe("compile", low, False), "channels_last": layout,
               "batch": a.batch}
    if not hasattr(torch, "compile"):
        emit_row(dict(skipped, skipped=f"torch {torch.__version__} has no torch.compile"))
        return
    cmd = [sys.executable, os.path.abspath(__file__), "--device", a.device, "--model", a.model, "--spec", a.spec,
           "--item", a.item, "--batch", str(a.batch), "--amp-dtype", a.amp_dtype, "--channels-last", str(layout),
           "--rows", "compile", "--warmup", str(a.warmup), "--steps", str(a.steps), "--compile-child"]
    if a.step_seconds:
        cmd += ["--step-seconds", str(a.step_seconds)]
    # A cache of its own: a compile killed at the deadline can leave a
    # truncated artefact that fails the next compile sharing the cache.
    cache = tempfile.mkdtemp(prefix="mixp-bench-inductor-")
    env = dict(os.environ, TORCHINDUCTOR_CACHE_DIR=cache, TRITON_CACHE_DIR=os.path.join(cache, "triton"))
    t0 = time.perf_counter()
    child = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True, start_new_session=True, env=env)
    try:
        out, _ = child.communicate(timeout=a.compile_timeout)
    except subprocess.TimeoutExpired:
        # Its compile workers too: they are in its process group.
        os.killpg(child.pid, signal.SIGKILL)
        child.communicate()
        emit_row(dict(skipped, skipped=f"compile, warm-up and timed steps did not finish within "
                                       f"{a.compile_timeout} s"))
        return
    finally:
        shutil.rmtree(cache, ignore_errors=True)
    rows = [line for line in out.splitlines() if line.startswith("{") and '"row": ' in line]
    for line in rows:
        row = json.loads(line)
        if "ms_per_step" in row:
            row["what"] += f", {time.perf_counter() - t0:.0f} s in all"
        emit_row(row)
    notes = [json.loads(line).get("note") for line in out.splitlines() if '"model": ' in line]
    for n in notes:
        for part in (n or "").split("; "):
            if part:
                twins.note(part)
    if not rows:
        emit_row(dict(skipped, skipped=f"the compile process exited with status {child.returncode} and no "
                                       "row (its stderr is above)"))


def bench_models(a, dev):
    low = low_dtype(dev, a.amp_dtype)
    layouts = [int(v) for v in a.channels_last.split(",")]
    rows = a.rows.split(",")
    params = 0
    for layout in layouts:
        for kind in rows:
            if kind == "compile" and not a.compile_child:
                if a.compile_timeout > 0:
                    compile_row(a, dev, layout, low)
                continue
            params = run_row(a, dev, kind, layout, low) or params
    if not params:
        params = twins.count_parameters(twins.build(a.spec))
    out = {"model": a.model, "params": params, "torch": torch.__version__, "device": str(dev)}
    if twins.NOTES:
        out["note"] = "; ".join(twins.NOTES)
    print(json.dumps(out), flush=True)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--device", default="cuda")
    p.add_argument("--only", choices=["gemm", "adamw", "mlp-launch", "fmnist"], action="append")
    p.add_argument("--quick", action="store_true", help="tiny sizes (smoke test)")
    p.add_argument("--model", help="a mixp-bench model workload name (gpt2, resnet50, ...)")
    p.add_argument("--spec", help="the mixp_model_create spec the twin is built from")
    p.add_argument("--item", help="one sample: CxHxW, or T for a token model")
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--amp-dtype", choices=["f16", "bf16"], default="bf16")
    p.add_argument("--channels-last", default="-1", help="comma list of -1 (no layout), 0, 1")
    p.add_argument("--rows", default="fp32,amp", help="comma list of fp32, amp, compile")
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--steps", type=int, default=10)
    p.add_argument("--step-seconds", type=float, default=0.0)
    p.add_argument("--compile-timeout", type=int, default=100)
    p.add_argument("--profile", type=int, default=0, metavar="N",
                   help="after each timed row, profile one more step and print its top N kernels")
    p.add_argument("--compile-child", action="store_true", help=argparse.SUPPRESS)
    a = p.parse_args()
    dev = torch.device(a.device)
    if dev.type == "cuda":
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
        torch.backends.cudnn.benchmark = True
        twins.note("TF32 off (matmul and cudnn), cudnn.benchmark=True")
    if a.model:
        if not a.spec or not a.item:
            p.error("--model needs --spec and --item")
        if a.warmup < 1 or a.steps < 1:
            p.error("--warmup and --steps must be >= 1")
        bench_models(a, dev)
        return
    workloads = a.only or ["gemm", "adamw", "mlp-launch", "fmnist"]
    for w in workloads:
        {"gemm": bench_gemm, "adamw": bench_adamw, "mlp-launch": bench_mlp_launch,
         "fmnist": bench_fmnist}[w](dev, a.quick)


if __name__ == "__main__":
    main()
