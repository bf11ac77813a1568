"""The commands never touch a user's files: a DST folder holding other data is refused
(with or without ``--overwrite``), and the demo writes only into its own folder. Each
test runs the real command in a subprocess on real folders and compares every file's
bytes before and after."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import chunkflow
from tests.helpers.trees import MYDOCS, fingerprint, write_tree

ROOT = Path(__file__).resolve().parents[2]  # the tree whose chunkflow is under test


def command(*argv: object, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-m", "chunkflow", *map(str, argv)],
                          capture_output=True, text=True, env=env, cwd=cwd, timeout=300)


@pytest.fixture
def small(tmp_path: Path) -> Path:
    data = np.random.default_rng(0).integers(0, 4000, (40, 30)).astype("u2")
    chunkflow.array(data, chunks=(16, 16), store=str(tmp_path / "small.zarr"))
    return tmp_path / "small.zarr"


@pytest.mark.parametrize("overwrite", [True, False])
def test_filter_refuses_a_folder_of_user_files(tmp_path: Path, small: Path,
                                               overwrite: bool) -> None:
    mydocs = tmp_path / "mydocs"
    write_tree(mydocs, MYDOCS)
    before = fingerprint(tmp_path)
    done = command("filter", small, mydocs, "--gaussian", "2",
                   *(["--overwrite"] if overwrite else []))
    # A refusal of what is at DST before any work (a usage error), as for a DST that
    # holds an array without --overwrite.
    assert done.returncode == 2, done.stderr
    line = done.stderr.strip()
    assert line.startswith("chunkflow filter: error:") and "\n" not in line
    assert str(mydocs) in line and "'thesis/chapter1.tex'" in line and "'todo.txt'" in line
    assert "nothing was written or deleted" in line
    assert fingerprint(tmp_path) == before


def test_filter_overwrite_replaces_its_own_output(tmp_path: Path, small: Path) -> None:
    out = tmp_path / "out.zarr"
    assert command("filter", small, out, "--uniform", "3").returncode == 0
    again = command("filter", small, out, "--uniform", "3")
    assert again.returncode == 2 and "pass --overwrite" in again.stderr
    done = command("filter", small, out, "--gaussian", "1", "--overwrite")
    assert done.returncode == 0, done.stderr
    ndimage = pytest.importorskip("scipy.ndimage")
    source = chunkflow.open(str(small), mode="r")[:]
    # The Gaussian computed in float64, rounded into the source's uint16.
    np.testing.assert_array_equal(chunkflow.open(str(out), mode="r")[:],
                                  np.rint(ndimage.gaussian_filter(source.astype("f8"), 1))
                                  .astype(source.dtype))


def _demo(folder: Path, seed: int = 0) -> subprocess.CompletedProcess[str]:
    return command("demo", "--size", "64", "--chunk", "32", "--seed", seed, "--folder", folder,
                   "--scheduler", "sync")


def test_the_demo_replaces_its_own_results_and_nothing_else(tmp_path: Path) -> None:
    folder = tmp_path / "myproject"
    first = _demo(folder)
    assert first.returncode == 0, first.stderr
    assert {".chunkflow-demo.json", "raw.zarr", "smooth.zarr"} <= set(os.listdir(folder))
    marker = json.loads((folder / ".chunkflow-demo.json").read_text())
    assert marker["written_by"] == "chunkflow demo"
    raw_first = chunkflow.open(str(folder / "raw.zarr"), mode="r")[:]
    second = _demo(folder, seed=1)  # as --help says: earlier demo results are replaced
    assert second.returncode == 0, second.stderr
    raw_second = chunkflow.open(str(folder / "raw.zarr"), mode="r")[:]
    assert raw_second.shape == raw_first.shape and not np.array_equal(raw_first, raw_second)
    assert chunkflow.open(str(folder / "smooth.zarr"), mode="r").shape == (64, 64)


def test_the_demo_refuses_a_users_raw_zarr(tmp_path: Path) -> None:
    folder = tmp_path / "myproject"
    mine = np.arange(12, dtype="i4").reshape(3, 4)
    chunkflow.array(mine, chunks=(2, 2), store=str(folder / "raw.zarr"))  # not the demo's
    before = fingerprint(tmp_path)
    done = _demo(folder)
    assert done.returncode == 2 and done.stdout == ""
    assert "'raw.zarr'" in done.stderr and "which the demo did not write" in done.stderr
    assert fingerprint(tmp_path) == before
    np.testing.assert_array_equal(chunkflow.open(str(folder / "raw.zarr"), mode="r")[:], mine)


def test_the_demo_refuses_a_folder_with_other_files(tmp_path: Path) -> None:
    folder = tmp_path / "mydocs"
    write_tree(folder, MYDOCS)
    before = fingerprint(tmp_path)
    done = _demo(folder)
    assert done.returncode == 2
    assert "'photos', 'thesis', 'todo.txt'" in done.stderr
    assert fingerprint(tmp_path) == before


def test_the_demo_refuses_a_user_file_added_to_its_folder(tmp_path: Path) -> None:
    folder = tmp_path / "demo"
    assert _demo(folder).returncode == 0
    (folder / "notes.txt").write_text("mine")
    before = fingerprint(tmp_path)
    done = _demo(folder)
    assert done.returncode == 2 and "'notes.txt'" in done.stderr
    assert fingerprint(tmp_path) == before


def test_the_demo_refuses_a_file_as_its_folder(tmp_path: Path) -> None:
    (tmp_path / "demo").write_text("mine")
    done = _demo(tmp_path / "demo")
    assert done.returncode == 2 and "is a file, not a folder" in done.stderr
    assert (tmp_path / "demo").read_text() == "mine"
