"""The thread pool that fetches, decodes and encodes chunks.

numcodecs compressors and file reads release the GIL, so a small pool of threads
turns a multi-chunk read of large chunks into parallel work. Small chunks run
inline: each one releases and retakes the GIL several times (open, read, close,
decompress) for a few microseconds of work, and with two threads the hand-overs cost
more than the overlap gains (measured: 8 KiB chunks read 30% slower with 2 threads,
2 MiB chunks 2.3x faster). The pool also steps aside when the call already runs in a
worker thread (a dask task, a user's own pool): nesting pools only adds contention,
and dask already supplies the parallelism there.

Latency-bound stores (object stores, HTTP: ``Store.latency_bound``) are another
matter: there a request waits 10-100 ms for the network, and speed comes from many
requests in flight, not from threads. Their reads are streams
(:meth:`~chunkflow.storage.Store.stream_many`) that keep the in-flight budget of
requests out (:func:`inflight_window`) while the threads decode each chunk as it
arrives; their writes go in large batches (:func:`batch_chunks`), each one store call
that fsspec sends concurrently on its event loop.
"""

from __future__ import annotations

import contextlib
import math
import os
import threading
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

import dask.config

from chunkflow import config
from chunkflow.config.resources import usable_cores

__all__ = ["PARALLEL_MIN_CHUNK_BYTES", "batch_chunks", "inflight_window",
           "io_lanes", "io_threads", "map_groups", "map_sharing", "serial_io", "split_groups"]

#: Chunks smaller than this are fetched and decoded inline (see the module docstring).
PARALLEL_MIN_CHUNK_BYTES = 256 * 1024

T = TypeVar("T")
R = TypeVar("R")

_pool: ThreadPoolExecutor | None = None
_pool_size = 0
_pool_lock = threading.Lock()


class _Local(threading.local):
    serial = False  # a class default: reading it in a thread that never set it is cheap


_local = _Local()
_threads_memo: tuple[object, int | None] | None = None


@contextlib.contextmanager
def serial_io() -> Iterator[None]:
    """Read and write chunks in the calling thread only, inside this block.

    Tasks of a dask graph run under it: dask already runs one task per core, and a
    pool per task would oversubscribe the cores (a process-based worker runs its tasks
    in its main thread, where the pool would otherwise step in).

    Examples
    --------
    >>> with serial_io():
    ...     map_groups(len, [1, 2, 3])
    [3]
    """
    previous = _local.serial
    _local.serial = True
    try:
        yield
    finally:
        _local.serial = previous


def io_threads() -> int:
    """Threads for chunk I/O: the setting ``chunkflow.io.threads``.

    Decoding, encoding and copying keep a core busy, and reads from the page cache are
    short: one thread per core was fastest (measured on 2 cores, 8192x8192 uint16 in
    2 MiB chunks: 64 ms to write and 24 ms to read with 2 threads, 77 ms and 29 ms
    with 4), which is the default (``"auto"``). Set it higher for storage with long
    latencies: ``chunkflow.config.set({"chunkflow.io.threads": 16})``.

    Examples
    --------
    >>> io_threads() >= 1
    True
    """
    global _threads_memo
    try:
        raw = dask.config.config["chunkflow"]["io"]["threads"]
    except (KeyError, TypeError):
        return config.get("chunkflow.io.threads")
    # Parsed again only when the raw value changes (the very same object parses to the
    # same count): config.get costs several microseconds, and every read asks.
    memo = _threads_memo
    if memo is None or memo[0] is not raw:
        threads: int = config.get("chunkflow.io.threads")
        memo = _threads_memo = (raw, None if config.is_auto(raw) else threads)
    return usable_cores() if memo[1] is None else memo[1]


