#!/usr/bin/python3
"""Renders mixp-train's training logs to PNG.

  plot_runs.py [--out DIR] [--prefix NAME] [--title TEXT] INPUT...

Each INPUT is a CSV written by `mixp-train --csv` (one run per value of its
run column) or a directory searched for TensorBoard event files written by
`mixp-train --logdir` (one run per directory holding an event file, named by
its path below INPUT, e.g. O0, O1, O2 for a --compare run). Writes:

  NAME-curves.png   the training loss and the loss scale against the step,
                    one line per run;
  NAME-compare.png  with two or more runs: bar charts of the throughput
                    (samples/s) and the peak tensor memory of each run, the
                    O0/O1/O2 comparison of `mixp-train --compare`.

It prints the path of every file written. Needs matplotlib (Agg backend, no
display); event files are decoded here, so TensorBoard is not needed.
"""
import argparse
import csv
import glob
import os
import struct
import sys


def _varint(buf, pos):
    shift = result = 0
    while True:
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if not b & 0x80:
            return result, pos
        shift += 7


def _fields(buf):
    """(field number, wire type, value) of each field of a protobuf message."""
    pos = 0
    while pos < len(buf):
        key, pos = _varint(buf, pos)
        field, wire = key >> 3, key & 7
        if wire == 0:
            value, pos = _varint(buf, pos)
        elif wire == 1:
            value, pos = buf[pos:pos + 8], pos + 8
        elif wire == 2:
            n, pos = _varint(buf, pos)
            value, pos = buf[pos:pos + n], pos + n
        elif wire == 5:
            value, pos = buf[pos:pos + 4], pos + 4
        else:
            raise ValueError(f"unsupported protobuf wire type {wire}")
        yield field, wire, value


def read_event_file(path):
    """(tag, step, value) of every simple_value scalar in a TFRecord event file."""
    with open(path, "rb") as f:
        data = f.read()
    points, pos = [], 0
    while pos + 12 <= len(data):
        (n,) = struct.unpack("<Q", data[pos:pos + 8])
        event = data[pos + 12:pos + 12 + n]
        pos += 12 + n + 4
        if pos > len(data):
            break  # a record still being written
        step, summary = 0, None
        for field, wire, value in _fields(event):
            if field == 2 and wire == 0:
                step = value - (1 << 64) if value >= 1 << 63 else value
            elif field == 5 and wire == 2:
                summary = value
        if summary is None:
            continue
        for field, wire, value in _fields(summary):
            if field != 1 or wire != 2:
                continue
            tag, scalar = None, None
            for f2, w2, v2 in _fields(value):
                if f2 == 1 and w2 == 2:
                    tag = v2.decode("utf-8")
                elif f2 == 2 and w2 == 5:
                    (scalar,) = struct.unpack("<f", v2)
            if tag is not None and scalar is not None:
                points.append((tag, step, scalar))
    return points


def load_runs(inputs):
    """{run name: {tag: [(step, value), ...]}} from CSVs and log directories."""
    runs = {}

    def add(name, points, source):
        if name in runs:
            name = f"{name} ({source})"
        series = runs.setdefault(name, {})
        for tag, step, value in points:
            series.setdefault(tag, []).append((step, value))

    for inp in inputs:
        if os.path.isdir(inp):
            files = sorted(glob.glob(os.path.join(inp, "**", "events.out.tfevents.*"),
                                     recursive=True))
            if not files:
                raise SystemExit(f"plot_runs.py: no event files under '{inp}'")
            for path in files:
                rel = os.path.relpath(os.path.dirname(path), inp)
                name = os.path.basename(os.path.abspath(inp)) if rel == "." else rel
                add(name, read_event_file(path), inp)
        elif os.path.isfile(inp):
            by_run = {}
            with open(inp, newline="") as f:
                reader = csv.DictReader(f)
                if not {"run", "tag", "step", "value"} <= set(reader.fieldnames or []):
                    raise SystemExit(f"plot_runs.py: '{inp}' is not a mixp-train CSV "
                                     "(run,tag,step,value,...)")
                for r in reader:
                    by_run.setdefault(r["run"], []).append(
                        (r["tag"], int(r["step"]), float(r["value"])))
            for name, points in by_run.items():
                add(name, points, os.path.basename(inp))
        else:
            raise SystemExit(f"plot_runs.py: no such file or directory: '{inp}'")
    for series in runs.values():
        for points in series.values():
            points.sort(key=lambda p: p[0])
    return runs


