"""Crash safety of resize, append and repair on a local folder.

Writers are killed (``os._exit`` in a forked child) before or after their k-th file
operation, for every k until the operation completes; the array must then show its old
or its new state, with no rows of fill_value posing as data, and no value written
before a shrink may come back when the array grows again.
"""

from __future__ import annotations

import errno
import functools
import json
import os
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import chunkflow
from chunkflow.engine import repair as repair_module
from chunkflow.storage import LocalStore
from chunkflow.storage.local import TMP_SUFFIX
from tests.helpers.temporaries import temporary_file
from tests.helpers.waiting import wait_until

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")

KILLED = 77
SHAPE, CHUNKS = (10, 7), (4, 3)
BASE = np.arange(1, 71, dtype="i4").reshape(SHAPE)  # no zeros: fill_value is 0
ROWS = np.arange(1001, 1036, dtype="i4").reshape(5, 7)
COLUMNS = np.arange(2001, 2041, dtype="i4").reshape(10, 4)


def _make(path: Path, zarr_format: int = 3) -> chunkflow.Array:
    z = chunkflow.create(SHAPE, chunks=CHUNKS, dtype="i4", fill_value=0, store=str(path),
                         zarr_format=zarr_format)
    z[:] = BASE
    return z


def _open(path: Path, **kwargs: Any) -> chunkflow.Array:
    return chunkflow.open(str(path), cache=False, **kwargs)


