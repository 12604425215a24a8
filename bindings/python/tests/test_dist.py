"""mixp.dist with the single-process transport (a world of one, no MPI), and
sharded loaders. The 2-rank run over MPI is tests/mpi_dist.py (CTest
python_dist_mpi_2ranks)."""
import numpy as np
import pytest

import mixp
from mixp import data, dist, nn, optim


@pytest.fixture
def s():
    session = mixp.Session(seed=0, num_threads=1)
    yield session
    session.close()


@pytest.fixture
def d(s):
    with dist.Dist(s, transport="single") as communicator:
        yield communicator


def test_world_of_one(d, s):
    assert (d.rank, d.world_size, d.local_rank) == (0, 1, 0)
    assert "single" in d.description
    assert d.session is s
    assert "world_size=1" in repr(d)
    d.barrier()
    assert isinstance(dist.env_local_rank(), int) and dist.env_local_rank() >= 0


def test_all_reduce_is_the_identity_for_one_rank(d, s):
    values = np.array([[1.5, -2.0, 3.25], [0.0, 7.0, -1e-3]], np.float32)
    for op in ("sum", "avg", "max", "SUM", mixp.capi.MIXP_REDUCE_SUM):
        t = mixp.from_numpy(values, session=s)
        assert d.all_reduce(t, op) is t  # in place, returned for chaining
        np.testing.assert_array_equal(t.numpy(), values)
    bf = mixp.from_numpy(values, session=s).to(mixp.bfloat16)
    before = bf.numpy(bf16_bits=True)
    d.all_reduce(bf, "avg")
    np.testing.assert_array_equal(bf.numpy(bf16_bits=True), before)
    ints = mixp.from_numpy(np.array([3, -4, 5], np.int64), session=s)
    np.testing.assert_array_equal(d.all_reduce(ints).numpy(), [3, -4, 5])
    with pytest.raises(mixp.DTypeError, match="mixp_dist_all_reduce"):
        d.all_reduce(ints, "avg")  # AVG needs a float tensor


def test_all_gather_adds_the_world_dimension(d, s):
    values = np.arange(6, dtype=np.float32).reshape(2, 3)
    t = mixp.from_numpy(values, session=s)
    g = d.all_gather(t)
    assert isinstance(g, mixp.Tensor) and g.shape == (1, 2, 3) and g.dtype is mixp.float32
    np.testing.assert_array_equal(g.numpy()[0], values)
    np.testing.assert_array_equal(t.numpy(), values)  # the input is untouched


def test_broadcast(d, s):
    t = mixp.from_numpy(np.array([1.0, 2.0], np.float32), session=s)
    assert d.broadcast(t) is t
    np.testing.assert_array_equal(t.numpy(), [1.0, 2.0])
    with pytest.raises(mixp.InvalidArgumentError, match="root") as e:
        d.broadcast(t, root=1)
    assert isinstance(e.value, ValueError)
    with pytest.raises(ValueError):
        d.broadcast(t, root=-1)


