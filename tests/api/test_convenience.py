"""save / load / copy / copy_all / copy_store on every backend, across formats and stores."""

from __future__ import annotations

import gc
import tracemalloc
from pathlib import Path
from typing import Any

import numcodecs
import numpy as np
import pytest

import chunkflow
from chunkflow.api import group, open_group
from chunkflow.api import raw_copy as copying
from chunkflow.api.convenience import (
    LazyLoader,
    copy,
    copy_all,
    copy_store,
    load,
    save,
    save_array,
    save_group,
)
from chunkflow.errors import ContainsArrayError, ContainsGroupError, NodeNotFoundError
from chunkflow.storage import LocalStore, MemoryStore, Store, ZipStore

#: The backends every function is exercised on (the fixture's others add little here).
on_backends = pytest.mark.parametrize(
    "make_store", ["memory", "local", "zip", "fsspec-memory"], indirect=True
)
FORMAT_PAIRS = [(2, 2), (2, 3), (3, 2), (3, 3)]


def _skip_if_no_deletes(store: Store) -> None:
    if not store.supports_deletes:
        pytest.skip(f"{type(store).__name__} cannot delete or overwrite members (replace)")


def _source_tree(store: Store, zarr_format: int) -> Any:
    """root{title} / g{kind} / (x: 2-d int, attrs; sub / y: float; empty: nothing stored)."""
    root = group(store, zarr_format=zarr_format, attributes={"title": "source"})
    g = root.create_group("g", attributes={"kind": "demo"})
    x = g.create_array("x", shape=(10, 7), chunks=(4, 3), dtype="i4",
                       compressor=numcodecs.Zstd(level=3), attributes={"unit": "nm"})
    x[:] = np.arange(70, dtype="i4").reshape(10, 7)
    sub = g.create_group("sub")
    y = sub.create_array("y", shape=(5,), chunks=(2,), dtype="f8", fill_value=-1.0)
    y[1:4] = [0.5, 1.5, 2.5]
    g.create_array("empty", shape=(3, 3), chunks=(2, 2), dtype="u1", fill_value=9)
    return root


# ------------------------------------------------------------------ save / load


@on_backends
@pytest.mark.parametrize("zarr_format", [2, 3])
def test_save_array_then_load_round_trips(make_store: Any, zarr_format: int) -> None:
    store = make_store()
    data = np.arange(60, dtype="u2").reshape(6, 10)
    save_array(store, data, zarr_format=zarr_format, path="a/b", chunks=(4, 4))
    back = load(store, path="a/b")
    assert isinstance(back, np.ndarray)
    np.testing.assert_array_equal(back, data)
    assert chunkflow.open_array(store, mode="r", path="a/b").zarr_format == zarr_format


@on_backends
def test_save_group_loads_lazily_by_name(make_store: Any) -> None:
    store = make_store()
    first, second, labels = np.arange(5), np.ones((2, 3)), np.array(["a", "bc"])
    save_group(store, first, second, labels=labels, path="g", zarr_format=2)
    loader = load(store, path="g")
    assert isinstance(loader, LazyLoader)
    assert repr(loader) == "<LazyLoader: arr_0, arr_1, labels>"
    assert len(loader) == 3 and "labels" in loader and "nope" not in loader
    np.testing.assert_array_equal(loader["arr_1"], second)
    assert list(loader["labels"]) == ["a", "bc"]
    with pytest.raises(KeyError, match="nope"):
        loader["nope"]


@pytest.mark.parametrize("make_store", ["memory", "local", "fsspec-memory"], indirect=True)
def test_load_reads_a_member_only_when_accessed(make_store: Any) -> None:
    store = make_store()
    save_group(store, a=np.zeros(4))
    loader = load(store)
    chunkflow.open_array(store, mode="r+", path="a")[:] = 7  # after load, before access
    np.testing.assert_array_equal(loader["a"], np.full(4, 7.0))


