"""Checks mixp-train's training logs (run by CTest from tests/logs.cmake).

Every event file is read twice, independently: by a reader written here,
which checks the TFRecord framing and both masked CRC-32C checksums of every
record, and by TensorBoard's own EventFileLoader. Both must see the same
events; the scalars must be the expected tags at the expected steps and equal
the CSV's rows exactly (both hold float32).

  check_tfevents.py --logdir DIR --csv FILE --runs O0,O1,O2 [--subdirs]
                    --log-every N --steps-per-epoch S --epochs E
                    [--dynamic-scale-from INIT_SCALE]

Exit status 77 (CTest SKIP) when the tensorboard package is missing.
"""
import argparse
import csv
import glob
import math
import os
import struct
import sys
import time

try:
    from tensorboard.backend.event_processing.event_file_loader import EventFileLoader
    from tensorboard.compat.proto import event_pb2
    from tensorboard.util import tensor_util
except ImportError as e:
    print(f"SKIP: the tensorboard package is not installed ({e}); "
          "pip install tensorboard for /usr/bin/python3")
    sys.exit(77)


def _crc_table():
    table = []
    for i in range(256):
        c = i
        for _ in range(8):
            c = (c >> 1) ^ (0x82F63B78 if c & 1 else 0)
        table.append(c)
    return table


_TABLE = _crc_table()


def crc32c(data):
    c = 0xFFFFFFFF
    for b in data:
        c = _TABLE[(c ^ b) & 0xFF] ^ (c >> 8)
    return c ^ 0xFFFFFFFF


