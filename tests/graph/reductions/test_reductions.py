"""reduce and the named reductions: the cases that once went wrong, by name.

The differential suite (tests/differential/test_reductions.py) draws the rest.
"""

from __future__ import annotations

import warnings
from typing import Any

import dask
import dask.array as da
import numpy as np
import pytest

import chunkflow
from chunkflow.graph.reductions.moments import moments, statistic


def test_an_empty_block_merges_as_nothing() -> None:
    """A partial result of no values adds nothing (it made var NaN: 0 * NaN)."""
    data = np.arange(8.0)[::3]
    x = da.from_array(data, chunks=((1, 0, 0, 1, 0, 0, 1),))
    records = moments(x, None, every=2)
    for name in ("mean", "var", "std"):
        got = statistic(records, name, x.dtype, ddof=1).compute(scheduler="sync")
        assert got == getattr(np, name)(data, **({} if name == "mean" else {"ddof": 1}))
    z = chunkflow.array(np.arange(8.0), chunks=1)
    stats = chunkflow.reduce(z, ("var", "std"), selection=slice(None, None, 3), blocks=(1,))
    assert stats == {"var": np.var(data), "std": np.std(data)}


def test_ddof_beyond_the_count_is_numpy_s_inf_or_nan() -> None:
    z = chunkflow.array(np.array([1.0, 2.0, 4.0]), chunks=2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        assert chunkflow.reductions.var(z, ddof=5) == np.inf == np.var([1.0, 2.0, 4.0], ddof=5)
        assert np.isnan(chunkflow.reductions.std(z, ddof=1, selection=slice(0, 1)))


def test_values_in_memory_are_reduced_as_numpy_would() -> None:
    values = [[1, 2, 3], [4, 5, 6]]
    got = chunkflow.reduce(values, ("sum", "mean", "max"), axis=1)
    np.testing.assert_array_equal(got["sum"], np.sum(values, axis=1))
    assert got["sum"].dtype == np.sum(values, axis=1).dtype
    np.testing.assert_array_equal(got["mean"], np.mean(values, axis=1))
    assert chunkflow.reductions.min(np.array([3, -1, 2]), selection=slice(0, 2)) == -1
    with pytest.raises(TypeError, match="not numbers"):
        chunkflow.reduce([["a"], [None]], ("max",))


def test_refusals_are_numpy_s_and_say_what_to_do() -> None:
    z = chunkflow.array(np.zeros((3, 0)), chunks=(2, 1))
    with pytest.raises(ValueError, match="min of no values.*select at least one value"):
        chunkflow.reduce(z, ("min",), axis=1)
    np.testing.assert_array_equal(chunkflow.reduce(z, ("max",), axis=0)["max"],
                                  np.zeros((3, 0)).max(axis=0))
    with pytest.raises(ValueError, match="duplicate value in 'axis'"):
        chunkflow.reduce(z, ("max",), axis=(0, -2))
    with pytest.raises(IndexError, match="out of bounds"):  # numpy's AxisError
        chunkflow.reduce(z, ("mean",), axis=2)
    with pytest.raises(ValueError, match="unknown reduction 'median'"):
        chunkflow.reduce(z, ("median",))
    # numpy's ufunc reductions take axis 0 of a 0-d array; its mean does not.
    point = chunkflow.array(np.array(2.5), chunks=())
    assert chunkflow.reductions.max(point, axis=0) == np.max(np.array(2.5), axis=0)
    with pytest.raises(IndexError, match="out of bounds"):
        chunkflow.reductions.mean(point, axis=0)


def test_float16_sums_do_not_overflow_on_the_way() -> None:
    """numpy sums float16 in float32; a float16 partial sum would overflow."""
    data = np.array([60000, 60000, -60000, -50000], "f2")
    z = chunkflow.array(data, chunks=2)
    got = chunkflow.reduce(z, ("sum", "mean"), blocks=(1,))
    assert got == {"sum": np.sum(data), "mean": np.mean(data)}
    assert got["sum"].dtype == np.float16


def test_lazy_results_have_numpy_s_dtypes() -> None:
    z = chunkflow.array(np.arange(12, dtype="u2").reshape(3, 4), chunks=(2, 3))
    lazy = chunkflow.reduce(z, ("mean", "var", "sum", "min"), axis=0, compute=False)
    assert all(isinstance(v, da.Array) for v in lazy.values())
    expected = {"mean": np.float64, "var": np.float64, "sum": np.uint64, "min": np.uint16}
    assert {op: v.dtype.type for op, v in lazy.items()} == expected
    computed = dict(zip(lazy, dask.compute(*lazy.values(), scheduler="sync")))
    np.testing.assert_array_equal(computed["var"], np.var(z[...], axis=0))


def test_one_reduction_by_name_is_a_list_of_one() -> None:
    """``reduce(z, "sum")`` is ``reduce(z, ["sum"])``, not the letters s, u, m."""
    data = np.arange(12.0).reshape(3, 4)
    z = chunkflow.array(data, chunks=(2, 2))
    assert chunkflow.reduce(z, "sum", scheduler="sync") == {"sum": data.sum()}
    assert list(chunkflow.reduce(z, "std", scheduler="sync")) == ["std"]


@pytest.mark.parametrize("shape", [(32769,), (300, 301), (17, 64, 65), (1024, 2048)])
@pytest.mark.parametrize("dtype", ["u2", "f4", ">f8"])
def test_squared_deviations_in_leaves_are_numpy_s_sum_bit_for_bit(shape: tuple[int, ...],
                                                                    dtype: str) -> None:
    from chunkflow.graph.reductions.moments import LEAF, _chunk

    block = (np.random.default_rng(6).normal(size=shape) * 1000).astype(dtype)
    assert block.size > LEAF  # summed in leaves
    axes = tuple(range(block.ndim))
    record = _chunk(block, axes, True, spread=True)
    # numpy's sum of the whole array of squared deviations (what a block's record held
    # before it was summed in leaves).
    total = np.sum(block, axis=axes, dtype="f8", keepdims=True)
    whole = np.sum(np.subtract(block, total / block.size, dtype="f8") ** 2, axis=axes,
                   keepdims=True)
    np.testing.assert_array_equal(record["m2"].view("u8"), whole.view("u8"))


def test_blocks_on_a_cluster_are_larger_and_one_per_thread_of_all_workers(
        cluster_client: Any) -> None:
    from chunkflow.graph.reductions.plan import (
        CLUSTER_BLOCK_BYTES,
        REDUCTION_BLOCK_BYTES,
        reduction_block_bytes,
        reduction_input,
    )

    assert reduction_block_bytes(2, scheduler="threads") == REDUCTION_BLOCK_BYTES
    assert reduction_block_bytes(2, scheduler=cluster_client) == CLUSTER_BLOCK_BYTES
    # A budget the user gives still bounds the block.
    assert reduction_block_bytes(2, "36 MiB", scheduler=cluster_client) == 2 * 2**20
    z = chunkflow.zeros((4096, 4096), chunks=(256, 256), dtype="u2")  # 32 MiB
    threads = sum(cluster_client.nthreads().values())
    x, _ = reduction_input(z, scheduler=cluster_client)
    assert x.npartitions >= 2 * threads, (x.chunks, threads)


def test_squared_deviations_keep_no_buffer_after_a_block() -> None:
    """A block's scratch buffer is freed when its sum returns, not when the garbage
    collector runs (a self-calling closure kept each one: a 32 MiB std under a 4 MiB
    budget peaked at 64 MiB)."""
    import gc
    import tracemalloc

    from chunkflow.graph.reductions import moments

    block = np.random.default_rng(0).random(4 * moments.LEAF).astype(np.float32)
    enabled = gc.isenabled()
    gc.disable()
    tracemalloc.start()
    try:
        for _ in range(5):
            moments._squared_deviations(block, np.asarray(0.5))
        current, _ = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
        if enabled:
            gc.enable()
    assert current < 64 * 1024, current
