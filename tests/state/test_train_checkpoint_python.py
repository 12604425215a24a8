"""mixp-train's checkpoints as weights and as untrusted input.

1. A file written by `mixp-train --save` holds nothing but the model's
   weights outside the `__mixp__.` namespace, so it loads strictly as weights
   (mixp_module_load_safetensors strict; PyTorch's load_state_dict(strict=True)
   after dropping `__mixp__.*`, the recipe in docs/checkpoints.md).
2. A forged file (the run's counters changed, every checksum recomputed, as
   anyone can) is refused by --resume with a message, exit 1, no crash.

    test_train_checkpoint_python.py MIXP_TRAIN STATE_PY_HELPER WORK_DIR
"""
import json
import os
import struct
import subprocess
import sys

sys.path.insert(0, os.path.dirname(__file__))
from test_safetensors_python import check_checksums, crc32c  # noqa: E402

COMMON = ["--data", "synthetic", "--hidden", "8", "--epochs", "2", "--limit-train", "256",
          "--limit-test", "64", "--batch", "64", "--threads", "1", "--seed", "3"]


def rewrite_metadata(src, dst, edit):
    """Copies src to dst with metadata['user'] = edit(it), re-signed."""
    with open(src, "rb") as f:
        raw = f.read()
    n = struct.unpack("<Q", raw[:8])[0]
    header = json.loads(raw[8:8 + n])
    meta = header["__metadata__"]
    meta["user"] = edit(meta["user"])
    rest = b"".join(k.encode() + b"\0" + v.encode() + b"\0"
                    for k, v in sorted(meta.items()) if not k.startswith("crc32c."))
    meta["crc32c.__metadata__"] = "%08x" % crc32c(rest)
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    with open(dst, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + raw[8 + n:])
    check_checksums(dst)


def main():
    train, helper, work = sys.argv[1:4]
    os.makedirs(work, exist_ok=True)
    ckpt = os.path.join(work, "run.safetensors")
    subprocess.run([train, *COMMON, "--save", ckpt], check=True, stdout=subprocess.DEVNULL)

    with open(ckpt, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
    names = sorted(k for k in header if k != "__metadata__" and not k.startswith("__mixp__."))
    assert names == ["1.bias", "1.weight", "3.bias", "3.weight"], names
    user = json.loads(header["__metadata__"]["user"])
    assert user["config"]["tool"] == "mixp-train" and len(user["progress"]) == 18, user
    dump = os.path.join(work, "run.txt")
    r = subprocess.run([helper, "load", ckpt, dump, "mlp in=784 hidden=8 classes=10"])
    assert r.returncode == 0, "a mixp-train checkpoint does not load strictly as weights"
    print("mixp-train checkpoint: only model weights outside __mixp__.*, loads strictly")

    # The forged counters of the report: steps = -5 once wrote recent[-5];
    # epoch = -5 ran 7 epochs. Also: not a whole number, NaN, more skipped
    # steps than steps, a malformed record.
    def field(i, value):
        def edit(text):
            u = json.loads(text)
            u["progress"][i] = value
            return json.dumps(u, separators=(",", ":"))
        return edit
    forgeries = {
        "steps -5": field(4, "-0x1.4p+2"),
        "epoch -5": field(0, "-0x1.4p+2"),
        "epoch 1e300": field(0, "0x1p+996"),
        "steps 2.5": field(4, "0x1.4p+1"),
        "samples nan": field(3, "nan"),
        "skipped > steps": field(6, "0x1p+20"),
        "not a number": field(1, "x"),
        "short record": lambda t: t.replace('"progress":["', '"progress":["0x1p+0"],"x":["'),
    }
    for what, edit in forgeries.items():
        forged = os.path.join(work, "forged.safetensors")
        rewrite_metadata(ckpt, forged, edit)
        r = subprocess.run([train, *COMMON, "--resume", forged], capture_output=True, text=True)
        assert r.returncode == 1, (what, r.returncode, r.stdout[-500:], r.stderr[-500:])
        assert "not a mixp-train checkpoint of this run" in r.stderr or "another configuration" in r.stderr, \
            (what, r.stderr)
        print(f"forged ({what}): refused: {r.stderr.strip().splitlines()[0]}")


if __name__ == "__main__":
    main()
