"""A store over any fsspec URL (``memory://``, ``file://``, ``s3://``, ``zip::``...)."""

from __future__ import annotations

import contextlib
import os
import re
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import fsspec
from fsspec.utils import get_protocol

from chunkflow.errors import ReadOnlyError, StoreValueChangedError
from chunkflow.storage.base import Store
from chunkflow.storage.keys import slice_bounds
from chunkflow.storage.process_local import reference
from chunkflow.storage.ranges import ByteRangeReader
from chunkflow.storage.retries import with_retry_defaults

if TYPE_CHECKING:
    from fsspec import AbstractFileSystem

__all__ = ["GLOB", "FsspecRangeReader", "FsspecStore", "change_token", "fs_protocols",
           "is_missing_error"]

# fsspec expands glob characters in the path lists given to cat/rm; keys that
# contain them are fetched one by one instead.
GLOB = re.compile(r"[*?\[]")
# Error codes some backends raise (botocore ClientError) instead of FileNotFoundError.
_MISSING_CODES = {"NoSuchKey", "404", "NotFound", "NoSuchBucket"}


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


# Fields of fs.info that change whenever a file's bytes do: ETags (S3, Azure, HTTP),
# generations (GCS), version ids, modification or creation times, inode numbers.
_CHANGE_FIELDS = ("ETag", "etag", "e_tag", "generation", "VersionId", "version_id",
                  "md5Hash", "LastModified", "last_modified", "updated", "mtime", "created",
                  "ino")
# fsspec's local file system rewrites files in place, and a same-size rewrite within
# one tick of the file system's clock leaves every info field as it was: ranges of
# such files cannot be checked, so their values are read whole (see open_ranges).
_UNCHECKABLE_PROTOCOLS = {"file", "local"}


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


class FsspecRangeReader(ByteRangeReader):
    """Ranges of one file of an fsspec file system, checked against its version.

    An object store cannot hold on to an object it opened, so each read fetches its
    ranges in one ``fs.cat_ranges`` call (concurrent on async backends) and then asks
    ``fs.info`` again: if what identifies the object's bytes (its :func:`change_token`:
    ETag, generation, modification time...) differs from what it was at open, or the
    object is gone, the read raises :class:`~chunkflow.errors.StoreValueChangedError`
    rather than return bytes that may come from two objects.

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
    """

    def __init__(self, key: str, fs: AbstractFileSystem, path: str, info: dict[str, Any]) -> None:
        token = change_token(info)
        if token is None:
            raise ValueError(f"key {key!r}: fs.info of {path!r} has no field that tracks changes")
        self.key = key
        self.size = int(info["size"])
        self.version = None  # FsspecStore.versions() cannot tell versions (yet)
        self._fs = fs
        self._path = path
        self._token = token

    def _changed(self, detail: str) -> StoreValueChangedError:
        return StoreValueChangedError(
            self.key,
            f"key {self.key!r} ({self._fs.unstrip_protocol(self._path)}) changed while its "
            f"byte ranges were being read ({detail}); open a new reader and read again",
        )

    def _read(self, ranges: list[tuple[int, int]]) -> list[bytes]:
        starts = [start for start, _ in ranges]
        stops = [stop for _, stop in ranges]
        results = self._fs.cat_ranges([self._path] * len(ranges), starts, stops, on_error="return")
        for part, (start, stop) in zip(results, ranges):
            if isinstance(part, BaseException):
                if is_missing_error(part):
                    raise self._changed("it was deleted") from part
                raise part
            if len(part) != stop - start:
                raise self._changed(f"range ({start}, {stop}) came back with {len(part)} bytes")
        # A listing cache (s3fs's dircache) could answer with the old info.
        self._fs.invalidate_cache(self._path)
        try:
            now = change_token(self._fs.info(self._path))
        except Exception as err:
            if is_missing_error(err):
                raise self._changed("it was deleted") from err
            raise
        if now != self._token:
            raise self._changed(f"version {self._token!r} became {now!r}")
        return [bytes(part) for part in results]


