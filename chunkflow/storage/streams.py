"""Values of many keys as they arrive (:meth:`Store.stream_many
<chunkflow.storage.Store.stream_many>`), and values written as they are made
(:meth:`Store.put_stream <chunkflow.storage.Store.put_stream>`).

On a latency-bound store a read of many chunks is two kinds of work: waiting for
requests (tens of milliseconds each, nothing to do but keep many in flight) and
decoding what came back (CPU). Fetching in batches and decoding each batch once it is
complete leaves the CPU idle while a batch is in the air and the connection idle while
a batch decodes. A stream instead keeps a window of requests in flight and hands each
value to whichever decoding thread is free as soon as it arrives, refilling the window
as values are consumed: fetch and decode overlap value by value. Writes are the
mirror image: each encoded chunk is sent as soon as it is encoded, while the threads
encode the next, with at most a window of them in flight.

Several threads consume one stream, each through its own :meth:`KeyStream.take`
iterator. A stream never holds more than ``window`` values, fetched or in flight,
beyond those its consumers are working on: a slot is given back (and the next request
sent) only when a consumer asks for its next value.
"""

from __future__ import annotations

import asyncio
import contextlib
import queue
import threading
from collections.abc import Callable, Coroutine, Iterator, Sequence
from concurrent.futures import Future
from typing import Any

__all__ = ["AsyncKeyStream", "AsyncPutStream", "BatchKeyStream", "BatchPutStream", "CheckedPuts",
           "KeyStream", "PutStream", "StreamItem"]

#: ``(key, value, version)``: ``value`` is ``None`` for a missing key, ``version``
#: ``None`` when the store cannot tell (see :data:`chunkflow.storage.base.Version`).
StreamItem = tuple[str, "bytes | memoryview | None", Any]


class KeyStream:
    """Values of a fixed list of keys, each handed out once, in arrival order.

    Use as a context manager: leaving it (normally or by an error) stops what is still
    pending, so an error in one consumer does not leave requests running.
    """

    def take(self) -> Iterator[StreamItem]:
        """One consumer's iterator over the stream; other threads may run their own
        at the same time, and each item goes to exactly one of them."""
        raise NotImplementedError

    def close(self) -> None:
        """Stop: consumers' iterators end, requests not yet answered are cancelled."""

    def __enter__(self) -> KeyStream:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class BatchKeyStream(KeyStream):
    """A stream over a store with no asynchronous requests: each consumer fetches the
    next ``batch`` keys with one batch call and yields them, so that with ``n``
    consumers ``n`` batches are in flight.

    Examples
    --------
    >>> fetch = lambda keys: [(k, k.upper().encode(), None) for k in keys if k != "b"]
    >>> with BatchKeyStream(fetch, ["a", "b", "c"], batch=2) as stream:
    ...     sorted((key, value) for key, value, _ in stream.take())
    [('a', b'A'), ('b', None), ('c', b'C')]
    """

    def __init__(self, fetch: Callable[[list[str]], list[StreamItem]], keys: Sequence[str],
                 batch: int) -> None:
        self._fetch = fetch
        self._keys = list(keys)
        self._batch = max(1, batch)
        self._next = 0
        self._lock = threading.Lock()
        self._closed = False

    def _claim(self) -> list[str]:
        with self._lock:
            if self._closed:
                return []
            start, self._next = self._next, min(self._next + self._batch, len(self._keys))
            return self._keys[start:self._next]

    def take(self) -> Iterator[StreamItem]:
        while keys := self._claim():
            found = {key: (value, version) for key, value, version in self._fetch(keys)}
            for key in keys:
                value, version = found.get(key, (None, None))
                yield key, value, version

    def close(self) -> None:
        with self._lock:
            self._closed = True


#: What a request of an :class:`AsyncKeyStream` gives its consumer: the key, the
#: fetch's ``(value, version)``, and the error it raised (or ``None``).
_Arrival = tuple[str, "tuple[bytes | memoryview | None, Any]", "Exception | None"]