def test_load_gives_nested_loaders_for_subgroups() -> None:
    store = MemoryStore()
    root = group(store)
    root.create_group("inner").array("z", np.arange(3))
    loaded = load(store)
    assert isinstance(loaded["inner"], LazyLoader)
    np.testing.assert_array_equal(loaded["inner"]["z"], np.arange(3))


@on_backends
def test_save_dispatches_on_its_arguments(make_store: Any) -> None:
    store = make_store()
    save(store, np.arange(3), path="one")
    save(store, np.arange(2), extra=np.ones(1), path="many", zarr_format=2)
    np.testing.assert_array_equal(load(store, path="one"), np.arange(3))
    assert sorted(load(store, path="many")) == ["arr_0", "extra"]
    assert open_group(store, mode="r", path="many").zarr_format == 2
    with pytest.raises(ValueError, match="at least one array"):
        save(store)
    with pytest.raises(ValueError, match="at least one array"):
        save_group(store)


def test_save_replaces_what_was_at_the_path() -> None:
    store = MemoryStore()
    save_group(store, a=np.zeros(2), b=np.zeros(2), path="p")
    save_array(store, np.ones(3), path="p")
    np.testing.assert_array_equal(load(store, path="p"), np.ones(3))
    assert not any(key.startswith("p/a/") for key in store)


def test_save_and_load_by_path_close_the_zip_file(tmp_path: Path) -> None:
    target = tmp_path / "saved.zip"
    save(str(target), np.arange(4), labels=np.ones(2))
    with load(str(target)) as loader:  # a valid zip: the central directory was written
        np.testing.assert_array_equal(loader["arr_0"], np.arange(4))


@on_backends
def test_load_of_a_missing_path_names_it(make_store: Any) -> None:
    store = make_store()
    with pytest.raises(NodeNotFoundError, match="'no/such/node'"):
        load(store, path="no/such/node")


def test_load_insisting_on_another_format_fails() -> None:
    store = MemoryStore()
    save_array(store, np.arange(2), zarr_format=3)
    with pytest.raises(NodeNotFoundError, match="no Zarr v2 node.*found a v3 array"):
        load(store, zarr_format=2)


# ---------------------------------------------------------------------- copy


@on_backends
@pytest.mark.parametrize(("src_format", "dst_format"), FORMAT_PAIRS)
def test_copy_array_between_stores_and_formats(
    make_store: Any, src_format: int, dst_format: int
) -> None:
    source = _source_tree(make_store(), src_format)["g/x"]
    dest = group(make_store(), zarr_format=dst_format)
    assert copy(source, dest) == (1, 0, 70 * 4)
    copied = dest["x"]
    assert copied.zarr_format == dst_format
    assert (copied.shape, copied.chunks, copied.dtype) == ((10, 7), (4, 3), np.dtype("i4"))
    assert copied.compressor == numcodecs.Zstd(level=3)  # the equivalent codec, not a default
    assert dict(copied.attrs) == {"unit": "nm"}
    np.testing.assert_array_equal(copied[:], source[:])


@on_backends
@pytest.mark.parametrize(("src_format", "dst_format"), FORMAT_PAIRS)
def test_copy_group_recursively(make_store: Any, src_format: int, dst_format: int) -> None:
    source = _source_tree(make_store(), src_format)
    dest = group(make_store(), zarr_format=dst_format)
    # g, g/x, g/sub, g/sub/y, g/empty
    assert copy(source["g"], dest, "h") == (5, 0, 70 * 4 + 5 * 8 + 9)
    assert dict(dest["h"].attrs) == {"kind": "demo"}
    assert sorted(dest["h"]) == ["empty", "sub", "x"]
    y = dest["h/sub/y"]
    assert y.zarr_format == dst_format and y.fill_value == -1.0
    np.testing.assert_array_equal(y[:], [-1.0, 0.5, 1.5, 2.5, -1.0])
    assert dest["h/empty"].nchunks_initialized == 0  # fill-value chunks stay unwritten
    np.testing.assert_array_equal(dest["h/empty"][:], np.full((3, 3), 9, dtype="u1"))


