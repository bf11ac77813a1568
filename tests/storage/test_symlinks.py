"""Symbolic links out of a local store are refused (reads, writes, deletes, listings),
links inside it work, and an explicit opt-in follows them all."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

import chunkflow
from chunkflow.errors import ExternalLinkError
from chunkflow.storage import LocalStore


@pytest.fixture
def planted(tmp_path: Path) -> tuple[Path, Path]:
    """A store with a file link and a folder link out of it, and the outside folder."""
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret").write_bytes(b"password")
    (outside / "victim").write_bytes(b"keep me")
    root = tmp_path / "store"
    (root / "a").mkdir(parents=True)
    (root / "a" / "real").write_bytes(b"inside")
    os.symlink(outside / "secret", root / "a" / "leak")
    os.symlink(outside, root / "out")
    os.symlink(root / "a" / "real", root / "a" / "alias")  # stays inside: fine
    return root, outside


def test_reads_through_links_out_are_refused(planted: tuple[Path, Path]) -> None:
    root, _ = planted
    store = LocalStore(root)
    for key in ("a/leak", "out/secret"):
        with pytest.raises(ExternalLinkError, match=rf"{key}.*outside the store root.*allow_external_links"):
            store[key]
        with pytest.raises(ExternalLinkError):
            store.get_range(key, 0, 3)
        with pytest.raises(ExternalLinkError):
            store.getsize(key)
        with pytest.raises(ExternalLinkError):
            _ = key in store  # must raise, not answer False
    assert store.get_many(["a/real", "a/alias"]) == {"a/real": b"inside", "a/alias": b"inside"}
    with pytest.raises(ExternalLinkError):
        store.get_many(["a/leak"])


def test_writes_and_deletes_never_reach_outside(planted: tuple[Path, Path]) -> None:
    root, outside = planted
    store = LocalStore(root)
    with pytest.raises(ExternalLinkError):
        store["out/victim"] = b"overwritten"
    with pytest.raises(ExternalLinkError):
        store["out/new/c/0"] = b"planted"
    with pytest.raises(ExternalLinkError):
        del store["out/victim"]
    store.delete_prefix("out")  # removes the link, not what it points to
    assert (outside / "victim").read_bytes() == b"keep me"
    assert (outside / "secret").read_bytes() == b"password"
    assert not (outside / "new").exists()
    store["a/leak"] = b"replaced"  # a link at the key itself is replaced, not followed
    assert (outside / "secret").read_bytes() == b"password"
    assert store["a/leak"] == b"replaced"


def test_listings_skip_links_out(planted: tuple[Path, Path]) -> None:
    root, _ = planted
    store = LocalStore(root)
    assert sorted(store.list_prefix("")) == ["a/alias", "a/real"]
    assert store.list_dir("") == ([], ["a"])
    assert list(store.list_prefix("out")) == []


def test_opt_in_follows_links(planted: tuple[Path, Path]) -> None:
    root, _ = planted
    store = LocalStore(root, allow_external_links=True)
    assert store["a/leak"] == b"password" and store["out/secret"] == b"password"
    assert "out/victim" in set(store.list_prefix(""))


def test_a_linked_store_root_is_fine(tmp_path: Path) -> None:
    real = tmp_path / "real.zarr"
    z = chunkflow.array(np.arange(10), chunks=3, store=str(real))
    os.symlink(real, tmp_path / "link.zarr")
    again = chunkflow.open(str(tmp_path / "link.zarr"), mode="a")
    again[0] = 42
    assert again[:].tolist() == [42, *range(1, 10)] and z.store == again.store


def test_arrays_in_a_planted_store_fail_clearly(tmp_path: Path) -> None:
    outside = tmp_path / "elsewhere"
    z = chunkflow.array(np.arange(10, dtype="u1"), chunks=5, store=str(outside))
    root = tmp_path / "store.zarr"
    chunkflow.array(np.ones(10, dtype="u1"), chunks=5, store=str(root))
    os.replace(root / "c", tmp_path / "old-c")
    os.symlink(outside / "c", root / "c")
    planted = chunkflow.open(str(root), mode="r", cache=False)
    with pytest.raises(ExternalLinkError):
        planted[:]
    assert z[:].tolist() == list(range(10))
