"""Module.load_safetensors: weights written by another framework (here with
safetensors' numpy writer, the format PyTorch's save_file produces) load by
name into a mixp module; strict loading refuses missing and unexpected
tensors and changes nothing when it fails."""

import numpy as np
import pytest

import mixp

save_file = pytest.importorskip("safetensors.numpy").save_file


def test_loads_by_name_and_casts(tmp_path):
    w = np.arange(12, dtype=np.float64).reshape(3, 4) / 10  # F64 in the file, F32 in the module
    b = np.array([1.0, -1.0, 0.5], dtype=np.float32)
    path = tmp_path / "linear.safetensors"
    save_file({"weight": w, "bias": b}, str(path))
    lin = mixp.nn.Linear(4, 3)
    assert lin.load_safetensors(path) is lin
    params = dict(lin.named_parameters())
    np.testing.assert_allclose(params["weight"].numpy(), w.astype(np.float32))
    np.testing.assert_array_equal(params["bias"].numpy(), b)
    x = mixp.tensor(np.ones((2, 4), dtype=np.float32))
    np.testing.assert_allclose(lin(x).numpy(), np.ones((2, 4)) @ w.T + b, rtol=1e-6)


def test_strict_refuses_and_changes_nothing(tmp_path):
    lin = mixp.nn.Linear(4, 3)
    before = {n: t.numpy() for n, t in lin.named_parameters()}
    missing = tmp_path / "missing.safetensors"
    save_file({"weight": np.zeros((3, 4), dtype=np.float32)}, str(missing))
    with pytest.raises(mixp.ShapeError, match="bias"):
        lin.load_safetensors(missing)
    extra = tmp_path / "extra.safetensors"
    save_file({"weight": np.zeros((3, 4), dtype=np.float32), "bias": np.zeros(3, dtype=np.float32),
               "head.weight": np.zeros((2, 2), dtype=np.float32)}, str(extra))
    with pytest.raises(mixp.ShapeError, match="head.weight"):
        lin.load_safetensors(extra)
    for n, t in lin.named_parameters():
        np.testing.assert_array_equal(t.numpy(), before[n])  # a failed load changed nothing
    lin.load_safetensors(extra, strict=False)  # the extra tensor is skipped
    assert (lin.named_parameters()[0][1].numpy() == 0).all()
    with pytest.raises(mixp.ShapeError):  # a shape mismatch names the tensor
        bad = tmp_path / "bad.safetensors"
        save_file({"weight": np.zeros((4, 3), dtype=np.float32), "bias": np.zeros(3, dtype=np.float32)},
                  str(bad))
        lin.load_safetensors(bad)
    with pytest.raises(mixp.IOError_):
        lin.load_safetensors(tmp_path / "nope.safetensors")