@on_backends
def test_shallow_copy_and_copy_without_attributes(make_store: Any) -> None:
    source = _source_tree(make_store(), 3)
    dest = group(make_store())
    assert copy(source["g"], dest, shallow=True, without_attrs=True)[0] == 3  # g, x, empty
    assert sorted(dest["g"]) == ["empty", "x"]
    assert dict(dest["g"].attrs) == {} and dict(dest["g/x"].attrs) == {}


@on_backends
def test_copy_all_copies_members_and_attributes(make_store: Any) -> None:
    source = _source_tree(make_store(), 2)
    target = make_store()
    n_copied, n_skipped, _ = copy_all(source, target, zarr_format=3)
    dest = open_group(target, mode="r")
    assert (n_copied, n_skipped) == (5, 0)
    assert dest.attrs["title"] == "source" and dest["g/x"].zarr_format == 3
    np.testing.assert_array_equal(dest["g/x"][:], source["g/x"][:])


@on_backends
def test_copy_into_a_store_opens_a_group_in_the_requested_format(make_store: Any) -> None:
    source = _source_tree(make_store(), 3)
    target = make_store()
    assert copy(source["g/x"], target, zarr_format=2)[0] == 1
    assert open_group(target, mode="r").zarr_format == 2
    assert chunkflow.open_array(target, mode="r", path="x").zarr_format == 2


@on_backends
def test_if_exists_raise_names_the_path(make_store: Any) -> None:
    source = _source_tree(make_store(), 3)
    dest = group(make_store())
    copy(source["g"], dest)
    with pytest.raises(ContainsGroupError, match="'g'"):
        copy(source["g"], dest)
    with pytest.raises(ContainsArrayError, match="'g/x'"):
        copy(source["g/x"], dest["g"])


@on_backends
def test_if_exists_skip_merges_into_existing_groups(make_store: Any) -> None:
    source = _source_tree(make_store(), 3)
    dest = group(make_store())
    copy(source["g/x"], dest.create_group("g"))  # as if an earlier copy was interrupted
    assert copy(source["g/x"], dest["g"], if_exists="skip") == (0, 1, 0)
    n_copied, n_skipped, _ = copy(source["g"], dest, if_exists="skip")
    assert (n_copied, n_skipped) == (3, 1)  # sub, sub/y and empty copied; x skipped
    assert sorted(dest["g"]) == ["empty", "sub", "x"]


@on_backends
def test_if_exists_replace(make_store: Any) -> None:
    dest_store = make_store()
    _skip_if_no_deletes(dest_store)
    source = _source_tree(make_store(), 3)
    dest = group(dest_store)
    dest.create_array("x", shape=(2,), dtype="f4")
    assert copy(source["g/x"], dest, if_exists="replace")[0] == 1
    assert dest["x"].shape == (10, 7)


def test_copy_checks_its_arguments() -> None:
    source = _source_tree(MemoryStore(), 3)
    with pytest.raises(ValueError, match="if_exists"):
        copy(source["g/x"], group(), if_exists="overwrite")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="needs name="):
        copy(source, group())
    with pytest.raises(ValueError, match="one format"):
        copy(source["g/x"], group(zarr_format=3), zarr_format=2)


def test_copy_keeps_order_strings_and_overrides() -> None:
    root = group(zarr_format=2)
    fortran = root.create_array("f", shape=(4, 6), chunks=(2, 3), dtype="i2", order="F")
    fortran[:] = np.arange(24).reshape(4, 6)
    text = root.create_array("t", shape=(3,), chunks=(2,), dtype=str)
    text[:] = ["a", "bb", "ccc"]
    dest = group(zarr_format=3)
    copy_all(root, dest)
    copy(fortran, dest, "f2", chunks=(3, 3))  # create_kwargs override the source's choice
    assert dest["f"].order == "F" and dest["f2"].chunks == (3, 3)
    np.testing.assert_array_equal(dest["f2"][:], fortran[:])
    again = group(zarr_format=3)
    copy(dest["f"], again)  # v3 -> v3 copies the codec list, transpose included
    assert again["f"].order == "F" and again["f"].codecs == dest["f"].codecs
    np.testing.assert_array_equal(dest["f"][:], fortran[:])
    assert list(dest["t"][:]) == ["a", "bb", "ccc"] and dest["t"].chunks == (2,)