def batch_chunks(chunk_bytes: int, threads: int | None = None) -> int:
    """Chunks per store call (one batch) of a latency-bound store, for chunks of
    ``chunk_bytes`` decoded bytes.

    As many as :func:`~chunkflow.config.inflight_limits` allow when each of ``threads`` (default
    :func:`io_threads`; a dask computation runs that many tasks at once) has one batch
    in flight: ``min(requests, bytes // chunk_bytes) // threads``, at least 1. So a
    read holds at most its budget of fetched chunks, whatever its size (a chunk
    larger than the budget still goes, one per thread).

    Examples
    --------
    >>> with config.set({"chunkflow.io.inflight-requests": 64,
    ...                  "chunkflow.io.inflight-bytes": "32 MiB"}):
    ...     batch_chunks(2**19, threads=2), batch_chunks(2**20, threads=2)
    (32, 16)
    """
    size = max(chunk_bytes, 1)
    requests, budget = config.inflight_limits()
    return max(1, min(requests, budget // size) // (threads or io_threads()))


def io_lanes(items: int) -> int:
    """Threads a call from this thread spreads ``items`` over: the I/O threads (the
    caller's included) from the main thread, else 1 (see :func:`map_groups`).

    Examples
    --------
    >>> with config.set({"chunkflow.io.threads": 3}):
    ...     io_lanes(100), io_lanes(1)
    (3, 1)
    """
    return _pool_threads(True, range(items))


def inflight_window(chunk_bytes: int, lanes: int) -> int:
    """Requests one streamed read keeps in flight (see
    :meth:`~chunkflow.storage.Store.stream_many`) for chunks of ``chunk_bytes``
    decoded bytes, consumed by ``lanes`` threads: ``lanes`` threads' shares of the
    in-flight budget (:func:`batch_chunks`). From the main thread that is the whole
    budget; a dask task, which runs beside ``io_threads()`` others, takes one share.

    Examples
    --------
    >>> with config.set({"chunkflow.io.inflight-requests": 64,
    ...                  "chunkflow.io.inflight-bytes": "32 MiB", "chunkflow.io.threads": 2}):
    ...     inflight_window(2**19, lanes=2), inflight_window(2**19, lanes=1)
    (64, 32)
    """
    return batch_chunks(chunk_bytes) * lanes


def _get_pool() -> ThreadPoolExecutor:
    global _pool, _pool_size
    threads = io_threads()
    with _pool_lock:
        if _pool is None or _pool_size != threads:
            # The setting changed: a new pool; the old one finishes its tasks and exits.
            if _pool is not None:
                _pool.shutdown(wait=False)
            _pool = ThreadPoolExecutor(threads, thread_name_prefix="chunkflow-io")
            _pool_size = threads
        return _pool


def _forget_pool() -> None:
    # A forked child inherits the pool object but not its threads.
    global _pool, _pool_lock
    _pool = None
    _pool_lock = threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_pool)


def split_groups(items: Sequence[T], max_groups: int) -> list[Sequence[T]]:
    """Split ``items`` into at most ``max_groups`` contiguous, near-equal groups.

    Examples
    --------
    >>> [list(g) for g in split_groups(range(5), 2)]
    [[0, 1, 2], [3, 4]]
    >>> split_groups([], 4)
    []
    """
    n = len(items)
    if n == 0:
        return []
    count = max(1, min(max_groups, n))
    size, extra = divmod(n, count)
    groups = []
    start = 0
    for i in range(count):
        stop = start + size + (1 if i < extra else 0)
        groups.append(items[start:stop])
        start = stop
    return groups


def _pool_threads(parallel: bool, items: Sequence[object]) -> int:
    """Threads to spread ``items`` over: 1 (run inline) unless ``parallel``, there are
    several items, and the caller is neither a worker thread nor inside
    :func:`serial_io`."""
    if (
        not parallel
        or len(items) <= 1
        or threading.current_thread() is not threading.main_thread()
        or _local.serial
    ):
        return 1
    return io_threads()


def map_groups(
    func: Callable[[Sequence[T]], R], items: Sequence[T], *, parallel: bool = True,
    batch: int | None = None,
) -> list[R]:
    """Apply ``func`` to groups of ``items``, in parallel when that helps.

    Work runs inline when ``parallel`` is false, when there is a single item, when
    the caller is not the main thread (already inside a worker), or inside
    :func:`serial_io`. Otherwise the items are split into a few groups per thread, so
    that batch store calls stay large while the load stays balanced; with ``batch``
    (one store call's worth of chunks; a latency-bound store's :func:`batch_chunks`),
    into groups of at most that many items, which the threads take as they become
    free: a thread slowed down (by another process on its core) takes fewer, and on a
    latency-bound store every thread keeps a full batch in flight.

    Examples
    --------
    >>> sum(map_groups(sum, list(range(100))))
    4950
    """
    threads = _pool_threads(parallel, items)
    if threads == 1:
        return [func(items)] if items else []
    count = threads * 2 if batch is None else max(threads, math.ceil(len(items) / batch))
    groups = split_groups(items, count)
    return list(_get_pool().map(func, groups))


def map_sharing(
    func: Callable[[Sequence[T]], R], items: Sequence[T], *, parallel: bool = True
) -> list[R]:
    """:func:`map_groups` for a few items of short work: one group per thread, the
    caller's thread taking the first.

    The caller would otherwise sit idle while the pool works; taking a share itself
    saves a hand-over (tens of microseconds, the size of the work when a window
    decodes four small inner chunks) and keeps no more threads busy than the pool has.

    Examples
    --------
    >>> sum(map_sharing(sum, list(range(10))))
    45
    """
    threads = _pool_threads(parallel, items)
    if threads == 1:
        return [func(items)] if items else []
    first, *rest = split_groups(items, threads)
    pool = _get_pool()
    futures = [pool.submit(func, group) for group in rest]
    try:
        results = [func(first)]
    except BaseException:
        for future in futures:
            future.cancel()
        raise
    return results + [future.result() for future in futures]
