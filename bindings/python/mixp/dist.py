"""Data-parallel training: one process per rank (``mixp_dist_*``).

Launch one process per rank (``mpirun -np 2 python3 train.py``); each trains
a replica of the model on its shard of the data, and the ranks average their
gradients before every optimizer step::

    s = mixp.Session(device=f"cuda:{mixp.dist.env_local_rank()}")  # or "cpu"
    with mixp.dist.Dist(s) as d:                       # transport="mpi"
        model = mixp.nn.model("mlp hidden=256", session=s)
        d.broadcast_module(model)                      # rank 0's weights everywhere
        opt = mixp.optim.AdamW(model.parameters())
        loader = mixp.data.DataLoader(ds, batch_size=64, shard_index=d.rank,
                                      shard_count=d.world_size)
        for x, y in loader:
            loss = mixp.functional.cross_entropy(model(x), y)
            opt.zero_grad()
            d.prepare_gradients(opt)                   # optional: average during backward
            loss.backward()
            d.average_gradients(opt)
            opt.step()

Every collective is called by every rank, in the same order, with tensors of
the same dtype and shape. ``transport="single"`` is a world of one without
MPI, so the same script runs unchanged in one plain process. Closing a
``Dist`` is collective too: use it as a context manager (or call close() at
the same point on every rank) rather than leaving it to the garbage
collector.
"""

from . import capi
from ._handle import Handle
from .errors import InvalidArgumentError
from .nn import Module, Sequential
from .session import default_session
from .tensor import Tensor

__all__ = ["Dist", "env_local_rank"]

_TRANSPORTS = {"mpi": capi.MIXP_DIST_MPI, "single": capi.MIXP_DIST_SINGLE}
_OPS = {"sum": capi.MIXP_REDUCE_SUM, "avg": capi.MIXP_REDUCE_AVG, "mean": capi.MIXP_REDUCE_AVG,
        "max": capi.MIXP_REDUCE_MAX}


def _choice(table, value, what):
    """A name of ``table`` as its C value; ints pass through (mixp checks them)."""
    if isinstance(value, str):
        try:
            return table[value.lower()]
        except KeyError:
            names = ", ".join(repr(k) for k in table)
            raise InvalidArgumentError(f"mixp.dist: unknown {what} {value!r} (one of {names})") from None
    return int(value)


def env_local_rank():
    """The local rank the launcher gave this process (its index among the
    ranks on this host: OMPI_COMM_WORLD_LOCAL_RANK, MPI_LOCALRANKID or
    LOCAL_RANK), 0 when none; for choosing a GPU before any session exists."""
    return capi.mixp_dist_env_local_rank()


class Dist(Handle):
    """This process's place among the ranks (``mixp_dist``), bound to ``session``.

    Args:
        session: the session whose tensors the collectives take (default:
            the default session); one communicator per session at a time.
        transport: ``"mpi"`` (the MPI world of this launch: ``mpirun -np N``;
            raises UnsupportedError where MPI or mixp's MPI plugin is
            missing) or ``"single"`` (rank 0 of a world of one, no MPI).
        bucket_bytes: gradients are averaged in buckets of about this many
            bytes, in [1, 2**40] (default 25 MiB, PyTorch DDP's).
    """

    __slots__ = ("_session",)
    _destroy = staticmethod(capi.mixp_dist_destroy)

    def __init__(self, session=None, transport="mpi", bucket_bytes=25 << 20):
        s = session or default_session()
        o = capi.mixp_dist_options()
        o.transport = _choice(_TRANSPORTS, transport, "transport")
        o.bucket_bytes = int(bucket_bytes)
        super().__init__(capi.mixp_dist_create(s._h, o))
        self._session = s

    @property
    def session(self):
        return self._session

    @property
    def rank(self):
        """This process's rank, in [0, world_size)."""
        return capi.mixp_dist_rank(self._h)

    @property
    def world_size(self):
        """The number of ranks."""
        return capi.mixp_dist_world_size(self._h)

    @property
    def local_rank(self):
        """This process's rank among the ranks on its host."""
        return capi.mixp_dist_local_rank(self._h)

    @property
    def description(self):
        """The transport, MPI library and NCCL version when used."""
        return capi.mixp_dist_describe(self._h)

    def all_reduce(self, tensor, op="sum"):
        """Reduces ``tensor`` over the ranks in place (``"sum"``, ``"avg"`` for
        float tensors, ``"max"``); every rank then holds the result. Returns
        ``tensor``."""
        capi.mixp_dist_all_reduce(self._h, tensor._h, _choice(_OPS, op, "reduce op"))
        return tensor

    def broadcast(self, tensor, root=0):
        """Copies rank ``root``'s ``tensor`` into every other rank's, in place.
        Returns ``tensor``."""
        capi.mixp_dist_broadcast(self._h, tensor._h, int(root))
        return tensor

    def all_gather(self, tensor):
        """A new tensor ``[world_size, *tensor.shape]`` with rank r's tensor at index r."""
        return Tensor(capi.mixp_dist_all_gather(self._h, tensor._h), self._session)

    def barrier(self):
        """Returns once every rank has called it."""
        capi.mixp_dist_barrier(self._h)

    def broadcast_module(self, module):
        """Makes every rank's copy of ``module`` (a mixp.nn.Module, or a
        Sequential of them) equal to rank 0's: call it once after creating the
        model, before ``mixp.amp.decorate``. Returns ``module``."""
        if isinstance(module, Sequential):  # a Python container: its mixp modules, in order
            for layer in module.layers:
                if isinstance(layer, (Module, Sequential)):
                    self.broadcast_module(layer)
            return module
        capi.mixp_dist_broadcast_module(self._h, module._h)
        return module

    def average_gradients(self, optimizer, local_samples=0):
        """Replaces every gradient of ``optimizer``'s parameters by its average
        over the ranks: after the backward pass of a step's last micro-batch,
        before the scaler's unscale/step, clipping or ``optimizer.step()``.
        ``local_samples`` 0 weighs every rank 1/world_size (PyTorch DDP); else
        the samples this rank's gradient was averaged over (>= 1), weighing
        each rank by its share of the global batch."""
        capi.mixp_dist_average_gradients(self._h, optimizer._h, int(local_samples))

    def prepare_gradients(self, optimizer, local_samples=0):
        """Arms the next backward pass to average ``optimizer``'s gradients
        while it runs (PyTorch DDP's overlap): each bucket is reduced as soon
        as its gradients are final, in the planned order. Call it right before
        the last micro-batch's backward, then ``average_gradients`` with the
        same ``optimizer`` and ``local_samples`` as usual; the averages are the
        same bits as without it."""
        capi.mixp_dist_prepare_gradients(self._h, optimizer._h, int(local_samples))

    def stats(self):
        """Gradient-averaging counters since creation: a dict with
        ``gradient_averages``, ``buckets``, ``buckets_in_backward`` (launched
        during a backward pass that prepare_gradients armed) and ``bytes``."""
        st = capi.mixp_dist_stats()
        capi.mixp_dist_get_stats(self._h, st)
        return {"gradient_averages": st.gradient_averages, "buckets": st.buckets,
                "buckets_in_backward": st.buckets_in_backward, "bytes": st.bytes}

    def __repr__(self):
        if self.closed:
            return "<mixp.dist.Dist closed>"
        return f"<mixp.dist.Dist rank={self.rank} world_size={self.world_size} {self.description!r}>"