def open_fsspec_ranges(fs: AbstractFileSystem, path: str, key: str) -> FsspecRangeReader | None:
    """A checked range reader of ``path``, or ``None`` where fsspec cannot check one
    (no change-tracking info field, or a local file system): then read the value whole.

    Backend errors are left to the caller to translate (a folder raises
    ``IsADirectoryError``, which :func:`is_missing_error` counts as missing).
    """
    if _UNCHECKABLE_PROTOCOLS & set(fs_protocols(fs)):
        return None
    info = fs.info(path)
    if info.get("type") == "directory":
        raise IsADirectoryError(path)
    if change_token(info) is None:
        return None
    return FsspecRangeReader(key, fs, path, info)


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
    writes zip files.  Writes to
    ``file://`` URLs are not atomic here; :func:`~chunkflow.storage.make_store`
    sends those to :class:`~chunkflow.storage.LocalStore`.

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
        options = with_retry_defaults(url, options)  # long jobs outlast transient errors
        self.fs, root = fsspec.core.url_to_fs(url, **options)
        self.root = root.rstrip("/")
        self._base = self.root + "/" if self.root else ""
        self.read_only = read_only
        if "zip" in fs_protocols(self.fs) and getattr(self.fs, "mode", "r") == "r":
            self.read_only = True
            self._read_only_reason = (
                "fsspec's zip file system cannot read and write in one session; "
                "use ZipStore(path, mode='a') to write zip files"
            )

    @property
    def identity(self) -> str:
        if "::" in self.url:
            return self.url.rstrip("/")
        protocols = fs_protocols(self.fs)
        if "file" in protocols or "local" in protocols:
            # Same token as LocalStore over the same folder.
            return "file://" + os.path.realpath(self.root)
        ident = self.fs.unstrip_protocol(self.root)
        endpoint = self.storage_options.get("endpoint_url") or self.storage_options.get(
            "client_kwargs", {}
        ).get("endpoint_url")
        return f"{ident}@{endpoint}" if endpoint else ident

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

    @contextlib.contextmanager
    def _translate(self, key: str, *, write: bool = False) -> Iterator[None]:
        """The one place where backend errors become KeyError/ReadOnlyError."""
        try:
            yield
        except Exception as err:
            new = self._translated(key, err, write)
            if new is None:
                raise
            raise new from err

    def _path(self, key: str) -> str:
        return self._base + key

    # ------------------------------------------------------------ reading

    def _get(self, key: str) -> bytes:
        with self._translate(key):
            return bytes(self.fs.cat_file(self._path(key)))

    def _get_many(self, keys: list[str]) -> dict[str, bytes]:
        batch = [k for k in keys if not GLOB.search(k)]
        out: dict[str, bytes] = {}
        if batch:
            paths = {self._path(k): k for k in batch}
            # on_error="return" rather than "omit": only "not found" may turn into
            # a missing chunk; a network or permission error must surface instead
            # of silently reading as fill_value.
            results = self.fs.cat(list(paths), on_error="return")
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
            reader = open_fsspec_ranges(self.fs, self._path(key), key)
        # Without a way to notice changes, the value is fetched whole, which pins it.
        return reader if reader is not None else super()._open_ranges(key)

    def _info(self, key: str) -> dict[str, Any]:
        with self._translate(key):
            info = self.fs.info(self._path(key))
            if info.get("type") == "directory":
                raise IsADirectoryError(key)
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
            self.fs.pipe_file(self._path(key), bytes(value))

    def _set_many(self, items: dict[str, bytes | memoryview]) -> None:
        first = next(iter(items))
        with self._translate(first, write=True):
            self.fs.pipe({self._path(k): bytes(v) for k, v in items.items()})

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
        start = self._base + prefix + "/" if prefix else self._base
        cut = len(self._base)
        # find() on a file returns the file itself: keep only what lies below.
        return {p[cut:]: info for p, info in found.items() if p.startswith(start)}

    def _list_prefix(self, prefix: str) -> Iterator[str]:
        return iter(list(self._find(prefix)))

    def _list_dir(self, prefix: str) -> tuple[list[str], list[str]]:
        path = self._path(prefix) if prefix else self.root
        self.fs.invalidate_cache(path)
        try:
            entries = self.fs.ls(path, detail=True)
        except FileNotFoundError:
            return [], []
        start = path.rstrip("/") + "/"
        keys: list[str] = []
        dirs: list[str] = []
        for entry in entries:
            name = entry["name"].rstrip("/")
            if name.startswith(start):
                rest = name[len(start) :]
                (dirs if entry.get("type") == "directory" else keys).append(rest)
        return sorted(keys), sorted(dirs)

    def _getsize_prefix(self, prefix: str) -> int:
        return sum(int(info.get("size") or 0) for info in self._find(prefix).values())


def fs_protocols(fs: AbstractFileSystem) -> tuple[str, ...]:
    """The protocol names of an fsspec file system, as a tuple (fsspec gives a str or a
    tuple)."""
    protocol = fs.protocol
    return (protocol,) if isinstance(protocol, str) else tuple(protocol)