def masked(crc):
    return (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def read_records(path):
    """The payloads of a TFRecord file, each checksum verified."""
    with open(path, "rb") as f:
        data = f.read()
    out, pos = [], 0
    while pos < len(data):
        if len(data) - pos < 12:
            raise AssertionError(f"{path}: truncated record header at byte {pos}")
        header = data[pos:pos + 8]
        (length,) = struct.unpack("<Q", header)
        (len_crc,) = struct.unpack("<I", data[pos + 8:pos + 12])
        if len_crc != masked(crc32c(header)):
            raise AssertionError(f"{path}: bad length checksum at byte {pos}")
        end = pos + 12 + length
        if end + 4 > len(data):
            raise AssertionError(f"{path}: truncated record at byte {pos}")
        payload = data[pos + 12:end]
        (data_crc,) = struct.unpack("<I", data[end:end + 4])
        if data_crc != masked(crc32c(payload)):
            raise AssertionError(f"{path}: bad data checksum in the record at byte {pos}")
        out.append(payload)
        pos = end + 4
    return out


def f32(x):
    return struct.unpack("<f", struct.pack("<f", x))[0]


def scalar_of(value):
    if value.HasField("simple_value"):
        return value.simple_value
    # EventFileLoader migrates simple_value to a scalar tensor.
    return float(tensor_util.make_ndarray(value.tensor))


PER_EPOCH = ["train/epoch_loss", "eval/accuracy", "train/lr", "amp/epoch_loss_scale",
             "amp/skipped_steps", "perf/samples_per_sec", "perf/peak_mem_mb"]
FINAL = ["final/accuracy", "final/samples_per_sec", "final/peak_mem_mb", "final/skipped_steps"]


def check_run(run, run_dir, rows, a):
    files = glob.glob(os.path.join(run_dir, "events.out.tfevents.*"))
    if len(files) != 1:
        raise AssertionError(f"{run_dir}: expected one event file, found {files}")
    path = files[0]
    host = os.uname().nodename
    name = os.path.basename(path)
    stamp = name[len("events.out.tfevents."):].split(".", 1)
    if not stamp[0].isdigit() or not stamp[1].startswith(host):
        raise AssertionError(f"{name}: not events.out.tfevents.<unix time>.<hostname>")

    payloads = read_records(path)
    raw = [event_pb2.Event.FromString(p) for p in payloads]
    for p, ev in zip(payloads, raw):
        if ev.SerializeToString() != p:
            raise AssertionError(f"{path}: an event is not in protobuf's canonical encoding")
    loaded = list(EventFileLoader(path).Load())
    if len(loaded) != len(raw):
        raise AssertionError(f"{path}: EventFileLoader read {len(loaded)} events, "
                             f"the CRC reader {len(raw)}")
    if loaded[0].file_version != "brain.Event:2" or raw[0].file_version != "brain.Event:2":
        raise AssertionError(f"{path}: the first event is not file_version brain.Event:2")

    points = []
    now = time.time()
    last_wall = 0.0
    for ev in loaded[1:]:
        if not (now - 3600 < ev.wall_time <= now + 1) or ev.wall_time < last_wall:
            raise AssertionError(f"{path}: wall_time {ev.wall_time} out of order or range")
        last_wall = ev.wall_time
        if len(ev.summary.value) != 1:
            raise AssertionError(f"{path}: an event with {len(ev.summary.value)} values")
        v = ev.summary.value[0]
        points.append((v.tag, ev.step, scalar_of(v)))
    # The CRC reader's events agree value for value (raw simple_value).
    raw_points = [(e.summary.value[0].tag, e.step, e.summary.value[0].simple_value)
                  for e in raw[1:]]
    if raw_points != points:
        raise AssertionError(f"{path}: EventFileLoader and the CRC reader disagree")

    csv_points = [(r["tag"], int(r["step"]), f32(float(r["value"]))) for r in rows]
    if csv_points != points:
        for i, (x, y) in enumerate(zip(csv_points, points)):
            if x != y:
                raise AssertionError(f"{run}: CSV row {i} {x} != event {y}")
        raise AssertionError(f"{run}: {len(csv_points)} CSV rows, {len(points)} events")

    by_tag = {}
    for tag, step, value in points:
        by_tag.setdefault(tag, []).append((step, value))
    total = a.steps_per_epoch * a.epochs
    want_loss_steps = list(range(a.log_every, total + 1, a.log_every))
    for tag in ("train/loss", "amp/loss_scale"):
        steps = [s for s, _ in by_tag.get(tag, [])]
        if steps != want_loss_steps:
            raise AssertionError(f"{run}: {tag} at steps {steps}, expected {want_loss_steps}")
    epoch_steps = [a.steps_per_epoch * (e + 1) for e in range(a.epochs)]
    for tag in PER_EPOCH:
        steps = [s for s, _ in by_tag.get(tag, [])]
        if steps != epoch_steps:
            raise AssertionError(f"{run}: {tag} at steps {steps}, expected {epoch_steps}")
    for tag in FINAL:
        if [s for s, _ in by_tag.get(tag, [])] != [total]:
            raise AssertionError(f"{run}: {tag} is not logged once at step {total}")
    expected = set(PER_EPOCH + FINAL + ["train/loss", "amp/loss_scale"])
    if set(by_tag) != expected:
        raise AssertionError(f"{run}: tags {sorted(by_tag)}, expected {sorted(expected)}")

    def values(tag):
        return [v for _, v in by_tag[tag]]
    if not all(math.isfinite(v) and v > 0 for v in values("train/loss")):
        raise AssertionError(f"{run}: a non-finite or non-positive loss")
    if not all(0.0 <= v <= 1.0 for v in values("eval/accuracy")):
        raise AssertionError(f"{run}: accuracy outside [0, 1]")
    if not all(v > 0 for v in values("perf/samples_per_sec") + values("perf/peak_mem_mb")):
        raise AssertionError(f"{run}: samples/s and peak memory must be positive")
    if values("final/accuracy") != values("eval/accuracy")[-1:]:
        raise AssertionError(f"{run}: final/accuracy is not the last epoch's accuracy")
    if values("final/peak_mem_mb") != [max(values("perf/peak_mem_mb"))]:
        raise AssertionError(f"{run}: final/peak_mem_mb is not the largest epoch peak")
    if values("final/skipped_steps") != [sum(values("amp/skipped_steps"))]:
        raise AssertionError(f"{run}: final/skipped_steps is not the sum over the epochs")
    scales = values("amp/loss_scale") + values("amp/epoch_loss_scale")
    if run == "O0" and set(scales) != {1.0}:
        raise AssertionError(f"{run}: fp32 runs have no loss scale, got {set(scales)}")
    for s in scales:
        if not (s > 0 and math.log2(s) == int(math.log2(s))):
            raise AssertionError(f"{run}: loss scale {s} is not a power of two")
    if a.dynamic_scale_from and run != "O0":
        # Growth needs 2000 clean steps, so in a short run every skipped step
        # halved the scale once: the logs must agree with each other.
        skipped = values("final/skipped_steps")[0]
        want = a.dynamic_scale_from * 0.5 ** skipped
        if not skipped > 0 or values("amp/epoch_loss_scale")[-1] != want:
            raise AssertionError(f"{run}: {skipped:g} skipped steps but the scale went "
                                 f"{a.dynamic_scale_from:g} -> {values('amp/epoch_loss_scale')[-1]:g}")
        if any(x < y for x, y in zip(scales, scales[1:len(values('amp/loss_scale'))])):
            raise AssertionError(f"{run}: the loss scale grew: {values('amp/loss_scale')}")
    if any(v != a.lr for v in values("train/lr")):
        raise AssertionError(f"{run}: lr {values('train/lr')}, expected {a.lr}")
    print(f"{run}: {path}: {len(loaded)} events, checksums and CSV agree; "
          f"loss {values('train/loss')[0]:.4f} -> {values('train/loss')[-1]:.4f}, "
          f"loss scale {scales[0]:g} -> {scales[-1]:g}, "
          f"skipped {values('final/skipped_steps')[0]:g}, "
          f"accuracy {values('final/accuracy')[0]:.4f}")


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--logdir", required=True)
    p.add_argument("--csv", required=True)
    p.add_argument("--runs", required=True)
    p.add_argument("--subdirs", action="store_true")
    p.add_argument("--log-every", type=int, required=True)
    p.add_argument("--steps-per-epoch", type=int, required=True)
    p.add_argument("--epochs", type=int, required=True)
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--dynamic-scale-from", type=float, default=0.0,
                   help="the AMP runs use a dynamic scaler starting at this scale")
    a = p.parse_args()
    a.lr = f32(a.lr)
    runs = a.runs.split(",")
    with open(a.csv, newline="") as f:
        reader = csv.DictReader(f)
        if reader.fieldnames != ["run", "tag", "step", "value", "wall_time"]:
            raise AssertionError(f"{a.csv}: header {reader.fieldnames}")
        rows = list(reader)
    if sorted({r["run"] for r in rows}) != sorted(runs):
        raise AssertionError(f"{a.csv}: runs {sorted({r['run'] for r in rows})}, expected {runs}")
    for run in runs:
        run_dir = os.path.join(a.logdir, run) if a.subdirs else a.logdir
        check_run(run, run_dir, [r for r in rows if r["run"] == run], a)
    print("ok")


if __name__ == "__main__":
    try:
        main()
    except AssertionError as e:
        print(f"FAIL: {e}")
        sys.exit(1)
