"""Layers, the model zoo, optimizers, datasets and loaders."""
import numpy as np
import pytest

import mixp
from mixp import nn, optim, data


def test_layers_forward_shapes_and_parameter_names():
    s = mixp.Session(seed=0)
    lin = nn.Linear(4, 3, session=s)
    assert [n for n, _ in lin.named_parameters()] == ["weight", "bias"]
    assert lin(mixp.randn(2, 4, session=s)).shape == (2, 3)
    conv = nn.Conv2d(1, 4, 3, padding=1, session=s)
    x = mixp.randn(2, 1, 8, 8, session=s)
    assert conv(x).shape == (2, 4, 8, 8)
    bn = nn.BatchNorm2d(4, session=s)
    assert [n for n, _ in bn.named_buffers()] == ["running_mean", "running_var", "num_batches_tracked"]
    bn(conv(x))
    assert bn.buffers()[2].item() == 1
    bn.eval()
    bn(conv(x))
    assert bn.buffers()[2].item() == 1  # eval mode does not count batches
    assert nn.LayerNorm(8, session=s)(mixp.randn(3, 8, session=s)).shape == (3, 8)
    emb = nn.Embedding(10, 5, session=s)
    assert emb(mixp.tensor(np.array([[1, 2, 3]]), session=s)).shape == (1, 3, 5)
    mha = nn.MultiheadAttention(8, 2, causal=True, session=s)
    assert mha(mixp.randn(2, 5, 8, session=s)).shape == (2, 5, 8)
    seq = nn.Sequential(nn.Linear(4, 8, session=s), mixp.relu, nn.Linear(8, 2, session=s))
    assert seq(mixp.randn(3, 4, session=s)).shape == (3, 2)
    assert len(seq.parameters()) == 4


def test_model_zoo():
    s = mixp.Session(seed=0)
    mlp = nn.model("mlp", session=s)
    assert mlp.num_parameters() == 784 * 256 + 256 + 256 * 128 + 128 + 128 * 10 + 10
    assert mlp(mixp.randn(2, 1, 28, 28, session=s)).shape == (2, 10)
    cnn = nn.model("cnn width=4 blocks=1 hidden=8", session=s)
    assert cnn(mixp.randn(2, 1, 28, 28, session=s)).shape == (2, 10)
    gpt = nn.model("gpt n_layer=1 n_head=2 n_embd=16 vocab=11 block_size=8", session=s)
    assert gpt(mixp.tensor(np.zeros((2, 8), np.int64), session=s)).shape == (2, 8, 11)
    resnet = nn.model("resnet18 classes=10 width=8", session=s)
    assert resnet.named_parameters()[0][0] == "conv1.weight"
    with pytest.raises(mixp.InvalidArgumentError, match="no_such_model"):
        nn.model("no_such_model", session=s)


def test_sgd_step_matches_the_formula():
    w_np = np.array([1.0, -2.0], np.float32)
    w = mixp.from_numpy(w_np).requires_grad_()
    opt = optim.SGD([w], lr=0.5)
    (w * w).sum().backward()
    opt.step()
    np.testing.assert_allclose(w.numpy(), w_np - 0.5 * 2 * w_np)
    assert opt.step_count == 1 and opt.lr == 0.5
    opt.lr = 0.25
    assert opt.lr == 0.25


def test_adamw_borrowed_parameter_is_updated_in_place():
    buf = np.ones(3, np.float32)
    w = mixp.from_numpy(buf, copy=False).requires_grad_()
    opt = optim.AdamW([w], lr=0.1, weight_decay=0.0)
    (w * w).sum().backward()
    opt.step()
    np.testing.assert_allclose(buf, np.full(3, 0.9, np.float32), rtol=1e-6)


def test_stochastic_rounding_keeps_small_bf16_updates():
    # SGD steps of 2^-12 on bf16 weights at 1.0: to nearest they are all
    # lost (the bf16 step below 1.0 is 2^-8); stochastically their sum
    # survives on average (mean 1 - 2^-8 after 16 steps).
    def run(stochastic):
        w = mixp.from_numpy(np.ones(4096, np.float32), dtype=mixp.bfloat16).requires_grad_()
        opt = optim.SGD([w], lr=1.0, stochastic_rounding=stochastic)
        g = mixp.from_numpy(np.full(4096, 2.0 ** -12, np.float32), dtype=mixp.bfloat16)
        for _ in range(16):
            opt.zero_grad()
            (w * g).sum().backward()
            opt.step()
        return w.numpy()
    assert np.all(run(False) == 1.0)
    mean = float(run(True).astype(np.float64).mean())
    assert abs(mean - (1 - 2.0 ** -8)) < 2.0 ** -11


