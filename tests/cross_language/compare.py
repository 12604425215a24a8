"""Runs the same training in every language and compares the final losses bit for bit.

Usage: compare.py RUNNER [RUNNER ...], each RUNNER being "name|program|arg|..."
(one argument per runner; "|" separates the command's words). Every runner
prints a line "final_loss_bits=0x<16 hex digits>". A runner that exits with
77 has no toolchain here and is reported as skipped.

Exit status: 1 if any runner failed or the bits differ; else 77 (CTest:
SKIPPED) if any runner was skipped; else 0.
"""
import re
import subprocess
import sys

SKIP = 77


def main(runners):
    results, skipped, failed = {}, [], []
    for spec in runners:
        name, *cmd = spec.split("|")
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
        except OSError as e:  # e.g. the runner's program was not built
            failed.append(name)
            print(f"{name:8s} FAILED: {e}")
            continue
        out = proc.stdout + proc.stderr
        if proc.returncode == SKIP:
            skipped.append(name)
            print(f"{name:8s} skipped: {out.strip().splitlines()[-1] if out.strip() else ''}")
            continue
        m = re.search(r"final_loss_bits=(0x[0-9a-f]{16})", proc.stdout)
        if proc.returncode != 0 or not m:
            failed.append(name)
            print(f"{name:8s} FAILED (exit {proc.returncode}):\n{out}")
            continue
        results[name] = m.group(1)
        summary = re.search(r"final_loss=\S+ scale=\S+", proc.stdout)
        print(f"{name:8s} {m.group(1)}  {summary.group(0) if summary else ''}")
    if failed:
        return 1
    if len(set(results.values())) > 1:
        print("MISMATCH: the final losses differ between languages")
        return 1
    if skipped:
        print(f"SKIPPED: no toolchain for {', '.join(skipped)}; "
              f"{', '.join(results)} agree bit for bit")
        return SKIP
    print(f"all {len(results)} languages agree bit for bit: {', '.join(results)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
