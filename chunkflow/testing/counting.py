"""Stores that count, shared by the tests: a dict that counts writes per key (graph
tests), and a store wrapper that counts the bytes and requests of every read path
(byte-range tests: "a read of 10 pixels of a shard reads kilobytes")."""

from __future__ import annotations

import threading
import uuid
import weakref
from collections import Counter
from collections.abc import Iterator
from typing import Any

from chunkflow.jobs import RECORDS_FOLDER, WRITTEN_KEY
from chunkflow.storage import ByteRangeReader, MemoryStore, Store
from chunkflow.storage.base import Version
from chunkflow.storage.ranges import BytesRangeReader


class CountingMapping(dict):
    """A dict store that counts how often each key is written (thread-safe)."""

    def __init__(self) -> None:
        super().__init__()
        self.writes: Counter[str] = Counter()
        self._lock = threading.Lock()

    def __setitem__(self, key: str, value: bytes) -> None:
        with self._lock:
            self.writes[key] += 1
        super().__setitem__(key, value)

    def chunk_writes(self) -> Counter[str]:
        """Writes of chunks, leaving out metadata documents and job records (and the
        list of what a finished job stored)."""
        return Counter({k: n for k, n in self.writes.items()
                        if not k.endswith("zarr.json") and not _is_record(k)})


def _is_record(key: str) -> bool:
    # The records of a job, and the list of what a finished job stored (jobs.written).
    return (key.startswith(f"{RECORDS_FOLDER}/") or f"/{RECORDS_FOLDER}/" in key
            or key.rpartition("/")[2] == WRITTEN_KEY)


