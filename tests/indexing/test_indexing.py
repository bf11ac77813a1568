"""Tests for chunkflow.indexing: every indexer against numpy, read and write, via a
simulated chunked copy (a dict of full-chunk-shaped chunks, edges padded)."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from chunkflow.errors import BoundsCheckError, InvalidSelectionError
from chunkflow.grid import RegularChunkGrid
from chunkflow.indexing import (
    BasicIndexer,
    ChunkProjection,
    CoordinateIndexer,
    MaskIndexer,
    OrthogonalIndexer,
    is_basic_selection,
    is_coordinate_selection,
    is_mask_selection,
)
from tests.helpers.chunk_simulation import check_against_numpy, local_region

FAST = settings(max_examples=200, deadline=None)


# --------------------------------------------------------------------------- strategies


@st.composite
def grids(draw: st.DrawFn, max_ndim: int = 3, max_size: int = 10) -> RegularChunkGrid:
    ndim = draw(st.integers(0, max_ndim))
    shape = tuple(draw(st.integers(0, max_size)) for _ in range(ndim))
    chunks = tuple(draw(st.integers(1, 5)) for _ in range(ndim))
    return RegularChunkGrid(shape, chunks)


def slices(size: int) -> st.SearchStrategy[slice]:
    bound = st.none() | st.integers(-size - 3, size + 3)
    step = st.none() | st.integers(-5, 5).filter(bool)
    return st.builds(slice, bound, bound, step)


def ints(size: int) -> st.SearchStrategy[Any]:
    return st.integers(-size, size - 1).flatmap(
        lambda i: st.sampled_from([i, np.int64(i), np.uint8(i) if i >= 0 else np.int16(i)])
    )


@st.composite
def arrange(draw: st.DrawFn, entries: list, allow_bare: bool = True) -> Any:
    """Drop trailing entries or replace a middle run with ``...``; maybe un-tuple."""
    n = len(entries)
    style = draw(st.sampled_from(["full", "trailing", "ellipsis"]))
    if style == "trailing":
        sel = tuple(entries[: draw(st.integers(0, n))])
    elif style == "ellipsis":
        k = draw(st.integers(0, n))
        j = draw(st.integers(k, n))
        sel = (*entries[:k], ..., *entries[j:])
    else:
        sel = tuple(entries)
    if allow_bare and len(sel) == 1 and draw(st.booleans()):
        return sel[0]
    return sel


@st.composite
def basic_cases(draw: st.DrawFn) -> tuple[RegularChunkGrid, Any]:
    grid = draw(grids())
    entries = [draw(slices(s) | ints(s)) if s else draw(slices(s)) for s in grid.shape]
    return grid, draw(arrange(entries))


@st.composite
def orthogonal_entry(draw: st.DrawFn, size: int) -> Any:
    options = [slices(size), st.lists(st.booleans(), min_size=size, max_size=size)]
    if size:
        options += [ints(size), st.lists(st.integers(-size, size - 1), max_size=7)]
    else:
        options.append(st.just([]))
    entry = draw(st.one_of(options))
    if isinstance(entry, list) and draw(st.booleans()):
        entry = np.asarray(entry, dtype=bool if entry and isinstance(entry[0], bool) else np.intp)
    return entry


@st.composite
def orthogonal_cases(draw: st.DrawFn) -> tuple[RegularChunkGrid, Any]:
    grid = draw(grids())
    entries = [draw(orthogonal_entry(s)) for s in grid.shape]
    return grid, draw(arrange(entries, allow_bare=False))


def ix_reference(sel: Any, shape: tuple[int, ...]) -> tuple[tuple, tuple[int, ...]]:
    """numpy's np.ix_ equivalent of an orthogonal selection, and its output shape."""
    sel = sel if isinstance(sel, tuple) else (sel,)
    if any(s is Ellipsis for s in sel):
        at = next(i for i, s in enumerate(sel) if s is Ellipsis)
        sel = sel[:at] + (slice(None),) * (len(shape) - len(sel) + 1) + sel[at + 1:]
    sel = sel + (slice(None),) * (len(shape) - len(sel))
    axes, out_shape = [], []
    for s, size in zip(sel, shape):
        if isinstance(s, slice):
            axis = np.arange(size)[s]
        elif isinstance(s, (int, np.integer)):
            axis = np.array([s], dtype=np.intp)
        else:
            arr = np.asarray(s)
            axis = np.flatnonzero(arr) if arr.dtype == bool else arr.astype(np.intp)
        axes.append(axis)
        if not isinstance(s, (int, np.integer)):
            out_shape.append(axis.size)
    return np.ix_(*axes), tuple(out_shape)


