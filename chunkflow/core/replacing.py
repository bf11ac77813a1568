"""Creating a node where the store may hold something: only Zarr nodes are replaced.

Before a writer creates a node (an array, a group) at ``path``, it looks at what the
store holds there, with one listing of the prefix (:func:`inspect_location`):

- the metadata documents (``zarr.json``, ``.zarray``, ``.zgroup``, ``.zattrs``,
  ``.zmetadata``) of the node at ``path`` and of the nodes its groups hold below it,
  the chunk keys of those arrays (keys their chunk key encoding gives on their chunk
  grid: v2 and v3, ``/`` and ``.``, shards) and chunkflow's job records beside them
  are *Zarr's*;
- everything else is *foreign*: a file, a folder no group holds, a document that is
  not one of Zarr, a key at ``path`` itself or at one of its ancestors.

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
import json
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, NoReturn

from chunkflow.core.chunk_layout import ChunkLayout, array_layout
from chunkflow.core.documents import (
    ZARR_JSON,
    ZARRAY,
    ZATTRS,
    ZGROUP,
    NodeKind,
    classify_node,
    join_path,
)
from chunkflow.core.node_records import ZMETADATA, forget_cached_under
from chunkflow.errors import (
    ChunkflowError,
    ContainsArrayError,
    ContainsGroupError,
    ForeignContentError,
    IncompleteListingError,
    StoreRequestError,
    UnsupportedOperationError,
)
from chunkflow.jobs import RECORDS_FOLDER
from chunkflow.storage import LocalStore, Store, ZipStore, make_store
from chunkflow.storage.factory import opened_by_chunkflow

if TYPE_CHECKING:
    from chunkflow.cache import CacheLike
    from chunkflow.storage import StoreLike

__all__ = ["Location", "inspect_location", "writable_store", "write_node"]

#: The documents that make a node (the others describe one that exists).
NODE_DOCUMENTS = (ZARR_JSON, ZARRAY, ZGROUP)
DOCUMENTS = frozenset((*NODE_DOCUMENTS, ZATTRS, ZMETADATA))
#: At most this many foreign keys are named in a refusal.
SHOWN = 5


@dataclass(frozen=True)
class _Node:
    """What the documents of one folder make of it."""

    kind: NodeKind  # as chunkflow opens it: v3 first, then v2
    zarr_format: int
    holds_members: bool  # a group of either format is there
    layouts: tuple[ChunkLayout, ...]  # of the arrays (of either format) there


@dataclass(frozen=True)
class Location:
    """What a store holds at ``path``: the node there, the keys of Zarr nodes
    (``owned``) and the rest (``foreign``), all full keys.

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

    @property
    def place(self) -> str:
        """The location as messages name it."""
        return repr(self.store) if not self.path else f"path {self.path!r} in {self.store!r}"

    def refuse(self, *, overwrite: bool, what: str) -> None:
        """Raise unless a node may be created here (``overwrite``: replacing one).

        Raises
        ------
        ForeignContentError
            Something here is not Zarr (whatever ``overwrite`` says).
        ContainsArrayError, ContainsGroupError
            A node is here and ``overwrite`` is false.
        IncompleteListingError
            ``overwrite`` is true and the store cannot list the location.
        """
        if self.foreign:
            raise ForeignContentError(_foreign_message(self, what))
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
        doomed = [key for key in self.owned if key not in documents]
        if doomed and not self.store.supports_deletes:
            raise UnsupportedOperationError(
                f"cannot replace the node at {self.place}: {self.store!r} cannot delete "
                f"keys (such as {doomed[0]!r}); write into a new store instead. Nothing "
                "was written or deleted")
        if doomed and self.store.transactional and not set(documents) & set(self.owned):
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
        keys = sorted(store.list_prefix(path))
    except (OSError, NotImplementedError, ChunkflowError) as err:
        return Location(store, path, kind, fmt, listed=False, reason=str(err) or type(err).__name__)
    if not set(direct) <= set(keys):  # documents that are there but were not listed
        return Location(store, path, kind, fmt, listed=False,
                        reason=f"its listing misses {sorted(set(direct) - set(keys))[0]!r}")
    start = len(path) + 1 if path else 0
    relative = [key[start:] for key in keys]
    nodes, broken = _nodes(store, path, set(relative))
    owned: list[str] = []
    foreign = _keys_in_the_way(store, path)
    for key, rel in zip(keys, relative):
        (owned if _is_zarr(rel, nodes, broken) else foreign).append(key)
    top = nodes.get("")
    kind, fmt = (top.kind, top.zarr_format) if top is not None else (None, None)
    return Location(store, path, kind, fmt, tuple(owned), tuple(foreign))


def write_node(store: Store, path: str, documents: Mapping[str, bytes],
               ancestors: Mapping[str, bytes] | None = None, *, overwrite: bool,
               what: str, cache: CacheLike = None) -> None:
    """Create the node at ``path`` from its ``documents`` (and its ``ancestors``'
    group documents): refused as :meth:`Location.refuse` says, else what was there
    is replaced (:meth:`Location.replace`).

    Examples
    --------
    >>> from chunkflow.storage import MemoryStore
    >>> store = MemoryStore()
    >>> store["notes.txt"] = b"mine"
    >>> write_node(store, "g", {"g/.zgroup": b'{"zarr_format": 2}'}, overwrite=True,
    ...            what="create_group")
    >>> sorted(store)
    ['g/.zgroup', 'notes.txt']
    """
    location = inspect_location(store, path)
    location.refuse(overwrite=overwrite, what=what)
    location.replace({**(ancestors or {}), **documents}, cache=cache)


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
    parsed = [_parse(key.rpartition("/")[2], value) for key, value in found.items()]
    return all(doc is not None and not doc.get("attributes") for doc in parsed)


