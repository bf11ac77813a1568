"""Resumable store and to_chunkflow: finished write blocks are skipped and their source
blocks never computed; a changed plan or output is refused."""

from __future__ import annotations

from pathlib import Path

import dask.array as da
import numpy as np
import pytest

import chunkflow
from chunkflow.errors import JobMismatchError
from chunkflow.jobs import job_status
from chunkflow.storage import LocalStore
from tests.helpers.jobs import calls, clear_calls, data_keys, logged_block

# Tests open unfinished outputs on purpose; the warning itself is tested in
# tests/graph/map/test_resume.py.
pytestmark = pytest.mark.filterwarnings("ignore::chunkflow.errors.IncompleteJobWarning")

SHAPE = (40, 36)


def _lazy(tmp_path: Path, log: Path, blocks: tuple[int, int] = (1, 1)) -> da.Array:
    src = str(tmp_path / "src.zarr")
    if not Path(src).exists():
        chunkflow.array(np.arange(np.prod(SHAPE), dtype="f8").reshape(SHAPE), chunks=(10, 12),
                        store=src)
    return chunkflow.to_dask(chunkflow.open(src, mode="r"), blocks=blocks).map_blocks(
        logged_block, log=str(log), dtype="f8")


def test_store_resumes_without_computing_finished_source_blocks(tmp_path: Path,
                                                                log: Path) -> None:
    out = str(tmp_path / "out.zarr")
    target = chunkflow.zeros(SHAPE, chunks=(10, 12), store=out)
    (log / "fail-2-1").touch()
    with pytest.raises(RuntimeError, match="injected"):
        chunkflow.store(_lazy(tmp_path, log), target, resume=True, scheduler="sync")
    status = job_status(chunkflow.open(out, mode="r"))
    assert 0 < status.done < status.total == 12
    (log / "fail-2-1").unlink()
    clear_calls(log)
    chunkflow.store(_lazy(tmp_path, log), target, resume=True, scheduler="sync")
    # Source blocks of finished write blocks were culled: only the rest computed.
    assert calls(log) == sorted(f"{i}-{j}" for i, j in status.remaining), status.remaining
    expected = np.arange(np.prod(SHAPE), dtype="f8").reshape(SHAPE) * 3 + 1
    assert (chunkflow.open(out, mode="r")[:] == expected).all()
    assert job_status(chunkflow.open(out, mode="r")) is None


def test_to_chunkflow_resumes_into_its_unfinished_output(tmp_path: Path, log: Path) -> None:
    out = str(tmp_path / "out.zarr")
    (log / "fail-1-1").touch()
    with pytest.raises(RuntimeError):
        chunkflow.to_chunkflow(_lazy(tmp_path, log), out, resume=True, scheduler="sync")
    (log / "fail-1-1").unlink()
    # Not "an array exists there": the unfinished output is continued.
    written = chunkflow.to_chunkflow(_lazy(tmp_path, log), out, resume=True, scheduler="sync")
    reference = chunkflow.to_chunkflow(_lazy(tmp_path, log), str(tmp_path / "ref.zarr"),
                                       scheduler="sync")
    assert (written[:] == reference[:]).all()
    assert data_keys(LocalStore(out)) == data_keys(LocalStore(tmp_path / "ref.zarr"))


def test_to_chunkflow_refuses_other_creation_arguments(tmp_path: Path, log: Path) -> None:
    out = str(tmp_path / "out.zarr")
    (log / "fail-1-1").touch()
    with pytest.raises(RuntimeError):
        chunkflow.to_chunkflow(_lazy(tmp_path, log), out, resume=True, scheduler="sync")
    before = data_keys(LocalStore(out))
    with pytest.raises(JobMismatchError, match="output metadata"):
        chunkflow.to_chunkflow(_lazy(tmp_path, log), out, resume=True, chunks=(5, 12))
    with pytest.raises(JobMismatchError, match="regions and block plan"):
        chunkflow.store(_lazy(tmp_path, log, blocks=(2, 1)), chunkflow.open(out), resume=True)
    with pytest.raises(JobMismatchError, match="source dask array"):
        chunkflow.store(_lazy(tmp_path, log) + 1, chunkflow.open(out), resume=True)
    assert data_keys(LocalStore(out)) == before


def test_store_compute_false_finishes_when_computed(tmp_path: Path, log: Path) -> None:
    target = chunkflow.zeros(SHAPE, chunks=(10, 12), store=str(tmp_path / "out.zarr"))
    pending = chunkflow.store(_lazy(tmp_path, log), target, resume=True, compute=False)
    assert job_status(chunkflow.open(str(tmp_path / "out.zarr"), mode="r")) is not None
    pending.compute(scheduler="sync")
    assert job_status(chunkflow.open(str(tmp_path / "out.zarr"), mode="r")) is None