def _embed(values: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    out = np.zeros(shape, dtype=values.dtype)
    out[tuple(slice(0, n) for n in values.shape)] = values
    return out


# -- killing a writer -------------------------------------------------------------------


def _install_killer(k: int, when: str) -> None:
    """Make the k-th file rename or unlink of this process end it, before or after."""
    count = [0]

    def wrap(original: Callable[..., Any]) -> Callable[..., Any]:
        def operation(*args: Any, **kwargs: Any) -> Any:
            count[0] += 1
            if count[0] == k and when == "before":
                os._exit(KILLED)
            result = original(*args, **kwargs)
            if count[0] == k:
                os._exit(KILLED)
            return result
        return operation

    os.replace = wrap(os.replace)  # type: ignore[assignment]
    os.unlink = wrap(os.unlink)  # type: ignore[assignment]


def _run_killed(operation: Callable[[], Any], k: int, when: str) -> bool:
    """Run ``operation`` in a child killed at its k-th file operation; True if it finished."""
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        code = 0
        try:
            _install_killer(k, when)
            operation()
        except BaseException:
            code = 3
        os._exit(code)
    deadline = time.monotonic() + 30
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            break
        if time.monotonic() > deadline:
            os.kill(pid, 9)
            os.waitpid(pid, 0)
            raise AssertionError(f"the writer killed at operation {k} hung")
        time.sleep(0.002)
    code = os.waitstatus_to_exitcode(status)
    assert code in (0, KILLED), f"the writer failed (exit code {code}) at operation {k}"
    return code == 0


def _temporaries(path: Path) -> list[Path]:
    return [p for p in path.rglob("*") if p.name.endswith(TMP_SUFFIX)]


def _grow_naively(path: Path, shape: tuple[int, ...]) -> None:
    """Grow the way a tool without chunkflow's care does: rewrite the shape only."""
    name = "zarr.json" if (path / "zarr.json").exists() else ".zarray"
    document = json.loads((path / name).read_text())
    document["shape"] = list(shape)
    (path / name).write_text(json.dumps(document))


def _check_after(path: Path, visible: np.ndarray) -> None:
    """Growing shows ``visible`` and fill; repair leaves nothing for a naive grow."""
    grown = tuple(n + 3 for n in visible.shape)
    z = _open(path)
    z.resize(grown)
    np.testing.assert_array_equal(_open(path, mode="r")[:], _embed(visible, grown))
    z.resize(visible.shape)
    z.repair(temporary_max_age=0)
    assert _temporaries(path) == []
    _grow_naively(path, grown)
    np.testing.assert_array_equal(_open(path, mode="r")[:], _embed(visible, grown))


def _kill_at_every_stage(
    tmp_path: Path,
    setup: Callable[[Path], np.ndarray],
    operation: Callable[[Path], Any],
    new_state: np.ndarray,
) -> int:
    """Kill ``operation`` at every file operation; check old-or-new and no resurrection."""
    stages = 0
    for when in ("before", "after"):
        for k in range(1, 200):
            path = tmp_path / f"{when}-{k}.zarr"
            old_state = setup(path)
            finished = _run_killed(functools.partial(operation, path), k, when)
            seen = _open(path, mode="r")[:]
            if seen.shape == old_state.shape:
                np.testing.assert_array_equal(seen, old_state, err_msg=f"{when} op {k}")
            else:
                assert not finished or seen.shape == new_state.shape
                np.testing.assert_array_equal(seen, new_state, err_msg=f"{when} op {k}")
            _check_after(path, seen)
            if finished:
                np.testing.assert_array_equal(seen, new_state)
                break
            stages += 1
        else:
            raise AssertionError("the operation never finished")
    return stages


def _plain(zarr_format: int) -> Callable[[Path], np.ndarray]:
    def setup(path: Path) -> np.ndarray:
        _make(path, zarr_format)
        return BASE
    return setup


# -- killed writers ---------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("zarr_format", [2, 3])
def test_killed_shrink_never_resurrects_values(tmp_path: Path, zarr_format: int) -> None:
    stages = _kill_at_every_stage(tmp_path, _plain(zarr_format),
                                  lambda p: _open(p).resize(5, 4), BASE[:5, :4])
    assert stages >= 4  # metadata, deletes and edge-chunk rewrites were all interrupted


@pytest.mark.slow
def test_killed_shrink_and_grow_at_once(tmp_path: Path) -> None:
    _kill_at_every_stage(tmp_path, _plain(3), lambda p: _open(p).resize(5, 9),
                         _embed(BASE[:5], (5, 9)))


def _with_leftovers(path: Path) -> np.ndarray:
    """An array shrunk to (6, 5) by one handle, then written beyond by a stale one."""
    stale = _make(path)
    _open(path).resize(6, 5)
    stale[6:, :] = 99
    stale[:, 5:] = 99
    return BASE[:6, :5]


@pytest.mark.slow
@pytest.mark.parametrize("by", ["key", "listing"])
def test_killed_grow_never_shows_a_stale_handle_s_writes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, by: str
) -> None:
    if by == "listing":
        monkeypatch.setattr(repair_module, "ENUMERATE_LIMIT", 0)
    _kill_at_every_stage(tmp_path, _with_leftovers, lambda p: _open(p).resize(12, 8),
                         _embed(BASE[:6, :5], (12, 8)))


@pytest.mark.slow
@pytest.mark.parametrize("zarr_format", [2, 3])
def test_killed_append_shows_old_rows_or_all_new_ones(tmp_path: Path, zarr_format: int) -> None:
    stages = _kill_at_every_stage(tmp_path, _plain(zarr_format),
                                  lambda p: _open(p).append(ROWS), np.vstack([BASE, ROWS]))
    assert stages >= 3


@pytest.mark.slow
def test_killed_append_along_columns(tmp_path: Path) -> None:
    _kill_at_every_stage(tmp_path, _plain(3), lambda p: _open(p).append(COLUMNS, axis=1),
                         np.hstack([BASE, COLUMNS]))


def test_killed_append_over_leftovers(tmp_path: Path) -> None:
    rows = ROWS[:3, :5]
    _kill_at_every_stage(tmp_path, _with_leftovers, lambda p: _open(p).append(rows),
                         np.vstack([BASE[:6, :5], rows]))


# -- failing writes ---------------------------------------------------------------------


