"""fsspec's local file system (``file://`` with ``storage_options``, ``local://``)
writes atomically, as LocalStore does: a crash mid-write leaves the old value."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

import chunkflow
from chunkflow.storage import FsspecStore, make_store
from chunkflow.storage import local as local_module
from chunkflow.storage.atomic_files import TMP_MAX_AGE, TMP_SUFFIX
from tests.helpers.temporaries import temporary_file


@pytest.mark.parametrize("scheme", ["file", "local"])
def test_a_write_that_fails_midway_leaves_the_old_value(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, scheme: str
) -> None:
    store = FsspecStore(f"{scheme}://{tmp_path}/a.zarr")
    store["c/0"] = b"old value"
    real_write = os.write

    def crash_after_three_bytes(fd: int, data: object) -> int:
        real_write(fd, memoryview(data)[:3])  # type: ignore[arg-type]
        raise OSError("disk gone")

    monkeypatch.setattr(local_module.os, "write", crash_after_three_bytes)
    with pytest.raises(OSError):
        store["c/0"] = b"a new and longer value"
    monkeypatch.undo()
    assert store["c/0"] == b"old value"
    assert os.listdir(tmp_path / "a.zarr" / "c") == ["0"]  # the temporary file is gone


def test_another_writers_temporary_file_is_not_a_key(tmp_path: Path) -> None:
    store = FsspecStore(f"file://{tmp_path}/a.zarr")
    store["c/0"] = b"x"
    (tmp_path / "a.zarr" / "c" / f"1.abc{TMP_SUFFIX}").write_bytes(b"half")
    assert sorted(store.list_prefix("")) == ["c/0"]
    assert store.list_dir("c") == (["0"], [])
    assert store.getsize_prefix("") == 1


def test_a_file_url_with_storage_options_writes_arrays_atomically(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The path users take: a file:// URL with storage_options goes to fsspec's local
    # file system, and an array written there survives a failed rewrite unchanged.
    url = f"file://{tmp_path}/img.zarr"
    options = {"auto_mkdir": True}
    assert isinstance(make_store(url, storage_options=options), FsspecStore)
    z = chunkflow.create_array(url, shape=(4, 4), chunks=(2, 2), dtype="i2",
                               storage_options=options)
    z[:] = np.arange(16, dtype="i2").reshape(4, 4)

    def fail(fd: int, data: object) -> int:
        raise OSError("disk gone")

    monkeypatch.setattr(local_module.os, "write", fail)
    with pytest.raises(OSError):
        z[:2, :2] = -1
    monkeypatch.undo()
    again = chunkflow.open_array(url, mode="r", storage_options=options, cache=False)
    np.testing.assert_array_equal(again[:], np.arange(16, dtype="i2").reshape(4, 4))


@pytest.mark.parametrize("listing", ["list_prefix", "list_dir"])
def test_listings_remove_a_killed_writers_old_temporary_files(tmp_path: Path,
                                                              listing: str) -> None:
    url = f"file://{tmp_path}/a.zarr"
    store = FsspecStore(url)
    store["c/0"] = b"x"
    old = temporary_file(tmp_path / "a.zarr" / "c", "1", age=2 * TMP_MAX_AGE)
    live = temporary_file(tmp_path / "a.zarr" / "c", "2", age=5)
    # a read-only store never deletes
    read_only = FsspecStore(url, read_only=True)
    assert list(getattr(read_only, listing)("c" if listing == "list_dir" else "")) \
        in (["c/0"], ["0"], [["0"], []])
    assert old.exists()
    getattr(store, listing)("c" if listing == "list_dir" else "")
    assert not old.exists() and live.exists()


def test_repair_of_a_file_url_removes_old_temporary_files_only(tmp_path: Path) -> None:
    url, options = f"file://{tmp_path}/img.zarr", {"auto_mkdir": True}
    z = chunkflow.create_array(url, shape=(4, 4), chunks=(2, 2), dtype="i2",
                               storage_options=options)
    z[:] = 7
    old = temporary_file(tmp_path / "img.zarr" / "c" / "0", "1", age=2 * TMP_MAX_AGE)
    live = temporary_file(tmp_path / "img.zarr" / "c" / "1", "0", age=5)
    assert z.repair().removed_temporaries == 1
    assert not old.exists() and live.exists()
    np.testing.assert_array_equal(z[:], np.full((4, 4), 7, "i2"))


def test_only_local_files_have_temporaries_to_remove(tmp_path: Path) -> None:
    assert FsspecStore("memory://tmp-cleanup/a.zarr").remove_stale_temporaries(max_age=0) == 0
    store = FsspecStore(f"local://{tmp_path}/a.zarr")
    store["k"] = b"x"
    temporary_file(tmp_path / "a.zarr", "j", age=5)
    assert store.remove_stale_temporaries() == 0
    assert store.remove_stale_temporaries(max_age=0) == 1
    assert sorted(os.listdir(tmp_path / "a.zarr")) == ["k"]
