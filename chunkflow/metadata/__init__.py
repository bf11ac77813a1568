"""Zarr v2 and v3 metadata documents: parse, validate, serialize. No I/O.

Examples
--------
>>> from chunkflow.metadata import ArrayMetadataV2, parse_zarr_json
>>> meta = ArrayMetadataV2.from_bytes(b'''{"zarr_format": 2, "shape": [3], "chunks": [2],
...     "dtype": "<i2", "compressor": null, "fill_value": 7, "order": "C",
...     "filters": null}''', "x")
>>> meta.dtype, meta.fill_value, meta.chunk_key_encoding
(dtype('int16'), np.int16(7), ('v2', '.'))
"""

from __future__ import annotations

from chunkflow.metadata.dtypes import (
    encode_data_type_v3,
    encode_dtype_v2,
    parse_data_type_v3,
    parse_dtype_v2,
)
from chunkflow.metadata.fill_checks import fill_mask, is_all_fill
from chunkflow.metadata.fill_values import (
    FillValueLike,
    encode_fill_value_v2,
    encode_fill_value_v3,
    normalize_fill_value,
    parse_fill_value_v2,
    parse_fill_value_v3,
)
from chunkflow.metadata.json import JSONValue, dump_json_document, load_json_document
from chunkflow.metadata.v2 import ArrayMetadataV2, GroupMetadataV2
from chunkflow.metadata.v3 import ArrayMetadataV3, GroupMetadataV3, parse_zarr_json

#: The document of an array, in either format.
ArrayMetadata = ArrayMetadataV2 | ArrayMetadataV3

__all__ = [
    "ArrayMetadata",
    "ArrayMetadataV2",
    "ArrayMetadataV3",
    "FillValueLike",
    "GroupMetadataV2",
    "GroupMetadataV3",
    "JSONValue",
    "dump_json_document",
    "encode_data_type_v3",
    "encode_dtype_v2",
    "encode_fill_value_v2",
    "encode_fill_value_v3",
    "fill_mask",
    "is_all_fill",
    "load_json_document",
    "normalize_fill_value",
    "parse_data_type_v3",
    "parse_dtype_v2",
    "parse_fill_value_v2",
    "parse_fill_value_v3",
    "parse_zarr_json",
]