def test_bf16_optimizer_state_halves_its_memory():
    s = mixp.Session()
    def state_bytes(state_dtype):
        w = mixp.from_numpy(np.linspace(-1, 1, 4096, dtype=np.float32), session=s).requires_grad_()
        opt = optim.AdamW([w], lr=1e-2, state_dtype=state_dtype)
        (w * w).sum().backward()
        before = s.memory_stats()["current_bytes"]
        opt.step()
        return s.memory_stats()["current_bytes"] - before
    assert state_bytes(mixp.float32) - state_bytes(mixp.bfloat16) == 2 * 4096 * 2
    with pytest.raises(mixp.InvalidArgumentError, match="state_dtype"):
        optim.Adam([mixp.from_numpy(np.ones(2, np.float32)).requires_grad_()], state_dtype=mixp.float16)


def test_grad_underflow_fractions():
    w = mixp.from_numpy(np.ones(4, np.float32)).requires_grad_()
    unused = mixp.from_numpy(np.ones(2, np.float32)).requires_grad_()
    opt = optim.SGD([w, unused], lr=0.1)
    g = mixp.from_numpy(np.array([0, 1e-6, 1.0, 2.0], np.float32))
    (w * g).sum().backward()
    f = opt.grad_underflow()
    assert f[0] == 0.5 and np.isnan(f[1])
    assert opt.grad_underflow(mixp.bfloat16)[0] == 0.25


def test_clip_grad_norm_and_schedules():
    w = mixp.tensor([3.0, 4.0], requires_grad=True)
    opt = optim.SGD([w])
    (w * w).sum().backward()  # grad (6, 8), norm 10
    norm = optim.clip_grad_norm_(opt, 1.0)
    assert norm.item() == pytest.approx(10.0)
    np.testing.assert_allclose(w.grad.numpy(), [0.6, 0.8], rtol=1e-5)
    assert optim.lr_schedule_value(0, 1.0, warmup_steps=10, total_steps=100) == 0.0
    assert optim.lr_schedule_value(10, 1.0, warmup_steps=10, total_steps=100) == pytest.approx(1.0)
    with pytest.raises(mixp.InvalidArgumentError):
        optim.SGD([w], lr=-1.0)


def test_synthetic_dataset_and_loader():
    s = mixp.Session()
    ds = data.synthetic(num_samples=100, session=s)
    assert len(ds) == 100 and ds.num_classes == 10 and ds.sample_shape == (1, 28, 28)
    loader = data.DataLoader(ds, batch_size=32)
    assert len(loader) == 4
    batches = list(loader)
    assert len(batches) == 4
    x, y = batches[0]
    assert x.shape == (32, 1, 28, 28) and x.dtype is mixp.float32 and y.dtype is mixp.int64
    assert batches[-1][0].shape[0] == 4
    assert 0.0 <= x.numpy().min() and x.numpy().max() <= 1.0
    assert len(list(loader)) == 4 and loader.epoch >= 1
    sub = ds.subset(10, 20)
    assert len(sub) == 20
    dl = data.DataLoader(sub, batch_size=8, drop_last=True, shuffle=False, dtype=mixp.bfloat16)
    assert len(dl) == 2 and next(iter(dl))[0].dtype is mixp.bfloat16


def test_text_dataset(tmp_path):
    path = tmp_path / "t.txt"
    path.write_bytes(b"hello world, hello mixp")
    ds = data.text(path, block_size=4)
    assert ds.vocab() == bytes(sorted(set(b"hello world, hello mixp")))
    x, y = next(iter(data.DataLoader(ds, batch_size=2, shuffle=False)))
    assert x.shape == (2, 4) and x.dtype is mixp.int64
    np.testing.assert_array_equal(x.numpy()[0, 1:], y.numpy()[0, :-1])


def test_missing_files_raise_oserror_with_the_hint(tmp_path):
    with pytest.raises(OSError) as e:
        data.fashion_mnist(root=tmp_path)
    assert isinstance(e.value, mixp.Error)
    assert "dataset-fashion-mnist" in str(e.value)


def test_cross_entropy_label_smoothing_matches_pytorch_definition():
    rng = np.random.default_rng(4)
    x = rng.normal(size=(5, 7)).astype(np.float64)
    t = np.array([1, -100, 6, 0, 3], dtype=np.int64)
    lse = np.log(np.exp(x - x.max(1, keepdims=True)).sum(1)) + x.max(1)
    keep = t != -100
    for e in (0.0, 0.1, 1.0):
        rows = (1 - e) * (lse - x[np.arange(5), np.where(keep, t, 0)]) + e * (lse - x.mean(1))
        rows = np.where(keep, rows, 0.0)
        got = mixp.cross_entropy(mixp.tensor(x), t, reduction="none", label_smoothing=e).numpy()
        np.testing.assert_allclose(got, rows, rtol=1e-12, atol=1e-12)
        mean = mixp.cross_entropy(mixp.tensor(x), t, label_smoothing=e).item()
        assert abs(mean - rows[keep].mean()) < 1e-12
    with pytest.raises(mixp.InvalidArgumentError, match="label_smoothing"):
        mixp.cross_entropy(mixp.tensor(x), t, label_smoothing=1.5)
