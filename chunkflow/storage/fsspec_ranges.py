"""Byte ranges and versions of files on fsspec file systems (object stores above all).

An object store cannot hold on to an object it opened: a reader of ranges proves after
reading that the object is still the one it opened, by what ``fs.info`` says of it
(:func:`change_token`: ETag, generation, modification time...). The fields that name
the bytes themselves (:func:`version_token`: ETags, generations, version ids, MD5
hashes) also serve as the store's versions, which let a cache prove a copy current
with a HEAD request instead of fetching the value again. Requests of one call go out
together, on the file system's event loop (:func:`batch_kwargs`), or at most a few at
once (:func:`gather_bounded`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Any

from chunkflow import config
from chunkflow.errors import InvalidArgumentError, KeyIsDirectoryError, StoreValueChangedError
from chunkflow.storage.ranges import ByteRangeReader

if TYPE_CHECKING:
    from fsspec import AbstractFileSystem

__all__ = ["FsspecRangeReader", "batch_kwargs", "change_token", "coalesce", "fs_protocols",
           "gather_bounded", "is_missing_error", "open_fsspec_ranges", "split_coalesced", "version_token"]

# Error codes some backends raise (botocore ClientError) instead of FileNotFoundError.
_MISSING_CODES = {"NoSuchKey", "404", "NotFound", "NoSuchBucket"}
# Fields of fs.info that change whenever a file's bytes do: ETags (S3, Azure, HTTP),
# generations (GCS), version ids, modification or creation times, inode numbers.
_CHANGE_FIELDS = ("ETag", "etag", "e_tag", "generation", "VersionId", "version_id",
                  "md5Hash", "LastModified", "last_modified", "updated", "mtime", "created",
                  "ino")
# Those that name the bytes themselves: a rewrite within one tick of a clock changes
# them too. Only these make versions, which a cache may trust for as long as it likes.
_VERSION_FIELDS = ("ETag", "etag", "e_tag", "generation", "VersionId", "version_id", "md5Hash")
# fsspec's local file system rewrites files in place, and a same-size rewrite within
# one tick of the file system's clock leaves every info field as it was: ranges of
# such files cannot be checked, so their values are read whole (see open_ranges).
UNCHECKABLE_PROTOCOLS = {"file", "local"}


def fs_protocols(fs: AbstractFileSystem) -> tuple[str, ...]:
    """The protocol names of an fsspec file system, as a tuple (fsspec gives a str or a
    tuple)."""
    protocol = fs.protocol
    return (protocol,) if isinstance(protocol, str) else tuple(protocol)


def is_missing_error(err: BaseException) -> bool:
    """Whether a backend error means "no such key" (the one place that decides it; S3
    and HTTP back ends raise their own error types and codes)."""
    if isinstance(err, (FileNotFoundError, IsADirectoryError, NotADirectoryError, KeyError)):
        return True
    if type(err).__name__ in _MISSING_CODES:
        return True
    response = getattr(err, "response", None)
    code = response.get("Error", {}).get("Code") if isinstance(response, dict) else None
    return code in _MISSING_CODES


def batch_kwargs(fs: AbstractFileSystem, count: int) -> dict[str, Any]:
    """Keyword arguments of ``fs.cat``/``cat_ranges``/``pipe`` for ``count`` requests.

    An asynchronous file system sends up to ``batch_size`` requests at once on its
    event loop: here all ``count`` of them, up to the setting
    ``chunkflow.io.inflight-requests`` (the caller's batch is already sized to the
    in-flight budget; fsspec's own default, ``nofiles_gather_batch_size``, is 1280).

    Examples
    --------
    >>> import fsspec
    >>> batch_kwargs(fsspec.filesystem("memory"), 10)  # not asynchronous: nothing to set
    {}
    """
    if not getattr(fs, "async_impl", False):
        return {}
    limit = config.inflight_limits()[0]
    return {"batch_size": max(1, min(count, limit))}


def change_token(info: dict[str, Any]) -> tuple[Any, ...] | None:
    """What of ``fs.info(path)`` changes with the bytes; ``None`` if nothing does.

    Examples
    --------
    >>> change_token({"name": "b/k", "size": 3, "ETag": '"abc"', "type": "file"})
    (3, ('ETag', '"abc"'))
    >>> change_token({"name": "b/k", "size": 3}) is None
    True
    """
    found = tuple((name, info[name]) for name in _CHANGE_FIELDS if info.get(name) is not None)
    return (info.get("size"), *found) if found else None


def version_token(info: dict[str, Any]) -> tuple[Any, ...] | None:
    """A version of the bytes ``fs.info(path)`` describes, from the fields that name
    the bytes themselves (not times: a rewrite within a clock tick keeps those), and
    never from a weak HTTP ETag (``W/...``: equivalent, not equal bytes); ``None`` if
    there is none.

    Examples
    --------
    >>> version_token({"size": 3, "ETag": '"abc"', "LastModified": 17})
    (3, ('ETag', '"abc"'))
    >>> version_token({"size": 3, "ETag": 'W/"abc"'}) is None
    True
    """
    found = tuple((name, info[name]) for name in _VERSION_FIELDS
                  if info.get(name) is not None and not str(info[name]).startswith("W/"))
    return (info.get("size"), *found) if found else None


def coalesce(ranges: Sequence[tuple[int, int]]) -> list[tuple[int, int, list[int]]]:
    """Sorted ranges joined where they touch or overlap: ``(start, stop, members)``,
    ``members`` the indices of the ranges each joined range holds. One request then
    fetches neighbours (a window's inner chunks that lie side by side in a shard).

    Examples
    --------
    >>> coalesce([(0, 10), (10, 20), (15, 18), (30, 40)])
    [(0, 20, [0, 1, 2]), (30, 40, [3])]
    """
    joined: list[tuple[int, int, list[int]]] = []
    for index, (start, stop) in enumerate(ranges):
        if joined and start <= joined[-1][1]:
            first, last, members = joined[-1]
            joined[-1] = (first, max(last, stop), [*members, index])
        else:
            joined.append((start, stop, [index]))
    return joined


def split_coalesced(ranges: Sequence[tuple[int, int]],
                    joined: Sequence[tuple[int, int, list[int]]], fetched: Sequence[bytes],
                    changed: Callable[[str], Exception]) -> list[bytes]:
    """The bytes of each of ``ranges``, cut from ``fetched``: the bytes of each joined
    range of :func:`coalesce` (``joined``). A joined range that came back with another
    length means the value changed: ``changed(detail)`` is raised.

    Examples
    --------
    >>> ranges = [(0, 2), (2, 4), (8, 9)]
    >>> split_coalesced(ranges, coalesce(ranges), [b"abcd", b"i"], ValueError)
    [b'ab', b'cd', b'i']
    """
    parts: list[bytes] = [b""] * len(ranges)
    for data, (start, stop, members) in zip(fetched, joined):
        if len(data) != stop - start:
            raise changed(f"range ({start}, {stop}) came back with {len(data)} bytes")
        view = memoryview(data)
        for index in members:
            first, last = ranges[index]
            parts[index] = bytes(view[first - start:last - start])
    return parts


class FsspecRangeReader(ByteRangeReader):
    """Ranges of one file of an fsspec file system, checked against its version.

    Each read fetches its ranges in one ``fs.cat_ranges`` call (ranges that touch
    joined into one request; all sent at once on async backends) and then asks
    ``fs.info`` again: if what identifies the object's bytes (its :func:`change_token`)
    differs from what it was at open, or the object is gone, the read raises
    :class:`~chunkflow.errors.StoreValueChangedError` rather than return bytes that
    may come from two objects. A read with ``verify=False`` leaves that check to the
    next read (or :meth:`verify`), which then covers both: one request less.

    Parameters
    ----------
    key : str
        The store key (named in errors).
    fs : fsspec.AbstractFileSystem
        The file system.
    path : str
        The file's path in `fs`.
    info : dict
        ``fs.info(path)`` taken at open; it must have a :func:`change_token`.
    versioned : bool
        Whether the store's versions are :func:`version_token` (``FsspecStore``):
        then :attr:`version` is the opened value's; else ``None``.
    """

    def __init__(self, key: str, fs: AbstractFileSystem, path: str, info: dict[str, Any],
                 versioned: bool = False) -> None:
        token = change_token(info)
        if token is None:
            raise InvalidArgumentError(f"key {key!r}: fs.info of {path!r} has no field that tracks changes")
        self.key = key
        self.size = int(info["size"])
        self.version = version_token(info) if versioned else None
        self._fs = fs
        self._path = path
        self._token = token
        self._tokenize = change_token

    @classmethod
    def expecting(cls, key: str, fs: AbstractFileSystem, path: str,
                  version: tuple[Any, ...]) -> FsspecRangeReader:
        """A reader of the value ``version`` (a :func:`version_token`) names, opened
        without a request: its reads prove afterwards that the value is that version
        (or raise :class:`~chunkflow.errors.StoreValueChangedError`)."""
        reader = cls.__new__(cls)
        reader.key, reader.size, reader.version = key, int(version[0]), version
        reader._fs, reader._path, reader._token = fs, path, version
        reader._tokenize = version_token
        return reader

    def _changed(self, detail: str) -> StoreValueChangedError:
        return StoreValueChangedError(
            self.key,
            f"key {self.key!r} ({self._fs.unstrip_protocol(self._path)}) changed while its "
            f"byte ranges were being read ({detail}); open a new reader and read again",
        )

    def _read(self, ranges: list[tuple[int, int]]) -> list[bytes]:
        parts = self._read_unverified(ranges)
        self._verify()
        return parts

    def _read_unverified(self, ranges: list[tuple[int, int]]) -> list[bytes]:
        joined = coalesce(ranges)
        results = self._fs.cat_ranges([self._path] * len(joined), [j[0] for j in joined],
                                      [j[1] for j in joined], on_error="return",
                                      **batch_kwargs(self._fs, len(joined)))
        for data in results:
            if isinstance(data, BaseException):
                if is_missing_error(data):
                    raise self._changed("it was deleted") from data
                raise data
        return split_coalesced(ranges, joined, results, self._changed)

    def _verify(self) -> None:
        # A listing cache (s3fs's dircache) could answer with the old info.
        self._fs.invalidate_cache(self._path)
        try:
            now = self._tokenize(self._fs.info(self._path))
        except Exception as err:
            if is_missing_error(err):
                raise self._changed("it was deleted") from err
            raise
        if now != self._token:
            raise self._changed(f"version {self._token!r} became {now!r}")


def open_fsspec_ranges(fs: AbstractFileSystem, path: str, key: str,
                       versioned: bool = False) -> FsspecRangeReader | None:
    """A checked range reader of ``path``, or ``None`` where fsspec cannot check one
    (no change-tracking info field, or a local file system): then read the value whole.

    Backend errors are left to the caller to translate (a folder raises
    ``IsADirectoryError``, which :func:`is_missing_error` counts as missing).
    """
    if UNCHECKABLE_PROTOCOLS & set(fs_protocols(fs)):
        return None
    info = fs.info(path)
    if info.get("type") == "directory":
        raise KeyIsDirectoryError(path)
    if change_token(info) is None:
        return None
    return FsspecRangeReader(key, fs, path, info, versioned)


async def gather_bounded(calls: list[Callable[[], Awaitable[Any]]], limit: int) -> list[Any]:
    """The results of ``calls`` (coroutine functions), at most ``limit`` running at
    once, in order; an exception is returned in its place, not raised."""
    slots = asyncio.Semaphore(limit)

    async def run(call: Callable[[], Awaitable[Any]]) -> Any:
        async with slots:
            return await call()

    return await asyncio.gather(*(run(call) for call in calls), return_exceptions=True)
