"""Recently used basic selections of one array handle, with their chunk projections.

A viewer or a tiling loop reads the same windows again and again, from a warm cache,
where a read costs microseconds: building the indexer (clipping each slice, splitting
it over the chunks it crosses) was a third of such a read (8.6 of 25 µs for a 256^2
window over 4 chunks). The plan of a selection depends on the selection and the chunk
grid only, so a handle keeps its last few small plans.
"""

from __future__ import annotations

import numbers
import threading
from collections.abc import Iterable

from chunkflow.grid import RegularChunkGrid
from chunkflow.indexing.predicates import Selection
from chunkflow.indexing.selections import BasicIndexer, ChunkProjection

__all__ = ["BasicPlans", "KeptProjections", "selection_key"]

#: Plans kept per handle, and the most chunks a kept plan may cover (a large read
#: costs far more than its plan, and its projections would take memory).
PLANS_KEPT = 16
MAX_PLAN_CHUNKS = 64


def selection_key(selection: Selection) -> tuple[object, ...] | None:
    """A hashable form of a basic selection of integers, slices and ``...``, or
    ``None`` for anything else (arrays, lists: planned afresh each time).

    Examples
    --------
    >>> selection_key((slice(2, 8), 3, Ellipsis))
    ((2, 8, None), 3, Ellipsis)
    >>> selection_key(slice(None)), selection_key(([1, 2],)) is None
    (((None, None, None),), True)
    """
    entries = selection if isinstance(selection, tuple) else (selection,)
    key: list[object] = []
    for entry in entries:
        kind = type(entry)
        if isinstance(entry, slice):
            parts = (entry.start, entry.stop, entry.step)
            # Exact types first: an isinstance check against numbers.Integral (an ABC)
            # costs as much as the rest of a cached read's planning.
            for part in parts:
                if part is not None and type(part) is not int \
                        and not isinstance(part, numbers.Integral):
                    return None
            key.append(parts)
        elif kind is int or entry is Ellipsis or (
                isinstance(entry, numbers.Integral) and kind is not bool):
            key.append(entry)
        else:
            return None
    return tuple(key)


class KeptProjections(list[ChunkProjection]):
    """The projections of a kept plan, with a slot where the layer that reads them
    keeps what it derives from them once (the chunks' store and cache keys), so that
    reading the same window again derives nothing.

    ``derived`` is ``None`` until set; whoever sets it stores its own identity with it
    and checks it before use (another handle's keys are not this one's). ``stamp`` is
    the same layer's record of the cache's state after the last read that the cache
    served wholly (see :meth:`chunkflow.cache.ChunkCache.lookup_stamped`).

    Examples
    --------
    >>> kept = KeptProjections([])
    >>> kept.derived is None, kept.stamp is None
    (True, True)
    """

    __slots__ = ("derived", "stamp")

    def __init__(self, projections: Iterable[ChunkProjection]) -> None:
        super().__init__(projections)
        self.derived: object = None
        self.stamp: int | None = None


class BasicPlans:
    """The indexers and projections of the last :data:`PLANS_KEPT` small basic
    selections read through one handle, for its current chunk grid.

    Examples
    --------
    >>> grid = RegularChunkGrid((100, 100), (10, 10))
    >>> plans = BasicPlans()
    >>> indexer, projections = plans.get((slice(5, 15), slice(0, 10)), grid)
    >>> len(projections), plans.get((slice(5, 15), slice(0, 10)), grid)[1] is projections
    (2, True)
    """

    def __init__(self) -> None:
        self._plans: dict[object, tuple[RegularChunkGrid, BasicIndexer,
                                        list[ChunkProjection]]] = {}
        self._lock = threading.Lock()

    def kept(self, selection: Selection,
             grid: RegularChunkGrid) -> tuple[BasicIndexer, list[ChunkProjection]] | None:
        """The kept plan of ``selection`` on ``grid``, if there is one (nothing is
        planned here: the fast path of a window read again).

        Examples
        --------
        >>> grid = RegularChunkGrid((100,), (10,))
        >>> plans = BasicPlans()
        >>> plans.kept(slice(5, 15), grid) is None
        True
        >>> _ = plans.get(slice(5, 15), grid)
        >>> len(plans.kept(slice(5, 15), grid)[1])
        2
        """
        key = selection_key(selection)
        kept = None if key is None else self._plans.get(key)
        if kept is None or kept[0] is not grid:
            return None
        return kept[1], kept[2]

    def get(self, selection: Selection,
            grid: RegularChunkGrid) -> tuple[BasicIndexer, list[ChunkProjection]]:
        """The indexer of ``selection`` on ``grid`` and its projections (a list that
        callers must not change)."""
        key = selection_key(selection)
        if key is not None:
            kept = self._plans.get(key)
            if kept is not None and kept[0] is grid:  # a resize makes a new grid
                return kept[1], kept[2]
        indexer = BasicIndexer(selection, grid)
        projections: list[ChunkProjection] = list(indexer)
        if key is not None and len(projections) <= MAX_PLAN_CHUNKS:
            projections = KeptProjections(projections)
            with self._lock:
                self._plans.pop(key, None)
                self._plans[key] = (grid, indexer, projections)
                while len(self._plans) > PLANS_KEPT:
                    del self._plans[next(iter(self._plans))]  # the oldest
        return indexer, projections
