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
from chunkflow.errors import IncompleteJobWarning, UnfinishedSourceError
from chunkflow.jobs import job_status, quiet_open

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


# -- an unfinished source (issue 35, point 7) --------------------------------------------

def _unfinished(tmp_path: Path, log: Path) -> chunkflow.Array:
    """The output of a map_chunks job that failed at one block of 16."""
    from tests.helpers.jobs import logged_filter

    src = chunkflow.array(np.arange(64.0).reshape(8, 8), chunks=(2, 2),
                          store=str(tmp_path / "src.zarr"))
    (log / "fail-2-1").touch()
    with pytest.raises(RuntimeError, match="injected"):
        chunkflow.map_chunks(logged_filter, src, out=str(tmp_path / "out.zarr"), blocks=(1, 1),
                             blocks_per_task=1, block_info=True, scheduler="sync", log=str(log))
    with quiet_open():
        return chunkflow.open(str(tmp_path / "out.zarr"), mode="r")


def _keys(folder: Path) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file())


@pytest.mark.parametrize("how", ["copy", "copy_all"])
def test_an_unfinished_source_is_refused_and_nothing_is_created(tmp_path: Path, log: Path,
                                                               how: str) -> None:
    unfinished = _unfinished(tmp_path, log)
    status = job_status(unfinished)
    tree = chunkflow.group(str(tmp_path / "tree.zarr"))
    tree.create_array("fine", data=DATA, chunks=(10, 10))  # copied first if not refused
    chunkflow.copy(unfinished, tree, "late", unfinished="copy")  # unfinished too
    out = tmp_path / "dst.zarr"
    chunkflow.group(str(out))
    before = _keys(out)
    with pytest.raises(UnfinishedSourceError,
                       match=rf"unfinished job .*{status.done} of 16 blocks done.*unfinished='copy'"):
        if how == "copy":
            chunkflow.copy(unfinished, str(out), "x")
        else:
            chunkflow.copy_all(tree, str(out))
    assert _keys(out) == before  # a refusal creates nothing


@pytest.mark.parametrize("mode", ["now", "threads", "compute=False", "resume"])
def test_unfinished_copy_copies_and_carries_the_mark(tmp_path: Path, log: Path,
                                                     mode: str) -> None:
    unfinished = _unfinished(tmp_path, log)
    expected = unfinished[...]
    status = job_status(unfinished)
    out = str(tmp_path / "dst.zarr")
    kwargs: dict = {"unfinished": "copy"}
    if mode == "threads":
        kwargs["scheduler"] = "threads"
    if mode == "resume":
        kwargs["resume"] = True
    if mode == "compute=False":
        _, pending = chunkflow.copy(unfinished, out, "x", compute=False, **kwargs)
        pending.compute(scheduler="sync")
    else:
        chunkflow.copy(unfinished, out, "x", **kwargs)
    with pytest.warns(IncompleteJobWarning):
        copied = chunkflow.open(out, path="x", mode="r")
    np.testing.assert_array_equal(copied[...], expected)
    carried = job_status(copied)
    assert (carried.token, carried.done, carried.remaining) == (status.token, status.done,
                                                                status.remaining)
    # zarr-python sees the same values (the records are invisible to it).
    np.testing.assert_array_equal(zarr.open_array(out + "/x", mode="r")[...], expected)


def test_the_copy_of_an_unfinished_copy_is_refused_too(tmp_path: Path, log: Path) -> None:
    unfinished = _unfinished(tmp_path, log)
    first = chunkflow.group()
    chunkflow.copy(unfinished, first, "x", unfinished="copy")
    with pytest.raises(UnfinishedSourceError):
        chunkflow.copy(first["x"], chunkflow.group(), "y")
    with pytest.raises(ValueError, match="unfinished must be one of"):
        chunkflow.copy(unfinished, chunkflow.group(), "y", unfinished="yes")
