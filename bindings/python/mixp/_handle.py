"""Ownership of C handles in the Python layer.

Every Python object that owns a handle holds the SWIG proxy (which owns one
reference and frees it when garbage-collected). ``close()`` frees it now; a
closed object raises StateError when used, instead of handing C a dangling
pointer.
"""

from .errors import StateError


class Handle:
    """Base of the Python objects that own a C handle."""

    __slots__ = ("_raw", "__weakref__")
    _destroy = None  # the capi destroy/release function of the handle type

    def __init__(self, raw):
        self._raw = raw

    @property
    def _h(self):
        raw = self._raw
        if raw is None:
            raise StateError(f"mixp: {type(self).__name__} used after close()")
        return raw

    @property
    def closed(self):
        return self._raw is None

    def close(self):
        """Frees the C object now (idempotent); later use raises StateError."""
        raw, self._raw = self._raw, None
        if raw is not None:
            type(self)._destroy(raw)  # disowns the proxy: freed exactly once

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False
