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
from chunkflow.storage.local import TMP_SUFFIX


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
