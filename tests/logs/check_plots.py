"""Runs tools/plot_runs.py on a mixp-train --compare run's logs (the event
directory and the CSV, separately) and checks the PNGs: valid signature and
header, a sensible size in pixels and bytes. Also checks that plot_runs.py's
own event-file decoder reads the same points as the CSV holds.

  check_plots.py PLOT_RUNS LOGDIR CSV OUTDIR

Exit status 77 (CTest SKIP) when matplotlib is missing.
"""
import importlib.util
import os
import shutil
import struct
import subprocess
import sys

try:
    import matplotlib  # noqa: F401
except ImportError as e:
    print(f"SKIP: matplotlib is not installed ({e})")
    sys.exit(77)


def check_png(path):
    with open(path, "rb") as f:
        data = f.read()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise AssertionError(f"{path}: no PNG signature")
    if data[12:16] != b"IHDR":
        raise AssertionError(f"{path}: no IHDR chunk first")
    width, height = struct.unpack(">II", data[16:24])
    if not (400 <= width <= 4000 and 300 <= height <= 4000):
        raise AssertionError(f"{path}: {width}x{height} pixels")
    if len(data) < 10000 or not data.endswith(b"IEND\xaeB`\x82"):
        raise AssertionError(f"{path}: {len(data)} bytes, or no IEND chunk")
    print(f"{path}: PNG {width}x{height}, {len(data)} bytes")


def main(plot_runs, logdir, csv_path, out):
    shutil.rmtree(out, ignore_errors=True)
    for source, inp in (("events", logdir), ("csv", csv_path)):
        cmd = [sys.executable, plot_runs, "--out", out, "--prefix", source,
               "--title", f"test ({source})", inp]
        res = subprocess.run(cmd, capture_output=True, text=True)
        print(res.stdout, res.stderr, end="")
        if res.returncode != 0:
            raise AssertionError(f"{' '.join(cmd)} exited {res.returncode}")
        want = [os.path.join(out, f"{source}-{kind}.png") for kind in ("curves", "compare")]
        if res.stdout.split() != want:
            raise AssertionError(f"plot_runs.py printed {res.stdout.split()}, expected {want}")
        for path in want:
            check_png(path)

    spec = importlib.util.spec_from_file_location("plot_runs", plot_runs)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    from_events, from_csv = mod.load_runs([logdir]), mod.load_runs([csv_path])
    if sorted(from_events) != ["O0", "O1", "O2"] or sorted(from_csv) != sorted(from_events):
        raise AssertionError(f"runs {sorted(from_events)} (events), {sorted(from_csv)} (csv)")
    f32 = lambda x: struct.unpack("<f", struct.pack("<f", x))[0]
    for run in from_events:
        csv_series = {t: [(s, f32(v)) for s, v in p] for t, p in from_csv[run].items()}
        if csv_series != from_events[run]:
            raise AssertionError(f"{run}: the event decoder and the CSV disagree")
    # A missing input is an error with a message, not a traceback.
    res = subprocess.run([sys.executable, plot_runs, "--out", out, out + "/no-such-input"],
                         capture_output=True, text=True)
    if res.returncode == 0 or "no such file or directory" not in res.stderr:
        raise AssertionError(f"missing input: exit {res.returncode}, {res.stderr!r}")
    print("ok")


if __name__ == "__main__":
    try:
        main(*sys.argv[1:])
    except AssertionError as e:
        print(f"FAIL: {e}")
        sys.exit(1)
