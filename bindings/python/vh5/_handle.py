"""An open libhdf5 id of vh5's, closed exactly once (the base of File and Dataset)."""

from __future__ import annotations

import weakref

from ._errors import check, error
from ._lib import lib

__all__ = ["Handle"]


def _close_id(ident: int) -> None:
    # Called from weakref.finalize: never raise (interpreter may be shutting down).
    try:
        lib().vh5_close(ident)
    except Exception:  # pragma: no cover - best effort at exit
        pass


class Handle:
    """An open vh5 id, closed exactly once by :meth:`close` or at garbage collection."""

    __slots__ = ("_id", "_finalizer", "__weakref__")

    def __init__(self, ident: int):
        self._id = ident
        self._finalizer = weakref.finalize(self, _close_id, ident)

    def _closed_message(self) -> str:
        return f"{type(self).__name__} is closed"

    @property
    def id(self) -> int:
        """The vh5 (libhdf5 ``hid_t``) id; raises :class:`vh5.InvalidHandleError` once closed.
        It belongs to vh5's libhdf5: never pass it to h5py."""
        if not self._finalizer.alive:
            raise error("VH5_ERR_INVALID_HANDLE", self._closed_message())
        return self._id

    @property
    def closed(self) -> bool:
        """True once :meth:`close` was called."""
        return not self._finalizer.alive

    def close(self) -> None:
        """Close the handle (idempotent)."""
        if self._finalizer.alive:
            self._finalizer.detach()
            check(lib().vh5_close(self._id))

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False
