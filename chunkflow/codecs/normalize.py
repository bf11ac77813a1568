"""Turn user codec input into the documents chunkflow stores.

Users may pass v3 documents, :mod:`chunkflow.codecs` codec objects, numcodecs
codecs or their config dicts, zarr-python codec objects (anything with
``to_dict()``), or the v2-style ``compressor=`` / ``filters=`` arguments. These
helpers produce what zarr-python 3.1 would write for the same request, with plain
JSON types only.

Examples
--------
>>> import numcodecs
>>> normalize_v2_compressor(numcodecs.Zstd(level=3))
{'id': 'zstd', 'level': 3}
>>> [c["name"] for c in normalize_v3_codecs(None, dtype="float32", compressor=numcodecs.Zstd())]
['bytes', 'zstd']
"""

from __future__ import annotations

import json
import warnings
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypeAlias

import numpy as np
from numcodecs.abc import Codec

from chunkflow.codecs.array_stages import filter_out_spec, has_endianness
from chunkflow.codecs.pipeline_v3 import split_codecs
from chunkflow.codecs.registry import NumcodecsCodec, V3Codec, codec_from_json, is_v3_codec
from chunkflow.codecs.sharding import ShardingCodec
from chunkflow.codecs.stages import build_numcodec
from chunkflow.codecs.v3_codecs import (
    ARRAY_TO_ARRAY,
    ARRAY_TO_BYTES,
    BYTES_TO_BYTES,
    BloscCodec,
    BytesCodec,
    Crc32cCodec,
    GzipCodec,
    TransposeCodec,
    VLenBytesCodec,
    VLenUTF8Codec,
    ZstdCodec,
)
from chunkflow.errors import InvalidArgumentError, MetadataError, UnsupportedCodecError
from chunkflow.metadata import encode_data_type_v3

if TYPE_CHECKING:
    from zarr.abc.codec import BaseCodec as ZarrPythonCodec

    from chunkflow.metadata.json import JSONValue

__all__ = [
    "CodecLike",
    "compressor_of",
    "default_v2_compressor",
    "evolved",
    "normalize_v2_compressor",
    "normalize_v2_filters",
    "normalize_v3_codecs",
    "object_serializer",
    "to_v3_codec",
]

#: One codec as users give it (see :func:`to_v3_codec`): a numcodecs codec, a chunkflow
#: v3 codec, a zarr-python 3 codec, a v3 document (``{"name": ..., "configuration": ...}``)
#: or numcodecs config (``{"id": ...}``), or a v3 codec name. A string, so that
#: zarr-python, an optional dependency, is imported by type checkers only.
CodecLike: TypeAlias = "Codec | V3Codec | ZarrPythonCodec | Mapping[str, Any] | str"

_CHECKSUM_IDS = frozenset({"crc32", "crc32c", "adler32", "fletcher32", "jenkins_lookup3"})


def _plain_json(config: dict[str, Any], *, sort_keys: bool = False) -> dict[str, Any]:
    """Round-trip through JSON: tuples become lists, numpy scalars Python numbers
    (and keys sorted at every depth with ``sort_keys``)."""

    def convert(value: Any) -> Any:
        if isinstance(value, np.generic):
            return value.item()
        if isinstance(value, np.ndarray):
            return value.tolist()
        raise UnsupportedCodecError(f"codec config value {value!r} is not JSON-serializable")

    return json.loads(json.dumps(config, default=convert, sort_keys=sort_keys))


def default_v2_compressor() -> dict[str, Any]:
    """The compressor chunkflow writes for new v2 arrays.

    Examples
    --------
    >>> default_v2_compressor()
    {'blocksize': 0, 'clevel': 5, 'cname': 'lz4', 'id': 'blosc', 'shuffle': 1}
    """
    return {"blocksize": 0, "clevel": 5, "cname": "lz4", "id": "blosc", "shuffle": 1}


