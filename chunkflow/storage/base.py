"""The :class:`Store` base class: bytes by key, plus batch and prefix operations.

The public methods validate keys (once), refuse writes to read-only stores and
coerce values to buffers; backends implement the ``_``-prefixed hooks, which
receive keys that are already normalized.  Backends translate their own
"not found" errors to ``KeyError`` in one place each.

Every write, delete and prefix delete made through the public methods is announced
to :mod:`chunkflow.storage.coherence` after it happens, so caches in this process
drop what it replaced. Values carry *versions* (:meth:`Store.versions`): opaque
tokens that change whenever the stored bytes change, which a cache compares to
prove a copy current without reading the bytes again.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, MutableMapping
from typing import ClassVar

from chunkflow.errors import ReadOnlyError
from chunkflow.storage.coherence import changed_prefix, changing
from chunkflow.storage.hooks import StoreHooks
from chunkflow.storage.keys import (
    Buffer,
    Version,
    as_buffer,
    check_range,
    normalize_key,
    normalize_prefix,
)
from chunkflow.storage.ranges import ByteRangeReader
from chunkflow.storage.retries import raise_request_error
from chunkflow.storage.streams import (
    BatchKeyStream,
    BatchPutStream,
    CheckedPuts,
    KeyStream,
    PutStream,
    StreamItem,
)

__all__ = ["Buffer", "Store", "Version"]


class Store(StoreHooks, MutableMapping[str, bytes]):
    """Abstract base of every chunkflow store: a mutable mapping of ``str`` to bytes.

    A backend implements :attr:`identity` and the hooks ``_get``, ``_set``,
    ``_delete`` and ``_list_prefix`` (abstract: a subclass missing one raises
    ``TypeError`` when instantiated); batch, prefix, size, version and byte-range
    hooks have defaults built on them (:class:`~chunkflow.storage.hooks.StoreHooks`).

    Keys are ``/``-separated relative paths (see
    :func:`~chunkflow.storage.normalize_key`).  Values may be given as any
    bytes-like object (``bytes``, ``bytearray``, ``memoryview``, numpy arrays)
    and are returned as ``bytes``.  Reading a missing key raises ``KeyError``;
    writing to a read-only store raises :class:`~chunkflow.errors.ReadOnlyError`
    and changes nothing.

    Stores compare equal (and hash) by :attr:`identity`, never by contents, so
    ``==`` does not read the data.

    Attributes
    ----------
    read_only : bool
        Writes raise ``ReadOnlyError`` when true.
    supports_deletes : bool
        False for backends that cannot delete (zip files).
    listing_is_cheap : bool
        True where listing the keys costs no request (memory, folders, zip files), so
        ``.info`` may count stored chunks and bytes as zarr-python 2's did.
    latency_bound : bool
        True where every request waits on a network round trip (object stores, HTTP):
        reads and writes then stream (:meth:`stream_many`, :meth:`put_stream`), with
        as many requests in flight as the settings ``chunkflow.io.inflight-requests``
        and ``chunkflow.io.inflight-bytes`` allow, and :func:`~chunkflow.to_dask`
        groups chunks into large blocks (see
        :func:`chunkflow.graph.read.block_multiples`).
    transactional : bool
        True where writes wait in a session until a commit makes them visible all at
        once (an Icechunk session, through :class:`ZarrStoreAdapter
        <chunkflow.storage.zarr_store.ZarrStoreAdapter>`). Atomicity then comes from
        the commit, and such stores may refuse keys the published metadata does not
        allow (Icechunk: chunks outside an array's shape), so ``resize`` and ``append``
        publish a larger shape before writing into it.
    reads_into : bool
        True where :meth:`get_into` reads a value into the caller's buffer (files).

    Examples
    --------
    >>> from chunkflow.storage import MemoryStore
    >>> store = MemoryStore()
    >>> store["a/b"] = b"xyz"
    >>> store.get_range("a/b", 1, None)
    b'yz'
    >>> sorted(store.list_prefix("a"))
    ['a/b']
    """

    #: Bytes of the chunk cache the arrays opened through this handle share, or ``None``
    #: for the process-wide cache (set by :func:`~chunkflow.storage.LRUStoreCache`;
    #: ``-1``: the process-wide budget). Not pickled: the cache stays in its process.
    chunk_cache_bytes: int | None = None

    read_only: bool = False
    supports_deletes: ClassVar[bool] = True
    listing_is_cheap: ClassVar[bool] = False
    latency_bound: bool = False
    transactional: bool = False
    reads_into: ClassVar[bool] = False
    _read_only_reason: str = ""

    # -------------------------------------------------------- mapping protocol

    def __getitem__(self, key: str) -> bytes:
        key = normalize_key(key)
        try:
            return self._get(key)
        except Exception as err:  # a failed request names its key (retries.py)
            raise_request_error(err, self, "read", [key])

    def __setitem__(self, key: str, value: Buffer) -> None:
        key = normalize_key(key)
        self._check_writable(key)
        data = as_buffer(value, key)
        with changing(self.identity, (key,)):
            try:
                self._set(key, data)
            except Exception as err:
                raise_request_error(err, self, "write", [key])

    def __delitem__(self, key: str) -> None:
        key = normalize_key(key)
        self._check_writable(key)
        with changing(self.identity, (key,)):
            self._delete(key)

    def __contains__(self, key: object) -> bool:
        return self._contains(normalize_key(key))  # type: ignore[arg-type]  # normalize_key refuses a non-str key

    def __iter__(self) -> Iterator[str]:
        return iter(self._list_prefix(""))

    def __len__(self) -> int:
        return sum(1 for _ in self._list_prefix(""))

    def __eq__(self, other: object) -> bool:
        # Mapping.__eq__ would read every value; stores are equal when they
        # name the same data.
        if not isinstance(other, Store):
            return NotImplemented
        return type(self) is type(other) and self.identity == other.identity

    def __hash__(self) -> int:
        return hash((type(self).__name__, self.identity))

    def __dask_tokenize__(self) -> tuple[str, str, bool]:
        # Deterministic dask tokens without hashing the contents.
        return (type(self).__name__, self.identity, self.read_only)

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------ batch and prefix

    def get_many(self, keys: Iterable[str]) -> dict[str, bytes]:
        """Read several keys at once; missing keys are left out of the result.

        Examples
        --------
        >>> from chunkflow.storage import MemoryStore
        >>> store = MemoryStore()
        >>> store.set_many({"a": b"1", "b": b"2"})
        >>> store.get_many(["a", "b", "missing"])
        {'a': b'1', 'b': b'2'}
        """
        checked = [normalize_key(k) for k in keys]
        try:
            return self._get_many(checked)
        except Exception as err:
            raise_request_error(err, self, "read", checked)

    def get_into(self, key: str,
                 buffer_for: Callable[[int], memoryview]) -> bytes | memoryview | None:
        """The value of ``key`` (``None`` if it is missing), read into the buffer
        ``buffer_for(size)`` returns where the backend can (see :attr:`reads_into`),
        else in the backend's own bytes.

        Reading a large value into a reused buffer spares a fresh allocation (and its
        page faults, about as costly as the read itself for chunks of tens of MiB);
        reading it into its final place spares a copy too.

        Examples
        --------
        >>> from chunkflow.storage import MemoryStore
        >>> store = MemoryStore()
        >>> store["k"] = b"abc"
        >>> bytes(store.get_into("k", lambda size: memoryview(bytearray(size)))), store.get_into("x", len)
        (b'abc', None)
        """
        key = normalize_key(key)
        try:
            return self._get_into(key, buffer_for)
        except KeyError:
            return None
        except Exception as err:
            raise_request_error(err, self, "read", [key])

    def stream_many(self, keys: Iterable[str], *, window: int, lanes: int = 1,
                    versioned: bool = False) -> KeyStream:
        """The values of ``keys`` as they arrive, for ``lanes`` threads to consume at
        once, with at most ``window`` values fetched or in flight (see
        :mod:`chunkflow.storage.streams`).

        Items are ``(key, value, version)``: ``value`` is ``None`` for a missing key;
        ``version`` is ``None`` unless ``versioned`` (as :meth:`get_many_versioned`
        gives it). Here each lane fetches ``window // lanes`` keys per batch call;
        stores with asynchronous requests keep ``window`` requests in flight instead,
        handing each value out as it arrives.

        Examples
        --------
        >>> from chunkflow.storage import MemoryStore
        >>> store = MemoryStore()
        >>> store.set_many({"a": b"1", "b": b"2"})
        >>> with store.stream_many(["a", "b", "missing"], window=2) as stream:
        ...     sorted((key, value) for key, value, _ in stream.take())
        [('a', b'1'), ('b', b'2'), ('missing', None)]
        """
        def fetch(batch: list[str]) -> list[StreamItem]:
            if versioned:
                return [(k, v, version) for k, (v, version) in self.get_many_versioned(batch).items()]
            return [(k, v, None) for k, v in self.get_many(batch).items()]

        return BatchKeyStream(fetch, [normalize_key(k) for k in keys], window // max(1, lanes))

    def put_stream(self, *, window: int, lanes: int = 1) -> PutStream:
        """A sink for values written one at a time while the caller makes the next,
        with at most ``window`` values in flight from ``lanes`` writing threads (see
        :mod:`chunkflow.storage.streams`). Keys and values are checked as they are
        put; leaving the ``with`` block waits for every write, tells the caches of
        this process, and raises the first failed write's error.

        Here each lane's values go in batches of ``window // lanes``, one
        :meth:`set_many_versioned` call each; stores with asynchronous requests send
        each value at once instead.

        Examples
        --------
        >>> from chunkflow.storage import MemoryStore
        >>> store = MemoryStore()
        >>> with store.put_stream(window=2) as sink:
        ...     for key in ("a", "b", "c"):
        ...         sink.put(key, key.encode())
        >>> store.get_many(["a", "b", "c"])
        {'a': b'a', 'b': b'b', 'c': b'c'}
        """
        def write(items: dict[str, bytes | memoryview]) -> dict[str, Version | None]:
            try:
                return self._set_many_versioned(items)
            except Exception as err:
                raise_request_error(err, self, "write", list(items))

        return CheckedPuts(self._checked_put, BatchPutStream(
            write, window // max(1, lanes), self._announce_written))

    def _announce_written(self, keys: list[str]) -> None:
        with changing(self.identity, keys):
            pass  # written already: only the announcement is left

    def set_many(self, items: Mapping[str, Buffer]) -> None:
        """Write several keys; every key and value is checked before any write."""
        self.set_many_versioned(items)

    def set_many_versioned(self, items: Mapping[str, Buffer]) -> dict[str, Version | None]:
        """Write several keys; return the version each now has (``None``: unknown).

        A returned version names the bytes this call wrote, never a later write's.

        Examples
        --------
        >>> from chunkflow.storage import MemoryStore
        >>> store = MemoryStore()
        >>> written = store.set_many_versioned({"a": b"1"})
        >>> written == store.versions(["a"])
        True
        """
        checked = self._checked_items(items)
        if not checked:
            return {}
        self._check_writable(next(iter(checked)))
        with changing(self.identity, list(checked)):
            try:
                return self._set_many_versioned(checked)
            except Exception as err:
                raise_request_error(err, self, "write", list(checked))

    def _checked_items(self, items: Mapping[str, Buffer]) -> dict[str, bytes | memoryview]:
        checked = {}
        for key, value in items.items():
            key = normalize_key(key)
            checked[key] = as_buffer(value, key)
        return checked

    def _checked_put(self, key: str, value: Buffer) -> tuple[str, bytes | memoryview]:
        """One value of a :meth:`put_stream`, checked as :meth:`set_many` checks its
        items: the key normalized, the value a buffer, the store writable."""
        key = normalize_key(key)
        checked = as_buffer(value, key)
        self._check_writable(key)
        return key, checked

    def delete_many(self, keys: Iterable[str]) -> None:
        """Delete several keys; missing keys are ignored."""
        checked = [normalize_key(k) for k in keys]
        if checked:
            self._check_writable(checked[0])
            with changing(self.identity, checked):
                self._delete_many(checked)

    def versions(self, keys: Iterable[str]) -> dict[str, Version | None]:
        """The current version of each key (``None`` when the backend cannot tell).

        Keys known to be missing are left out. Two equal versions other than ``None``
        mean equal bytes.

        Examples
        --------
        >>> from chunkflow.storage import MemoryStore
        >>> store = MemoryStore()
        >>> store["a"] = b"1"
        >>> before = store.versions(["a", "missing"])
        >>> list(before)
        ['a']
        >>> store["a"] = b"2"
        >>> store.versions(["a"]) == before
        False
        """
        return self._versions([normalize_key(k) for k in keys])

    def get_many_versioned(self, keys: Iterable[str]) -> dict[str, tuple[bytes, Version | None]]:
        """Like :meth:`get_many`, with each value's version: ``{key: (bytes, version)}``.

        A version is never newer than the bytes it comes with (it may be older, or
        ``None``).
        """
        checked = [normalize_key(k) for k in keys]
        try:
            return self._get_many_versioned(checked)
        except Exception as err:
            raise_request_error(err, self, "read", checked)

    def get_range(self, key: str, start: int, length: int | None = None) -> bytes:
        """Read ``value[start:][:length]``; negative `start` counts from the end.

        Examples
        --------
        >>> from chunkflow.storage import MemoryStore
        >>> store = MemoryStore()
        >>> store["k"] = b"0123456789"
        >>> store.get_range("k", 2, 3), store.get_range("k", -2, None)
        (b'234', b'89')
        """
        key = normalize_key(key)
        check_range(key, start, length)
        return self._get_range(key, start, length)

    def open_ranges(self, key: str, *, expect: Version | None = None) -> ByteRangeReader:
        """A reader of byte ranges of the value at `key`, pinned as it is now.

        Every :meth:`~chunkflow.storage.ByteRangeReader.read` returns bytes of this
        one value, even if the key is overwritten meanwhile, or raises
        :class:`~chunkflow.errors.StoreValueChangedError` on backends that cannot
        keep the old value (retry with a new reader); never a mix of two values.
        Local files are read with ``os.pread`` on the descriptor opened here, fsspec
        file systems with one ``cat_ranges`` call per read; backends without ranged
        reads fetch the value once. Close the reader (or use it as a context
        manager) to release what it holds.

        ``expect``, a version of the value seen before (its :attr:`version
        <chunkflow.storage.ByteRangeReader.version>`), lets a backend that proves its
        reads afterwards (object stores) skip the request that opens the reader: it
        reads as if the value still were that version and raises
        :class:`~chunkflow.errors.StoreValueChangedError` from the read if it is not
        (then open again without ``expect``). Other backends open as usual.

        Raises
        ------
        KeyError
            No value at `key`.

        Examples
        --------
        >>> from chunkflow.storage import MemoryStore
        >>> store = MemoryStore()
        >>> store["shard"] = bytes(range(100))
        >>> with store.open_ranges("shard") as reader:
        ...     reader.read([(98, 100), (0, 3)])
        [b'bc', b'\\x00\\x01\\x02']
        >>> reader.version == store.versions(["shard"])["shard"]
        True
        """
        key = normalize_key(key)
        if expect is not None:
            return self._open_ranges_expecting(key, expect)
        return self._open_ranges(key)

    def list_prefix(self, prefix: str) -> Iterator[str]:
        """Iterate over the full keys below the folder-like `prefix` (``""``: all).

        ``"a/b"`` lists ``"a/b/..."``, neither ``"a/b"`` itself nor ``"a/bc"``.
        The order is unspecified.
        """
        prefix = normalize_prefix(prefix)
        try:
            return iter(self._list_prefix(prefix))
        except Exception as err:  # object stores list at once; folders as they go
            raise_request_error(err, self, "list", [prefix], below=True)

    def list_dir(self, prefix: str) -> tuple[list[str], list[str]]:
        """Names directly below `prefix`: ``(keys, sub_prefixes)``, each sorted.

        The names are relative to `prefix` (as ``os.listdir``).

        Examples
        --------
        >>> from chunkflow.storage import MemoryStore
        >>> store = MemoryStore()
        >>> store.set_many({"g/.zgroup": b"{}", "g/x/.zarray": b"{}", "g/x/0": b""})
        >>> store.list_dir("g")
        (['.zgroup'], ['x'])
        """
        return self._list_dir(normalize_prefix(prefix))

    def delete_prefix(self, prefix: str) -> None:
        """Delete every key below `prefix` (``""`` empties the store)."""
        prefix = normalize_prefix(prefix)
        self._check_writable(prefix)
        try:
            self._delete_prefix(prefix)
        except Exception as err:
            raise_request_error(err, self, "delete", [prefix], below=True)
        finally:
            changed_prefix(self.identity, prefix)

    def getsize(self, key: str) -> int:
        """Size in bytes of the value at `key` (``KeyError`` if missing)."""
        return self._getsize(normalize_key(key))

    def getsize_prefix(self, prefix: str) -> int:
        """Total size in bytes of the values below `prefix`."""
        return self._getsize_prefix(normalize_prefix(prefix))

    def clear(self) -> None:
        """Delete every key (one :meth:`delete_prefix` call, not a pop per key)."""
        self.delete_prefix("")

    def close(self) -> None:
        """Release resources (files, handles). The default does nothing."""

    # ---------------------------------------------------------------- helpers

    def _check_writable(self, key: str) -> None:
        if self.read_only:
            reason = f" ({self._read_only_reason})" if self._read_only_reason else ""
            raise ReadOnlyError(
                f"cannot write key {key!r}: {self!r} is read-only{reason}; "
                f"open it with mode 'a' or read_only=False to write"
            )
