"""Folders where a user's files and Zarr nodes live side by side, for the writers'
promise: ``overwrite`` replaces Zarr nodes only, never anything else.

:func:`folder_trees` draws a :class:`FolderTree`: files at random paths and depths
(some named like chunk keys, ``c/0/0``, ``0.0``, or like metadata documents, with bytes
that are not Zarr), and Zarr nodes (arrays of either format, ``/`` and ``.`` chunk keys,
sharded; groups of either format, nested) in plain folders, in groups and at the root.
It knows which node a file belongs to and which nodes a group holds, so a test can say
without chunkflow what a writer at a location may replace (:meth:`FolderTree.replaceable`)
and whether it must refuse (:meth:`FolderTree.foreign_below`).

Examples
--------
>>> import tempfile
>>> from pathlib import Path
>>> from hypothesis import given, settings
>>> @settings(max_examples=5, database=None)
... @given(folder_trees())
... def test_written(tree):
...     with tempfile.TemporaryDirectory() as tmp:
...         tree.write(Path(tmp))
...         assert all((Path(tmp) / name).is_file() for name in tree.files)
>>> test_written()
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from hypothesis import strategies as st

__all__ = ["FolderTree", "NodeSpec", "folder_trees", "tree_locations"]

#: Names of files and folders: plain words, chunk-key look-alikes, document names.
NAMES = ("a", "b", "data", "notes.txt", "c", "0", "1", "0.0", "x.zarr", "zarr.json",
         ".zattrs", ".zgroup", ".zarray")
DOCUMENT_NAMES = frozenset(("zarr.json", ".zattrs", ".zgroup", ".zarray"))
#: How arrays name their chunks: creation keywords of chunkflow.create_array.
LAYOUTS: tuple[dict[str, Any], ...] = (
    {"zarr_format": 2},
    {"zarr_format": 2, "chunk_key_encoding": {"name": "v2", "separator": "/"}},
    {"zarr_format": 3},
    {"zarr_format": 3, "chunk_key_encoding": {"name": "default", "separator": "."}},
    {"zarr_format": 3, "chunk_key_encoding": {"name": "v2", "separator": "."}},
    {"zarr_format": 3, "shards": (4, 2)},
)


@dataclass(frozen=True)
class NodeSpec:
    """A Zarr node at ``path`` (relative to the tree's root; ``""`` is the root)."""

    path: str
    kind: str  # "array" or "group"
    layout: dict[str, Any] = field(default_factory=dict)
    data: np.ndarray | None = None

    def create(self, root: Path) -> None:
        """Write the node, as its own store at its folder (nothing above it changes)."""
        from chunkflow.api import create_array, open_group

        where = str(root / self.path) if self.path else str(root)
        if self.kind == "group":
            open_group(where, mode="w-", zarr_format=self.layout["zarr_format"],
                       attributes={"group": self.path})
            return
        assert self.data is not None
        create_array(where, data=self.data, chunks=(2, 2), **self.layout,
                     attributes={"array": self.path})


@dataclass(frozen=True)
class FolderTree:
    """A user's files (``files``: path to bytes) and Zarr nodes (``nodes``, in the
    order they are made), none inside an array's folder."""

    files: dict[str, bytes]
    nodes: tuple[NodeSpec, ...]

    def write(self, root: Path) -> None:
        """Create the nodes, then the files, below the folder ``root``."""
        root.mkdir(parents=True, exist_ok=True)
        for node in self.nodes:
            node.create(root)
        for name, data in self.files.items():
            (root / name).parent.mkdir(parents=True, exist_ok=True)
            (root / name).write_bytes(data)

    @property
    def node_paths(self) -> dict[str, NodeSpec]:
        return {node.path: node for node in self.nodes}

    def held(self, location: str) -> set[str]:
        """The nodes a writer at ``location`` replaces: the node there and those its
        groups hold (a node whose parent folder is a held group), recursively."""
        nodes = self.node_paths
        held = {location} if location in nodes else set()
        for path in sorted(nodes, key=lambda p: p.count("/")):
            parent = path.rpartition("/")[0] if "/" in path else ""
            if path and path != location and parent in held and nodes[parent].kind == "group":
                held.add(path)
        return held

    def replaceable(self, location: str, names: list[str]) -> set[str]:
        """Which of ``names`` (files below the root, as found on disk) a writer at
        ``location`` may change or delete: those whose deepest node is held there."""
        held = self.held(location)
        nodes = self.node_paths
        out = set()
        for name in names:
            if name in self.files:
                continue  # a user's file: never
            parts = name.split("/")
            owner = next(("/".join(parts[:i]) for i in range(len(parts) - 1, -1, -1)
                          if "/".join(parts[:i]) in nodes), None)
            if owner is not None and owner in held:
                out.add(name)
        return out

    def kept_below(self, location: str) -> bool:
        """Whether a node below ``location`` is one its groups do not hold (in a plain
        folder): Zarr that replacing leaves alone, and no place for an array."""
        held = self.held(location)
        return any(path not in held and (location == "" or path.startswith(location + "/"))
                   for path in self.node_paths if path != location)

    def foreign_below(self, location: str) -> bool:
        """Whether a user's file is at ``location``, above it or below it."""
        for name in self.files:
            if location == "" or name == location or name.startswith(location + "/") \
                    or location.startswith(name + "/"):
                return True
        return False

    def folders(self) -> set[str]:
        """Every folder below the root that the files and nodes make."""
        found: set[str] = set()
        for name in [*self.files, *(n.path for n in self.nodes if n.path)]:
            parts = name.split("/")
            top = len(parts) if name not in self.files else len(parts) - 1
            found.update("/".join(parts[:i]) for i in range(1, top + 1))
        return found

    def in_an_array(self, path: str) -> bool:
        """Whether ``path`` lies inside (below) an array's folder."""
        return any(node.kind == "array" and (node.path == "" or path.startswith(node.path + "/"))
                   for node in self.nodes if path != node.path)


@st.composite
def folder_trees(draw: st.DrawFn, max_items: int = 8) -> FolderTree:
    """A :class:`FolderTree`: a root that is a plain folder, a group, or (rarely) an
    array, with up to ``max_items`` files and nodes below it."""
    nodes: list[NodeSpec] = []
    files: dict[str, bytes] = {}
    root = draw(st.sampled_from(["plain", "plain", "group", "group", "array"]))
    if root != "plain":
        nodes.append(_node(draw, "", root))
    tree = FolderTree(files, tuple(nodes))
    if root == "array":
        return tree
    for _ in range(draw(st.integers(0, max_items))):
        tree = FolderTree(files, tuple(nodes))
        parent = draw(st.sampled_from(sorted({""} | {f for f in tree.folders()
                                                     if not tree.in_an_array(f + "/x")
                                                     and f not in tree.files
                                                     and not _is_array(tree, f)})))
        depth = draw(st.integers(1, 2))
        rel = "/".join(draw(st.sampled_from(NAMES)) for _ in range(depth))
        path = f"{parent}/{rel}" if parent else rel
        if not _free(tree, path):
            continue
        what = draw(st.sampled_from(["file", "file", "array", "group"]))
        if what == "file":
            files[path] = b"user:" + draw(st.binary(max_size=16))
        elif not DOCUMENT_NAMES & set(path.split("/")):
            nodes.append(_node(draw, path, what))
    return FolderTree(files, tuple(nodes))


def _is_array(tree: FolderTree, path: str) -> bool:
    node = tree.node_paths.get(path)
    return node is not None and node.kind == "array"


def _free(tree: FolderTree, path: str) -> bool:
    """Whether a file or a node can go at ``path``: nothing is there, no file is above
    it, it is not inside an array's folder, and no name of a metadata document sits
    in a node's folder (the node's own documents are there)."""
    if path in tree.files or path in tree.folders() or path in tree.node_paths:
        return False
    parts = path.split("/")
    if any("/".join(parts[:i]) in tree.files for i in range(1, len(parts))):
        return False
    nodes = tree.node_paths
    if any(parts[i] in DOCUMENT_NAMES and "/".join(parts[:i]) in nodes
           for i in range(len(parts))):
        return False
    return not tree.in_an_array(path)


def _node(draw: st.DrawFn, path: str, kind: str) -> NodeSpec:
    if kind == "group":
        return NodeSpec(path, "group", {"zarr_format": draw(st.sampled_from([2, 3]))})
    layout = draw(st.sampled_from(LAYOUTS))
    shape = (draw(st.integers(1, 5)), draw(st.integers(1, 4)))
    data = np.arange(1, 1 + shape[0] * shape[1], dtype="i2").reshape(shape)
    return NodeSpec(path, "array", layout, data)


@st.composite
def tree_locations(draw: st.DrawFn, tree: FolderTree) -> str:
    """Where a writer goes in ``tree``: the root, a node, a folder, a file, or a new
    path; never inside an array's folder."""
    known = sorted({""} | tree.folders() | set(tree.files) | set(tree.node_paths))
    known = [p for p in known if not tree.in_an_array(p)]
    place = draw(st.sampled_from(known))
    if draw(st.booleans()) and place not in tree.files and not _is_array(tree, place):
        return f"{place}/new" if place else "new"
    return place
