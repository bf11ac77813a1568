"""``overwrite`` replaces Zarr nodes only: every writer refuses a location that holds a
user's files (with or without ``overwrite``), touching nothing, and replacing a node
deletes its documents and chunks only. Real folders; every file's bytes are compared
before and after."""

from __future__ import annotations

import zipfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import chunkflow
from chunkflow.errors import (
    ContainsArrayError,
    ContainsGroupError,
    ForeignContentError,
    IncompleteListingError,
    UnsupportedOperationError,
)
from chunkflow.storage import LocalStore, MemoryStore
from tests.helpers.trees import MYDOCS, files_kept, fingerprint, write_tree

DATA = np.arange(48, dtype="u2").reshape(6, 8)


@pytest.fixture
def source(tmp_path: Path) -> str:
    path = str(tmp_path / "small.zarr")
    chunkflow.array(DATA, chunks=(4, 4), store=path)
    return path


@pytest.fixture
def mydocs(tmp_path: Path) -> Path:
    folder = tmp_path / "mydocs"
    write_tree(folder, MYDOCS)
    return folder


def _writers(source: str) -> dict[str, Callable[[str, bool], Any]]:
    """Every writer, writing at a location with or without overwrite."""
    z = chunkflow.open(source, mode="r")
    members = chunkflow.group()
    members.array("small", DATA, chunks=(4, 4))

    def pyramid(out: str, overwrite: bool) -> Any:
        return chunkflow.pyramid(z, out, chunks=(4, 4), overwrite=overwrite)

    return {
        "create": lambda out, ow: chunkflow.create((4,), store=out, overwrite=ow),
        "zeros": lambda out, ow: chunkflow.zeros((4,), store=out, overwrite=ow, zarr_format=2),
        "array": lambda out, ow: chunkflow.array(DATA, store=out, overwrite=ow),
        "create_array": lambda out, ow: chunkflow.create_array(
            out, shape=(8,), chunks=(2,), shards=(4,), dtype="u1", overwrite=ow),
        "open_array(mode=w)": lambda out, ow: chunkflow.open_array(out, mode="w", shape=(3,)),
        "open_group(mode=w)": lambda out, ow: chunkflow.open_group(out, mode="w"),
        "open(mode=w)": lambda out, ow: chunkflow.open(out, mode="w"),
        "group": lambda out, ow: chunkflow.group(out, overwrite=ow),
        "map_chunks": lambda out, ow: chunkflow.map_chunks(np.negative, z, out=out,
                                                           overwrite=ow, dtype="i4"),
        "to_chunkflow": lambda out, ow: chunkflow.to_chunkflow(chunkflow.to_dask(z), out,
                                                               overwrite=ow),
        "rechunk": lambda out, ow: chunkflow.rechunk(z, (6, 2), out, max_memory="1 MiB",
                                                     overwrite=ow),
        "pyramid": pyramid,
        "label": lambda out, ow: chunkflow.label(z, out, overwrite=ow),
        "copy": lambda out, ow: chunkflow.copy(z, out, "small", if_exists="replace" if ow
                                               else "raise"),
        "copy_all": lambda out, ow: chunkflow.copy_all(members, out),
        "save": lambda out, ow: chunkflow.save(out, DATA),
        "save_group": lambda out, ow: chunkflow.save_group(out, DATA, b=DATA),
    }


WRITERS = ["array", "copy", "copy_all", "create", "create_array", "group", "label",
           "map_chunks", "open(mode=w)", "open_array(mode=w)", "open_group(mode=w)",
           "pyramid", "rechunk", "save", "save_group", "to_chunkflow", "zeros"]


@pytest.mark.parametrize("overwrite", [True, False])
@pytest.mark.parametrize("writer", WRITERS)
def test_every_writer_refuses_a_folder_of_user_files(tmp_path: Path, source: str, mydocs: Path,
                                                     writer: str, overwrite: bool) -> None:
    write = _writers(source)[writer]
    assert sorted(_writers(source)) == WRITERS
    before = fingerprint(tmp_path)
    with pytest.raises(ForeignContentError) as refused:
        write(str(mydocs), overwrite)
    message = str(refused.value)
    assert "'thesis/chapter1.tex'" in message and "'todo.txt'" in message
    assert str(mydocs) in message and "nothing was written or deleted" in message
    assert fingerprint(tmp_path) == before


