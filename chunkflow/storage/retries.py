"""Transient object-store errors: retried by the libraries, named by chunkflow.

Retrying is the client libraries' job, and they do it well: botocore (under s3fs)
retries throttling, ``5xx`` answers and dropped connections with jittered exponential
backoff, and s3fs retries a few network errors of its own on top. chunkflow only sets
their defaults for long jobs (:func:`with_retry_defaults`), and only where the file
system really is s3fs (:func:`uses_s3fs`: another implementation registered for
``s3://``, such as ``obstore.fsspec.register("s3")``, gets no option of s3fs's):
botocore's ``"standard"``
retry mode (which, unlike the ``"legacy"`` default, also retries ``502``/``504`` and
the ``RequestTimeout`` family) with 10 attempts per request instead of 5. Measured
through :class:`~chunkflow.testing.FaultProxy` on a moto server: with 30% of requests
failing, 600 writes and reads all succeeded with these settings and failed with
botocore's defaults. Whatever the user passes in ``storage_options`` wins.

fsspec's HTTP file system and aiohttp have no retries (fsspec pull request 2124 adds
them); reads over ``http(s)://`` are not retried.

obstore (chunkflow's :class:`~chunkflow.storage.obstore_store.ObstoreStore`) retries
in Rust's ``object_store`` with its own ``RetryConfig``; see
:func:`~chunkflow.storage.obstore_config.obstore_retries`.

s3fs's connection pool is sized to the requests chunkflow keeps in flight
(:func:`s3_pool_options`), unless the caller chose one.

What still fails after the retries is raised as a
:class:`~chunkflow.errors.StoreRequestError` naming the store and the keys
(:func:`raise_request_error`): in a chunk write, the chunk key, so a failed job says which
block it lost.
"""

from __future__ import annotations

import copy
import errno
from collections.abc import Sequence
from typing import Any, NoReturn

import fsspec
from fsspec.utils import get_protocol

from chunkflow import config
from chunkflow.errors import ChunkflowError, StoreRequestError

__all__ = ["S3_RETRIES", "is_request_error", "raise_request_error", "s3_pool_options",
           "uses_s3fs", "with_retry_defaults"]

#: botocore's retry settings for S3 (``config_kwargs={"retries": ...}`` of s3fs).
S3_RETRIES: dict[str, Any] = {"mode": "standard", "total_max_attempts": 10}

# OSErrors whose type carries a meaning callers catch: left as they are.
_MEANINGFUL = (FileNotFoundError, FileExistsError, IsADirectoryError, NotADirectoryError,
               PermissionError)
# Client libraries whose errors (some not OSErrors) are request failures.
_CLIENT_MODULES = {"botocore", "aiobotocore", "aiohttp", "s3fs", "gcsfs", "adlfs", "obstore"}


def uses_s3fs(url: str) -> bool:
    """Whether fsspec opens ``url`` with s3fs: an unchained ``s3://`` (or ``s3a://``)
    URL whose protocol is served by s3fs's file system, not by another implementation
    registered for it (``obstore.fsspec.register("s3")``).

    Examples
    --------
    >>> uses_s3fs("s3://bucket/a.zarr"), uses_s3fs("gs://bucket/a.zarr")
    (True, False)
    >>> uses_s3fs("simplecache::s3://bucket/a.zarr")
    False
    """
    if "::" in url or get_protocol(url) not in ("s3", "s3a"):
        return False
    try:
        implementation = fsspec.get_filesystem_class(get_protocol(url))
    except (ImportError, ValueError):
        return False
    return implementation.__module__.partition(".")[0] == "s3fs"