@st.composite
def coordinate_cases(draw: st.DrawFn) -> tuple[RegularChunkGrid, Any]:
    grid = draw(grids())
    if not grid.shape:
        return grid, ()
    if 0 in grid.shape:  # no valid point: every array must be empty
        return grid, tuple(np.zeros(0, dtype=np.intp) for _ in grid.shape)
    shapes = draw(hnp.mutually_broadcastable_shapes(num_shapes=grid.ndim, max_dims=3, max_side=4))
    sel = []
    for shape, size in zip(shapes.input_shapes, grid.shape):
        arr = draw(hnp.arrays(np.int64, shape, elements=st.integers(-size, size - 1)))
        kind = draw(st.sampled_from(["array", "list", "scalar"]))
        sel.append(int(arr) if kind == "scalar" and arr.ndim == 0 else
                   arr.tolist() if kind == "list" and arr.ndim else arr)
    return grid, tuple(sel) if len(sel) > 1 or draw(st.booleans()) else sel[0]


# --------------------------------------------------------------------------- properties


@FAST
@given(basic_cases())
def test_basic_matches_numpy(case: tuple[RegularChunkGrid, Any]) -> None:
    grid, sel = case
    indexer = BasicIndexer(sel, grid)

    def assign(a: np.ndarray, v: np.ndarray) -> None:
        a[sel] = v

    check_against_numpy(indexer, grid, lambda a: a[sel], assign)
    assert indexer.sel_shape == indexer.shape == np.empty(grid.shape)[sel].shape
    # With unit-step slices only, "complete" must be exactly "covers the chunk".
    full = sel if isinstance(sel, tuple) else (sel,)
    if all(isinstance(s, slice) and s.step in (None, 1) or s is Ellipsis for s in full):
        assert indexer.drop_axes == ()
        ids = np.arange(math.prod(grid.chunks)).reshape(grid.chunks)
        for p in indexer:
            covered = ids[p.chunk_selection].size == ids[local_region(grid, p.chunk_coords)].size
            assert p.is_complete_chunk == covered


@FAST
@given(orthogonal_cases())
def test_orthogonal_matches_numpy(case: tuple[RegularChunkGrid, Any]) -> None:
    grid, sel = case
    ix, out_shape = ix_reference(sel, grid.shape)
    indexer = OrthogonalIndexer(sel, grid)

    def assign(a: np.ndarray, v: np.ndarray) -> None:
        a[ix] = v.reshape(a[ix].shape)

    check_against_numpy(indexer, grid, lambda a: a[ix].reshape(out_shape), assign)
    assert indexer.shape == indexer.sel_shape == out_shape


@FAST
@given(coordinate_cases())
def test_coordinate_matches_numpy(case: tuple[RegularChunkGrid, Any]) -> None:
    grid, sel = case
    indexer = CoordinateIndexer(sel, grid)
    key = tuple(np.asarray(s) for s in sel) if isinstance(sel, tuple) else np.asarray(sel)

    def assign(a: np.ndarray, v: np.ndarray) -> None:
        a[key] = v

    check_against_numpy(indexer, grid, lambda a: a[key], assign)
    assert indexer.shape == (math.prod(indexer.sel_shape),)
    assert not any(p.is_complete_chunk for p in indexer)