def test_map_chunks_out_mydocs2_is_refused_with_overwrite(tmp_path: Path, source: str) -> None:
    # The case: map_chunks(..., out="mydocs2", overwrite=True) deleted it all.
    mydocs2 = tmp_path / "mydocs2"
    write_tree(mydocs2, MYDOCS)
    before = fingerprint(tmp_path)
    with pytest.raises(ForeignContentError, match="mydocs2"):
        chunkflow.map_chunks(np.negative, source, out=str(mydocs2), overwrite=True, dtype="i4")
    assert fingerprint(tmp_path) == before


def test_a_new_path_inside_a_folder_of_user_files_is_written(mydocs: Path) -> None:
    before = fingerprint(mydocs)
    z = chunkflow.array(DATA, store=str(mydocs), path="results/out", chunks=(4, 4))
    np.testing.assert_array_equal(chunkflow.open(str(mydocs / "results/out"), mode="r")[:], DATA)
    assert files_kept(before, fingerprint(mydocs)) == []
    chunkflow.array(DATA + 1, store=str(mydocs), path="results/out", chunks=(3, 3),
                    overwrite=True)  # replaces the array, and only it
    assert files_kept(before, fingerprint(mydocs)) == []
    assert z.read_only is False


@pytest.mark.parametrize("layout", [
    {"zarr_format": 2},
    {"zarr_format": 2, "dimension_separator": "/"},
    {"zarr_format": 3},
    {"zarr_format": 3, "chunk_key_encoding": {"name": "default", "separator": "."}},
    {"zarr_format": 3, "chunk_key_encoding": {"name": "v2", "separator": "/"}},
    {"zarr_format": 3, "shards": (4, 8)},
])
def test_overwrite_deletes_every_key_of_the_node_and_nothing_beside(
        tmp_path: Path, layout: dict[str, Any]) -> None:
    project = tmp_path / "project"
    write_tree(project, {"notes.txt": b"mine", "other/keep.txt": b"keep"})
    kwargs = dict(layout)
    chunkflow.create_array(str(project / "out.zarr"), data=DATA, chunks=(2, 2), **kwargs,
                           attributes={"a": 1})
    before = fingerprint(tmp_path)
    new = chunkflow.create((3,), chunks=(3,), dtype="i1", store=str(project / "out.zarr"),
                           overwrite=True, zarr_format=3)
    # Only the new array's document is left: no chunk, no document of the old one.
    assert sorted(LocalStore(str(project / "out.zarr")).list_prefix("")) == ["zarr.json"]
    assert sorted(p.name for p in (project / "out.zarr").iterdir()) == ["zarr.json"]
    assert new[:].tolist() == [0, 0, 0]
    assert files_kept(before, fingerprint(tmp_path), replaced="project/out.zarr") == []


def test_overwrite_of_a_group_deletes_its_members_and_keeps_unheld_nodes(tmp_path: Path) -> None:
    root = chunkflow.open_group(str(tmp_path / "h.zarr"), mode="w", zarr_format=2)
    root.create_group("a").array("x", DATA, chunks=(3, 3))
    root.array("y", DATA, chunks=(4, 4), dimension_separator="/")
    # An array in a plain folder below the group: Zarr, but no member of it.
    chunkflow.array(DATA, store=str(tmp_path / "h.zarr/plain/z"), chunks=(6, 8))
    chunkflow.group(str(tmp_path / "h.zarr"), overwrite=True, zarr_format=3)
    left = sorted(LocalStore(str(tmp_path / "h.zarr")).list_prefix(""))
    assert left == ["plain/z/c/0/0", "plain/z/zarr.json", "zarr.json"]
    np.testing.assert_array_equal(chunkflow.open(str(tmp_path / "h.zarr/plain/z"), mode="r")[:],
                                  DATA)


@pytest.mark.parametrize("stray", ["out/thesis.tex", "out/c/notes", "out/c/9/0",
                                   "out/sub/zarr.json", "out/.zarray"])
def test_one_stray_key_in_a_node_refuses_its_overwrite(stray: str) -> None:
    store = MemoryStore()
    chunkflow.array(DATA, store=store, path="out", chunks=(4, 4))
    store[stray] = b"not zarr" if not stray.endswith(".zarray") else b"{}"
    before = dict(store.items())
    for overwrite in (True, False):
        with pytest.raises(ForeignContentError, match=stray.partition("/")[2]):
            chunkflow.create((3,), store=store, path="out", overwrite=overwrite)
    assert dict(store.items()) == before


