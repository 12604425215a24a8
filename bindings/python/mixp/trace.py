"""Op traces: the same batch in two runs, compared op by op (``mixp_trace_*``).

    with mixp.trace(s_fp32) as ref:
        loss = model_a(x) ...; loss.backward()
    with mixp.trace(s_bf16) as test:
        ...
    first, report = test.compare(ref, rel_tol=1e-2)

Every op's outputs (forward, and the gradients backward computes) are copied
to the host while recording: meant for one batch.
"""

from . import capi
from ._handle import Handle
from .session import default_session

__all__ = ["trace", "Trace"]


class Trace(Handle):
    """A recorded trace (valid once its ``with`` block has ended)."""

    __slots__ = ("_session",)
    _destroy = staticmethod(capi.mixp_trace_destroy)

    def __init__(self, session):
        super().__init__(None)
        self._session = session

    def __enter__(self):
        capi.mixp_trace_begin(self._session._h)
        return self

    def __exit__(self, *exc):
        self._raw = capi.mixp_trace_end(self._session._h)
        return False

    def __len__(self):
        return capi.mixp_trace_length(self._h)

    def compare(self, reference, rel_tol=1e-2):
        """``(first, report)``: the index of the first op whose relative error
        against ``reference`` passes ``rel_tol`` (or where the runs called
        different ops; -1 when none), and the per-op table."""
        first = capi.mixp_swig_trace_compare(reference._h, self._h, float(rel_tol))
        return first, capi.mixp_trace_report(self._h)


def trace(session=None):
    """Records the ops run on ``session`` inside the ``with`` block."""
    return Trace(session or default_session())
