"""Stores: bytes by key, on local disk, in memory, in a zip file, any fsspec URL, or
object URLs through obstore (:class:`ObstoreStore`, imported with obstore when first used).

Examples
--------
>>> from chunkflow.storage import make_store
>>> store = make_store(None)
>>> store["group/.zgroup"] = b'{"zarr_format": 2}'
>>> store.list_dir("group")
(['.zgroup'], [])
"""

from __future__ import annotations

from typing import Any

from chunkflow.storage.base import Store
from chunkflow.storage.factory import StoreLike, make_store
from chunkflow.storage.fsspec_store import FsspecStore
from chunkflow.storage.keys import normalize_key
from chunkflow.storage.local import LocalStore
from chunkflow.storage.mapping import MappingStore
from chunkflow.storage.memory import MemoryStore
from chunkflow.storage.ranges import ByteRangeReader
from chunkflow.storage.zip import ZipStore

__all__ = [
    "ByteRangeReader",
    "FsspecStore",
    "LocalStore",
    "MappingStore",
    "MemoryStore",
    "ObstoreStore",
    "Store",
    "StoreLike",
    "ZipStore",
    "make_store",
    "normalize_key",
]


def __getattr__(name: str) -> Any:
    # ObstoreStore imports obstore, an optional dependency: only when asked for.
    if name == "ObstoreStore":
        from chunkflow.storage.obstore_store import ObstoreStore

        return ObstoreStore
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
