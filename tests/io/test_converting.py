"""``chunkflow.convert``'s contract beyond each reader: each shard written once, the
schedulers, the refusals (which create nothing), overwrite and ``compute=False``."""

from __future__ import annotations

import numpy as np
import pytest
from dask.delayed import Delayed

import chunkflow
from chunkflow.errors import (
    ContainsGroupError,
    ForeignContentError,
    InvalidArgumentError,
    MemoryPlanError,
    PyramidError,
)
from chunkflow.testing.counting import CountingMapping
from tests.io.conftest import check_image, numpy_pyramid

tifffile = pytest.importorskip("tifffile")


def _tiff(tmp_path, shape=(6, 90, 70), seed=0) -> tuple[str, np.ndarray]:
    values = np.random.default_rng(seed).integers(0, 60000, shape, dtype="u2")
    path = tmp_path / "in.tif"
    tifffile.imwrite(path, values, photometric="minisblack", tile=(16, 16))
    return str(path), values


def test_each_shard_of_each_level_is_written_once() -> None:
    values = np.random.default_rng(1).integers(0, 255, (8, 100, 90), dtype="u1")
    out = CountingMapping()
    levels = chunkflow.convert(values, out, chunks=(2, 8, 8), shards=(4, 16, 16), levels=4)
    writes = out.chunk_writes()
    assert writes and set(writes.values()) == {1}
    expected = sum(int(np.prod([-(-n // s) for n, s in zip(level.shape, level.shards)]))
                   for level in levels)
    assert len(writes) == expected  # no shard is empty here: every one written, once
    for level, want in zip(levels, numpy_pyramid(values, "zyx", 4)):
        np.testing.assert_array_equal(level[...], want)


@pytest.mark.parametrize("scheduler", ["processes", "threads", "sync"])
def test_the_schedulers_give_the_same_image(tmp_path, scheduler) -> None:
    source, values = _tiff(tmp_path)
    out = tmp_path / f"{scheduler}.zarr"
    chunkflow.convert(source, out, chunks=(2, 16, 16), scheduler=scheduler, max_memory="4 MiB")
    check_image(out, values, "zyx", [1.0] * 3, {}, None)


def test_a_distributed_cluster(tmp_path) -> None:
    distributed = pytest.importorskip("distributed")
    source, values = _tiff(tmp_path)
    with distributed.LocalCluster(n_workers=1, threads_per_worker=2, processes=True,
                                  dashboard_address=None) as cluster, \
            distributed.Client(cluster) as client:
        chunkflow.convert(source, tmp_path / "out.zarr", chunks=(2, 16, 16), scheduler=client)
    check_image(tmp_path / "out.zarr", values, "zyx", [1.0] * 3, {}, None)


def test_refusals_create_nothing(tmp_path) -> None:
    source, _ = _tiff(tmp_path)
    out = tmp_path / "out.zarr"
    cases = [
        (MemoryPlanError, {"max_memory": "10 KiB"}),
        (InvalidArgumentError, {"channel_names": ["a", "b"]}),
        (InvalidArgumentError, {"shards": (1, 32, 32), "zarr_format": 2}),
        (InvalidArgumentError, {"zarr_format": 4}),
        (InvalidArgumentError, {"chunks": (4, 16, 16), "shards": (6, 32, 32)}),
        (InvalidArgumentError, {"chunks": (4, 16)}),
        (InvalidArgumentError, {"scale": (1.0, -1.0, 1.0)}),
        (InvalidArgumentError, {"scale": {"q": 2.0}}),
        (InvalidArgumentError, {"levels": 0}),
        (InvalidArgumentError, {"resume": True, "overwrite": True}),
        (PyramidError, {"axes": "tcx"}),  # NGFF needs 2 or 3 space axes
        (PyramidError, {"axes": "ytx"}),  # NGFF orders time before space
    ]
    for error, kwargs in cases:
        with pytest.raises(error):
            chunkflow.convert(source, out, **kwargs)
        assert not out.exists(), kwargs


def test_an_existing_output_needs_overwrite(tmp_path) -> None:
    source, values = _tiff(tmp_path)
    out = tmp_path / "out.zarr"
    chunkflow.convert(source, out, levels=2)
    with pytest.raises(ContainsGroupError, match="overwrite=True"):
        chunkflow.convert(source, out)
    (out / "notes.txt").write_text("mine")  # not Zarr: a writer leaves it alone
    with pytest.raises(ForeignContentError, match="notes.txt"):
        chunkflow.convert(source, out, levels=3, overwrite=True)
    assert (out / "notes.txt").read_text() == "mine"
    (out / "notes.txt").unlink()
    chunkflow.convert(source, out, levels=3, overwrite=True)
    check_image(out, values, "zyx", [1.0] * 3, {}, None, levels=3)


def test_compute_false_writes_when_computed(tmp_path) -> None:
    values = np.arange(2 * 40 * 30, dtype="f4").reshape(2, 40, 30)
    job = chunkflow.convert(values, tmp_path / "out.zarr", axes="cyx", compute=False)
    assert isinstance(job, Delayed)
    job.compute(scheduler="sync")
    check_image(tmp_path / "out.zarr", values, "cyx", [1.0] * 3, {}, ["Channel 0", "Channel 1"])


def test_default_layout_is_sharded_with_one_channel_per_chunk(tmp_path) -> None:
    values = np.zeros((2, 3, 40, 600, 700), "u2")
    levels = chunkflow.convert(values, tmp_path / "out.zarr", compute=True, levels=2)
    assert levels[0].chunks == (1, 1, 40, 64, 64)
    assert levels[0].shards is not None and levels[0].shards[:2] == (1, 1)
    assert all(s % c == 0 for s, c in zip(levels[0].shards, levels[0].chunks))
