"""Creating a node where the store may hold something: only Zarr nodes are replaced.

Before a writer creates a node (an array, a group) at ``path``, it looks at what the
store holds there, with one listing of the prefix and one batched read of the node
documents listed (:func:`inspect_location`), and sorts the keys
(:mod:`chunkflow.core.zarr_keys`): the documents, chunks and job records of the node at
``path`` and of the nodes its groups hold are *owned*; those of other Zarr nodes below
(in a plain folder) are *kept*; everything else is *foreign* (a file, a folder with no
node above it, a document that is not Zarr, a key at ``path`` itself or at an ancestor).

A location holding anything foreign is refused, with or without ``overwrite``
(:class:`~chunkflow.errors.ForeignContentError`), and a node is refused without
``overwrite`` (:class:`~chunkflow.errors.ContainsArrayError`,
:class:`~chunkflow.errors.ContainsGroupError`), before anything is written or deleted.
Replacing then deletes the Zarr keys it listed, key by key, never a folder
(:meth:`Location.replace`). A store that cannot list the location can create a node
there but not replace one: what it would delete is unknown.

Examples
--------
>>> from chunkflow.storage import MemoryStore
>>> store = MemoryStore()
>>> store.set_many({"out/zarr.json": b'{"zarr_format": 3, "node_type": "group"}',
...                 "out/notes.txt": b"mine"})
>>> location = inspect_location(store, "out")
>>> location.kind, location.owned, location.foreign
('group', ('out/zarr.json',), ('out/notes.txt',))
>>> location.refuse(overwrite=True, what="create")  # doctest: +ELLIPSIS
Traceback (most recent call last):
chunkflow.errors.ForeignContentError: create: path 'out' in MemoryStore(...) holds 1 key that is ...
"""

from __future__ import annotations

import errno
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, NoReturn

from chunkflow.core.documents import (
    ZARR_JSON,
    ZGROUP,
    NodeKind,
    ancestor_documents,
    classify_node,
    join_path,
    normalize_path,
)
from chunkflow.core.node_records import forget_cached_under
from chunkflow.core.zarr_keys import DOCUMENTS, NODE_DOCUMENTS, parse_document, sort_keys
from chunkflow.errors import (
    ChunkflowError,
    ContainsArrayError,
    ContainsGroupError,
    ForeignContentError,
    IncompleteListingError,
    StoreRequestError,
    UnsupportedOperationError,
)
from chunkflow.storage import LocalStore, Store, ZipStore, make_store
from chunkflow.storage.factory import opened_by_chunkflow

if TYPE_CHECKING:
    from chunkflow.cache import CacheLike
    from chunkflow.storage import StoreLike

__all__ = ["Location", "check_location", "inspect_location", "refuse_foreign", "writable_store",
           "write_node"]

#: At most this many foreign keys are named in a refusal.
SHOWN = 5


