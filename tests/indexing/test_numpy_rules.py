"""NumpyIndexer against numpy: every index kind, read and written through the chunk
projections of a simulated chunked copy (edge chunks padded), and the plans it picks."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from chunkflow.errors import InvalidSelectionError
from chunkflow.grid import RegularChunkGrid
from chunkflow.indexing import NumpyIndexer, OrthogonalIndexer, PointsIndexer
from chunkflow.indexing.numpy_rules import index_entry
from tests.helpers.chunk_simulation import check_against_numpy
from tests.helpers.numpy_selections import chunked_shapes, numpy_selections

PROPERTIES = settings(max_examples=400, deadline=None)
HEAVY = settings(max_examples=1000, deadline=None)


@st.composite
def cases(draw: st.DrawFn) -> tuple[RegularChunkGrid, Any]:
    shape, chunks = draw(chunked_shapes())
    return RegularChunkGrid(shape, chunks), draw(numpy_selections(shape))


def check(grid: RegularChunkGrid, selection: Any) -> None:
    try:
        np.empty(grid.shape)[selection]
    except IndexError:
        with pytest.raises(IndexError):
            NumpyIndexer(selection, grid)
        return
    indexer = NumpyIndexer(selection, grid)

    def assign(a: np.ndarray, v: np.ndarray) -> None:
        a[selection] = v

    check_against_numpy(indexer, grid, lambda a: a[selection], assign)


@PROPERTIES
@given(cases())
def test_numpy_selections(case: tuple[RegularChunkGrid, Any]) -> None:
    check(*case)


@pytest.mark.slow
@HEAVY
@given(cases())
def test_numpy_selections_heavy(case: tuple[RegularChunkGrid, Any]) -> None:
    check(*case)


GRID = RegularChunkGrid((5, 5, 5), (2, 2, 2))


@pytest.mark.parametrize(("selection", "plan", "shape"), [
    ((slice(1, 4), 2), None, (3, 5)),  # basic
    (([4, 0, 1], slice(None)), OrthogonalIndexer, (3, 5, 5)),
    ((1, [0, 3], 2), OrthogonalIndexer, (2,)),  # adjacent: the block stays in place
    (([0, 3], slice(None), 2), OrthogonalIndexer, (2, 5)),  # first anyway
    ((2, slice(None), [0, 3]), PointsIndexer, (2, 5)),  # separated: the block goes first
    (([1, 2], [3, 4]), PointsIndexer, (2, 5)),
    ((np.eye(5, dtype=bool), 0), PointsIndexer, (5,)),
    ((slice(None), [[0, 1], [2, 3]]), OrthogonalIndexer, (5, 2, 2, 5)),
    ((slice(None), [0, 1], None, 4), PointsIndexer, (2, 5, 1)),  # a None separates
    ((slice(None), [0], ..., [1]), PointsIndexer, (1, 5)),  # so does a "..." of nothing
])
def test_plans(selection: Any, plan: type | None, shape: tuple[int, ...]) -> None:
    indexer = NumpyIndexer(selection, GRID)
    assert indexer.result_shape == shape == np.empty(GRID.shape)[selection].shape
    if plan is None:
        assert type(indexer.plan).__name__ == "BasicIndexer"
    else:
        assert isinstance(indexer.plan, plan)


def test_index_entries() -> None:
    assert index_entry(np.int16(-2)) == -2 and type(index_entry(np.int16(-2))) is int
    assert index_entry(np.array(3)) == 3
    assert index_entry((1, 2)).tolist() == [1, 2]
    assert index_entry([[True], [False]]).dtype == bool
    assert index_entry(np.bool_(True)).ndim == 0 and index_entry(False).dtype == bool
    for bad, match in [(1.0, "valid indices"), ("a", "valid indices"), ([1.5], "integer"),
                       ([[1], [2, 3]], "valid indices")]:
        with pytest.raises(InvalidSelectionError, match=match):
            index_entry(bad)


def test_whole_chunks_decode_in_place() -> None:
    # A sorted run of indices covering chunks plans them as complete chunks.
    indexer = NumpyIndexer((np.arange(2, 5), slice(None), 0), GRID)
    complete = [p.chunk_coords for p in indexer if p.is_complete_chunk]
    assert complete == []  # the integer drops an axis: never complete
    indexer = NumpyIndexer((np.arange(2, 5),), GRID)
    assert sum(p.is_complete_chunk for p in indexer) == 2 * 3 * 3
