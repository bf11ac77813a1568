"""``chunkflow.histogram`` gives ``numpy.histogram``'s counts and edges, exactly."""

from __future__ import annotations

from typing import Any

import hypothesis.extra.numpy as hnp
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import chunkflow


def assert_same_histogram(got: tuple[np.ndarray, np.ndarray],
                          expected: tuple[np.ndarray, np.ndarray]) -> None:
    np.testing.assert_array_equal(got[0], expected[0])
    np.testing.assert_array_equal(got[1], expected[1])
    assert got[0].dtype == expected[0].dtype and got[1].dtype == expected[1].dtype


def test_float32_values_on_the_edges_land_in_numpys_bins() -> None:
    # The case: float32 data, default range. numpy's edges are float32; float64
    # edges put values lying on (or one ulp from) an edge into the neighbouring bin.
    base = np.random.default_rng(0).normal(size=20_000).astype("f4")
    edges = np.histogram_bin_edges(base, bins=16)[1:-1]
    up, down = np.nextafter(edges, np.float32(np.inf)), np.nextafter(edges, np.float32(-np.inf))
    data = np.concatenate([base, edges, up, down]).astype("f4")
    z = chunkflow.array(data, chunks=1000)
    assert_same_histogram(chunkflow.histogram(z, bins=16), np.histogram(data, bins=16))
    # Given range, float edges from Python floats: float32 edges too.
    assert_same_histogram(chunkflow.histogram(z, bins=16, range=(-1.1, 2.3)),
                          np.histogram(data, bins=16, range=(-1.1, 2.3)))


@pytest.mark.parametrize("dtype", ["u1", "i2", "u4", "i8", "u8"])
def test_integers(dtype: str) -> None:
    info = np.iinfo(dtype)
    data = np.random.default_rng(1).integers(info.min, info.max, (50, 40), dtype=dtype,
                                             endpoint=True)
    z = chunkflow.array(data, chunks=(7, 9))
    for bins in (1, 10, 257):
        assert_same_histogram(chunkflow.histogram(z, bins=bins), np.histogram(data, bins=bins))
    small = (data % 7).astype(dtype)
    z = chunkflow.array(small, chunks=(7, 9))
    assert_same_histogram(chunkflow.histogram(z, bins=7, range=(0, 7)),
                          np.histogram(small, bins=7, range=(0, 7)))


def test_bin_arrays_density_constant_and_empty() -> None:
    data = np.random.default_rng(2).uniform(-5, 5, (30, 30)).astype("f4")
    z = chunkflow.array(data, chunks=(8, 8))
    for bins in ([-5, -1, 0, 0.5, 5], np.array([-2.0, 2.0], "f2"), np.linspace(-6, 6, 20)):
        assert_same_histogram(chunkflow.histogram(z, bins=bins), np.histogram(data, bins=bins))
    assert_same_histogram(chunkflow.histogram(z, bins=9, density=True),
                          np.histogram(data, bins=9, density=True))
    constant = np.full((5, 5), 3.0, "f2")
    assert_same_histogram(chunkflow.histogram(chunkflow.array(constant, chunks=2), bins=4),
                          np.histogram(constant, bins=4))
    assert_same_histogram(chunkflow.histogram(z, bins=3, selection=slice(4, 4)),
                          np.histogram(data[4:4], bins=3))


def test_refusals_match_numpy_or_say_what_is_supported() -> None:
    data = np.array([1.0, np.nan, 3.0])
    z = chunkflow.array(data, chunks=2)
    with pytest.raises(ValueError, match="autodetected range of"):
        chunkflow.histogram(z)
    assert_same_histogram(chunkflow.histogram(z, range=(0, 4)), np.histogram(data, range=(0, 4)))
    with pytest.raises(ValueError, match="increase monotonically"):
        chunkflow.histogram(z, bins=[3, 1, 2])
    with pytest.raises(ValueError, match="weights= is not supported"):
        chunkflow.histogram(z, weights=np.ones(3))
    with pytest.raises(ValueError, match="bins='auto'.*needs the whole"):
        chunkflow.histogram(z, bins="auto")


