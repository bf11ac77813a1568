"""Resumable rechunks: an interrupted job (in either pass) finishes where it stopped."""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

import chunkflow
from chunkflow.errors import IncompleteJobWarning, JobMismatchError
from chunkflow.graph.rechunk import prepare_rechunk
from chunkflow.graph.rechunk.passes import block_grid
from chunkflow.jobs import JOB_ATTRIBUTE, job_status
from chunkflow.storage import LocalStore
from chunkflow.testing import CountingStore

SHAPE = (24, 64, 64)


def _source(tmp_path: Path) -> tuple[str, np.ndarray]:
    data = np.random.default_rng(7).integers(0, 2**16, SHAPE, dtype="u2")
    path = str(tmp_path / "src.zarr")
    chunkflow.create_array(path, data=data, chunks=(1, 64, 64))
    return path, data


def _rechunk(src: object, out: Path, temp: Path, **kwargs: object) -> chunkflow.Array:
    return chunkflow.rechunk(src, (24, 8, 8), str(out), max_memory="160 KiB", temp=str(temp),
                             scheduler="sync", **kwargs)


class Interrupted(Exception):
    """Stands for a crash: raised from the progress callback after some blocks."""


def _interrupt_after(blocks: int) -> Callable[[int, int], None]:
    def report(done: int, total: int) -> None:
        if done == blocks:
            raise Interrupted(f"stopped after {blocks} blocks")
    return report


@pytest.mark.parametrize("stop_in_pass", [1, 2])
def test_an_interrupted_rechunk_resumes_with_the_unrecorded_blocks(
        tmp_path: Path, stop_in_pass: int) -> None:
    src, data = _source(tmp_path)
    plan = prepare_rechunk(src, (24, 8, 8), max_memory="160 KiB", temp="t", scheduler="sync")
    assert plan.choice.intermediate_chunks is not None
    first_pass = math.prod(block_grid(SHAPE, plan.choice.passes[0]))
    out, temp = tmp_path / "out.zarr", tmp_path / "temp"
    stop = 2 if stop_in_pass == 1 else first_pass + 2
    with pytest.raises(Interrupted):
        _rechunk(src, out, temp, resume=True, progress=_interrupt_after(stop))
    with pytest.warns(IncompleteJobWarning, match="unfinished job"):
        status = job_status(chunkflow.open_array(str(out), mode="r"))
    assert status is not None and status.done == (0 if stop_in_pass == 1 else 2)

    counting = CountingStore(LocalStore(src))
    result = _rechunk(chunkflow.open_array(counting, mode="r"), out, temp, resume=True)
    np.testing.assert_array_equal(result[...], data)
    read = {k for k in counting.counts.bytes_by_key if k.startswith("c/")}
    # What pass 1 wrote before the interruption was not read again.
    slices = SHAPE[0] - 2 * plan.choice.passes[0].block[0] if stop_in_pass == 1 else 0
    assert len(read) == slices
    assert JOB_ATTRIBUTE not in result.attrs
    assert [p for p in temp.rglob("*") if p.is_file()] == []
    assert not [p for p in out.rglob("*") if ".chunkflow-job" in str(p)]


def test_another_rechunk_into_an_unfinished_output_is_refused(tmp_path: Path) -> None:
    src, _ = _source(tmp_path)
    out, temp = tmp_path / "out.zarr", tmp_path / "temp"
    with pytest.raises(Interrupted):
        _rechunk(src, out, temp, resume=True, progress=_interrupt_after(3))
    before = sorted(str(p) for p in out.rglob("*"))
    with pytest.raises(JobMismatchError, match="output metadata"):
        chunkflow.rechunk(src, (24, 16, 16), str(out), max_memory="160 KiB", temp=str(temp),
                          scheduler="sync", resume=True)
    assert sorted(str(p) for p in out.rglob("*")) == before
