"""The per-process cache of open files and datasets behind unpickled vh5 handles.

An unpickled :class:`vh5.File` / :class:`vh5.Dataset` (see :mod:`vh5._pickle`) opens nothing
until it is first used; it then takes its file (and dataset) from this cache, so the tasks of
a Dask graph that each unpickle their own copy of one dataset share one open file, one open
dataset and its chunk cache in each worker process, like xarray's ``CachingFileManager``.

- **Keys**: ``(absolute path, mode, options)`` for a file; that key plus the dataset path for
  a dataset. A file opened read-only and one opened ``"r+"`` are different entries.
- **Bounded**: at most :func:`get_size` entries (files and datasets together; default 128).
  The least recently used entry beyond that is *dropped*, never closed under a user: every
  handle that still refers to it stays valid, and the file is closed by garbage collection
  once the last reference goes (CPython: at once).
- **Thread-safe**: one lock guards the table; opening a file happens under it, so two threads
  asking for the same key get the same object and the file is opened once.
- **Closed at exit**: an ``atexit`` hook closes every cached dataset, then every file.
- **fork**: a child process starts with an empty cache (the parent's entries are kept
  referenced, never closed, in the child: closing a parent's writable file there would
  flush it from two processes).
"""

from __future__ import annotations

import atexit
import os
import threading
from collections import OrderedDict

from ._files import File

__all__ = ["open_file", "open_dataset", "clear", "set_size", "get_size", "cached_files", "cached_keys"]

_DEFAULT_SIZE = 128


class _FileCache:
    def __init__(self, size: int = _DEFAULT_SIZE):
        self.lock = threading.RLock()
        self.entries: OrderedDict = OrderedDict()
        self.size = size

    def _get(self, key, make):
        with self.lock:
            ent = self.entries.get(key)
            if ent is not None and not ent.closed:
                self.entries.move_to_end(key)
                return ent
            ent = make()
            self.entries[key] = ent
            self.entries.move_to_end(key)
            self._trim()
            return ent

    def _trim(self):
        while len(self.entries) > self.size:
            self.entries.popitem(last=False)  # dropped, not closed: holders keep it valid

    def file(self, fkey):
        path, mode, options = fkey
        return self._get(("f", fkey), lambda: File(path, mode, **dict(options)))

    def dataset(self, fkey, name: str):
        with self.lock:
            return self._get(("d", fkey, name), lambda: self.file(fkey).dataset(name))

    def clear(self, close: bool):
        with self.lock:
            entries = list(self.entries.values())
            self.entries.clear()
        if close:
            # datasets first: a file is released by libhdf5 when its last object closes
            for ent in sorted(entries, key=lambda e: type(e).__name__ != "Dataset"):
                try:
                    ent.close()
                except Exception:  # pragma: no cover - best effort (exit, closed library)
                    pass


_CACHE = _FileCache()
_INHERITED: list = []  # a forked child's copy of the parent's entries: never closed there


def _after_fork_in_child() -> None:
    global _CACHE
    _INHERITED.extend(_CACHE.entries.values())
    size = _CACHE.size
    _CACHE = _FileCache(size)


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


@atexit.register
def _close_at_exit() -> None:
    _CACHE.clear(close=True)


def open_file(fkey):
    """The cached :class:`vh5.File` for ``fkey = (absolute path, mode, options)`` (options: a
    sorted tuple of ``(keyword, value)`` pairs passed to ``vh5.File``), opened on first use.

    Raises what ``vh5.File(path, mode, **options)`` raises (vh5.IoError, vh5.HDF5Error, ...)."""
    return _CACHE.file(fkey)


def open_dataset(fkey, name: str):
    """The cached :class:`vh5.Dataset` ``name`` of the file ``fkey`` (see :func:`open_file`).

    Raises what opening the file or ``File.dataset(name)`` raises."""
    return _CACHE.dataset(fkey, name)


def clear(close: bool = False) -> None:
    """Empty this process's cache. With ``close=True`` the cached objects are closed too:
    handles that still use them then raise :class:`vh5.InvalidHandleError` until they are
    unpickled again (unpickled handles reopen through the cache by themselves)."""
    _CACHE.clear(close)


def set_size(n: int) -> None:
    """Keep at most ``n`` (>= 1) files and datasets open in the cache of this process."""
    import operator

    n = operator.index(n)
    if n < 1:
        raise ValueError(f"the file cache size must be at least 1, not {n}")
    with _CACHE.lock:
        _CACHE.size = n
        _CACHE._trim()


def get_size() -> int:
    """The cache's bound (see :func:`set_size`)."""
    return _CACHE.size


def cached_files() -> list:
    """The files the cache holds (the file of every cached dataset included)."""
    with _CACHE.lock:
        ents = list(_CACHE.entries.values())
    return [e if isinstance(e, File) else e.file for e in ents]


def cached_keys() -> list:
    """The cache's keys, least recently used first: ``("f", fkey)`` for files,
    ``("d", fkey, name)`` for datasets (for tests and diagnostics)."""
    with _CACHE.lock:
        return list(_CACHE.entries.keys())
