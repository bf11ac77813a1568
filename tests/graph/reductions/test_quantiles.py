"""Exact percentiles, quantiles and medians: numpy's answer bit for bit, in bounded memory.

Every comparison is ``np.testing.assert_array_equal`` plus the result's dtype and type,
so a value off by one ulp, a float64 where numpy gives float32, or an array where numpy
gives a scalar all fail.
"""

from __future__ import annotations

import contextlib
import math
import tracemalloc
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import dask
import hypothesis.extra.numpy as hnp
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import chunkflow
from chunkflow.errors import MemoryPlanError
from chunkflow.graph.reductions.plan import task_bytes_per_block_byte

FUNCTIONS = ("percentile", "nanpercentile", "quantile", "nanquantile")
DTYPES = ("f2", "f4", "f8", "i1", "u1", "i2", "u2", "i4", "u4", "i8", "u8")


def assert_same(got: Any, expected: Any) -> None:
    np.testing.assert_array_equal(got, expected)
    assert type(got) is type(expected), (type(got), type(expected))
    assert np.asarray(got).dtype == np.asarray(expected).dtype


@contextlib.contextmanager
def numpy_or_refused(data: np.ndarray, chunks: tuple[int, ...],
                     max_memory: int | None) -> Iterator[None]:
    """The block runs (and matches numpy), or it is refused with MemoryPlanError, and
    only when one chunk and its work do not fit ``max_memory``."""
    need = math.prod(chunks) * data.itemsize * task_bytes_per_block_byte(data.itemsize)
    try:
        yield
    except MemoryPlanError:
        assert max_memory is not None and need > max_memory
    else:
        assert max_memory is None or need <= max_memory or data.size == 0


