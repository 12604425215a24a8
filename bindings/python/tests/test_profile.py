"""mixp.profile: the summary rows of a training step, the report, and the
Chrome trace file checked against the trace event format (the JSON object
form that chrome://tracing and Perfetto open)."""
import json

import numpy as np
import pytest

import mixp
from mixp import amp, nn, optim


def _step(s, model, opt):
    x = mixp.from_numpy(np.linspace(-1, 1, 64, dtype=np.float32).reshape(8, 8), session=s)
    y = mixp.from_numpy(np.arange(8, dtype=np.int64) % 4, session=s)
    with amp.autocast(dtype=mixp.bfloat16, session=s):
        loss = mixp.cross_entropy(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()


@pytest.fixture
def profiled(tmp_path):
    s = mixp.Session(seed=1)
    model = nn.model("mlp in=8 hidden=16 classes=4", session=s)
    opt = optim.AdamW(model.parameters(), lr=1e-3)
    _step(s, model, opt)
    with mixp.profile(s) as p:
        _step(s, model, opt)
    _step(s, model, opt)  # after the block: not recorded
    path = tmp_path / "step.json"
    p.write_trace(path)
    with open(path) as f:
        return p, json.load(f)


def test_rows_and_report(profiled):
    p, _ = profiled
    rows = p.rows()
    assert len(p) > 10
    by = {(r["op"], r["backward"]): r for r in rows}
    assert by[("linear", False)]["calls"] == 2
    assert by[("linear", True)]["calls"] == 2
    assert by[("backward", False)]["calls"] == 1
    assert by[("optimizer_step", False)]["calls"] == 1
    assert [r["self_device_ms"] for r in rows] == sorted((r["self_device_ms"] for r in rows), reverse=True)
    for r in rows:
        assert 0 <= r["self_host_ms"] <= r["host_ms"] + 1e-9
    table = p.report(3)
    assert table.splitlines()[0].split()[:3] == ["op", "pass", "calls"]
    assert "more rows)" in table and "op calls recorded on cpu" in table


def _nested_properly(events):
    """Complete events on one track must nest: each starts and ends inside
    the last open event that contains its start (the format's rule for "X"
    events sharing a pid and tid)."""
    stack = []
    for e in sorted(events, key=lambda e: (e["ts"], -e["dur"])):
        while stack and e["ts"] >= stack[-1]["ts"] + stack[-1]["dur"] - 1e-3:
            stack.pop()
        if stack and e["ts"] + e["dur"] > stack[-1]["ts"] + stack[-1]["dur"] + 1e-3:
            return False
        stack.append(e)
    return True


def test_trace_follows_the_trace_event_format(profiled):
    p, trace = profiled
    assert set(trace) >= {"traceEvents", "displayTimeUnit"}
    assert trace["displayTimeUnit"] in ("ms", "ns")
    events = trace["traceEvents"]
    complete = [e for e in events if e["ph"] == "X"]
    meta = [e for e in events if e["ph"] == "M"]
    assert len(complete) + len(meta) == len(events)
    assert {m["name"] for m in meta} <= {"process_name", "thread_name"}
    assert all(isinstance(m["args"]["name"], str) for m in meta)
    # A cpu session: one track, one event per recorded call.
    assert len(complete) == len(p)
    for e in complete:
        assert isinstance(e["name"], str) and e["name"]
        assert e["cat"] in ("forward", "backward")
        assert isinstance(e["pid"], int) and isinstance(e["tid"], int)
        assert isinstance(e["ts"], (int, float)) and e["ts"] >= 0
        assert isinstance(e["dur"], (int, float)) and e["dur"] >= 0
        assert set(e["args"]) == {"inputs", "output"}
    tracks = {}
    for e in complete:
        tracks.setdefault((e["pid"], e["tid"]), []).append(e)
    for track in tracks.values():
        assert _nested_properly(track)
    # Backward nodes lie inside the backward call.
    bw = next(e for e in complete if e["name"] == "backward")
    inner = [e for e in complete if e["cat"] == "backward"]
    assert inner and all(bw["ts"] <= e["ts"] and e["ts"] + e["dur"] <= bw["ts"] + bw["dur"] + 1e-3
                         for e in inner)
    linear = next(e for e in complete if e["name"] == "linear" and e["cat"] == "forward")
    assert linear["args"]["inputs"].startswith("bf16[8,8]")


def test_nested_checker_rejects_overlap():
    # The checker above must be able to fail.
    a = {"ts": 0.0, "dur": 10.0}
    b = {"ts": 5.0, "dur": 10.0}
    assert not _nested_properly([a, b])
    assert _nested_properly([a, {"ts": 1.0, "dur": 2.0}, {"ts": 10.0, "dur": 1.0}])


def test_profile_misuse():
    s = mixp.Session()
    with pytest.raises(mixp.StateError, match="mixp_profile_end"):
        mixp.capi.mixp_profile_end(s._h)
    with mixp.profile(s):
        with pytest.raises(mixp.StateError, match="already being recorded"):
            mixp.capi.mixp_profile_begin(s._h)