@FAST
@given(grids().flatmap(lambda g: st.tuples(st.just(g), hnp.arrays(bool, g.shape))))
def test_mask_matches_numpy(case: tuple[RegularChunkGrid, np.ndarray]) -> None:
    grid, mask = case
    indexer = MaskIndexer(mask, grid)

    def assign(a: np.ndarray, v: np.ndarray) -> None:
        a[mask] = v

    check_against_numpy(indexer, grid, lambda a: a[mask], assign)
    assert indexer.shape == indexer.sel_shape == (int(mask.sum()),)
    assert MaskIndexer((mask,), grid).nchunks == indexer.nchunks


# --------------------------------------------------------------------------- specifics


@pytest.mark.parametrize(
    "sel",
    [slice(None), slice(3, 450), slice(-301, -2), (slice(1, 399), [5, 1, 5, 398]),
     (slice(None, None, -1), 3), (slice(2, None, 3), slice(None, None, -7))],
)
def test_many_chunks_per_dimension(sel: Any) -> None:
    # More than 64 chunks along an axis takes the vectorized slice path.
    grid = RegularChunkGrid((401, 400), (3, 5))
    ix, out_shape = ix_reference(sel, grid.shape)

    def assign(a: np.ndarray, v: np.ndarray) -> None:
        a[ix] = v.reshape(a[ix].shape)

    check_against_numpy(OrthogonalIndexer(sel, grid), grid, lambda a: a[ix].reshape(out_shape),
                        assign)


def test_full_read_is_complete_including_edges() -> None:
    grid = RegularChunkGrid((10, 7), (4, 4))
    projections = list(BasicIndexer(..., grid))
    assert len(projections) == 6
    assert all(p.is_complete_chunk for p in projections)
    edge = projections[-1]
    assert edge.chunk_coords == (2, 1)
    assert edge.chunk_selection == (slice(0, 2), slice(0, 3))
    assert edge.out_selection == (slice(8, 10), slice(4, 7))


@pytest.mark.parametrize(
    ("sel", "complete"),
    [
        (slice(0, 8), [True, True]),
        (slice(0, 9), [True, True, False]),
        (slice(1, 10), [False, True, True]),
        (slice(None, None, 2), [False, False, False]),
        (slice(None, None, -1), [False, False, False]),
        (5, [False]),
        (slice(4, 100), [True, True]),
    ],
)
def test_is_complete_chunk_1d(sel: Any, complete: list[bool]) -> None:
    grid = RegularChunkGrid((10,), (4,))
    assert [p.is_complete_chunk for p in BasicIndexer(sel, grid)] == complete


def test_orthogonal_contiguous_arrays_become_slices() -> None:
    grid = RegularChunkGrid((10, 4), (4, 4))
    projections = list(OrthogonalIndexer((np.arange(10), [0, 1, 2, 3]), grid))
    assert [p.is_complete_chunk for p in projections] == [True, True, True]
    assert projections[2].chunk_selection == (slice(0, 2), slice(0, 4))
    reordered = list(OrthogonalIndexer(([3, 2, 1, 0], slice(None)), grid))
    assert not reordered[0].is_complete_chunk
    bools = list(OrthogonalIndexer((np.arange(10) < 8, slice(None)), grid))
    assert [p.is_complete_chunk for p in bools] == [True, True]


def test_negative_steps_and_orders() -> None:
    grid = RegularChunkGrid((10,), (4,))
    projections = list(BasicIndexer(slice(8, 0, -3), grid))  # 8, 5, 2
    assert [p.chunk_coords for p in projections] == [(2,), (1,), (0,)]
    assert [p.out_selection for p in projections] == [(slice(0, 1),), (slice(1, 2),),
                                                       (slice(2, 3),)]
    projections = list(BasicIndexer(slice(None, None, -1), grid))
    assert projections[-1].chunk_selection == (slice(3, None, -1),)