def _from_numcodecs_config(config: dict[str, Any], itemsize: int) -> V3Codec:
    codec_id = config["id"]
    rest = {k: v for k, v in config.items() if k != "id"}
    if codec_id == "blosc":
        shuffle = rest.get("shuffle", 1)
        if shuffle == -1:  # AUTOSHUFFLE, as numcodecs resolves it
            shuffle = 2 if itemsize == 1 else 1
        return BloscCodec(rest.get("cname", "lz4"), rest.get("clevel", 5), shuffle,
                          rest.get("typesize"), rest.get("blocksize", 0))
    if codec_id == "zstd":
        return ZstdCodec(rest.get("level", 0), bool(rest.get("checksum", False)))
    if codec_id == "gzip":
        return GzipCodec(rest.get("level", 5))
    if codec_id == "crc32c" and rest.get("location", "end") == "end":
        return Crc32cCodec()
    if codec_id == "vlen-utf8":
        return VLenUTF8Codec()
    if codec_id == "vlen-bytes":
        return VLenBytesCodec()
    return NumcodecsCodec(codec_id, _plain_json(rest))


def to_v3_codec(obj: CodecLike, itemsize: int = 1) -> V3Codec:
    """Convert one user codec (any accepted form) to a v3 codec object.

    Examples
    --------
    >>> import numcodecs
    >>> to_v3_codec(numcodecs.Blosc(shuffle=-1), itemsize=1)
    BloscCodec(cname='lz4', clevel=5, shuffle='bitshuffle', typesize=None, blocksize=0)
    >>> to_v3_codec(numcodecs.BZ2(level=1)).to_json()
    {'name': 'numcodecs.bz2', 'configuration': {'level': 1}}
    """
    if is_v3_codec(obj):
        return obj
    if isinstance(obj, Codec):
        return _from_numcodecs_config(obj.get_config(), itemsize)
    if isinstance(obj, dict) and "id" in obj and "name" not in obj:
        return _from_numcodecs_config(obj, itemsize)
    if isinstance(obj, (dict, str)):
        return codec_from_json(obj)
    to_dict = getattr(obj, "to_dict", None)
    if callable(to_dict):  # zarr-python codec objects
        # Their documents hold tuples (ShardingCodec's chunk_shape and codecs).
        return codec_from_json(_plain_json(to_dict()))
    raise UnsupportedCodecError(f"cannot use {obj!r} as a codec")


def _to_v2_config(obj: CodecLike) -> dict[str, Any]:
    if isinstance(obj, Codec):
        config = obj.get_config()
    elif isinstance(obj, dict) and "id" in obj and "name" not in obj:
        config = dict(obj)
    else:
        codec = to_v3_codec(obj)
        config = codec.numcodecs_config()
        if config["id"] == "blosc":
            # .zarray never carries typesize (zarr-python 2 and numcodecs < 0.16 refuse it).
            config.pop("typesize", None)
    if config["id"] == "zstd" and not config.get("checksum", False):
        # numcodecs >= 0.13 adds "checksum": false, which tensorstore and zarr-python 2
        # refuse in .zarray; zarr-python 3 drops it too (zarr-python issue 2647).
        config.pop("checksum", None)
    # Refuse unknown ids and bad configs now rather than at the first write.
    build_numcodec(config, allow_pickle=True)
    # Keys sorted at every depth, as zarr-python 2 stores and reads back its configs:
    # the codec rebuilt from the document is then the one zarr-python 2 shows (LZMA's
    # filters=[{'dist': 4, 'id': 3}, ...]).
    return _plain_json(config, sort_keys=True)


def normalize_v2_compressor(compressor: CodecLike | None) -> dict[str, Any] | None:
    """The ``.zarray`` ``compressor`` for `compressor`.

    Parameters
    ----------
    compressor : numcodecs codec, config dict, v3 codec, None or "default"
        None stores uncompressed chunks; "default" is :func:`default_v2_compressor`.

    Examples
    --------
    >>> from chunkflow.codecs.v3_codecs import BloscCodec
    >>> normalize_v2_compressor(BloscCodec(cname="zstd", typesize=4))
    {'blocksize': 0, 'clevel': 5, 'cname': 'zstd', 'id': 'blosc', 'shuffle': 1}
    >>> normalize_v2_compressor(None) is None
    True
    """
    if compressor is None:
        return None
    if isinstance(compressor, str) and compressor == "default":
        return default_v2_compressor()
    return _to_v2_config(compressor)


