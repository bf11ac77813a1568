"""Icechunk's errors as chunkflow's: what a write into an Icechunk session raises, named
for the user (the key, the node, what to do) instead of a raw ``KeyError('/x')`` or an
``IcechunkError`` with a Rust backtrace.

:class:`~chunkflow.storage.zarr_store.ZarrStoreAdapter` calls :func:`session_error`
when a request to a transactional store fails:

============================================  ==========================================
Icechunk says                                 chunkflow raises
============================================  ==========================================
``KeyError`` on a write (no such node)        :class:`~chunkflow.errors.TransactionError`
                                              in a job's fork (the node was created
                                              after the job forked the session), else
                                              :class:`~chunkflow.errors.ArrayNotFoundError`
"cannot set Zarr V2 metadata keys"            :class:`~chunkflow.errors.UnsupportedFormatError`
"cannot write to read-only store"             :class:`~chunkflow.errors.ReadOnlyError`
"bad metadata"                                :class:`~chunkflow.errors.MetadataError`
"invalid chunk index"                         :class:`~chunkflow.errors.BoundsCheckError`
anything else                                 :class:`~chunkflow.errors.StoreRequestError`
============================================  ==========================================

Examples
--------
>>> error = session_error(KeyError("/out"), "IcechunkStore", "write", ["out/c/0"])
>>> print(type(error).__name__, error)  # doctest: +NORMALIZE_WHITESPACE
ArrayNotFoundError could not write key 'out/c/0' of IcechunkStore: the Icechunk session
holds no array 'out' (Icechunk stores chunks only of arrays it holds); create the array
first.
"""

from __future__ import annotations

import errno
from collections.abc import Sequence

from chunkflow.errors import (
    ArrayNotFoundError,
    BoundsCheckError,
    ChunkflowError,
    MetadataError,
    ReadOnlyError,
    StoreRequestError,
    TransactionError,
    UnsupportedFormatError,
)

__all__ = ["is_session_error", "session_error"]


def is_session_error(error: BaseException) -> bool:
    """Whether ``error`` is one of Icechunk's, raw (an ``IcechunkError``, or the
    ``KeyError`` its store raises for a node it does not hold).

    >>> is_session_error(KeyError("/a")), is_session_error(ValueError("a"))
    (True, False)
    """
    if isinstance(error, ChunkflowError):
        return False
    return isinstance(error, KeyError) or type(error).__module__.partition(".")[0] == "icechunk"


def _node(key: str) -> str:
    """The node a key belongs to (its array, for a chunk key)."""
    for marker in ("/c/", "/zarr.json", "/.z"):
        if marker in f"/{key}":
            return f"/{key}".partition(marker)[0].strip("/")
    return key.rpartition("/")[0]


def _reason(error: BaseException) -> str:
    """Icechunk's message without its context and backtrace (the first line)."""
    if isinstance(error, KeyError):
        return f"no node {error.args[0] if error.args else ''!s}"
    lines = [line.strip(" x|`->") for line in str(error).splitlines()]
    return next((line for line in lines if line), type(error).__name__)


def session_error(error: BaseException, store: str, action: str, keys: Sequence[str],
                  in_fork: bool = False) -> Exception:
    """The chunkflow error for Icechunk's ``error`` on ``action`` ("read", "write",
    "delete") of ``keys`` of ``store`` (``in_fork``: a worker's copy of a job's fork)."""
    key = keys[0] if keys else ""
    node = _node(key) or "/"
    shown = f"key {key!r}" if len(keys) <= 1 else f"{len(keys)} keys ({key!r}, ...)"
    where = f"could not {action} {shown} of {store}"
    reason = _reason(error)
    if isinstance(error, KeyError) and in_fork:
        return TransactionError(
            f"{where}: this worker's fork of the Icechunk session holds no node {node!r}. "
            "It was created after the job forked the session (by a task on another worker, "
            "or by the client while the job ran): create the output before the job, or run "
            "it on threads (scheduler='threads').")
    if isinstance(error, KeyError):
        return ArrayNotFoundError(
            f"{where}: the Icechunk session holds no array {node!r} (Icechunk stores chunks "
            "only of arrays it holds); create the array first.")
    if "V2 metadata" in reason:
        return UnsupportedFormatError(
            f"{where}: Icechunk stores Zarr v3 only; create {node!r} as Zarr v3 "
            "(zarr_format=3; an output a writer makes like a v2 source: pass "
            "zarr_format=3 where the writer takes it, or create the output first).")
    if "read-only" in reason or "read only" in reason:
        return ReadOnlyError(
            f"{where}: the Icechunk session is read-only (a committed session writes no "
            "more): write into a new one, repo.writable_session(...).")
    if "bad metadata" in reason:
        return MetadataError(f"{where}: Icechunk refused the document of {node!r} ({reason}).")
    if "invalid chunk index" in reason:
        return BoundsCheckError(
            f"{where}: the chunk lies outside the shape of array {node!r} that the Icechunk "
            f"session holds ({reason}).")
    return StoreRequestError(errno.EIO, f"{where}: {reason}")
