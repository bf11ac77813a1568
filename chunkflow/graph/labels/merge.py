"""The global merge: unions of exposed parts up the merge tree, final keys down it.

Going up (:func:`merge_up`), a node joins its two halves' *open* components (those
with a part on the half's outer faces) by the pairs of parts that touch across the
plane between the halves, and keeps only what can still meet a block outside it: the
parts on its own outer faces, each with its component (named by its smallest key so
far). Components with no part left there are whole: their key is final. A node hands
its parent a :class:`NodeState` and keeps :class:`Links` (each half's components to
its own) for the way down.

Going down (:func:`merge_down`), each node turns its halves' components into their
final keys: its own closed components' keys, or what its parent says of its open ones.
The numbering passes labels the same way (:func:`labels_up`, :func:`labels_down`).
No node ever holds more than the components that cross its halves' faces.

Examples
--------
>>> from chunkflow.graph.labels.geometry import BlockGrid
>>> grid = BlockGrid((2, 4), (2, 2))  # two blocks side by side
>>> left = NodeState(np.array([1]), np.array([8], np.uint16), np.array([1]))
>>> right = NodeState(np.array([2, 6]), np.array([4, 4], np.uint16), np.array([2, 6]))
>>> up = merge_up(grid, ((0, 0), (1, 2)), left, right, [np.array([[1, 2]])])
>>> len(up.state.members), up.links.old.tolist(), up.links.new.tolist()
(0, [1, 2, 6], [1, 1, 6])
>>> merge_down(up.links, None).values.tolist()
[1, 1, 6]
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from chunkflow.errors import InternalError
from chunkflow.graph.labels.geometry import BlockGrid
from chunkflow.graph.labels.parts import BlockInfo
from chunkflow.graph.labels.tree import Box

__all__ = ["KeyMap", "Links", "NodeState", "NodeUp", "exposed_at", "labels_down",
           "labels_up", "leaf_state", "merge_down", "merge_up"]


@dataclass(frozen=True)
class KeyMap:
    """Sorted ``keys`` and a value for each."""

    keys: np.ndarray
    values: np.ndarray

    @classmethod
    def empty(cls) -> KeyMap:
        return cls(np.zeros(0, np.int64), np.zeros(0, np.int64))

    @classmethod
    def union(cls, maps: Sequence[KeyMap | None]) -> KeyMap:
        """All entries of ``maps`` (a key in several has one value in all)."""
        present = [m for m in maps if m is not None and len(m.keys)]
        if not present:
            return cls.empty()
        keys = np.concatenate([m.keys for m in present])
        values = np.concatenate([m.values for m in present])
        keys, first = np.unique(keys, return_index=True)
        return cls(keys, values[first])

    def lookup(self, keys: np.ndarray, what: str) -> np.ndarray:
        """The values of ``keys``, all of which must be present."""
        pos = np.searchsorted(self.keys, keys)
        pos = np.minimum(pos, max(0, len(self.keys) - 1))
        if len(keys) and (not len(self.keys) or not np.array_equal(self.keys[pos], keys)):
            missing = keys[self.keys[pos] != keys] if len(self.keys) else keys
            raise InternalError(f"label merge: {what} has no entry for keys "
                                f"{missing[:5].tolist()}")
        return self.values[pos]

    def restrict(self, keys: np.ndarray) -> KeyMap:
        """The entries of ``keys`` that are present."""
        pos = np.minimum(np.searchsorted(self.keys, keys), max(0, len(self.keys) - 1))
        hit = self.keys[pos] == keys if len(self.keys) else np.zeros(len(keys), bool)
        chosen = np.unique(pos[hit])
        return KeyMap(self.keys[chosen], self.values[chosen])


@dataclass(frozen=True)
class NodeState:
    """A node's exposed parts (keys, ascending), their face masks and components."""

    members: np.ndarray
    masks: np.ndarray
    comps: np.ndarray

    @property
    def open(self) -> np.ndarray:
        """The node's open components (their keys so far), ascending."""
        return np.unique(self.comps)


