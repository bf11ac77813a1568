"""map_chunks and summarize_chunks: filters with halos equal scipy on the whole array,
one task per block, one write per chunk, memory planned before anything runs."""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

import dask
import numpy as np
import pytest
from scipy import ndimage

import chunkflow
from chunkflow.errors import (
    InvalidArgumentError,
    InvalidSelectionError,
    MemoryPlanError,
    ShapeMismatchError,
)
from chunkflow.jobs import WRITTEN_KEY
from chunkflow.testing import CountingMapping

pytestmark = pytest.mark.lowest_deps  # also run at the lowest dependency versions

SCIPY_MODE = {"reflect": "reflect", "nearest": "nearest", "constant": "constant",
              "periodic": "wrap"}


def _image(shape: tuple[int, ...], seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).random(shape).astype("f8")


def _filters(mode: str) -> dict[str, tuple[Any, int]]:
    """name -> (function over a window, the halo it needs)."""
    sigma = 1.5  # radius int(4 * 1.5 + 0.5) = 6: more than the chunks below
    return {
        "gaussian": (functools.partial(ndimage.gaussian_filter, sigma=sigma, mode=mode), 6),
        "median": (functools.partial(ndimage.median_filter, size=3, mode=mode), 1),
        "uniform": (functools.partial(ndimage.uniform_filter, size=5, mode=mode), 2),
    }


@pytest.mark.parametrize("boundary", ["reflect", "nearest", "constant", "periodic"])
@pytest.mark.parametrize("shape,chunks", [((37, 29), (5, 4)), ((13, 11, 9), (4, 5, 3))],
                         ids=["2d", "3d"])
def test_filters_equal_scipy_on_the_whole_array(boundary: str, shape: tuple[int, ...],
                                                chunks: tuple[int, ...]) -> None:
    image = _image(shape)
    z = chunkflow.array(image, chunks=chunks)
    mode = SCIPY_MODE[boundary]
    for name, (func, depth) in _filters(mode).items():
        got = chunkflow.map_chunks(func, z, depth=depth, boundary=boundary,
                                   blocks=(1,) * len(shape)).compute()
        np.testing.assert_allclose(got, func(image), rtol=1e-12, err_msg=name)


def test_boundary_none_gives_smaller_windows_at_the_edge() -> None:
    image = _image((30, 20))
    z = chunkflow.array(image, chunks=(7, 6))
    seen: list[tuple[int, ...]] = []

    def smooth(window: np.ndarray, block_info: dict[str, Any]) -> np.ndarray:
        seen.append(tuple(block_info["halo"]))
        return ndimage.uniform_filter(window, size=5, mode="reflect")

    got = chunkflow.map_chunks(smooth, z, depth=2, boundary="none", block_info=True,
                               blocks=(1, 1)).compute(scheduler="sync")
    np.testing.assert_allclose(got, ndimage.uniform_filter(image, size=5, mode="reflect"))
    assert ((0, 2), (0, 2)) in seen and ((2, 2), (2, 2)) in seen


def test_depth_larger_than_chunks_and_per_axis() -> None:
    image = _image((40, 40))
    z = chunkflow.array(image, chunks=(3, 8))
    func = functools.partial(ndimage.uniform_filter, size=(15, 1), mode="wrap")
    got = chunkflow.map_chunks(func, z, depth={0: 7}, boundary="periodic", blocks=(1, 1))
    np.testing.assert_allclose(got.compute(), func(image))
    got = chunkflow.map_chunks(func, z, depth=(7, 0), boundary="periodic", blocks=(1, 1))
    np.testing.assert_allclose(got.compute(), func(image))


def test_sources_with_different_chunk_grids() -> None:
    a, b = _image((33, 21), 1), _image((33, 21), 2)
    za = chunkflow.array(a, chunks=(5, 7))
    zb = chunkflow.array(b, chunks=(11, 4))

    def combined(x: np.ndarray, y: np.ndarray) -> np.ndarray:
        return ndimage.uniform_filter(x * y, size=3, mode="nearest")

    got = chunkflow.map_chunks(combined, za, zb, depth=1, boundary="nearest", blocks=(1, 1))
    np.testing.assert_allclose(got.compute(), combined(a, b))


# ------------------------------------------------------------- schedulers