# ------------------------------------------------------------------ the listing


def _kind_of(found: Mapping[str, Any]) -> tuple[NodeKind | None, int | None]:
    """The node that directly read documents make, as chunkflow would open it (a
    ``zarr.json`` that does not parse is taken for an array, whose opening says what
    is wrong with it)."""
    docs = {key.rpartition("/")[2]: _parse(key.rpartition("/")[2], value) or {}
            for key, value in found.items()}
    classified = classify_node(docs)
    return classified if classified is not None else (None, None)


def _nodes(store: Store, path: str, present: set[str]) -> tuple[dict[str, _Node], set[str]]:
    """The nodes below ``path`` by folder (relative; ``""`` is ``path``) that groups
    hold, read level by level, and the documents there that are not Zarr's."""
    candidates: dict[int, list[str]] = {}
    for rel in present:
        folder, _, name = rel.rpartition("/")
        if name in NODE_DOCUMENTS:
            candidates.setdefault(rel.count("/") if folder else 0, []).append(folder)
    nodes: dict[str, _Node] = {}
    broken: set[str] = set()
    for depth in sorted(candidates):
        folders = sorted({f for f in candidates[depth]
                          if f == "" or _held(nodes.get(f.rpartition("/")[0]))})
        wanted = [join_path(f, n) for f in folders for n in NODE_DOCUMENTS
                  if join_path(f, n) in present]
        found = store.get_many([join_path(path, rel) for rel in wanted])
        start = len(path) + 1 if path else 0
        by_folder: dict[str, dict[str, Any]] = {f: {} for f in folders}
        for key, value in found.items():
            folder, _, name = key[start:].rpartition("/")
            parsed = _parse(name, value)
            if parsed is None:
                broken.add(join_path(folder, name))
            else:
                by_folder[folder][name] = parsed
        for folder, docs in by_folder.items():
            node = _node(docs)
            if node is not None:
                nodes[folder] = node
    return nodes, broken


def _held(node: _Node | None) -> bool:
    return node is not None and node.holds_members


def _parse(name: str, value: Any) -> dict[str, Any] | None:
    """A node document as a JSON object of its format, or ``None`` (not Zarr's)."""
    try:
        doc = json.loads(bytes(value).decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        return None
    if not isinstance(doc, dict):
        return None
    fmt = doc.get("zarr_format")
    if name == ZARR_JSON:
        if fmt != 3 or doc.get("node_type") not in ("array", "group"):
            return None
        if doc["node_type"] == "array" and array_layout(doc, 3) is None:
            return None
        return doc
    if fmt != 2 or (name == ZARRAY and array_layout(doc, 2) is None):
        return None
    return doc


def _node(docs: Mapping[str, dict[str, Any]]) -> _Node | None:
    """The node that parsed documents (by name) make, or ``None``."""
    classified = classify_node(docs)
    if classified is None:
        return None
    v3, v2_array = docs.get(ZARR_JSON), docs.get(ZARRAY)
    v3_array = v3 is not None and v3.get("node_type") == "array"
    layouts = tuple(layout for layout in (array_layout(v3, 3) if v3_array else None,
                                          array_layout(v2_array, 2)) if layout is not None)
    holds_members = (v3 is not None and not v3_array) or ZGROUP in docs
    return _Node(classified[0], classified[1], holds_members, layouts)


def _is_zarr(rel: str, nodes: Mapping[str, _Node], broken: set[str]) -> bool:
    """Whether the key ``rel`` (relative to the location) is a Zarr node's."""
    if rel in broken:
        return False
    parts = rel.split("/")
    for cut in range(len(parts) - 1, -1, -1):  # the deepest node folder above it
        folder = "/".join(parts[:cut])
        node = nodes.get(folder)
        if node is None and folder:
            continue
        rest = parts[cut:]
        if len(rest) == 1 and rest[0] in DOCUMENTS:
            return True
        if len(rest) > 1 and rest[0] == RECORDS_FOLDER:
            return True
        if node is None:
            return False
        key = "/".join(rest)
        return any(layout.holds(key) for layout in node.layouts)
    return False


def _keys_in_the_way(store: Store, path: str) -> list[str]:
    """Keys at ``path`` itself or at one of its ancestors (a file where a folder would
    go); a transactional store (Icechunk) refuses such keys, so holds none."""
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


def _foreign_message(location: Location, what: str) -> str:
    start = len(location.path) + 1 if location.path else 0
    count = len(location.foreign)
    shown = ", ".join(repr(key[start:] or key) for key in location.foreign[:SHOWN])
    more = f" and {count - SHOWN} more" if count > SHOWN else ""
    noun = "key that is" if count == 1 else "keys that are"
    return (f"{what}: {location.place} holds {count} {noun} not part of a Zarr node "
            f"there: {shown}{more}. chunkflow replaces Zarr nodes only, never other "
            "files; nothing was written or deleted. Choose another location, or remove "
            "them yourself")
