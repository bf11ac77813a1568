"""Zarr v3 documents: array and group ``zarr.json``.

Examples
--------
>>> doc = {"zarr_format": 3, "node_type": "array", "shape": [10], "data_type": "float32",
...        "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [5]}},
...        "chunk_key_encoding": {"name": "default"}, "fill_value": "NaN",
...        "codecs": [{"name": "bytes", "configuration": {"endian": "little"}}]}
>>> meta = ArrayMetadataV3.from_dict(doc, "a")
>>> meta.chunks, meta.chunk_key_encoding, meta.fill_value
((5,), ('default', '/'), np.float32(nan))
>>> parse_zarr_json(meta.to_bytes(), "a") == meta
True
>>> parse_zarr_json(b'{"zarr_format": 3, "node_type": "group"}', "g")
GroupMetadataV3(attributes={}, consolidated_metadata=None)
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, ClassVar

import numpy as np

from chunkflow.errors import MetadataError, UnsupportedFormatError
from chunkflow.metadata._checks import Where
from chunkflow.metadata.dtypes import encode_data_type_v3, parse_data_type_v3
from chunkflow.metadata.fill_values import (
    encode_fill_value_v3,
    normalize_fill_value,
    parse_fill_value_v3,
)
from chunkflow.metadata.json import JSONValue, describe, dump_json_document, load_json_document

__all__ = ["ArrayMetadataV3", "GroupMetadataV3", "parse_zarr_json"]

_ARRAY_REQUIRED = ("shape", "data_type", "chunk_grid", "chunk_key_encoding", "fill_value", "codecs")
_ARRAY_KEYS = frozenset(
    ("zarr_format", "node_type", "attributes", "dimension_names", "storage_transformers")
    + _ARRAY_REQUIRED
)
_GROUP_KEYS = frozenset(("zarr_format", "node_type", "attributes", "consolidated_metadata"))
#: The separator each chunk key encoding uses when its configuration leaves it out.
_DEFAULT_SEPARATOR = {"default": "/", "v2": "."}


@dataclass(frozen=True, eq=False)
class ArrayMetadataV3:
    """The contents of a v3 array ``zarr.json``, decoded.

    ``codecs`` holds the codec documents as ``{"name": ..., "configuration": ...}``
    objects (a bare name string is turned into ``{"name": name}``); their
    configurations are the codecs layer's business. ``data_type_doc`` keeps the
    stored ``data_type`` so that re-serializing writes it back unchanged.

    Equality compares the serialized documents (so NaN fill values compare equal).
    """

    shape: tuple[int, ...]
    chunks: tuple[int, ...]
    dtype: np.dtype
    fill_value: Any
    codecs: tuple[dict[str, Any], ...]
    chunk_key_encoding: tuple[str, str] = ("default", "/")
    attributes: dict[str, Any] = field(default_factory=dict)
    dimension_names: tuple[str | None, ...] | None = None
    data_type_doc: str | dict[str, Any] | None = None
    zarr_format: ClassVar[int] = 3

    def __post_init__(self) -> None:
        where = Where("array", None, "zarr.json")
        set_ = object.__setattr__
        set_(self, "shape", where.shape({"shape": [int(n) for n in self.shape]}))
        set_(self, "chunks", where.chunks(list(self.chunks), "chunks", self.shape))
        set_(self, "dtype", np.dtype(self.dtype))
        if self.data_type_doc is None:
            encode_data_type_v3(self.dtype)  # fail now, not when the document is written
        set_(self, "codecs", _codecs(where, list(self.codecs)))
        set_(self, "chunk_key_encoding", _check_encoding(where, *self.chunk_key_encoding))
        if not isinstance(self.attributes, dict):
            raise where.error("attributes", "an object", self.attributes)
        if self.dimension_names is not None:
            names = _dimension_names(where, list(self.dimension_names), len(self.shape))
            set_(self, "dimension_names", names)
        if self.fill_value is None:
            raise where.error("fill_value", "a value (v3 has no undefined fill value)", None)
        set_(self, "fill_value", normalize_fill_value(self.fill_value, self.dtype))

    @property
    def order(self) -> str:
        """Always ``"C"``: v3 expresses Fortran order as a ``transpose`` codec."""
        return "C"

    @property
    def ndim(self) -> int:
        return len(self.shape)

    def to_dict(self) -> dict[str, Any]:
        """The ``zarr.json`` document, with an explicit chunk key separator."""
        name, separator = self.chunk_key_encoding
        data_type = self.data_type_doc
        if data_type is None:
            data_type = encode_data_type_v3(self.dtype)
        doc: dict[str, Any] = {
            "zarr_format": 3,
            "node_type": "array",
            "shape": list(self.shape),
            "data_type": data_type,
            "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": list(self.chunks)}},
            "chunk_key_encoding": {"name": name, "configuration": {"separator": separator}},
            "fill_value": encode_fill_value_v3(self.fill_value, self.dtype, data_type=data_type),
            "codecs": list(self.codecs),
            "attributes": self.attributes,
        }
        if self.dimension_names is not None:
            doc["dimension_names"] = list(self.dimension_names)
        return doc

    def to_bytes(self) -> bytes:
        """UTF-8 JSON, ``indent=4``."""
        return dump_json_document(self.to_dict())

    @classmethod
    def from_dict(cls, doc: dict[str, Any], path: str = "") -> ArrayMetadataV3:
        """Validate and decode an array ``zarr.json`` document.

        Raises
        ------
        UnsupportedFormatError
            For what chunkflow must refuse: unknown keys not marked
            ``"must_understand": false``, non-empty ``storage_transformers``, chunk
            grids other than ``"regular"``, unknown chunk key encodings.
        MetadataError
            For malformed values, naming ``path``, the key and the value.

        Examples
        --------
        >>> ArrayMetadataV3.from_dict({  # doctest: +NORMALIZE_WHITESPACE
        ...     "zarr_format": 3, "node_type": "array",
        ...     "shape": [4], "data_type": "uint8", "fill_value": 0, "codecs": ["bytes"],
        ...     "chunk_grid": {"name": "rectilinear"}, "chunk_key_encoding": "default"}, "a/b")
        Traceback (most recent call last):
        ...
        chunkflow.errors.UnsupportedFormatError: array 'a/b': zarr.json key 'chunk_grid' must be {"name":
        "regular", ...} (the only chunk grid chunkflow supports), got {'name': 'rectilinear'}
        """
        where = Where("array", path, "zarr.json")
        where.zarr_format(doc, 3)
        if where.require(doc, "node_type") != "array":
            raise where.error("node_type", '"array"', doc["node_type"])
        for key in _ARRAY_REQUIRED:
            where.require(doc, key)
        _refuse_unknown_keys(where, doc, _ARRAY_KEYS)
        shape = where.shape(doc)
        try:
            dtype = parse_data_type_v3(doc["data_type"])
        except MetadataError as err:
            where.wrap("data_type", err)
        try:
            fill_value = parse_fill_value_v3(doc["fill_value"], dtype, data_type=doc["data_type"])
        except MetadataError as err:
            where.wrap("fill_value", err)
        if doc.get("storage_transformers", []):
            raise where.error("storage_transformers", "empty", doc["storage_transformers"],
                              UnsupportedFormatError)  # fmt: skip
        names = doc.get("dimension_names")
        return cls(
            shape=shape,
            chunks=_chunk_shape(where, doc["chunk_grid"], shape),
            dtype=dtype,
            fill_value=fill_value,
            codecs=_codecs(where, doc["codecs"]),
            chunk_key_encoding=_chunk_key_encoding(where, doc["chunk_key_encoding"]),
            attributes=where.attributes(doc),
            dimension_names=None if names is None else _dimension_names(where, names, len(shape)),
            data_type_doc=doc["data_type"],
        )

    @classmethod
    def from_bytes(cls, data: bytes, path: str = "") -> ArrayMetadataV3:
        """Parse stored array ``zarr.json`` bytes (bad JSON -> ``MetadataError``)."""
        return cls.from_dict(load_json_document(data, path, "zarr.json", "array"), path)

    def with_shape(self, shape: tuple[int, ...]) -> ArrayMetadataV3:
        """A copy with a new shape of the same rank (for resize and append)."""
        if len(shape) != len(self.shape):
            raise MetadataError(
                f"new shape {tuple(shape)} must have the array's rank {len(self.shape)}"
            )
        return replace(self, shape=tuple(shape))

    def with_attributes(self, attributes: dict[str, Any]) -> ArrayMetadataV3:
        """A copy with new user attributes."""
        return replace(self, attributes=dict(attributes))

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, ArrayMetadataV3):
            return NotImplemented
        return self.dtype == other.dtype and self.to_dict() == other.to_dict()

    def __hash__(self) -> int:
        return hash(self.to_bytes())


@dataclass(frozen=True)
class GroupMetadataV3:
    """A v3 group ``zarr.json``: attributes and, verbatim, ``consolidated_metadata``.

    Examples
    --------
    >>> GroupMetadataV3({"a": 1}).to_dict()
    {'zarr_format': 3, 'node_type': 'group', 'attributes': {'a': 1}}
    """

    attributes: dict[str, Any] = field(default_factory=dict)
    consolidated_metadata: dict[str, Any] | None = None
    zarr_format: ClassVar[int] = 3

    def to_dict(self) -> dict[str, Any]:
        doc: dict[str, Any] = {"zarr_format": 3, "node_type": "group", "attributes": self.attributes}
        if self.consolidated_metadata is not None:
            doc["consolidated_metadata"] = self.consolidated_metadata
        return doc

    def to_bytes(self) -> bytes:
        return dump_json_document(self.to_dict())

    def with_attributes(self, attributes: dict[str, Any]) -> GroupMetadataV3:
        """A copy with new user attributes."""
        return replace(self, attributes=dict(attributes))

    @classmethod
    def from_dict(cls, doc: dict[str, Any], path: str = "") -> GroupMetadataV3:
        """Validate a group ``zarr.json`` document."""
        where = Where("group", path, "zarr.json")
        where.zarr_format(doc, 3)
        if where.require(doc, "node_type") != "group":
            raise where.error("node_type", '"group"', doc["node_type"])
        _refuse_unknown_keys(where, doc, _GROUP_KEYS)
        consolidated = doc.get("consolidated_metadata")
        if consolidated is not None and not isinstance(consolidated, dict):
            raise where.error("consolidated_metadata", "an object or null", consolidated)
        return cls(where.attributes(doc), consolidated)

    @classmethod
    def from_bytes(cls, data: bytes, path: str = "") -> GroupMetadataV3:
        return cls.from_dict(load_json_document(data, path, "zarr.json", "group"), path)


def parse_zarr_json(data: bytes, path: str = "") -> ArrayMetadataV3 | GroupMetadataV3:
    """Parse a stored ``zarr.json``, dispatching on its ``node_type``.

    Examples
    --------
    >>> parse_zarr_json(b'{"zarr_format": 3, "node_type": "link"}', "x")
    Traceback (most recent call last):
    ...
    chunkflow.errors.MetadataError: node 'x': zarr.json key 'node_type' must be "array" or "group", got 'link'
    """
    doc = load_json_document(data, path, "zarr.json")
    where = Where("node", path, "zarr.json")
    where.zarr_format(doc, 3)
    node_type = where.require(doc, "node_type")
    if node_type == "array":
        return ArrayMetadataV3.from_dict(doc, path)
    if node_type == "group":
        return GroupMetadataV3.from_dict(doc, path)
    raise where.error("node_type", '"array" or "group"', node_type)


# --------------------------------------------------------------------------- checks


def _refuse_unknown_keys(where: Where, doc: dict[str, Any], known: frozenset[str]) -> None:
    for key, value in doc.items():
        if key in known:
            continue
        if isinstance(value, dict) and value.get("must_understand") is False:
            continue  # the spec lets readers skip extensions marked this way
        raise UnsupportedFormatError(
            f"{describe(where.kind, where.path or '')}: zarr.json has the key {key!r}, which "
            'chunkflow does not understand and which is not marked "must_understand": false'
        )


def _chunk_shape(where: Where, grid: JSONValue, shape: tuple[int, ...]) -> tuple[int, ...]:
    if not (isinstance(grid, dict) and grid.get("name") == "regular"):
        raise where.error("chunk_grid", '{"name": "regular", ...} (the only chunk grid '
                          "chunkflow supports)", grid, UnsupportedFormatError)  # fmt: skip
    config = grid.get("configuration")
    if not isinstance(config, dict) or "chunk_shape" not in config:
        raise where.error("chunk_grid", "an object with configuration.chunk_shape", grid)
    return where.chunks(config["chunk_shape"], "chunk_grid", shape, "configuration.chunk_shape")


def _chunk_key_encoding(where: Where, doc: JSONValue) -> tuple[str, str]:
    if isinstance(doc, str):
        doc = {"name": doc}
    if not isinstance(doc, dict):
        raise where.error("chunk_key_encoding", 'an object {"name": ...}', doc)
    config = doc.get("configuration") or {}
    if not isinstance(config, dict):
        raise where.error("chunk_key_encoding", "an object with an object configuration", doc)
    name = doc.get("name")
    default = _DEFAULT_SEPARATOR.get(name) if isinstance(name, str) else None
    return _check_encoding(where, name, config.get("separator", default))


def _check_encoding(where: Where, name: JSONValue, separator: JSONValue) -> tuple[str, str]:
    if name not in _DEFAULT_SEPARATOR:
        raise where.error("chunk_key_encoding", '"default" or "v2"', name,
                          UnsupportedFormatError, part="name")  # fmt: skip
    if separator not in ("/", "."):
        raise where.error("chunk_key_encoding", '"/" or "."', separator,
                          part="configuration.separator")  # fmt: skip
    return (name, separator)


def _codecs(where: Where, codecs: JSONValue) -> tuple[dict[str, Any], ...]:
    if not isinstance(codecs, list) or not codecs:
        raise where.error("codecs", "a non-empty list of codecs", codecs)
    return tuple(where.codec(_spelled_out(c), "codecs", "name") for c in codecs)


def _spelled_out(codec: JSONValue) -> JSONValue:
    """``codec`` with every bare name (the spec's short form of ``{"name": name}``)
    written out, inside ``sharding_indexed`` (nested ones too) as well: every reader
    of the document then sees objects."""
    if isinstance(codec, str):
        return {"name": codec}
    config = codec.get("configuration") if isinstance(codec, dict) else None
    if not (isinstance(codec, dict) and codec.get("name") == "sharding_indexed"
            and isinstance(config, dict)):
        return codec
    config = dict(config)
    for key in ("codecs", "index_codecs"):
        if isinstance(config.get(key), list):
            config[key] = [_spelled_out(c) for c in config[key]]
    return {**codec, "configuration": config}


def _dimension_names(where: Where, names: JSONValue, ndim: int) -> tuple[str | None, ...]:
    if not (isinstance(names, list) and all(n is None or isinstance(n, str) for n in names)):
        raise where.error("dimension_names", "a list of strings or nulls", names)
    if len(names) != ndim:
        raise where.error("dimension_names", f"a list of {ndim} names", names)
    return tuple(names)
