"""A training step captured once and replayed (``mixp_graph_*``).

    g = mixp.graph(session)
    with g:                   # the step runs, and is recorded
        train_step()
    for batch in batches:
        x.copy_(batch)        # refill the inputs in place
        g.replay()            # the same step again, bitwise as eagerly

Inside the ``with`` block the session runs one ordinary step (zero_grad,
forward, backward, the scaler, the optimizer). Tensors made there (the
loss, the gradients) keep their handles; each replay rewrites them. Reading
values on the host (``item()``, ``numpy()``) inside the block raises
StateError; the rules are in the AMP guide ("Captured steps").
"""

from . import capi
from ._handle import Handle
from .errors import StateError
from .session import default_session

__all__ = ["graph", "Graph"]


class Graph(Handle):
    """A captured step: capture it with ``with``, then ``replay()``."""

    __slots__ = ("_session",)
    _destroy = staticmethod(capi.mixp_graph_destroy)

    def __init__(self, session):
        super().__init__(None)
        self._session = session

    def __enter__(self):
        if self._raw is not None:
            raise StateError("mixp: this graph holds a captured step already")
        capi.mixp_graph_capture_begin(self._session._h)
        return self

    def __exit__(self, exc_type, *exc):
        if exc_type is not None:  # the step failed: no graph, the capture ends
            try:
                capi.mixp_graph_capture_abort(self._session._h)
            except StateError:
                pass
            return False
        self._raw = capi.mixp_graph_capture_end(self._session._h)
        return False

    def replay(self):
        """Runs the captured step again on the same tensors."""
        capi.mixp_graph_replay(self._h)


def graph(session=None):
    """A graph that captures the step run on ``session`` inside ``with``."""
    return Graph(session or default_session())
