"""Reads and writes checked against numpy with hypothesis, on every store backend."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import chunkflow

# A zip file cannot replace a member; the store appends and warns, which is expected here.
pytestmark = [pytest.mark.filterwarnings("ignore:.*appends a newer member:UserWarning"),
              pytest.mark.lowest_deps]

SETTINGS = settings(
    max_examples=20,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)

DTYPES = ["u1", "i2", "<u2", ">i4", "<f4", ">f8", "c8", "?"]


@st.composite
def arrays_and_chunks(draw: st.DrawFn) -> tuple[np.ndarray, tuple[int, ...], int]:
    ndim = draw(st.integers(0, 3))
    shape = tuple(draw(st.lists(st.integers(0, 9), min_size=ndim, max_size=ndim)))
    chunks = tuple(draw(st.lists(st.integers(1, 5), min_size=ndim, max_size=ndim)))
    dtype = np.dtype(draw(st.sampled_from(DTYPES)))
    seed = draw(st.integers(0, 2**16))
    data = np.random.default_rng(seed).integers(0, 100, size=shape).astype(dtype)
    zarr_format = draw(st.sampled_from([2, 3]))
    return data, chunks, zarr_format


@st.composite
def basic_selections(draw: st.DrawFn, shape: tuple[int, ...]) -> tuple:
    selection = []
    for size in shape:
        kind = draw(st.sampled_from(["int", "slice", "full"] if size else ["slice", "full"]))
        if kind == "int":
            selection.append(draw(st.integers(-size, size - 1)))
        elif kind == "slice":
            start = draw(st.none() | st.integers(-size - 2, size + 2))
            stop = draw(st.none() | st.integers(-size - 2, size + 2))
            step = draw(st.none() | st.integers(1, 4) | st.integers(-4, -1))
            selection.append(slice(start, stop, step))
        else:
            selection.append(slice(None))
    if draw(st.booleans()) and selection:
        selection = selection[: draw(st.integers(0, len(selection)))] + [Ellipsis]
    return tuple(selection)


@st.composite
def orthogonal_selections(draw: st.DrawFn, shape: tuple[int, ...]) -> tuple:
    selection = []
    for size in shape:
        kind = draw(st.sampled_from(["ints", "bools", "slice"] if size else ["slice", "bools"]))
        if kind == "ints":
            selection.append(np.array(draw(st.lists(st.integers(-size, size - 1), max_size=6)),
                                      dtype=np.intp))
        elif kind == "bools":
            selection.append(np.array(draw(st.lists(st.booleans(), min_size=size,
                                                    max_size=size)), dtype=bool))
        else:
            selection.append(slice(draw(st.none() | st.integers(0, size)), None,
                                   draw(st.integers(1, 3))))
    return tuple(selection)


def _create(make_store, data: np.ndarray, chunks: tuple[int, ...], zarr_format: int):
    z = chunkflow.create(data.shape, chunks=chunks, dtype=data.dtype, store=make_store(),
                         zarr_format=zarr_format, fill_value=0)
    z[...] = data
    return z


@SETTINGS
@given(case=arrays_and_chunks(), data=st.data())
def test_basic_read_and_write_match_numpy(make_store, case, data) -> None:
    expected, chunks, zarr_format = case
    z = _create(make_store, expected, chunks, zarr_format)
    np.testing.assert_array_equal(z[...], expected)

    selection = data.draw(basic_selections(expected.shape))
    np.testing.assert_array_equal(z[selection], expected[selection])

    value = np.random.default_rng(1).integers(100, 200, size=expected[selection].shape)
    expected = expected.copy()
    expected[selection] = value.astype(expected.dtype)
    z[selection] = value.astype(expected.dtype)
    np.testing.assert_array_equal(z[...], expected)

    reopened = chunkflow.Array(z.store)
    np.testing.assert_array_equal(reopened[...], expected)


@SETTINGS
@given(case=arrays_and_chunks(), data=st.data())
def test_orthogonal_selection_matches_numpy(make_store, case, data) -> None:
    expected, chunks, zarr_format = case
    if expected.ndim == 0:
        return
    z = _create(make_store, expected, chunks, zarr_format)
    selection = data.draw(orthogonal_selections(expected.shape))
    np_selection = np.ix_(*[
        np.arange(size)[s] if isinstance(s, slice) else (np.nonzero(s)[0] if s.dtype == bool else s)
        for s, size in zip(selection, expected.shape)
    ])
    np.testing.assert_array_equal(z.oindex[selection], expected[np_selection])

    value = np.full(expected[np_selection].shape, 7, dtype=expected.dtype)
    z.oindex[selection] = value
    expected = expected.copy()
    expected[np_selection] = value
    np.testing.assert_array_equal(z[...], expected)


@SETTINGS
@given(case=arrays_and_chunks(), data=st.data())
def test_coordinate_and_mask_selection_match_numpy(make_store, case, data) -> None:
    expected, chunks, zarr_format = case
    if expected.ndim == 0 or expected.size == 0:
        return
    z = _create(make_store, expected, chunks, zarr_format)
    npoints = data.draw(st.integers(0, 8))
    coords = tuple(
        np.array(data.draw(st.lists(st.integers(0, size - 1), min_size=npoints,
                                    max_size=npoints)), dtype=np.intp)
        for size in expected.shape
    )
    np.testing.assert_array_equal(z.vindex[coords], expected[coords])

    mask = np.random.default_rng(data.draw(st.integers(0, 99))).random(expected.shape) < 0.3
    np.testing.assert_array_equal(z.vindex[mask], expected[mask])

    expected = expected.copy()
    expected[mask] = 42
    z.vindex[mask] = 42
    np.testing.assert_array_equal(z[...], expected)


def test_scalar_fill_partial_regions_and_empty_chunks(make_store) -> None:
    z = chunkflow.zeros((10, 10), chunks=(4, 4), dtype="i4", store=make_store())
    z[:] = 42
    assert z.nchunks_initialized == 9
    np.testing.assert_array_equal(z[:], np.full((10, 10), 42))
    z[2:7, 3:9] = 0
    expected = np.full((10, 10), 42)
    expected[2:7, 3:9] = 0
    np.testing.assert_array_equal(z[:], expected)
    z[:] = 0  # all chunks equal the fill value: deleted, not stored
    if z.store.supports_deletes:
        assert z.nchunks_initialized == 0
    np.testing.assert_array_equal(z[:], 0)
