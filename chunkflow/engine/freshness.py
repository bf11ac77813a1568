"""When a cached chunk may be used, and proving it current against the store.

Two uses, two rules:

- **Reads** (:func:`serve_hits`) follow the handle's ``recheck_cached_data`` policy
  (its values are described in :mod:`chunkflow.config`): a cached copy last proven
  current before the policy's threshold is compared with the store's version of the
  chunk first (one ``Store.versions`` call for all of them).
  Equal versions make it current again; anything else (changed, deleted, or a store
  that cannot tell) drops it, and the chunk is read from the store.
- **Partial-chunk writes** (:func:`current_copies`) start from a cached copy only when
  the store's version proves it current right now, whatever the policy: a write that
  started from an outdated copy would erase another writer's completed write.

Within one process no check is needed for the writes of this process: every store
change reaches every cache at once (see :mod:`chunkflow.storage.coherence`).
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Protocol, cast

import numpy as np

from chunkflow.cache import CachedChunk, ChunkCache
from chunkflow.indexing import ChunkProjection
from chunkflow.indexing.plans import KeptProjections

if TYPE_CHECKING:
    from chunkflow.engine.chunk_space import ChunkSpace
    from chunkflow.grid import RegularChunkGrid
    from chunkflow.storage import Store

__all__ = [
    "UNCHANGED_MAX_BYTES", "current_copies", "recheck", "recheck_threshold", "serve_hits",
    "unchanged_window",
]


def recheck_threshold(policy: bool | str | float, opened_at: float) -> float:
    """Entries last proven current before this ``time.monotonic()`` must be checked.

    Examples
    --------
    >>> recheck_threshold("open", opened_at=12.0)
    12.0
    >>> recheck_threshold(True, 0.0), recheck_threshold(False, 0.0)
    (inf, -inf)
    """
    if policy is True:
        return math.inf
    if policy is False:
        return -math.inf
    if policy == "open":
        return opened_at
    return time.monotonic() - float(policy)


def serve_hits(
    io: ChunkSpace, cache: ChunkCache, projections: Sequence[ChunkProjection], out: np.ndarray,
    policy: bool | str | float | None = None,
) -> Sequence[ChunkProjection]:
    """Copy the usable cached chunks into ``out``; return the projections left to read.

    ``policy`` is the handle's recheck policy, if the caller has it at hand.

    A hit costs one cache lookup (one lock for all the chunks), a comparison of when
    the entry was last proven current with the policy's threshold, and the copy. The
    chunks' keys of a kept plan (a window read again) are derived once.

    A kept plan that the cache served wholly twice in a row, with nothing else
    touching the cache in between, keeps what it assembled (a window of at most
    :data:`UNCHANGED_MAX_BYTES`) for as long as the cache stays untouched: reading it
    again (:func:`unchanged_window`) is then one copy, and leaves the cache exactly as
    a lookup would (its chunks are already the most recent, in this order).
    """
    keyed, locations = _keys_of(io, projections)
    kept = projections if isinstance(projections, KeptProjections) else None
    found, stamp = cache.lookup_stamped(locations)
    if not found:
        return projections
    if policy is None:
        policy = io.options.resolve_recheck()
    threshold = recheck_threshold(policy, io.opened_at)
    dtype, shape = io.pipeline.dtype, io.grid.chunks
    if len(found) == len(locations):
        # The usual hit (a window read again): nothing to recheck, nothing left to read.
        for proj, loc in zip(projections, locations):
            hit = found[loc]
            chunk = hit.chunk
            if hit.checked < threshold or chunk.shape != shape or (
                    chunk.dtype is not dtype and chunk.dtype != dtype):
                break  # the general way below (copying again what was copied is harmless)
            out[proj.out_selection] = chunk[proj.chunk_selection]
        else:
            if kept is not None and stamp is not None:
                last, kept.stamp = kept.stamp, stamp
                if last is not None and stamp == last + 1:  # twice in a row: keep it
                    _keep_window(io, cache, kept, out, stamp,
                                 [found[loc] for loc in locations])
            return ()
    due = [(key, loc) for key, loc in keyed if loc in found and found[loc].checked < threshold]
    if due:
        recheck(io, cache, found, due)
    misses = []
    for proj, loc in zip(projections, locations):
        entry = found.get(loc)
        if entry is None:
            misses.append(proj)
            continue
        chunk = entry.chunk
        # A chunk of another dtype or shape can only be a leftover of an array that
        # was replaced behind this process's back: never serve it.
        if chunk.shape != shape or chunk.dtype != dtype:
            misses.append(proj)
        else:
            out[proj.out_selection] = chunk[proj.chunk_selection]
    return misses


#: The largest window a cache keeps assembled (one per cache, while it is untouched):
#: past this, a read is dominated by its copy, and the window would only take memory.
UNCHANGED_MAX_BYTES = 1 << 20


def unchanged_window(io: ChunkSpace, cache: ChunkCache, projections: KeptProjections,
                     shape: tuple[int, ...], policy: bool | str | float) -> np.ndarray | None:
    """A copy of the window read through ``projections`` that ``cache`` kept, if it
    has not changed since and ``policy`` still takes the chunks it came from as
    current; else ``None`` (read the general way: :func:`serve_hits`)."""
    kept = cache.changes.kept(projections)
    if kept is None:
        return None
    owner, oldest, window = cast("tuple[ChunkSpace, float, np.ndarray]", kept)
    if owner is not io or window.shape != shape \
            or oldest < recheck_threshold(policy, io.opened_at):
        return None  # another handle's, or a chunk is due for a recheck
    cache.count_hits(len(projections))
    return window.copy()


def _keep_window(io: ChunkSpace, cache: ChunkCache, projections: KeptProjections,
                 out: np.ndarray, stamp: int, entries: list[CachedChunk]) -> None:
    """Keep the window ``out`` assembled from ``entries`` (found at ``stamp``), if it
    is small enough, with when the oldest of them was last proven current. Only a
    window in the chunks' own dtype is kept: every read of the handle is in it, so a
    kept window never needs a cast (nor a check of its dtype when it is read)."""
    if out.nbytes <= UNCHANGED_MAX_BYTES and out.dtype == io.pipeline.dtype:
        window = out.copy()
        window.flags.writeable = False
        oldest = min(entry.checked for entry in entries)
        cache.changes.keep(projections, stamp, (io, oldest, window))


def _keys_of(io: ChunkSpace,
             projections: Sequence[ChunkProjection]) -> tuple[list[tuple[str, str]], list[str]]:
    """The ``(store key, location)`` of each projection's chunk, and the locations:
    remembered with a kept plan's projections (for this chunk space only)."""
    derived = getattr(projections, "derived", None)
    if derived is not None and derived[0] is io:
        return derived[1], derived[2]
    keys = io.keys
    keyed = [keys(proj.chunk_coords) for proj in projections]
    locations = [loc for _, loc in keyed]
    if isinstance(projections, KeptProjections):
        projections.derived = (io, keyed, locations)
    return keyed, locations


