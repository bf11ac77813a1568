"""A store over any ``MutableMapping``: a dict, ``zict.Zip``, an fsspec ``FSMap``."""

from __future__ import annotations

import collections
import functools
import os
import threading
import uuid
import weakref
from collections.abc import Callable, Iterator, Mapping, MutableMapping
from typing import Any

from chunkflow.errors import ArgumentTypeError, KeyNotFoundError
from chunkflow.storage.base import Store
from chunkflow.storage.fsspec_ranges import is_missing_error, open_fsspec_ranges
from chunkflow.storage.fsspec_store import GLOB
from chunkflow.storage.keys import slice_bounds
from chunkflow.storage.process_local import reference
from chunkflow.storage.ranges import ByteRangeReader

__all__ = ["MappingStore", "object_token"]

# id(mapping) -> (weak reference, token): one identity per live mapping object,
# dropped when the mapping dies so a new object reusing its id() gets a new one.
_TOKENS: dict[int, tuple[weakref.ref[Any], str]] = {}
# For mappings that cannot be tracked weakly (a plain dict): id(mapping) -> (token,
# number of live stores wrapping it). Each such store holds the mapping, so while one
# lives the id() names this very mapping; stores wrapping the same dict share one
# identity (a write through one drops what another cached), and once the last one is
# gone a new dict reusing the id() gets a new token.
_WRAPPED: dict[int, tuple[str, int]] = {}
_TOKENS_LOCK = threading.Lock()
# Releases from finalizers and weakref callbacks, applied under the lock by the next
# caller: they may run inside the garbage collector while this very thread holds the
# lock (an allocation below collects a dead store), so they must never take it.
_PENDING: collections.deque[Callable[[], None]] = collections.deque()


def _apply_pending() -> None:
    """Apply the queued releases (under ``_TOKENS_LOCK``)."""
    while _PENDING:
        _PENDING.popleft()()


def object_token(mapping: object, owner: object) -> str:
    """A token naming ``mapping`` (an object that cannot be weakly referenced, such as a
    dict) for as long as any ``owner`` holding it lives: stores wrapping the same dict
    share one identity, so a write through one drops what another cached."""
    with _TOKENS_LOCK:
        _apply_pending()  # first: a dead mapping's id() may be this one's now
        entry = _TOKENS.get(id(mapping))
        if entry is not None and entry[0]() is mapping:
            return entry[1]
        try:
            ref = weakref.ref(mapping, _forget(id(mapping)))
        except TypeError:
            return _shared_token(mapping, owner)
        token = uuid.uuid4().hex
        _TOKENS[id(mapping)] = (ref, token)
        return token


def _shared_token(mapping: object, owner: object) -> str:
    """The token of a mapping that cannot be tracked weakly, held while ``owner`` lives
    (called under ``_TOKENS_LOCK``)."""
    ident = id(mapping)
    token, count = _WRAPPED.get(ident, (uuid.uuid4().hex, 0))
    _WRAPPED[ident] = (token, count + 1)
    weakref.finalize(owner, _PENDING.append, functools.partial(_release, ident))
    return token


def _release(ident: int) -> None:
    token, count = _WRAPPED[ident]
    if count > 1:
        _WRAPPED[ident] = (token, count - 1)
    else:
        del _WRAPPED[ident]


def _forget(ident: int) -> Any:
    def forget(ref: weakref.ref[Any]) -> None:
        entry = _TOKENS.get(ident)
        if entry is not None and entry[0] is ref:
            del _TOKENS[ident]

    return lambda ref: _PENDING.append(functools.partial(forget, ref))


