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

from numcodecs import Blosc
from numcodecs.abc import Codec

from chunkflow.storage.base import Store
from chunkflow.storage.factory import StoreLike, make_store, output_location
from chunkflow.storage.fsspec_store import FsspecStore
from chunkflow.storage.keys import normalize_key
from chunkflow.storage.local import LocalStore
from chunkflow.storage.lru import LRUStoreCache
from chunkflow.storage.mapping import MappingStore
from chunkflow.storage.memory import MemoryStore
from chunkflow.storage.n5 import N5Store
from chunkflow.storage.ranges import ByteRangeReader
from chunkflow.storage.sqlite import SQLiteStore
from chunkflow.storage.zip import ZipStore

__all__ = [
    "ByteRangeReader",
    "DirectoryStore",
    "FsspecStore",
    "LRUStoreCache",
    "LocalStore",
    "MappingStore",
    "MemoryStore",
    "N5Store",
    "ObstoreStore",
    "SQLiteStore",
    "Store",
    "StoreLike",
    "ZipStore",
    "default_compressor",
    "make_store",
    "normalize_key",
    "output_location",
]

#: zarr-python 2's name for a store over a local folder.
DirectoryStore = LocalStore

#: The compressor of arrays created by :func:`chunkflow.create` (and ``zeros``, ``array``...)
#: without ``compressor=``, read at creation: zarr-python 2's ``zarr.storage.default_compressor``,
#: which users assign (``chunkflow.storage.default_compressor = numcodecs.Zstd(level=1)``).
#: ``None`` creates uncompressed arrays. ``create_array`` keeps zarr-python 3's defaults.
default_compressor: Codec | None = Blosc(cname="lz4", clevel=5, shuffle=Blosc.SHUFFLE)


def __getattr__(name: str) -> Any:
    # ObstoreStore imports obstore, an optional dependency: only when asked for.
    if name == "ObstoreStore":
        from chunkflow.storage.obstore_store import ObstoreStore

        return ObstoreStore
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