def test_broadcast_module_and_average_gradients(d, s):
    model = nn.Sequential(nn.Linear(4, 3, session=s), mixp.relu, nn.Linear(3, 2, session=s))
    before = [p.numpy() for p in model.parameters()]
    assert d.broadcast_module(model) is model  # rank 0 is this rank: nothing changes
    for p, b in zip(model.parameters(), before):
        np.testing.assert_array_equal(p.numpy(), b)
    opt = optim.SGD(model.parameters(), lr=0.1)
    x = mixp.randn(5, 4, session=s)
    (model(x) * model(x)).sum().backward()
    grads = [p.grad.numpy() for p in opt.params]
    d.average_gradients(opt)
    d.average_gradients(opt, local_samples=5)  # one rank: its share is the whole batch
    for p, g in zip(opt.params, grads):
        np.testing.assert_allclose(p.grad.numpy(), g, rtol=1e-6)
    with pytest.raises(mixp.InvalidArgumentError, match="local_samples"):
        d.average_gradients(opt, local_samples=-1)
    # Averaged during backward: the same values (one rank), counted.
    opt.zero_grad()
    d.prepare_gradients(opt, local_samples=5)
    (model(x) * model(x)).sum().backward()
    with pytest.raises(mixp.InvalidArgumentError, match="local_samples"):
        d.average_gradients(opt)  # not the plan's count; the plan stays
    d.average_gradients(opt, local_samples=5)
    for p, g in zip(opt.params, grads):
        np.testing.assert_allclose(p.grad.numpy(), g, rtol=1e-6)
    st = d.stats()
    assert st["gradient_averages"] == 3
    assert 0 <= st["buckets_in_backward"] <= st["buckets"]
    with pytest.raises(mixp.InvalidArgumentError, match="mixp_dist_prepare_gradients"):
        d.prepare_gradients(opt, local_samples=-1)
    opt.step()


def test_misuse(s):
    with pytest.raises(mixp.InvalidArgumentError, match="transport"):
        dist.Dist(s, transport="tcp")
    with pytest.raises(mixp.InvalidArgumentError, match="bucket_bytes"):
        dist.Dist(s, transport="single", bucket_bytes=0)
    d = dist.Dist(s, transport="single", bucket_bytes=1 << 10)
    with pytest.raises(mixp.StateError, match="communicator"):
        dist.Dist(s, transport="single")  # one communicator per session
    t = mixp.zeros(3, session=s)
    with pytest.raises(mixp.InvalidArgumentError, match="reduce op"):
        d.all_reduce(t, "min")
    with pytest.raises(mixp.InvalidArgumentError, match="mixp_dist_all_reduce"):
        d.all_reduce(t, 7)
    other = mixp.Session()
    with pytest.raises(mixp.DeviceError, match="another session"):
        d.all_reduce(mixp.zeros(3, session=other), "sum")
    with pytest.raises(mixp.DeviceError, match="another session"):
        d.broadcast_module(nn.Linear(2, 2, session=other))
    with pytest.raises(mixp.ShapeError, match="mixp_dist_all_gather"):
        d.all_gather(mixp.zeros(*([1] * 8), session=s))  # no room for the world dimension
    d.close()
    d.close()  # idempotent
    assert d.closed and "closed" in repr(d)
    with pytest.raises(mixp.StateError, match="after close"):
        d.barrier()
    with pytest.raises(mixp.StateError):
        d.rank
    with dist.Dist(s, transport="single") as again:  # the session is free again
        assert again.world_size == 1
    assert again.closed


def test_sharded_loader_splits_every_global_batch():
    s = mixp.Session(seed=0, num_threads=1)
    ds = data.synthetic(num_samples=22, height=4, width=4, seed=3, session=s)
    full = data.DataLoader(ds, batch_size=6, seed=7)
    shards = [data.DataLoader(ds, batch_size=3, seed=7, shard_index=i, shard_count=2) for i in range(2)]
    assert len(shards[0]) == len(shards[1]) == len(full) == 4
    for (x, y), (x0, y0), (x1, y1) in zip(full, *shards):
        np.testing.assert_array_equal(np.concatenate([y0.numpy(), y1.numpy()]), y.numpy())
        np.testing.assert_array_equal(np.concatenate([x0.numpy(), x1.numpy()]), x.numpy())
    assert [shard.next() for shard in shards] == [None, None]  # both epochs end together
    seen = np.concatenate([y.numpy() for shard in shards for _, y in shard])
    assert seen.shape == (22,)
    with pytest.raises(mixp.InvalidArgumentError, match="shard"):
        data.DataLoader(ds, batch_size=3, shard_index=2, shard_count=2)
    with pytest.raises(mixp.InvalidArgumentError, match="shard"):
        data.DataLoader(ds, batch_size=3, shard_count=0)
