#!/usr/bin/python3
"""Generates tests/golden/grad_scaler_trajectories.h: loss-scale trajectories
(scale and growth tracker after every update) for scripted sequences of
clean / overflowing steps, for test_grad_scaler.c.

Run with Debian's python3 and PyTorch (apt-get install python3-torch):
    /usr/bin/python3 tests/golden/gen_grad_scaler.py > tests/golden/grad_scaler_trajectories.h

Where the reference values come from:
- PyTorch: torch._amp_update_scale_ is the kernel torch.amp.GradScaler.update()
  runs. Debian 12's torch 1.13 registers it for CUDA only (CPU support came
  in torch 2.x), so on a machine without a GPU this script replays the
  kernel's logic instead: `pytorch_update` below is a line-by-line copy of
  amp_update_scale_cuda_kernel (aten/src/ATen/native/cuda/AmpKernels.cu):
  products formed in double and rounded once to float32, growth skipped
  when the product is not finite in float32. When torch.cuda is available
  the script runs the real op and asserts that both agree on every step.
- Paddle: `paddle_update` follows Update<T> of phi's update_loss_scaling
  (paddle/phi/kernels/impl/amp_kernel_impl.h), with its min-1 clamp made a
  parameter (min_scale).
- Apex/Megatron: `apex_update` follows update_scale_hysteresis_cuda
  (apex csrc/update_scale_hysteresis.cu).
- mixp: `mixp_update` is the combined algorithm of backend.hpp
  (ScaleUpdate). The script asserts that it equals each upstream algorithm
  on every sequence wherever their options coincide, so the committed
  trajectories are cross-checked against all three.
"""
import math
import sys

import numpy as np
import torch

INF = float("inf")


def f32(x):
    """Rounds a double to float32 once (returns a Python float)."""
    with np.errstate(over="ignore"):
        return float(np.float32(x))


def pytorch_update(st, found, o):
    if found:
        st["scale"] = f32(st["scale"] * o["backoff"])
        st["growth"] = 0
    else:
        successful = st["growth"] + 1
        if successful == o["interval"]:
            new = f32(st["scale"] * o["growth_factor"])
            if math.isfinite(new):
                st["scale"] = new
            st["growth"] = 0
        else:
            st["growth"] = successful


def paddle_update(st, found, o):
    if found:
        st["growth"] = 0
        st["bad"] += 1
        if st["bad"] == o["decr"]:
            st["scale"] = max(f32(st["scale"] * o["backoff"]), o["min"])
            st["bad"] = 0
    else:
        st["bad"] = 0
        st["growth"] += 1
        if st["growth"] == o["interval"]:
            new = f32(st["scale"] * o["growth_factor"])
            if math.isfinite(new):
                st["scale"] = new
            st["growth"] = 0


def apex_update(st, found, o):
    if found:
        st["hyst"] -= 1
        if st["hyst"] > 0:
            st["growth"] = 0
            return
        st["scale"] = f32(st["scale"] * o["backoff"])
        st["growth"] = 0
    else:
        successful = st["growth"] + 1
        if successful == o["interval"]:
            new = f32(st["scale"] * o["growth_factor"])
            if math.isfinite(new):
                st["scale"] = new
            st["growth"] = 0
        else:
            st["growth"] = successful
        st["hyst"] = o["hysteresis"]


def mixp_update(st, found, o):
    if o["mode"] != "DYNAMIC":
        return
    if found:
        st["growth"] = 0
        st["bad"] += 1
        if o["hysteresis"] > 1 and st["hyst"] > 0:
            st["hyst"] -= 1
        held = o["hysteresis"] > 1 and st["hyst"] > 0
        if not held and st["bad"] >= o["decr"]:
            st["scale"] = max(f32(st["scale"] * o["backoff"]), f32(o["min"]))
            st["bad"] = 0
    else:
        st["bad"] = 0
        st["hyst"] = o["hysteresis"]
        successful = st["growth"] + 1
        if successful >= o["interval"]:
            new = f32(st["scale"] * o["growth_factor"])
            if math.isfinite(new):
                st["scale"] = f32(min(new, o["max"]))
            st["growth"] = 0
        else:
            st["growth"] = successful


def torch_op_update(st, found, o):
    """The real op, where this torch can run it (CUDA)."""
    dev = "cuda"
    scale = torch.tensor([st["scale"]], dtype=torch.float32, device=dev)
    growth = torch.tensor([st["growth"]], dtype=torch.int32, device=dev)
    found_t = torch.tensor([1.0 if found else 0.0], dtype=torch.float32, device=dev)
    torch._amp_update_scale_(scale, growth, found_t, o["growth_factor"], o["backoff"], o["interval"])
    return float(scale.item()), int(growth.item())


def new_state(o):
    return {"scale": f32(o["init"]), "growth": 0, "bad": 0, "hyst": o["hysteresis"]}


# 0 = clean step, 1 = an Inf gradient, 2 = a NaN gradient.
SEQ_MAIN = [0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 2, 1, 0, 0, 0, 0, 0, 0, 0, 1,
            1, 1, 0, 0, 1, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 1, 2, 1, 0, 0]
SEQ_CLEAN = [0] * 12


