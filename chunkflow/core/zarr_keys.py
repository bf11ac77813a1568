"""Which keys below a location are Zarr's: node documents, chunks, job records.

:mod:`chunkflow.core.replacing` sorts the keys it lists below a node path before it
creates a node there (:func:`sort_keys`):

- *owned*: the documents (``zarr.json``, ``.zarray``, ``.zgroup``, ``.zattrs``,
  ``.zmetadata``) of the node at the path and of the nodes its groups hold below it,
  the chunk keys of those arrays (keys their chunk key encoding gives on their chunk
  grid: v2 and v3, ``/`` and ``.``, shards), and chunkflow's job records beside them
  (the job folder, and an array's list of the chunks its last job stored);
  replacing the node deletes these;
- *kept*: the same keys of Zarr nodes below the path that no group there holds (an
  array in a plain folder below it); they are Zarr, and left alone;
- *foreign*: everything else (a file, a folder with no node above it, a document that
  is not valid Zarr, a file inside an array's folder that is not a chunk).

An array's chunk keys are read from its raw document (shape, chunk grid, chunk key
encoding), so an array chunkflow cannot open (a codec it does not know) still has its
chunks recognized.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from chunkflow.core.documents import ZARR_JSON, ZARRAY, ZATTRS, ZGROUP, NodeKind, classify_node, join_path
from chunkflow.core.node_records import ZMETADATA
from chunkflow.errors import MetadataError
from chunkflow.grid import ChunkKeyEncoding, ceil_div
from chunkflow.jobs import RECORDS_FOLDER, WRITTEN_KEY
from chunkflow.storage import Store

__all__ = ["DOCUMENTS", "NODE_DOCUMENTS", "ChunkLayout", "SortedKeys", "array_layout",
           "node_of", "parse_document", "sort_keys"]

#: The documents that make a node (the others describe one that exists).
NODE_DOCUMENTS = (ZARR_JSON, ZARRAY, ZGROUP)
DOCUMENTS = frozenset((*NODE_DOCUMENTS, ZATTRS, ZMETADATA))


@dataclass(frozen=True)
class ChunkLayout:
    """The chunk keys of an array: its encoding and its grid of stored chunks (shards,
    if sharded). ``grid`` is ``None`` for a chunk grid other than the regular one:
    then any key of ``ndim`` coordinates is taken.

    Examples
    --------
    >>> layout = ChunkLayout(ChunkKeyEncoding("default", "/"), (2, 3), 2)
    >>> layout.holds("c/1/2"), layout.holds("c/2/0"), layout.holds("c/1"), layout.holds("1.2")
    (True, False, False, False)
    """

    encoding: ChunkKeyEncoding
    grid: tuple[int, ...] | None
    ndim: int

    def holds(self, key: str) -> bool:
        """Whether ``key`` (relative to the array) is the key of one of its chunks."""
        coords = self.encoding.decode(key, self.ndim)
        if coords is None:
            return False
        return self.grid is None or all(c < n for c, n in zip(coords, self.grid))


def array_layout(doc: Mapping[str, Any] | None, zarr_format: int) -> ChunkLayout | None:
    """The :class:`ChunkLayout` of an array document (``.zarray`` or an array's
    ``zarr.json``), or ``None`` when the document does not say it.

    Examples
    --------
    >>> array_layout({"shape": [5, 4], "chunks": [2, 4], "dimension_separator": "/"}, 2)
    ChunkLayout(encoding=ChunkKeyEncoding(name='v2', separator='/'), grid=(3, 1), ndim=2)
    >>> array_layout({"shape": [5], "chunk_grid": {"name": "regular", "configuration":
    ...     {"chunk_shape": [2]}}, "chunk_key_encoding": {"name": "default"}}, 3).grid
    (3,)
    >>> array_layout({"shape": "5"}, 3) is None
    True
    """
    if not isinstance(doc, Mapping):
        return None
    shape = _ints(doc.get("shape"))
    if shape is None:
        return None
    encoding: ChunkKeyEncoding | None
    try:
        if zarr_format == 2:
            chunks = _ints(doc.get("chunks"))
            separator = doc.get("dimension_separator") or "."
            encoding = ChunkKeyEncoding("v2", separator)
        else:
            chunks = _regular_chunks(doc.get("chunk_grid"))
            encoding = _v3_encoding(doc.get("chunk_key_encoding"))
    except MetadataError:
        return None
    if encoding is None:
        return None
    if chunks is None:
        return ChunkLayout(encoding, None, len(shape)) if zarr_format == 3 else None
    if len(chunks) != len(shape) or any(c < 1 for c in chunks):
        return None
    return ChunkLayout(encoding, tuple(ceil_div(s, c) for s, c in zip(shape, chunks)), len(shape))


def _ints(value: Any) -> tuple[int, ...] | None:
    if not isinstance(value, list):
        return None
    if not all(isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in value):
        return None
    return tuple(value)


def _regular_chunks(grid: Any) -> tuple[int, ...] | None:
    """The chunk shape of a regular grid; ``None`` for another grid."""
    if not isinstance(grid, Mapping) or grid.get("name") != "regular":
        return None
    configuration = grid.get("configuration")
    return _ints(configuration.get("chunk_shape")) if isinstance(configuration, Mapping) else None


def _v3_encoding(document: Any) -> ChunkKeyEncoding | None:
    """A v3 ``chunk_key_encoding``; the separator defaults to ``/`` (default) or ``.``
    (v2) when ``configuration`` leaves it out."""
    if not isinstance(document, Mapping):
        return None
    name = document.get("name")
    if name not in ("default", "v2"):
        return None
    configuration = document.get("configuration")
    separator = configuration.get("separator") if isinstance(configuration, Mapping) else None
    return ChunkKeyEncoding(name, separator or ("/" if name == "default" else "."))


# ------------------------------------------------------------------ nodes and keys


@dataclass(frozen=True)
class NodeInfo:
    """What the documents of one folder make of it."""

    kind: NodeKind  # as chunkflow opens it: v3 first, then v2
    zarr_format: int
    holds_members: bool  # a group of either format is there
    layouts: tuple[ChunkLayout, ...]  # of the arrays (of either format) there


@dataclass(frozen=True)
class SortedKeys:
    """The keys below a location, sorted (full keys), and the node at the location."""

    owned: tuple[str, ...]
    kept: tuple[str, ...]
    foreign: tuple[str, ...]
    top: NodeInfo | None


def parse_document(name: str, value: Any) -> dict[str, Any] | None:
    """A document (``zarr.json``, ``.zarray``, ``.zgroup`` of its format; ``.zattrs``,
    ``.zmetadata``: a JSON object) parsed, or ``None`` when it is none (then it is not
    Zarr's: a user's file of that name).

    Examples
    --------
    >>> parse_document(".zgroup", b'{"zarr_format": 2}')
    {'zarr_format': 2}
    >>> parse_document("zarr.json", b'{"zarr_format": 3}') is None  # no node_type
    True
    """
    try:
        doc = json.loads(bytes(value).decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        return None
    if not isinstance(doc, dict):
        return None
    if name in (ZATTRS, ZMETADATA):  # attributes, consolidated metadata: any object
        return doc
    fmt = doc.get("zarr_format")
    if name == ZARR_JSON:
        if fmt != 3 or doc.get("node_type") not in ("array", "group"):
            return None
        return doc if doc["node_type"] == "group" or array_layout(doc, 3) else None
    if fmt != 2 or (name == ZARRAY and array_layout(doc, 2) is None):
        return None
    return doc


def node_of(docs: Mapping[str, dict[str, Any]]) -> NodeInfo | None:
    """The node that parsed documents (by name) make, or ``None``.

    Examples
    --------
    >>> node_of({".zgroup": {"zarr_format": 2}}).kind
    'group'
    """
    classified = classify_node(docs)
    if classified is None:
        return None
    v3, v2_array = docs.get(ZARR_JSON), docs.get(ZARRAY)
    v3_array = v3 is not None and v3.get("node_type") == "array"
    layouts = tuple(layout for layout in (array_layout(v3, 3) if v3_array else None,
                                          array_layout(v2_array, 2)) if layout is not None)
    holds_members = (v3 is not None and not v3_array) or ZGROUP in docs
    return NodeInfo(classified[0], classified[1], holds_members, layouts)


def sort_keys(store: Store, path: str, keys: Iterable[str]) -> SortedKeys:
    """Sort ``keys`` (every key below ``path``, as listed) into owned, kept and
    foreign (see the module documentation); reads every node document among them
    in one batch.

    Examples
    --------
    >>> from chunkflow.storage import MemoryStore
    >>> store = MemoryStore()
    >>> store.set_many({"g/.zgroup": b'{"zarr_format": 2}', "g/notes.txt": b"",
    ...                 "g/sub/a/.zarray": b'{"zarr_format": 2, "shape": [2], "chunks": [2]}',
    ...                 "g/sub/a/0": b""})
    >>> keys = sort_keys(store, "g", store.list_prefix("g"))
    >>> keys.owned, keys.kept, keys.foreign
    (('g/.zgroup',), ('g/sub/a/.zarray', 'g/sub/a/0'), ('g/notes.txt',))
    """
    keys = sorted(keys)
    start = len(path) + 1 if path else 0
    relative = [key[start:] for key in keys]
    nodes, broken = _nodes(store, path, relative)
    held = _held_folders(nodes)
    owned: list[str] = []
    kept: list[str] = []
    foreign: list[str] = []
    for key, rel in zip(keys, relative):
        folder = _owner(rel, nodes, broken)
        if folder is None:
            foreign.append(key)
        else:
            (owned if folder in held else kept).append(key)
    return SortedKeys(tuple(owned), tuple(kept), tuple(foreign), nodes.get(""))


def _nodes(store: Store, path: str, relative: list[str]) -> tuple[dict[str, NodeInfo], set[str]]:
    """Every node below ``path`` by folder (relative; ``""`` is ``path``) and the
    documents that are not Zarr's, from one batched read of every document listed."""
    wanted = [rel for rel in relative if rel.rpartition("/")[2] in DOCUMENTS]
    start = len(path) + 1 if path else 0
    found = store.get_many([join_path(path, rel) for rel in wanted])
    by_folder: dict[str, dict[str, Any]] = {}
    broken: set[str] = set()
    for key, value in found.items():
        folder, _, name = key[start:].rpartition("/")
        parsed = parse_document(name, value)
        if parsed is None:
            broken.add(key[start:])
        else:
            by_folder.setdefault(folder, {})[name] = parsed
    nodes = {folder: node for folder, docs in by_folder.items()
             if (node := node_of({n: d for n, d in docs.items() if n in NODE_DOCUMENTS}))}
    return nodes, broken


