"""Training-state checkpoints from Python: exact resume, and a damaged file changes nothing."""
import numpy as np
import pytest

import mixp
from mixp import amp, data, nn, optim


def _objects(seed):
    s = mixp.Session(seed=seed)
    loader = data.DataLoader(data.synthetic(num_samples=512, session=s), batch_size=64, seed=3)
    model = nn.model("mlp hidden=32", session=s)
    opt = optim.AdamW(model.parameters(), lr=1e-3)
    scaler = amp.GradScaler(init_scale=2.0**10, session=s)
    return s, loader, model, opt, scaler


def _train(objs, steps):
    s, loader, model, opt, scaler = objs
    loss = None
    for _ in range(steps):
        batch = loader.next()
        if batch is None:
            batch = loader.next()
        x, y = batch
        with amp.autocast(dtype=mixp.float16, session=s):
            loss = mixp.cross_entropy(model(x), y)
        opt.zero_grad()
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
    return loss.item()


def test_save_load_resumes_bit_for_bit(tmp_path):
    straight = _objects(seed=1)
    _train(straight, 5)
    expected = _train(straight, 7)

    first = _objects(seed=1)
    _train(first, 5)
    path = tmp_path / "run.safetensors"
    s, loader, model, opt, scaler = first
    mixp.save_state(path, model, opt, scaler, loader, step=5, metadata='{"run": "test"}')

    resumed = _objects(seed=99)  # different initialisation: everything must come from the file
    s2, loader2, model2, opt2, scaler2 = resumed
    assert mixp.load_state(path, model2, opt2, scaler2, loader2) == 5
    assert scaler2.get_scale() == scaler.get_scale()
    got = _train(resumed, 7)
    assert np.float64(got).tobytes() == np.float64(expected).tobytes()


def test_damaged_file_is_refused_and_changes_nothing(tmp_path):
    s, loader, model, opt, scaler = _objects(seed=1)
    path = tmp_path / "run.safetensors"
    mixp.save_state(path, model, opt, scaler, loader)
    raw = bytearray(path.read_bytes())
    raw[-5] ^= 0x40  # a bit in the last tensor's bytes
    path.write_bytes(bytes(raw))
    other = _objects(seed=7)
    before = [p.numpy().copy() for p in other[2].parameters()]
    with pytest.raises(mixp.CorruptError, match="mixp_state_load"):
        mixp.load_state(path, other[2], other[3], other[4], other[1])
    assert all(np.array_equal(b, p.numpy()) for b, p in zip(before, other[2].parameters()))
    with pytest.raises(mixp.IOError_):
        mixp.save_state(tmp_path / "no-such-dir" / "x.safetensors", model)
