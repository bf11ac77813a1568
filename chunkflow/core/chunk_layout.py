"""Which keys an array's chunks have, read from its raw metadata document.

:mod:`chunkflow.core.replacing` tells an array's chunk keys from other files before it
replaces the array; it reads only the fields that name keys (the shape, the chunk grid,
the chunk key encoding), so an array chunkflow cannot open (a codec it does not know)
still has its chunks recognized.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from chunkflow.errors import MetadataError
from chunkflow.grid import ChunkKeyEncoding, ceil_div

__all__ = ["ChunkLayout", "array_layout"]


@dataclass(frozen=True)
class ChunkLayout:
    """The chunk keys of an array: its encoding and its grid of stored chunks (shards,
    if sharded). ``grid`` is ``None`` for a chunk grid other than the regular one:
    then any key of ``ndim`` coordinates is taken.

    Examples
    --------
    >>> layout = ChunkLayout(ChunkKeyEncoding("default", "/"), (2, 3), 2)
    >>> layout.holds("c/1/2"), layout.holds("c/2/0"), layout.holds("c/1"), layout.holds("1.2")
    (True, False, False, False)
    """

    encoding: ChunkKeyEncoding
    grid: tuple[int, ...] | None
    ndim: int

    def holds(self, key: str) -> bool:
        """Whether ``key`` (relative to the array) is the key of one of its chunks."""
        coords = self.encoding.decode(key, self.ndim)
        if coords is None:
            return False
        return self.grid is None or all(c < n for c, n in zip(coords, self.grid))


def array_layout(doc: Mapping[str, Any] | None, zarr_format: int) -> ChunkLayout | None:
    """The :class:`ChunkLayout` of an array document (``.zarray`` or an array's
    ``zarr.json``), or ``None`` when the document does not say it.

    Examples
    --------
    >>> array_layout({"shape": [5, 4], "chunks": [2, 4], "dimension_separator": "/"}, 2)
    ChunkLayout(encoding=ChunkKeyEncoding(name='v2', separator='/'), grid=(3, 1), ndim=2)
    >>> array_layout({"shape": [5], "chunk_grid": {"name": "regular", "configuration":
    ...     {"chunk_shape": [2]}}, "chunk_key_encoding": {"name": "default"}}, 3).grid
    (3,)
    >>> array_layout({"shape": "5"}, 3) is None
    True
    """
    if not isinstance(doc, Mapping):
        return None
    shape = _ints(doc.get("shape"))
    if shape is None:
        return None
    try:
        if zarr_format == 2:
            chunks = _ints(doc.get("chunks"))
            separator = doc.get("dimension_separator") or "."
            encoding = ChunkKeyEncoding("v2", separator)
        else:
            chunks = _regular_chunks(doc.get("chunk_grid"))
            encoding = _v3_encoding(doc.get("chunk_key_encoding"))
    except MetadataError:
        return None
    if encoding is None:
        return None
    if chunks is None:
        return ChunkLayout(encoding, None, len(shape)) if zarr_format == 3 else None
    if len(chunks) != len(shape) or any(c < 1 for c in chunks):
        return None
    return ChunkLayout(encoding, tuple(ceil_div(s, c) for s, c in zip(shape, chunks)), len(shape))


def _ints(value: Any) -> tuple[int, ...] | None:
    if not isinstance(value, list):
        return None
    if not all(isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in value):
        return None
    return tuple(value)


def _regular_chunks(grid: Any) -> tuple[int, ...] | None:
    """The chunk shape of a regular grid; ``None`` for another grid."""
    if not isinstance(grid, Mapping) or grid.get("name") != "regular":
        return None
    configuration = grid.get("configuration")
    return _ints(configuration.get("chunk_shape")) if isinstance(configuration, Mapping) else None


def _v3_encoding(document: Any) -> ChunkKeyEncoding | None:
    """A v3 ``chunk_key_encoding``; the separator defaults to ``/`` (default) or ``.``
    (v2) when ``configuration`` leaves it out."""
    if not isinstance(document, Mapping):
        return None
    name = document.get("name")
    if name not in ("default", "v2"):
        return None
    configuration = document.get("configuration")
    separator = configuration.get("separator") if isinstance(configuration, Mapping) else None
    return ChunkKeyEncoding(name, separator or ("/" if name == "default" else "."))
