"""The merge tree: a binary tree of boxes of blocks, split along one axis at a time.

The block grid is halved again and again (the axis with the most blocks left first,
at power-of-two boundaries, as a Morton code interleaves bits), so that two merged
groups meet on the smallest interface the grid allows. A *node* is a box of blocks,
named by its bounds ``(lo, hi)`` (``hi`` exclusive); a leaf is one block. Halving at
power-of-two boundaries makes the lowest common node of two blocks (where the pairs
between them are merged) arithmetic: the first split at which their block indices
differ.

Examples
--------
>>> tree = MergeTree((3, 2))
>>> tree.root
((0, 0), (3, 2))
>>> tree.children(tree.root)
(((0, 0), (2, 2)), ((2, 0), (3, 2)))
>>> tree.common((0, 0), (0, 1)), tree.common((1, 1), (2, 0))
(((0, 0), (1, 2)), ((0, 0), (3, 2)))
"""

from __future__ import annotations

from collections.abc import Iterator
from functools import cached_property

__all__ = ["Box", "MergeTree"]

#: A node: the lowest and one past the highest block index per axis.
Box = tuple[tuple[int, ...], tuple[int, ...]]


class MergeTree:
    """The merge tree over a grid of ``numblocks`` blocks."""

    def __init__(self, numblocks: tuple[int, ...]) -> None:
        self.numblocks = tuple(int(n) for n in numblocks)
        self.bits = tuple((n - 1).bit_length() for n in self.numblocks)
        left = list(self.bits)
        self.order: list[int] = []  # the axis split at each depth
        while any(left):
            axis = max(range(len(left)), key=lambda a: (left[a], -a))
            self.order.append(axis)
            left[axis] -= 1
        # steps[axis][j]: the depth of the j-th split along axis.
        self.steps: list[list[int]] = [[] for _ in self.numblocks]
        for depth, axis in enumerate(self.order):
            self.steps[axis].append(depth)
        # spans[depth][axis]: the blocks along axis of a node at that depth (unclipped).
        self.spans = [tuple(1 << (bits - sum(1 for d in steps if d < depth))
                            for bits, steps in zip(self.bits, self.steps))
                      for depth in range(len(self.order) + 1)]

    @property
    def root(self) -> Box:
        return (tuple(0 for _ in self.numblocks), self.numblocks)

    def _box_at(self, index: tuple[int, ...], depth: int) -> Box:
        lo = tuple((i // span) * span for i, span in zip(index, self.spans[depth]))
        return lo, tuple(min(start + span, n)
                         for start, span, n in zip(lo, self.spans[depth], self.numblocks))

    def common(self, first: tuple[int, ...], second: tuple[int, ...]) -> Box:
        """The smallest node holding both blocks (where pairs between them merge)."""
        depth = len(self.order)
        for axis, (a, b, bits) in enumerate(zip(first, second, self.bits)):
            shared = bits - (a ^ b).bit_length()  # leading bits the two indices share
            if shared < bits:
                depth = min(depth, self.steps[axis][shared])
        return self._box_at(first, depth)

    @cached_property
    def _halves(self) -> dict[Box, tuple[Box, Box]]:
        """Every node's two halves, found in one walk from the root (a node keeps its
        box until a split divides it: a split past the grid's edge divides nothing)."""
        halves: dict[Box, tuple[Box, Box]] = {}
        stack = [(self.root, 0)]
        while stack:
            box, depth = stack.pop()
            lo, hi = box
            while depth < len(self.order):
                axis = self.order[depth]
                middle = lo[axis] + self.spans[depth][axis] // 2
                depth += 1
                if middle < hi[axis]:
                    low = (lo, tuple(middle if a == axis else h for a, h in enumerate(hi)))
                    high = (tuple(middle if a == axis else v for a, v in enumerate(lo)), hi)
                    halves[box] = (low, high)
                    stack += [(low, depth), (high, depth)]
                    break
        return halves

    def children(self, box: Box) -> tuple[Box, ...]:
        """The two halves of ``box`` (``()`` for a leaf, a single block)."""
        return self._halves.get(box, ())

    @cached_property
    def nodes(self) -> list[Box]:
        """Every node that merges two halves, children before parents."""
        found: list[Box] = []
        stack: list[tuple[Box, bool]] = [(self.root, False)]
        while stack:
            box, expanded = stack.pop()
            halves = self.children(box)
            if not halves:
                continue
            if expanded:
                found.append(box)
            else:
                stack += [(box, True), *((half, False) for half in reversed(halves))]
        return found

    @cached_property
    def parents(self) -> dict[Box, Box]:
        """Each node's parent (the root has none)."""
        return {child: node for node, halves in self._halves.items() for child in halves}

    def leaf(self, index: tuple[int, ...]) -> Box:
        return tuple(index), tuple(i + 1 for i in index)

    def walk(self) -> Iterator[Box]:
        """Every node, leaves included, parents before children."""
        stack = [self.root]
        while stack:
            box = stack.pop()
            yield box
            stack.extend(self.children(box))
