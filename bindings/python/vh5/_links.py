"""Links themselves, as h5py's ``Group.get(name, getlink=True)`` gives them: :class:`HardLink`,
:class:`SoftLink` (target path) and :class:`ExternalLink` (file name and object path), read
by ``vh5_link_get`` without following the link (no file is opened for an external link).

Names and paths are ``str``, or ``bytes`` when the stored bytes are not UTF-8 (as h5py's own
names; h5py's ``SoftLink`` turns such bytes into the text ``"b'...'"``). An external link's
file name is decoded as the file system decodes names (``os.fsdecode``), as h5py does.
"""

from __future__ import annotations

import ctypes
import os

from ._args import name_bytes, shown_name
from ._errors import InvalidArgumentError, NotFoundError, error
from ._lib import lib
from ._protocol import two_call

__all__ = ["HardLink", "SoftLink", "ExternalLink", "link_exists", "link_value"]


class HardLink:
    """A hard link (h5py's ``HardLink``): only what ``get(name, getlink=True)`` returns for a
    link to an object."""

    def __repr__(self) -> str:
        return "<HardLink>"


class SoftLink:
    """A soft (symbolic) link: ``path`` is its target, absolute or relative, not checked to
    exist (h5py's ``SoftLink``)."""

    __slots__ = ("_path",)

    def __init__(self, path):
        self._path = path

    @property
    def path(self):
        """The target path (``str``; ``bytes`` when not UTF-8)."""
        return self._path

    def __repr__(self) -> str:
        return f'<SoftLink to "{self.path}">'


class ExternalLink:
    """An external link: ``path`` in the HDF5 file ``filename`` (h5py's ``ExternalLink``;
    neither is checked to exist)."""

    __slots__ = ("_filename", "_path")

    def __init__(self, filename, path):
        self._filename = os.fsdecode(filename)
        self._path = path

    @property
    def filename(self) -> str:
        """The file name as stored in the link (relative names are resolved by libhdf5's
        external link search rules when the link is followed)."""
        return self._filename

    @property
    def path(self):
        """The object's path in that file (``str``; ``bytes`` when not UTF-8)."""
        return self._path

    def __repr__(self) -> str:
        return f'<ExternalLink to "{self.path}" in file "{self.filename}"'


_KINDS = {ord("h"): "hard", ord("s"): "soft", ord("e"): "external", ord("?"): "other"}


def link_exists(file, path: str) -> bool:
    """Whether a link reaches ``path`` (internal name form, absolute, not the root) in the vh5
    ``File`` ``file``, as h5py's ``name in group``: the status of a ``vh5_link_get`` size
    query (the link is not followed: a dangling soft link or an external link exists). False
    for NOT_FOUND and for INVALID_ARGUMENT (a component before the last is not a group).

    Raises:
        vh5.UnsupportedError: the path goes through an external link before its last
        component (file opened without ``allow_external``). vh5.HDF5Error: libhdf5 failed.
    """
    c_path = name_bytes(path)
    kind = ctypes.c_uint8(0)
    fn = lib().vh5_link_get
    try:
        two_call(file, lambda fid, buf, cap, n: fn(fid, c_path, ctypes.byref(kind), buf, cap, n), "", size_only=True)
    except (NotFoundError, InvalidArgumentError):
        return False
    return True


def link_value(file, path: str):
    """The link at ``path`` (internal name form, absolute) of the vh5 ``File`` ``file`` as a
    :class:`HardLink`, :class:`SoftLink` or :class:`ExternalLink`.

    Raises:
        KeyError (vh5.NotFoundError): no such link. vh5.InvalidArgumentError: a component of
        the path is not a group. vh5.UnsupportedError: the path goes through an external
        link (file opened without ``allow_external``) or the link is of a user-defined class.
        vh5.HDF5Error: libhdf5 could not read it.
    """
    c_path = name_bytes(path)
    kind = ctypes.c_uint8(0)
    fn = lib().vh5_link_get
    raw = two_call(
        file,
        lambda fid, buf, cap, n: fn(fid, c_path, ctypes.byref(kind), buf, cap, n),
        f"the link {shown_name(path)!r}",
    )
    k = _KINDS.get(kind.value)
    parts = raw.split(b"\0")
    if k == "hard":
        return HardLink()
    if k == "soft":
        return SoftLink(shown_name(parts[0].decode("utf-8", "surrogateescape")))
    if k == "external":
        return ExternalLink(parts[0], shown_name(parts[1].decode("utf-8", "surrogateescape")))
    raise error(
        "VH5_ERR_UNSUPPORTED",
        f"{file.filename!r}: the link {shown_name(path)!r} is of a user-defined class (not hard, soft, external)",
    )


#: libhdf5's default limit on soft and external links followed in one path (``H5L_NUM_LINKS``,
#: the link access property ``nlinks``): beyond it libhdf5 fails with "too many links".
MAX_SOFT_LINKS = 16


def soft_link_loop(file, path: str):
    """The soft links followed from ``path`` (internal name form, absolute) when reaching it
    takes more than :data:`MAX_SOFT_LINKS` of them (a loop such as ``a -> b -> a``, or a
    longer chain), as a list of paths ending where libhdf5 gives up; None when it does not
    (it dangles, is missing, reaches an object, or goes through an external link). Asked
    only once opening ``path`` failed: vh5 reports such a path as a dangling soft link, where
    h5py raises RuntimeError "too many links"."""
    parts = [p for p in path.split("/") if p and p != "."]
    cur, hops, seen = "/", 0, []
    i = 0
    while i < len(parts):
        nxt = cur.rstrip("/") + "/" + parts[i]
        try:
            link = link_value(file, nxt)
        except Exception:  # noqa: BLE001 - missing, not a group, unsupported: not a loop
            return None
        if isinstance(link, SoftLink):
            hops += 1
            target = link.path
            if isinstance(target, bytes):
                target = target.decode("utf-8", "surrogateescape")
            full = target if target.startswith("/") else cur.rstrip("/") + "/" + target
            seen += [full] if seen else [nxt, full]
            if hops > MAX_SOFT_LINKS:
                return seen
            parts = [p for p in full.split("/") if p and p != "."] + parts[i + 1 :]
            cur, i = "/", 0
            continue
        if isinstance(link, ExternalLink):
            return None
        cur, i = nxt, i + 1
    return None


def too_many_links(file, path: str, chain) -> Exception:
    """h5py's error for a path whose soft links loop (RuntimeError: vh5.HDF5Error)."""
    shown = " -> ".join(str(shown_name(p)) for p in chain[:4])
    return error(
        "VH5_ERR_HDF5",
        f"{file.filename!r}: {shown_name(path)!r}: too many links (more than {MAX_SOFT_LINKS} soft links "
        f"followed: {shown} -> ..., a loop of soft links; h5py raises RuntimeError too)",
    )
