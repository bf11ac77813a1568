"""chunkflow.pyramid(resume=True): an interrupted pyramid finishes where it stopped,
bit-identical to an uninterrupted run, and a different job is refused."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import chunkflow
from chunkflow.core.jobs import job_status
from chunkflow.errors import ChunkDecodeError, JobMismatchError, PyramidError
from chunkflow.graph.downsample import downsample

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
    before = chunkflow.open_group(out, mode="r")["1"][...]
    with pytest.raises(JobMismatchError, match="pyramid"):
        chunkflow.pyramid(source, out, scheduler="sync", resume=True, method="max")
    np.testing.assert_array_equal(chunkflow.open_group(out, mode="r")["1"][...], before)
    with pytest.raises(PyramidError, match="pass one of them"):
        chunkflow.pyramid(source, out, resume=True, overwrite=True)
