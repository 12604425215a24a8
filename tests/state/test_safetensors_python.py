"""mixp checkpoints <-> the Python safetensors package.

1. A checkpoint mixp saved (fp32, and O2 bf16) loads with safetensors.numpy;
   its parameter tensors equal the values the C side dumped (the O2 file holds
   the fp32 masters, whose bf16 rounding is the model's parameter), the
   metadata and the __mixp__ state tensors are there.
2. Files written by Python (safetensors.numpy in F32/F64/F16, and
   safetensors.torch in BF16) load into a mixp model with
   mixp_module_load_safetensors(); the values arrive cast to F32 exactly as
   numpy/torch cast them.
3. A Python file with a wrong shape is refused, naming the tensor.

usage: test_safetensors_python.py HELPER WORKDIR   (exit 77: SKIPPED)
"""
import os
import struct
import subprocess
import sys

try:
    import numpy as np
    from safetensors import safe_open
    from safetensors.numpy import load_file, save_file
except ImportError as e:  # pragma: no cover
    print(f"SKIPPED: {e}")
    sys.exit(77)


def read_dump(path):
    out = {}
    with open(path) as f:
        for line in f:
            parts = line.split()
            name, dtype, n = parts[0], parts[1], int(parts[2])
            vals = np.array([float.fromhex(v) for v in parts[3:]], dtype=np.float64)
            assert len(vals) == n, (name, n, len(vals))
            out[name] = (dtype, vals)
    return out


def crc32c(data, crc=0):
    """CRC-32C (Castagnoli), bitwise: the definition docs/checkpoints.md gives."""
    crc ^= 0xFFFFFFFF
    for b in data:
        crc ^= b
        for _ in range(8):
            crc = (crc >> 1) ^ (0x82F63B78 if crc & 1 else 0)
    return crc ^ 0xFFFFFFFF


def check_checksums(path):
    """Recomputes every checksum from the raw file, as documented."""
    import json
    with open(path, "rb") as f:
        raw = f.read()
    n = struct.unpack("<Q", raw[:8])[0]
    header = json.loads(raw[8:8 + n])
    meta = header.pop("__metadata__")
    data = raw[8 + n:]
    for name, e in header.items():
        b, end = e["data_offsets"]
        blob = name.encode() + b"\0" + e["dtype"].encode() + b"\0"
        blob += b"".join(struct.pack("<Q", d) for d in e["shape"]) + data[b:end]
        assert meta["crc32c." + name] == "%08x" % crc32c(blob), name
    rest = b"".join(k.encode() + b"\0" + v.encode() + b"\0"
                    for k, v in sorted(meta.items()) if not k.startswith("crc32c."))
    assert meta["crc32c.__metadata__"] == "%08x" % crc32c(rest)
    return len(header)


def bf16_round(x):
    """Round float32 values to bfloat16 (nearest even), back as float64."""
    b = np.asarray(x, dtype=np.float32).view(np.uint32).astype(np.uint64)
    rounded = ((b + 0x7FFF + ((b >> 16) & 1)) >> 16) << 16
    return rounded.astype(np.uint32).view(np.float32).astype(np.float64)


def main():
    helper, work = sys.argv[1], sys.argv[2]
    assert crc32c(b"123456789") == 0xE3069283  # the standard check value
    os.makedirs(work, exist_ok=True)
    subprocess.run([helper, "save", work], check=True)

    # 1. mixp -> Python.
    for kind in ("fp32", "o2"):
        path = os.path.join(work, kind + ".safetensors")
        tensors = load_file(path)
        dump = read_dump(os.path.join(work, kind + ".txt"))
        with safe_open(path, framework="numpy") as f:
            meta = f.metadata()
        assert meta["format"] == "mixp.state", meta
        assert meta["user"] == ('{"amp":"O2 bf16"}' if kind == "o2" else '{"amp":"O0"}'), meta
        for name in tensors:
            assert "crc32c." + name in meta, name
        assert tensors["__mixp__.step"].shape == () and int(tensors["__mixp__.step"]) == 3
        assert tensors["__mixp__.optimizer0.config"][5] == 3  # step count
        assert "__mixp__.optimizer0.0.exp_avg" in tensors
        model_names = [n for n in tensors if not n.startswith("__mixp__.")]
        assert sorted(model_names) == sorted(dump), (model_names, list(dump))
        for name, (dtype, vals) in dump.items():
            t = tensors[name]
            assert t.dtype == np.float32, (name, t.dtype)
            got = t.astype(np.float64).ravel()
            if kind == "fp32":
                assert dtype == "f32", dtype
                assert np.array_equal(got, vals), name
            else:
                # Decorated: the file holds the fp32 master, the model its
                # bf16 rounding.
                assert dtype == "bf16", dtype
                assert np.array_equal(bf16_round(t.ravel()), vals), name
        assert check_checksums(path) == len(tensors)
        print(f"{kind}: {len(tensors)} tensors read by safetensors.numpy, checksums as documented; "
              f"{len(dump)} parameters match mixp bit for bit")

    # 2. Python -> mixp.
    shapes = {n: load_file(os.path.join(work, "fp32.safetensors"))[n].shape
              for n in read_dump(os.path.join(work, "fp32.txt"))}
    rng = np.random.default_rng(5)
    for np_dtype in (np.float32, np.float64, np.float16):
        weights = {n: rng.standard_normal(s).astype(np_dtype) for n, s in shapes.items()}
        path = os.path.join(work, f"py_{np.dtype(np_dtype).name}.safetensors")
        save_file(weights, path)
        out = os.path.join(work, f"py_{np.dtype(np_dtype).name}.txt")
        subprocess.run([helper, "load", path, out], check=True)
        got = read_dump(out)
        for n, w in weights.items():
            want = w.astype(np.float32).astype(np.float64).ravel()
            assert np.array_equal(got[n][1], want), (np_dtype, n)
        print(f"python {np.dtype(np_dtype).name} file -> mixp f32 model: values match")
    try:
        import torch
        from safetensors.torch import save_file as torch_save
        weights = {n: torch.randn(*s, dtype=torch.float32).to(torch.bfloat16) for n, s in shapes.items()}
        path = os.path.join(work, "py_bf16.safetensors")
        torch_save(weights, path)
        out = os.path.join(work, "py_bf16.txt")
        subprocess.run([helper, "load", path, out], check=True)
        got = read_dump(out)
        for n, w in weights.items():
            want = w.to(torch.float64).numpy().ravel()
            assert np.array_equal(got[n][1], want), n
        print("torch bf16 file -> mixp f32 model: values match")
    except ImportError:
        print("torch not installed: bf16 import not checked")

    # 3. A wrong shape is refused and named.
    bad = {n: rng.standard_normal(s).astype(np.float32) for n, s in shapes.items()}
    first = sorted(bad)[0]
    bad[first] = np.zeros((7, 7), dtype=np.float32)
    path = os.path.join(work, "py_bad.safetensors")
    save_file(bad, path)
    r = subprocess.run([helper, "load", path, os.path.join(work, "bad.txt")],
                       capture_output=True, text=True)
    assert r.returncode == 3, (r.returncode, r.stdout, r.stderr)
    assert f"tensor '{first}' has shape [7,7]" in r.stdout, r.stdout
    assert "refused: -2 " in r.stdout, r.stdout  # MIXP_ERR_SHAPE
    print("wrong shape refused:", r.stdout.strip())
    print("OK")


if __name__ == "__main__":
    main()
