"""What zarr-python 3's ``create_array`` refuses (or warns about), refused (or warned about)
by :func:`chunkflow.create_array` too, with a message that says what fits.

Each check mirrors one of zarr-python 3.1's ``_parse_*`` validations; chunkflow never
refuses a call zarr-python accepts (tests/api/test_zarr3_checks.py runs both on every case).

Examples
--------
>>> check_stage("filters",  # doctest: +NORMALIZE_WHITESPACE
...             [{"name": "zstd", "configuration": {"level": 1}}])
Traceback (most recent call last):
...
chunkflow.errors.MetadataError: filters[0] 'zstd' is a bytes->bytes codec; in Zarr v3 filters= takes
array->array codecs (such as transpose); pass it in compressors= instead
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from chunkflow.codecs import to_v3_codec
from chunkflow.engine.layout import ARRAY_TO_ARRAY, ARRAY_TO_BYTES, BYTES_TO_BYTES
from chunkflow.errors import MetadataError
from chunkflow.grid import ceil_div

if TYPE_CHECKING:
    from chunkflow.codecs import CodecLike
    from chunkflow.grid import KeyEncodingLike

#: Keywords only zarr-python 3's create_array has: they select its defaults and meanings,
#: so creation functions that see one (``open_array``, ``Group.create_array``) hand the
#: call to :func:`chunkflow.create_array`.
ZARR3_ONLY = frozenset({"shards", "compressors", "serializer", "config", "write_data"})

__all__ = ["check_shards", "check_stage", "check_v2_keywords", "key_encoding_document",
           "merge_compressor", "warn_order_v3"]

_KIND_NAMES = {ARRAY_TO_ARRAY: "an array->array", ARRAY_TO_BYTES: "an array->bytes",
               BYTES_TO_BYTES: "a bytes->bytes"}
# Per keyword: the codec kind it takes, examples, and where each other kind belongs.
_STAGES = {
    "filters": (ARRAY_TO_ARRAY, "array->array codecs (such as transpose)"),
    "serializer": (ARRAY_TO_BYTES, "one array->bytes codec (such as bytes or vlen-utf8)"),
    "compressors": (BYTES_TO_BYTES, "bytes->bytes codecs (such as zstd, gzip, blosc, crc32c)"),
}
_HOME = {ARRAY_TO_ARRAY: "filters=", ARRAY_TO_BYTES: "serializer=", BYTES_TO_BYTES: "compressors="}


def check_stage(keyword: str, documents: Sequence[dict[str, Any]]) -> None:
    """Refuse a v3 codec given to the wrong stage (``filters``, ``serializer`` or
    ``compressors``), naming the stage where it belongs."""
    wanted, described = _STAGES[keyword]
    for position, doc in enumerate(documents):
        kind = to_v3_codec(doc).kind
        if kind != wanted:
            where = keyword if keyword == "serializer" else f"{keyword}[{position}]"
            raise MetadataError(
                f"{where} {doc.get('name')!r} is {_KIND_NAMES[kind]} codec; in Zarr v3 "
                f"{keyword}= takes {described}; pass it in {_HOME[kind]} instead"
            )


def check_shards(shards: Sequence[int], chunks: Sequence[int], shape: Sequence[int]) -> None:
    """Shards need one entry per dimension, each a whole multiple of the inner chunk.

    Examples
    --------
    >>> check_shards((10,), (5, 5), (10, 10))  # doctest: +NORMALIZE_WHITESPACE
    Traceback (most recent call last):
    ...
    chunkflow.errors.MetadataError: shards (10,) must have one entry per dimension of shape (10, 10) (2
    entries, got 1)
    """
    if len(shards) != len(shape):
        raise MetadataError(f"shards {tuple(shards)} must have one entry per dimension of "
                            f"shape {tuple(shape)} ({len(shape)} entries, got {len(shards)})")
    if len(chunks) == len(shards) and any(s % c for s, c in zip(shards, chunks)):
        below = tuple(max(c, s // c * c) for s, c in zip(shards, chunks))
        above = tuple(ceil_div(s, c) * c for s, c in zip(shards, chunks))
        raise MetadataError(
            f"shards {tuple(shards)} must be a whole multiple of chunks {tuple(chunks)} in "
            f"every dimension, as zarr-python requires; for example shards={below} or "
            f"shards={above}"
        )


def check_v2_keywords(serializer: CodecLike | None, dimension_names: Sequence[str | None] | None,
                      shards: Sequence[int] | str | None) -> None:
    """Refuse the keywords that only Zarr v3 has, when ``zarr_format=2``."""
    if shards is not None:
        raise MetadataError("shards exist only in Zarr v3; pass zarr_format=3")
    if not (isinstance(serializer, str) and serializer == "auto"):
        raise MetadataError(
            f"serializer={serializer!r}: Zarr v2 arrays have no serializer (their bytes "
            "layout is dtype and order=); leave it out or pass zarr_format=3")
    if dimension_names is not None:
        raise MetadataError(
            f"dimension_names={dimension_names!r}: Zarr v2 arrays have no dimension names "
            "(xarray keeps them in the _ARRAY_DIMENSIONS attribute); pass zarr_format=3")


def key_encoding_document(encoding: KeyEncodingLike, zarr_format: int) -> KeyEncodingLike:
    """zarr-python 3's ``chunk_key_encoding`` (a document, or the flat
    ``{"name": ..., "separator": ...}`` form) as a v3 document; for v2 only ``"v2"``.

    Examples
    --------
    >>> key_encoding_document({"name": "v2", "separator": "/"}, 3)
    {'name': 'v2', 'configuration': {'separator': '/'}}
    >>> key_encoding_document({"name": "default"}, 2)  # doctest: +NORMALIZE_WHITESPACE
    Traceback (most recent call last):
    ...
    chunkflow.errors.MetadataError: chunk_key_encoding 'default': Zarr v2 arrays use the 'v2' encoding; pass
    {'name': 'v2', 'separator': '.' or '/'} or zarr_format=3
    """
    if not isinstance(encoding, Mapping):
        return encoding
    configuration = dict(encoding.get("configuration") or {})
    if "separator" in encoding:
        configuration["separator"] = encoding["separator"]
    doc = {"name": encoding.get("name"), "configuration": configuration}
    if zarr_format == 2 and doc["name"] != "v2":
        raise MetadataError(
            f"chunk_key_encoding {doc['name']!r}: Zarr v2 arrays use the 'v2' encoding; pass "
            "{'name': 'v2', 'separator': '.' or '/'} or zarr_format=3")
    return doc


def merge_compressor(
    compressors: CodecLike | Sequence[CodecLike] | None, options: dict[str, Any]
) -> CodecLike | Sequence[CodecLike] | None:
    """Fold zarr-python 2's ``compressor=`` (one codec) into ``compressors=``; both at once
    is refused (zarr-python 3's ``create_array`` has no ``compressor=`` at all)."""
    if "compressor" not in options:
        return compressors
    compressor = options.pop("compressor")
    if not (isinstance(compressors, str) and compressors == "auto"):
        raise MetadataError(
            "pass compressors= (zarr-python 3) or compressor= (zarr-python 2), not both; "
            f"got compressor={compressor!r} and compressors={compressors!r}")
    return compressor


def warn_order_v3(order: str | None) -> None:
    """zarr-python 3 warns that ``order=`` does nothing for v3 arrays; so does chunkflow."""
    if order is not None:
        warnings.warn(
            f"order={order!r} has no effect on a Zarr v3 array: chunks are stored in C order; "
            "to store them in F order pass filters=[{'name': 'transpose', 'configuration': "
            "{'order': [ndim - 1, ..., 0]}}]", RuntimeWarning, stacklevel=3)