def recheck(
    io: ChunkSpace, cache: ChunkCache, found: dict[str, CachedChunk], due: list[tuple[str, str]]
) -> None:
    """Compare ``due`` entries with the store; drop the outdated ones from ``found``.

    ``due`` pairs a store key with a cache key: a chunk's, or an inner chunk's with its
    shard's key (an inner chunk is current when its shard is).
    """
    # An entry cached without a version can never be proven current: asking the store
    # for its version would only cost a request (a HEAD on object stores).
    asked = [key for key, loc in due if found[loc].version is not None]
    current = io.store.versions(asked) if asked else {}
    now = time.monotonic()
    stale = 0
    for key, loc in due:
        entry = found[loc]
        version = current.get(key)
        if version is not None and version == entry.version:
            entry.checked = now
        else:
            stale += 1
            del found[loc]
            cache.discard(loc)
    cache.count_rechecks(len(due), stale)


class _CopySource(Protocol):
    """What :func:`current_copies` needs of a chunk space (a ``ChunkSpace`` or the
    ``ChunkWriter`` of a write)."""

    store: Store
    grid: RegularChunkGrid
    pipeline: Any

    def location(self, key: str) -> str: ...


def current_copies(io: _CopySource, cache: ChunkCache, keys: list[str]) -> dict[str, np.ndarray]:
    """Writable copies of the cached chunks among ``keys`` that the store's versions
    prove current now (the others are left out, to be read from the store)."""
    locations = {key: io.location(key) for key in keys}
    found = cache.lookup(list(locations.values()))
    candidates = [key for key in keys if locations[key] in found]
    if not candidates:
        return {}
    asked = [key for key in candidates if found[locations[key]].version is not None]
    current = io.store.versions(asked) if asked else {}
    dtype, shape = io.pipeline.dtype, io.grid.chunks
    copies = {}
    for key in candidates:
        entry = found[locations[key]]
        version = current.get(key)
        proven = version is not None and version == entry.version
        if proven and entry.chunk.dtype == dtype and entry.chunk.shape == shape:
            copies[key] = entry.chunk.copy()  # cached chunks are read-only
    cache.count_rechecks(len(candidates), len(candidates) - len(copies))
    return copies
