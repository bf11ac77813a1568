"""Names no file system can store are refused up front with a chunkflow error that names
the key, on every backend, before anything is written."""

from __future__ import annotations

from pathlib import Path

import pytest

import chunkflow
from chunkflow.errors import InvalidKeyError
from chunkflow.storage import LocalStore, MemoryStore, normalize_key


@pytest.mark.parametrize("name,reason", [
    ("a" * 256, "256 bytes"),
    ("é" * 128, "256 bytes"),
    ("x\udcff", "lone surrogate"),
    ("ok/" + "b" * 300 + "/zarr.json", "300 bytes"),
])
def test_keys_that_no_file_system_takes(name: str, reason: str) -> None:
    with pytest.raises(InvalidKeyError, match=reason):
        normalize_key(name)


@pytest.mark.parametrize("make", [lambda tmp: LocalStore(tmp / "s.zarr"), lambda tmp: MemoryStore()],
                         ids=["local", "memory"])
def test_groups_refuse_such_members_and_write_nothing(make, tmp_path: Path) -> None:
    store = make(tmp_path)
    root = chunkflow.group(store)
    before = sorted(store.list_prefix(""))
    for name in ("a" * 256, "x\udcff"):
        with pytest.raises(InvalidKeyError):
            root.create_array(name, shape=3, chunks=3, dtype="u1")
    assert sorted(store.list_prefix("")) == before
    root.create_array("a" * 255, shape=3, chunks=3, dtype="u1")  # the longest allowed
    assert "a" * 255 in root
