"""chunkflow.pyramid(resume=True): an interrupted pyramid finishes where it stopped,
bit-identical to an uninterrupted run, and a different job is refused."""

from __future__ import annotations

from pathlib import Path

import dask
import numpy as np
import pytest

import chunkflow
from chunkflow.errors import ChunkDecodeError, JobMismatchError, PyramidError
from chunkflow.graph.pyramid.downsample import downsample
from chunkflow.jobs import job_status

# Small tasks: the first stage has many of them.
BUDGET = "12 KiB"


def _source(tmp_path: Path) -> tuple[str, np.ndarray]:
    image = np.random.default_rng(7).integers(0, 5000, (120, 100)).astype("u2")
    location = str(tmp_path / "source.zarr")
    chunkflow.array(image, chunks=(16, 16), store=location, zarr_format=2)
    return location, image


def _levels(location: str) -> list[np.ndarray]:
    group = chunkflow.open_group(location, mode="r")
    paths = [d["path"] for d in group.attrs["multiscales"][0]["datasets"]]
    return [group[p][...] for p in paths]


def _stamps(folder: Path) -> dict[str, int]:
    return {p.name: p.stat().st_mtime_ns for p in folder.iterdir() if not p.name.startswith(".")}


def _corrupt(chunk: Path) -> bytes:
    """Garbage of the same length (the source's stored size is part of the job)."""
    original = chunk.read_bytes()
    chunk.write_bytes(b"\xff" * len(original))
    return original


def test_an_interrupted_pyramid_resumes_bit_identical(tmp_path: Path) -> None:
    source, image = _source(tmp_path)
    out = str(tmp_path / "out.zarr")
    chunk = Path(source) / "6.5"  # read by one task of the first stage, late in the order
    original = _corrupt(chunk)
    with pytest.raises(ChunkDecodeError):
        chunkflow.pyramid(source, out, scheduler="sync", resume=True, max_memory=BUDGET)
    group = chunkflow.open_group(out, mode="r")
    assert "multiscales" not in group.attrs  # not an image until every level is written
    # Each stage records its tasks on its last level; the first stage stopped part-way.
    statuses = [job_status(group[name]) for name in ("0", "1", "2", "3")]
    first_stage = max((status for status in statuses if status is not None),
                      key=lambda status: status.total)  # the first stage has most tasks
    assert 0 < first_stage.done < first_stage.total
    chunk.write_bytes(original)
    written = _stamps(Path(out, "0"))

    ran: list[tuple[int, int]] = []
    chunkflow.pyramid(source, out, scheduler="sync", resume=True, max_memory=BUDGET,
                      progress=lambda done, total: ran.append((done, total)))
    resumed = _levels(out)
    finished = chunkflow.open_group(out, mode="r")
    assert all(job_status(finished[name]) is None for name in ("0", "1", "2", "3"))
    assert ran[-1][0] == ran[-1][1]
    # The tasks recorded before were skipped: their level-0 chunks were not rewritten.
    kept = [name for name, stamp in written.items() if _stamps(Path(out, "0"))[name] == stamp]
    assert len(kept) >= first_stage.done
    chunkflow.pyramid(source, str(tmp_path / "whole.zarr"), scheduler="sync", max_memory=BUDGET)
    for got, want in zip(resumed, _levels(str(tmp_path / "whole.zarr")), strict=True):
        np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(resumed[1], downsample(image, (2, 2), "mean"))


def test_resuming_a_different_job_is_refused(tmp_path: Path) -> None:
    source, _ = _source(tmp_path)
    out = str(tmp_path / "out.zarr")
    original = _corrupt(Path(source) / "6.5")
    with pytest.raises(ChunkDecodeError):
        chunkflow.pyramid(source, out, scheduler="sync", resume=True, max_memory=BUDGET)
    Path(source, "6.5").write_bytes(original)
    group = chunkflow.open_group(out, mode="r")
    before = {name: (group[name][...], dict(group[name].attrs)) for name in group}
    with pytest.raises(JobMismatchError, match="pyramid"):  # other levels per stage too
        chunkflow.pyramid(source, out, scheduler="sync", resume=True, method="max")
    with pytest.raises(PyramidError, match="found level '0'"):
        chunkflow.pyramid(source, out, scheduler="sync", resume=True, chunks=(32, 32))
    group = chunkflow.open_group(out, mode="r")
    for name, (values, attrs) in before.items():  # refused: nothing changed
        np.testing.assert_array_equal(group[name][...], values)
        assert dict(group[name].attrs) == attrs
    with pytest.raises(PyramidError, match="pass one of them"):
        chunkflow.pyramid(source, out, resume=True, overwrite=True)


def test_a_resume_on_more_threads_keeps_the_stages_it_started_with(tmp_path: Path) -> None:
    # The default stages depend on the worker threads (tasks enough for each): a resume
    # elsewhere reads them from the marks instead of refusing its own job.
    source, _ = _source(tmp_path)
    out = str(tmp_path / "out.zarr")
    original = _corrupt(Path(source) / "6.5")
    with pytest.raises(ChunkDecodeError):
        chunkflow.pyramid(source, out, scheduler="sync", resume=True)
    Path(source, "6.5").write_bytes(original)
    with dask.config.set(num_workers=8):
        fresh = chunkflow.pyramid(source, chunkflow.MemoryStore(), compute=False,
                                  scheduler="threads")
        assert len(fresh.dask) != len(chunkflow.pyramid(  # another plan from scratch
            source, chunkflow.MemoryStore(), compute=False, scheduler="sync").dask)
        chunkflow.pyramid(source, out, scheduler="threads", resume=True)
    chunkflow.pyramid(source, str(tmp_path / "whole.zarr"), scheduler="sync")
    for got, want in zip(_levels(out), _levels(str(tmp_path / "whole.zarr")), strict=True):
        np.testing.assert_array_equal(got, want)
