"""Zarr v2 documents: ``.zarray`` and ``.zgroup``.

Examples
--------
>>> meta = ArrayMetadataV2(shape=(10, 10), chunks=(5, 5), dtype=np.dtype("<f4"),
...                        compressor=None, filters=None, fill_value="NaN", order="C")
>>> meta.fill_value, meta.chunk_key_encoding
(np.float32(nan), ('v2', '.'))
>>> ArrayMetadataV2.from_bytes(meta.to_bytes(), "a") == meta
True
>>> meta.to_dict()["fill_value"], meta.to_dict()["filters"]
('NaN', None)
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, ClassVar

import numpy as np

from chunkflow.errors import MetadataError
from chunkflow.metadata._checks import Where
from chunkflow.metadata.dtypes import encode_dtype_v2, parse_dtype_v2
from chunkflow.metadata.fill_values import (
    encode_fill_value_v2,
    normalize_fill_value,
    parse_fill_value_v2,
)
from chunkflow.metadata.json import dump_json_document, load_json_document

__all__ = ["ArrayMetadataV2", "GroupMetadataV2"]

_REQUIRED = ("zarr_format", "shape", "chunks", "dtype", "compressor", "fill_value", "order", "filters")


@dataclass(frozen=True, eq=False)
class ArrayMetadataV2:
    """The contents of a v2 ``.zarray`` document, decoded.

    Construction normalizes and checks the fields (tuples of ints, ``[]`` filters to
    ``None``, the fill value to a NumPy scalar of ``dtype``); :meth:`from_dict`
    additionally checks the JSON types and names the offending key.

    Equality compares the serialized documents (so NaN fill values compare equal).
    """

    shape: tuple[int, ...]
    chunks: tuple[int, ...]
    dtype: np.dtype
    compressor: dict[str, Any] | None
    filters: tuple[dict[str, Any], ...] | None
    fill_value: Any
    order: str
    dimension_separator: str = "."
    zarr_format: ClassVar[int] = 2

    def __post_init__(self) -> None:
        where = Where("array", None, ".zarray")
        set_ = object.__setattr__
        set_(self, "shape", tuple(int(n) for n in self.shape))
        set_(self, "chunks", where.chunks(list(self.chunks), "chunks", self.shape))
        if any(n < 0 for n in self.shape):
            raise where.error("shape", "non-negative ints", list(self.shape))
        set_(self, "dtype", np.dtype(self.dtype))
        encode_dtype_v2(self.dtype)  # fail now, not when the document is written
        set_(self, "filters", tuple(self.filters) if self.filters else None)
        set_(self, "fill_value", normalize_fill_value(self.fill_value, self.dtype))
        if self.order not in ("C", "F"):
            raise where.error("order", '"C" or "F"', self.order)
        if self.dimension_separator not in (".", "/"):
            raise where.error("dimension_separator", '"." or "/"', self.dimension_separator)

    # -- derived views for the layers to the right --------------------------------

    @property
    def chunk_key_encoding(self) -> tuple[str, str]:
        """``("v2", separator)``: v2 keys are the indices joined by the separator."""
        return ("v2", self.dimension_separator)

    @property
    def attributes(self) -> dict[str, Any]:
        """Always ``{}``: v2 attributes live in ``.zattrs`` (the array layer's job)."""
        return {}

    @property
    def dimension_names(self) -> None:
        """Always ``None``: v2 has no dimension names."""
        return None

    @property
    def ndim(self) -> int:
        return len(self.shape)

    # -- serialization ------------------------------------------------------------

    def to_dict(self) -> dict[str, Any]:
        """The ``.zarray`` document (``filters`` is ``null`` when there are none)."""
        return {
            "zarr_format": 2,
            "shape": list(self.shape),
            "chunks": list(self.chunks),
            "dtype": encode_dtype_v2(self.dtype),
            "compressor": self.compressor,
            "fill_value": encode_fill_value_v2(self.fill_value, self.dtype),
            "order": self.order,
            "filters": list(self.filters) if self.filters else None,
            "dimension_separator": self.dimension_separator,
        }

    def to_bytes(self) -> bytes:
        """The ``.zarray`` as zarr-python 2 writes it: UTF-8 JSON, ``indent=4``, keys
        sorted, ``dimension_separator`` only when it is ``"/"`` (absent means ``"."``),
        NaN written as ``"NaN"``. So the documents, and the byte counts of copies and
        ``.info``, are zarr-python 2's.

        Examples
        --------
        >>> meta = ArrayMetadataV2(shape=(4,), chunks=(2,), dtype=np.dtype("<i8"),
        ...     compressor={"id": "zlib", "level": 1}, filters=None, fill_value=0, order="C")
        >>> import json
        >>> list(json.loads(meta.to_bytes()))
        ['chunks', 'compressor', 'dtype', 'fill_value', 'filters', 'order', 'shape', 'zarr_format']
        """
        doc = self.to_dict()
        if doc["dimension_separator"] == ".":
            del doc["dimension_separator"]
        return dump_json_document(doc, sort_keys=True)

    @classmethod
    def from_dict(cls, doc: dict[str, Any], path: str = "") -> ArrayMetadataV2:
        """Validate and decode a ``.zarray`` document; unknown keys are ignored.

        Raises
        ------
        MetadataError
            Naming ``path``, the key and the bad value (``UnsupportedFormatError``
            for a ``zarr_format`` other than 2, ``UnsupportedDtypeError`` for dtypes).

        Examples
        --------
        >>> ArrayMetadataV2.from_dict({"zarr_format": 2, "shape": [4], "chunks": [0],
        ...     "dtype": "<i4", "compressor": None, "fill_value": 0, "order": "C",
        ...     "filters": None}, "a/b")  # doctest: +NORMALIZE_WHITESPACE
        Traceback (most recent call last):
        ...
        chunkflow.errors.MetadataError: array 'a/b': .zarray key 'chunks' must be a list of positive ints (0
        only for a zero-length dimension), got [0]
        """
        where = Where("array", path, ".zarray")
        if not isinstance(doc, dict):
            raise MetadataError(f"{where.node}: .zarray must be a JSON object, got {doc!r}")
        for key in _REQUIRED:
            where.require(doc, key)
        where.zarr_format(doc, 2)
        shape = where.shape(doc)
        chunks = where.chunks(doc["chunks"], "chunks", shape)
        try:
            dtype = parse_dtype_v2(doc["dtype"])
        except MetadataError as err:
            where.wrap("dtype", err)
        compressor = doc["compressor"]
        if compressor is not None:
            where.codec(compressor, "compressor", "id")
        filters = doc["filters"]
        if filters is not None:
            filters = where.codec_list(filters, "filters", "id")
        vlen_bytes = any(f.get("id") == "vlen-bytes" for f in filters or ())
        try:
            fill_value = parse_fill_value_v2(doc["fill_value"], dtype, vlen_bytes=vlen_bytes)
        except MetadataError as err:
            where.wrap("fill_value", err)
        if doc["order"] not in ("C", "F"):
            raise where.error("order", '"C" or "F"', doc["order"])
        separator = doc.get("dimension_separator", ".")
        if separator not in (".", "/"):
            raise where.error("dimension_separator", '"." or "/"', separator)
        return cls(shape, chunks, dtype, compressor, filters, fill_value, doc["order"], separator)

    @classmethod
    def from_bytes(cls, data: bytes, path: str = "") -> ArrayMetadataV2:
        """Parse stored ``.zarray`` bytes (bad or truncated JSON -> ``MetadataError``)."""
        return cls.from_dict(load_json_document(data, path, ".zarray", "array"), path)

    def with_shape(self, shape: tuple[int, ...]) -> ArrayMetadataV2:
        """A copy with a new shape of the same rank (for resize and append).

        Examples
        --------
        >>> meta = ArrayMetadataV2((4,), (2,), np.dtype("u1"), None, None, 0, "C")
        >>> meta.with_shape((7,)).shape
        (7,)
        """
        if len(shape) != len(self.shape):
            raise MetadataError(
                f"new shape {tuple(shape)} must have the array's rank {len(self.shape)}"
            )
        return replace(self, shape=tuple(shape))

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, ArrayMetadataV2):
            return NotImplemented
        return self.dtype == other.dtype and self.to_dict() == other.to_dict()

    def __hash__(self) -> int:
        return hash(self.to_bytes())


@dataclass(frozen=True)
class GroupMetadataV2:
    """The v2 ``.zgroup`` document, ``{"zarr_format": 2}``.

    Examples
    --------
    >>> GroupMetadataV2.from_bytes(b'{"zarr_format": 2}').to_bytes()
    b'{\\n    "zarr_format": 2\\n}'
    """

    zarr_format: ClassVar[int] = 2

    @property
    def attributes(self) -> dict[str, Any]:
        """Always ``{}``: v2 attributes live in ``.zattrs``."""
        return {}

    def to_dict(self) -> dict[str, Any]:
        return {"zarr_format": 2}

    def to_bytes(self) -> bytes:
        return dump_json_document(self.to_dict())

    @classmethod
    def from_dict(cls, doc: dict[str, Any], path: str = "") -> GroupMetadataV2:
        """Validate a ``.zgroup`` document (unknown keys are ignored)."""
        Where("group", path, ".zgroup").zarr_format(doc, 2)
        return cls()

    @classmethod
    def from_bytes(cls, data: bytes, path: str = "") -> GroupMetadataV2:
        return cls.from_dict(load_json_document(data, path, ".zgroup", "group"), path)
