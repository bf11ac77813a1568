"""Zip files through their whole life: written and read back in one process, reopened
before they were closed, finished at exit, closed by the nodes that opened them."""

from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from pathlib import Path

import numpy as np
import pytest

import chunkflow
from chunkflow.storage import ZipStore

ROOT = Path(__file__).resolve().parents[2]


def test_read_back_while_still_open_for_writing(tmp_path: Path) -> None:
    path = str(tmp_path / "a.zip")
    z = chunkflow.open(path, mode="w", shape=(10,), chunks=(5,), dtype="i4")
    z[:] = np.arange(10)
    again = chunkflow.open(path, mode="r")  # BadZipFile before: no central directory yet
    assert again[:].tolist() == list(range(10))
    assert again.store.read_only and not z.store.read_only


def test_reopening_an_unclosed_zip_for_appending_keeps_everything(tmp_path: Path) -> None:
    path = str(tmp_path / "g.zip")
    root = chunkflow.group(path)
    root.create_array("x", shape=(6,), chunks=(3,), dtype="u1")[:] = 1
    appender = chunkflow.open_group(path, mode="a")  # before: the file kept only zarr.json
    appender.create_array("y", shape=(4,), chunks=(2,), dtype="u1")[:] = 2
    root.close()
    appender.close()
    with zipfile.ZipFile(path) as zf:
        names = set(zf.namelist())
    assert {"x/zarr.json", "y/zarr.json", "x/c/0", "y/c/1"} <= names
    reopened = chunkflow.open_group(path, mode="r")
    assert reopened["x"][:].tolist() == [1] * 6 and reopened["y"][:].tolist() == [2] * 4


def test_truncating_a_file_in_use_is_refused(tmp_path: Path) -> None:
    path = str(tmp_path / "t.zip")
    z = chunkflow.open(path, mode="w", shape=(4,), chunks=(2,), dtype="u1")
    z[:] = 3
    with pytest.raises(ValueError, match="is open in this process"):
        ZipStore(path, mode="w")
    assert chunkflow.open(path, mode="r")[:].tolist() == [3] * 4


def test_context_managers_close_what_they_opened(tmp_path: Path) -> None:
    path = str(tmp_path / "c.zip")
    with chunkflow.open(path, mode="w", shape=(4,), chunks=(2,), dtype="u1") as z:
        z[:] = 5
    with zipfile.ZipFile(path) as zf:  # a valid zip for any reader now
        assert "c/0" in zf.namelist()
    # A store the caller passed in is the caller's to close.
    store = ZipStore(str(tmp_path / "d.zip"), mode="w")
    with chunkflow.zeros(4, chunks=2, dtype="u1", store=store) as z:
        z[:] = 1
    store["extra"] = b"still open"
    store.close()
    with chunkflow.group(str(tmp_path / "e.zip")) as g:
        g.create_array("a", shape=(2,), chunks=(2,), dtype="u1")[:] = 9
    with chunkflow.open_group(str(tmp_path / "e.zip"), mode="r") as g:
        assert g["a"][:].tolist() == [9, 9]


def test_unclosed_zip_is_finished_at_exit(tmp_path: Path) -> None:
    path = tmp_path / "exit.zip"
    code = (
        "import numpy as np, chunkflow\n"
        f"z = chunkflow.open({str(path)!r}, mode='w', shape=(8,), chunks=(4,), dtype='i2')\n"
        "z[:] = np.arange(8)\n"  # never closed
    )
    subprocess.run([sys.executable, "-c", code], check=True, cwd=ROOT,
                   env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=120)
    assert chunkflow.open(str(path), mode="r")[:].tolist() == list(range(8))


def test_zip_urls_write(tmp_path: Path) -> None:
    path = tmp_path / "u.zip"
    with chunkflow.open(f"zip::file://{path}", mode="w", shape=(3,), chunks=(3,),
                        dtype="u1") as z:
        z[:] = [1, 2, 3]
    with chunkflow.open(f"zip::{path}", mode="r") as z:
        assert z[:].tolist() == [1, 2, 3]


def test_zip_members_have_versions_for_the_cache(tmp_path: Path) -> None:
    store = ZipStore(str(tmp_path / "v.zip"), mode="w")
    store["k"] = b"one"
    first = store.versions(["k"])
    with pytest.warns(UserWarning, match="appends a newer member"):
        store["k"] = b"two"
    assert store.versions(["k"]) != first and store.versions(["missing"]) == {}
    store.close()


def test_ranges_of_stored_members_are_read_at_their_offsets(tmp_path: Path,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    data = os.urandom(1 << 20)
    with ZipStore(tmp_path / "r.zip", mode="w") as store:
        store["before"] = b"x" * 1000
        store["shard"] = data
        with store.open_ranges("shard") as reader:
            assert reader.version == store.versions(["shard"])["shard"]

            def whole(*args: object, **kwargs: object) -> None:
                raise AssertionError("a ranged read must not read the whole member")

            monkeypatch.setattr(zipfile.ZipFile, "read", whole)
            monkeypatch.setattr(zipfile.ZipFile, "open", whole)
            far = [(len(data) - 10, len(data)), (0, 10), (500_000, 500_100)]
            assert reader.read(far) == [data[a:b] for a, b in far]


def test_range_reader_keeps_the_member_it_opened(tmp_path: Path) -> None:
    path = tmp_path / "p.zip"
    with ZipStore(path, mode="w") as store:
        store["k"] = b"old" * 100
        reader = store.open_ranges("k")
        with pytest.warns(UserWarning, match="appends a newer member"):
            store["k"] = b"new" * 200  # appended after the old member
        store["other"] = b"written between two reads"
        assert reader.read([(0, 3), (297, 300)]) == [b"old", b"old"]
        store["more"] = b"and after"  # reads leave the writer's position alone
        assert store.open_ranges("k").read([(0, 3)]) == [b"new"]
    with zipfile.ZipFile(path) as zf:  # still a valid zip with every member intact
        assert zf.testzip() is None
        assert zf.read("other") == b"written between two reads" and zf.read("more") == b"and after"
    with pytest.raises(ValueError, match="closed"):
        reader.read([(0, 3)])  # the store (and its file) is closed


def test_range_reader_of_compressed_and_read_only_members(tmp_path: Path) -> None:
    path = tmp_path / "c.zip"
    data = bytes(range(256)) * 100
    with ZipStore(path, mode="w", compression=zipfile.ZIP_DEFLATED) as store:
        store["z"] = data
        with store.open_ranges("z") as reader:
            assert reader.size == len(data) and reader.read([(300, 310)]) == [data[300:310]]
    with ZipStore(path) as ro, ro.open_ranges("z") as reader:
        assert reader.read([(0, 5), (len(data) - 1, len(data))]) == [data[:5], data[-1:]]
        assert reader.version == ro.versions(["z"])["z"]