def test_a_node_without_overwrite_is_refused_as_before() -> None:
    store = MemoryStore()
    chunkflow.create((3,), store=store, path="a")
    chunkflow.group(store, path="g")
    with pytest.raises(ContainsArrayError):
        chunkflow.create((3,), store=store, path="a")
    with pytest.raises(ContainsGroupError):
        chunkflow.open_group(store, path="g", mode="w-")
    with pytest.raises(ContainsGroupError):
        chunkflow.open_group(store).create_group("g")


def test_a_key_where_the_node_goes_is_refused() -> None:
    store = MemoryStore()
    store["docs/todo.txt"] = b"mine"
    for path in ("docs/todo.txt", "docs/todo.txt/inner"):
        with pytest.raises(ForeignContentError, match="todo.txt"):
            chunkflow.create((3,), store=store, path=path, overwrite=True)
    assert dict(store.items()) == {"docs/todo.txt": b"mine"}


def test_group_members_and_deletion_keep_user_files(tmp_path: Path) -> None:
    root = chunkflow.open_group(str(tmp_path / "g.zarr"), mode="w")
    root.create_array("x", data=DATA, chunks=(4, 4))
    write_tree(tmp_path / "g.zarr/docs", {"a.txt": b"mine"})
    write_tree(tmp_path / "g.zarr/x", {"README": b"about x"})
    before = fingerprint(tmp_path)
    with pytest.raises(ForeignContentError, match="a.txt"):
        root.create_group("docs", overwrite=True)
    with pytest.raises(ForeignContentError, match="README"):
        root.create_array("x", shape=(2,), overwrite=True)
    with pytest.raises(ForeignContentError, match="README"):
        root.require_group("x", overwrite=True)
    assert fingerprint(tmp_path) == before
    del root["x"]  # deletes the array's documents and chunks; the README stays
    assert "x" not in root
    assert sorted(p.name for p in (tmp_path / "g.zarr/x").iterdir()) == ["README"]
    assert files_kept(before, fingerprint(tmp_path), replaced="g.zarr/x") == []


class _Unlistable(MemoryStore):
    def _list_prefix(self, prefix: str) -> Iterator[str]:
        raise OSError("listing is forbidden here")


class _ListsNothing(MemoryStore):
    def _list_prefix(self, prefix: str) -> Iterator[str]:
        return iter(())


@pytest.mark.parametrize("kind", [_Unlistable, _ListsNothing])
def test_a_store_that_cannot_list_creates_but_never_replaces(kind: type[MemoryStore]) -> None:
    store = kind()
    z = chunkflow.create((4,), chunks=(2,), dtype="u1", store=store, path="a")
    z[:] = 7
    before = dict(store._data)  # noqa: SLF001 - what the store holds, without listing
    with pytest.raises(IncompleteListingError, match="cannot list"):
        chunkflow.create((2,), store=store, path="a", overwrite=True)
    assert dict(store._data) == before  # noqa: SLF001
    with pytest.raises(ContainsArrayError):
        chunkflow.create((2,), store=store, path="a")


def _zip_names(path: Path) -> list[str]:
    with zipfile.ZipFile(path) as zf:
        return sorted(zf.namelist())


def test_a_zip_file_is_rewritten_only_when_it_holds_just_the_node(tmp_path: Path) -> None:
    path = tmp_path / "a.zip"
    chunkflow.save_array(str(path), DATA, chunks=(3, 3))
    chunkflow.create((2,), store=str(path), overwrite=True, zarr_format=2).store.close()
    assert _zip_names(path) == [".zarray"]  # written anew: no old chunk stays
    with zipfile.ZipFile(path, "a") as zf:
        zf.writestr("notes.txt", b"mine")
    before = path.read_bytes()
    with pytest.raises(ForeignContentError, match="notes.txt"):
        chunkflow.create((2,), store=str(path), overwrite=True)
    assert path.read_bytes() == before


def test_a_node_in_a_zip_beside_others_cannot_be_replaced(tmp_path: Path) -> None:
    path = tmp_path / "two.zip"
    chunkflow.save_group(str(path), a=DATA, b=DATA)
    before = path.read_bytes()
    with pytest.raises(UnsupportedOperationError, match="cannot delete"):
        chunkflow.create((2,), store=str(path), path="a", overwrite=True)
    assert path.read_bytes() == before
    with chunkflow.open(str(path), mode="r") as group:
        assert group["b"][:].tolist() == DATA.tolist()
