"""A store over any fsspec URL (``memory://``, ``file://``, ``s3://``, ``zip::``...)."""

from __future__ import annotations

import contextlib
import functools
import os
import re
import time
from collections.abc import Iterable, Iterator
from typing import Any

import fsspec
from fsspec.utils import get_protocol

from chunkflow.errors import KeyIsDirectoryError, KeyNotFoundError, ReadOnlyError
from chunkflow.storage.atomic_files import (
    TMP_MAX_AGE,
    TMP_SUFFIX,
    remove_if_stale,
    remove_stale_below,
    write_atomically,
)
from chunkflow.storage.base import Store, Version
from chunkflow.storage.fsspec_ranges import (
    UNCHECKABLE_PROTOCOLS,
    FsspecRangeReader,
    batch_kwargs,
    change_token,
    fs_protocols,
    gather_bounded,
    is_missing_error,
    open_fsspec_ranges,
    version_token,
)
from chunkflow.storage.keys import normalize_key, normalize_prefix, slice_bounds
from chunkflow.storage.process_local import reference
from chunkflow.storage.ranges import ByteRangeReader
from chunkflow.storage.references import held_keys, references_token, target_protocols
from chunkflow.storage.retries import (
    raise_request_error,
    s3_pool_options,
    uses_s3fs,
    with_retry_defaults,
)
from chunkflow.storage.streams import (
    AsyncKeyStream,
    AsyncPutStream,
    CheckedPuts,
    KeyStream,
    PutStream,
)

# FsspecRangeReader, change_token, fs_protocols, is_missing_error and
# open_fsspec_ranges live in fsspec_ranges; importing them from here still works.
__all__ = ["GLOB", "NEAR_PROTOCOLS", "FsspecRangeReader", "FsspecStore", "change_token", "fs_protocols",
           "is_missing_error", "open_fsspec_ranges"]

# fsspec expands glob characters in the path lists given to cat/rm; keys that
# contain them are fetched one by one instead.
GLOB = re.compile(r"[*?\[]")
# File systems whose requests cost no network round trip: every other is latency-bound.
NEAR_PROTOCOLS = {"file", "local", "memory", "zip", "tar"}