class MappingStore(Store):
    """Wrap a ``MutableMapping`` of ``str`` to bytes as a store.

    Values are copied to ``bytes`` on write.  A mapping with ``getitems`` /
    ``setitems`` (fsspec's ``FSMap``) gets batched :meth:`get_many` /
    :meth:`set_many`, and ranged :meth:`open_ranges` readers over its file system;
    listing iterates over all keys of the mapping.  A mapping
    that is not mutable is wrapped read-only.  Calls into the mapping are serialized
    with a lock, because most mappings (``zict.Zip`` among them) are not thread-safe
    and chunkflow reads and writes chunks from a thread pool.

    The identity follows the data where it can: an ``FSMap`` and a ``zict.Zip``
    are named by their location; other mappings by the object (a plain ``dict``,
    which cannot be tracked weakly, for as long as a store wraps it).

    Parameters
    ----------
    mapping : MutableMapping
        The mapping to wrap.
    read_only : bool
        Refuse writes.

    Examples
    --------
    >>> backing = {}
    >>> store = MappingStore(backing)
    >>> store["a/b"] = memoryview(b"xy")
    >>> backing, list(store.list_prefix("a"))
    ({'a/b': b'xy'}, ['a/b'])
    """

    def __init__(self, mapping: Mapping[str, Any], read_only: bool = False) -> None:
        if not isinstance(mapping, Mapping):
            raise ArgumentTypeError(
                f"MappingStore needs a collections.abc.Mapping, got {type(mapping).__name__}"
            )
        self.mapping = mapping
        self.read_only = read_only or not isinstance(mapping, MutableMapping)
        if not isinstance(mapping, MutableMapping):
            self._read_only_reason = "the wrapped mapping is not mutable"
        self._identity = _identity_of(mapping, self)
        self._lock = threading.RLock()

    @property
    def identity(self) -> str:
        return self._identity

    def __repr__(self) -> str:
        return f"MappingStore({type(self.mapping).__name__}, read_only={self.read_only})"

    def __reduce__(self) -> tuple[object, ...]:
        if _in_process_memory(self.mapping, self._identity):
            # A copy in another process would take writes nobody sees again.
            return reference(self, repr(self))
        return (MappingStore, (self.mapping, self.read_only))

    @property
    def _mutable(self) -> MutableMapping[str, Any]:
        return self.mapping  # type: ignore[return-value]  # writes check _writable first

    def _get(self, key: str) -> bytes:
        try:
            with self._lock:
                value = self.mapping[key]
        except KeyError:
            # The one place for missing keys; some mappings (zict.Zip) put a
            # message rather than the key in their KeyError.
            raise KeyNotFoundError(key) from None
        return _as_bytes(value)

    def _set(self, key: str, value: bytes | memoryview) -> None:
        data = bytes(value)
        with self._lock:
            self._mutable[key] = data

    def _delete(self, key: str) -> None:
        with self._lock:
            del self._mutable[key]

    def _contains(self, key: str) -> bool:
        with self._lock:
            return key in self.mapping

    def _list_prefix(self, prefix: str) -> Iterator[str]:
        with self._lock:
            keys = list(self.mapping)
        if not prefix:
            return iter(keys)
        start = prefix + "/"
        return (k for k in keys if k.startswith(start))

    def _get_many(self, keys: list[str]) -> dict[str, bytes]:
        getitems = getattr(self.mapping, "getitems", None)
        if getitems is None:
            return super()._get_many(keys)
        # FSMap expands glob characters and fails on an empty list: those keys
        # go one by one.
        batch = [k for k in keys if not GLOB.search(k)]
        out = super()._get_many([k for k in keys if GLOB.search(k)])
        if not batch:
            return out
        # "return" keeps errors visible: only KeyError (missing) is dropped.
        with self._lock:
            fetched = getitems(batch, on_error="return")
        for key, value in fetched.items():
            if isinstance(value, KeyError):
                continue
            if isinstance(value, BaseException):
                raise value
            out[key] = _as_bytes(value)
        return out

    def _get_range(self, key: str, start: int, length: int | None) -> bytes:
        # One read of the value, as mappings have always been read: a checked range
        # reader over an FSMap would add two fs.info requests to a single range.
        data = self._get(key)
        begin, end = slice_bounds(len(data), start, length)
        return data[begin:end]

    def _open_ranges(self, key: str) -> ByteRangeReader:
        fs, to_path = getattr(self.mapping, "fs", None), getattr(self.mapping, "_key_to_str", None)
        if fs is None or to_path is None:  # not an FSMap: the whole value, fetched once
            return super()._open_ranges(key)
        try:
            reader = open_fsspec_ranges(fs, to_path(key), key)
        except Exception as err:
            if is_missing_error(err):  # as FSMap itself turns these into KeyError
                raise KeyNotFoundError(key) from None
            raise
        return reader if reader is not None else super()._open_ranges(key)

    def _set_many(self, items: dict[str, bytes | memoryview]) -> None:
        setitems = getattr(self.mapping, "setitems", None)
        if setitems is None:
            super()._set_many(items)
        else:
            data = {k: bytes(v) for k, v in items.items()}
            with self._lock:
                setitems(data)

    def __len__(self) -> int:
        with self._lock:
            return len(self.mapping)


def _as_bytes(value: Any) -> bytes:
    if type(value) is bytes:
        return value
    # A dict that zarr-python 3 wrote into holds its Buffers (not bytes-like).
    to_bytes = getattr(value, "to_bytes", None)
    return to_bytes() if callable(to_bytes) and not isinstance(value, int) else bytes(value)


def _in_process_memory(mapping: Mapping[str, Any], identity: str) -> bool:
    """Whether the mapping's data lives in this process's memory (a dict, ``memory://``)."""
    if identity.startswith("memory:"):
        return True
    file_backed = type(mapping).__name__ == "File" and hasattr(mapping, "directory")  # zict.File
    return identity.startswith("mapping:") and not file_backed


def _identity_of(mapping: Mapping[str, Any], owner: object) -> str:
    fs, root = getattr(mapping, "fs", None), getattr(mapping, "root", None)
    if fs is not None and isinstance(root, str):  # fsspec FSMap
        protocol = fs.protocol if isinstance(fs.protocol, str) else fs.protocol[0]
        if protocol in ("file", "local"):
            return "file://" + os.path.realpath(root)
        return fs.unstrip_protocol(root.rstrip("/"))
    filename = getattr(mapping, "filename", None)
    if type(mapping).__name__ == "Zip" and isinstance(filename, str):  # zict.Zip
        return "zip:" + os.path.realpath(filename)
    return f"mapping:{type(mapping).__name__}:{object_token(mapping, owner)}"