@pytest.mark.slow
@pytest.mark.parametrize("scheduler", ["threads", "processes", "sync", "cluster"])
def test_folder_to_folder_on_every_scheduler(scheduler: str, tmp_path: Path,
                                             request: pytest.FixtureRequest) -> None:
    chosen = request.getfixturevalue("cluster_client") if scheduler == "cluster" else scheduler
    image = (_image((50, 40)) * 1000).astype("u2")
    source = chunkflow.array(image, chunks=(8, 16), store=str(tmp_path / "in.zarr"))
    func = functools.partial(ndimage.gaussian_filter, sigma=1.0, mode="reflect",
                             output=np.float32)
    out = chunkflow.map_chunks(func, str(tmp_path / "in.zarr"), out=str(tmp_path / "out.zarr"),
                               depth=4, dtype="f4", blocks=(1, 1), scheduler=chosen)
    assert out.dtype == np.float32 and out.chunks == source.chunks
    fresh = chunkflow.open(str(tmp_path / "out.zarr"), mode="r", cache=False)
    np.testing.assert_allclose(fresh[:], func(image), rtol=1e-5)


# -------------------------------------------------------- graph and writes


def _task_count(collection: Any) -> int:
    (optimized,) = dask.optimize(collection)
    return len(dict(optimized.__dask_graph__()))


def test_one_task_per_block() -> None:
    z = chunkflow.zeros((100, 90), chunks=(10, 10), dtype="f4")
    lazy = chunkflow.map_chunks(lambda w: w + 1, z, depth=3, blocks=(1, 1))
    assert lazy.numblocks == (10, 9)
    assert len(lazy.__dask_graph__().layers) == 2
    assert _task_count(lazy) == 90 + 1  # blocks + the plan
    out = chunkflow.zeros((100, 90), chunks=(10, 10), dtype="f4")
    pending = chunkflow.map_chunks(lambda w: w + 1, z, out=out, depth=3, blocks=(1, 1),
                                   compute=False)
    assert _task_count(pending) <= 90 + 3
    assert not out[:].any()
    assert bool(pending.compute()) and out[:].min() == 1


@pytest.mark.parametrize("sharded", [False, True])
def test_every_output_chunk_is_written_once(sharded: bool) -> None:
    image = _image((64, 48))
    z = chunkflow.array(image, chunks=(5, 7))  # a grid unlike the output's
    mapping = CountingMapping()
    if sharded:
        out = chunkflow.create((64, 48), chunks=(16, 16), dtype="f8", store=mapping,
                               codecs=[{"name": "sharding_indexed", "configuration": {
                                   "chunk_shape": [4, 4],
                                   "codecs": [{"name": "bytes",
                                               "configuration": {"endian": "little"}}],
                                   "index_codecs": [{"name": "bytes",
                                                     "configuration": {"endian": "little"}}]}}])
    else:
        out = chunkflow.create((64, 48), chunks=(16, 16), dtype="f8", store=mapping)
    func = functools.partial(ndimage.uniform_filter, size=3, mode="reflect")
    with dask.config.set(num_workers=4):
        chunkflow.map_chunks(func, z, out=out, depth=1, blocks=(1, 1), scheduler="threads")
    # Every job is recorded: one record per block beside the chunks, deleted at the end.
    records = {k: n for k, n in mapping.writes.items() if k.startswith(".chunkflow-job/")}
    chunk_writes = {k: n for k, n in mapping.writes.items()  # not the list of what is stored
                    if not k.endswith(("zarr.json", WRITTEN_KEY)) and k not in records}
    assert len(chunk_writes) == 4 * 3 and set(chunk_writes.values()) == {1}
    assert len(records) == 4 * 3 and not any(k in mapping for k in records)
    np.testing.assert_allclose(out[:], func(image))


def test_per_block_summaries_equal_a_loop_over_tiles() -> None:
    image = ndimage.gaussian_filter(_image((96, 80), 5), 2)
    z = chunkflow.array(image, chunks=(32, 16))

    def count_objects(tile: np.ndarray) -> int:
        return ndimage.label(tile > 0.5)[1]

    counts = chunkflow.summarize_chunks(count_objects, z, dtype=int)
    expected = np.array([[count_objects(image[i:i + 32, j:j + 16]) for j in range(0, 80, 16)]
                         for i in range(0, 96, 32)])
    np.testing.assert_array_equal(counts, expected)
    hist = chunkflow.summarize_chunks(lambda t: np.histogram(t, bins=4, range=(0, 1))[0], z,
                                      shape=(4,), dtype=int)
    assert hist.shape == (3, 5, 4) and hist.sum() == image.size