@dataclass(frozen=True)
class Location:
    """What a store holds at ``path``: the node there, the keys of its Zarr nodes
    (``owned``), of Zarr nodes no group there holds (``kept``), and the rest
    (``foreign``), all full keys (see :mod:`chunkflow.core.zarr_keys`).

    ``listed`` is false when the store could not list ``path``; then ``owned`` and
    ``foreign`` are empty and only ``kind`` (read directly) is known.
    """

    store: Store
    path: str
    kind: NodeKind | None = None
    zarr_format: int | None = None
    owned: tuple[str, ...] = ()
    foreign: tuple[str, ...] = ()
    listed: bool = True
    reason: str = field(default="", compare=False)  # why the listing failed
    kept: tuple[str, ...] = ()  # Zarr nodes below that no group here holds: left alone

    @property
    def place(self) -> str:
        """The location as messages name it (a local folder by its path)."""
        if isinstance(self.store, LocalStore):
            parts = self.path.split("/") if self.path else []
            return f"folder {os.path.join(self.store.root, *parts)!r}"
        return repr(self.store) if not self.path else f"path {self.path!r} in {self.store!r}"

    def blocking(self, array: bool) -> tuple[str, ...]:
        """What refuses a new node here: anything foreign, and for an ``array`` the
        Zarr nodes no group here holds too (an array's folder holds only its chunks:
        its chunk keys could land inside theirs)."""
        return (*self.foreign, *self.kept) if array else self.foreign

    def refuse(self, *, overwrite: bool, what: str, array: bool = False) -> None:
        """Raise unless a node (an ``array`` or a group) may be created here
        (``overwrite``: replacing one).

        Raises
        ------
        ForeignContentError
            Something here is not Zarr, or, for an array, holds other Zarr nodes
            (whatever ``overwrite`` says).
        ContainsArrayError, ContainsGroupError
            A node is here and ``overwrite`` is false.
        IncompleteListingError
            ``overwrite`` is true and the store cannot list the location.
        """
        if self.blocking(array):
            raise ForeignContentError(_foreign_message(self, what, array))
        if self.kind is not None and not overwrite:
            error = ContainsArrayError if self.kind == "array" else ContainsGroupError
            raise error(f"{what}: {self.kind} already exists at path {self.path or '/'!r} in "
                        f"{self.store!r}; pass overwrite=True (or mode='w') to replace it")
        if overwrite and not self.listed:
            self._refuse_unlisted(what, "replace")

    def delete(self, *, what: str, cache: CacheLike = None) -> None:
        """Delete the Zarr keys here (what :meth:`replace` deletes); anything else
        stays.

        Raises
        ------
        IncompleteListingError
            The store cannot list the location.
        """
        if not self.listed:
            self._refuse_unlisted(what, "delete")
        self.replace({}, cache=cache)

    def _refuse_unlisted(self, what: str, action: str) -> NoReturn:
        raise IncompleteListingError(
            f"{what}: cannot {action} what is at {self.place}: the store cannot list it "
            f"({self.reason}), so what that would delete is unknown. Nothing was written "
            "or deleted; write to a new path, or delete the node with the store's own "
            "tools first")

    def replace(self, documents: Mapping[str, bytes], *, cache: CacheLike = None) -> None:
        """Delete the Zarr keys here (except those ``documents`` rewrites) and write
        ``documents`` (the new node's, and its ancestors' groups).

        Deletes chunks and job records before documents, deeper nodes' documents
        before their groups': a store that refuses to delete halfway leaves nodes
        that open. A transactional store (Icechunk) gets the new documents first when
        they replace none of the old ones, so that documents it refuses (Icechunk
        holds no Zarr v2) leave the old node whole. Call :meth:`refuse` first.
        """
        # A document rewritten in place need not go first (a zip file cannot delete);
        # Icechunk refuses to write an array's zarr.json over a group's, or the reverse.
        doomed = [key for key in self.owned if key not in documents or self.store.transactional]
        if doomed and not self.store.supports_deletes:
            raise UnsupportedOperationError(
                f"cannot replace the node at {self.place}: {self.store!r} cannot delete "
                f"keys (such as {doomed[0]!r}); write into a new store instead. Nothing "
                "was written or deleted")
        if doomed and self.store.transactional and not set(documents) & set(doomed):
            _write(self.store, self.path, documents)
            self._delete(doomed, cache)
            return
        self._delete(doomed, cache)
        _write(self.store, self.path, documents)

    def _delete(self, keys: list[str], cache: CacheLike) -> None:
        if not keys:
            return
        depth = {key: key.count("/") for key in keys}
        documents = sorted((k for k in keys if k.rpartition("/")[2] in DOCUMENTS),
                           key=lambda k: -depth[k])
        self.store.delete_many([k for k in keys if k.rpartition("/")[2] not in DOCUMENTS])
        self.store.delete_many(documents)
        forget_cached_under(self.store, documents, cache)
        _prune_folders(self.store, self.path, keys)


def inspect_location(store: Store, path: str) -> Location:
    """What ``store`` holds at the node path ``path`` (one listing of the prefix, one
    batched read of the node documents at each level of groups).

    Examples
    --------
    >>> from chunkflow.storage import MemoryStore
    >>> store = MemoryStore()
    >>> store.set_many({".zarray": b'{"zarr_format": 2, "shape": [4], "chunks": [2]}',
    ...                 "0": b"", "1": b"", "2": b"", "a/b": b""})
    >>> location = inspect_location(store, "")
    >>> location.kind, location.owned, location.foreign
    ('array', ('.zarray', '0', '1'), ('2', 'a/b'))
    """
    direct = store.get_many([join_path(path, name) for name in NODE_DOCUMENTS])
    kind, fmt = _kind_of(direct)
    try:
        keys = list(store.list_prefix(path))
    except (OSError, NotImplementedError, ChunkflowError) as err:
        return Location(store, path, kind, fmt, listed=False, reason=str(err) or type(err).__name__)
    missed = sorted(set(direct) - set(keys))
    if missed:  # documents that are there but were not listed
        return Location(store, path, kind, fmt, listed=False,
                        reason=f"its listing misses {missed[0]!r}")
    found = sort_keys(store, path, keys)
    kind, fmt = (found.top.kind, found.top.zarr_format) if found.top else (None, None)
    return Location(store, path, kind, fmt, found.owned,
                    (*_keys_in_the_way(store, path), *found.foreign), kept=found.kept)