def test_copy_folder_to_zip_and_memory_to_folder(tmp_path: Path) -> None:
    source = _source_tree(LocalStore(tmp_path / "src.zarr"), 2)
    with ZipStore(tmp_path / "out.zip", mode="w") as zipped:
        copy_all(source, zipped, zarr_format=3)  # a store as dest: opened as a v3 group
    with ZipStore(tmp_path / "out.zip") as zipped:
        copied = open_group(zipped, mode="r")
        assert copied.zarr_format == 3 and copied.attrs["title"] == "source"
        np.testing.assert_array_equal(copied["g/x"][:], source["g/x"][:])

    in_memory = _source_tree(MemoryStore(), 3)
    folder = tmp_path / "dst.zarr"
    copy(in_memory["g"], str(folder))
    np.testing.assert_array_equal(load(str(folder), path="g/sub/y"), in_memory["g/sub/y"][:])


def test_copy_of_an_array_larger_than_the_budget_stays_under_it(tmp_path: Path) -> None:
    # A copy writes a batch of a few chunks per I/O thread: the thread count is fixed
    # below (chunkflow.io.threads: 2) so the bound does not depend on the machine's cores.
    chunk_bytes = 64 * 64 * 8
    budget = 16 * chunk_bytes  # 512 KiB; the array is 64 chunks, 2 MiB
    data = np.random.default_rng(0).random((512, 512))
    source = chunkflow.array(data, chunks=(64, 64), store=str(tmp_path / "src.zarr"),
                             zarr_format=2)
    dest = group(str(tmp_path / "dst.zarr"), zarr_format=3)
    del data
    gc.collect()
    # The decoded-chunk cache keeps chunks alive on purpose: give it two chunks.
    with chunkflow.config.set({"chunkflow.cache.max-bytes": 2 * chunk_bytes,
                               "chunkflow.io.threads": 2}):
        chunkflow.get_cache().clear()
        tracemalloc.start()
        try:
            counts = copy(source, dest, "big")
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
    assert counts == (1, 0, source.nbytes) and source.nbytes >= 4 * budget
    assert peak < budget, f"copy peaked at {peak} bytes, budget {budget}"
    np.testing.assert_array_equal(dest["big"][:], source[:])


# ---------------------------------------------------------------- copy_store


@on_backends
def test_copy_store_copies_raw_keys_below_a_path(make_store: Any) -> None:
    source, dest = make_store(), make_store()
    _source_tree(source, 2)
    expected = {k[len("g/"):]: source[k] for k in source.list_prefix("g")}
    n_copied, n_skipped, n_bytes = copy_store(source, dest, source_path="g", dest_path="h")
    assert (n_copied, n_skipped) == (len(expected), 0)
    assert n_bytes == sum(len(v) for v in expected.values())
    assert {k[len("h/"):]: dest[k] for k in dest.list_prefix("h")} == expected
    x = open_group(dest, mode="r", path="h")["x"]
    np.testing.assert_array_equal(x[:], np.arange(70).reshape(10, 7))


@on_backends
def test_copy_store_excludes_includes_and_if_exists(make_store: Any) -> None:
    source, dest = make_store(), make_store()
    source.set_many({"a/0": b"00", "a/1": b"11", "a/.zattrs": b"{}", "b/0": b"b"})
    assert copy_store(source, dest, excludes=r"/\d$", includes=["^a/1$"]) == (2, 0, 4)
    assert sorted(dest) == ["a/.zattrs", "a/1"]
    with pytest.raises(ContainsGroupError, match="'a/.zattrs' already exists"):
        copy_store(source, dest)
    assert "a/0" not in dest  # "raise" checks every key before writing any
    assert copy_store(source, dest, if_exists="skip") == (2, 2, 3)
    assert dest["a/0"] == b"00"


