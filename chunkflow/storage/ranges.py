"""Byte ranges of one stored value, pinned when the reader is opened.

A sharded array keeps many inner chunks in one stored value (a shard) and an index
of ``(offset, nbytes)`` pairs; reading part of a shard reads the index, then the
inner chunks it names. Both reads must see the *same* value: an index from one shard
and chunk bytes from its replacement would decode as garbage, or worse, as wrong
numbers. :meth:`Store.open_ranges <chunkflow.storage.Store.open_ranges>` therefore
returns a :class:`ByteRangeReader` bound to the value as it was when opened.

Backends that can hold on to that value do (a local file's open descriptor, an
in-memory ``bytes`` object, a zip member, which an overwrite never touches). Backends
that cannot (object stores, other fsspec file systems) compare the value's version
after each read with the one seen at open, and raise
:class:`~chunkflow.errors.StoreValueChangedError` if it changed, so the caller opens a
new reader and tries again. No reader returns bytes of two values. Backends with no
ranged reads at all fetch the whole value at open, which pins it too.

Examples
--------
>>> from chunkflow.storage import MemoryStore
>>> store = MemoryStore()
>>> store["shard"] = b"0123456789"
>>> with store.open_ranges("shard") as reader:
...     store["shard"] = b"replaced"  # the reader still reads the value it opened
...     reader.size, reader.read([(8, 10), (0, 2), (4, 4)])
(10, [b'89', b'01', b''])
"""

from __future__ import annotations

import abc
import contextlib
import operator
import os
import threading
import weakref
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING

from chunkflow.errors import InvalidArgumentError, StoreClosedError, StoreValueChangedError

if TYPE_CHECKING:
    from chunkflow.storage.keys import Version

__all__ = ["ByteRangeReader", "BytesRangeReader", "FileRangeReader", "check_ranges"]

# Guards the open/closed bookkeeping of every reader (a few integer updates per read).
_state_lock = threading.Lock()


def check_ranges(key: str, ranges: Sequence[tuple[int, int]], size: int) -> list[tuple[int, int]]:
    """Validate absolute ``(start, stop)`` ranges against a value of ``size`` bytes.

    Raises
    ------
    ValueError
        A range is not a pair of ints with ``0 <= start <= stop <= size``; the message
        names the key, the range and the size.

    Examples
    --------
    >>> check_ranges("c/0", [(0, 4), (2, 2)], 10)
    [(0, 4), (2, 2)]
    >>> check_ranges("c/0", [(8, 12)], 10)  # doctest: +NORMALIZE_WHITESPACE
    Traceback (most recent call last):
    ...
    chunkflow.errors.InvalidArgumentError: byte range (8, 12) of key 'c/0' is out of bounds: expected 0 <=
    start <= stop <= 10 (the size
    of the value)
    """
    checked = []
    for item in ranges:
        try:
            start, stop = item
            start, stop = operator.index(start), operator.index(stop)
        except (TypeError, ValueError):
            raise InvalidArgumentError(
                f"byte range {item!r} of key {key!r} is not a (start, stop) pair of ints"
            ) from None
        if not 0 <= start <= stop <= size:
            raise InvalidArgumentError(
                f"byte range ({start}, {stop}) of key {key!r} is out of bounds: expected "
                f"0 <= start <= stop <= {size} (the size of the value)"
            )
        checked.append((start, stop))
    return checked