def normalize_v2_filters(
    filters: CodecLike | Sequence[CodecLike] | None,
) -> tuple[dict[str, Any], ...] | None:
    """The ``.zarray`` ``filters``: a tuple of configs, or None (never empty).

    Examples
    --------
    >>> import numcodecs
    >>> normalize_v2_filters([numcodecs.Delta(dtype="<i4")])
    ({'astype': '<i4', 'dtype': '<i4', 'id': 'delta'},)
    >>> normalize_v2_filters([]) is None
    True
    """
    if filters is None:
        return None
    if not isinstance(filters, (list, tuple)):
        filters = [filters]
    configs = tuple(_to_v2_config(f) for f in filters)
    return configs or None


def _as_list(value: Any) -> list[Any]:
    if value is None:
        return []
    return list(value) if isinstance(value, (list, tuple)) else [value]


def _default_codecs(dtype: np.dtype, order: str, ndim: int | None,
                    compressor: CodecLike | None,
                    filters: CodecLike | Sequence[CodecLike] | None,
                    object_codec: str | None = None) -> list[V3Codec]:
    itemsize = 1 if dtype.hasobject else dtype.itemsize
    codecs: list[V3Codec] = []
    if order == "F":
        if ndim is None:
            raise InvalidArgumentError("order='F' needs ndim to build the transpose codec")
        if ndim > 1:  # a transpose of 0 or 1 axes changes nothing
            codecs.append(TransposeCodec(tuple(range(ndim - 1, -1, -1))))
    elif order != "C":
        raise InvalidArgumentError(f"order must be 'C' or 'F', got {order!r}")
    for f in _as_list(filters):
        codec = to_v3_codec(evolved(f, dtype, object_codec, ndim), itemsize)
        if codec.kind != ARRAY_TO_ARRAY:
            raise UnsupportedCodecError(f"filter {codec.name!r} is not an array->array codec")
        codecs.append(codec)
    if isinstance(compressor, str) and compressor == "default":
        compressor = BloscCodec("lz4", 5, "shuffle", itemsize, 0)
    for c in _as_list(compressor):
        codec = to_v3_codec(evolved(c, dtype, object_codec, ndim), itemsize)
        if codec.kind != BYTES_TO_BYTES:
            raise UnsupportedCodecError(f"compressor {codec.name!r} is not a bytes->bytes codec")
        codecs.append(codec)
    return codecs


def _complete(codecs: list[V3Codec], dtype: np.dtype, ndim: int | None,
              object_codec: str | None = None) -> list[V3Codec]:
    """Insert the serializer if missing, fill endian and blosc typesize."""
    if not any(c.kind == ARRAY_TO_BYTES for c in codecs):
        at = next((i for i, c in enumerate(codecs) if c.kind == BYTES_TO_BYTES), len(codecs))
        codecs.insert(at, _default_serializer(dtype, object_codec))
    shape: tuple[int, ...] = (1,) * (ndim or 0)  # sizes do not matter for dtype resolution
    out: list[V3Codec] = []
    for codec in codecs:
        if isinstance(codec, TransposeCodec) and isinstance(codec.order, str) and ndim is not None:
            codec = TransposeCodec(codec.permutation(ndim))
        elif isinstance(codec, NumcodecsCodec) and codec.kind == ARRAY_TO_ARRAY:
            shape, dtype = filter_out_spec(codec.codec_id, codec.configuration, (shape, dtype))
        elif isinstance(codec, BytesCodec):
            # zarr-python 3.1 writes {"name": "bytes"} for types without endianness.
            codec = BytesCodec((codec.endian or "little") if has_endianness(dtype) else None)
        elif isinstance(codec, BloscCodec) and codec.typesize is None:
            typesize = 1 if dtype.hasobject else dtype.itemsize
            codec = BloscCodec(codec.cname, codec.clevel, codec.shuffle, typesize, codec.blocksize)
        elif isinstance(codec, ShardingCodec):
            codec = _complete_sharding(codec, dtype, ndim, object_codec)
        out.append(codec)
    split_codecs(out)
    return out