# --------------------------------------------------------------- mistakes


def test_wrong_result_shape_is_named() -> None:
    z = chunkflow.zeros((10, 10), chunks=(5, 5))
    with pytest.raises(ShapeMismatchError, match=r"block \(\d, \d\).*expected \(5, 5\)"):
        chunkflow.map_chunks(lambda w: w[:2], z, depth=1, blocks=(1, 1)).compute()


def test_bad_arguments() -> None:
    z = chunkflow.zeros((10, 10), chunks=(5, 5))
    with pytest.raises(InvalidSelectionError, match="boundary 'mirror'"):
        chunkflow.map_chunks(np.negative, z, boundary="mirror")
    with pytest.raises(InvalidSelectionError, match="depth along axis 1"):
        chunkflow.map_chunks(np.negative, z, depth=(1, -1))
    with pytest.raises(ShapeMismatchError, match="sources must match"):
        chunkflow.map_chunks(np.add, z, chunkflow.zeros((10, 11), chunks=5))


@pytest.mark.parametrize("value", [300, -1, 0.5, np.nan])
def test_a_constant_the_dtype_cannot_hold_is_refused_before_anything_is_created(
        tmp_path: Path, value: float) -> None:
    z = chunkflow.zeros((10, 10), chunks=(5, 5), dtype="u1")
    out = tmp_path / "out.zarr"
    with pytest.raises(InvalidArgumentError, match="constant_value .* does not fit the dtype uint8"):
        chunkflow.map_chunks(np.negative, z, out=str(out), depth=1, boundary="constant",
                             constant_value=value)
    assert not out.exists()
    # A function that pads with it itself (scipy's cval is a float) is not refused.
    got = chunkflow.map_chunks(ndimage.uniform_filter, z, depth=1, boundary="constant",
                               constant_value=value, size=3, mode="constant", cval=value)
    np.testing.assert_array_equal(got.compute(), ndimage.uniform_filter(
        np.zeros((10, 10), "u1"), 3, mode="constant", cval=value))


def test_a_function_padding_with_the_constant_itself_gets_windows_that_stop_at_the_edge() -> None:
    """scipy pads every pass of a separable filter with cval: the halo cannot."""
    image = np.random.default_rng(8).integers(0, 256, (9, 7)).astype("u1")
    z = chunkflow.array(image, chunks=(4, 3))
    want = ndimage.gaussian_filter(image, 1.0, mode="constant", cval=3)
    for func, kwargs in [(ndimage.gaussian_filter, {"sigma": 1.0, "mode": "constant", "cval": 3}),
                         (functools.partial(ndimage.gaussian_filter, sigma=1.0, cval=3),
                          {"mode": "constant"})]:
        got = chunkflow.map_chunks(func, z, depth=4, boundary="constant", constant_value=3,
                                   blocks=(1, 1), **kwargs).compute()
        np.testing.assert_array_equal(got, want)

    def first_halo(window: np.ndarray, block_info: dict[str, Any], **_: Any) -> np.ndarray:
        return np.full(window.shape, block_info["halo"][0][0], "u1")

    for cval, halo in [(3, 0), (3.0, 0), (2, 4)]:  # another cval: the padded window
        got = chunkflow.map_chunks(first_halo, z, depth=4, boundary="constant",
                                   constant_value=3, blocks=(1, 1), block_info=True,
                                   mode="constant", cval=cval).compute()
        assert got[0, 0] == halo and got[-1, -1] == 4


# ----------------------------------------------------------------- memory


def test_impossible_block_size_is_refused_with_advice() -> None:
    z = chunkflow.zeros((4096, 4096), chunks=(256, 256), dtype="f4")
    with pytest.raises(MemoryPlanError, match=r"more than max_memory 8\.00 MiB.*blocks=\(2, 2\)"):
        chunkflow.map_chunks(np.negative, z, depth=8, blocks=(4, 4), max_memory="8 MiB")
    with pytest.raises(MemoryPlanError, match="not even one chunk"):
        chunkflow.map_chunks(np.negative, z, depth=8, blocks=(1, 1), max_memory="1 MiB")


