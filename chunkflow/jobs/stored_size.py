"""The stored size of a job's source: one listing, or many at once on object stores.

A job's identity includes the total size of its source's stored keys
(:func:`~chunkflow.jobs.identity.source_parts`). On a folder that is one quick walk.
On an object store a listing returns 1,000 keys a page, one page after another: a
source of 10⁶ chunks costs 1,000 round trips (20-100 s) before the job's first task.
There the listing is split along the store's folders (``c/0/``, ``c/1/``... of a
chunk grid), and the folders are listed :data:`LISTING_CONCURRENCY` at a time. Every
key below the prefix is counted once, whatever its name: keys beside the folders are
counted by size, and every folder is listed whole.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Any

from chunkflow.storage import Store

__all__ = ["LISTING_CONCURRENCY", "SPLIT_FROM_OBJECTS", "stored_bytes"]

#: Below this many stored objects (a listing of 100 pages, 3-10 s on S3) one listing
#: is kept: a split costs a few listings more, and a server whose listings scan the
#: whole bucket (moto: 6 s either way for 22,500 keys) gains nothing from it.
SPLIT_FROM_OBJECTS = 100_000
#: Listings out at once.
LISTING_CONCURRENCY = 32
#: Folder levels descended to find enough folders to list at once.
MAX_DEPTH = 3
#: A level with more keys than this is a level of chunks: one listing of it returns
#: their sizes, where asking for each would cost a request per key.
MAX_KEYS_ASKED = 4


def stored_bytes(array: Any) -> int:
    """Total bytes of the values below ``array``'s path in its store.

    Examples
    --------
    >>> import numpy as np
    >>> import chunkflow
    >>> z = chunkflow.array(np.zeros(4, dtype="u1"), chunks=2)
    >>> stored_bytes(z) == z.store.getsize_prefix(z.path)
    True
    """
    store: Store = array.store
    if not store.latency_bound or array.nshards < SPLIT_FROM_OBJECTS:
        return store.getsize_prefix(array.path)
    with ThreadPoolExecutor(LISTING_CONCURRENCY, thread_name_prefix="chunkflow-list") as pool:
        return _split_size(store, array.path, pool, MAX_DEPTH)


def _split_size(store: Store, prefix: str, pool: ThreadPoolExecutor, depth: int) -> int:
    """The bytes below ``prefix``: a level of chunks listed whole; otherwise the few
    keys directly in it by size, then each folder, descended while there are too few
    to keep :data:`LISTING_CONCURRENCY` listings busy, else listed whole, at once."""
    keys, folders = store.list_dir(prefix)
    if len(keys) > MAX_KEYS_ASKED:
        return store.getsize_prefix(prefix)
    below = [f"{prefix}/{name}" if prefix else name for name in folders]
    here = [f"{prefix}/{name}" if prefix else name for name in keys]
    total = sum(pool.map(store.getsize, here))
    if depth > 0 and len(below) < LISTING_CONCURRENCY:
        return total + sum(_split_size(store, folder, pool, depth - 1) for folder in below)
    return total + sum(pool.map(store.getsize_prefix, below))