def test_append_failing_midway_leaves_the_old_array(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    original = os.replace
    for k in range(1, 50):
        path = tmp_path / f"{k}.zarr"
        z = _make(path)
        calls = [0]

        def full_disk(*args: Any, calls: list[int] = calls, k: int = k) -> None:
            calls[0] += 1
            if calls[0] == k:
                raise OSError(errno.ENOSPC, "No space left on device")
            original(*args)

        monkeypatch.setattr(os, "replace", full_disk)
        try:
            z.append(ROWS)
        except OSError:
            monkeypatch.setattr(os, "replace", original)
            assert z.shape == SHAPE  # the handle did not move either
            np.testing.assert_array_equal(_open(path, mode="r")[:], BASE)
            z.resize(15, 7)  # the same handle (and its cache): no rows come back
            np.testing.assert_array_equal(z[:], _embed(BASE, (15, 7)))
            assert _temporaries(path) == []
            continue
        monkeypatch.setattr(os, "replace", original)
        np.testing.assert_array_equal(_open(path, mode="r")[:], np.vstack([BASE, ROWS]))
        break
    else:
        raise AssertionError("append never succeeded")
    assert k > 3


# -- stale handles and repair -----------------------------------------------------------


def test_grow_hides_what_a_stale_handle_wrote_beyond_a_shrink(tmp_path: Path) -> None:
    path = tmp_path / "a.zarr"
    _with_leftovers(path)
    z = _open(path)
    z.resize(SHAPE)
    np.testing.assert_array_equal(z[:], _embed(BASE[:6, :5], SHAPE))


def test_repair_removes_chunks_outside_the_grid_and_stale_padding(tmp_path: Path) -> None:
    path = tmp_path / "a.zarr"
    _with_leftovers(path)
    z = _open(path)
    report = z.repair()
    # Chunk rows 2 (rows 8-9) and column 2 (6) lie outside; rows 4-7 and columns 3-5
    # of the three edge chunks held the stale handle's 99s.
    assert report.deleted_chunks == 5
    assert report.cleared_chunks == 3
    assert z.nchunks_initialized == 4
    assert z.repair() == repair_module.RepairReport()
    _grow_naively(path, SHAPE)
    np.testing.assert_array_equal(_open(path, mode="r")[:], _embed(BASE[:6, :5], SHAPE))


# -- temporary files --------------------------------------------------------------------


def test_repair_removes_old_temporary_files_only(tmp_path: Path) -> None:
    path = tmp_path / "a.zarr"
    _make(path)
    old = temporary_file(path / "c" / "0", "1", age=2 * 3600)
    live = temporary_file(path / "c" / "1", "0", age=5)
    assert _open(path).repair().removed_temporaries == 1
    assert not old.exists() and live.exists()


def test_listing_a_folder_removes_its_old_temporary_files(tmp_path: Path) -> None:
    store = LocalStore(tmp_path / "s")
    store["a/b"] = b"x"
    old = temporary_file(tmp_path / "s" / "a", "c", age=2 * 3600)
    live = temporary_file(tmp_path / "s" / "a", "d", age=0)
    assert LocalStore(tmp_path / "s", read_only=True).list_dir("a") == (["b"], [])
    assert old.exists()  # a read-only store never deletes
    assert store.list_dir("a") == (["b"], [])
    assert not old.exists() and live.exists()
    old = temporary_file(tmp_path / "s" / "a", "e", age=2 * 3600)
    assert list(store.list_prefix("")) == ["a/b"]
    assert not old.exists() and live.exists()


# -- cost -------------------------------------------------------------------------------


def test_small_grow_clears_by_key_without_listing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    z = chunkflow.zeros((10, 10), chunks=(2, 2), dtype="u1", store=str(tmp_path / "a.zarr"))

    def refuse(*_: Any) -> Any:
        raise AssertionError("a small grow listed the store")

    monkeypatch.setattr(LocalStore, "_list_prefix", refuse)
    z.resize(20, 20)
    z.append(np.ones((2, 20), dtype="u1"))
    assert z.shape == (22, 20)


def test_huge_grow_lists_instead_of_touching_every_key(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    stale = chunkflow.zeros((4, 4), chunks=(1, 1), dtype="u1", store=str(tmp_path / "a.zarr"))
    z = _open(tmp_path / "a.zarr")
    z.resize(2, 2)
    stale[:] = 1  # leftovers beyond the shape: the listing must find them
    by_arithmetic = repair_module.grown_chunk_coords

    def enumerate_few(old: Any, new: Any, chunks: Any) -> Iterator[tuple[int, ...]]:
        # Fail at once, rather than walk (or hold) the 10**18 keys of the region.
        count = repair_module.count_grown_chunks(old, new, chunks)
        assert count <= 10**4, f"a grow of {count} chunks enumerates their keys"
        return by_arithmetic(old, new, chunks)

    monkeypatch.setattr(repair_module, "grown_chunk_coords", enumerate_few)
    z.resize(10**9, 10**9)  # 10**18 chunks: only listing can find leftovers
    assert z[:4, :4].tolist() == [[1, 1, 0, 0], [1, 1, 0, 0], [0] * 4, [0] * 4]


def test_grown_chunk_coords_are_exactly_the_chunks_outside_the_old_shape() -> None:
    rng = np.random.default_rng(0)
    for _ in range(200):
        ndim = int(rng.integers(1, 4))
        chunks = tuple(int(c) for c in rng.integers(1, 4, ndim))
        old = tuple(int(s) for s in rng.integers(0, 9, ndim))
        new = tuple(int(s) for s in rng.integers(0, 9, ndim))
        grid = [-(-n // c) for n, c in zip(new, chunks)]
        expected = {
            coords for coords in np.ndindex(*grid)
            if any(min((c + 1) * size, n) > o
                   for c, size, o, n in zip(coords, chunks, old, new))
        }
        found = list(repair_module.grown_chunk_coords(old, new, chunks))
        assert len(found) == len(set(found)) == repair_module.count_grown_chunks(old, new, chunks)
        assert set(found) == expected


# -- kill -9 from outside ---------------------------------------------------------------

_APPENDER = """
import sys
import numpy as np
import chunkflow
z = chunkflow.open(sys.argv[1])
step = 0
while True:
    step += 1
    if step % 4 == 0 and z.shape[0] > 2:
        z.resize(z.shape[0] - 2, z.shape[1])  # cuts chunks: stale data lies beyond
    rows = 1 + step % 3
    start = z.shape[0]
    values = np.arange(start + 1, start + rows + 1, dtype="i4")[:, None]
    z.append(np.repeat(values, z.shape[1], axis=1))
"""


@pytest.mark.slow
def test_writer_killed_with_sigkill_leaves_a_consistent_array(tmp_path: Path) -> None:
    """A real interpreter appending and shrinking in a loop, killed at random moments."""
    import signal
    import subprocess
    import sys

    root = Path(__file__).resolve().parents[2]
    env = {**os.environ, "PYTHONPATH": str(root)}
    rng = np.random.default_rng(1)
    path = tmp_path / "a.zarr"
    chunkflow.zeros((0, 5), chunks=(4, 2), dtype="i4", store=str(path))
    for _ in range(6):
        before = _open(path, mode="r").shape
        child = subprocess.Popen([sys.executable, "-c", _APPENDER, str(path)], env=env)
        # Killed while it works: once it changed the shape, at a random moment after.
        wait_until(lambda old=before: _open(path, mode="r").shape != old,
                   "the appender's first step")
        time.sleep(float(rng.uniform(0, 0.3)))  # not a wait for anything: the random moment
        child.send_signal(signal.SIGKILL)
        child.wait()
        seen = _open(path, mode="r")[:]
        # Row r holds r + 1 everywhere: no row of fill_value, no row from another time.
        expected = np.repeat(np.arange(1, seen.shape[0] + 1, dtype="i4")[:, None], 5, axis=1)
        np.testing.assert_array_equal(seen, expected)
    z = _open(path)
    shape = z.shape
    z.resize(shape[0] + 9, 7)
    np.testing.assert_array_equal(z[shape[0]:], 0)
    np.testing.assert_array_equal(z[:, 5:], 0)
    z.repair(temporary_max_age=0)
    assert _temporaries(path) == []
