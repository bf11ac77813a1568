"""A store that checksums the chunks written to it and keeps none of them.

:class:`ChecksumStore` is an output for jobs too large to store (with
:class:`~chunkflow.testing.synthetic.SyntheticStore` as their source, see
``benchmarks/bench_scale.py``): chunkflow writes into it as into any store, and it
keeps only what readers need to open the arrays (metadata documents, and the chunks
of the array paths named in ``keep``). Every other write is discarded after adding
to a :class:`Tally` of its process: how many chunks and bytes, and a checksum that
does not depend on the order of the writes,

    ``sum(crc32(value, crc32(key))) mod 2**64`` over the chunks written,

which :func:`checksum` computes for any mapping of keys to bytes (a zarr-python
store's chunks, for instance), so a test compares a job's output with numpy's
without storing it. Job bookkeeping (records under ``.chunkflow-job/``) is counted
apart and not checksummed.

Tallies live in the process that wrote: :meth:`ChecksumStore.collect` adds up this
process's and, given a ``distributed`` client, its workers' (``client.run``). A chunk
written twice (a retried task) counts twice. The store pickles by value (its
identity, the documents kept so far and its ``backing`` store), so workers write into
tallies of the same identity; with ``keep``, give a ``backing`` store every process
reaches (a folder).

Examples
--------
>>> import numpy as np
>>> import chunkflow
>>> sink = ChecksumStore()
>>> z = chunkflow.create((4, 4), chunks=(2, 2), dtype="u1", store=sink, compressor=None)
>>> z[:] = np.arange(16, dtype="u1").reshape(4, 4)
>>> tally = sink.collect()
>>> tally.chunks, tally.bytes
(4, 16)
>>> reference = chunkflow.create((4, 4), chunks=(2, 2), dtype="u1", compressor=None)
>>> reference[:] = np.arange(16, dtype="u1").reshape(4, 4)
>>> tally.checksum == checksum({k: reference.store[k] for k in ("c/0/0", "c/0/1",
...                                                          "c/1/0", "c/1/1")})
True
>>> sink.list_dir("")
(['zarr.json'], [])
"""

from __future__ import annotations

import threading
import uuid
import zlib
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from chunkflow.errors import KeyNotFoundError
from chunkflow.jobs import RECORDS_FOLDER, WRITTEN_KEY
from chunkflow.storage import Store

__all__ = ["ChecksumStore", "Tally", "checksum", "process_tally"]

_DOCUMENTS = frozenset({"zarr.json", ".zarray", ".zattrs", ".zgroup", ".zmetadata", WRITTEN_KEY})
_MASK = (1 << 64) - 1

# identity -> [chunks, bytes, checksum, bookkeeping writes, reads of discarded keys]
_TALLIES: dict[str, list[int]] = {}
_TALLY_LOCK = threading.Lock()


@dataclass(frozen=True)
class Tally:
    """What a :class:`ChecksumStore` was given: chunks, their bytes and checksum, job
    records written, and reads of keys it discarded (which read as missing)."""

    chunks: int = 0
    bytes: int = 0
    checksum: int = 0
    records: int = 0
    misses: int = 0

    def __add__(self, other: Tally) -> Tally:
        return Tally(self.chunks + other.chunks, self.bytes + other.bytes,
                     (self.checksum + other.checksum) & _MASK, self.records + other.records,
                     self.misses + other.misses)


def checksum(items: Mapping[str, bytes] | Iterable[tuple[str, bytes]]) -> int:
    """The checksum of chunks (key, bytes) as :class:`ChecksumStore` computes it.

    Examples
    --------
    >>> checksum({"a": b"1", "b": b"2"}) == checksum([("b", b"2"), ("a", b"1")])
    True
    """
    pairs = items.items() if isinstance(items, Mapping) else items
    return sum(_crc(key, bytes(value)) for key, value in pairs) & _MASK


def _crc(key: str, value: bytes | memoryview) -> int:
    return zlib.crc32(value, zlib.crc32(key.encode()))


def process_tally(identity: str) -> Tally:
    """This process's tally of the sink ``identity`` (what ``client.run`` calls on
    each worker)."""
    with _TALLY_LOCK:
        return Tally(*_TALLIES.get(identity, [0, 0, 0, 0, 0]))


def _add(identity: str, index: int, amount: int, size: int = 0) -> None:
    with _TALLY_LOCK:
        entry = _TALLIES.setdefault(identity, [0, 0, 0, 0, 0])
        entry[index] += amount
        if index == 0:
            entry[1] += size


