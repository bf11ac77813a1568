"""The merge tree: halves that partition their node, leaves that are the blocks, and
the node where two blocks meet."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from chunkflow.graph.labels.tree import Box, MergeTree


def _volume(box: Box) -> int:
    return int(np.prod([hi - lo for lo, hi in zip(*box)]))


def _inside(block: tuple[int, ...], box: Box) -> bool:
    return all(lo <= i < hi for i, lo, hi in zip(block, *box))


@pytest.mark.parametrize("numblocks", [(1,), (2,), (5,), (3, 2), (1, 7), (4, 4), (7, 9),
                                       (3, 3, 3), (2, 1, 5), (5, 3, 2, 2)])
def test_nodes_partition_the_grid_and_meet_where_blocks_part(numblocks: tuple[int, ...]) -> None:
    tree = MergeTree(numblocks)
    blocks = [tuple(int(i) for i in index) for index in np.ndindex(*numblocks)]
    leaves = sorted(box[0] for box in tree.walk() if not tree.children(box))
    assert leaves == blocks
    order = {node: k for k, node in enumerate(tree.nodes)}
    for node in tree.nodes:
        low, high = tree.children(node)
        assert _volume(low) + _volume(high) == _volume(node) and _volume(low) > 0 < _volume(high)
        assert all(order[half] < order[node] for half in (low, high) if half in order)
        assert tree.parents[low] == tree.parents[high] == node
    for first, second in itertools.permutations(blocks, 2):
        common = tree.common(first, second)
        assert common in order and _inside(first, common) and _inside(second, common)
        assert not any(_inside(first, half) and _inside(second, half)
                       for half in tree.children(common))


def test_halves_split_the_longest_axis_first() -> None:
    tree = MergeTree((8, 2))
    assert tree.children(tree.root) == (((0, 0), (4, 2)), ((4, 0), (8, 2)))
