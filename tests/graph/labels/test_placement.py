"""On a distributed cluster each block's scan and write run on one worker, so the write
finds the labels the scan kept; the labels are scipy's either way."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import ndimage

import chunkflow
from chunkflow.graph.labels.placement import block_of, block_owners


@settings(max_examples=200, deadline=None)
@given(count=st.integers(0, 300),
       threads=st.dictionaries(st.text("abc", min_size=1, max_size=3), st.integers(0, 8),
                               min_size=1, max_size=6))
def test_every_block_has_one_owner_in_runs_by_threads(count: int, threads: dict[str, int]) -> None:
    blocks = [(i // 7, i % 7) for i in range(count)]
    owners = block_owners(blocks, threads)
    assert set(owners) == set(blocks)
    order = sorted(threads)
    seen = [order.index(owners[b]) for b in blocks]
    assert seen == sorted(seen)  # contiguous runs, workers in address order
    total = sum(max(n, 1) for n in threads.values())
    for worker in threads:  # each run is its share of the threads, to one block
        share = count * max(threads[worker], 1) / total
        assert abs(seen.count(order.index(worker)) - share) <= 1


def test_only_scans_and_writes_are_placed() -> None:
    assert block_of(("chunkflow-label-scan-t", 0, 1)) == (0, 1)
    assert block_of(("chunkflow-label-write-t", 4)) == (4,)
    assert block_of(("chunkflow-labelmerge-info-t", 0, 1)) is None
    assert block_of("chunkflow-labeljob-t") is None


def test_each_block_is_scanned_and_written_on_one_worker(tmp_path: Path,
                                                          cluster_client: Any) -> None:
    from distributed import get_task_stream

    image = np.random.default_rng(5).random((96, 96)) > 0.55
    src = chunkflow.array(image, chunks=(16, 16), store=str(tmp_path / "src.zarr"))
    with get_task_stream(cluster_client) as stream:
        out, count = chunkflow.label(src, str(tmp_path / "out.zarr"), blocks=(1, 1),
                                     scheduler=cluster_client)
    expected, n = ndimage.label(image)
    assert count == n
    np.testing.assert_array_equal(out[:], expected)
    where: dict[tuple[int, ...], set[str]] = {}
    for task in stream.data:
        block = block_of(tuple(task["key"]) if isinstance(task["key"], list) else task["key"])
        if block is not None:
            where.setdefault(block, set()).add(task["worker"])
    assert len(where) == 36
    assert all(len(workers) == 1 for workers in where.values()), where
    assert len(set().union(*where.values())) == 2  # both workers took blocks


@settings(max_examples=25, deadline=None)
@given(shape=st.tuples(st.integers(1, 40), st.integers(1, 40)),
       block=st.tuples(st.integers(1, 12), st.integers(1, 12)),
       density=st.floats(0.2, 0.8), seed=st.integers(0, 2**16))
def test_the_merge_fused_into_one_task_labels_as_scipy(shape: tuple[int, int],
                                                       block: tuple[int, int],
                                                       density: float, seed: int) -> None:
    import dask

    from chunkflow.graph.labels.fusion import fuse_merge

    image = np.random.default_rng(seed).random(shape) > density
    src = chunkflow.array(image, chunks=block)
    job = chunkflow.label(src, chunkflow.MemoryStore(), blocks=(1, 1), compute=False)
    graph = dict(job.__dask_graph__())
    fused = fuse_merge(graph, job.key)
    assert len(fused) < len(graph) or len(graph) < 10  # the merge is one task
    out, count = dask.get(fused, job.key)
    expected, n = ndimage.label(image)
    assert count == n
    np.testing.assert_array_equal(out[:], expected)


def test_fill_holes_on_a_cluster_matches_scipy(tmp_path: Path,
                                                         cluster_client: Any) -> None:
    image = np.random.default_rng(9).random((64, 64)) > 0.45
    src = chunkflow.array(image, chunks=(16, 16), store=str(tmp_path / "src.zarr"))
    filled = chunkflow.ndimage.binary_fill_holes(src, out=str(tmp_path / "filled.zarr"),
                                                 scheduler=cluster_client)
    np.testing.assert_array_equal(np.asarray(filled[:]), ndimage.binary_fill_holes(image))


class _Client:
    """What placed() asks of a client: its cluster and its workers."""

    def __init__(self, cluster: Any) -> None:
        self.cluster = cluster

    def scheduler_info(self, n_workers: int = -1) -> dict[str, Any]:
        return {"workers": {"tcp://a:1": {"nthreads": 1}, "tcp://b:2": {"nthreads": 1}}}


class _Cluster:
    _adaptive = None


def test_blocks_are_placed_only_on_a_fixed_set_of_workers() -> None:
    from chunkflow.graph.labels.placement import placed

    graph = {("chunkflow-label-scan-t", 0): (abs, -1), ("chunkflow-label-scan-t", 1): (abs, -2),
             "done": (sum, [("chunkflow-label-scan-t", 0), ("chunkflow-label-scan-t", 1)])}
    fixed = placed(graph, "done", _Client(_Cluster()))
    annotations = fixed.__dask_graph__().layers[fixed._layer].annotations
    assert annotations["workers"](("chunkflow-label-scan-t", 1)) == ["tcp://b:2"]
    assert annotations["workers"]("done") is None
    adapting = _Cluster()
    adapting._adaptive = object()  # cluster.adapt() was called: workers come and go
    for client in (_Client(adapting), _Client(None)):  # None: a client of an address
        assert not hasattr(placed(graph, "done", client).__dask_graph__(), "layers")
