"""Shared behaviour every chunkflow store must show.

A backend's test class inherits :class:`StoreConformance` and provides a
``store`` fixture returning a fresh, empty, writable store.  Class attributes
switch off what a backend cannot do (with the reason in the skip message).

Checking a store only through itself proves little (a store that loses every write
and reads back what it cached would pass), so each backend also provides a channel
that bypasses the store under test, as zarr-python's ``StoreTests`` do:
``raw_get``/``raw_set`` read and write the bytes where the backend keeps them (the
folder, the dict, the fsspec file system), and ``twin`` builds an independent store
over the same location.
"""

from __future__ import annotations

import pickle
from collections.abc import Sequence
from typing import Any

import numpy as np
import pytest

from chunkflow.errors import InvalidKeyError, ReadOnlyError
from chunkflow.storage import Store
from chunkflow.storage.coherence import add_change_listener, remove_change_listener
from chunkflow.testing.store_ranges import RangeConformance

BAD_KEYS = [
    "..",
    ".",
    "../x",
    "a/../b",
    "a/./b",
    "a/..",
    "/abs",
    "a//b",
    "a/",
    "",
    "a\\b",
    "C:\\x",
    "C:/x",
    "a\x00b",
    b"bytes-key",
    3,
    None,
]

TREE = {
    ".zgroup": b"g",
    "a/.zarray": b"arr",
    "a/0.0": b"c00",
    "a/0.1": b"c01",
    "a/c/0/0": b"deep0",
    "a/c/0/1": b"deep1",
    "a/c/1/0": b"deep10",
    "ab/x": b"not-under-a",
    "b/.zattrs": b"{}",
}