@st.composite
def cases(draw: st.DrawFn) -> tuple[np.ndarray, tuple[int, ...], Any, Any]:
    dtype = draw(st.sampled_from(["f2", "f4", "f8", "i1", "u2", "i4", "i8", "u8"]))
    elements = st.floats(-1e4, 1e4, width=8 * np.dtype(dtype).itemsize) \
        if dtype[0] == "f" else None
    data = draw(hnp.arrays(dtype, hnp.array_shapes(min_dims=1, max_dims=2, max_side=30),
                           elements=elements))
    chunks = tuple(draw(st.integers(1, max(1, n))) for n in data.shape)
    bins = draw(st.one_of(st.integers(1, 40), st.lists(
        st.floats(-2e4, 2e4), min_size=2, max_size=8, unique=True).map(sorted)))
    value_range = draw(st.one_of(st.none(), st.tuples(st.floats(-2e4, 0), st.floats(0, 2e4))))
    return data, chunks, bins, value_range


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cases())
def test_matches_numpy(case: tuple[np.ndarray, tuple[int, ...], Any, Any]) -> None:
    data, chunks, bins, value_range = case
    z = chunkflow.array(data, chunks=chunks)
    try:
        expected = np.histogram(data, bins=bins, range=value_range)
    except ValueError:  # numpy's refusal (a non-finite range): ours too
        with pytest.raises(ValueError):
            chunkflow.histogram(z, bins=bins, range=value_range)
        return
    assert_same_histogram(chunkflow.histogram(z, bins=bins, range=value_range,
                                              scheduler="threads"), expected)


def test_matches_numpy_on_a_cluster(cluster_client: Any, tmp_path: Any) -> None:
    data = np.random.default_rng(3).normal(size=(100, 80)).astype("f4")
    path = str(tmp_path / "h.zarr")
    chunkflow.array(data, chunks=(16, 16), store=path)
    assert_same_histogram(chunkflow.histogram(path, bins=33, scheduler=cluster_client),
                          np.histogram(data, bins=33))


def test_compute_false_returns_a_lazy_result_that_computes_to_numpy_s() -> None:
    import dask

    data = np.random.default_rng(4).normal(size=(40, 30)).astype("f4")
    z = chunkflow.array(data, chunks=(7, 6))
    for kwargs in ({"bins": 9}, {"bins": 9, "range": (-1, 1)}, {"bins": [-2, 0, 0.5, 2]},
                   {"bins": 5, "density": True}):
        lazy = chunkflow.histogram(z, compute=False, **kwargs)
        assert dask.is_dask_collection(lazy), kwargs
        assert_same_histogram(dask.compute(lazy, scheduler="sync")[0],
                              np.histogram(data, **kwargs))
    # A dask array source stays lazy: nothing of it is loaded whole as an argument.
    x = chunkflow.to_dask(z, blocks=(1, 1))
    assert_same_histogram(chunkflow.histogram(x, bins=4, compute=False).compute(),
                          np.histogram(data, bins=4))


@pytest.mark.parametrize("dtype", ["u1", "i1", "<u2", ">i2"])
def test_one_and_two_byte_integers_count_each_value_in_one_pass(dtype: str) -> None:
    import dask

    data = np.random.default_rng(5).integers(-300, 300, size=(60, 50)).astype(dtype)
    z = chunkflow.array(data, chunks=(8, 8))
    for kwargs in ({"bins": 9}, {"bins": 7, "range": (-3.5, 250.25)}, {"bins": [-40, 0, 0.5, 99]},
                   {"bins": 5, "density": True}):
        lazy = chunkflow.histogram(z, compute=False, blocks=(2, 2), **kwargs)
        assert_same_histogram(dask.compute(lazy, scheduler="sync")[0], np.histogram(data, **kwargs))
        assert_same_histogram(chunkflow.histogram(z, **kwargs), np.histogram(data, **kwargs))
    # One task per block reads and counts (no pass for the range first), and a tree
    # of a few combines: nothing per chunk.
    x = chunkflow.to_dask(z, blocks=(2, 2))
    graph = dask.optimize(chunkflow.histogram(x, bins=9, compute=False))[0].__dask_graph__()
    assert len(graph) <= x.npartitions + 8, len(graph)
