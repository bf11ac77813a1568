"""An in-memory store backed by a ``dict``."""

from __future__ import annotations

import itertools
import threading
import uuid
from collections.abc import Iterator

from chunkflow.storage.base import Store, Version
from chunkflow.storage.process_local import reference
from chunkflow.storage.ranges import ByteRangeReader, BytesRangeReader

# One counter for every in-memory store of the process: a value's version is the
# number of the write that stored it, so equal versions mean the very same write.
_writes = itertools.count(1)

__all__ = ["MemoryStore"]


class MemoryStore(Store):
    """Keys and values in a ``dict`` of this process.

    Values are copied to immutable ``bytes`` on write, so later changes to a
    caller's ``bytearray`` or numpy array do not leak into the store.  Single-key
    reads and writes are atomic under the GIL; multi-key operations take a lock,
    so threads may share one store.

    The data lives in this process, so a pickle carries a reference, not the
    contents (see :mod:`chunkflow.storage.process_local`): unpickled in this process it
    is the same store; in another process every use raises
    :class:`~chunkflow.errors.ProcessLocalStoreError` instead of silently reading or
    writing a copy. ``copy.copy`` and ``copy.deepcopy`` make an independent copy with
    its own :attr:`identity`.

    A value's version is the number of the write that stored it.

    Parameters
    ----------
    name : str, optional
        A label shown in ``repr`` and in the identity; it does not make two
        stores share data.
    read_only : bool
        Refuse writes.

    Examples
    --------
    >>> import pickle
    >>> store = MemoryStore()
    >>> store["a"] = bytearray(b"12")
    >>> store["a"]
    b'12'
    >>> pickle.loads(pickle.dumps(store)) is store
    True
    >>> import copy
    >>> clone = copy.deepcopy(store)
    >>> dict(clone), clone.identity == store.identity
    ({'a': b'12'}, False)
    """

    listing_is_cheap = True

    def __init__(self, name: str | None = None, *, read_only: bool = False) -> None:
        self.name = name
        self.read_only = read_only
        # key -> (bytes, version): one dict entry, so a reader always gets a value
        # together with its own version.
        self._data: dict[str, tuple[bytes, int]] = {}
        self._lock = threading.Lock()
        label = f"{name}:" if name else ""
        self._identity = f"memory:{label}{uuid.uuid4().hex}"

    @property
    def identity(self) -> str:
        return self._identity

    def __repr__(self) -> str:
        return f"MemoryStore(name={self.name!r}, read_only={self.read_only})"

    def __reduce__(self) -> tuple[object, ...]:
        return reference(self, repr(self))

    def __copy__(self) -> MemoryStore:
        data: dict[str, bytes | memoryview] = {key: value for key, (value, _) in self._data.items()}
        return _restore(self.name, data, self.read_only)

    def __deepcopy__(self, memo: dict[int, object]) -> MemoryStore:
        return self.__copy__()

    def _get(self, key: str) -> bytes:
        return self._data[key][0]  # the one place a missing key raises KeyError

    def _set(self, key: str, value: bytes | memoryview) -> None:
        self._data[key] = (bytes(value), next(_writes))

    def _versions(self, keys: list[str]) -> dict[str, Version | None]:
        return {key: entry[1] for key, entry in self._get_many_versioned(keys).items()}

    def _get_many_versioned(self, keys: list[str]) -> dict[str, tuple[bytes, Version | None]]:
        # dict.get, not `in` then `[]`: a delete in between would raise KeyError.
        found: dict[str, tuple[bytes, Version | None]] = {}
        for key in keys:
            entry = self._data.get(key)
            if entry is not None:
                found[key] = entry
        return found

    def _open_ranges(self, key: str) -> ByteRangeReader:
        # Values are immutable bytes replaced whole on write: holding the entry's
        # bytes pins the value without a copy, and its version comes with it.
        data, version = self._data[key]
        return BytesRangeReader(key, data, version)

    def _set_many_versioned(self, items: dict[str, bytes | memoryview]) -> dict[str, Version | None]:
        copied = {key: (bytes(value), next(_writes)) for key, value in items.items()}
        with self._lock:
            self._data.update(copied)
        return {key: version for key, (_, version) in copied.items()}

    def _delete(self, key: str) -> None:
        with self._lock:
            del self._data[key]

    def _contains(self, key: str) -> bool:
        return key in self._data

    def _snapshot(self) -> list[str]:
        with self._lock:
            return list(self._data)

    def _list_prefix(self, prefix: str) -> Iterator[str]:
        if not prefix:
            return iter(self._snapshot())
        start = prefix + "/"
        return (k for k in self._snapshot() if k.startswith(start))

    def _set_many(self, items: dict[str, bytes | memoryview]) -> None:
        self._set_many_versioned(items)

    def _delete_many(self, keys: list[str]) -> None:
        with self._lock:
            for key in keys:
                self._data.pop(key, None)

    def _delete_prefix(self, prefix: str) -> None:
        start = prefix + "/" if prefix else ""
        with self._lock:
            # list() copies the keys in one C call, so an unlocked concurrent
            # __setitem__ cannot change the dict while we filter it.
            for key in [k for k in list(self._data) if k.startswith(start)]:
                self._data.pop(key, None)

    def __len__(self) -> int:
        return len(self._data)


def _restore(name: str | None, data: dict[str, bytes | memoryview], read_only: bool) -> MemoryStore:
    store = MemoryStore(name, read_only=read_only)
    store._set_many(data)
    return store