class ByteRangeReader(abc.ABC):
    """Byte ranges of ONE stored value, as it was when the reader was opened.

    Made by :meth:`Store.open_ranges <chunkflow.storage.Store.open_ranges>`. Every
    :meth:`read` returns bytes of that one value, or raises
    :class:`~chunkflow.errors.StoreValueChangedError` (backends that cannot pin a
    value), never bytes of a newer value mixed with the old.

    Backends implement :meth:`_read` (ranges arrive checked, non-empty, without
    repeats) and, if they hold resources, :meth:`_close`.

    Attributes
    ----------
    key : str
        The key the value was read from.
    size : int
        Length in bytes of the pinned value.
    version : Version or None
        What :meth:`Store.versions <chunkflow.storage.Store.versions>` said for that
        same value (``None``: the backend cannot tell).
    """

    key: str
    size: int
    version: Version | None
    _closed: bool = False
    _active: int = 0  # reads in flight
    _released: bool = False

    def read(self, ranges: Sequence[tuple[int, int]], *, verify: bool = True) -> list[bytes]:
        """One ``bytes`` per absolute ``(start, stop)`` range, in the order given.

        Ranges may come in any order and may repeat; empty ranges cost no I/O. The
        backend fetches them in one batched request where it can.

        ``verify=False`` lets a reader that proves its value unchanged after each read
        (object stores: a request for the value's ETag) leave that proof to the next
        read with ``verify=True`` or to :meth:`verify`, which then covers both: use
        such bytes only to choose what to read next (a shard's index), and verify
        before raising an error about them. Readers that pin their value ignore it.

        Raises
        ------
        ValueError
            A range is out of bounds (the message names key, range and size), or the
            reader is closed.
        chunkflow.errors.StoreValueChangedError
            The value changed since the reader was opened and the backend could not
            keep the old one: open a new reader and read again.
        """
        checked = check_ranges(self.key, ranges, self.size)
        wanted = sorted({r for r in checked if r[0] < r[1]})
        with self._in_flight():
            if not wanted:
                fetched = {}
            elif verify:
                fetched = dict(zip(wanted, self._read(wanted)))
            else:
                fetched = dict(zip(wanted, self._read_unverified(wanted)))
        return [fetched.get(r, b"") for r in checked]

    def verify(self) -> None:
        """Raise :class:`~chunkflow.errors.StoreValueChangedError` if the value was
        replaced since the reader was opened and the reader could not keep it.

        Readers that pin their value (files, memory, zip members) never raise.
        """
        with self._in_flight():
            self._verify()

    def _read_unverified(self, ranges: list[tuple[int, int]]) -> list[bytes]:
        """:meth:`_read`, leaving out any check that the value is unchanged."""
        return self._read(ranges)

    def _verify(self) -> None:  # noqa: B027 - a hook: pinned values need no check
        """Readers that cannot pin their value check it here."""

    @contextlib.contextmanager
    def _in_flight(self) -> Iterator[None]:
        # A close() from another thread during a read must not release the resource
        # under it: a closed file descriptor's number can be reused by another file
        # at once, and the read would return that file's bytes. The last read in
        # flight releases it instead.
        with _state_lock:
            if self._closed:
                raise StoreClosedError(f"the byte range reader of key {self.key!r} is closed")
            self._active += 1
        try:
            yield
        finally:
            with _state_lock:
                self._active -= 1
                release = self._closed and not self._active and not self._released
                self._released = self._released or release
            if release:
                self._close()

    @abc.abstractmethod
    def _read(self, ranges: list[tuple[int, int]]) -> list[bytes]:
        """The bytes of each range: checked, non-empty, sorted and distinct."""

    def close(self) -> None:
        """Release what the reader holds (idempotent); later reads raise ``ValueError``.

        Reads already in flight in other threads finish first.
        """
        with _state_lock:
            if self._closed:
                return
            self._closed = True
            release = not self._active
            self._released = release
        if release:
            self._close()

    def _close(self) -> None:  # noqa: B027 - an optional hook: most backends hold nothing
        """Backends holding a resource (a file descriptor) release it here."""

    def __enter__(self) -> ByteRangeReader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        state = "closed" if self._closed else f"size={self.size}, version={self.version!r}"
        return f"{type(self).__name__}({self.key!r}, {state})"


