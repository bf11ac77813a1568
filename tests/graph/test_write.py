"""chunkflow.store: dask arrays written with every chunk owned by exactly one task."""

from __future__ import annotations

import itertools
from pathlib import Path

import dask
import dask.array as da
import numpy as np
import pytest
from dask.delayed import Delayed
from hypothesis import given, settings
from hypothesis import strategies as st

import chunkflow
from chunkflow.errors import InvalidSelectionError, ReadOnlyError, ShapeMismatchError
from chunkflow.graph import aligned_edges
from chunkflow.testing import CountingMapping

pytestmark = pytest.mark.lowest_deps  # also run at the lowest dependency versions


@given(
    start=st.integers(0, 50), length=st.integers(0, 60),
    chunk=st.integers(1, 12), per_block=st.integers(1, 4),
)
def test_aligned_edges_cover_the_range_on_chunk_boundaries(
    start: int, length: int, chunk: int, per_block: int
) -> None:
    edges = aligned_edges(start, start + length, chunk, per_block)
    assert edges[0] == 0 and edges[-1] == length
    assert all(a < b for a, b in itertools.pairwise(edges))
    assert all((start + e) % (chunk * per_block) == 0 for e in edges[1:-1])
    # No write block is longer than per_block chunks.
    assert all(b - a <= chunk * per_block for a, b in itertools.pairwise(edges))


def test_unaligned_blocks_write_each_chunk_once() -> None:
    data = np.arange(60 * 70, dtype="i4").reshape(60, 70)
    mapping = CountingMapping()
    z = chunkflow.zeros((60, 70), chunks=(16, 16), dtype="i4", store=mapping)
    source = da.from_array(data, chunks=(11, 13))  # never lines up with 16x16 chunks
    with dask.config.set(scheduler="threads", num_workers=8):
        chunkflow.store(source, z)
    np.testing.assert_array_equal(z[:], data)
    writes = mapping.chunk_writes()
    assert len(writes) == z.nchunks  # 4 x 5 chunks
    assert set(writes.values()) == {1}, writes


def test_plain_dask_store_rewrites_shared_chunks() -> None:
    # The cost chunkflow.store avoids: da.store writes a shared chunk once per block.
    data = np.ones((60, 70), dtype="i4")
    mapping = CountingMapping()
    z = chunkflow.zeros((60, 70), chunks=(16, 16), dtype="i4", store=mapping,
                        synchronizer="thread")
    with dask.config.set(scheduler="sync"):
        da.store(da.from_array(data, chunks=(11, 13)), z, lock=False)
    assert max(mapping.chunk_writes().values()) > 1


@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_store_matches_numpy_and_writes_each_chunk_at_most_once(data: st.DataObject) -> None:
    ndim = data.draw(st.integers(0, 3), label="ndim")
    shape = tuple(data.draw(st.lists(st.integers(1, 20), min_size=ndim, max_size=ndim)))
    chunks = tuple(data.draw(st.integers(1, n + 3)) for n in shape)
    region = []
    for n in shape:
        start = data.draw(st.integers(0, n))
        region.append(slice(start, data.draw(st.integers(start, n))))
    region_shape = tuple(s.stop - s.start for s in region)
    blocks = tuple(data.draw(st.integers(1, max(1, m) + 2)) for m in region_shape)
    values = np.arange(int(np.prod(region_shape)), dtype="i8").reshape(region_shape) + 1

    mapping = CountingMapping()
    z = chunkflow.full(shape, -1, chunks=chunks, dtype="i8", store=mapping)
    mapping.writes.clear()
    with dask.config.set(scheduler="threads"):
        chunkflow.store(da.from_array(values, chunks=blocks), z, tuple(region))
    expected = np.full(shape, -1, dtype="i8")
    expected[tuple(region)] = values
    np.testing.assert_array_equal(z[...], expected)
    assert all(n == 1 for n in mapping.chunk_writes().values())


def test_region_with_offsets_leaves_the_rest_alone(tmp_path: Path) -> None:
    z = chunkflow.full((30, 30), 7, chunks=(8, 8), dtype="u2", store=str(tmp_path / "r.zarr"))
    source = da.arange(17 * 19, dtype="u2", chunks=5).reshape(17, 19).rechunk((6, 7))
    chunkflow.store(source, z, (slice(3, 20), slice(5, 24)))
    expected = np.full((30, 30), 7, dtype="u2")
    expected[3:20, 5:24] = np.arange(17 * 19, dtype="u2").reshape(17, 19)
    np.testing.assert_array_equal(chunkflow.open(str(tmp_path / "r.zarr"), mode="r")[:], expected)


def test_compute_false_writes_nothing_until_computed() -> None:
    z = chunkflow.zeros((10, 10), chunks=(4, 4), dtype="f4")
    pending = chunkflow.store(da.ones((10, 10), chunks=3), z, compute=False)
    assert isinstance(pending, Delayed)
    assert z.nchunks_initialized == 0
    assert pending.compute() is None
    assert float(z[:].sum()) == 100.0


