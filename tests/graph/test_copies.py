"""``chunkflow.copy`` and ``copy_all`` with ``scheduler=`` and ``progress=``: each array's
values are written by a dask job on the scheduler named; the result is the API copy's."""

from __future__ import annotations

from pathlib import Path

import dask
import numpy as np
import pytest
import zarr

import chunkflow
from chunkflow.api.block_copy import ARRAY_WRITER

DATA = np.arange(30 * 40, dtype="i4").reshape(30, 40)


@pytest.fixture
def source(tmp_path: Path) -> chunkflow.Group:
    root = chunkflow.group(str(tmp_path / "src.zarr"), attributes={"title": "t"})
    root.create_array("a", data=DATA, chunks=(7, 9), attributes={"u": 1})
    root.create_group("sub").create_array("b", data=DATA[::2], chunks=(4, 40))
    return root


@pytest.mark.parametrize("scheduler", ["sync", "threads", "processes"])
def test_copy_runs_on_the_scheduler_named_and_matches_numpy(
        source: chunkflow.Group, tmp_path: Path, scheduler: str) -> None:
    seen: list[tuple[int, int]] = []
    out = str(tmp_path / f"{scheduler}.zarr")
    counts = chunkflow.copy(source["a"], out, "a", chunks=(10, 10), scheduler=scheduler,
                            progress=lambda done, total: seen.append((done, total)))
    assert counts == (1, 0, DATA.nbytes)
    copied = zarr.open_array(out + "/a", mode="r")
    np.testing.assert_array_equal(copied[...], DATA)
    assert copied.chunks == (10, 10) and dict(copied.attrs) == {"u": 1}
    assert seen and seen[-1][0] == seen[-1][1] > 0  # the job reported its blocks


def test_copy_all_takes_scheduler_and_progress(source: chunkflow.Group, tmp_path: Path) -> None:
    seen: list[tuple[int, int]] = []
    out = chunkflow.group(str(tmp_path / "all.zarr"), zarr_format=2)
    assert chunkflow.copy_all(source, out, scheduler="sync",
                              progress=lambda d, t: seen.append((d, t))) == (
        3, 0, DATA.nbytes + DATA[::2].nbytes)
    np.testing.assert_array_equal(out["a"][...], DATA)
    np.testing.assert_array_equal(out["sub/b"][...], DATA[::2])
    assert out.attrs["title"] == "t" and len({t for _, t in seen}) == 1  # one job for all


def test_a_foreign_source_is_copied_in_this_process(tmp_path: Path) -> None:
    peer = zarr.create_array(str(tmp_path / "peer.zarr"), shape=DATA.shape, chunks=(8, 8),
                             dtype=DATA.dtype)
    peer[...] = DATA
    out = chunkflow.group()
    chunkflow.copy(peer, out, "x", scheduler="sync")
    np.testing.assert_array_equal(out["x"][...], DATA)
    assert ARRAY_WRITER.get() is None  # the call's writer does not outlive it


def test_compute_false_creates_the_tree_now_and_writes_when_computed(
        source: chunkflow.Group, tmp_path: Path) -> None:
    peer = zarr.create_array(str(tmp_path / "peer.zarr"), shape=DATA.shape, chunks=(8, 8),
                             dtype=DATA.dtype)
    peer[...] = DATA
    out = chunkflow.group(str(tmp_path / "lazy.zarr"))
    counts, pending = chunkflow.copy_all(source, out, compute=False)
    assert counts == (3, 0, DATA.nbytes + DATA[::2].nbytes)
    # The groups, arrays and attributes exist; no value is written yet.
    assert out.attrs["title"] == "t" and out["a"].attrs["u"] == 1
    assert not out["a"][...].any() and not out["sub/b"][...].any()
    copy_counts, copied = chunkflow.copy(peer, out, "peer", compute=False)
    assert copy_counts == (1, 0, DATA.nbytes) and not out["peer"][...].any()
    dask.compute(pending, copied, scheduler="threads")
    np.testing.assert_array_equal(out["a"][...], DATA)
    np.testing.assert_array_equal(out["sub/b"][...], DATA[::2])
    np.testing.assert_array_equal(out["peer"][...], DATA)
    assert ARRAY_WRITER.get() is None


def test_compute_false_with_resume_is_refused_and_creates_nothing(
        source: chunkflow.Group, tmp_path: Path) -> None:
    out = tmp_path / "resumed.zarr"
    with pytest.raises(ValueError, match="compute=False with resume=True"):
        chunkflow.copy(source["a"], str(out), "a", compute=False, resume=True)
    assert not out.exists()