def write_node(store: Store, path: str, documents: Mapping[str, bytes], *, zarr_format: int,
               overwrite: bool, what: str, array: bool, cache: CacheLike = None) -> None:
    """Create the node at ``path`` from its ``documents``, with a group of
    ``zarr_format`` in every ancestor that has no node: refused as
    :meth:`Location.refuse` says (or where an ancestor's group document would go onto
    something else), else what was there is replaced (:meth:`Location.replace`).

    Raises
    ------
    ForeignContentError, ContainsArrayError, ContainsGroupError, IncompleteListingError
        See :meth:`Location.refuse`; ``ContainsArrayError`` also for an ancestor that
        is an array. Nothing was written or deleted.

    Examples
    --------
    >>> from chunkflow.storage import MemoryStore
    >>> store = MemoryStore()
    >>> store["notes.txt"] = b"mine"
    >>> write_node(store, "g", {"g/.zgroup": b'{"zarr_format": 2}'}, zarr_format=2,
    ...            overwrite=True, what="create_group", array=False)
    >>> sorted(store)
    ['.zgroup', 'g/.zgroup', 'notes.txt']
    """
    location = inspect_location(store, path)
    location.refuse(overwrite=overwrite, what=what, array=array)
    ancestors = ancestor_documents(store, path, zarr_format)
    for key in ancestors:  # a folder (or prefix) where a group document would go
        below = _first_below(store, key) if location.listed else None
        if below is not None:
            raise ForeignContentError(
                f"{what}: cannot create the group {key.rpartition('/')[0] or '/'!r} above "
                f"{path!r} in {store!r}: {key!r} is a folder ({below!r} is in it). Nothing "
                "was written or deleted; choose another location, or move it away")
    location.replace({**ancestors, **documents}, cache=cache)


def refuse_foreign(store: Store, path: str, *, what: str, array: bool = False) -> Location:
    """What ``store`` holds at ``path``, refused if anything there is not Zarr (or,
    for a new ``array``, belongs to other Zarr nodes: :meth:`Location.blocking`).

    Raises
    ------
    ForeignContentError
        Something at ``path`` is not part of a Zarr node there.
    """
    location = inspect_location(store, path)
    if location.blocking(array):
        raise ForeignContentError(_foreign_message(location, what, array))
    return location


def check_location(location: StoreLike, *, what: str, array: bool, path: str | None = None,
                   storage_options: dict[str, Any] | None = None) -> None:
    """:func:`refuse_foreign` for the place a writer will create its output (a path,
    URL or store), before it plans or creates anything. A location that does not
    exist yet holds nothing.

    Examples
    --------
    >>> import os, tempfile
    >>> folder = tempfile.mkdtemp()
    >>> with open(os.path.join(folder, "notes.txt"), "w") as f:
    ...     _ = f.write("mine")
    >>> check_location(folder, what="map_chunks", array=True)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    chunkflow.errors.ForeignContentError: map_chunks: folder '...' holds 1 key that is not ...
    """
    try:
        store = make_store(location, mode="r", storage_options=storage_options)
    except FileNotFoundError:  # a zip file that does not exist yet
        return
    try:
        refuse_foreign(store, normalize_path(path), what=what, array=array)
    finally:
        if isinstance(location, (str, os.PathLike)):
            store.close()


def writable_store(store: StoreLike, path: str, *, overwrite: bool,
                   storage_options: dict[str, Any] | None = None) -> Store:
    """``store`` opened to create the node at ``path`` in (``make_store``, mode "a").

    A zip file cannot delete a member: one that holds nothing but the node replaced
    (and its ancestors' groups without attributes) is written anew (mode "w"), as
    zarr-python's mode "w" does; any other is opened to append, so that replacing a
    node in it is refused and nothing else in it is lost.
    """
    resolved = make_store(store, mode="a", storage_options=storage_options)
    if not (overwrite and isinstance(resolved, ZipStore) and opened_by_chunkflow(resolved)):
        return resolved
    if not _only_the_node(inspect_location(resolved, path)):
        return resolved
    resolved.close()
    return make_store(store, mode="w", storage_options=storage_options)