def check_all(source: Any, data: np.ndarray, qs: Any = ([5, 50, 95],), **kwargs: Any) -> None:
    """Every function of chunkflow against numpy's, on ``source`` holding ``data``."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # numpy's all-NaN warning
        for q in qs:
            for name in ("percentile", "nanpercentile"):
                assert_same(getattr(chunkflow, name)(source, q, **kwargs),
                            getattr(np, name)(data, q))
            fraction = np.true_divide(q, 100) if not isinstance(q, (int, float)) else q / 100
            for name in ("quantile", "nanquantile"):
                assert_same(getattr(chunkflow, name)(source, fraction, **kwargs),
                            getattr(np, name)(data, fraction))
        for name in ("median", "nanmedian"):
            assert_same(getattr(chunkflow, name)(source, **kwargs), getattr(np, name)(data))


# ------------------------------------------------------------------ the case


def smooth_plus_noise(n: int) -> np.ndarray:
    yy, xx = np.mgrid[0:n, 0:n].astype("f4") / n
    noise = np.random.default_rng(18).normal(0, 5, (n, n))
    return (100 * np.sin(6 * xx) * np.cos(4 * yy) + noise).astype("f4")


def test_smooth_pattern_plus_noise_is_exact(tmp_path: Path) -> None:
    # The 4096^2 float32 image in 512^2 chunks, at 1/4 scale: blocks do not look
    # like the whole, so merged per-block percentiles were far off (-39.1 for -85.9).
    data = smooth_plus_noise(1024)
    z = chunkflow.array(data, chunks=(128, 128), store=str(tmp_path / "a.zarr"))
    q = [5, 50, 95]
    assert_same(chunkflow.percentile(z, q), np.percentile(data, q))
    # Under a tight budget: more passes, same numbers.
    assert_same(chunkflow.percentile(str(tmp_path / "a.zarr"), q, max_memory="4 MiB"),
                np.percentile(data, q))
    assert_same(chunkflow.median(z, max_memory="4 MiB"), np.median(data))


# ------------------------------------------------------------------ specific data


@pytest.mark.parametrize("dtype", DTYPES)
def test_constant_and_heavy_ties(dtype: str) -> None:
    constant = np.full((30, 20), 7, dtype)
    check_all(chunkflow.array(constant, chunks=(7, 6)), constant, qs=(50, [0, 33.3, 100]))
    ties = np.random.default_rng(1).integers(0, 3, (40, 25)).astype(dtype)
    check_all(chunkflow.array(ties, chunks=(9, 4)), ties, qs=([0, 1, 49.9, 50, 50.1, 99, 100],),
              max_memory=2**12)


@pytest.mark.parametrize("dtype", ["i1", "u1", "i2", "u2", "i4", "u4", "i8", "u8"])
def test_integer_extremes(dtype: str) -> None:
    info = np.iinfo(dtype)
    data = np.random.default_rng(2).integers(info.min, info.max, (30, 30), dtype=dtype,
                                             endpoint=True)
    data[0, 0], data[-1, -1] = info.min, info.max
    check_all(chunkflow.array(data, chunks=(8, 8)), data,
              qs=([0, 0.1, 25, 50, 75, 99.9, 100], 50.0))


@pytest.mark.parametrize("dtype", ["f2", "f4", "f8"])
def test_infinities_and_nan(dtype: str) -> None:
    data = np.random.default_rng(3).normal(size=(30, 30)).astype(dtype)
    data[1, 2], data[3, 4], data[5, 6] = np.inf, -np.inf, -0.0
    z = chunkflow.array(data, chunks=(7, 7))
    check_all(z, data, qs=([0, 0.5, 50, 99.5, 100], 100, 0))
    data[8, 9] = np.nan  # plain variants: NaN; nan variants: the rest
    # NaN with the sign bit set (and a payload): its key sorts below -inf's.
    data[9, 9] = np.frombuffer(np.array(-1, f"i{data.itemsize}").tobytes(), dtype)[0]
    assert np.isnan(data[9, 9]) and np.signbit(data[9, 9])
    z = chunkflow.array(data, chunks=(7, 7))
    check_all(z, data, qs=([0, 50, 100], 50))
    check_all(z, data, qs=([0, 0.1, 99.9, 100],), max_memory=2**12)
    assert np.isnan(chunkflow.percentile(z, [5, 95])).all()
    assert chunkflow.nanpercentile(z, [5]) == np.nanpercentile(data, [5])


def test_all_nan_warns_as_numpy() -> None:
    data = np.full((6, 6), np.nan, "f4")
    z = chunkflow.array(data, chunks=(4, 4))
    with pytest.warns(RuntimeWarning, match="All-NaN"):
        got = chunkflow.nanpercentile(z, [5, 50])
    with pytest.warns(RuntimeWarning, match="All-NaN"):
        assert_same(got, np.nanpercentile(data, [5, 50]))
    with pytest.warns(RuntimeWarning, match="All-NaN"):
        assert np.isnan(chunkflow.nanmedian(z))
    check_all(z, data, qs=(50,))


def test_q_forms_follow_numpy() -> None:
    data = np.arange(101, dtype="f4")[::-1].reshape(1, 101)
    z = chunkflow.array(data, chunks=(1, 10))
    for q in (0, 100, 50, 12.5, [0, 100], np.float32(33.3), np.array([5, 95], "f4"),
              np.array([[1, 2], [3, 4]]), (0.0, 37.5)):
        assert_same(chunkflow.percentile(z, q), np.percentile(data, q))
    for q in ([0, 1], 0, 1, np.array([0, 1], "u1")):  # integer q: numpy takes values as-is
        assert_same(chunkflow.quantile(z, q), np.quantile(data, q))


def test_selection_chunks_and_dask_input() -> None:
    import dask.array as da

    data = np.random.default_rng(4).normal(size=(50, 40))
    z = chunkflow.array(data, chunks=(6, 9))
    assert_same(chunkflow.percentile(z, [10, 90], selection=(slice(3, 40), slice(None, None, -2))),
                np.percentile(data[3:40, ::-2], [10, 90]))
    assert_same(chunkflow.median(z, blocks=(1, 1)), np.median(data))
    assert_same(chunkflow.quantile(da.from_array(data, chunks=7), 0.3), np.quantile(data, 0.3))


def test_refusals_are_clear() -> None:
    z = chunkflow.array(np.arange(10.0), chunks=3)
    with pytest.raises(np.exceptions.AxisError):
        chunkflow.percentile(z, 5, axis=1)  # numpy's refusal of an axis the array lacks
    with pytest.raises(ValueError, match="method='nearest' is not supported"):
        chunkflow.quantile(z, 0.5, method="nearest")
    with pytest.raises(ValueError, match=r"Percentiles must be in the range \[0, 100\]"):
        chunkflow.percentile(z, [5, 101])
    with pytest.raises(ValueError, match=r"Quantiles must be in the range \[0, 1\]"):
        chunkflow.quantile(z, np.nan)
    with pytest.raises(TypeError, match="bool array: numpy refuses it too"):
        chunkflow.quantile(chunkflow.array(np.ones(4, bool), chunks=2), 0.5)
    with pytest.raises(TypeError, match="integers or floats.*call numpy.percentile"):
        chunkflow.percentile(chunkflow.array(np.ones(4, "c8"), chunks=2), 5)
    with pytest.raises(IndexError, match="empty selection.*numpy refuses it too"):
        chunkflow.percentile(z, 5, selection=slice(3, 3))


def test_where_numpy_answers_so_do_we() -> None:
    """Medians of booleans, and medians and nan-quantiles of no values (NaN, warned)."""
    flags = np.array([True, False, True, False, False])
    z = chunkflow.array(flags, chunks=2)
    for selection in (slice(None), slice(0, 4), slice(2, 3)):
        assert_same(chunkflow.median(z, selection=selection), np.median(flags[selection]))
        assert_same(chunkflow.nanmedian(z, selection=selection), np.nanmedian(flags[selection]))
    data = np.arange(10, dtype="f4")
    z = chunkflow.array(data, chunks=3)
    for name, args in (("median", ()), ("nanmedian", ()), ("nanquantile", ([0.5, 0.1],)),
                       ("nanpercentile", (5,))):
        with pytest.warns(RuntimeWarning, match="Mean of empty slice"):
            got = getattr(chunkflow, name)(z, *args, selection=slice(3, 3))
        with pytest.warns(RuntimeWarning):
            assert_same(got, getattr(np, name)(data[3:3], *args))


def test_data_changed_between_passes_is_an_error_not_a_number() -> None:
    data = np.random.default_rng(7).normal(size=(100, 100))
    z = chunkflow.array(data, chunks=(10, 10))
    starts = []

    def write_after_the_first_pass(done: int, total: int) -> None:
        if done == 0:
            starts.append(total)
            if len(starts) == 2:  # the second pass begins: someone writes
                z[:50] = data[:50] + 1000

    with pytest.raises(chunkflow.errors.ValuesChangedError, match="changed between"):
        chunkflow.percentile(z, [50], max_memory=2**13, scheduler="sync",
                             progress=write_after_the_first_pass)


# ------------------------------------------------------------------ bounded memory


def test_memory_stays_within_the_budget(tmp_path: Path) -> None:
    # 32 MiB of float64 noise (no block looks alike, many candidates near the median)
    # under a 4 MiB budget, one thread: a pass holds a block, its keys and the counts;
    # the gathered candidates stay under a quarter of the budget.
    data = np.random.default_rng(5).normal(size=(2048, 2048))
    path = str(tmp_path / "big.zarr")
    chunkflow.array(data, chunks=(256, 256), store=path, compressor=None)
    expected = np.percentile(data, [1, 50, 99])
    del data
    tracemalloc.start()
    try:
        got = chunkflow.percentile(path, [1, 50, 99], max_memory="4 MiB", scheduler="sync")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert_same(got, expected)
    assert peak < 12 * 2**20, f"peak {peak / 2**20:.1f} MiB for a 32 MiB array"


# ------------------------------------------------------------------ against numpy, at random


SHAPES = hnp.array_shapes(min_dims=1, max_dims=2, min_side=1, max_side=40)


@st.composite
def arrays_and_chunks(draw: st.DrawFn) -> tuple[np.ndarray, tuple[int, ...]]:
    dtype = draw(st.sampled_from(DTYPES))
    elements = None
    if dtype[0] == "f":
        # Few distinct values (ties) or any float, infinities and NaN included.
        elements = draw(st.sampled_from([
            st.floats(width=8 * np.dtype(dtype).itemsize),
            st.sampled_from([-1.5, 0.0, 2.0, np.inf]),
        ]))
    data = draw(hnp.arrays(dtype, SHAPES, elements=elements))
    chunks = tuple(draw(st.integers(1, max(1, n))) for n in data.shape)
    return data, chunks


QS = st.one_of(st.floats(0, 100), st.integers(0, 100),
               st.lists(st.floats(0, 100), min_size=1, max_size=5))


@pytest.mark.slow
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(arrays_and_chunks(), QS, st.sampled_from([None, 2**10, 2**13]))
def test_matches_numpy_threads(case: tuple[np.ndarray, tuple[int, ...]], q: Any,
                               max_memory: int | None) -> None:
    data, chunks = case
    z = chunkflow.array(data, chunks=chunks)
    with numpy_or_refused(data, chunks, max_memory):
        check_all(z, data, qs=(q,), max_memory=max_memory, scheduler="threads")


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("quantiles")


@pytest.fixture(scope="module")
def process_pool() -> Any:
    """Two worker processes kept for the module: dask's "processes" scheduler would
    start a new pool for every pass otherwise (seconds each with spawn). Set in dask's
    config only while a test runs: a LocalCluster started later ships that config to its
    workers, and a pool does not pickle."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    with ProcessPoolExecutor(2, mp_context=multiprocessing.get_context("spawn")) as pool:
        yield pool


