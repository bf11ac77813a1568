"""Merging the forks of an Icechunk session without losing a document: the merge step of
:mod:`chunkflow.graph.transactions`.

Icechunk merges forks change set by change set, and a node's document (its
``zarr.json``: attributes, array metadata) held by two forks is taken from the fork
merged last (new and updated nodes are maps keyed by path, extended in merge order).
Every fork of a job holds the nodes the job carried over from the session (the output
created, or replaced, just before the job ran): a worker that never touched a node
still holds a copy of its document as it was when the job started. Merged after the
fork of the worker whose task wrote that document (a pyramid's ``multiscales``, a
label image created once its number of labels is known), the stale copy would win.

So the documents the workers wrote are found, and written last:

1. each returned fork's documents are compared with those of the base fork the
   workers started from; a document a fork holds differently (written, created, or
   deleted) is one its tasks wrote;
2. the forks are merged, the ones that wrote documents last (a node such a fork
   created keeps the chunks written under it);
3. the client then writes each document the workers wrote into the session again,
   where the merge left another copy (deletes first, parents before children).

Two forks that wrote one document differently are refused: nothing tells which write
came last. Chunks are unaffected: each task writes its own chunks, into one fork.

Examples
--------
>>> changed({"a": b"1", "b": b"2"}, {"a": b"1", "b": b"3", "c": None})
{'b': b'3'}
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from chunkflow.errors import TransactionError

__all__ = ["changed", "merge_forks"]

Documents = dict[str, "bytes | None"]


def _node_paths(session: Any) -> set[str]:
    """The paths ("" for the root) of the nodes ``session`` created, changed or deleted."""
    diff = session.status()
    nodes = {*diff.new_groups, *diff.new_arrays, *diff.updated_groups, *diff.updated_arrays,
             *diff.deleted_groups, *diff.deleted_arrays}
    return {node.strip("/") for node in nodes}


def _key(path: str) -> str:
    return f"{path}/zarr.json" if path else "zarr.json"


def _documents(session: Any, paths: Sequence[str]) -> Documents:
    """The document of each node path in ``session`` (``None``: no node there)."""
    from chunkflow.storage.zarr_store import ZarrStoreAdapter

    found = ZarrStoreAdapter(session.store, read_only=True).get_many([_key(p) for p in paths])
    return {path: found.get(_key(path)) for path in paths}


def changed(base: Mapping[str, bytes | None], fork: Mapping[str, bytes | None]) -> Documents:
    """The documents ``fork`` holds differently from ``base`` (``None``: deleted; a
    path missing from ``base`` had no node there)."""
    return {path: document for path, document in fork.items()
            if base.get(path) != document}


def merge_forks(session: Any, base: Any, forks: Sequence[Any], *, what: str,
                names: Sequence[str], merge_base: bool = True) -> None:
    """Merge ``base`` (the fork the workers started from) and the workers' ``forks``
    into ``session``, keeping every document the workers wrote (see the module).

    ``merge_base=False``: ``session`` holds ``base``'s changes already (a copy of it:
    the base of the next round of a job).

    Raises
    ------
    TransactionError
        Two forks wrote one document differently; or Icechunk refused the merge. The
        session then holds ``base``'s changes only (as before the job).
    """
    paths = sorted(set().union(_node_paths(base), *(_node_paths(f) for f in forks)))
    before = _documents(base, paths)
    written: Documents = {}
    writers: list[Any] = []
    for fork in forks:
        changes = changed(before, _documents(fork, paths))
        clash = sorted(p for p, d in changes.items() if p in written and written[p] != d)
        if clash:
            if merge_base:
                session.merge(base)
            raise TransactionError(
                f"{what}: tasks on two workers wrote different documents for node(s) "
                f"{', '.join(repr(p or '/') for p in clash)} while writing array(s) "
                f"{', '.join(repr(n) for n in names)}, and nothing tells which came last. "
                "Nothing was merged into the session; write those documents before or "
                "after the job (on the client), or run on threads (scheduler='threads').")
        if changes:
            written.update(changes)
            writers.append(fork)
    others = [fork for fork in forks if not any(fork is w for w in writers)]
    try:
        session.merge(*([base] if merge_base else []), *others, *writers)
    except Exception as error:  # noqa: BLE001 - Icechunk's own errors, named for the user
        raise TransactionError(
            f"{what}: Icechunk could not merge the workers' forks of the session holding "
            f"array(s) {', '.join(repr(n) for n in names)} ({type(error).__name__}: {error}). "
            "Nothing of the job is in the session; run it again from a new session "
            "(repo.writable_session(...)).") from error
    _write_again(session, written)


def _write_again(session: Any, written: Documents) -> None:
    """Write the documents the workers wrote into ``session`` where the merge left
    another copy: deletes first (the top nodes), then documents, parents first."""
    if not written:
        return
    from chunkflow.storage.zarr_store import ZarrStoreAdapter

    merged = _documents(session, sorted(written))
    stale = {path: document for path, document in written.items()
             if merged[path] != document}
    store = ZarrStoreAdapter(session.store)
    gone = [path for path, document in stale.items() if document is None]
    for path in gone:  # a node below another one deleted goes with it
        if not any(other != path and (not other or path.startswith(f"{other}/"))
                   for other in gone):
            store.delete_prefix(path)
    for path in sorted((p for p, d in stale.items() if d is not None),
                       key=lambda p: (p.count("/") + bool(p), p)):
        document = stale[path]
        assert document is not None
        store[_key(path)] = document
