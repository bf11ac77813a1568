"""Files a LocalStore write replaces are freed on a background thread: the new value is
visible at once, nothing is left behind, no descriptor leaks, and a reader holding the
old file keeps reading the old bytes."""

from __future__ import annotations

import os
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest

import chunkflow
from chunkflow.storage import replaced
from chunkflow.storage.local import LocalStore

linux_only = pytest.mark.skipif(not sys.platform.startswith("linux"),
                                reason="O_PATH and /proc/self/fd are Linux's")


def _open_descriptors() -> int:
    return len(os.listdir("/proc/self/fd"))


@linux_only
def test_rewriting_keys_leaks_no_descriptor_and_leaves_one_file_each(tmp_path: Path) -> None:
    store = LocalStore(tmp_path)
    for i in range(4):
        store[f"c/{i}"] = b"first"
    replaced.drain()
    before = _open_descriptors()
    with ThreadPoolExecutor(4) as pool:
        list(pool.map(lambda i: store.__setitem__(f"c/{i % 4}", bytes([i]) * 100), range(64)))
    replaced.drain()
    assert replaced.pending() == 0
    assert _open_descriptors() == before
    assert sorted(os.listdir(tmp_path / "c")) == ["0", "1", "2", "3"]
    assert all(len(store[f"c/{i}"]) == 100 for i in range(4))


@linux_only
def test_the_replaced_file_is_freed_by_the_releaser_thread(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import threading

    closers: list[str] = []
    close = replaced._close

    def recording_close(fd: int) -> None:
        closers.append(threading.current_thread().name)
        close(fd)

    monkeypatch.setattr(replaced, "_close", recording_close)
    store = LocalStore(tmp_path)
    store["k"] = b"first"  # a new key: nothing replaced, nothing held
    replaced.drain()
    assert closers == []
    store["k"] = b"second"
    replaced.drain()
    assert closers == ["chunkflow-release"]


@linux_only
def test_a_reader_of_the_old_file_keeps_its_bytes(tmp_path: Path) -> None:
    store = LocalStore(tmp_path)
    store["k"] = b"old value"
    with open(tmp_path / "k", "rb") as reader:
        store["k"] = b"new value"
        assert store["k"] == b"new value"
        replaced.drain()
        assert reader.read() == b"old value"


def test_a_failed_replace_releases_the_old_file(tmp_path: Path) -> None:
    store = LocalStore(tmp_path)
    (tmp_path / "a" / "b").mkdir(parents=True)  # a folder where the key's file would go
    before = _open_descriptors() if sys.platform.startswith("linux") else 0
    with pytest.raises(OSError):
        store["a/b"] = b"value"
    replaced.drain()
    assert os.listdir(tmp_path / "a") == ["b"]  # the temporary file is gone too
    if sys.platform.startswith("linux"):
        assert _open_descriptors() == before


def test_hold_is_none_for_a_missing_file(tmp_path: Path) -> None:
    assert replaced.hold(str(tmp_path / "missing")) is None


@linux_only
def test_a_full_backlog_frees_inline(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "k").write_bytes(b"x")
    fd = replaced.hold(str(tmp_path / "k"))
    assert fd is not None
    replaced.drain()
    monkeypatch.setattr(replaced, "MAX_PENDING", 0)
    replaced.release(fd, 1)
    with pytest.raises(OSError):  # closed by the caller's own thread, already
        os.fstat(fd)


@linux_only
def test_a_full_byte_budget_frees_inline(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "k").write_bytes(b"x")
    fd = replaced.hold(str(tmp_path / "k"))
    assert fd is not None
    replaced.drain()
    monkeypatch.setattr(replaced, "MAX_PENDING_BYTES", 10)
    replaced.release(fd, 11)
    with pytest.raises(OSError):
        os.fstat(fd)


@pytest.mark.skipif(not os.path.isdir("/dev/shm"), reason="needs a tmpfs at /dev/shm")
def test_files_on_tmpfs_are_not_pinned(monkeypatch: pytest.MonkeyPatch) -> None:
    # tmpfs frees a file without the disk: nothing to gain, an open per write to lose.
    import tempfile

    calls: list[str] = []
    monkeypatch.setattr("chunkflow.storage.local.hold", calls.append)
    with tempfile.TemporaryDirectory(dir="/dev/shm") as folder:
        store = LocalStore(folder)
        store["k"] = b"one"
        store["k"] = b"two"
        assert store["k"] == b"two"
    assert calls == []


@linux_only
def test_a_forked_child_closes_its_copies_of_held_files(tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    # What register_at_fork runs in the child, on a releaser whose thread never ran.
    (tmp_path / "k").write_bytes(b"x")
    fds = [replaced.hold(str(tmp_path / "k")) for _ in range(3)]
    waiting = replaced._Releaser()
    waiting._fds.extend((fd, 1) for fd in fds if fd is not None)
    monkeypatch.setattr(replaced, "_releaser", waiting)
    replaced._after_fork_in_child()
    assert replaced._releaser is not waiting and replaced.pending() == 0
    for fd in fds:
        with pytest.raises(OSError):
            os.fstat(fd)  # type: ignore[arg-type]


@pytest.mark.parametrize("scheme", ["", "file://"])
def test_arrays_rewritten_with_no_arguments_read_back(tmp_path: Path, scheme: str) -> None:
    # The default path as users drive it: a folder or a file:// URL, no tuning arguments.
    data = np.arange(64 * 64, dtype="uint16").reshape(64, 64)
    url = f"{scheme}{tmp_path}/a.zarr"
    z = chunkflow.create((64, 64), chunks=(16, 16), dtype="uint16", store=url)
    assert isinstance(z.store, LocalStore)
    for step in range(3):
        z[:] = data + step
    np.testing.assert_array_equal(chunkflow.open(url)[:], data + 2)
    replaced.drain()
    leftovers = [name for _, _, names in os.walk(tmp_path) for name in names
                 if name.endswith(".chunkflow-tmp")]
    assert leftovers == []
