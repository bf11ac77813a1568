"""zarr-python 3's creation functions: ``create_array`` and ``from_array`` with its keyword
names (``shards=``, ``compressors=``, ``filters=``, ``serializer=``...), translated into
chunkflow's :func:`~chunkflow.create`. The metadata written is what zarr-python writes for
the same call, so a user moving from ``zarr.create_array`` gets the same files.

Examples
--------
>>> import chunkflow
>>> z = create_array(None, shape=(100, 100), chunks=(10, 10), shards=(50, 50), dtype="u2")
>>> z.metadata.chunks, z.metadata.codecs[0]["configuration"]["chunk_shape"]
((50, 50), [10, 10])
>>> create_array(None, shape=(100,), chunks=(15,), shards=(50,), dtype="u1")  # doctest: +NORMALIZE_WHITESPACE
Traceback (most recent call last):
...
chunkflow.errors.MetadataError: shards (50,) must be a whole multiple of chunks (15,) in every dimension, as
zarr-python requires; for example shards=(45,) or shards=(60,)
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from chunkflow.api.creation import create
from chunkflow.api.dtype_spec import DtypeSpec, items_dtype, normalize_dtype
from chunkflow.api.partition import auto_partition
from chunkflow.api.spec import resolve_zarr_format
from chunkflow.api.zarr3_checks import (
    check_shards,
    check_stage,
    check_v2_keywords,
    key_encoding_document,
    merge_compressor,
    warn_order_v3,
)
from chunkflow.codecs import evolved
from chunkflow.core.array import Array
from chunkflow.errors import ArgumentTypeError, MetadataError
from chunkflow.grid import normalize_shape

if TYPE_CHECKING:
    from numpy.typing import ArrayLike, DTypeLike

    from chunkflow.codecs import CodecLike
    from chunkflow.grid import ChunksLike, KeyEncodingLike, ShapeLike
    from chunkflow.metadata import FillValueLike
    from chunkflow.storage import StoreLike

__all__ = ["create_array", "from_array"]

# zarr-python 3's defaults for new arrays.
DEFAULT_SERIALIZER = {"name": "bytes", "configuration": {"endian": "little"}}
DEFAULT_V3_COMPRESSOR = {"name": "zstd", "configuration": {"level": 0, "checksum": False}}
DEFAULT_V2_COMPRESSOR = {"id": "zstd", "level": 0}
INDEX_CODECS: list[dict[str, Any]] = [DEFAULT_SERIALIZER, {"name": "crc32c"}]


def _as_document(codec: CodecLike, zarr_format: int, items: DtypeSpec | None = None,
                 ndim: int = 1) -> dict[str, Any]:
    """A codec as its JSON document: dicts as given, zarr-python and numcodecs objects
    through their own serialization (a zarr-python codec completed for ``items`` first,
    as zarr-python completes it, see :func:`chunkflow.codecs.evolved`)."""
    if isinstance(codec, Mapping):
        return dict(codec)
    if zarr_format == 3 and hasattr(codec, "to_dict"):  # a zarr-python codec
        if items is not None:
            object_codec = items.object_codec["id"] if items.object_codec else None
            codec = evolved(codec, items.dtype, object_codec, ndim)
        # json: the documents hold tuples (ShardingCodec's chunk_shape and codecs).
        return dict(json.loads(json.dumps(codec.to_dict())))
    if hasattr(codec, "get_config"):  # a numcodecs codec
        config = dict(codec.get_config())
        if zarr_format == 2:
            return config
        name = config.pop("id")
        return {"name": name if name in ("zstd", "gzip", "blosc", "crc32c") else
                f"numcodecs.{name}", "configuration": config}
    raise ArgumentTypeError(f"cannot use {codec!r} as a codec: expected a dict, a zarr-python codec "
                            "or a numcodecs codec")


def _codec_list(
    value: CodecLike | Sequence[CodecLike] | None, default: list[dict[str, Any]],
    zarr_format: int, items: DtypeSpec | None = None, ndim: int = 1,
) -> list[dict[str, Any]]:
    if isinstance(value, str) and value == "auto":
        return [dict(c) for c in default]
    if value is None:
        return []
    values = value if isinstance(value, (list, tuple)) else [value]
    return [_as_document(c, zarr_format, items, ndim) for c in values]


def _itemsize(dtype: DTypeLike) -> int:
    try:
        return max(np.dtype(dtype).itemsize, 1)
    except TypeError:  # a dtype only chunkflow names ("string"...): variable length
        return 1


def _serializer(value: CodecLike, items: DtypeSpec, ndim: int) -> list[dict[str, Any]]:
    """The serializer given, or none for "auto": the codecs layer then picks it by data
    type as zarr-python does (``bytes``, ``vlen-utf8`` for strings, ``vlen-bytes``)."""
    if isinstance(value, (list, tuple)):
        raise MetadataError(f"serializer= takes one array->bytes codec, got a list of "
                            f"{len(value)}: {value!r}")
    return _codec_list(value, [], 3, items, ndim)


def create_array(
    store: StoreLike,
    *,
    name: str | None = None,
    shape: ShapeLike | None = None,
    dtype: DTypeLike | None = None,
    data: ArrayLike | None = None,
    chunks: ChunksLike | Literal["auto"] = "auto",
    shards: Sequence[int] | str | None = None,
    filters: CodecLike | Sequence[CodecLike] | None = "auto",
    compressors: CodecLike | Sequence[CodecLike] | None = "auto",
    serializer: CodecLike = "auto",
    fill_value: FillValueLike = None,
    order: str | None = None,
    zarr_format: int | None = None,
    attributes: dict[str, Any] | None = None,
    chunk_key_encoding: KeyEncodingLike = None,
    dimension_names: Sequence[str | None] | None = None,
    storage_options: dict[str, Any] | None = None,
    overwrite: bool = False,
    config: Mapping[str, Any] | None = None,
    write_data: bool = True,
    **chunkflow_options: Any,
) -> Array:
    """Create an array with zarr-python 3's keywords (see the module documentation).

    ``chunks`` is the inner chunk and ``shards`` the shard, as in zarr-python 3;
    ``compressors`` is one codec or a list; ``filters`` are v3 array-to-array codecs (v2:
    numcodecs filters); ``config={"write_empty_chunks": ...}``. Other keywords
    (``synchronizer=``, ``cache=``...) go to :func:`chunkflow.create`.
    """
    if data is not None:
        data = data if hasattr(data, "shape") and hasattr(data, "dtype") else np.asarray(data)
        shape = data.shape if shape is None else shape
        dtype = items_dtype(data, data.dtype if dtype is None else dtype)
    zarr_format = resolve_zarr_format(zarr_format)
    if shape is None or dtype is None:
        raise ArgumentTypeError("create_array needs shape= and dtype= (or data=)")
    shape = normalize_shape(shape)
    chunk_arg: ChunksLike = True if isinstance(chunks, str) and chunks == "auto" else chunks
    if isinstance(chunk_arg, (int, np.integer)) and not isinstance(chunk_arg, bool):
        chunk_arg = (int(chunk_arg),) * len(shape)
    options: dict[str, Any] = dict(chunkflow_options)
    compressors = merge_compressor(compressors, options)
    chunk_key_encoding = key_encoding_document(chunk_key_encoding, zarr_format)
    if config and "write_empty_chunks" in config:
        options["write_empty_chunks"] = bool(config["write_empty_chunks"])
    if fill_value is not None:
        options["fill_value"] = fill_value
    if zarr_format == 2:
        check_v2_keywords(serializer, dimension_names, shards)
        compressor = _codec_list(compressors, [DEFAULT_V2_COMPRESSOR], 2)
        if len(compressor) > 1:
            raise MetadataError(f"Zarr v2 takes one compressor, got {len(compressor)}")
        separator = (chunk_key_encoding["configuration"].get("separator")
                     if isinstance(chunk_key_encoding, Mapping) else None)
        options.update(compressor=compressor[0] if compressor else None,
                       filters=_codec_list(filters, [], 2) or None, order=order or "C",
                       dimension_separator=separator)
    else:
        warn_order_v3(order)
        items, ndim = normalize_dtype(dtype), len(shape)
        stages = {"filters": _codec_list(filters, [], 3, items, ndim),
                  "serializer": _serializer(serializer, items, ndim),
                  "compressors": _codec_list(compressors, [DEFAULT_V3_COMPRESSOR], 3, items,
                                             ndim)}
        for keyword, documents in stages.items():
            check_stage(keyword, documents)
        inner = [*stages["filters"], *stages["serializer"], *stages["compressors"]]
        if shards is not None:
            shard_shape, inner_chunks = auto_partition(
                shape, "auto" if chunk_arg is True else chunk_arg, shards, _itemsize(dtype))
            check_shards(tuple(shard_shape), tuple(inner_chunks), shape)
            inner = [{"name": "sharding_indexed", "configuration": {
                "chunk_shape": list(inner_chunks), "codecs": inner,
                "index_codecs": [dict(c) for c in INDEX_CODECS], "index_location": "end"}}]
            chunk_arg = tuple(shard_shape)
        options.update(codecs=inner, chunk_key_encoding=chunk_key_encoding,
                       dimension_names=dimension_names)
    array = create(shape, chunks=chunk_arg, dtype=dtype, store=store, path=name,
                   overwrite=overwrite, zarr_format=zarr_format, attributes=attributes,
                   storage_options=storage_options, **options)
    if data is not None and write_data:
        array[...] = data
    return array


def from_array(store: StoreLike, *, data: ArrayLike, **kwargs: Any) -> Array:
    """A new array holding ``data`` (numpy, dask or a chunkflow array), as zarr-python 3's
    ``from_array``; keywords as :func:`create_array`.

    Examples
    --------
    >>> import numpy as np
    >>> from_array(None, data=np.arange(6).reshape(2, 3), chunks=(1, 3))[1].tolist()
    [3, 4, 5]
    """
    if isinstance(data, Array):
        # zarr-python's chunks="keep"/shards="keep": the source's inner chunks and shards.
        kwargs.setdefault("chunks", data.chunks)
        if data.shards is not None and kwargs.get("zarr_format", 3) == 3:
            kwargs.setdefault("shards", data.shards)
    return create_array(store, data=data[...] if isinstance(data, Array) else data, **kwargs)