def _only_the_node(location: Location) -> bool:
    """Whether the store holds the node at ``location`` and nothing else but its
    ancestors' groups without attributes (which creating the node writes again)."""
    if location.foreign or not location.owned:
        return False
    rest = set(location.store.list_prefix("")) - set(location.owned)
    parts = location.path.split("/") if location.path else []
    ancestors = {join_path("/".join(parts[:i]), name) for i in range(len(parts))
                 for name in (ZARR_JSON, ZGROUP)}
    if not rest <= ancestors:
        return False
    found = location.store.get_many(sorted(rest))
    parsed = [parse_document(key.rpartition("/")[2], value) for key, value in found.items()]
    return all(doc is not None and not doc.get("attributes") for doc in parsed)


# ------------------------------------------------------------------ the listing


def _kind_of(found: Mapping[str, Any]) -> tuple[NodeKind | None, int | None]:
    """The node that directly read documents make, as chunkflow would open it (a
    ``zarr.json`` that does not parse is taken for an array, whose opening says what
    is wrong with it)."""
    docs = {key.rpartition("/")[2]: parse_document(key.rpartition("/")[2], value) or {}
            for key, value in found.items()}
    classified = classify_node(docs)
    return classified if classified is not None else (None, None)


def _first_below(store: Store, key: str) -> str | None:
    """A key below ``key`` (as a folder), or ``None``."""
    return next(iter(store.list_prefix(key)), None)


def _keys_in_the_way(store: Store, path: str) -> list[str]:
    """Keys at ``path`` itself or at one of its ancestors (a file where a folder would
    go; for a local store's root, the file it is); a transactional store (Icechunk)
    refuses such keys, so holds none."""
    if isinstance(store, LocalStore) and os.path.isfile(store.root):
        return [store.root]
    if not path or store.transactional:
        return []
    parts = path.split("/")
    return [key for key in ("/".join(parts[:i]) for i in range(1, len(parts) + 1))
            if key in store]


# ------------------------------------------------------------------ the changes


def _write(store: Store, path: str, documents: Mapping[str, bytes]) -> None:
    """Write ``documents``; a backend's own refusal becomes a chunkflow error."""
    if not documents:
        return
    try:
        store.set_many(dict(documents))
    except ChunkflowError:
        raise
    except Exception as err:  # noqa: BLE001 - a backend's own error type (IcechunkError...)
        reason = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        raise StoreRequestError(
            errno.EIO, f"could not write the metadata of node {path or '/'!r} into {store!r}: "
                       f"{reason}") from err


def _prune_folders(store: Store, path: str, deleted: Iterable[str]) -> None:
    """Remove the local folders below ``path`` that deleting ``deleted`` emptied
    (``os.rmdir`` removes only empty ones: nothing else can go)."""
    if not isinstance(store, LocalStore):
        return
    base = path.count("/") + 1 if path else 0
    folders: set[str] = set()
    for key in deleted:
        parts = key.split("/")[:-1]
        folders.update("/".join(parts[:i]) for i in range(base + 1, len(parts) + 1))
    for folder in sorted(folders, key=lambda f: -f.count("/")):
        try:
            os.rmdir(os.path.join(store.root, *folder.split("/")))
        except OSError:
            continue  # not empty: something else is there (or it is gone)


def _foreign_message(location: Location, what: str, array: bool) -> str:
    if isinstance(location.store, LocalStore):
        parts = location.path.split("/") if location.path else []
        target = os.path.join(location.store.root, *parts)
        if os.path.isfile(target):  # a file where the node would go: say so plainly
            return (f"{what}: {target!r} is a file, not a Zarr node. chunkflow replaces "
                    "Zarr nodes only, never other files; nothing was written or deleted. "
                    "Choose another location")
    start = len(location.path) + 1 if location.path else 0
    found = location.blocking(array)
    shown = ", ".join(repr(key[start:] or key) for key in found[:SHOWN])
    more = f" and {len(found) - SHOWN} more" if len(found) > SHOWN else ""
    foreign, kept = len(location.foreign), len(location.kept) if array else 0
    parts = [f"{foreign} {'key that is' if foreign == 1 else 'keys that are'} not part of "
             "a Zarr node there"] if foreign else []
    if kept:
        parts.append(f"{kept} {'key' if kept == 1 else 'keys'} of Zarr nodes no group there "
                     "holds (an array's folder holds only its chunks)")
    return (f"{what}: {location.place} holds {' and '.join(parts)}: {shown}{more}. "
            "chunkflow replaces Zarr nodes only, never other files; nothing was written "
            "or deleted. Choose another location, or remove them yourself")