def _default_serializer(dtype: np.dtype, object_codec: str | None) -> V3Codec:
    """``bytes``, or for ``object`` items the codec they are stored with (``vlen-utf8``
    unless ``object_codec`` says ``vlen-bytes``), as zarr-python 3 picks by data type."""
    if not (dtype.hasobject or dtype.kind == "T"):
        return BytesCodec("little")
    return VLenBytesCodec() if object_codec == VLenBytesCodec.name else VLenUTF8Codec()


def _complete_sharding(codec: ShardingCodec, dtype: np.dtype, ndim: int | None,
                       object_codec: str | None) -> ShardingCodec:
    """The same completion for the inner chunks' and the index's codecs."""
    def completed(docs: tuple[Any, ...], dtype: np.dtype, ndim: int | None,
                  object_codec: str | None) -> tuple[Any, ...]:
        itemsize = 1 if dtype.hasobject else dtype.itemsize
        items = [to_v3_codec(c, itemsize) for c in docs]
        return tuple(_plain_json(c.to_json())
                     for c in _complete(items, dtype, ndim, object_codec))

    index_ndim = None if ndim is None else ndim + 1  # the index has a trailing axis of 2
    return ShardingCodec(codec.chunk_shape, completed(codec.codecs, dtype, ndim, object_codec),
                         completed(codec.index_codecs, np.dtype("<u8"), index_ndim, None),
                         codec.index_location)


def object_serializer(codecs: CodecLike | Sequence[CodecLike] | None) -> str | None:
    """The name of the variable-length serializer (``vlen-utf8`` or ``vlen-bytes``) among
    ``codecs``, inside a shard too, or None.

    Examples
    --------
    >>> object_serializer([{"name": "vlen-bytes"}, {"name": "zstd"}])
    'vlen-bytes'
    >>> object_serializer(None) is None
    True
    """
    for item in _as_list(codecs):
        if isinstance(item, str) and item in ("auto", "default"):
            continue
        codec = to_v3_codec(item)
        if isinstance(codec, (VLenUTF8Codec, VLenBytesCodec)):
            return codec.name
        if isinstance(codec, ShardingCodec):
            return object_serializer(list(codec.codecs))
    return None


def normalize_v3_codecs(
    codecs: CodecLike | Sequence[CodecLike] | None,
    *,
    dtype: np.dtype[Any] | str | type,
    order: str = "C",
    compressor: CodecLike | None = "default",
    filters: CodecLike | Sequence[CodecLike] | None = None,
    ndim: int | None = None,
    object_codec: str | None = None,
) -> tuple[dict[str, Any], ...]:
    """The ``zarr.json`` ``codecs`` for a new v3 array.

    Parameters
    ----------
    codecs : sequence or None
        Full codec list in any accepted form; None builds it from the other arguments.
    dtype : numpy.dtype
        The array dtype (object/``StringDType`` -> ``vlen-utf8`` serializer).
    order : {"C", "F"}
        "F" starts the list with a transpose reversing the axes (needs `ndim`).
    compressor : codec, sequence of codecs, None or "default"
        bytes->bytes codecs used when `codecs` is None; "default" is blosc lz4
        clevel 5 with byte shuffle of the item size.
    filters : sequence of codecs or None
        array->array codecs used when `codecs` is None.
    ndim : int, optional
        Rank of the array; needed for ``order="F"`` and "C"/"F" transpose orders.
    object_codec : {"vlen-utf8", "vlen-bytes"}, optional
        The serializer of ``object`` items when none is given (default ``vlen-utf8``).

    Returns
    -------
    tuple of dict

    Examples
    --------
    >>> normalize_v3_codecs(None, dtype="uint8", compressor=None)
    ({'name': 'bytes'},)
    >>> [c["name"] for c in normalize_v3_codecs(None, dtype="<i4", order="F", ndim=2)]
    ['transpose', 'bytes', 'blosc']
    >>> normalize_v3_codecs([{"name": "crc32c"}], dtype="int16")
    ({'name': 'bytes', 'configuration': {'endian': 'little'}}, {'name': 'crc32c'})
    """
    dtype = np.dtype(dtype)
    if codecs is None:
        items = _default_codecs(dtype, order, ndim, compressor, filters, object_codec)
    else:
        if filters is not None or not (compressor is None or _is_default(compressor)):
            raise InvalidArgumentError("pass either codecs= or compressor=/filters=, not both")
        itemsize = 1 if dtype.hasobject else dtype.itemsize
        items = [to_v3_codec(evolved(c, dtype, object_codec, ndim), itemsize)
                 for c in _as_list(codecs)]
    return tuple(_plain_json(c.to_json()) for c in _complete(items, dtype, ndim, object_codec))