class ChecksumStore(Store):
    """A sink: keeps metadata (and the chunks of ``keep``), checksums and drops chunks.

    Parameters
    ----------
    keep : iterable of str
        Array paths (``"1"``, ``"labels/a"``; ``""`` for a root array) whose chunks are
        stored in ``backing`` rather than discarded, for jobs that read back what they
        wrote (a pyramid's stages read the level the previous stage wrote).
    backing : Store, optional
        Where kept keys go. Default: a dictionary inside the store, pickled with it
        (metadata written by the client reaches the workers, nothing flows back).
    name : str, optional
        A label in the identity and ``repr``.

    Examples
    --------
    >>> import pickle
    >>> sink = ChecksumStore(name="out")
    >>> sink["c/0/0"] = b"abc"
    >>> "c/0/0" in sink, sink.collect().chunks
    (False, 1)
    >>> pickle.loads(pickle.dumps(sink)) == sink
    True
    """

    def __init__(self, *, keep: Iterable[str] = (), backing: Store | None = None,
                 name: str | None = None, identity: str | None = None) -> None:
        self.keep = tuple(sorted(set(keep)))
        self.backing = backing
        self.name = name
        self._identity = identity or f"checksum:{name + ':' if name else ''}{uuid.uuid4().hex}"
        self._kept: dict[str, bytes] = {}
        self._lock = threading.Lock()

    @property
    def identity(self) -> str:
        return self._identity

    def __repr__(self) -> str:
        return f"ChecksumStore(name={self.name!r}, keep={self.keep!r})"

    def __reduce__(self) -> tuple[Any, ...]:
        return (_rebuild, (self.keep, self.backing, self.name, self._identity,
                           dict(self._kept)))

    def collect(self, client: Any = None) -> Tally:
        """The tally of this process plus, with a ``distributed`` client, its workers'."""
        total = process_tally(self.identity)
        if client is not None:
            for tally in client.run(process_tally, self.identity).values():
                total = total + tally
        return total

    def reset(self, client: Any = None) -> None:
        """Forget the tallies (here and, with a client, on its workers)."""
        _forget(self.identity)
        if client is not None:
            client.run(_forget, self.identity)

    # ------------------------------------------------------------- hooks

    def _kind(self, key: str) -> str:
        """``"kept"``, ``"record"`` or ``"chunk"``."""
        folder, _, name = key.rpartition("/")
        if name in _DOCUMENTS or name.startswith(".z"):
            return "kept"
        if f"/{RECORDS_FOLDER}/" in f"/{key}":
            return "record"
        if any(folder == path or folder.startswith(f"{path}/") if path else True
               for path in self.keep):
            return "kept"
        return "chunk"

    def _target(self) -> Store | dict[str, bytes]:
        return self.backing if self.backing is not None else self._kept

    def _get(self, key: str) -> bytes:
        if self._kind(key) != "kept":
            _add(self.identity, 4, 1)
            raise KeyNotFoundError(key)
        try:
            return self._target()[key]
        except KeyError:
            raise KeyNotFoundError(key) from None

    def _set(self, key: str, value: bytes | memoryview) -> None:
        kind = self._kind(key)
        if kind == "chunk":
            crc = _crc(key, value)
            with _TALLY_LOCK:
                entry = _TALLIES.setdefault(self.identity, [0, 0, 0, 0, 0])
                entry[0] += 1
                entry[1] += len(value)
                entry[2] = (entry[2] + crc) & _MASK
        elif kind == "record":
            _add(self.identity, 3, 1)
        else:
            with self._lock:
                self._target()[key] = bytes(value)

    def _delete(self, key: str) -> None:
        if self._kind(key) != "kept":
            raise KeyNotFoundError(key)
        with self._lock:
            try:
                del self._target()[key]
            except KeyError:
                raise KeyNotFoundError(key) from None

    def _contains(self, key: str) -> bool:
        return self._kind(key) == "kept" and key in self._target()

    def _list_prefix(self, prefix: str) -> Iterator[str]:
        target = self._target()
        if isinstance(target, Store):
            return target.list_prefix(prefix)
        start = prefix + "/" if prefix else ""
        with self._lock:
            return iter([key for key in target if key.startswith(start)])


def _forget(identity: str) -> None:
    with _TALLY_LOCK:
        _TALLIES.pop(identity, None)


def _rebuild(keep: tuple[str, ...], backing: Store | None, name: str | None, identity: str,
             kept: dict[str, bytes]) -> ChecksumStore:
    store = ChecksumStore(keep=keep, backing=backing, name=name, identity=identity)
    store._kept.update(kept)
    return store