def test_summarize_chunks_errors_name_summarize_chunks() -> None:
    z = chunkflow.zeros((4096, 4096), chunks=(256, 256), dtype="f4")
    with pytest.raises(MemoryPlanError, match=r"^summarize_chunks: each task would need"):
        chunkflow.summarize_chunks(np.max, z, depth=8, blocks=(1, 1), max_memory="1 MiB")
    with pytest.raises(ShapeMismatchError, match=r"^summarize_chunks: source 1"):
        chunkflow.summarize_chunks(np.max, z, chunkflow.zeros((10, 11), chunks=5))


_PEAK_SCRIPT = """
import functools, json, math, sys, tracemalloc
import dask, numpy as np
from dask.callbacks import Callback
from scipy import ndimage
import chunkflow
from chunkflow.graph.map.chunks import _prepare_plan

folder, per_task = sys.argv[1], json.loads(sys.argv[2])
image = (np.random.default_rng(0).random((512, 384)) * 60000).astype("u2")
chunkflow.array(image, chunks=(64, 64), store=folder + "/in.zarr")
source = chunkflow.open(folder + "/in.zarr", mode="r", cache=False)
out = chunkflow.create((512, 384), chunks=(128, 128), dtype="f4", store=folder + "/out.zarr",
                       cache=False)
func = functools.partial(ndimage.gaussian_filter, sigma=3, mode="reflect", output=np.float32)
pending = chunkflow.map_chunks(func, source, out=out, depth=12, blocks=(1, 1), compute=False,
                               blocks_per_task=per_task)
_, tasks = _prepare_plan(func, [source], out=out, depth=12, boundary="reflect", constant_value=0,
                  dtype=None, chunks=(1, 1), block_info=False, trim=True, max_memory=None,
                  scheduler=None, storage_options=None, func_memory_factor=2.0, kwargs={},
                  summary_shape=None, blocks_per_task=per_task)

class PeakPerTask(Callback):
    # Peak traced memory of each map task (numpy allocations are traced).
    def __init__(self):
        super().__init__()
        self.peaks = []
    def _pretask(self, key, dsk, state):
        tracemalloc.reset_peak()
        self.start = tracemalloc.get_traced_memory()[0]
    def _posttask(self, key, result, dsk, state, worker_id):
        # A map task (fused by dask with what follows it) depends on the map plan.
        if any(str(dep).startswith("chunkflow-job-") for dep in state["dependencies"][key]):
            self.peaks.append(tracemalloc.get_traced_memory()[1] - self.start)

dask.compute(pending, scheduler="sync")  # once unmeasured: imports, codec set-up
meter = PeakPerTask()
tracemalloc.start()
with meter:
    dask.compute(pending, scheduler="sync")
print(json.dumps({"peaks": meter.peaks, "estimate": tasks.estimate.total,
                  "tasks": math.prod(tasks.dep.numblocks)}))
"""


@pytest.mark.slow
@pytest.mark.parametrize("per_task", [None, 1, [2, 3]], ids=["plan", "one", "2x3"])
def test_measured_peak_stays_under_the_plan(tmp_path: Path, per_task: Any) -> None:
    # A fresh interpreter: no other thread of the test session allocates meanwhile.
    import json
    import os
    import subprocess
    import sys

    root = Path(__file__).resolve().parents[3]
    done = subprocess.run([sys.executable, "-c", _PEAK_SCRIPT, str(tmp_path),
                           json.dumps(per_task)],
                          capture_output=True, text=True, cwd=root, timeout=300,
                          env={**os.environ, "PYTHONPATH": str(root)})
    assert done.returncode == 0, done.stderr
    measured = json.loads(done.stdout.strip().splitlines()[-1])
    peaks, estimate = measured["peaks"], measured["estimate"]
    # 4 x 3 blocks; one task per block, per group of 2 x 3, or as the plan groups them.
    assert len(peaks) == {"1": 12, "[2, 3]": 2}.get(json.dumps(per_task), measured["tasks"])
    assert max(peaks) <= estimate, (max(peaks), estimate)
    # The plan is not wildly pessimistic either.
    assert max(peaks) >= estimate / 4


def test_progress_counts_output_blocks(capfd: pytest.CaptureFixture[str]) -> None:
    z = chunkflow.zeros((40, 30), chunks=(10, 10))
    out = chunkflow.zeros((40, 30), chunks=(10, 10))
    seen: list[tuple[int, int]] = []
    chunkflow.map_chunks(np.negative, z, out=out, depth=2, blocks=(1, 1), scheduler="threads",
                         progress=lambda done, total: seen.append((done, total)),
                         blocks_per_task=1)
    assert seen[0] == (0, 12) and seen[-1] == (12, 12)
    pytest.importorskip("tqdm")  # the bar below is tqdm's (a test extra)
    chunkflow.map_chunks(np.negative, z, out=out, depth=2, blocks=(1, 1), progress=True,
                         blocks_per_task=1)
    assert "12/12" in capfd.readouterr().err