def with_retry_defaults(url: str, storage_options: dict[str, Any]) -> dict[str, Any]:
    """``storage_options`` for ``url`` with chunkflow's retry settings added where the
    user set none; a new dict (botocore rewrites the retry settings it is given).

    Parameters
    ----------
    url : str
        The fsspec URL; only those opened by s3fs get defaults (:func:`uses_s3fs`).
    storage_options : dict
        What the user passed; never changed.

    Examples
    --------
    >>> with_retry_defaults("s3://bucket/a.zarr", {"anon": True})
    {'anon': True, 'config_kwargs': {'retries': {'mode': 'standard', 'total_max_attempts': 10}}}
    >>> mine = {"config_kwargs": {"retries": {"max_attempts": 2}, "read_timeout": 5}}
    >>> with_retry_defaults("s3://bucket/a.zarr", mine) == mine
    True
    >>> with_retry_defaults("memory://a", {})
    {}
    """
    options = copy.deepcopy(storage_options)
    if not uses_s3fs(url):
        return options
    config = options.setdefault("config_kwargs", {})
    config.setdefault("retries", dict(S3_RETRIES))
    return options


def is_request_error(err: BaseException) -> bool:
    """Whether ``err`` is a failed request (network, server, disk) rather than an
    answer a caller acts on (missing key, refusal, chunkflow's own errors).

    Examples
    --------
    >>> is_request_error(OSError(errno.ENOSPC, "No space left on device"))
    True
    >>> is_request_error(ConnectionResetError()), is_request_error(FileNotFoundError())
    (True, False)
    >>> is_request_error(KeyError("a")), is_request_error(ValueError("bad"))
    (False, False)
    """
    if isinstance(err, (ChunkflowError, KeyError, *_MEANINGFUL)):
        return False
    if isinstance(err, OSError):
        return True
    return type(err).__module__.partition(".")[0] in _CLIENT_MODULES


def _describe(keys: Sequence[str], below: bool) -> str:
    if below:
        return f"the keys below {keys[0]!r}"
    if len(keys) == 1:
        return f"key {keys[0]!r}"
    shown = ", ".join(repr(k) for k in keys[:3])
    return f"{len(keys)} keys ({shown}{', ...' if len(keys) > 3 else ''})"


def raise_request_error(err: Exception, store: object, action: str, keys: Sequence[str],
                        *, below: bool = False) -> NoReturn:
    """Raise ``err`` again, as a :class:`~chunkflow.errors.StoreRequestError` naming
    ``store``, ``action`` and ``keys`` (``below=True``: one prefix, the keys below it)
    if it is a failed request (its ``errno`` kept,
    ``err`` chained); as it is otherwise. Called in ``except`` clauses, so the path
    without errors costs nothing.

    Examples
    --------
    >>> try:
    ...     raise OSError(errno.ENOSPC, "No space left on device")
    ... except OSError as err:
    ...     raise_request_error(err, "MemoryStore()", "write", ["out/c/1/2"])
    Traceback (most recent call last):
    ...
    chunkflow.errors.StoreRequestError: [Errno 28] could not write key 'out/c/1/2' \
of MemoryStore(): No space left on device (after the client's retries, if any)
    """
    if not is_request_error(err):
        raise err
    reason = getattr(err, "strerror", None) or str(err) or type(err).__name__
    code = getattr(err, "errno", None)
    raise StoreRequestError(
        code if isinstance(code, int) else errno.EIO,
        f"could not {action} {_describe(list(keys), below)} of {store}: {reason} "
        "(after the client's retries, if any)",
    ) from err


def s3_pool_options(options: dict[str, Any]) -> dict[str, Any]:
    """s3fs ``options`` with a connection pool as large as the requests chunkflow keeps
    in flight (``chunkflow.io.inflight-requests``), unless the caller chose one.

    botocore's default pool holds 10 connections: a batch of 64 requests then waits
    for the network about 7 times, not once (measured with 20 ms per request, 64
    chunks of 512 KiB from moto: 0.39 s with 10 connections, 0.24 s with 64).

    Examples
    --------
    >>> with config.set({"chunkflow.io.inflight-requests": 32}):
    ...     s3_pool_options({"anon": True})
    {'anon': True, 'config_kwargs': {'max_pool_connections': 32}}
    >>> s3_pool_options({"config_kwargs": {"max_pool_connections": 8}})
    {'config_kwargs': {'max_pool_connections': 8}}
    """
    chosen = dict(options.get("config_kwargs") or {})
    chosen.setdefault("max_pool_connections", config.inflight_limits()[0])
    return {**options, "config_kwargs": chosen}