def _held_folders(nodes: Mapping[str, NodeInfo]) -> set[str]:
    """The location (``""``) and the node folders its groups hold, level by level."""
    held = {""}
    for folder in sorted(nodes, key=lambda f: f.count("/")):
        parent = folder.rpartition("/")[0]
        if folder and parent in held and parent in nodes and nodes[parent].holds_members:
            held.add(folder)
    return held


def _owner(rel: str, nodes: Mapping[str, NodeInfo], broken: set[str]) -> str | None:
    """The folder of the node whose key ``rel`` is (``""``: the location's, also
    without a node there), or ``None`` when it is no node's."""
    if rel in broken:
        return None
    parts = rel.split("/")
    for cut in range(len(parts) - 1, -1, -1):  # the deepest node folder above it
        folder = "/".join(parts[:cut])
        node = nodes.get(folder)
        if node is None and folder:
            continue
        rest = parts[cut:]
        if (len(rest) == 1 and rest[0] in DOCUMENTS) or (len(rest) > 1 and rest[0] == RECORDS_FOLDER):
            return folder
        if rest == [WRITTEN_KEY] and node is not None and node.layouts:  # what a job stored
            return folder
        if node is not None and any(layout.holds("/".join(rest)) for layout in node.layouts):
            return folder
        return None
    return None
