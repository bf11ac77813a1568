"""Resumable copy and copy_all: an interrupted copy continues with the blocks it had not
recorded; a finished one follows if_exists; another source is refused."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

import chunkflow
from chunkflow.api import block_copy
from chunkflow.errors import ContainsArrayError, JobMismatchError
from chunkflow.jobs import JOB_ATTRIBUTE, WRITTEN_KEY, job_status
from chunkflow.storage import LocalStore
from tests.helpers.jobs import data_keys

# Tests open unfinished outputs on purpose; the warning itself is tested in
# tests/graph/map/test_resume.py.
pytestmark = pytest.mark.filterwarnings("ignore::chunkflow.errors.IncompleteJobWarning")


class FlakySource:
    """A numpy array that fails reads from row ``fail_row`` on, and counts rows read."""

    def __init__(self, data: np.ndarray, fail_row: int | None) -> None:
        self.data, self.fail_row = data, fail_row
        self.shape, self.dtype = data.shape, data.dtype
        self.rows_read = 0

    def __getitem__(self, region: Any) -> np.ndarray:
        rows = region[0]
        if self.fail_row is not None and rows.start <= self.fail_row < rows.stop:
            raise OSError(f"injected read error at row {self.fail_row}")
        self.rows_read += rows.stop - rows.start
        return self.data[region]


@pytest.fixture
def small_blocks(monkeypatch: pytest.MonkeyPatch) -> None:
    # Blocks of one row of chunks (8 x 30 x 8 bytes), so that a small copy has several.
    monkeypatch.setattr(block_copy, "COPY_BLOCK_BYTES", 8 * 30 * 8)


def test_an_interrupted_copy_resumes_with_the_missing_blocks(tmp_path: Path,
                                                             small_blocks: None) -> None:
    data = np.arange(40 * 30, dtype="f8").reshape(40, 30)
    dest = str(tmp_path / "dest.zarr")
    flaky = FlakySource(data, fail_row=26)
    with pytest.raises(OSError, match="injected") as failure:
        chunkflow.copy(flaky, dest, "x", chunks=(8, 10), resume=True)
    assert "array region [(24, 32), (0, 30)] of 'x'" in "".join(failure.value.__notes__)
    status = job_status(chunkflow.open(dest, path="x", mode="r"))
    assert (status.done, status.total) == (3, 5)
    healed = FlakySource(data, fail_row=None)
    # if_exists="raise" (the default) does not stop the unfinished copy.
    assert chunkflow.copy(healed, dest, "x", chunks=(8, 10), resume=True) == (1, 0, data.nbytes)
    assert healed.rows_read == 16  # two blocks of 8 rows: the three finished were skipped
    copied = chunkflow.open(dest, path="x", mode="r")
    assert (copied[:] == data).all() and JOB_ATTRIBUTE not in copied.attrs
    chunkflow.copy(healed, str(tmp_path / "ref.zarr"), "x", chunks=(8, 10))
    # The same keys and bytes, but the resumed copy's list of what it stored (a copy
    # of a foreign source without resume is no job: it keeps none).
    assert data_keys(LocalStore(dest)) == {**data_keys(LocalStore(tmp_path / "ref.zarr")),
                                          f"x/{WRITTEN_KEY}": LocalStore(dest)[f"x/{WRITTEN_KEY}"]}
    # Finished: if_exists applies again.
    with pytest.raises(ContainsArrayError):
        chunkflow.copy(healed, dest, "x", chunks=(8, 10), resume=True)


def test_copy_refuses_an_array_another_job_left_unfinished(tmp_path: Path,
                                                          small_blocks: None) -> None:
    src = chunkflow.open_group(str(tmp_path / "src.zarr"), mode="w")
    src.create_array("a", data=np.arange(100.0).reshape(10, 10), chunks=(2, 10))
    dest = str(tmp_path / "dest.zarr")
    chunkflow.copy_all(src, dest, resume=True)
    # "a" as the unfinished output of another copy (another source).
    other = chunkflow.open(dest, path="a", mode="r+")
    other[:] = 0
    other.attrs[JOB_ATTRIBUTE] = {"token": "0" * 32, "name": None, "grid": [1, 1],
                                  "parts": {"source 0 ('a')": "another"}}
    before = data_keys(LocalStore(dest))
    with pytest.raises(JobMismatchError, match=r"source 0 \('a'\)"):
        chunkflow.copy_all(src, dest, resume=True, if_exists="skip")
    assert data_keys(LocalStore(dest)) == before  # nothing written


def test_copy_all_skip_and_resume_finishes_only_the_unfinished(tmp_path: Path,
                                                               small_blocks: None) -> None:
    src = chunkflow.open_group(str(tmp_path / "src.zarr"), mode="w")
    src.create_array("a", data=np.arange(100.0).reshape(10, 10), chunks=(2, 10))
    dest = str(tmp_path / "dest.zarr")
    chunkflow.copy_all(src, dest, resume=True)
    assert chunkflow.copy_all(src, dest, resume=True, if_exists="skip") == (0, 1, 0)
