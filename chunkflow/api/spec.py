"""Turn the keyword arguments of array creation into a metadata document."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from chunkflow import config, storage
from chunkflow.api.dtype_spec import (
    VLEN_DATA_TYPES,
    DtypeSpec,
    default_fill_value,
    normalize_dtype,
)
from chunkflow.codecs import (
    OBJECT_CODEC_IDS,
    normalize_v2_compressor,
    normalize_v2_filters,
    normalize_v3_codecs,
    object_serializer,
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

__all__ = ["DEFAULT", "ArraySpec", "build_metadata", "resolve_zarr_format"]


class _Default:
    """Marks an argument the caller left out (``None`` can be meaningful)."""

    def __repr__(self) -> str:
        return "DEFAULT"


DEFAULT: Any = _Default()


def resolve_zarr_format(zarr_format: int | None) -> int:
    """``zarr_format``, or the ``chunkflow.array.zarr-format`` setting when it is None.

    Examples
    --------
    >>> import chunkflow
    >>> resolve_zarr_format(2), resolve_zarr_format(None)
    (2, 3)
    >>> with chunkflow.config.set({"chunkflow.array.zarr-format": 2}):
    ...     resolve_zarr_format(None)
    2
    """
    if zarr_format is None:
        return int(config.get("chunkflow.array.zarr-format"))
    return zarr_format


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
    object_codec: Any = None,
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
    dtype_spec = normalize_dtype(dtype, object_codec)
    np_dtype = dtype_spec.dtype
    chunks_t = normalize_chunks(chunks, shape_t, max(np_dtype.itemsize, 1))
    if order not in ("C", "F"):
        raise MetadataError(f"{where}: order must be 'C' or 'F', got {order!r}")
    if fill_value is DEFAULT:
        fill_value = default_fill_value(dtype_spec)
    spec = ArraySpec(
        shape=shape_t, chunks=chunks_t, dtype=np_dtype, object_codec=dtype_spec.object_codec,
        fill_value=fill_value, order=order, compressor=compressor, filters=filters,
        codecs=codecs, dimension_separator=dimension_separator,
        chunk_key_encoding=chunk_key_encoding, dimension_names=dimension_names,
        attributes=attributes, where=where,
    )
    if zarr_format == 2:
        return _as_stored(_build_v2(spec), path)
    if zarr_format == 3:
        return _as_stored(_build_v3(spec), path)
    raise MetadataError(f"{where}: zarr_format must be 2 or 3, got {zarr_format!r}")


def _as_stored(metadata: ArrayMetadata, path: str) -> ArrayMetadata:
    """``metadata`` as a reader of its document parses it: the handle that creates an
    array then holds what every later handle reads. (A v2 ``"NaN"`` fill value has no
    payload: chunks equal to another NaN must not be left out as if they were fill.)"""
    return type(metadata).from_dict(metadata.to_dict(), path)


@dataclass(frozen=True)
class ArraySpec:
    """The creation arguments of an array once shape, chunks, dtype, order and the
    default fill value are settled: what the v2 and v3 builders start from.

    ``object_codec`` is the numcodecs config of the codec of ``object`` items (see
    :mod:`chunkflow.api.dtype_spec`); ``where`` names the array in error messages
    (``"array 'a/b'"``).
    """

    shape: tuple[int, ...]
    chunks: tuple[int, ...]
    dtype: np.dtype
    object_codec: dict[str, Any] | None
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
    object_codec = _v3_object_codec(spec)
    if fill_value is None:
        fill_value = default_fill_value(DtypeSpec(dtype, object_codec))
    codec_docs = normalize_v3_codecs(
        spec.codecs,
        dtype=dtype,
        order=spec.order,
        compressor=_compressor(spec),
        filters=spec.filters,
        # order="F" (and "C"/"F" transpose orders) need the rank to build a permutation.
        ndim=len(spec.shape),
        object_codec=None if object_codec is None else object_codec["id"],
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
        data_type_doc=None if object_codec is None else VLEN_DATA_TYPES[object_codec["id"]],
    )


def _v3_object_codec(spec: ArraySpec) -> dict[str, Any] | None:
    """The codec of ``object`` items in v3: the one the dtype names, else the serializer
    given in ``codecs=``, else ``vlen-utf8`` (``object`` is the ``"string"`` type)."""
    if spec.dtype.kind != "O":
        return None
    codec = spec.object_codec
    serializer = object_serializer(spec.codecs)
    if codec is None:
        codec = {"id": serializer or "vlen-utf8"}
    if codec["id"] not in VLEN_DATA_TYPES:
        raise MetadataError(
            f"{spec.where}: object_codec {codec['id']!r} has no Zarr v3 data type (v3 stores "
            f"object items as 'string' with vlen-utf8 or 'variable_length_bytes' with "
            f"vlen-bytes); pass zarr_format=2"
        )
    if serializer is not None and serializer != codec["id"]:
        raise MetadataError(
            f"{spec.where}: Zarr v3 data type {VLEN_DATA_TYPES[codec['id']]!r} is stored with "
            f"the {codec['id']!r} serializer, got {serializer!r} in codecs="
        )
    return codec


def _compressor(spec: ArraySpec) -> Any:
    if spec.compressor is not DEFAULT:
        return spec.compressor
    return "default" if spec.codecs is not None else _default_compressor()


def _default_compressor() -> Any:
    """zarr-python 2's ``zarr.storage.default_compressor``, read when an array is made
    (users assign it, as in zarr-python 2's tutorial)."""
    return storage.default_compressor


def _build_v2(spec: ArraySpec) -> ArrayMetadataV2:
    where = spec.where
    if spec.codecs is not None:
        raise MetadataError(
            f"{where}: codecs= describes a Zarr v3 pipeline; for zarr_format=2 pass "
            f"compressor= and filters= instead"
        )
    if spec.dimension_names is not None:
        raise MetadataError(f"{where}: dimension_names needs zarr_format=3")
    filter_docs = _v2_filters(spec)
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
    compressor = _default_compressor() if spec.compressor is DEFAULT else spec.compressor
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


def _v2_filters(spec: ArraySpec) -> tuple[dict[str, Any], ...] | None:
    """The filters, led by the object codec as zarr-python 2 puts it (unless the filters
    hold it already); an object array without one is refused before anything is made."""
    filter_docs = normalize_v2_filters(spec.filters) or ()
    codec = spec.object_codec
    if codec is not None and not any(doc.get("id") == codec["id"] for doc in filter_docs):
        filter_docs = (normalize_v2_filters([codec]) or ()) + filter_docs
    if spec.dtype.kind == "O" and not OBJECT_CODEC_IDS.intersection(d["id"] for d in filter_docs):
        raise MetadataError(
            f"{spec.where}: an object array needs object_codec= (numcodecs.VLenUTF8(), "
            f"VLenBytes(), JSON(), MsgPack(), Pickle()...) or dtype=str / dtype=bytes, as in "
            f"zarr-python 2"
        )
    return filter_docs or None


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
