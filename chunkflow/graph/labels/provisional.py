"""A block's local labels kept from the first pass for the write pass, so that a
block is labelled once where it can be.

The first pass (``scan``) labels every block, keeps its faces and info, and puts the
labels in the process's decoded-chunk cache (:func:`chunkflow.cache.default_cache`),
under the cache's budget (``chunkflow.cache.max-bytes``, least recently used evicted
first), as the labeller gave them (no copy), with the first row of each label
(:func:`~chunkflow.graph.labels.geometry.first_rows`). The write pass of the same
block takes them out (and drops them) instead of labelling the block again.
Where they are not there (evicted, the write runs in another process, the cache is
disabled or set to 0 bytes), the block is labelled again, as before: the labels are
the same either way (a block's labels depend on its values only), so the result is
too. So memory stays bounded by the block tasks' and the cache's budgets.

The entries are named by the job's run (a random id drawn when the job is planned),
never by the source's name: a later job over changed data never finds them.

Examples
--------
>>> import numpy as np
>>> from chunkflow.cache import ChunkCache
>>> cache = ChunkCache(1 << 20)
>>> keep("run", (0, 1), np.array([[0, 1], [2, 2]], np.uint32), np.array([0, 1]), cache=cache)
>>> labels, rows = take("run", (0, 1), cache=cache)
>>> labels.tolist(), rows.tolist(), take("run", (0, 1), cache=cache) is None
([[0, 1], [2, 2]], [0, 1], True)
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable

import numpy as np

from chunkflow.cache import ChunkCache, default_cache

__all__ = ["drop", "keep", "new_run", "take"]

_PREFIX = "chunkflow-label-provisional:"


def new_run() -> str:
    """A fresh run id (the entries' names)."""
    return uuid.uuid4().hex


def _key(run: str, index: tuple[int, ...], part: str = "labels") -> str:
    return f"{_PREFIX}{run}/{'.'.join(map(str, index))}/{part}"


def _cache(cache: ChunkCache | None) -> ChunkCache | None:
    return cache if cache is not None else default_cache()


def keep(run: str | None, index: tuple[int, ...], labels: np.ndarray, rows: np.ndarray, *,
         cache: ChunkCache | None = None) -> None:
    """Keep block ``index``'s ``labels`` and the first row of each (``rows``) for the
    write pass (nothing when ``run`` is None or there is no cache). The cache makes
    them read-only."""
    found = _cache(cache)
    if run is None or found is None or found.max_bytes == 0:
        return
    # The rows first: labels without their rows are never found (see take).
    found.put(_key(run, index, "rows"), rows)
    found.put(_key(run, index), labels)


def take(run: str | None, index: tuple[int, ...], *,
         cache: ChunkCache | None = None) -> tuple[np.ndarray, np.ndarray] | None:
    """Block ``index``'s kept labels and rows (read-only), dropped from the cache; None
    when they are not both there."""
    found = _cache(cache)
    if run is None or found is None:
        return None
    keys = [_key(run, index), _key(run, index, "rows")]
    kept = found.get_many(keys)
    found.discard_many(keys)
    if len(kept) < 2:
        return None
    return kept[keys[0]], kept[keys[1]]


def drop(run: str | None, blocks: Iterable[tuple[int, ...]], *,
         cache: ChunkCache | None = None) -> None:
    """Forget whatever is left of the run's blocks (those a resumed job skipped)."""
    found = _cache(cache)
    if run is not None and found is not None:
        found.discard_many([_key(run, index, part) for index in blocks
                            for part in ("labels", "rows")])