def test_zero_d() -> None:
    grid = RegularChunkGrid((), ())
    for sel in ((), ...):
        [p] = BasicIndexer(sel, grid)
        assert p == ChunkProjection((), (), (), True)
        assert OrthogonalIndexer(sel, grid).shape == ()
    for sel in (0, slice(None), (0,)):
        with pytest.raises(InvalidSelectionError, match="too many indices"):
            BasicIndexer(sel, grid)
    assert CoordinateIndexer((), grid).sel_shape == ()
    assert MaskIndexer(np.array(False), grid).nchunks == 0


def test_selection_forms() -> None:
    grid = RegularChunkGrid((6, 5, 4), (2, 2, 2))
    assert BasicIndexer(1, grid).shape == (5, 4)
    assert BasicIndexer((..., 1), grid).shape == (6, 5)
    assert BasicIndexer((1, ..., 1), grid).drop_axes == (0, 2)
    assert BasicIndexer((slice(None), ..., slice(1, 2)), grid).shape == (6, 5, 1)
    assert BasicIndexer((np.int8(-1), np.array(2)), grid).shape == (4,)
    idx = OrthogonalIndexer(([0, 5], 1, [True, False, True, True]), grid)
    assert idx.shape == (2, 3) and idx.drop_axes == (1,)
    proj = list(idx)
    assert list(proj) == list(idx)  # iterable more than once


def test_large_arrays_cost_only_touched_chunks() -> None:
    big = 10**12
    grid = RegularChunkGrid((big, big), (1000, 1000))
    idx = BasicIndexer((5, slice(10**11, 10**11 + 5000)), grid)
    assert idx.nchunks == 5 and idx.shape == (5000,)
    strided = BasicIndexer((slice(None, None, 10**9), 0), grid)
    assert strided.nchunks == 1000 and len(list(strided)) == 1000
    # A grid with more chunks than int64 can rank.
    huge = RegularChunkGrid((2**40, 2**40), (1, 1))
    points = CoordinateIndexer(([2**39, 0, 2**39], [1, 7, 1]), huge)
    assert [p.chunk_coords for p in points] == [(0, 7), (2**39, 1)]
    assert [p.out_selection[0].tolist() for p in points] == [[1], [0, 2]]


def test_coordinate_visits_each_chunk_once_in_grid_order() -> None:
    grid = RegularChunkGrid((8, 8), (4, 4))
    rows = np.array([7, 0, 5, 1, 6, 2])
    cols = np.array([7, 0, 1, 6, 7, 1])
    coords = [p.chunk_coords for p in CoordinateIndexer((rows, cols), grid)]
    assert coords == [(0, 0), (0, 1), (1, 0), (1, 1)]
    sorted_points = CoordinateIndexer(([0, 1, 5], [0, 1, 5]), grid)
    assert [p.out_selection for p in sorted_points] == [(slice(0, 2),), (slice(2, 3),)]


# --------------------------------------------------------------------------- errors

GRID = RegularChunkGrid((10, 6), (4, 4))


@pytest.mark.parametrize(
    ("make", "match"),
    [
        (lambda: BasicIndexer(10, GRID), r"index 10 .*dimension 0 .*size 10.*\(10, 6\)"),
        (lambda: BasicIndexer((0, -7), GRID), r"index -7 .*dimension 1 .*\(10, 6\)"),
        (lambda: OrthogonalIndexer(([0, 10],), GRID), r"index 10 .*dimension 0"),
        (lambda: OrthogonalIndexer((slice(None), np.array([-7], np.int8)), GRID), "-7"),
        (lambda: OrthogonalIndexer((np.array([2**63], np.uint64),), GRID), "dimension 0"),
        (lambda: CoordinateIndexer(([0, 1], [6, 0]), GRID), r"index 6 .*dimension 1"),
        (lambda: CoordinateIndexer((0, [-11]), GRID), r"index -11 .*dimension 1"),
    ],
)
def test_bounds_errors(make: Callable[[], Any], match: str) -> None:
    with pytest.raises(BoundsCheckError, match=match) as info:
        make()
    assert isinstance(info.value, IndexError)