def test_several_sources_and_targets_in_one_graph() -> None:
    a = chunkflow.zeros((9,), chunks=4, dtype="i4")
    b = chunkflow.zeros((5, 5), chunks=2, dtype="i4")
    chunkflow.store(
        [da.arange(9, chunks=2, dtype="i4"), da.ones((2, 3), chunks=1, dtype="i4")],
        [a, b],
        [None, (slice(1, 3), slice(2, 5))],
    )
    np.testing.assert_array_equal(a[:], np.arange(9))
    assert int(b[:].sum()) == 6 and int(b[1:3, 2:5].sum()) == 6


def test_empty_source_blocks_are_skipped() -> None:
    z = chunkflow.zeros(5, chunks=2, dtype="i4")
    chunkflow.store(da.from_array(np.arange(5, dtype="i4"), chunks=((0, 3, 0, 2),)), z)
    np.testing.assert_array_equal(z[:], np.arange(5))


def test_zero_length_source_is_a_no_op() -> None:
    z = chunkflow.zeros((4, 0), chunks=(2, 2), dtype="i4")
    chunkflow.store(da.zeros((4, 0), chunks=2, dtype="i4"), z)
    assert z.nchunks_initialized == 0


def test_synchronized_target_with_unaligned_blocks(tmp_path: Path) -> None:
    data = np.random.default_rng(0).integers(0, 1000, size=(50, 45), dtype="i4")
    z = chunkflow.zeros((50, 45), chunks=(16, 16), dtype="i4", synchronizer="thread",
                        store=str(tmp_path / "s.zarr"))
    with dask.config.set(scheduler="threads", num_workers=8):
        chunkflow.store(da.from_array(data, chunks=(7, 9)), z)
    np.testing.assert_array_equal(z[:], data)


@pytest.mark.slow
def test_store_on_a_local_cluster(tmp_path: Path) -> None:
    import distributed
    data = np.arange(40 * 50, dtype="f8").reshape(40, 50)
    z = chunkflow.zeros((40, 50), chunks=(16, 16), dtype="f8", store=str(tmp_path / "c.zarr"))
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster, \
            distributed.Client(cluster):
        chunkflow.store(da.from_array(data, chunks=(9, 11)), z)
    fresh = chunkflow.open(str(tmp_path / "c.zarr"), mode="r", cache=False)
    np.testing.assert_array_equal(fresh[:], data)


def test_bad_input_names_the_problem_and_writes_nothing() -> None:
    z = chunkflow.zeros((6, 6), chunks=(4, 4), dtype="i4", path="img")
    with pytest.raises(ShapeMismatchError, match=r"'img'.*\(5, 6\)"):
        chunkflow.store(da.ones((5, 6), chunks=3), z)
    with pytest.raises(InvalidSelectionError, match="unit steps"):
        chunkflow.store(da.ones((3, 6), chunks=3), z, (slice(0, 6, 2), slice(None)))
    with pytest.raises(InvalidSelectionError, match="tuple of at most 2 slices"):
        chunkflow.store(da.ones((6, 6), chunks=3), z, (0, slice(None)))
    with pytest.raises(TypeError, match="dask arrays"):
        chunkflow.store([np.ones((6, 6))], [z])
    with pytest.raises(ValueError, match="one output and one selection per source"):
        chunkflow.store([da.ones((6, 6), chunks=3)], [z, z])
    unknown = da.from_array(np.arange(6), chunks=2)
    unknown = unknown[unknown > 2]
    with pytest.raises(ShapeMismatchError, match="unknown chunk sizes"):
        chunkflow.store(unknown, chunkflow.zeros(3, chunks=2, dtype="i8"))
    assert z.nchunks_initialized == 0
    reader = chunkflow.open_array(z.store, path="img", mode="r")
    with pytest.raises(ReadOnlyError, match="read-only"):
        chunkflow.store(da.ones((6, 6), chunks=3), reader)


def test_a_default_client_is_the_scheduler_chosen_by_default() -> None:
    """A ``Client`` made the default sets dask's ``scheduler`` to "dask.distributed";
    compute, progress and the memory budget must then see that client, not threads."""
    import distributed

    from chunkflow.graph.scheduler import scheduler_choice

    with distributed.LocalCluster(n_workers=1, threads_per_worker=2, processes=False,
                                  dashboard_address=None) as cluster, \
            distributed.Client(cluster) as client:
        assert scheduler_choice(None) == (None, client)
        seen: list[tuple[int, int]] = []
        chunkflow.compute(da.ones(8, chunks=2).sum(), progress=lambda *n: seen.append(n))
        assert seen, "the distributed progress callback ran"
    assert scheduler_choice(None) == (None, None)