class StoreConformance(RangeConformance):
    """Mixin of tests run against every backend's ``store`` fixture (the byte-range
    reader's among them: :class:`~chunkflow.testing.store_ranges.RangeConformance`)."""

    supports_deletes = True
    supports_overwrite = True
    supports_pickle = True
    reason = "not supported by this backend"
    #: Why a backend has no bypass channel (None: it has one).
    no_raw_reason: str | None = None
    #: Whether a byte-range reader keeps the value it opened when the key is rewritten
    #: through the store (False: it may raise StoreValueChangedError instead).
    pins_ranges = True

    def _needs(self, flag: bool) -> None:
        if not flag:
            pytest.skip(self.reason)

    # -------------------------------------------------- the bypass channel

    def raw_get(self, store: Store, key: str) -> bytes | None:
        """The bytes the backend holds for ``key`` (None: none), not read via ``store``."""
        raise NotImplementedError

    def raw_set(self, store: Store, key: str, value: bytes) -> None:
        """Put ``value`` where the backend keeps ``key``, behind ``store``'s back."""
        raise NotImplementedError

    def twin(self, store: Store) -> Store | None:
        """A store built independently over the same location (None: none can be)."""
        return None

    def _needs_raw(self) -> None:
        if self.no_raw_reason is not None:
            pytest.skip(self.no_raw_reason)

    def test_writes_land_where_the_backend_keeps_them(self, store: Store) -> None:
        self._needs_raw()
        store["a/b"] = b"one"
        store.set_many({"a/c": b"two", "d": np.arange(3, dtype="u1")})
        assert self.raw_get(store, "a/b") == b"one"
        assert self.raw_get(store, "a/c") == b"two"
        assert self.raw_get(store, "d") == b"\x00\x01\x02"
        assert self.raw_get(store, "never") is None
        if self.supports_deletes:
            del store["a/b"]
            store.delete_many(["a/c"])
            assert self.raw_get(store, "a/b") is None and self.raw_get(store, "a/c") is None
            store.delete_prefix("")
            assert self.raw_get(store, "d") is None

    def test_reads_see_what_the_backend_holds(self, store: Store) -> None:
        self._needs_raw()
        self.raw_set(store, "x/y", b"hello")
        self.raw_set(store, "x/z/0", b"deep")
        self.raw_set(store, "w", b"")
        assert store["x/y"] == b"hello" and store["w"] == b""
        assert store.get_many(["x/y", "x/z/0", "nope"]) == {"x/y": b"hello", "x/z/0": b"deep"}
        assert store.get_range("x/y", 1, 3) == b"ell" and store.getsize("x/y") == 5
        assert "x/z/0" in store and "x/z" not in store
        assert sorted(store.list_prefix("x")) == ["x/y", "x/z/0"]
        assert store.list_dir("x") == (["y"], ["z"])
        assert sorted(store.list_prefix("")) == ["w", "x/y", "x/z/0"]

    def test_changes_are_announced(self, store: Store) -> None:
        # Every write and delete tells the process's caches what changed; reads do not.
        heard: list[tuple[str, list[str] | None, str | None]] = []

        def listener(identity: str, keys: Sequence[str] | None, prefix: str | None) -> None:
            heard.append((identity, None if keys is None else sorted(keys), prefix))

        add_change_listener(listener)
        try:
            store["a/0"] = b"1"
            store.set_many({"a/1": b"2", "b/0": b"3"})
            assert [h for h in heard if h[1] is not None and h[1] != []][:2] == [
                (store.identity, ["a/0"], None), (store.identity, ["a/1", "b/0"], None)]
            if self.supports_deletes:
                heard.clear()
                del store["a/0"]
                store.delete_many(["a/1"])
                store.delete_prefix("b")
                assert (store.identity, ["a/0"], None) in heard
                assert (store.identity, ["a/1"], None) in heard
                assert any(h[0] == store.identity and h[2] == "b" for h in heard)
            heard.clear()
            store.get_many(["a/0", "b/0"])
            list(store.list_prefix(""))
            assert heard == []  # reads announce nothing
        finally:
            remove_change_listener(listener)

    def test_equality_follows_the_location(self, store: Store) -> None:
        twin = self.twin(store)
        if twin is None:
            pytest.skip("this backend's location cannot be opened twice")
        assert twin == store and hash(twin) == hash(store) and twin is not store
        store["k"] = b"v"
        assert twin["k"] == b"v"

    # ------------------------------------------------------------ single key

    def test_is_store(self, store: Store) -> None:
        assert isinstance(store, Store)
        assert not store.read_only
        assert isinstance(store.identity, str) and store.identity

    def test_set_get(self, store: Store) -> None:
        store["a/b/c"] = b"value"
        store[".zarray"] = b""
        assert store["a/b/c"] == b"value"
        assert store[".zarray"] == b""
        assert isinstance(store["a/b/c"], bytes)

    def test_missing_key(self, store: Store) -> None:
        store["present"] = b"1"
        for op in (store.__getitem__, store.getsize, lambda k: store.get_range(k, 0, 1)):
            with pytest.raises(KeyError) as info:
                op("missing/key")
            assert info.value.args[0] == "missing/key"
        assert store.get("missing") is None

    def test_folder_is_not_a_key(self, store: Store) -> None:
        store["a/b"] = b"1"
        assert "a" not in store
        with pytest.raises(KeyError):
            store["a"]
        with pytest.raises(KeyError):
            store.getsize("a")

    def test_contains_iter_len(self, store: Store) -> None:
        assert len(store) == 0 and list(store) == []
        store.set_many(TREE)
        assert "a/0.0" in store and "a/9" not in store
        assert sorted(store) == sorted(TREE)
        assert len(store) == len(TREE)
        assert dict(store.items()) == TREE

    def test_overwrite(self, store: Store) -> None:
        self._needs(self.supports_overwrite)
        store["k"] = b"old value"
        store["k"] = b"new"
        assert store["k"] == b"new"
        assert list(store) == ["k"]
        assert store.getsize("k") == 3

    def test_delete(self, store: Store) -> None:
        self._needs(self.supports_deletes)
        store["a/b"] = b"1"
        store["a/c"] = b"2"
        del store["a/b"]
        assert "a/b" not in store and store["a/c"] == b"2"
        with pytest.raises(KeyError):
            del store["a/b"]
        with pytest.raises(KeyError):
            del store["a"]  # a folder-like prefix is not a key

    # ---------------------------------------------------------------- batch

    def test_get_many(self, store: Store) -> None:
        store.set_many({"a/0": b"x", "a/1": b"yy", "b": b"zzz"})
        got = store.get_many(["a/0", "missing", "a/1", "a/2", "b", "a"])
        assert got == {"a/0": b"x", "a/1": b"yy", "b": b"zzz"}
        assert store.get_many([]) == {}
        assert store.get_many(k for k in ["b"]) == {"b": b"zzz"}

    def test_get_into(self, store: Store) -> None:
        store.set_many({"a/0": b"value", "e": b""})
        given: list[bytearray] = []

        def buffer_for(size: int) -> memoryview:
            given.append(bytearray(size))
            return memoryview(given[-1])

        for key, value in (("a/0", b"value"), ("e", b"")):
            got = store.get_into(key, buffer_for)
            assert got is not None and bytes(got) == value
            if store.reads_into:  # read into the very buffer asked for, of the value's size
                assert bytes(given[-1]) == value
        assert store.get_into("missing", buffer_for) is None
        assert store.get_into("a", buffer_for) is None  # a folder is no key

    def test_set_many(self, store: Store) -> None:
        items = {f"c/{i}/{j}": bytes([i, j]) * 10 for i in range(3) for j in range(4)}
        store.set_many(items)
        assert store.get_many(list(items)) == items
        store.set_many({})

    def test_delete_many(self, store: Store) -> None:
        self._needs(self.supports_deletes)
        store.set_many({"a": b"1", "b": b"2", "c/d": b"3"})
        store.delete_many(["a", "c/d", "missing", "c/missing"])
        assert sorted(store) == ["b"]
        store.delete_many([])

    def test_get_range(self, store: Store) -> None:
        data = bytes(range(100))
        store["k"] = data
        cases = [(0, 10), (5, 0), (90, 50), (100, 5), (150, 5), (0, None), (42, None),
                 (-10, None), (-10, 3), (-200, None), (-200, 5), (99, 1)]
        for start, length in cases:
            expected = data[start:][:length] if length is not None else data[start:]
            assert store.get_range("k", start, length) == expected, (start, length)
        with pytest.raises(ValueError):
            store.get_range("k", 0, -1)

    # ---------------------------------------------------------------- listing

    def test_list_prefix(self, store: Store) -> None:
        store.set_many(TREE)
        assert sorted(store.list_prefix("")) == sorted(TREE)
        assert sorted(store.list_prefix("a")) == sorted(k for k in TREE if k.startswith("a/"))
        assert sorted(store.list_prefix("a/")) == sorted(store.list_prefix("a"))
        assert sorted(store.list_prefix("a/c")) == ["a/c/0/0", "a/c/0/1", "a/c/1/0"]
        assert sorted(store.list_prefix("a/c/0")) == ["a/c/0/0", "a/c/0/1"]
        assert list(store.list_prefix("a/c/0/0")) == []  # a key is not a prefix
        assert list(store.list_prefix("nothing/here")) == []

    def test_list_dir(self, store: Store) -> None:
        store.set_many(TREE)
        assert store.list_dir("") == ([".zgroup"], ["a", "ab", "b"])
        assert store.list_dir("a") == ([".zarray", "0.0", "0.1"], ["c"])
        assert store.list_dir("a/c") == ([], ["0", "1"])
        assert store.list_dir("a/c/0") == (["0", "1"], [])
        assert store.list_dir("missing") == ([], [])

    def test_delete_prefix(self, store: Store) -> None:
        self._needs(self.supports_deletes)
        store.set_many(TREE)
        store.delete_prefix("a/c/0")
        assert sorted(store.list_prefix("a/c")) == ["a/c/1/0"]
        store.delete_prefix("a")
        assert sorted(store) == [".zgroup", "ab/x", "b/.zattrs"]
        store.delete_prefix("missing")
        store.delete_prefix("")
        assert list(store) == []

    def test_clear(self, store: Store) -> None:
        self._needs(self.supports_deletes)
        store.set_many(TREE)
        store.clear()
        assert len(store) == 0

    def test_getsize(self, store: Store) -> None:
        store.set_many(TREE)
        assert store.getsize("a/c/1/0") == len(TREE["a/c/1/0"])
        assert store.getsize_prefix("a") == sum(len(v) for k, v in TREE.items() if k.startswith("a/"))
        assert store.getsize_prefix("") == sum(map(len, TREE.values()))
        assert store.getsize_prefix("missing") == 0

    # ----------------------------------------------------------------- values

    @pytest.mark.parametrize(
        "value",
        [
            bytearray(b"abc"),
            memoryview(b"xyzxyz")[1:4],
            np.arange(12, dtype="<i4"),
            np.arange(12, dtype="<f8").reshape(3, 4),
            np.asfortranarray(np.arange(12, dtype="u2").reshape(3, 4)),
            np.arange(20, dtype="u1")[::3],
            np.array(2.5),
            np.zeros(0, dtype="u1"),
        ],
        ids=["bytearray", "memoryview", "int32", "2d", "fortran", "strided", "0d", "empty"],
    )
    def test_bytes_like_values(self, store: Store, value: Any) -> None:
        expected = value.tobytes() if isinstance(value, np.ndarray) else bytes(value)
        store["v"] = value
        assert store["v"] == expected
        store.set_many({"w": value})
        assert store["w"] == expected

    def test_values_are_copied(self, store: Store) -> None:
        buf = bytearray(b"before")
        store["k"] = buf
        buf[:] = b"AFTER!"
        assert store["k"] == b"before"

    def test_non_bytes_refused(self, store: Store) -> None:
        for value in ("text", 12, None):
            with pytest.raises(TypeError):
                store["k"] = value
        assert "k" not in store

    @pytest.mark.parametrize("bad", BAD_KEYS, ids=repr)
    def test_unsafe_keys_refused(self, store: Store, bad: Any) -> None:  # not a key, on purpose
        store["ok"] = b"1"
        with pytest.raises(InvalidKeyError) as info:
            store[bad] = b"data"
        assert repr(bad) in str(info.value)  # the message names the key
        with pytest.raises(InvalidKeyError):
            store.set_many({"fine": b"1", bad: b"2"})
        for op in (store.__getitem__, store.__contains__, store.getsize):
            with pytest.raises(InvalidKeyError):
                op(bad)
        with pytest.raises(InvalidKeyError):
            store.get_many(["ok", bad])
        if self.supports_deletes:
            with pytest.raises(InvalidKeyError):
                del store[bad]
        assert list(store) == ["ok"]  # nothing written, nothing deleted

    def test_read_only_refusal(self, store: Store) -> None:
        store.set_many(TREE)
        store.read_only = True
        try:
            writes = [
                lambda: store.__setitem__("a/0.0", b"new"),
                lambda: store.__setitem__("fresh", b"new"),
                lambda: store.__delitem__("a/0.0"),
                lambda: store.set_many({"x": b"1", "a/0.0": b"2"}),
                lambda: store.delete_many(["a/0.0"]),
                lambda: store.delete_prefix("a"),
                lambda: store.delete_prefix(""),
            ]
            for write in writes:
                with pytest.raises(ReadOnlyError) as info:
                    write()
                assert "read-only" in str(info.value)
            with pytest.raises(PermissionError):  # ReadOnlyError is a PermissionError
                store["a/0.0"] = b"new"
            assert dict(store.items()) == TREE
        finally:
            store.read_only = False

    # ------------------------------------------------------------- identity

    def test_pickle_round_trip(self, store: Store) -> None:
        self._needs(self.supports_pickle)
        store.set_many({"a/b": b"1", "c": b"22"})
        clone = pickle.loads(pickle.dumps(store))
        assert type(clone) is type(store)
        assert clone.read_only == store.read_only
        assert dict(clone.items()) == {"a/b": b"1", "c": b"22"}

    def test_equality_by_identity(self, store: Store) -> None:
        assert store == store
        assert hash(store) == hash(store)
        assert store != {}
        assert store.identity == store.identity

    def test_keys_with_dots_and_depth(self, store: Store) -> None:
        keys = ["0.0.0", ".zattrs", "a/.zattrs", "a..b", "x/y/z/w/v/u", "c/0", "a-b_c~d"]
        store.set_many({k: k.encode() for k in keys})
        assert sorted(store) == sorted(keys)
        assert all(store[k] == k.encode() for k in keys)

    def test_large_value(self, store: Store) -> None:
        data = np.random.default_rng(0).bytes(3 * 2**20 + 7)
        store["big"] = data
        assert store["big"] == data
        assert store.getsize("big") == len(data)
        assert store.get_range("big", 2**20, 10) == data[2**20 : 2**20 + 10]