@pytest.mark.parametrize(
    ("make", "match"),
    [
        (lambda: BasicIndexer(1.0, GRID), "1.0"),
        (lambda: BasicIndexer((0, True), GRID), "True"),
        (lambda: BasicIndexer(None, GRID), "newaxis"),
        (lambda: BasicIndexer((0, None), GRID), "newaxis"),
        (lambda: BasicIndexer((0, 0, 0), GRID), r"too many indices.*\(10, 6\)"),
        (lambda: BasicIndexer((..., 0, ...), GRID), "more than one Ellipsis"),
        (lambda: BasicIndexer(slice(None, None, 0), GRID), "step cannot be zero"),
        (lambda: BasicIndexer(slice(0.5, 3), GRID), "integers or None"),
        (lambda: BasicIndexer([0, 1], GRID), "oindex"),
        (lambda: BasicIndexer(np.array([0, 1]), GRID), "oindex"),
        (lambda: OrthogonalIndexer(np.ones(9, dtype=bool), GRID), r"length 10.*\(9,\)"),
        (lambda: OrthogonalIndexer(np.ones((10, 6), dtype=bool), GRID), "1-d"),
        (lambda: OrthogonalIndexer(np.zeros((2, 2), dtype=int), GRID), "1-d"),
        (lambda: OrthogonalIndexer(np.array([0.5]), GRID), "float64"),
        (lambda: OrthogonalIndexer((0, "a"), GRID), "'a'"),
        (lambda: OrthogonalIndexer((0, None), GRID), "newaxis"),
        (lambda: OrthogonalIndexer((0, 0, 0), GRID), "too many"),
        (lambda: CoordinateIndexer(([0, 1],), GRID), "one integer array per dimension"),
        (lambda: CoordinateIndexer(([0, 1], [0, 1, 2]), GRID), "broadcast"),
        (lambda: CoordinateIndexer((slice(None), [0]), GRID), "integers or integer arrays"),
        (lambda: CoordinateIndexer(([0.0], [0]), GRID), "float64"),
        (lambda: CoordinateIndexer(([True], [0]), GRID), "mask"),
        (lambda: MaskIndexer(np.ones((10, 5), dtype=bool), GRID), r"\(10, 6\)"),
        (lambda: MaskIndexer(np.ones((10, 6), dtype=int), GRID), "boolean"),
        (lambda: MaskIndexer((np.ones(10, bool), np.ones(6, bool)), GRID), "one boolean"),
    ],
)
def test_invalid_selections(make: Callable[[], Any], match: str) -> None:
    with pytest.raises(InvalidSelectionError, match=match) as info:
        make()
    assert isinstance(info.value, IndexError)


# --------------------------------------------------------------------------- predicates


def test_predicates() -> None:
    assert is_basic_selection(1)
    assert is_basic_selection((1, slice(2), ...))
    assert is_basic_selection(())
    assert is_basic_selection(np.int64(3))
    assert not is_basic_selection((1, [2]))
    assert not is_basic_selection(np.array([1]))
    assert not is_basic_selection(None)
    assert not is_basic_selection(True)
    assert not is_basic_selection(1.5)

    assert is_coordinate_selection(([0, 1], [1, 2]), 2)
    assert is_coordinate_selection((np.array([[0]]), 3), 2)
    assert is_coordinate_selection(np.array([0, 1]), 1)
    assert is_coordinate_selection(([], []), 2)
    assert not is_coordinate_selection(([0, 1],), 2)
    assert not is_coordinate_selection(([0, 1], slice(None)), 2)
    assert not is_coordinate_selection(([0.5], [1]), 2)
    assert not is_coordinate_selection(([True], [1]), 2)

    assert is_mask_selection(np.ones((2, 3), dtype=bool), 2)
    assert is_mask_selection((np.ones((2, 3), dtype=bool),), 2)
    assert is_mask_selection([True, False], 1)
    assert not is_mask_selection(np.ones(3, dtype=bool), 2)
    assert not is_mask_selection((np.ones(2, bool), np.ones(3, bool)), 2)
    assert not is_mask_selection(np.ones((2, 3), dtype=int), 2)
    assert not is_mask_selection(slice(None), 1)