class FsspecStore(Store):
    """Keys as files below an fsspec URL.

    Missing keys and backend-specific "not found" errors become ``KeyError``, and
    permission errors on writes become :class:`~chunkflow.errors.ReadOnlyError`,
    in one place (:meth:`_translate`).  :meth:`get_many` is one batched
    ``fs.cat`` call (concurrent on async backends such as s3fs) and
    :meth:`set_many` one ``fs.pipe`` call.  :meth:`open_ranges` readers fetch their
    ranges with one ``fs.cat_ranges`` call per read and check the file's ETag (or
    generation, or modification time) before and after (see
    :class:`FsspecRangeReader`); file systems whose info tracks no changes, and
    fsspec's local file system, which rewrites files in place, read the value whole.

    A ``zip::`` URL opens fsspec's zip file system, which cannot read and write
    in one session: such stores are read-only, unless the zip mode is set
    (``storage_options={"zip": {"mode": "w"}}``), which gives a write-only store
    finalized by :meth:`close`.  :class:`~chunkflow.storage.ZipStore` reads and
    writes zip files.  On fsspec's local file system (``file://`` with
    ``storage_options``, ``local://``) each value is written to a temporary file
    that a rename puts in place, as :class:`~chunkflow.storage.LocalStore` does: a
    reader, or a crash, sees the old value or the new one.

    Pickles as ``(url, storage_options, read_only)``.

    Parameters
    ----------
    url : str
        Any fsspec URL, including chained ones (``"zip::file:///data.zip"``).
    storage_options : dict, optional
        Keyword arguments for the file system (``{"endpoint_url": ..., "key": ...}``
        for s3fs).
    read_only : bool
        Refuse writes.

    Examples
    --------
    >>> store = FsspecStore("memory://doc-example/root")
    >>> store.set_many({"a/0": b"x", "a/1": b"yz"})
    >>> store.get_many(["a/0", "a/1", "a/2"])
    {'a/0': b'x', 'a/1': b'yz'}
    >>> store.identity
    'memory:///doc-example/root'
    """

    def __init__(
        self, url: str, storage_options: dict[str, Any] | None = None, read_only: bool = False
    ) -> None:
        self.url = url
        self.storage_options = dict(storage_options or {})
        options = dict(self.storage_options)
        if "::" not in url and get_protocol(url) in ("file", "local"):
            options.setdefault("auto_mkdir", True)  # create parent folders on write
        if uses_s3fs(url):  # not for another implementation registered for s3://
            options = s3_pool_options(options)
        options = with_retry_defaults(url, options)  # long jobs outlast transient errors
        self.fs, root = fsspec.core.url_to_fs(url, **options)
        self.root = root.rstrip("/")
        self._base = self.root + "/" if self.root else ""
        # The base as the file system names what it lists: with an empty root, memory://
        # lists "/a" and reference:// lists "a"; "/" as the base would drop the latter.
        self._listed_base = self.fs._strip_protocol(self._base + "k")[:-1]
        self.read_only = read_only
        # fsspec writes local files in place: a crash would leave part of a value.
        self._local_files = "::" not in url and get_protocol(url) in ("file", "local")
        #: Every request is a network round trip (see Store.latency_bound).
        self.latency_bound = not NEAR_PROTOCOLS & set(fs_protocols(self.fs))
        if self.merges_ranges:  # references: as far as the farthest file they point into
            self.latency_bound = not target_protocols(self.fs) <= NEAR_PROTOCOLS
        # s3fs's HEAD before each whole-object read (see batch_kwargs) is left out.
        self._whole = {"max_concurrency": 1} if uses_s3fs(url) else {}
        if "zip" in fs_protocols(self.fs) and getattr(self.fs, "mode", "r") == "r":
            self.read_only = True
            self._read_only_reason = (
                "fsspec's zip file system cannot read and write in one session; "
                "use ZipStore(path, mode='a') to write zip files"
            )

    @property
    def merges_ranges(self) -> bool:
        """Whether a batch read (:meth:`get_many`: one ``fs.cat`` of many keys) merges
        the byte ranges of keys that lie in one file into few requests: fsspec's
        ``ReferenceFileSystem`` (kerchunk and VirtualiZarr references) does, grouping
        ranges less than its ``max_gap`` apart into blocks of at most ``max_block``
        bytes. Reads of such stores go in batches, never one request per key.

        Examples
        --------
        >>> FsspecStore("memory://doc-merges").merges_ranges
        False
        >>> refs = {"version": 1, "refs": {".zgroup": '{"zarr_format": 2}'}}
        >>> FsspecStore("reference://", {"fo": refs}).merges_ranges
        True
        """
        return "reference" in fs_protocols(self.fs)

    @property
    def identity(self) -> str:
        if "::" in self.url:
            return self.url.rstrip("/")
        protocols = fs_protocols(self.fs)
        if "reference" in protocols:
            return self._references_identity()
        if "file" in protocols or "local" in protocols:
            # Same token as LocalStore over the same folder.
            return "file://" + os.path.realpath(self.root)
        ident = self.fs.unstrip_protocol(self.root)
        endpoint = self.storage_options.get("endpoint_url") or self.storage_options.get(
            "client_kwargs", {}
        ).get("endpoint_url")
        return f"{ident}@{endpoint}" if endpoint else ident

    def _references_identity(self) -> str:
        targets = {k: self.storage_options.get(k) for k in ("target_protocol", "remote_protocol")}
        named = ",".join(f"{k}={v}" for k, v in targets.items() if v)
        token = references_token(self.storage_options.get("fo"))
        return f"reference://{token}" + (f"?{named}" if named else "")

    def __repr__(self) -> str:
        return f"FsspecStore({self.url!r}, read_only={self.read_only})"

    def close(self) -> None:
        """Finalize a zip file written through ``zip::`` (mode "w"/"a"); else no-op.

        fsspec's zip file system writes the central directory on close.  The
        closed instance is also dropped from fsspec's instance cache, so a later
        store over the same URL opens the file afresh.
        """
        if "zip" in fs_protocols(self.fs) and getattr(self.fs, "mode", "r") in ("w", "a"):
            self.fs.close()
            type(self.fs).clear_instance_cache()

    def __reduce__(self) -> tuple[object, ...]:
        if "memory" in fs_protocols(self.fs):
            # fsspec's memory file system is a dict of this process: another process
            # would see an empty one and lose what it writes.
            return reference(self, repr(self))
        return (FsspecStore, (self.url, self.storage_options, self.read_only))

    # ------------------------------------------------------------ errors

    def _translated(self, key: str, err: BaseException, write: bool) -> BaseException | None:
        """Map a backend error to chunkflow's (None: leave it as is)."""
        if is_missing_error(err):
            return KeyError(key)
        if write and isinstance(err, PermissionError):
            return ReadOnlyError(f"cannot write key {key!r} to {self!r}: the backend refused ({err})")
        return None

    def _path(self, key: str) -> str:
        return self._base + key

    # ------------------------------------------------------------ reading

    def _held(self, keys: list[str]) -> list[str]:
        """``keys`` less those that references do not hold (see storage.references)."""
        return held_keys(self.fs.references, keys) if self.merges_ranges else keys

    def _get(self, key: str) -> bytes:
        if not self._held([key]):
            raise KeyNotFoundError(key)
        with self._translate(key):
            return bytes(self.fs.cat_file(self._path(key), **self._whole))

    def _get_many(self, keys: list[str]) -> dict[str, bytes]:
        batch = [k for k in self._held(keys) if not GLOB.search(k)]
        out: dict[str, bytes] = {}
        if batch:
            paths = {self._path(k): k for k in batch}
            # on_error="return" rather than "omit": only "not found" may turn into
            # a missing chunk; a network or permission error must surface instead
            # of silently reading as fill_value.
            results = self.fs.cat(list(paths), on_error="return", **self._whole,
                                  **batch_kwargs(self.fs, len(paths)))
            for path, value in results.items():
                key = paths.get(path) or paths.get(self.fs._strip_protocol(path))
                if key is None:
                    continue
                if isinstance(value, BaseException):
                    new = self._translated(key, value, False)
                    if new is None:
                        raise value
                    continue
                out[key] = bytes(value)
        for key in keys:
            if key not in out and GLOB.search(key):
                with contextlib.suppress(KeyError):
                    out[key] = self._get(key)
        return out

    def stream_many(self, keys: Iterable[str], *, window: int, lanes: int = 1,
                    versioned: bool = False) -> KeyStream:
        """On asynchronous file systems (s3fs, HTTP...), ``window`` requests in flight
        on fsspec's event loop, each value handed out as it arrives (with no version:
        see :meth:`_get_many_versioned`); otherwise batches, as :meth:`Store.stream_many`.
        Virtual references (:attr:`merges_ranges`) go in batches too: one batch of chunks
        lying in one file is a few merged range requests, not one request per chunk.
        """
        checked = [normalize_key(k) for k in keys]
        if (not getattr(self.fs, "async_impl", False) or getattr(self.fs, "loop", None) is None
                or self.merges_ranges or any(GLOB.search(k) for k in checked)):
            return super().stream_many(checked, window=window, lanes=lanes, versioned=versioned)
        return AsyncKeyStream(self.fs.loop, self._fetch_whole, checked, window)

    async def _fetch_whole(self, key: str) -> tuple[bytes | None, None]:
        """One key's value (``None``: missing), read on fsspec's event loop."""
        try:
            return bytes(await self.fs._cat_file(self._path(key), **self._whole)), None
        except Exception as err:
            new = self._translated(key, err, False)
            if isinstance(new, KeyError):
                return None, None
            raise_request_error(err, self, "read", [key])

    def _get_range(self, key: str, start: int, length: int | None) -> bytes:
        path = self._path(key)
        with self._translate(key):
            if start >= 0 and length:
                try:
                    return bytes(self.fs.cat_file(path, start=start, end=start + length))
                except Exception as err:
                    if is_missing_error(err):
                        raise
                    # e.g. S3 answers 416 for a start past the end: fall back
                    # to size-based bounds below, re-raising if that is not it.
                    if start < self.fs.size(path):
                        raise
                    return b""
            if start < 0 and length is None:
                return bytes(self.fs.cat_file(path, start=start))
            begin, end = slice_bounds(self.fs.size(path), start, length)
            if begin >= end:
                return b""
            return bytes(self.fs.cat_file(path, start=begin, end=end))

    def _open_ranges(self, key: str) -> ByteRangeReader:
        with self._translate(key):
            reader = open_fsspec_ranges(self.fs, self._path(key), key, versioned=True)
        # Without a way to notice changes, the value is fetched whole, which pins it.
        return reader if reader is not None else super()._open_ranges(key)

    def _versions(self, keys: list[str]) -> dict[str, Version | None]:
        # What names the bytes (ETag, generation...; see version_token), asked of every
        # key at once. Local files rewrite in place: no version (as their readers).
        if not keys or UNCHECKABLE_PROTOCOLS & set(fs_protocols(self.fs)):
            return dict.fromkeys(keys)
        paths = [self._path(key) for key in keys]
        for path in paths:
            self.fs.invalidate_cache(path)  # a listing cache may predate a write
        found: dict[str, Version | None] = {}
        for key, info in zip(keys, self._infos(paths)):
            if isinstance(info, BaseException):
                new = self._translated(key, info, False)
                if new is None:
                    raise info
                continue  # missing: left out
            if info.get("type") != "directory":
                found[key] = version_token(info)
        return found

    def _infos(self, paths: list[str]) -> list[Any]:
        """``fs.info`` of each path (or the error it raised), concurrently where the
        file system is asynchronous."""
        if not getattr(self.fs, "async_impl", False):
            out: list[Any] = []
            for path in paths:
                try:
                    out.append(self.fs.info(path))
                except Exception as err:
                    out.append(err)
            return out
        from fsspec.asyn import sync

        limit = batch_kwargs(self.fs, len(paths))["batch_size"]
        return sync(self.fs.loop, gather_bounded,
                    [functools.partial(self.fs._info, path) for path in paths], limit)

    def _get_many_versioned(self, keys: list[str]) -> dict[str, tuple[bytes, Version | None]]:
        # No version with whole values: asking for it costs a HEAD per key, and the
        # bytes alone prove nothing about later states (ranged reads carry theirs).
        return {key: (data, None) for key, data in self._get_many(keys).items()}

    def _open_ranges_expecting(self, key: str, version: Version) -> ByteRangeReader:
        # A version of ours (version_token: the size, then what names the bytes): read
        # as that version, with no request to open; the reads prove it afterwards.
        if not (isinstance(version, tuple) and version and isinstance(version[0], int)
                and len(version) > 1) or UNCHECKABLE_PROTOCOLS & set(fs_protocols(self.fs)):
            return self._open_ranges(key)
        return FsspecRangeReader.expecting(key, self.fs, self._path(key), version)

    def _info(self, key: str) -> dict[str, Any]:
        if not self._held([key]):
            raise KeyNotFoundError(key)
        with self._translate(key):
            info = self.fs.info(self._path(key))
            if info.get("type") == "directory":
                raise KeyIsDirectoryError(key)
            return info

    def _getsize(self, key: str) -> int:
        return int(self._info(key)["size"])

    def _contains(self, key: str) -> bool:
        try:
            self._info(key)
        except KeyError:
            return False
        return True

    # ------------------------------------------------------------ writing

    def _set(self, key: str, value: bytes | memoryview) -> None:
        with self._translate(key, write=True):
            if self._local_files:
                write_atomically(self._path(key), value)
            else:
                self.fs.pipe_file(self._path(key), bytes(value))

    def _set_many(self, items: dict[str, bytes | memoryview]) -> None:
        if self._local_files:
            for key, value in items.items():
                self._set(key, value)
            return
        first = next(iter(items))
        with self._translate(first, write=True):
            self.fs.pipe({self._path(k): bytes(v) for k, v in items.items()},
                         **batch_kwargs(self.fs, len(items)))

    def put_stream(self, *, window: int, lanes: int = 1) -> PutStream:
        """On asynchronous file systems (s3fs...), each value sent at once on fsspec's
        event loop, ``window`` at most in flight; otherwise batches, as
        :meth:`Store.put_stream`."""
        if not getattr(self.fs, "async_impl", False) or getattr(self.fs, "loop", None) is None:
            return super().put_stream(window=window, lanes=lanes)
        return CheckedPuts(self._checked_put, AsyncPutStream(self.fs.loop, self._put_whole, window,
                                                self._announce_written))

    async def _put_whole(self, key: str, value: bytes | memoryview) -> None:
        """Write one key's value on fsspec's event loop (its version: unknown)."""
        try:
            await self.fs._pipe_file(self._path(key), bytes(value))
        except Exception as err:
            new = self._translated(key, err, True)
            if new is not None:
                raise new from err
            raise_request_error(err, self, "write", [key])

    def _delete(self, key: str) -> None:
        self._info(key)  # S3 deletes of missing keys succeed: check first
        with self._translate(key, write=True):
            self.fs.rm_file(self._path(key))

    def _delete_many(self, keys: list[str]) -> None:
        if any(GLOB.search(k) for k in keys):
            super()._delete_many(keys)
            return
        with self._translate(keys[0], write=True):
            try:
                self.fs.rm([self._path(k) for k in keys])
            except FileNotFoundError:
                # Local/memory file systems refuse missing paths in a batch.
                super()._delete_many(keys)

    def _delete_prefix(self, prefix: str) -> None:
        # Delete the files found, never the prefix itself: with an empty prefix
        # that could be the bucket.
        keys = list(self._list_prefix(prefix))
        if keys:
            self._delete_many(keys)

    # ------------------------------------------------------------ listing

    def _find(self, prefix: str) -> dict[str, dict[str, Any]]:
        path = self._path(prefix) if prefix else self.root
        # Listing caches (s3fs dircache) may predate writes by other clients.
        self.fs.invalidate_cache(path)
        try:
            found = self.fs.find(path, detail=True)
        except FileNotFoundError:
            return {}
        start = self._listed_base + prefix + "/" if prefix else self._listed_base
        cut = len(self._listed_base)
        # find() on a file returns the file itself: keep only what lies below.
        return {p[cut:]: info for p, info in found.items()
                if p.startswith(start) and not self._in_flight(p)}

    def _list_prefix(self, prefix: str) -> Iterator[str]:
        return iter(list(self._find(prefix)))

    def _list_dir(self, prefix: str) -> tuple[list[str], list[str]]:
        path = self._path(prefix) if prefix else self.root
        self.fs.invalidate_cache(path)
        try:
            entries = self.fs.ls(path, detail=True)
        except FileNotFoundError:
            return [], []
        start = self._listed_base + prefix + "/" if prefix else self._listed_base
        keys: list[str] = []
        dirs: list[str] = []
        for entry in entries:
            name = entry["name"].rstrip("/")
            if name.startswith(start) and not self._in_flight(name):
                rest = name[len(start) :]
                (dirs if entry.get("type") == "directory" else keys).append(rest)
        return sorted(keys), sorted(dirs)

    def _getsize_prefix(self, prefix: str) -> int:
        return sum(int(info.get("size") or 0) for info in self._find(prefix).values())

    def remove_stale_temporaries(self, prefix: str = "", max_age: float = TMP_MAX_AGE) -> int:
        """On fsspec's local file system (``file://``, ``local://``), remove temporary
        files below ``prefix`` unchanged for ``max_age`` seconds, as
        :meth:`LocalStore.remove_stale_temporaries` does; elsewhere writes leave none.
        Returns how many were removed."""
        if self.read_only or not self._local_files:
            return 0
        folder = self._path(normalize_prefix(prefix)) if prefix else self.root
        return remove_stale_below(folder, max_age)

    def _in_flight(self, name: str) -> bool:
        """Whether a listed local file is a writer's temporary file; listings remove
        stale ones (left by a killed writer), as ``LocalStore``'s do."""
        if not (self._local_files and name.endswith(TMP_SUFFIX)):
            return False
        if not self.read_only:
            remove_if_stale(name, time.time() - TMP_MAX_AGE)
        return True
