"""``chunkflow copy`` of an unfinished job's output: refused by default (nothing
created), copied and marked unfinished with ``--unfinished copy``. The real command in
a subprocess on real folders."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import chunkflow
from chunkflow.jobs import Job, JobSpec, job_status

ROOT = Path(__file__).resolve().parents[2]  # the tree whose chunkflow is under test

pytestmark = pytest.mark.filterwarnings("ignore::chunkflow.IncompleteJobWarning")


def command(*argv: object) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-m", "chunkflow", *map(str, argv)],
                          capture_output=True, text=True, env=env, timeout=300)


@pytest.fixture
def unfinished(tmp_path: Path) -> Path:
    """An array whose job stopped after one of its two blocks."""
    path = tmp_path / "half.zarr"
    z = chunkflow.zeros((8, 6), chunks=(4, 6), dtype="u2", store=str(path))
    z[:4] = 7
    Job.open(z, JobSpec({"function": "f"}), (2, 1), resume=True).commit((0, 0))
    return path


def test_copy_refuses_an_unfinished_source(tmp_path: Path, unfinished: Path) -> None:
    done = command("copy", unfinished, tmp_path / "copy.zarr")
    assert done.returncode == 1, done.stderr
    line = done.stderr.strip().splitlines()[-1]
    assert "unfinished job" in line and "--unfinished copy" in line and "--resume" in line
    assert "Nothing was copied" in line
    assert not (tmp_path / "copy.zarr").exists()


def test_copy_of_an_unfinished_source_is_marked(tmp_path: Path, unfinished: Path) -> None:
    done = command("copy", unfinished, tmp_path / "copy.zarr", "--unfinished", "copy")
    assert done.returncode == 0, done.stderr
    copy = chunkflow.open_array(str(tmp_path / "copy.zarr"), mode="r")
    np.testing.assert_array_equal(copy[:], chunkflow.open_array(str(unfinished), mode="r")[:])
    status = job_status(copy)
    assert status is not None and (status.done, status.total) == (1, 2)


def test_copy_of_a_finished_source_is_not_marked(tmp_path: Path) -> None:
    chunkflow.array(np.arange(12).reshape(3, 4), chunks=(2, 2), store=str(tmp_path / "a.zarr"))
    done = command("copy", tmp_path / "a.zarr", tmp_path / "b.zarr")
    assert done.returncode == 0, done.stderr
    assert job_status(chunkflow.open_array(str(tmp_path / "b.zarr"), mode="r")) is None
