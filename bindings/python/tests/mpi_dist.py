"""mixp.dist over MPI with 2 ranks (CTest python_dist_mpi_2ranks):

    mpirun --allow-run-as-root --oversubscribe -np 2 python3 mpi_dist.py

Each rank checks its place in the world, the collectives (every result is
known in closed form), that broadcast_module + average_gradients keep the
replicas identical, and that sharded loaders split the global batch. Every
collective is called by both ranks in the same order, so a failed check on
one rank raises on the other too, or at worst hangs until CTest's timeout.
"""
import sys

try:
    import numpy as np
except ImportError as e:
    print(f"SKIPPED: {e.name} is not installed for {sys.executable}")
    sys.exit(77)

import mixp
from mixp import data, dist, nn, optim


def gather(d, t):
    """Every rank's copy of t, as numpy [world, ...]."""
    return d.all_gather(t).numpy()


def main():
    local = dist.env_local_rank()
    s = mixp.Session(seed=0, num_threads=1)
    with dist.Dist(s, transport="mpi", bucket_bytes=64) as d:  # tiny buckets: several collectives
        r, n = d.rank, d.world_size
        assert n == 2, f"world size {n}, want 2 (run under mpirun -np 2)"
        assert r in (0, 1) and d.local_rank == local == r, (r, d.local_rank, local)
        assert "MPI" in d.description or "mpi" in d.description, d.description

        # ---- collectives -------------------------------------------------------------
        mine = np.array([r + 1.0, 10.0 * (r + 1), -(r + 1.0)], np.float32)
        t = mixp.from_numpy(mine, session=s)
        assert d.all_reduce(t, "sum") is t
        np.testing.assert_array_equal(t.numpy(), [3.0, 30.0, -3.0])
        t = d.all_reduce(mixp.from_numpy(mine, session=s), "avg")
        np.testing.assert_array_equal(t.numpy(), [1.5, 15.0, -1.5])
        t = d.all_reduce(mixp.from_numpy(mine, session=s), "max")
        np.testing.assert_array_equal(t.numpy(), [2.0, 20.0, -1.0])
        ints = d.all_reduce(mixp.from_numpy(np.array([r, 5], np.int64), session=s))
        np.testing.assert_array_equal(ints.numpy(), [1, 10])
        np.testing.assert_array_equal(gather(d, mixp.from_numpy(mine, session=s)),
                                      [[1.0, 10.0, -1.0], [2.0, 20.0, -2.0]])
        b = d.broadcast(mixp.full((2,), float(r), session=s), root=1)
        np.testing.assert_array_equal(b.numpy(), [1.0, 1.0])
        d.barrier()

        # ---- replicas: same weights, averaged gradients, same step ----------------------
        s.manual_seed(100 + r)  # different initial weights per rank ...
        model = nn.Sequential(nn.Linear(3, 4, session=s), mixp.relu, nn.Linear(4, 2, session=s))
        d.broadcast_module(model)  # ... until rank 0's reach every rank
        for p in model.parameters():
            g = gather(d, p)
            np.testing.assert_array_equal(g[0], g[1])
        opt = optim.SGD(model.parameters(), lr=0.1)

        def local_grads(batch):
            opt.zero_grad()
            x = mixp.from_numpy(np.linspace(-1, 1, batch * 3, dtype=np.float32).reshape(batch, 3) * (r + 1),
                                session=s)
            (model(x) * model(x)).mean().backward()
            return [gather(d, p.grad) for p in opt.params]  # [world, ...] per parameter

        per_rank = local_grads(4)
        d.average_gradients(opt)
        for p, g in zip(opt.params, per_rank):
            np.testing.assert_allclose(p.grad.numpy(), g.mean(axis=0), rtol=1e-6, atol=1e-7)
        samples = r + 1  # rank 0 averaged over 1 sample, rank 1 over 2: weights 1/3 and 2/3
        per_rank = local_grads(samples)
        d.average_gradients(opt, local_samples=samples)
        averaged = [p.grad.numpy() for p in opt.params]
        # The same step averaged during backward: the same bits, every bucket
        # launched inside backward.
        before = d.stats()
        opt.zero_grad()
        x = mixp.from_numpy(np.linspace(-1, 1, samples * 3, dtype=np.float32).reshape(samples, 3) * (r + 1),
                            session=s)
        d.prepare_gradients(opt, local_samples=samples)
        (model(x) * model(x)).mean().backward()
        d.average_gradients(opt, local_samples=samples)
        after_stats = d.stats()
        assert after_stats["buckets"] > before["buckets"]
        assert after_stats["buckets_in_backward"] - before["buckets_in_backward"] == \
            after_stats["buckets"] - before["buckets"]
        for p, a in zip(opt.params, averaged):
            np.testing.assert_array_equal(p.grad.numpy(), a)
        for p, g in zip(opt.params, per_rank):
            np.testing.assert_allclose(p.grad.numpy(), (g[0] + 2 * g[1]) / 3, rtol=1e-5, atol=1e-7)
            after = gather(d, p.grad)
            np.testing.assert_array_equal(after[0], after[1])  # bit-identical on every rank
        opt.step()
        for p in model.parameters():
            g = gather(d, p)
            np.testing.assert_array_equal(g[0], g[1])

        # ---- sharded loaders: the shards' batches make up the global batch ----------------
        ds = data.synthetic(num_samples=24, height=4, width=4, seed=5, session=s)
        full = data.DataLoader(ds, batch_size=8, seed=9)
        shard = data.DataLoader(ds, batch_size=4, seed=9, shard_index=r, shard_count=n)
        assert len(shard) == len(full) == 3
        for (x, y), (xs, ys) in zip(full, shard):
            np.testing.assert_array_equal(gather(d, ys).reshape(-1), y.numpy())
            np.testing.assert_array_equal(gather(d, xs).reshape(x.shape), x.numpy())
        d.barrier()
        if r == 0:
            print(f"mixp.dist over MPI: {n} ranks agree ({d.description})")


if __name__ == "__main__":
    main()
