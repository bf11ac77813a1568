"""Turn the keyword arguments of array creation into a metadata document."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from chunkflow.codecs import (
    normalize_v2_compressor,
    normalize_v2_filters,
    normalize_v3_codecs,
)
from chunkflow.errors import MetadataError
from chunkflow.grid import normalize_chunks, normalize_shape
from chunkflow.metadata import (
    ArrayMetadata,
    ArrayMetadataV2,
    ArrayMetadataV3,
    encode_data_type_v3,
    normalize_fill_value,
    parse_data_type_v3,
)

if TYPE_CHECKING:
    from numpy.typing import DTypeLike

    from chunkflow.codecs import CodecLike
    from chunkflow.grid import ChunksLike, KeyEncodingLike, ShapeLike
    from chunkflow.metadata import FillValueLike

__all__ = ["DEFAULT", "ArraySpec", "build_metadata", "default_fill_value", "normalize_dtype"]


class _Default:
    """Marks an argument the caller left out (``None`` can be meaningful)."""

    def __repr__(self) -> str:
        return "DEFAULT"


DEFAULT: Any = _Default()

_STRING_DTYPES = (str, "str", "string", "vlen-utf8")


def normalize_dtype(dtype: DTypeLike) -> tuple[np.dtype, bool]:
    """The numpy dtype to store and whether it holds variable-length strings.

    Examples
    --------
    >>> normalize_dtype("uint16")
    (dtype('uint16'), False)
    >>> normalize_dtype(str)
    (dtype('O'), True)
    """
    if isinstance(dtype, (str, type)) and dtype in _STRING_DTYPES:
        return np.dtype(object), True
    try:
        resolved = np.dtype(dtype)
    except TypeError as err:
        raise MetadataError(f"dtype {dtype!r} is not a numpy dtype: {err}") from None
    if resolved.kind == "T":  # numpy's StringDType is stored as variable-length strings
        return np.dtype(object), True
    return resolved, False


def default_fill_value(dtype: np.dtype, is_string: bool) -> Any:
    """Zero of ``dtype`` (``""`` for strings), as zarr-python and tensorstore use.

    Examples
    --------
    >>> default_fill_value(np.dtype("f4"), False)
    np.float32(0.0)
    """
    if is_string:
        return ""
    if dtype.kind == "O":
        return None
    return np.zeros((), dtype=dtype)[()]


def build_metadata(
    *,
    shape: ShapeLike,
    chunks: ChunksLike,
    dtype: DTypeLike,
    fill_value: FillValueLike,
    order: str,
    compressor: CodecLike | None,
    filters: CodecLike | Sequence[CodecLike] | None,
    codecs: CodecLike | Sequence[CodecLike] | None,
    dimension_separator: str | None,
    chunk_key_encoding: KeyEncodingLike,
    dimension_names: Sequence[str | None] | None,
    zarr_format: int,
    attributes: dict[str, Any] | None,
    path: str,
) -> ArrayMetadata:
    """Validate creation arguments and build the array's metadata document.

    Examples
    --------
    >>> meta = build_metadata(shape=(4, 4), chunks=2, dtype="u2", fill_value=DEFAULT,
    ...     order="C", compressor=None, filters=None, codecs=None,
    ...     dimension_separator=None, chunk_key_encoding=None, dimension_names=("y", "x"),
    ...     zarr_format=3, attributes={"a": 1}, path="p")
    >>> meta.chunks, meta.fill_value, meta.dimension_names, meta.attributes
    ((2, 2), np.uint16(0), ('y', 'x'), {'a': 1})
    """
    where = f"array {path or '/'!r}"
    shape_t = normalize_shape(shape)
    np_dtype, is_string = normalize_dtype(dtype)
    chunks_t = normalize_chunks(chunks, shape_t, max(np_dtype.itemsize, 1))
    if order not in ("C", "F"):
        raise MetadataError(f"{where}: order must be 'C' or 'F', got {order!r}")
    if fill_value is DEFAULT:
        fill_value = default_fill_value(np_dtype, is_string)
    spec = ArraySpec(
        shape=shape_t, chunks=chunks_t, dtype=np_dtype, is_string=is_string,
        fill_value=fill_value, order=order, compressor=compressor, filters=filters,
        codecs=codecs, dimension_separator=dimension_separator,
        chunk_key_encoding=chunk_key_encoding, dimension_names=dimension_names,
        attributes=attributes, where=where,
    )
    if zarr_format == 2:
        return _build_v2(spec)
    if zarr_format == 3:
        return _build_v3(spec)
    raise MetadataError(f"{where}: zarr_format must be 2 or 3, got {zarr_format!r}")


@dataclass(frozen=True)
class ArraySpec:
    """The creation arguments of an array once shape, chunks, dtype, order and the
    default fill value are settled: what the v2 and v3 builders start from.

    ``where`` names the array in error messages (``"array 'a/b'"``).
    """

    shape: tuple[int, ...]
    chunks: tuple[int, ...]
    dtype: np.dtype
    is_string: bool
    fill_value: FillValueLike
    order: str
    compressor: CodecLike | None
    filters: CodecLike | Sequence[CodecLike] | None
    codecs: CodecLike | Sequence[CodecLike] | None
    dimension_separator: str | None
    chunk_key_encoding: KeyEncodingLike
    dimension_names: Sequence[str | None] | None
    attributes: dict[str, Any] | None
    where: str


def _build_v3(spec: ArraySpec) -> ArrayMetadataV3:
    dtype, fill_value, where = spec.dtype, spec.fill_value, spec.where
    if dtype.fields is not None:
        # v3 data types carry no byte order and structured items go through a bare
        # `bytes` codec: keep the fields in the order every reader parses (native),
        # or a big-endian field would be stored as is and read back byte-swapped.
        dtype = parse_data_type_v3(encode_data_type_v3(dtype))
    if fill_value is None:
        fill_value = default_fill_value(dtype, spec.is_string)
    codec_docs = normalize_v3_codecs(
        spec.codecs,
        dtype=dtype,
        order=spec.order,
        compressor="default" if spec.compressor is DEFAULT else spec.compressor,
        filters=spec.filters,
        # order="F" (and "C"/"F" transpose orders) need the rank to build a permutation.
        ndim=len(spec.shape),
    )
    names = None if spec.dimension_names is None else tuple(spec.dimension_names)
    if names is not None and len(names) != len(spec.shape):
        raise MetadataError(
            f"{where}: dimension_names {list(names)} must have one entry per "
            f"dimension of shape {spec.shape}"
        )
    return ArrayMetadataV3(
        shape=spec.shape,
        chunks=spec.chunks,
        dtype=dtype,
        fill_value=normalize_fill_value(fill_value, dtype),
        codecs=tuple(codec_docs),
        chunk_key_encoding=_v3_key_encoding(spec.chunk_key_encoding, spec.dimension_separator,
                                            where),
        attributes=dict(spec.attributes or {}),
        dimension_names=names,
    )


def _build_v2(spec: ArraySpec) -> ArrayMetadataV2:
    where = spec.where
    if spec.codecs is not None:
        raise MetadataError(
            f"{where}: codecs= describes a Zarr v3 pipeline; for zarr_format=2 pass "
            f"compressor= and filters= instead"
        )
    if spec.dimension_names is not None:
        raise MetadataError(f"{where}: dimension_names needs zarr_format=3")
    filter_docs = normalize_v2_filters(spec.filters)
    if spec.is_string and not any(doc.get("id") == "vlen-utf8" for doc in filter_docs or ()):
        filter_docs = ({"id": "vlen-utf8"},) + tuple(filter_docs or ())
    separator = spec.dimension_separator
    if separator is None and spec.chunk_key_encoding is not None:
        name, separator = _key_encoding_pair(spec.chunk_key_encoding, where)
        if name != "v2":
            raise MetadataError(
                f"{where}: zarr_format=2 uses chunk_key_encoding 'v2', got {name!r}"
            )
    separator = separator or "."
    if separator not in (".", "/"):
        raise MetadataError(f"{where}: dimension_separator must be '.' or '/', got {separator!r}")
    compressor = "default" if spec.compressor is DEFAULT else spec.compressor
    return ArrayMetadataV2(
        shape=spec.shape,
        chunks=spec.chunks,
        dtype=spec.dtype,
        compressor=normalize_v2_compressor(compressor),
        filters=filter_docs or None,
        fill_value=normalize_fill_value(spec.fill_value, spec.dtype),
        order=spec.order,
        dimension_separator=separator,
    )


def _v3_key_encoding(encoding: KeyEncodingLike, separator: str | None, where: str) -> tuple[str, str]:
    if encoding is None:
        name, sep = "default", separator or "/"
    else:
        name, sep = _key_encoding_pair(encoding, where)
    if name not in ("default", "v2") or sep not in ("/", "."):
        raise MetadataError(
            f"{where}: chunk_key_encoding must be 'default' or 'v2' with separator '/' or "
            f"'.', got {encoding!r}"
        )
    return name, sep


def _key_encoding_pair(encoding: KeyEncodingLike, where: str) -> tuple[str, str]:
    """Accept "default"/"v2", (name, separator) or the v3 JSON document."""
    if isinstance(encoding, str):
        return encoding, "/" if encoding == "default" else "."
    if isinstance(encoding, dict):
        name = encoding.get("name")
        config = encoding.get("configuration") or {}
        return str(name), config.get("separator", "/" if name == "default" else ".")
    if isinstance(encoding, (tuple, list)) and len(encoding) == 2:
        return str(encoding[0]), str(encoding[1])
    raise MetadataError(f"{where}: cannot read chunk_key_encoding {encoding!r}")