class Counts:
    """What a :class:`CountingStore` has read: bytes, requests, per operation and key.

    ``requests`` counts calls that fetch values (one per ``get``, per batched
    ``get_many``, per ``get_range``, per :meth:`ByteRangeReader.read` call);
    ``calls`` counts every forwarded operation by name, including opens, listings
    and writes. ``bytes_read`` and ``bytes_by_key`` sum the value bytes returned.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.reset()

    def reset(self) -> None:
        with self._lock:
            self.bytes_read = 0
            self.requests = 0
            self.calls: Counter[str] = Counter()
            self.bytes_by_key: Counter[str] = Counter()

    def call(self, op: str) -> None:
        with self._lock:
            self.calls[op] += 1

    def read(self, op: str, returned: dict[str, bytes]) -> None:
        self.fetched(op, {key: len(data) for key, data in returned.items()})

    def fetched(self, op: str, nbytes: dict[str, int]) -> None:
        """Count one request of ``op`` that fetched ``nbytes[key]`` bytes per key."""
        with self._lock:
            self.calls[op] += 1
            self.requests += 1
            for key, n in nbytes.items():
                self.bytes_read += n
                self.bytes_by_key[key] += n

    def __repr__(self) -> str:
        return (f"Counts(bytes_read={self.bytes_read}, requests={self.requests}, "
                f"calls={dict(self.calls)})")


# token -> Counts: a CountingStore unpickled in this process counts into the same
# object as the one pickled (dask may pickle stores even on threads).
_COUNTS: weakref.WeakValueDictionary[str, Counts] = weakref.WeakValueDictionary()


class CountingRangeReader(ByteRangeReader):
    """A byte-range reader that counts what the reader it wraps returns."""

    def __init__(self, inner: ByteRangeReader, counts: Counts) -> None:
        self.inner = inner
        self.key, self.size, self.version = inner.key, inner.size, inner.version
        self.counts = counts

    def _read(self, ranges: list[tuple[int, int]]) -> list[bytes]:
        out = self.inner.read(ranges)
        self.counts.fetched("read_ranges", {self.key: sum(map(len, out))})
        return out

    def _close(self) -> None:
        self.inner.close()


class CountingStore(Store):
    """A store that forwards everything to ``inner`` and counts the bytes it reads.

    Works over any store (a :class:`MemoryStore`, a :class:`LocalStore` folder...);
    it keeps ``inner``'s identity, since it names the same data. Byte-range readers
    stay ranged (they are ``inner``'s, wrapped) and count the bytes they fetch (a
    repeated range once); where ``inner`` reads the whole value to open a reader (no
    ranged reads, a compressed zip member), that whole value is counted at open.
    Counts are in :attr:`counts`; a pickle unpickled in this process shares them.

    Examples
    --------
    >>> from chunkflow.storage import MemoryStore
    >>> store = CountingStore(MemoryStore())
    >>> store["shard"] = bytes(1000)
    >>> with store.open_ranges("shard") as reader:
    ...     _ = reader.read([(0, 10), (990, 1000)])
    >>> store.counts.bytes_read, store.counts.requests
    (20, 1)
    """

    def __init__(self, inner: Store, counts: Counts | None = None) -> None:
        self.inner = inner
        self.counts = counts if counts is not None else Counts()
        self._token = uuid.uuid4().hex
        _COUNTS[self._token] = self.counts

    def __repr__(self) -> str:
        return f"CountingStore({self.inner!r})"

    def __reduce__(self) -> tuple[object, ...]:
        return (_restore_counting, (self.inner, self._token))

    @property
    def identity(self) -> str:
        return self.inner.identity

    @property
    def read_only(self) -> bool:
        return self.inner.read_only

    @read_only.setter
    def read_only(self, value: bool) -> None:
        self.inner.read_only = value

    @property
    def supports_deletes(self) -> bool:  # type: ignore[override]  # the inner store's, read-only
        return self.inner.supports_deletes

    @property
    def latency_bound(self) -> bool:  # type: ignore[override]  # the inner store's, read-only
        return self.inner.latency_bound

    def close(self) -> None:
        self.inner.close()

    # Reads: counted.

    def _get(self, key: str) -> bytes:
        data = self.inner._get(key)
        self.counts.read("get", {key: data})
        return data

    def _get_many(self, keys: list[str]) -> dict[str, bytes]:
        found = self.inner._get_many(keys)
        self.counts.read("get_many", found)
        return found

    def _get_many_versioned(self, keys: list[str]) -> dict[str, tuple[bytes, Version | None]]:
        found = self.inner._get_many_versioned(keys)
        self.counts.read("get_many_versioned", {k: data for k, (data, _) in found.items()})
        return found

    def _get_range(self, key: str, start: int, length: int | None) -> bytes:
        data = self.inner._get_range(key, start, length)
        self.counts.read("get_range", {key: data})
        return data

    def _open_ranges(self, key: str) -> ByteRangeReader:
        self.counts.call("open_ranges")
        reader = self.inner._open_ranges(key)
        if isinstance(reader, BytesRangeReader) and not isinstance(self.inner, MemoryStore):
            # The inner store fetched the whole value to open this reader (it has no
            # ranged reads): count that fetch; its reads then cost no I/O.
            self.counts.fetched("open_ranges_whole", {key: reader.size})
            return reader
        return CountingRangeReader(reader, self.counts)

    # Everything else: forwarded, counted by name only.

    def _forward(self, op: str, *args: Any) -> Any:
        self.counts.call(op)
        return getattr(self.inner, op)(*args)

    def _set(self, key: str, value: bytes | memoryview) -> None:
        self._forward("_set", key, value)

    def _set_many(self, items: dict[str, bytes | memoryview]) -> None:
        self._forward("_set_many", items)

    def _set_many_versioned(self, items: dict[str, bytes | memoryview]) -> dict[str, Version | None]:
        return self._forward("_set_many_versioned", items)

    def _delete(self, key: str) -> None:
        self._forward("_delete", key)

    def _delete_many(self, keys: list[str]) -> None:
        self._forward("_delete_many", keys)

    def _delete_prefix(self, prefix: str) -> None:
        self._forward("_delete_prefix", prefix)

    def _contains(self, key: str) -> bool:
        return self._forward("_contains", key)

    def _list_prefix(self, prefix: str) -> Iterator[str]:
        return self._forward("_list_prefix", prefix)

    def _list_dir(self, prefix: str) -> tuple[list[str], list[str]]:
        return self._forward("_list_dir", prefix)

    def _getsize(self, key: str) -> int:
        return self._forward("_getsize", key)

    def _getsize_prefix(self, prefix: str) -> int:
        return self._forward("_getsize_prefix", prefix)

    def _versions(self, keys: list[str]) -> dict[str, Version | None]:
        return self._forward("_versions", keys)

    def __len__(self) -> int:
        self.counts.call("len")
        return len(self.inner)


def _restore_counting(inner: Store, token: str) -> CountingStore:
    counts = _COUNTS.get(token)  # None in another process: counting starts afresh
    store = CountingStore(inner, counts)
    store._token = token
    _COUNTS[token] = store.counts
    return store