class AsyncKeyStream(KeyStream):
    """A stream whose requests are coroutines run on an event loop in another thread
    (fsspec's, for its asynchronous file systems), at most ``window`` at a time.

    ``fetch(key)`` is a coroutine that returns the value (``None`` if missing) and its
    version; an exception it raises reaches the consumer that takes that key, which
    then raises it (the stream is closed on leaving the ``with`` block).

    The event loop sends the requests itself: it sends more each time one arrives, as
    many as consumers have freed slots since, and a consumer wakes it (a write to the
    loop's socket, and the loop's thread taking the GIL) only when half the window or
    more lies idle. Waking the loop for every value consumed, and wrapping each
    request in a thread-safe future, cost about 80 microseconds of interpreter time a
    request over the loop and the consuming threads (measured on 2 cores, 512 GETs of
    270 KiB over HTTP: 40 ms of the loop's time a read).

    Examples
    --------
    >>> import asyncio, threading
    >>> loop = asyncio.new_event_loop()
    >>> thread = threading.Thread(target=loop.run_forever, daemon=True)
    >>> thread.start()
    >>> async def fetch(key):
    ...     await asyncio.sleep(0.01)
    ...     return (None if key == "b" else key.encode()), None
    >>> with AsyncKeyStream(loop, fetch, ["a", "b", "c"], window=2) as stream:
    ...     sorted((key, value) for key, value, _ in stream.take())
    [('a', b'a'), ('b', None), ('c', b'c')]
    >>> _ = loop.call_soon_threadsafe(loop.stop)
    """

    def __init__(
        self,
        loop: asyncio.AbstractEventLoop,
        fetch: Callable[[str], Coroutine[Any, Any, tuple[bytes | memoryview | None, Any]]],
        keys: Sequence[str],
        window: int,
    ) -> None:
        self._loop = loop
        self._fetch = fetch
        self._keys = list(keys)
        self._next = 0
        self._remaining = len(self._keys)  # values no consumer has claimed yet
        self._window = max(1, window)
        self._free = self._window  # slots neither in flight nor held by consumers
        self._in_flight = 0
        self._woken = True  # a top-up is scheduled on the loop (the first, below)
        self._arrived: queue.SimpleQueue[_Arrival | None] = queue.SimpleQueue()
        self._tasks: set[asyncio.Task[None]] = set()
        self._lock = threading.Lock()
        self._closed = False
        loop.call_soon_threadsafe(self._top_up)

    def _top_up(self) -> None:
        """On the loop: send a request for every free slot."""
        with self._lock:
            self._woken = False
            if self._closed:
                return
            count = min(self._free, len(self._keys) - self._next)
            keys = self._keys[self._next:self._next + count]
            self._next += count
            self._free -= count
            self._in_flight += count
        for key in keys:
            task = self._loop.create_task(self._request(key))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

    async def _request(self, key: str) -> None:
        try:
            arrival: _Arrival = (key, await self._fetch(key), None)
        except Exception as err:  # noqa: BLE001 - raised by the consumer that takes it
            arrival = (key, (None, None), err)
        with self._lock:
            self._in_flight -= 1
        self._arrived.put(arrival)
        self._top_up()  # slots consumers freed since the last top-up

    def _release(self) -> None:
        """A consumer is done with a value: its slot is free; wake the loop to fill it
        if few requests remain in flight (else the next arrival fills it)."""
        with self._lock:
            self._free += 1
            if (self._woken or self._closed or self._next >= len(self._keys)
                    or self._in_flight > self._window // 2):
                return
            self._woken = True
        self._loop.call_soon_threadsafe(self._top_up)

    def _claim(self) -> bool:
        with self._lock:
            if self._closed or self._remaining == 0:
                return False
            self._remaining -= 1
            return True

    def take(self) -> Iterator[StreamItem]:
        while self._claim():
            arrival = self._arrived.get()
            if arrival is None or self._closed:
                self._arrived.put(None)  # closed: pass the wake-up on to the next waiter
                return
            key, (value, version), error = arrival
            if error is not None:
                raise error
            yield key, value, version
            self._release()  # the consumer is done with the last value: a free slot

    def close(self) -> None:
        with self._lock:
            if self._closed:
                return
            self._closed = True
            self._remaining = 0
        with contextlib.suppress(RuntimeError):  # the loop is closed: nothing runs
            self._loop.call_soon_threadsafe(self._cancel)
        self._arrived.put(None)  # wakes the consumers waiting for an arrival, in turn

    def _cancel(self) -> None:
        for task in list(self._tasks):
            task.cancel()


class PutStream:
    """A sink for values written one at a time, sent while the writer prepares the
    next: :meth:`Store.put_stream <chunkflow.storage.Store.put_stream>`.

    :meth:`put` may be called from several threads at once; it blocks while the
    window is full. Leaving the ``with`` block waits for every value sent, announces
    the written keys to the caches of this process (see
    :mod:`chunkflow.storage.coherence`), also after a failure (part of the change may
    have landed), and raises the first failed write's error. :attr:`versions` then
    names what each write stored (``None``: unknown).
    """

    def __init__(self, announce: Callable[[list[str]], None]) -> None:
        self._announce = announce
        self._keys: list[str] = []
        self._lock = threading.Lock()
        self.versions: dict[str, Any] = {}

    def put(self, key: str, value: bytes | memoryview) -> None:
        """Send ``value`` to ``key`` (a key normalized and checked by the caller)."""
        raise NotImplementedError

    def _wait(self) -> None:
        """Return once every value put has been written; raise the first error."""
        raise NotImplementedError

    def _abandon(self) -> None:
        """Stop what has not been sent (the writer failed)."""

    def __enter__(self) -> PutStream:
        return self

    def __exit__(self, kind: type[BaseException] | None, *exc: object) -> None:
        try:
            if kind is not None:
                self._abandon()
            self._wait()
        finally:
            with self._lock:
                keys = list(self._keys)
            if keys:
                self._announce(keys)


class BatchPutStream(PutStream):
    """Values gathered into batches of ``batch``, each written with one call of
    ``write`` by the thread that fills it (so ``n`` writing threads keep ``n``
    batches in flight); the last, partial batch goes on leaving.

    Examples
    --------
    >>> written = {}
    >>> def write(items):
    ...     written.update(items)
    ...     return dict.fromkeys(items, "v1")
    >>> with BatchPutStream(write, batch=2, announce=print) as sink:
    ...     for key in "abc":
    ...         sink.put(key, key.encode())
    ['a', 'b', 'c']
    >>> written, sink.versions["c"]
    ({'a': b'a', 'b': b'b', 'c': b'c'}, 'v1')
    """

    def __init__(self, write: Callable[[dict[str, bytes | memoryview]], dict[str, Any]],
                 batch: int, announce: Callable[[list[str]], None]) -> None:
        super().__init__(announce)
        self._write = write
        self._batch = max(1, batch)
        self._gathered: dict[str, bytes | memoryview] = {}

    def _send(self, items: dict[str, bytes | memoryview]) -> None:
        versions = self._write(items)
        with self._lock:
            self.versions.update(versions)

    def put(self, key: str, value: bytes | memoryview) -> None:
        with self._lock:
            self._keys.append(key)
            self._gathered[key] = value
            if len(self._gathered) < self._batch:
                return
            full, self._gathered = self._gathered, {}
        self._send(full)

    def _abandon(self) -> None:
        with self._lock:
            self._gathered = {}

    def _wait(self) -> None:
        with self._lock:
            rest, self._gathered = self._gathered, {}
        if rest:
            self._send(rest)


class AsyncPutStream(PutStream):
    """Each value sent at once as a coroutine on an event loop in another thread
    (fsspec's), at most ``window`` in flight; ``write(key, value)`` returns the
    stored version (or ``None``).

    Examples
    --------
    >>> import asyncio, threading
    >>> loop = asyncio.new_event_loop()
    >>> thread = threading.Thread(target=loop.run_forever, daemon=True)
    >>> thread.start()
    >>> stored = {}
    >>> async def write(key, value):
    ...     await asyncio.sleep(0.01)
    ...     stored[key] = bytes(value)
    >>> with AsyncPutStream(loop, write, window=2, announce=print) as sink:
    ...     for key in "abc":
    ...         sink.put(key, key.encode())
    ['a', 'b', 'c']
    >>> sorted(stored.items())
    [('a', b'a'), ('b', b'b'), ('c', b'c')]
    >>> _ = loop.call_soon_threadsafe(loop.stop)
    """

    def __init__(
        self,
        loop: asyncio.AbstractEventLoop,
        write: Callable[[str, bytes | memoryview], Coroutine[Any, Any, Any]],
        window: int,
        announce: Callable[[list[str]], None],
    ) -> None:
        super().__init__(announce)
        self._loop = loop
        self._write = write
        self._slots = threading.BoundedSemaphore(max(1, window))
        self._sent: list[tuple[str, Future[Any]]] = []
        self._failed: BaseException | None = None

    def put(self, key: str, value: bytes | memoryview) -> None:
        self._slots.acquire()
        with self._lock:
            if self._failed is not None:  # fail fast: the job will not succeed
                self._slots.release()
                raise self._failed
            self._keys.append(key)
            future = asyncio.run_coroutine_threadsafe(self._write(key, value), self._loop)
            self._sent.append((key, future))
        future.add_done_callback(self._done)

    def _done(self, future: Future[Any]) -> None:
        if not future.cancelled() and future.exception() is not None:
            with self._lock:
                if self._failed is None:
                    self._failed = future.exception()
        self._slots.release()

    def _abandon(self) -> None:
        with self._lock:
            sent = list(self._sent)
        for _, future in sent:
            future.cancel()

    def _wait(self) -> None:
        with self._lock:
            sent = list(self._sent)
        first: BaseException | None = None
        for key, future in sent:
            try:
                version = future.result()
            except BaseException as err:  # noqa: BLE001 - the first one is raised below
                if first is None and not future.cancelled():
                    first = err
                continue
            self.versions[key] = version
        if first is not None:
            raise first


class CheckedPuts(PutStream):
    """A :class:`PutStream` that passes each value through ``check(key, value)`` (which
    returns the checked key and buffer, or raises) before putting it into ``inner``.

    Examples
    --------
    >>> def check(key, value):
    ...     if not isinstance(value, bytes):
    ...         raise TypeError(f"{key}: bytes expected")
    ...     return key.strip("/"), value
    >>> with CheckedPuts(check, BatchPutStream(lambda items: {}, 8, print)) as sink:
    ...     sink.put("/a", b"1")
    ['a']
    """

    def __init__(self, check: Callable[[str, Any], tuple[str, bytes | memoryview]],
                 inner: PutStream) -> None:
        self._check = check
        self._inner = inner
        self.versions = inner.versions  # the same dict: filled by the inner stream

    def put(self, key: str, value: Any) -> None:
        self._inner.put(*self._check(key, value))

    def __enter__(self) -> PutStream:
        self._inner.__enter__()
        return self

    def __exit__(self, kind: type[BaseException] | None, *exc: object) -> None:
        self._inner.__exit__(kind, *exc)
