"""to_dask: any basic selection as a lazy dask array on the chunk grid.

Values are checked against numpy; alignment by the chunks each block touches; graph
size by counting layers and tasks, never seconds.
"""

from __future__ import annotations

import itertools
import pickle
from pathlib import Path
from typing import Any

import dask
import dask.array as da
import numpy as np
import pytest
from dask.highlevelgraph import HighLevelGraph
from hypothesis import given, settings
from hypothesis import strategies as st

import chunkflow
from chunkflow.errors import InvalidArgumentError, InvalidSelectionError

pytestmark = pytest.mark.lowest_deps  # also run at the lowest dependency versions

# --------------------------------------------------------------- strategies


@st.composite
def _index(draw: st.DrawFn, size: int) -> int | slice:
    if size and draw(st.booleans()) and draw(st.integers(0, 3)) == 0:
        return draw(st.integers(-size, size - 1))
    start = draw(st.none() | st.integers(-size - 2, size + 2))
    stop = draw(st.none() | st.integers(-size - 2, size + 2))
    step = draw(st.none() | st.integers(-4, 4).filter(lambda s: s != 0))
    return slice(start, stop, step)


@st.composite
def _case(draw: st.DrawFn) -> tuple[tuple[int, ...], tuple[int, ...], tuple[Any, ...], Any]:
    ndim = draw(st.integers(1, 3))
    shape = tuple(draw(st.integers(0, 13)) for _ in range(ndim))
    chunks = tuple(draw(st.integers(1, 5)) for _ in range(ndim))
    selection = tuple(draw(_index(n)) for n in shape)
    if draw(st.booleans()) and ndim > 1:
        cut = draw(st.integers(0, ndim - 1))
        selection = selection[:cut] + (Ellipsis,)
    block = draw(st.sampled_from(["auto", 64, "tuple"]))
    if block == "tuple":
        block = tuple(draw(st.sampled_from([1, 2, 3, -1])) for _ in range(ndim))
    return shape, chunks, selection, block


def _array_indices(selection: tuple[Any, ...], shape: tuple[int, ...]) -> list[np.ndarray]:
    """The array index each output position reads, per kept dimension (numpy's rules)."""
    full = _full(selection, len(shape))
    return [np.arange(n)[entry] for n, entry in zip(shape, full) if isinstance(entry, slice)]


# ---------------------------------------------------------------- alignment


