"""Where a writer's output lies against what it reads: refused before anything is created.

A job that writes into one of its own sources changes what its later tasks read. With a
halo (``depth > 0``) a block reads elements that a neighbouring block has already
overwritten, and the result differs from the whole-array answer with nothing to show
for it; a writer that creates its output anew (``overwrite=True`` on a location) would
delete the source before reading it. Locations are compared canonically: the store's
identity (its resolved root: two handles, or a path and a store, over one folder are one
location) joined with the node's path, so that a group holding the source overlaps it.

Examples
--------
>>> import chunkflow
>>> store = chunkflow.MemoryStore()
>>> z = chunkflow.zeros((4, 4), chunks=(2, 2), store=store, path="a/b")
>>> overlaps(array_location(z), canonical(store.identity, "a"))
True
>>> check_not_source("map_chunks", array_location(z), [("source 0", array_location(z))],
...                  depth=(2, 2), overwrite=True)  # doctest: +ELLIPSIS
Traceback (most recent call last):
...
chunkflow.errors.OutputIsSourceError: map_chunks: out ... is source 0 of this job (...), read with a halo ...
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from chunkflow.errors import OutputIsSourceError
from chunkflow.storage import Store, make_store

__all__ = ["array_location", "canonical", "check_not_source", "location_of", "overlaps"]


def canonical(identity: str, path: str) -> str:
    """The canonical location of the node ``path`` in the store named ``identity``.

    Examples
    --------
    >>> canonical("file:///data/a.zarr", ""), canonical("file:///data", "a.zarr/")
    ('file:///data/a.zarr', 'file:///data/a.zarr')
    """
    path = path.strip("/")
    return f"{identity.rstrip('/')}/{path}" if path else identity.rstrip("/")


def array_location(array: Any) -> str:
    """The canonical location of an open array (or group): its store and path."""
    return canonical(array.store.identity, array.path)


def location_of(location: Any, storage_options: Mapping[str, Any] | None = None,
                path: str | None = None) -> str | None:
    """The canonical location of a path, URL or store (``path`` inside it), or ``None``
    when there is nothing to open there (a zip file that does not exist). Creates
    nothing."""
    if isinstance(location, Store):
        store = location
    elif isinstance(location, (str, os.PathLike)):
        try:
            store = make_store(location, mode="r",
                               storage_options=dict(storage_options or {}) or None)
        except FileNotFoundError:
            return None
    else:
        return None
    return canonical(store.identity, path or "")


def overlaps(a: str, b: str) -> bool:
    """Whether one location holds the other (or they are the same).

    Examples
    --------
    >>> overlaps("file:///d/a.zarr", "file:///d/a.zarr/0"), overlaps("file:///d/a", "file:///d/ab")
    (True, False)
    """
    return a == b or a.startswith(b + "/") or b.startswith(a + "/")


def check_not_source(what: str, out: str | None, sources: Iterable[tuple[str, str]], *,
                     depth: Sequence[int] = (), overwrite: bool = False,
                     creates: bool = False) -> bool:
    """Refuse an output that is (or overlaps) a source unless writing it in place is safe.

    Parameters
    ----------
    what : str
        The writer, for the message (``"map_chunks"``).
    out : str or None
        The output's canonical location (``None``: nothing there yet).
    sources : iterable of (label, location)
        What the job reads, each named for the message (``"source 0"``).
    depth : sequence of int
        The halo per axis: with any halo, in place is always refused.
    overwrite : bool
        In place without a halo (each block reads only the elements it writes) needs
        ``overwrite=True``.
    creates : bool
        The writer creates its output anew there (a rechunk, a pyramid, a copy): that
        deletes the source before it is read, and is always refused.

    Returns
    -------
    bool
        Whether the output is a source (written in place, allowed).

    Raises
    ------
    OutputIsSourceError
        The output overlaps a source and in place is not allowed; nothing was written.
    """
    if out is None:
        return False
    hits = [(label, where) for label, where in sources if overlaps(out, where)]
    if not hits:
        return False
    label, where = hits[0]
    relation = "is" if where == out else "overlaps"
    head = f"{what}: out {out!r} {relation} {label} of this job ({where!r})"
    if creates or where != out:
        raise OutputIsSourceError(
            f"{head}; creating the output there would delete what the job reads before it "
            "is read. Nothing was written: write to another location")
    if any(depth):
        raise OutputIsSourceError(
            f"{head}, read with a halo (depth={tuple(depth)}): blocks would read halos that "
            "other blocks have already overwritten, and the result would differ from the "
            "whole-array answer. Nothing was written: write to another location (even "
            "overwrite=True cannot allow this)")
    if not overwrite:
        raise OutputIsSourceError(
            f"{head}. Writing a source in place (depth=0: each block reads only the "
            "elements it writes) needs overwrite=True. Nothing was written")
    return True
