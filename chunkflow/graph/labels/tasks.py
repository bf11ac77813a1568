"""The tasks of a labelling graph (see :mod:`chunkflow.graph.labels.graph` for how they
connect). Each is a module-level function of small arguments, so that worker processes
can run it; the job (:class:`~chunkflow.graph.labels.plan.LabelJob`) comes first.
"""

from __future__ import annotations

from collections import defaultdict
from typing import TYPE_CHECKING, Any

import numpy as np

from chunkflow.graph.labels.merge import (
    KeyMap,
    NodeState,
    NodeUp,
    labels_down,
    labels_up,
    leaf_state,
    merge_down,
    merge_up,
)
from chunkflow.graph.labels.parts import BlockInfo, Faces
from chunkflow.graph.labels.ranks import (
    add,
    block_hist,
    face_labels,
    gather,
    label_map,
    owned_exposed,
    row_offsets,
)
from chunkflow.heap import roomy_heap

if TYPE_CHECKING:
    from chunkflow.graph.labels.output import OutputHandle
    from chunkflow.graph.labels.plan import LabelJob
    from chunkflow.graph.labels.tree import Box

__all__ = [
    "block_labels", "down", "hist", "labelled_down", "labelled_up", "offsets", "pairs", "pick",
    "scan", "sum_level", "up", "write",
]


def scan(job: LabelJob, index: tuple[int, ...]) -> tuple[Faces, BlockInfo]:
    """The first pass over one block: its faces and its info (nothing is written)."""
    with roomy_heap():  # a block's label temporaries, not mapped anew in a worker
        return job.scan(index)


def pick(pair: tuple[Any, ...], which: int) -> Any:
    return pair[which]


def pairs(job: LabelJob, index: tuple[int, ...], own: Faces,
          *others: Faces) -> dict[Box, np.ndarray]:
    """Pairs of touching parts between a block and the blocks after it, by the node of
    the merge tree where they meet."""
    found: dict[Box, list[np.ndarray]] = defaultdict(list)
    for (offset, voxels), other in zip(job.neighbours(index), others):
        near = job.pairs(own, other, offset, voxels)
        if len(near):
            neighbour = tuple(i + d for i, d in zip(index, offset))
            found[job.tree.common(index, neighbour)].append(near)
    return {box: np.concatenate(found[box]) for box in found}


def _state(half: NodeUp | BlockInfo) -> NodeState:
    return (half if isinstance(half, NodeUp) else leaf_state(half)).state


def up(job: LabelJob, box: Box, low: NodeUp | BlockInfo, high: NodeUp | BlockInfo,
       *pair_maps: dict[Box, np.ndarray]) -> NodeUp:
    """A node of the merge tree on the way up (a half is a node, or a block's info)."""
    chosen = [m[box] for m in pair_maps if box in m]
    return merge_up(job.grid, box, _state(low), _state(high), chosen)


def down(node: NodeUp, parent: KeyMap | None) -> KeyMap:
    return merge_down(node.links, parent)


def hist(job: LabelJob, index: tuple[int, ...], info: BlockInfo,
         finals: KeyMap | None) -> tuple[np.ndarray, ...]:
    return block_hist(job.grid, index, info, finals)


def _level(item: np.ndarray | tuple[np.ndarray, ...], level: int) -> np.ndarray:
    """A level's counts: ``item`` itself, or its level when it is a block's ``hist``."""
    return item[level] if isinstance(item, tuple) else item


def sum_level(level: int, *items: np.ndarray | tuple[np.ndarray, ...]) -> np.ndarray:
    return add(*(_level(item, level) for item in items))


def offsets(job: LabelJob, index: tuple[int, ...], info: BlockInfo, finals: KeyMap | None,
            counts: list[tuple[int, int]],
            *sums: np.ndarray | tuple[np.ndarray, ...]) -> tuple[np.ndarray, KeyMap]:
    """Per row of the block, the keys of other blocks smaller than the row's (``counts``:
    how many of ``sums`` are before and after sums, level by level), and the labels of
    the exposed parts the block owns."""
    before, after, start = [], [], 0
    for level, (n_before, n_after) in enumerate(counts):
        picked = [_level(item, level) for item in sums[start:start + n_before + n_after]]
        before.append(picked[:n_before])
        after.append(picked[n_before:])
        start += n_before + n_after
    rows = row_offsets(job.grid, index, before, after)
    return rows, face_labels(job.grid, index, info, finals, rows)


def _labels(half: KeyMap | tuple[np.ndarray, KeyMap]) -> KeyMap:
    return half[1] if isinstance(half, tuple) else half


def labelled_up(node: NodeUp, finals: KeyMap, *halves: KeyMap | tuple[np.ndarray, KeyMap]) -> KeyMap:
    return labels_up(node.state, finals, [_labels(h) for h in halves])


def labelled_down(finals: KeyMap, parent: KeyMap | None,
                  *halves: KeyMap | tuple[np.ndarray, KeyMap]) -> KeyMap:
    return labels_down(finals, parent, [_labels(h) for h in halves])


def block_labels(job: LabelJob, index: tuple[int, ...], info: BlockInfo,
                 finals: KeyMap | None, known: KeyMap | None,
                 rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Block ``index``'s local labels and the map from them to global labels."""
    labels, first = job.labels_again(index, info)
    owned = np.ones(info.count, bool)
    owned[info.exposed - 1] = owned_exposed(info, finals)
    mapping = label_map(first, owned, rows)
    if len(info.exposed):
        assert finals is not None and known is not None
        final = finals.lookup(info.keys, "the final keys of the block's exposed parts")
        mapping[info.exposed] = known.lookup(final, "the labels of the block's components")
    return labels, mapping


def write(job: LabelJob, index: tuple[int, ...], handle: OutputHandle, info: BlockInfo,
          finals: KeyMap | None, known: KeyMap | None,
          numbering: tuple[np.ndarray, KeyMap]) -> bool:
    """The second pass over one block: label it again, number it, write it."""
    def run() -> bool:
        labels, mapping = block_labels(job, index, info, finals, known, numbering[0])
        handle.write(job.grid.region(index), gather(mapping.astype(handle.dtype), labels))
        return True

    with roomy_heap():
        return handle.run(index, job.grid.region(index), run)
