"""``Array.verify`` / ``Group.verify``: missing, corrupt, unexpected and lost chunks,
for plain, v2 and sharded arrays, on the default path and on a dask scheduler."""

from __future__ import annotations

import itertools
import struct
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
import zarr

import chunkflow
from chunkflow.errors import MemoryPlanError
from chunkflow.jobs import WRITTEN_KEY
from chunkflow.storage import LocalStore, MemoryStore
from tests.helpers.jobs import logged_filter

SHAPE = (10, 12)
CHUNKS = (4, 5)  # a 3x3 grid with edge chunks


def data() -> np.ndarray:
    values = np.arange(np.prod(SHAPE), dtype="i4").reshape(SHAPE) + 1
    values[:4, :5] = 0  # chunk (0, 0) all fill: not stored
    return values


def stored_cells(values: np.ndarray, chunks: tuple[int, ...], fill: int = 0) -> set[tuple[int, ...]]:
    """numpy's answer: the grid cells holding something besides the fill value."""
    grid = [range(-(-n // c)) for n, c in zip(values.shape, chunks)]
    return {cell for cell in itertools.product(*grid)
            if (values[tuple(slice(i * c, (i + 1) * c) for i, c in zip(cell, chunks))] != fill).any()}


@pytest.fixture(params=[2, 3], ids=["v2", "v3"])
def written(request: pytest.FixtureRequest, tmp_path: Path) -> chunkflow.Array:
    return chunkflow.array(data(), chunks=CHUNKS, store=str(tmp_path / "a.zarr"),
                           zarr_format=request.param)


def chunk_file(array: chunkflow.Array, cell: tuple[int, ...]) -> Path:
    store = array.store
    assert isinstance(store, LocalStore)
    sep = "." if array.zarr_format == 2 else "/"
    key = sep.join(str(i) for i in cell) if array.zarr_format == 2 else "c/" + sep.join(map(str, cell))
    return Path(store.root) / key


def test_a_clean_array_is_ok_and_counts_what_numpy_says(written: chunkflow.Array) -> None:
    report = written.verify()
    expected = stored_cells(data(), CHUNKS)
    assert report.ok, str(report)
    assert (report.chunks, report.stored, report.checked) == (9, len(expected), len(expected))
    assert (report.missing, report.corrupt, report.unexpected, report.lost) == (1, 0, 0, 0)
    assert report.missing_keys == ("0.0" if written.zarr_format == 2 else "c/0/0",)
    assert report.arrays == ("/",)


def test_a_corrupt_chunk_is_named(written: chunkflow.Array) -> None:
    target = chunk_file(written, (1, 2))
    target.write_bytes(b"\x00garbage" * 3)
    report = written.verify()
    assert not report.ok and report.corrupt == 1
    key, why = report.corrupt_keys[0]
    assert key == target.name if written.zarr_format == 2 else key == "c/1/2"
    assert "does not decode" in why
    # zarr-python, the oracle, cannot read that chunk either.
    with pytest.raises(Exception):  # noqa: B017 - whatever its codec raises
        zarr.open_array(written.store.root, mode="r")[4:8, 10:12]


def test_a_chunk_of_the_wrong_size_is_corrupt(tmp_path: Path) -> None:
    z = chunkflow.array(data(), chunks=CHUNKS, store=str(tmp_path / "raw.zarr"), zarr_format=2,
                        compressor=None)
    path = chunk_file(z, (2, 2))
    path.write_bytes(path.read_bytes()[:-4])  # a torn raw chunk
    report = z.verify()
    assert report.corrupt == 1 and report.corrupt_keys[0][0] == "2.2"


def test_unexpected_keys_are_reported(written: chunkflow.Array) -> None:
    root = Path(written.store.root)
    (root / "notes.txt").write_text("hello")
    outside = "5.0" if written.zarr_format == 2 else "c/5/0"
    (root / outside).parent.mkdir(parents=True, exist_ok=True)
    (root / outside).write_bytes(chunk_file(written, (1, 1)).read_bytes())
    report = written.verify()
    assert not report.ok and report.unexpected == 2
    assert sorted(report.unexpected_keys) == sorted(["notes.txt", outside])
    assert report.corrupt == report.lost == 0


def test_a_chunk_a_finished_job_stored_and_now_gone_is_lost(tmp_path: Path, log: Path) -> None:
    src = chunkflow.array(data(), chunks=CHUNKS, store=str(tmp_path / "src.zarr"))
    out = chunkflow.map_chunks(logged_filter, src, out=str(tmp_path / "out.zarr"), blocks=(1, 1),
                               block_info=True, scheduler="sync", log=str(log))
    assert out.verify().ok and out.verify().lost == 0
    assert (Path(out.store.root) / WRITTEN_KEY).exists()
    chunk_file(out, (2, 1)).unlink()  # deleted behind chunkflow's back
    report = out.verify()
    assert not report.ok and (report.lost, report.lost_keys) == (1, ("c/2/1",))
    assert "c/2/1" not in report.missing_keys
    # The source was never a job's output: its missing chunk is only missing.
    chunk_file(src, (2, 1)).unlink()
    assert src.verify().ok and src.verify().missing_keys == ("c/0/0", "c/2/1")


def test_a_deletion_through_chunkflow_is_no_loss(tmp_path: Path, log: Path) -> None:
    src = chunkflow.array(data(), chunks=CHUNKS, store=str(tmp_path / "src.zarr"))
    out = chunkflow.map_chunks(logged_filter, src, out=str(tmp_path / "out.zarr"), blocks=(1, 1),
                               block_info=True, scheduler="sync", log=str(log))
    out[8:, 10:] = 0  # chunk (2, 2) all fill now: deleted by the engine
    report = out.verify()
    assert report.ok and report.lost == 0 and "c/2/2" in report.missing_keys


def sharded(tmp_path: Path) -> chunkflow.Array:
    return chunkflow.create_array(str(tmp_path / "s.zarr"), data=data(), chunks=(2, 5),
                                  shards=(4, 10), compressors={"name": "zstd"})


def inner_offsets(shard: bytes, count: int) -> np.ndarray:
    """The (offset, nbytes) pairs of a shard's index (at the end, then a crc32c)."""
    index = shard[-(16 * count + 4):-4]
    return np.array(struct.unpack(f"<{2 * count}Q", index)).reshape(count, 2)


def test_a_sharded_array_checks_every_inner_chunk(tmp_path: Path) -> None:
    z = sharded(tmp_path)
    report = z.verify()
    assert report.ok and report.chunks == 3 * 2  # the grid of shards
    # numpy's answer for the inner chunks stored: those not all fill.
    assert report.inner_chunks == len(stored_cells(data(), (2, 5)))
    path = Path(z.store.root) / "c/1/0"
    shard = bytearray(path.read_bytes())
    offset, _ = inner_offsets(bytes(shard), 4)[3]  # inner chunk (1, 1) of the shard
    shard[offset:offset + 4] = b"\xff\xff\xff\xff"  # not a zstd frame any more
    path.write_bytes(bytes(shard))
    report = z.verify()
    assert report.corrupt == 1 and report.corrupt_keys[0][0] == "c/1/0"
    assert "inner chunk (1, 1)" in report.corrupt_keys[0][1]


def test_a_shard_with_a_broken_index_is_corrupt(tmp_path: Path) -> None:
    z = sharded(tmp_path)
    path = Path(z.store.root) / "c/2/1"
    path.write_bytes(path.read_bytes()[:-3])
    report = z.verify()
    assert report.corrupt == 1 and "shard index" in report.corrupt_keys[0][1]


class Blind(MemoryStore):
    """A store that lists nothing (an HTTP server without folder listings)."""

    def _list_prefix(self, prefix: str) -> Iterator[str]:
        return iter(())


def test_a_store_that_cannot_list_is_read_key_by_key() -> None:
    store = Blind()
    z = chunkflow.array(data(), chunks=CHUNKS, store=store)
    store["c/1/1"] = b"garbage"
    report = z.verify()
    assert report.unlisted == ("/",) and report.stored == 8 and report.missing == 1
    assert report.corrupt == 1 and "cannot list" in str(report)


def test_group_verify_checks_every_array(tmp_path: Path) -> None:
    root = chunkflow.group(str(tmp_path / "g.zarr"))
    root.create_array("a", data=data(), chunks=CHUNKS)
    root.create_group("sub").create_array("b", data=data(), chunks=(5, 12))
    assert root.verify().arrays == ("a", "sub/b") and root.verify().ok
    (tmp_path / "g.zarr" / "sub" / "b" / "c" / "1" / "0").write_bytes(b"bad")
    report = chunkflow.verify(root)
    assert report.corrupt_keys[0][0] == "sub/b/c/1/0" and not report.ok


@pytest.mark.parametrize("scheduler", ["sync", "threads", "processes"])
def test_a_scheduler_gives_the_same_report(written: chunkflow.Array, scheduler: str) -> None:
    chunk_file(written, (0, 1)).write_bytes(b"bad")
    (Path(written.store.root) / "stray").write_bytes(b"")
    seen: list[tuple[int, int]] = []
    on = chunkflow.verify(written, scheduler=scheduler,
                          progress=lambda done, total: seen.append((done, total)))
    assert on == written.verify() and on.corrupt == on.unexpected == 1
    assert seen and seen[-1][0] == seen[-1][1]


def test_max_memory_refuses_a_chunk_that_does_not_fit(written: chunkflow.Array) -> None:
    with pytest.raises(MemoryPlanError, match="max_memory"):
        chunkflow.verify(written, scheduler="sync", max_memory=64)