@pytest.mark.slow
@settings(max_examples=10, deadline=None, suppress_health_check=[
    HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(arrays_and_chunks(), QS)
def test_matches_numpy_processes(folder: Path, process_pool: Any,
                                 case: tuple[np.ndarray, tuple[int, ...]],
                                 q: Any) -> None:
    data, chunks = case
    path = str(folder / "p.zarr")
    chunkflow.array(data, chunks=chunks, store=path, overwrite=True)
    with warnings.catch_warnings(), dask.config.set(pool=process_pool), \
            numpy_or_refused(data, chunks, 2**12):
        warnings.simplefilter("ignore", RuntimeWarning)
        assert_same(chunkflow.percentile(path, q, scheduler="processes", max_memory=2**12),
                    np.percentile(data, q))
        assert_same(chunkflow.nanmedian(path, scheduler="processes", max_memory=2**12),
                    np.nanmedian(data))


@pytest.mark.slow
def test_matches_numpy_on_a_cluster(cluster_client: Any, tmp_path: Path) -> None:
    rng = np.random.default_rng(6)
    for dtype in ("f4", "i8", "u2"):
        data = (rng.normal(size=(120, 90)) * 1000).astype(dtype)
        path = str(tmp_path / f"{dtype}.zarr")
        chunkflow.array(data, chunks=(16, 16), store=path)
        check_all(path, data, qs=([0, 5, 50, 95, 100],), scheduler=cluster_client,
                  max_memory=2**14)


def test_compute_false_returns_a_lazy_result_that_computes_to_numpy_s() -> None:
    data = np.random.default_rng(8).normal(size=(50, 20))
    data[3, 4] = np.nan
    z = chunkflow.array(data, chunks=(6, 7))
    lazy = {
        "percentile": chunkflow.percentile(z, [5, 50], compute=False),
        "nanquantile": chunkflow.nanquantile(z, 0.25, compute=False, scheduler="sync"),
        "nanmedian": chunkflow.nanmedian(z, compute=False, max_memory=2**12),
    }
    assert all(dask.is_dask_collection(v) for v in lazy.values())
    got = dict(zip(lazy, dask.compute(*lazy.values())))
    assert_same(got["percentile"], np.percentile(data, [5, 50]))
    assert_same(got["nanquantile"], np.nanquantile(data, 0.25))
    assert_same(got["nanmedian"], np.nanmedian(data))
