"""shard_geometry.unit_step_parts against BasicIndexer, the general indexer."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from chunkflow.engine.shard_geometry import unit_step_parts
from chunkflow.grid import RegularChunkGrid
from chunkflow.indexing import BasicIndexer


@st.composite
def shards_and_slices(draw):  # type: ignore[no-untyped-def]
    ndim = draw(st.integers(1, 3))
    inner = tuple(draw(st.integers(1, 5)) for _ in range(ndim))
    grid = tuple(draw(st.integers(1, 4)) for _ in range(ndim))
    selection = []
    for size, count in zip(inner, grid):
        start = draw(st.integers(0, size * count - 1))
        stop = draw(st.integers(start + 1, size * count))
        selection.append(slice(start, stop, draw(st.sampled_from([None, 1]))))
    return inner, grid, tuple(selection)


@settings(max_examples=300, deadline=None)
@given(shards_and_slices())
def test_unit_step_parts_are_the_basic_indexers(case) -> None:  # type: ignore[no-untyped-def]
    inner, grid, selection = case
    shard = tuple(i * g for i, g in zip(inner, grid))
    expected = [(int(np.ravel_multi_index(p.chunk_coords, grid)), p)
                for p in BasicIndexer(selection, RegularChunkGrid(shard, inner))]
    assert list(unit_step_parts(selection, inner, grid)) == expected


def test_other_selections_are_left_to_the_indexer() -> None:
    for selection in [(slice(0, 8, 2),), (3,), (np.array([1, 2]),), (slice(None, 4),),
                      (slice(2, 2),), (slice(0, 9),)]:
        assert unit_step_parts(selection, (4,), (2,)) is None