@dataclass(frozen=True)
class Links:
    """The halves' components (``old``, ascending) and the node's (``new``) for each."""

    old: np.ndarray
    new: np.ndarray


@dataclass(frozen=True)
class NodeUp:
    """What the way up leaves at a node: its state (for its parent) and its links."""

    state: NodeState
    links: Links


def leaf_state(info: BlockInfo) -> NodeUp:
    """A block as a node: each exposed part is a component of its own."""
    state = NodeState(info.keys, info.masks, info.keys)
    return NodeUp(state, Links(info.keys, info.keys))


def exposed_at(grid: BlockGrid, box: Box, members: np.ndarray, masks: np.ndarray) -> np.ndarray:
    """Which parts touch a face of ``box`` that another block lies behind."""
    exposed = np.zeros(len(members), bool)
    if not len(members):
        return exposed
    blocks = grid.blocks_of(members)
    lo, hi = box
    for axis, n in enumerate(grid.numblocks):
        if lo[axis] > 0:
            exposed |= (blocks[:, axis] == lo[axis]) & ((masks & (1 << 2 * axis)) != 0)
        if hi[axis] < n:
            exposed |= (blocks[:, axis] == hi[axis] - 1) & ((masks & (2 << 2 * axis)) != 0)
    return exposed


def merge_up(grid: BlockGrid, box: Box, low: NodeState, high: NodeState,
             pairs: Sequence[np.ndarray]) -> NodeUp:
    """Join two halves' open components by the ``pairs`` of parts that touch."""
    # Imported here, not at the top: scipy.sparse.csgraph pulls in scipy.sparse.linalg
    # (~85 ms, ~10 MiB), which every ``chunkflow.map_chunks`` would otherwise pay.
    from scipy.sparse import coo_matrix
    from scipy.sparse.csgraph import connected_components

    members = np.concatenate([low.members, high.members])
    order = np.argsort(members, kind="stable")
    members = members[order]
    masks = np.concatenate([low.masks, high.masks])[order]
    comps = np.concatenate([low.comps, high.comps])[order]
    old = np.unique(comps)
    edges = np.concatenate([np.zeros((0, 2), np.int64), *pairs]) if pairs else \
        np.zeros((0, 2), np.int64)
    ends = [np.searchsorted(old, comps[np.searchsorted(members, edges[:, k])]) for k in (0, 1)]
    graph = coo_matrix((np.ones(len(edges), np.int8), (ends[0], ends[1])),
                       shape=(len(old), len(old)))
    _, group = connected_components(graph, directed=False)
    # ``old`` ascends: each group's first entry is its smallest key, the group's name.
    _, first = np.unique(group, return_index=True)
    new = old[first][group]
    comps = new[np.searchsorted(old, comps)]
    keep = exposed_at(grid, box, members, masks)
    return NodeUp(NodeState(members[keep], masks[keep], comps[keep]), Links(old, new))


def merge_down(links: Links, parent: KeyMap | None) -> KeyMap:
    """The final key of each of the halves' components (``parent``: the final keys of
    this node's open components; ``None`` at the root, where every one is closed)."""
    final = links.new.copy()
    if parent is not None and len(parent.keys):
        pos = np.minimum(np.searchsorted(parent.keys, final), len(parent.keys) - 1)
        hit = parent.keys[pos] == final
        final[hit] = parent.values[pos[hit]]
    return KeyMap(links.old, final)


def labels_up(state: NodeState, finals: KeyMap, halves: Sequence[KeyMap]) -> KeyMap:
    """The labels (by final key) the halves found for this node's open components
    whose first part lies inside it (``finals``: the parent's final keys)."""
    wanted = finals.lookup(state.open, "the parent's final keys")
    return KeyMap.union(halves).restrict(np.unique(wanted))


def labels_down(finals: KeyMap, parent: KeyMap | None, halves: Sequence[KeyMap]) -> KeyMap:
    """The label of the final key of every component of the halves."""
    known = KeyMap.union([parent, *halves])
    wanted = np.unique(finals.values)
    return KeyMap(wanted, known.lookup(wanted, "the labels known at this node"))