def summary(series, tag):
    """A run's final/<tag>, else the mean of its per-epoch perf/<tag>."""
    if series.get("final/" + tag):
        return series["final/" + tag][-1][1]
    epochs = series.get("perf/" + tag)
    return sum(v for _, v in epochs) / len(epochs) if epochs else None


def plot_curves(plt, runs, path, title):
    fig, (ax_loss, ax_scale) = plt.subplots(2, 1, figsize=(8, 7), sharex=True)
    # Runs often coincide (O1 and O2 with the same scaler): dashes keep each visible.
    styles = ["-", "--", ":", "-."]
    for i, (name, series) in enumerate(runs.items()):
        style = styles[i % len(styles)]
        if series.get("train/loss"):
            steps, values = zip(*series["train/loss"])
            ax_loss.plot(steps, values, style, label=name, linewidth=1.4)
        if series.get("amp/loss_scale"):
            steps, values = zip(*series["amp/loss_scale"])
            ax_scale.step(steps, values, style, where="post", label=name, linewidth=1.4)
    ax_loss.set_ylabel("training loss")
    ax_loss.set_title(title or "mixp-train: loss and loss scale")
    ax_loss.grid(True, alpha=0.3)
    ax_loss.legend()
    ax_scale.set_yscale("log", base=2)
    ax_scale.set_ylabel("loss scale (log2)")
    ax_scale.set_xlabel("step (batches)")
    ax_scale.grid(True, alpha=0.3)
    ax_scale.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def plot_compare(plt, runs, path, title):
    names = [n for n in runs if summary(runs[n], "samples_per_sec") is not None]
    fig, axes = plt.subplots(1, 2, figsize=(9, 4))
    measures = [("samples_per_sec", "throughput (samples/s)", "{:,.0f}"),
                ("peak_mem_mb", "peak tensor memory (MB)", "{:.1f}")]
    colors = ["#4C72B0", "#DD8452", "#55A868", "#C44E52", "#8172B3", "#937860"]
    for ax, (tag, label, fmt) in zip(axes, measures):
        values = [summary(runs[n], tag) or 0.0 for n in names]
        bars = ax.bar(names, values, color=[colors[i % len(colors)] for i in range(len(names))])
        for bar, v in zip(bars, values):
            ax.annotate(fmt.format(v), (bar.get_x() + bar.get_width() / 2, v),
                        ha="center", va="bottom", fontsize=9)
        ax.set_title(label)
        ax.set_ylim(0, max(values + [1e-9]) * 1.15)
        ax.grid(True, axis="y", alpha=0.3)
    fig.suptitle(title or "mixp-train --compare: O0 / O1 / O2")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("inputs", nargs="+", metavar="INPUT",
                   help="mixp-train --csv files or --logdir directories")
    p.add_argument("--out", default=".", help="output directory (default: .)")
    p.add_argument("--prefix", default="runs", help="output file prefix (default: runs)")
    p.add_argument("--title", default=None, help="title prefix of the figures")
    a = p.parse_args(argv)
    try:
        import matplotlib
    except ImportError:
        raise SystemExit("plot_runs.py: matplotlib is not installed "
                         "(apt-get install python3-matplotlib, or pip install matplotlib)")
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    runs = load_runs(a.inputs)
    if not any(s.get("train/loss") for s in runs.values()):
        raise SystemExit("plot_runs.py: no train/loss points in the inputs")
    os.makedirs(a.out, exist_ok=True)
    written = []
    curves = os.path.join(a.out, f"{a.prefix}-curves.png")
    plot_curves(plt, runs, curves, a.title and f"{a.title}: loss and loss scale")
    written.append(curves)
    if sum(summary(s, "samples_per_sec") is not None for s in runs.values()) >= 2:
        compare = os.path.join(a.out, f"{a.prefix}-compare.png")
        plot_compare(plt, runs, compare, a.title and f"{a.title}: throughput and memory")
        written.append(compare)
    for path in written:
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