class BytesRangeReader(ByteRangeReader):
    """Ranges of a value already in memory: an immutable ``bytes`` object pins it.

    The base :class:`~chunkflow.storage.Store` falls back to this (fetching the whole
    value once) for backends with no ranged reads, and in-memory stores use it
    without copying their value.

    Examples
    --------
    >>> reader = BytesRangeReader("k", b"abcdef", version=7)
    >>> reader.read([(1, 3), (1, 3)]), reader.version
    ([b'bc', b'bc'], 7)
    """

    def __init__(self, key: str, data: bytes, version: Version | None) -> None:
        self.key = key
        self.size = len(data)
        self.version = version
        # A bytes object cannot change, so holding it pins the value; anything
        # mutable (a bytearray from a custom mapping) is copied once.
        self._data = data if type(data) is bytes else bytes(data)

    def _read(self, ranges: list[tuple[int, int]]) -> list[bytes]:
        return [self._data[start:stop] for start, stop in ranges]

    def _close(self) -> None:
        self._data = b""  # let a large value go even if the reader object lives on


def _pread_all(fd: int, start: int, stop: int) -> bytes:
    """``stop - start`` bytes at offset ``start`` (fewer only if the file got shorter)."""
    data = os.pread(fd, stop - start, start)  # no shared offset: threads may share fd
    if len(data) == stop - start:
        return data
    parts = [data]  # a short read: > 2 GiB on Linux, or a file truncated meanwhile
    got = len(data)
    while got < stop - start and (chunk := os.pread(fd, stop - start - got, start + got)):
        parts.append(chunk)
        got += len(chunk)
    return b"".join(parts)


class FileRangeReader(ByteRangeReader):
    """Ranges of one local file, read with ``os.pread`` on a descriptor opened for it.

    The reader owns the descriptor (closes it on :meth:`close`, or when dropped).
    chunkflow's writes replace a file with a new one (``os.replace``), so the open
    descriptor keeps the old file, and its bytes, for as long as the reader lives.
    A foreign writer that rewrites the file in place (zarr-python's LocalStore does)
    changes its size or modification time; each read compares them with the ones seen
    at open and raises :class:`~chunkflow.errors.StoreValueChangedError` if they
    differ. (An in-place rewrite to the same size within one tick of the file
    system's clock cannot be told apart; atomic writers never cause one.)
    """

    def __init__(self, key: str, fd: int, st: os.stat_result, version: Version | None) -> None:
        self.key = key
        self.size = st.st_size
        self.version = version
        self._fd = fd
        # Not st_ctime: unlinking the file (a replacement by an atomic writer)
        # changes it, although the bytes behind the descriptor stay the same.
        self._content = (st.st_size, st.st_mtime_ns)
        # A reader that is dropped unclosed must not leak its descriptor.
        self._release = weakref.finalize(self, os.close, fd)
        self._seek_lock = threading.Lock()  # only where there is no pread (Windows)

    def _read(self, ranges: list[tuple[int, int]]) -> list[bytes]:
        if hasattr(os, "pread"):
            out = [_pread_all(self._fd, start, stop) for start, stop in ranges]
        else:
            with self._seek_lock:  # lseek + read share the descriptor's offset
                out = []
                for start, stop in ranges:
                    os.lseek(self._fd, start, os.SEEK_SET)
                    out.append(_read_at_most(self._fd, stop - start))
        st = os.fstat(self._fd)
        if (st.st_size, st.st_mtime_ns) != self._content or any(
            len(data) != stop - start for data, (start, stop) in zip(out, ranges)
        ):
            raise StoreValueChangedError(
                self.key,
                f"key {self.key!r}: the file was changed in place while being read "
                f"(size {self._content[0]} -> {st.st_size}, mtime_ns {self._content[1]} -> "
                f"{st.st_mtime_ns}) by a writer that does not replace files atomically; "
                "open a new reader and read again",
            )
        return out

    def _close(self) -> None:
        self._release()


def _read_at_most(fd: int, size: int) -> bytes:
    """``size`` bytes from the descriptor's offset (fewer only at the end of the file)."""
    parts, got = [], 0
    while got < size and (chunk := os.read(fd, size - got)):
        parts.append(chunk)
        got += len(chunk)
    return b"".join(parts)