@on_backends
def test_copy_store_if_exists_replace(make_store: Any) -> None:
    source, dest = make_store(), make_store()
    _skip_if_no_deletes(dest)
    source["k"] = b"new"
    dest["k"] = b"old"
    assert copy_store(source, dest, if_exists="replace") == (1, 0, 3)
    assert dest["k"] == b"new"


def test_copy_store_names_the_array_a_key_belongs_to() -> None:
    source = MemoryStore()
    chunkflow.array(np.arange(4), chunks=2, store=source, path="z")[:] = 1
    dest = MemoryStore()
    copy_store(source, dest)
    with pytest.raises(ContainsArrayError, match="in array 'z'"):
        copy_store(source, dest)


def test_copy_store_batches_are_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    source, dest = MemoryStore(), MemoryStore()
    source.set_many({f"k/{i:03d}": bytes(100) for i in range(50)})
    batches: list[int] = []
    real = source.get_many

    def recording(keys: Any) -> dict[str, bytes]:
        keys = list(keys)
        batches.append(len(keys))
        return real(keys)

    monkeypatch.setattr(source, "get_many", recording)
    monkeypatch.setattr(copying, "COPY_STORE_MAX_BYTES", 300)
    assert copy_store(source, dest) == (50, 0, 5000)
    assert batches[0] == 8 and max(batches[1:]) == 3 and sum(batches) == 50
    assert dict(dest) == dict(source)


def test_copy_store_accepts_plain_mappings() -> None:
    dest: dict[str, bytes] = {}
    assert copy_store({"x/.zgroup": b"{}"}, dest, dest_path="y") == (1, 0, 2)
    assert dest == {"y/x/.zgroup": b"{}"}


@pytest.mark.parametrize("zarr_format", [2, 3])
def test_codec_overrides_replace_the_source_codecs(zarr_format: int) -> None:
    source = _source_tree(MemoryStore(), zarr_format)["g/x"]
    dest = group(zarr_format=zarr_format)
    copy(source, dest, "raw", compressor=None)
    assert dest["raw"].compressor is None
    np.testing.assert_array_equal(dest["raw"][:], source[:])


def test_copies_to_a_zip_path_leave_a_valid_zip(tmp_path) -> None:
    # A destination given as a path is opened, and closed, by the copy itself.
    src = chunkflow.group(str(tmp_path / "src.zarr"))
    src.create_array("a/x", data=np.arange(12).reshape(3, 4), chunks=(2, 2))
    assert chunkflow.copy_all(src, str(tmp_path / "all.zip"), zarr_format=2)[0] == 2
    assert chunkflow.open(str(tmp_path / "all.zip"), mode="r")["a/x"][2, 3] == 11
    assert chunkflow.copy(src["a/x"], str(tmp_path / "one.zip"), "x")[0] == 1
    assert chunkflow.open(str(tmp_path / "one.zip"), mode="r")["x"][1, 1] == 5
    chunkflow.copy_store(str(tmp_path / "src.zarr"), str(tmp_path / "raw.zip"))
    assert chunkflow.open(str(tmp_path / "raw.zip"), mode="r")["a/x"][0, 1] == 1


def test_copy_refusals_create_nothing(tmp_path: Path) -> None:
    source = _source_tree(MemoryStore(), 3)
    dest = tmp_path / "dest.zarr"
    with pytest.raises(TypeError, match=r"members of a group.*chunkflow.copy for one array"):
        copy_all(source["g/x"], str(dest))
    with pytest.raises(ValueError, match="zarr_format must be 2, 3 or None"):
        copy_all(source, str(dest), zarr_format=7)
    with pytest.raises(ValueError, match="zarr_format must be 2, 3 or None"):
        copy(source["g/x"], str(dest), "x", zarr_format=7)
    assert not dest.exists()