def _is_default(compressor: Any) -> bool:
    return isinstance(compressor, str) and compressor == "default"


def evolved(codec: Any, dtype: np.dtype, object_codec: str | None = None,
            ndim: int | None = None) -> Any:
    """A zarr-python 3 codec object completed for an array of ``dtype`` as zarr-python
    completes it when it creates the array (``evolve_from_array_spec``): a
    ``BloscCodec()`` left without ``typesize``/``shuffle`` takes the item size's, and a
    ``ShardingCodec`` completes its inner codecs. Anything else is returned as given.

    Examples
    --------
    >>> from zarr.codecs import BloscCodec
    >>> evolved(BloscCodec(), np.dtype("<i4")).to_dict()["configuration"]
    {'typesize': 4, 'cname': 'zstd', 'clevel': 5, 'shuffle': 'shuffle', 'blocksize': 0}
    """
    evolve = getattr(codec, "evolve_from_array_spec", None)
    if not callable(evolve) or not callable(getattr(codec, "to_dict", None)):
        return codec
    # zarr-python is optional: its objects exist only when it is installed.
    from zarr.core.array_spec import ArrayConfig, ArraySpec
    from zarr.core.buffer import default_buffer_prototype
    from zarr.core.dtype import get_data_type_from_json

    data_type: Any = {"vlen-utf8": "string", "vlen-bytes": "variable_length_bytes"}.get(
        object_codec or "vlen-utf8") if dtype.hasobject else encode_data_type_v3(dtype)
    with warnings.catch_warnings():  # zarr-python's "no v3 specification yet" warnings
        warnings.simplefilter("ignore")
        zdtype = get_data_type_from_json(data_type, zarr_format=3)
        spec = ArraySpec(shape=(1,) * (ndim or 1), dtype=zdtype,
                         fill_value=zdtype.default_scalar(),
                         config=ArrayConfig(order="C", write_empty_chunks=False),
                         prototype=default_buffer_prototype())
        return evolve(spec)


def compressor_of(zarr_format: int, doc: JSONValue | Sequence[dict[str, Any]]) -> Codec | None:
    """The numcodecs compressor of an array, for ``Array.compressor``.

    For v3 this is the first bytes->bytes codec that is not a checksum.

    Examples
    --------
    >>> compressor_of(3, [{"name": "bytes"},
    ...                    {"name": "zstd", "configuration": {"level": 1, "checksum": False}}])
    Zstd(level=1)
    >>> compressor_of(2, None) is None
    True
    """
    if zarr_format == 2:
        if doc is not None and not isinstance(doc, dict):
            raise MetadataError(f"a v2 compressor must be an object or null, got {doc!r}")
        return None if doc is None else build_numcodec(doc, allow_pickle=True)
    if doc is not None and not isinstance(doc, (list, tuple)):
        raise MetadataError(f"v3 codecs must be a list, got {doc!r}")
    for item in doc or ():
        codec = to_v3_codec(item)
        if codec.kind == BYTES_TO_BYTES:
            config = codec.numcodecs_config()
            if config["id"] not in _CHECKSUM_IDS:
                return build_numcodec(config)
    return None

