"""A store over object URLs through obstore (Rust's ``object_store``): ``s3://``,
``gs://``, ``az://``, ``http(s)://``.

Every request is a coroutine of obstore's asynchronous API (``get_async``,
``put_async``, ``head_async``...), run on fsspec's event loop thread, so that many are
in flight at once: batch calls gather theirs (at most ``chunkflow.io.inflight-requests``
at a time), and :meth:`~ObstoreStore.stream_many` / :meth:`~ObstoreStore.put_stream`
keep a window of them out, handing each value over as it arrives (see
:mod:`chunkflow.storage.streams`). The bytes never pass through Python's HTTP stack:
a request costs a fraction of the client CPU that s3fs (botocore, aiohttp) spends.

Over plain HTTP, listings come from fsspec's HTTP file system (the links of a server's
folder pages), as :class:`~chunkflow.storage.FsspecStore` lists there; every other
request goes through obstore.

Versions are ETags. A GET returns its object's ETag with the bytes, so
:meth:`~chunkflow.storage.Store.get_many_versioned` costs no request more than
:meth:`~chunkflow.storage.Store.get_many`; byte ranges are read with ``If-Match`` on
the ETag seen at open, so a reader never returns bytes of two values.

This module imports obstore; chunkflow imports it only when obstore opens a URL.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Awaitable, Callable, Iterable, Iterator
from typing import TYPE_CHECKING, Any, TypeVar

import fsspec.asyn
import obstore
from obstore.exceptions import NotSupportedError, UnknownConfigurationKeyError
from obstore.store import from_url

from chunkflow import config
from chunkflow.errors import InvalidArgumentError, KeyNotFoundError, ReadOnlyError, StoreValueChangedError
from chunkflow.storage.base import Store, Version
from chunkflow.storage.fsspec_ranges import coalesce, split_coalesced
from chunkflow.storage.keys import normalize_key, slice_bounds
from chunkflow.storage.obstore_config import obstore_arguments, obstore_location
from chunkflow.storage.ranges import ByteRangeReader
from chunkflow.storage.retries import raise_request_error
from chunkflow.storage.streams import AsyncKeyStream, AsyncPutStream, CheckedPuts, KeyStream, PutStream

if TYPE_CHECKING:
    from obstore import GetOptions

__all__ = ["ObstoreRangeReader", "ObstoreStore", "etag_version"]

T = TypeVar("T")
#: The end of a ranged GET that reads a whole value (see ObstoreStore._fetch_unversioned):
#: past the end of any object (S3's largest is 5 TiB), within a signed 64-bit integer.
_PAST_ANY_END = 2**62
# storage_options that only obstore takes (left out for fsspec's HTTP listings).
_OBSTORE_ONLY = ("config", "client_options", "retry_config", "credential_provider")


def etag_version(meta: dict[str, Any]) -> tuple[Any, ...] | None:
    """The version of an object from obstore's metadata (``head``, ``list``, a GET's
    ``meta``, a PUT's result with the size added): ``(size, ("ETag", etag))``, as
    :class:`~chunkflow.storage.FsspecStore` names versions of S3 objects; ``None``
    without an ETag, or with a weak one (``W/...``: equivalent, not equal bytes).

    Examples
    --------
    >>> etag_version({"size": 3, "e_tag": '"abc"'})
    (3, ('ETag', '"abc"'))
    >>> etag_version({"size": 3, "e_tag": None}) is None
    True
    """
    etag = meta.get("e_tag")
    if not etag or str(etag).startswith("W/"):
        return None
    return (int(meta["size"]), ("ETag", etag))


def _is_missing(err: BaseException) -> bool:
    return isinstance(err, FileNotFoundError)


def _range_refused(err: BaseException) -> bool:
    """Whether a ranged GET failed for its range alone: a server that serves no ranges
    (obstore's ``NotSupportedError``), or ``416 Range Not Satisfiable`` (an empty
    value, S3's ``InvalidRange``), which obstore raises as a ``GenericError``."""
    # The status as reqwest names it ("... status code: 416 Range Not Satisfiable: ..."),
    # not a bare "416", which a port or a duration in the message may hold.
    text = str(err)
    return (isinstance(err, NotSupportedError) or "416 Range Not Satisfiable" in text
            or "<Code>InvalidRange</Code>" in text)


class ObstoreStore(Store):
    """Keys as objects below an object-store URL, read and written through obstore.

    Parameters
    ----------
    url : str
        ``s3://bucket/prefix``, ``gs://...``, ``az://container/prefix``,
        ``https://host/path``...
    storage_options : dict, optional
        s3fs / gcsfs / adlfs option names, or obstore's own (see
        :func:`~chunkflow.storage.obstore_config.obstore_arguments`).
    read_only : bool
        Refuse writes.

    Notes
    -----
    The identity is the URL with the endpoint (``s3://bucket/prefix@http://host:9000``),
    the same as :class:`~chunkflow.storage.FsspecStore` gives that location, so the two
    backends share cached chunks. Pickles as ``(url, storage_options, read_only)``.

    Examples
    --------
    >>> store = ObstoreStore("s3://bucket/image.zarr", {"anon": True,
    ...                      "endpoint_url": "http://127.0.0.1:9000"}, read_only=True)
    >>> store.identity, store.latency_bound
    ('s3://bucket/image.zarr@http://127.0.0.1:9000', True)
    """

    def __init__(self, url: str, storage_options: dict[str, Any] | None = None,
                 read_only: bool = False) -> None:
        self.url = url
        self.storage_options = dict(storage_options or {})
        self.read_only = read_only
        try:
            self.store = from_url(url, **obstore_arguments(url, self.storage_options))
        except UnknownConfigurationKeyError as err:
            raise InvalidArgumentError(f"storage_options for {url!r}: "
                                       f"{str(err).splitlines()[0]}") from err
        self._identity = obstore_location(self.store) or url.rstrip("/")
        #: Every request is a network round trip (see Store.latency_bound).
        self.latency_bound = True
        self._loop = fsspec.asyn.get_loop()
        self._over_http = type(self.store).__name__ == "HTTPStore"
        #: Whole values are read with one ranged GET (see _fetch_unversioned) until
        #: the server refuses ranges.
        self._ranged_whole_gets = True

    @property
    def identity(self) -> str:
        return self._identity

    def __repr__(self) -> str:
        return f"ObstoreStore({self.url!r}, read_only={self.read_only})"

    def __reduce__(self) -> tuple[object, ...]:
        return (ObstoreStore, (self.url, self.storage_options, self.read_only))

    # ------------------------------------------------------------ plumbing

    def _run(self, function: Callable[..., Awaitable[T]], *args: Any) -> T:
        """Run ``function(*args)`` on fsspec's event loop and wait for it."""
        return fsspec.asyn.sync(self._loop, function, *args)

    def _bounded(self, function: Callable[[str], Awaitable[T]], keys: list[str]) -> list[T]:
        """``function(key)`` for every key, at most ``chunkflow.io.inflight-requests``
        at once, in order."""
        limit = config.inflight_limits()[0]

        async def gather() -> list[T]:
            slots = asyncio.Semaphore(limit)

            async def one(key: str) -> T:
                async with slots:
                    return await function(key)

            return await asyncio.gather(*(one(key) for key in keys))

        return self._run(gather)

    def _translated(self, key: str, err: BaseException, write: bool) -> BaseException | None:
        # obstore raises the builtin FileNotFoundError and PermissionError (or its own
        # PermissionDeniedError) for what S3, GCS and Azure answer.
        if _is_missing(err):
            return KeyError(key)
        if write and (isinstance(err, PermissionError)
                      or type(err).__name__ == "PermissionDeniedError"):
            return ReadOnlyError(f"cannot write key {key!r} to {self!r}: the backend refused ({err})")
        return None

    # ------------------------------------------------------------ reading

    async def _fetch(self, key: str) -> tuple[memoryview | None, Version | None]:
        """One key's value (``None``: missing) and the version of those bytes: a GET,
        whose answer names its ETag. The value is a view of obstore's buffer, not a
        copy (the bytes of a 512 KiB chunk are copied once, by the decoder)."""
        try:
            result = await obstore.get_async(self.store, key)
            data = memoryview(await result.bytes_async())
        except Exception as err:
            if _is_missing(err):
                return None, None
            raise_request_error(err, self, "read", [key])
        return data, etag_version({**result.meta, "size": len(data)})

    async def _fetch_unversioned(self, key: str) -> tuple[memoryview | None, None]:
        """One key's value (``None``: missing), with no version: one request, and one
        round trip to obstore's runtime instead of two (a GET of the range from 0 to
        far past any end, which servers answer with the whole value; ``get_async``
        answers first with the headers and then, asked again, with the bytes).

        Measured over HTTP, 512 values of 270 KiB, 64 in flight: 0.12 s of client CPU
        instead of 0.15 s (0.17 s with a copy of the bytes). A server that refuses
        ranges (``python -m http.server``: ``NotSupportedError``), or an empty value
        (``416``: no byte 0 to start from), is read again with a plain GET; the first
        refusal makes this store read whole values with plain GETs from then on.
        """
        if self._ranged_whole_gets:
            try:
                return memoryview(await obstore.get_range_async(
                    self.store, key, start=0, length=_PAST_ANY_END)), None
            except Exception as err:
                if _is_missing(err):
                    return None, None
                if not _range_refused(err):
                    raise_request_error(err, self, "read", [key])
                if isinstance(err, NotSupportedError):
                    self._ranged_whole_gets = False
        data, _ = await self._fetch(key)
        return data, None

    def _get(self, key: str) -> bytes:
        data, _ = self._run(self._fetch_unversioned, key)
        if data is None:
            raise KeyNotFoundError(key)
        return bytes(data)

    def _get_many_versioned(self, keys: list[str]) -> dict[str, tuple[bytes, Version | None]]:
        found = self._bounded(self._fetch, keys)
        return {key: (bytes(data), version) for key, (data, version) in zip(keys, found)
                if data is not None}

    def _get_many(self, keys: list[str]) -> dict[str, bytes]:
        found = self._bounded(self._fetch_unversioned, keys)
        return {key: bytes(data) for key, (data, _) in zip(keys, found) if data is not None}

    def stream_many(self, keys: Iterable[str], *, window: int, lanes: int = 1,
                    versioned: bool = False) -> KeyStream:
        """``window`` GETs in flight on fsspec's event loop, each value handed out as it
        arrives (a view of obstore's buffer), with its version (which a GET brings
        along) when ``versioned``."""
        fetch = self._fetch if versioned else self._fetch_unversioned
        return AsyncKeyStream(self._loop, fetch, [normalize_key(k) for k in keys], window)

    async def _head(self, key: str) -> dict[str, Any] | None:
        try:
            return dict(await obstore.head_async(self.store, key))
        except Exception as err:
            if _is_missing(err):
                return None
            raise_request_error(err, self, "read", [key])

    def _contains(self, key: str) -> bool:
        return self._run(self._head, key) is not None

    def _getsize(self, key: str) -> int:
        meta = self._run(self._head, key)
        if meta is None:
            raise KeyNotFoundError(key)
        return int(meta["size"])

    def _versions(self, keys: list[str]) -> dict[str, Version | None]:
        metas = self._bounded(self._head, keys)
        return {key: etag_version(meta) for key, meta in zip(keys, metas) if meta is not None}

    def _get_range(self, key: str, start: int, length: int | None) -> bytes:
        if start < 0 and length is None:
            options: GetOptions = {"range": {"suffix": -start}}
            with self._translate(key):
                return bytes(obstore.get(self.store, key, options=options).bytes())
        begin, end = slice_bounds(self._getsize(key), start, length)
        if begin >= end:
            return b""
        with self._translate(key):
            return bytes(obstore.get(self.store, key, options={"range": (begin, end)}).bytes())

    def _open_ranges(self, key: str) -> ByteRangeReader:
        meta = self._run(self._head, key)
        if meta is None:
            raise KeyNotFoundError(key)
        version = etag_version(meta)
        if version is None:  # nothing to pin ranges to: the whole value pins itself
            return super()._open_ranges(key)
        return ObstoreRangeReader(self, key, version)

    def _open_ranges_expecting(self, key: str, version: Version) -> ByteRangeReader:
        # An ETag version of ours: read as that version with no request to open; each
        # read's If-Match proves it.
        if isinstance(version, tuple) and len(version) == 2 and version[1][0] == "ETag":
            return ObstoreRangeReader(self, key, version)
        return self._open_ranges(key)

    # ------------------------------------------------------------ writing

    async def _put(self, key: str, value: bytes | memoryview) -> Version | None:
        """Write one value (a copy: the caller may reuse its buffer) and return its version."""
        data = value if isinstance(value, bytes) else bytes(value)
        try:
            result = await obstore.put_async(self.store, key, data)
        except Exception as err:
            new = self._translated(key, err, True)
            if new is not None:
                raise new from err
            raise_request_error(err, self, "write", [key])
        return etag_version({**result, "size": len(data)})

    def _set(self, key: str, value: bytes | memoryview) -> None:
        self._run(self._put, key, value)

    def _set_many_versioned(self, items: dict[str, bytes | memoryview]) -> dict[str, Version | None]:
        keys = list(items)
        return dict(zip(keys, self._bounded(lambda key: self._put(key, items[key]), keys)))

    def _set_many(self, items: dict[str, bytes | memoryview]) -> None:
        self._set_many_versioned(items)

    def put_stream(self, *, window: int, lanes: int = 1) -> PutStream:
        """Each value sent at once on fsspec's event loop, ``window`` at most in flight;
        their versions come back with the PUTs."""
        return CheckedPuts(self._checked_put, AsyncPutStream(self._loop, self._put, window,
                                                             self._announce_written))

    def _delete(self, key: str) -> None:
        if self._run(self._head, key) is None:  # deleting a missing object succeeds
            raise KeyNotFoundError(key)
        with self._translate(key, write=True):
            obstore.delete(self.store, key)

    def _delete_many(self, keys: list[str]) -> None:
        with self._translate(keys[0], write=True):
            obstore.delete(self.store, keys)  # one bulk request per 1000 keys on S3

    def _delete_prefix(self, prefix: str) -> None:
        keys = list(self._list_prefix(prefix))
        if keys:
            self._delete_many(keys)

    # ------------------------------------------------------------ listing

    @functools.cached_property
    def _html_listing(self) -> Store:
        """Over plain HTTP, listings from fsspec's HTTP file system, which reads the
        links of a server's folder pages (obstore lists with WebDAV's PROPFIND, which
        static file servers refuse)."""
        from chunkflow.storage.fsspec_store import FsspecStore

        options = {k: v for k, v in self.storage_options.items() if k not in _OBSTORE_ONLY}
        return FsspecStore(self.url, options, read_only=True)

    def _metas(self, prefix: str) -> list[dict[str, Any]]:
        """What obstore lists below the folder-like ``prefix`` (all objects for "")."""
        start = prefix + "/" if prefix else ""
        metas = obstore.list(self.store, prefix or None).collect()
        return [dict(meta) for meta in metas if meta["path"].startswith(start)]

    def _list_prefix(self, prefix: str) -> Iterator[str]:
        if self._over_http:
            return self._html_listing.list_prefix(prefix)
        return iter([meta["path"] for meta in self._metas(prefix)])

    def _list_dir(self, prefix: str) -> tuple[list[str], list[str]]:
        if self._over_http:
            return self._html_listing.list_dir(prefix)
        listing = obstore.list_with_delimiter(self.store, prefix or None)
        cut = len(prefix) + 1 if prefix else 0
        keys = [meta["path"][cut:] for meta in listing["objects"]]
        dirs = [path[cut:].rstrip("/") for path in listing["common_prefixes"]]
        return sorted(k for k in keys if k), sorted(d for d in dirs if d)

    def _getsize_prefix(self, prefix: str) -> int:
        if self._over_http:
            return self._html_listing.getsize_prefix(prefix)
        return sum(int(meta["size"]) for meta in self._metas(prefix))


class ObstoreRangeReader(ByteRangeReader):
    """Byte ranges of one object, each GET conditional on the ETag seen at open
    (``If-Match``): a read of a replaced or deleted object raises
    :class:`~chunkflow.errors.StoreValueChangedError`, never returns its bytes. Ranges
    that touch are joined into one request; all of a read's go out at once.
    """

    def __init__(self, store: ObstoreStore, key: str, version: tuple[Any, ...]) -> None:
        self.key = key
        self.size = int(version[0])
        self.version = version
        self._store = store
        self._etag = version[1][1]

    def _changed(self, detail: str) -> StoreValueChangedError:
        return StoreValueChangedError(
            self.key, f"key {self.key!r} of {self._store!r} changed while its byte ranges were "
                      f"being read ({detail}); open a new reader and read again")

    def _read(self, ranges: list[tuple[int, int]]) -> list[bytes]:
        joined = coalesce(ranges)
        fetched = self._store._run(self._fetch_all, [(start, stop) for start, stop, _ in joined])
        return split_coalesced(ranges, joined, fetched, self._changed)

    async def _fetch_all(self, spans: list[tuple[int, int]]) -> list[bytes]:
        return list(await asyncio.gather(*(self._fetch(span) for span in spans)))

    async def _fetch(self, span: tuple[int, int]) -> bytes:
        options: Any = {"range": span, "if_match": self._etag}
        try:
            result = await obstore.get_async(self._store.store, self.key, options=options)
            return bytes(await result.bytes_async())
        except Exception as err:
            if _is_missing(err):
                raise self._changed("it was deleted") from err
            if type(err).__name__ == "PreconditionError":
                raise self._changed(f"its ETag is no longer {self._etag}") from err
            raise_request_error(err, self._store, "read", [self.key])