@pytest.mark.slow
@settings(max_examples=150, deadline=None)
@given(case=_case())
def test_values_equal_numpy_and_blocks_share_no_chunk(case: Any) -> None:
    shape, chunks, selection, block = case
    data = np.arange(int(np.prod(shape)), dtype="i4").reshape(shape)
    z = chunkflow.array(data, chunks=chunks)
    x = chunkflow.to_dask(z, selection, blocks=block)
    expected = data[selection]
    assert x.shape == expected.shape
    np.testing.assert_array_equal(x.compute(scheduler="sync"), expected)
    kept_chunks = [c for c, entry in zip(chunks, _full(selection, len(shape)))
                   if isinstance(entry, slice)]
    for dim, (indices, block_sizes, chunk) in enumerate(
        zip(_array_indices(selection, shape), x.chunks, kept_chunks)
    ):
        edges = [0, *itertools.accumulate(block_sizes)]
        touched = [set(indices[a:b] // chunk) for a, b in itertools.pairwise(edges)]
        # Each chunk of the array is read by exactly one block along each dimension.
        for first, second in itertools.combinations(touched, 2):
            assert not first & second, (dim, x.chunks, selection)


def _full(selection: tuple[Any, ...], ndim: int) -> tuple[Any, ...]:
    if Ellipsis in selection:
        i = selection.index(Ellipsis)
        selection = selection[:i] + (slice(None),) * (ndim - i)
    return selection + (slice(None),) * (ndim - len(selection))


def test_block_edges_fall_on_chunk_edges() -> None:
    z = chunkflow.zeros((100, 50), chunks=(10, 7), dtype="u1")
    assert z.to_dask((slice(5, 95), slice(None)), blocks=(2, 1)).chunks == (
        (15, 20, 20, 20, 15), (7,) * 7 + (1,)
    )
    # Negative steps walk the chunks backwards, still cut at chunk edges.
    assert z.to_dask((slice(None, None, -3), 0), blocks=(1, 1)).chunks == ((4, 3, 3, 4, 3, 3, 4, 3, 3, 4),)


def test_sharded_arrays_use_shards_as_blocks() -> None:
    z = chunkflow.create((64, 64), chunks=(32, 32), dtype="u2",
                         codecs=[{"name": "sharding_indexed", "configuration": {
                             "chunk_shape": [4, 4],
                             "codecs": [{"name": "bytes", "configuration": {"endian": "little"}}],
                             "index_codecs": [{"name": "bytes", "configuration": {"endian": "little"}}],
                         }}])
    z[:] = np.arange(64 * 64, dtype="u2").reshape(64, 64)
    x = chunkflow.to_dask(z, blocks=(1, 1))
    assert x.chunks == ((32, 32), (32, 32))  # one task per shard, not per inner chunk
    np.testing.assert_array_equal(x.compute(), z[:])


def test_auto_and_byte_sizes_group_chunks() -> None:
    z = chunkflow.zeros((4096, 4096), chunks=(256, 256), dtype="u2")
    assert chunkflow.to_dask(z, blocks="2 MiB").chunksize == (1024, 1024)
    with dask.config.set({"array.chunk-size": "512 KiB"}):
        assert chunkflow.to_dask(z, blocks="auto").chunksize == (512, 512)
    assert chunkflow.to_dask(z, blocks=(2, -1)).chunks[1] == (4096,)


# ------------------------------------------------------------- default blocks


@pytest.mark.parametrize("chunk", [512, 1024, 4096])
def test_default_is_one_block_per_chunk(chunk: int) -> None:
    # The old default grouped chunks up to dask's array.chunk-size (128 MiB): this
    # 128 MiB array was one block, read and reduced by one thread.
    z = chunkflow.zeros((8192, 8192), chunks=(chunk, chunk), dtype="u2")
    x = chunkflow.to_dask(z)
    assert x.chunksize == (chunk, chunk)
    assert x.numblocks == (8192 // chunk,) * 2
    assert chunkflow.to_dask(z, (slice(100, 5000), 7)).chunks[0][1:-1] == (chunk,) * (
        len(range(chunk, 5000, chunk)) - 1)


def test_default_groups_tiny_chunks_but_keeps_every_thread_busy() -> None:
    z = chunkflow.zeros((8192, 8192), chunks=(64, 64), dtype="u2")  # 8 KiB chunks
    x = chunkflow.to_dask(z)
    assert x.dtype.itemsize * np.prod(x.chunksize) == 2**18  # grouped to 256 KiB
    small = chunkflow.zeros((1024, 1024), chunks=(64, 64), dtype="u2")  # 256 chunks
    for threads in (1, 2, 16, 64, 1000):
        with dask.config.set(num_workers=threads):
            blocks = int(np.prod(chunkflow.to_dask(small).numblocks))
            assert blocks >= min(256, 4 * threads)
            assert chunkflow.graph.scheduler.worker_threads() == threads
    with dask.config.set(num_workers=1):
        assert chunkflow.to_dask(small).numblocks == (4, 2)  # 256 KiB: 4 x 8 chunks a block


def test_bad_arguments_are_named() -> None:
    z = chunkflow.zeros((10, 10), chunks=(4, 4), dtype="u1", path="img")
    with pytest.raises(InvalidSelectionError, match=r"'img'.*blocks\[1\]"):
        chunkflow.to_dask(z, blocks=(1, 0))
    with pytest.raises(InvalidSelectionError, match="tuple of 2"):
        chunkflow.to_dask(z, blocks=(1,))
    with pytest.raises(IndexError):
        chunkflow.to_dask(z, (20, 0))
    with pytest.raises(TypeError, match="to_dask needs"):
        chunkflow.to_dask(42)


# ------------------------------------------------------------- graph size


def _tasks(x: da.Array) -> int:
    (optimized,) = dask.optimize(x)
    return len(dict(optimized.__dask_graph__()))


def test_graph_is_two_lazy_layers_whatever_the_size() -> None:
    z = chunkflow.zeros((10**6, 10**6), chunks=(10, 10), dtype="u1")  # 10^10 chunks
    x = chunkflow.to_dask(z, blocks=(1, 1))
    graph = x.__dask_graph__()
    assert isinstance(graph, HighLevelGraph) and len(graph.layers) == 2
    read_layer = graph.layers[x.name]
    assert not read_layer.is_materialized()
    # Only what a computation needs is ever materialized: 6 read blocks + getitems.
    window = x[5:25, 0:30]
    assert window.numblocks == (3, 3)
    assert _tasks(window) <= 9 + 9 + 1
    assert int(window.sum().compute()) == 0


def test_task_names_are_deterministic(tmp_path: Path) -> None:
    path = str(tmp_path / "a.zarr")
    chunkflow.zeros((100,), chunks=10, dtype="u1", store=path)
    a = chunkflow.to_dask(path, slice(3, 50))
    b = chunkflow.to_dask(chunkflow.open(path, mode="r"), slice(3, 50))
    assert a.name == b.name
    assert a.name != chunkflow.to_dask(path, slice(3, 51)).name
    z = chunkflow.open(path, mode="a")
    z.attrs["x"] = 1  # attributes are not part of the data
    assert chunkflow.to_dask(path, slice(3, 50)).name == a.name


# -------------------------------------------------------------- pickling


@pytest.mark.slow
def test_tasks_never_read_metadata_again(tmp_path: Path) -> None:
    path = tmp_path / "a.zarr"
    z = chunkflow.array(np.arange(100, dtype="i8").reshape(10, 10), chunks=(3, 3),
                        store=str(path))
    x = chunkflow.to_dask(z, (slice(1, 9), slice(None, None, 2)))
    payload = pickle.dumps(x)
    (path / "zarr.json").unlink()
    chunkflow.get_cache().clear()
    restored = pickle.loads(payload)
    np.testing.assert_array_equal(restored.compute(scheduler="sync"),
                                  np.arange(100).reshape(10, 10)[1:9, ::2])
    # Worker processes unpickle the array too: still no metadata read.
    np.testing.assert_array_equal(x.compute(scheduler="processes"),
                                  np.arange(100).reshape(10, 10)[1:9, ::2])


@pytest.mark.slow
def test_in_memory_store_in_worker_processes_is_an_error() -> None:
    z = chunkflow.ones((10,), chunks=5, dtype="u1")
    with pytest.raises(chunkflow.errors.ProcessLocalStoreError, match="another process"):
        chunkflow.to_dask(z).sum().compute(scheduler="processes")
    assert int(chunkflow.to_dask(z).sum().compute(scheduler="threads")) == 10


# ------------------------------------------------------------- schedulers


@pytest.fixture(scope="module")
def folder_array(tmp_path_factory: pytest.TempPathFactory) -> chunkflow.Array:
    path = tmp_path_factory.mktemp("sched") / "a.zarr"
    data = np.random.default_rng(1).integers(0, 4000, (300, 200)).astype("u2")
    return chunkflow.array(data, chunks=(32, 48), store=str(path))


@pytest.mark.slow
@pytest.mark.parametrize("scheduler", ["threads", "processes", "sync", "cluster"])
def test_same_results_on_every_scheduler(
    scheduler: str, folder_array: chunkflow.Array, request: pytest.FixtureRequest
) -> None:
    chosen: Any = request.getfixturevalue("cluster_client") if scheduler == "cluster" else scheduler
    data = folder_array[:]
    selection = (slice(250, 10, -3), slice(7, None))
    (window,) = chunkflow.compute(chunkflow.to_dask(folder_array, selection, blocks=(1, 1)),
                                  scheduler=chosen)
    np.testing.assert_array_equal(window, data[selection])
    stats = chunkflow.reduce(folder_array, ("mean", "std", "min", "max", "sum"), blocks=(2, 2),
                             scheduler=chosen)
    assert stats["mean"] == pytest.approx(data.mean(), rel=1e-12)
    assert stats["std"] == pytest.approx(data.std(), rel=1e-12)
    assert (stats["min"], stats["max"], stats["sum"]) == (data.min(), data.max(), data.sum())
    counts, edges = chunkflow.histogram(folder_array, bins=7, scheduler=chosen)
    np_counts, np_edges = np.histogram(data, bins=7)
    np.testing.assert_array_equal(counts, np_counts)
    np.testing.assert_allclose(edges, np_edges)


@pytest.mark.slow
def test_write_on_every_scheduler_with_a_process_synchronizer(tmp_path: Path,
                                                              cluster_client: Any) -> None:
    data = np.arange(60 * 70, dtype="i4").reshape(60, 70)
    for scheduler in ("threads", "processes", cluster_client):
        target = str(tmp_path / f"{id(scheduler)}.zarr")
        sync = chunkflow.ProcessSynchronizer(str(tmp_path / f"{id(scheduler)}.locks"))
        z = chunkflow.zeros((60, 70), chunks=(16, 16), dtype="i4", store=target,
                            synchronizer=sync)
        # dask's own store: unaligned blocks, so worker processes share chunks and
        # only the file locks keep their read-modify-writes apart.
        source = da.from_array(data, chunks=(11, 13))
        chunkflow.compute(da.store(source, z, lock=False, compute=False), scheduler=scheduler)
        np.testing.assert_array_equal(chunkflow.open(target, mode="r", cache=False)[:], data)


def test_to_chunkflow_matches_to_zarr_semantics(tmp_path: Path) -> None:
    x = da.random.default_rng(2).random((50, 40), chunks=(9, 15))
    z = chunkflow.to_chunkflow(x, str(tmp_path / "t.zarr"), compressor=None)
    assert z.chunks == (9, 15) and z.dtype == x.dtype
    np.testing.assert_array_equal(z[:], x.compute())
    z2, pending = chunkflow.to_chunkflow(x, str(tmp_path / "u.zarr"), chunks=(16, 16),
                                         compute=False)
    assert not z2[:].any()
    dask.compute(pending)
    np.testing.assert_array_equal(z2[:], x.compute())


def test_unknown_scheduler_is_refused() -> None:
    with pytest.raises(ValueError, match="scheduler='gpu'"):
        chunkflow.compute(da.ones(3), scheduler="gpu")


# --------------------------------------------------------------- progress


def test_progress_callable_counts_output_blocks() -> None:
    z = chunkflow.ones((40, 40), chunks=(10, 10), dtype="u1")
    seen: list[tuple[int, int]] = []
    chunkflow.reduce(z, ("sum",), blocks=(1, 1), scheduler="threads",
                     progress=lambda done, total: seen.append((done, total)))
    assert seen[0] == (0, 16) and seen[-1] == (16, 16)


@pytest.mark.slow
@pytest.mark.parametrize("scheduler", ["threads", "processes", "sync"])
def test_progress_bar_is_drawn(scheduler: str, folder_array: chunkflow.Array,
                               capfd: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("tqdm")  # the bar is tqdm's (a test extra)
    chunkflow.reduce(folder_array, ("mean",), blocks=(1, 1), scheduler=scheduler, progress=True)
    err = capfd.readouterr().err
    # tqdm's bar: "chunkflow: 100%|...| 50/50"
    assert "chunkflow" in err and "50/50" in err, err


def test_progress_without_tqdm_falls_back_to_dask(monkeypatch: pytest.MonkeyPatch,
                                                  capfd: pytest.CaptureFixture[str]) -> None:
    import builtins
    real_import = builtins.__import__

    def no_tqdm(name: str, *args: Any, **kwargs: Any) -> Any:
        if name == "tqdm" or name.startswith("tqdm."):
            raise ImportError(name)
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_tqdm)
    chunkflow.reduce(chunkflow.ones((8, 8), chunks=(2, 2)), ("sum",), scheduler="sync",
                     progress=True)
    assert "100% Completed" in capfd.readouterr().out


def test_progress_on_a_cluster(cluster_client: Any, folder_array: chunkflow.Array,
                               capfd: pytest.CaptureFixture[str]) -> None:
    seen: list[tuple[int, int]] = []
    chunkflow.reduce(folder_array, ("max",), blocks=(1, 1), scheduler=cluster_client,
                     progress=lambda done, total: seen.append((done, total)))
    assert seen and seen[-1][0] == seen[-1][1] > 0
    chunkflow.reduce(folder_array, ("min",), blocks=(1, 1), scheduler=cluster_client,
                     progress=True)
    assert "100% Completed" in capfd.readouterr().out


# ------------------------------------------------------- bounded memory


def test_reduction_blocks_shrink_with_the_memory_budget() -> None:
    from chunkflow.graph.reductions.plan import reduction_input

    z = chunkflow.zeros((8192, 8192), chunks=(256, 256), dtype="u2")
    roomy, roomy_bytes = reduction_input(z)
    tight, tight_bytes = reduction_input(z, max_memory="32 MiB")
    assert tight_bytes < roomy_bytes <= 8 * 2**20  # a few MiB per block, whatever the size
    # The block a task works on, with its float64 work, fits half the task's budget.
    assert tight_bytes * (1 + 16 / 2) <= 32 * 2**20 / 2
    larger, larger_bytes = reduction_input(chunkflow.zeros((65536, 65536), chunks=(256, 256),
                                                           dtype="u2"))
    assert larger_bytes == roomy_bytes  # flat: blocks do not grow with the array
    stats = chunkflow.reduce(z, ("std",), max_memory="32 MiB", compute=False)
    assert stats["std"].dask.layers.keys() >= {tight.name}


@pytest.mark.parametrize("run", [
    lambda z, m: chunkflow.reduce(z, ["mean", "std"], max_memory=m),
    lambda z, m: chunkflow.histogram(z, bins=4, max_memory=m),
    lambda z, m: chunkflow.percentile(z, [5, 50], max_memory=m),
], ids=["reduce", "histogram", "percentile"])
def test_a_budget_one_chunk_does_not_fit_is_refused_and_one_it_fits_is_kept(run: Any) -> None:
    from chunkflow.errors import MemoryPlanError

    data = np.random.default_rng(4).random((256, 256), dtype="f4")
    z = chunkflow.array(data, chunks=(64, 64))
    # One 16 KiB chunk: the block, its float64 work (4x) and the next block: 160 KiB.
    with pytest.raises(MemoryPlanError, match=r"^\w+: each task would need about 160\.00 kiB "
                                              r"for blocks of \(64, 64\).*max_memory 159"):
        run(z, "159 KiB")
    fitted, default = run(z, "160 KiB"), run(z, None)  # one-chunk blocks, and larger
    if isinstance(fitted, dict):  # float sums in another order: equal to rounding
        for op in fitted:
            np.testing.assert_allclose(fitted[op], default[op], rtol=1e-6)
    else:  # counts and order statistics: exact
        np.testing.assert_equal(fitted, default)
    assert chunkflow.reduce(z, ["mean"], max_memory="160 KiB")["mean"] == \
        pytest.approx(float(data.astype("f8").mean()), rel=1e-6)


def test_percentile_is_exact_on_one_block_and_on_many() -> None:
    data = np.random.default_rng(3).normal(size=(300, 40))
    z = chunkflow.array(data, chunks=(30, 40))
    q = [1, 25, 50, 75, 99]
    np.testing.assert_array_equal(chunkflow.percentile(z, q, blocks=10**9),
                                  np.percentile(data, q))
    # Many blocks: still numpy's answer (tests/graph/reductions/test_quantiles.py has the rest).
    np.testing.assert_array_equal(chunkflow.percentile(z, q, blocks=(1, 1)),
                                  np.percentile(data, q))


def test_slicing_most_blocks_shares_the_reads_of_x() -> None:
    data = np.arange(64 * 64).reshape(64, 64)
    x = chunkflow.to_dask(chunkflow.array(data, chunks=(8, 8)), blocks=(1, 1))
    most, few = x[::3, 4:-4], x[:8, 8:24]
    assert x.name in most.dask.layers  # dask's getitem over x's blocks
    assert x.name not in few.dask.layers and few.numblocks == (1, 2)  # re-planned
    both = dask.optimize(x.sum(), most.sum())
    graph: dict[Any, Any] = {}
    for collection in both:
        graph.update(collection.__dask_graph__())
    reads = [key for key in graph if isinstance(key, tuple) and key[0].startswith("chunkflow-read")]
    assert len(reads) == 64  # each chunk read once for both results
    assert dask.compute(x.sum(), most.sum(), few.sum()) == (
        data.sum(), data[::3, 4:-4].sum(), data[:8, 8:24].sum())


def test_dask_reads_leave_the_process_wide_cache_alone(tmp_path: Path) -> None:
    """``to_dask(z)`` reads as ``da.from_zarr`` does: past the process-wide cache, which
    would otherwise hold up to its budget of chunks read once (the memory the issue
    measured); an array opened with its own cache keeps it."""
    data = np.arange(64 * 64, dtype="u2").reshape(64, 64)
    path = str(tmp_path / "a.zarr")
    chunkflow.array(data, chunks=(16, 16), store=path)
    with chunkflow.config.set({"chunkflow.cache.max-bytes": "64 MiB"}):
        chunkflow.cache.get_cache().clear()
        z = chunkflow.open(path, mode="r")
        assert int(chunkflow.to_dask(z).sum().compute()) == int(data.sum())
        assert chunkflow.cache_info().entries == 0
        private = chunkflow.ChunkCache(max_bytes=2**20)
        mine = chunkflow.open(path, mode="r", cache=private)
        assert int(chunkflow.to_dask(mine).sum().compute()) == int(data.sum())
        assert private.stats.bytes == data.nbytes


def test_steps_over_chunks_plan_one_block_per_element_none_empty() -> None:
    # A step of 10**9 over 10**12 elements: 1000 blocks of one element, planned without
    # a step per chunk skipped; re-slicing stays as cheap.
    z = chunkflow.zeros((10**12,), chunks=(1000,), dtype="u1")
    for step in (10**9, -(10**9) + 7):
        x = chunkflow.to_dask(z, slice(None, None, step), blocks=(1,))
        assert x.chunks == ((1,) * len(range(0, 10**12, abs(step))),)
        y = x[3:5]
        assert y.chunks == ((1, 1),) and y.compute(scheduler="sync").tolist() == [0, 0]
    for start, size, step, chunk, k in itertools.product(
            [0, 5, 999], [1000, 2501], [1, 2, 7, 1000, -1, -3], [1, 3, 1000], [1, 2]):
        z = chunkflow.zeros((size,), chunks=(chunk,), dtype="u1")
        x = chunkflow.to_dask(z, slice(start, None, step), blocks=(k,))
        assert 0 not in x.chunks[0] and sum(x.chunks[0]) == len(range(*slice(
            start, None, step).indices(size)))


def test_storage_options_with_an_open_array(tmp_path) -> None:
    """A writer's storage_options are its URLs' (out=, temp=): an open array source takes
    none of them; a reader's (to_dask) would apply to nothing, and are refused."""
    from scipy import ndimage

    data = np.arange(6 * 8, dtype="u2").reshape(6, 8)
    z = chunkflow.array(data, chunks=(2, 4))
    options = {"auto_mkdir": True}
    url = f"file://{tmp_path}/new"
    np.testing.assert_array_equal(
        chunkflow.rechunk(z, (3, 8), f"{url}/r.zarr", max_memory="1 MiB",
                          storage_options=options)[...], data)
    np.testing.assert_array_equal(
        chunkflow.map_chunks(np.sqrt, z, out=f"{url}/m.zarr", dtype="f8",
                             storage_options=options)[...], np.sqrt(data).astype("f8"))
    mask = chunkflow.array(data % 3 == 0, chunks=(2, 4))
    labels, count = chunkflow.label(mask, out=f"{url}/l.zarr", storage_options=options)
    expected, expected_count = ndimage.label(data % 3 == 0)
    assert count == expected_count
    np.testing.assert_array_equal(labels[...], expected)
    with pytest.raises(InvalidArgumentError, match="not to an open chunkflow.Array"):
        chunkflow.to_dask(z, storage_options=options)
