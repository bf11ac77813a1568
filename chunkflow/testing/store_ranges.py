"""The byte-range reader's part of the store conformance suite (``Store.open_ranges``).

:class:`RangeConformance` is a base of :class:`~chunkflow.testing.StoreConformance`,
whose class attributes and bypass channel (``raw_set``, ``no_raw_reason``) it uses.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np
import pytest

from chunkflow.errors import InvalidKeyError, StoreValueChangedError
from chunkflow.storage import ByteRangeReader, Store

__all__ = ["RangeConformance"]


class RangeConformance:
    """Tests of ``store.open_ranges``: batches of ranges, sizes, versions, refusals, and
    readers that keep (or say they lost) the value they opened."""

    supports_deletes: bool
    supports_overwrite: bool
    no_raw_reason: str | None
    pins_ranges: bool
    raw_set: Any
    _needs: Any
    _needs_raw: Any

    def _put(self, store: Store, key: str, value: bytes) -> None:
        """Store ``value`` behind the store's back where possible (else through it)."""
        if self.no_raw_reason is None:
            self.raw_set(store, key, value)
        else:
            store[key] = value

    def test_open_ranges_reads_batches(self, store: Store) -> None:
        data = bytes(range(256)) * 4
        self._put(store, "s/0", data)
        ranges = [(1000, 1024), (0, 10), (5, 5), (0, 10), (512, 700), (0, 1024), (1024, 1024)]
        with store.open_ranges("s/0") as reader:
            assert isinstance(reader, ByteRangeReader) and reader.key == "s/0"
            assert reader.size == len(data)
            got = reader.read(ranges)
            assert got == [data[a:b] for a, b in ranges]
            assert all(type(part) is bytes for part in got)
            assert reader.read([]) == []
            assert reader.read([(3, 3)]) == [b""]
            assert reader.read([(1023, 1024)]) == [data[-1:]]  # the last byte, alone

    def test_open_ranges_empty_and_large_values(self, store: Store) -> None:
        big = np.random.default_rng(1).bytes(3 * 2**20 + 7)
        store.set_many({"empty": b"", "big": big})
        with store.open_ranges("empty") as reader:
            assert reader.size == 0 and reader.read([(0, 0)]) == [b""]
        with store.open_ranges("big") as reader:
            far = [(len(big) - 5, len(big)), (2**20, 2**20 + 10), (0, 2**21)]
            assert reader.read(far) == [big[a:b] for a, b in far]

    def test_open_ranges_version_is_the_store_version(self, store: Store) -> None:
        store["k"] = b"first value"
        before = store.versions(["k"]).get("k")
        with store.open_ranges("k") as reader:
            after = store.versions(["k"]).get("k")
            # A local file's version may appear between the two calls (see file_version).
            assert reader.version in (before, after)
        if self.supports_overwrite and reader.version is not None:
            store["k"] = b"second value"
            assert store.versions(["k"]).get("k") != reader.version

    def test_open_ranges_missing_key(self, store: Store) -> None:
        store["a/b"] = b"1"
        for key in ("missing/key", "a"):  # absent, and a folder that is not a key
            with pytest.raises(KeyError) as info:
                store.open_ranges(key)
            assert info.value.args[0] == key
        with pytest.raises(InvalidKeyError):
            store.open_ranges("../escape")

    def test_open_ranges_out_of_bounds(self, store: Store) -> None:
        store["k"] = bytes(10)
        with store.open_ranges("k") as reader:
            for bad in [(0, 11), (-1, 2), (5, 3), (11, 11)]:
                with pytest.raises(ValueError) as info:
                    reader.read([(0, 1), bad])
                message = str(info.value)
                assert "'k'" in message and str(bad) in message and "10" in message
            not_ranges: list[Any] = [(1.5, 2), (1,), "ab"]  # wrong on purpose
            for bad in not_ranges:
                with pytest.raises(ValueError, match="'k'"):
                    reader.read([bad])
            assert reader.read([(0, 10)]) == [bytes(10)]  # still usable

    def test_open_ranges_close(self, store: Store) -> None:
        store["k"] = b"abc"
        reader = store.open_ranges("k")
        assert reader.read([(0, 1)]) == [b"a"]
        reader.close()
        reader.close()  # idempotent
        with pytest.raises(ValueError, match="closed"):
            reader.read([(0, 1)])
        assert "closed" in repr(reader)

    def _old_or_changed(self, reader: ByteRangeReader, old: bytes, pinned: bool) -> None:
        """The reader returns the value it opened, or (not pinned) says it changed."""
        ranges = [(0, 50), (150, 200), (10, 20), (0, 200)]
        try:
            got = reader.read(ranges)
        except StoreValueChangedError as err:
            assert not pinned, "this backend promised to keep the value it opened"
            assert err.key == reader.key and repr(reader.key) in str(err)
            return
        assert got == [old[a:b] for a, b in ranges], "bytes of another value"

    def test_open_ranges_pinned_against_store_writes(self, store: Store) -> None:
        self._needs(self.supports_overwrite)
        old = bytes(range(200))
        for new in (b"N" * 200, b"short"):  # the same size, and another size
            store["k"] = old
            with store.open_ranges("k") as reader:
                store["k"] = new
                self._old_or_changed(reader, old, self.pins_ranges)
                self._old_or_changed(reader, old, self.pins_ranges)  # and again
            assert store["k"] == new

    def test_open_ranges_pinned_against_deletes(self, store: Store) -> None:
        self._needs(self.supports_deletes)
        old = bytes(range(200))
        store["k"] = old
        with store.open_ranges("k") as reader:
            del store["k"]
            self._old_or_changed(reader, old, self.pins_ranges)

    def test_open_ranges_pinned_against_the_bypass(self, store: Store) -> None:
        self._needs_raw()
        old = bytes(range(200))
        for new in (b"N" * 200, b"short"):
            self.raw_set(store, "k", old)
            # Foreign writers may rewrite in place; a rewrite within the same tick of
            # the file system's clock to the same size cannot be noticed (documented).
            time.sleep(0.05)
            with store.open_ranges("k") as reader:
                self.raw_set(store, "k", new)
                self._old_or_changed(reader, old, pinned=False)