# ------------------------------------------------------- refusals create nothing


def test_refusals_create_no_output(tmp_path: Path) -> None:
    source = tmp_path / "in.zarr"
    chunkflow.zeros((4096, 4096), chunks=(256, 256), dtype="f4", store=str(source))
    target = tmp_path / "out.zarr"
    with pytest.raises(MemoryPlanError):
        chunkflow.map_chunks(np.negative, str(source), out=str(target), depth=8,
                             blocks=(4, 4), max_memory="8 MiB")
    assert not target.exists()
    with pytest.raises(InvalidSelectionError, match=r"blocks\[1\]"):
        chunkflow.map_chunks(np.negative, str(source), out=str(target), blocks=(1, 0))
    assert not target.exists()
    with pytest.raises(TypeError):  # an unknown dtype: refused before anything exists
        chunkflow.map_chunks(np.negative, str(source), out=str(target), dtype="no such type")
    assert not target.exists()
    with pytest.raises(ValueError, match=r"max_memory must be a non-negative.*'lots'"):
        chunkflow.map_chunks(np.negative, str(source), out=str(target), max_memory="lots")
    assert not target.exists()
    # The same call with a plan that holds creates it, like the source.
    done = chunkflow.map_chunks(np.negative, str(source), out=str(target), blocks=(4, 4),
                                max_memory="64 MiB")
    assert target.exists() and done.chunks == (256, 256) and done.dtype == np.float32


# ------------------------------------------------- the cache on a dask cluster


@pytest.mark.slow
def test_worker_cache_is_a_share_of_its_memory_and_the_plan_counts_it(tmp_path: Path) -> None:
    import distributed

    from chunkflow.config.resources import WORKER_CACHE_SHARE

    limit = 400 * 2**20
    share = int(limit * WORKER_CACHE_SHARE)  # 50 MiB
    # One chunk of 32 MiB float32: a task plans 192 MiB (window, decoding, result x2,
    # output and its chunk), within the worker's 400 MiB / 2 threads, but not once the
    # 50 MiB cache comes off first.
    path = str(tmp_path / "a.zarr")
    chunkflow.zeros((2048, 4096), chunks=(2048, 4096), dtype="f4", store=path)

    def cache_budget() -> tuple[int, int | None]:
        from chunkflow.config.resources import worker_memory_limit

        return chunkflow.get_cache().max_bytes, worker_memory_limit()

    with distributed.LocalCluster(n_workers=1, threads_per_worker=2, processes=True,
                                  memory_limit=limit, dashboard_address=":0") as cluster, \
            distributed.Client(cluster, set_as_default=False) as client:
        assert client.submit(cache_budget, pure=False).result() == (share, limit)
        # Outside a task (client.run), the worker process keeps the same budget.
        assert list(client.run(cache_budget).values()) == [(share, limit)]
        with pytest.raises(MemoryPlanError, match=r"less 50\.00 MiB of chunk cache"):
            chunkflow.map_chunks(np.negative, path, scheduler=client, compute=False)
        with chunkflow.config.set({"chunkflow.cache.max-bytes": 0}):  # no cache: the same task fits
            chunkflow.map_chunks(np.negative, path, scheduler=client, compute=False)
        # Default blocks count the cluster's threads, not this process's setting.
        with dask.config.set(num_workers=7):
            assert chunkflow.graph.scheduler.worker_threads(client) == 2
            with client.as_current():  # as a default Client: the plan finds it too
                assert chunkflow.graph.scheduler.worker_threads() == 2
                with pytest.raises(MemoryPlanError, match=r"each worker's 400\.00 MiB less"):
                    chunkflow.map_chunks(np.negative, path, compute=False)
                small = chunkflow.zeros((1024, 1024), chunks=(64, 64), dtype="u2")
                assert np.prod(chunkflow.to_dask(small).numblocks) == 8  # 4 x 2 threads
            assert np.prod(chunkflow.to_dask(small).numblocks) == 32  # >= 4 x 7
    assert chunkflow.get_cache().max_bytes != share  # this process: not a worker
