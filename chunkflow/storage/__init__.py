"""Stores: bytes by key, on local disk, in memory, in a zip file or any fsspec URL.

Examples
--------
>>> from chunkflow.storage import make_store
>>> store = make_store(None)
>>> store["group/.zgroup"] = b'{"zarr_format": 2}'
>>> store.list_dir("group")
(['.zgroup'], [])
"""

from __future__ import annotations

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
    "Store",
    "StoreLike",
    "ZipStore",
    "make_store",
    "normalize_key",
]