def opts(**kw):
    o = {"mode": "DYNAMIC", "init": 65536.0, "growth_factor": 2.0, "backoff": 0.5,
         "interval": 2000, "decr": 1, "hysteresis": 1, "min": 0.0, "max": INF}
    o.update(kw)
    return o


CASES = [
    ("pytorch_interval3", opts(interval=3), SEQ_MAIN, "pytorch"),
    ("pytorch_defaults", opts(), SEQ_MAIN, "pytorch"),
    ("pytorch_odd_factors", opts(init=1000.1, growth_factor=3.0, backoff=0.3, interval=2),
     SEQ_MAIN, "pytorch"),
    ("pytorch_fp32_bound", opts(init=2.0 ** 125, interval=1), SEQ_CLEAN, "pytorch"),
    ("paddle_decr2", opts(interval=3, decr=2), SEQ_MAIN, "paddle"),
    ("apex_hysteresis2", opts(interval=3, hysteresis=2), SEQ_MAIN, "apex"),
    ("apex_hysteresis3", opts(interval=4, hysteresis=3), SEQ_MAIN, "apex"),
    ("decr2_hysteresis2", opts(interval=3, decr=2, hysteresis=2), SEQ_MAIN, None),
    ("min_max_clamp", opts(init=8.0, interval=2, min=4.0, max=48.0), SEQ_MAIN, None),
    ("static", opts(mode="STATIC", init=1024.0, interval=3), SEQ_MAIN, None),
    ("disabled", opts(mode="DISABLED", interval=3), SEQ_MAIN, None),
]

UPSTREAM = {"pytorch": pytorch_update, "paddle": paddle_update, "apex": apex_update}


def run(o, seq, upstream):
    st = new_state(o)
    ref = new_state(o)
    scales, growths = [], []
    use_op = upstream == "pytorch" and torch.cuda.is_available()
    for found in seq:
        before = dict(ref)
        mixp_update(st, found != 0, o)
        if upstream:
            UPSTREAM[upstream](ref, found != 0, o)
            assert (st["scale"], st["growth"]) == (ref["scale"], ref["growth"]), (o, found, st, ref)
            if use_op:
                assert torch_op_update(before, found != 0, o) == (ref["scale"], ref["growth"])
        if o["mode"] == "DISABLED":
            scales.append(1.0)
            growths.append(0)
        else:
            scales.append(st["scale"])
            growths.append(st["growth"])
    return scales, growths


def c_double(x):
    if x == INF:
        return "HUGE_VAL"
    return float(x).hex()


def main():
    out = sys.stdout
    out.write("/* Generated by tests/golden/gen_grad_scaler.py (torch %s%s); do not edit.\n"
              % (torch.__version__, ", CUDA op checked" if torch.cuda.is_available()
                 else ", PyTorch kernel logic replayed on CPU"))
    out.write(" * Loss-scale trajectories: scale and growth tracker after every update for\n"
              " * a scripted sequence of steps (0 clean, 1 Inf gradient, 2 NaN gradient). */\n")
    out.write("#ifndef MIXP_GOLDEN_GRAD_SCALER_TRAJECTORIES_H\n#define MIXP_GOLDEN_GRAD_SCALER_TRAJECTORIES_H\n\n")
    out.write("#include <math.h>\n#include <stdint.h>\n\n")
    out.write("typedef struct gs_golden {\n  const char *name;\n  int mode; /* mixp_scaler_mode */\n"
              "  double init_scale, growth_factor, backoff_factor;\n"
              "  int64_t growth_interval, decr_every_n_nan_or_inf, hysteresis;\n"
              "  double min_scale, max_scale;\n  int n;\n  const int *found;\n"
              "  const double *scale;\n  const int64_t *growth_tracker;\n} gs_golden;\n\n")
    modes = {"DYNAMIC": 1, "STATIC": 2, "DISABLED": 3}
    for name, o, seq, up in CASES:
        scales, growths = run(o, seq, up)
        out.write("static const int gs_%s_found[] = {%s};\n" % (name, ", ".join(map(str, seq))))
        out.write("static const double gs_%s_scale[] = {\n  %s};\n"
                  % (name, ",\n  ".join(c_double(s) for s in scales)))
        out.write("static const int64_t gs_%s_growth[] = {%s};\n\n"
                  % (name, ", ".join(map(str, growths))))
    out.write("static const gs_golden gs_golden_cases[] = {\n")
    for name, o, seq, up in CASES:
        out.write("  {\"%s\", %d, %s, %s, %s, %d, %d, %d, %s, %s, %d, gs_%s_found, gs_%s_scale, gs_%s_growth},\n"
                  % (name, modes[o["mode"]], c_double(o["init"]), c_double(o["growth_factor"]),
                     c_double(o["backoff"]), o["interval"], o["decr"], o["hysteresis"],
                     c_double(o["min"]), c_double(o["max"]), len(seq), name, name, name))
    out.write("};\n\n#define GS_GOLDEN_COUNT ((int)(sizeof gs_golden_cases / sizeof gs_golden_cases[0]))\n\n")
    out.write("#endif\n")


if __name__ == "__main__":
    main()
