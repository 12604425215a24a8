"""The profiler: where a step's time goes (``mixp_profile_*``).

    with mixp.profile(session) as p:
        loss = model(x) ...; loss.backward(); opt.step()
    print(p.report(20))            # the top 20 ops by self device time
    p.write_trace("step.json")     # open in https://ui.perfetto.dev

Every op the session runs inside the block is recorded with its input
shapes and dtypes, its host time and its device time (CUDA events on a GPU,
the wall clock on the CPU). Outside a ``with`` block recording costs one
branch per op.
"""

from . import capi
from ._handle import Handle
from .session import default_session

__all__ = ["profile", "Profile"]

_FIELDS = ("op", "backward", "calls", "host_ms", "device_ms", "self_host_ms", "self_device_ms")


class Profile(Handle):
    """A recorded profile (readable once its ``with`` block has ended)."""

    __slots__ = ("_session",)
    _destroy = staticmethod(capi.mixp_profile_destroy)

    def __init__(self, session):
        super().__init__(None)
        self._session = session

    def __enter__(self):
        capi.mixp_profile_begin(self._session._h)
        return self

    def __exit__(self, *exc):
        self._raw = capi.mixp_profile_end(self._session._h)
        return False

    def __len__(self):
        """The number of recorded op calls."""
        return capi.mixp_profile_length(self._h)

    def rows(self):
        """The summary: one dict per op and pass (keys ``op``, ``backward``,
        ``calls``, ``host_ms``, ``device_ms``, ``self_host_ms``,
        ``self_device_ms``), largest self device time first."""
        out = []
        for i in range(capi.mixp_profile_summary_rows(self._h)):
            r = capi.mixp_profile_row()
            capi.mixp_profile_summary_get(self._h, i, r)
            row = {k: getattr(r, k) for k in _FIELDS}
            row["backward"] = bool(row["backward"])
            out.append(row)
        return out

    def report(self, max_rows=0):
        """The summary as a table (``max_rows`` <= 0: every row)."""
        return capi.mixp_profile_report(self._h, int(max_rows))

    def write_trace(self, path):
        """Writes the Chrome trace event file (chrome://tracing, Perfetto)."""
        capi.mixp_profile_write_trace(self._h, str(path))


def profile(session=None):
    """Records the ops run on ``session`` inside the ``with`` block."""
    return Profile(session or default_session())
