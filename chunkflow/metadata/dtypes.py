"""Data type encodings: Zarr v2 typestrs and Zarr v3 ``data_type`` documents.

v2 stores a NumPy typestr with byte order (``"<f8"``, ``"|S12"``, ``"<M8[ns]"``) or,
for structured types, a list of ``[name, typestr(, shape)]``. v3 stores a name
(``"float64"``) or, for the extension types zarr-python 3.1 writes, an object such as
``{"name": "numpy.datetime64", "configuration": {"unit": "ns", "scale_factor": 1}}``.
v3 names carry no byte order (the ``bytes`` codec does), so v3 parsing returns
native-order dtypes.

Examples
--------
>>> parse_dtype_v2("<M8[ns]")
dtype('<M8[ns]')
>>> encode_dtype_v2(np.dtype([("x", "<i4"), ("y", ">f8", (2,))]))
[['x', '<i4'], ['y', '>f8', [2]]]
>>> parse_data_type_v3({"name": "fixed_length_utf32", "configuration": {"length_bytes": 12}})
dtype('<U3')
>>> encode_data_type_v3(np.dtype("<m8[10ms]"))
{'name': 'numpy.timedelta64', 'configuration': {'unit': 'ms', 'scale_factor': 10}}
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeGuard

import numpy as np

from chunkflow.errors import MetadataError, UnsupportedDtypeError

if TYPE_CHECKING:
    from chunkflow.metadata.json import JSONValue

__all__ = [
    "V3_CORE_NAMES",
    "encode_data_type_v3",
    "encode_dtype_v2",
    "parse_data_type_v3",
    "parse_dtype_v2",
    "struct_field_types",
]

#: The v2 dtype kinds chunkflow stores (``T`` = NumPy StringDType is written as ``|O``).
_V2_KINDS = frozenset("biufcMmSUVO")

#: Core v3 names and their (native order) NumPy dtypes.
V3_CORE_NAMES: dict[str, np.dtype] = {
    name: np.dtype(name)
    for name in (
        "bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
        "float16", "float32", "float64", "complex64", "complex128",
    )
}  # fmt: skip
_V3_NAME_OF = {(dt.kind, dt.itemsize): name for name, dt in V3_CORE_NAMES.items()}

#: Units numpy accepts for datetime64/timedelta64 (and zarr-python 3.1 writes).
_TIME_UNITS = ("Y", "M", "W", "D", "h", "m", "s", "ms", "us", "μs", "ns", "ps", "fs", "as", "generic")
_TIME_NAMES = {"numpy.datetime64": "M", "numpy.timedelta64": "m"}
_RAW_BITS = re.compile(r"r([1-9][0-9]*)")
#: v3 names whose numpy dtype is ``object``: the element type tells how fill values encode.
VLEN_STRING_NAMES = ("string",)
VLEN_BYTES_NAMES = ("variable_length_bytes", "bytes")


# --------------------------------------------------------------------------- v2


def parse_dtype_v2(doc: str | list[Any]) -> np.dtype:
    """Parse the ``dtype`` of a v2 ``.zarray``.

    Parameters
    ----------
    doc : str or list
        A NumPy typestr (``"<f8"``), or a structured description: a list of
        ``[name, typestr]`` / ``[name, typestr, shape]`` entries, nested freely.

    Returns
    -------
    numpy.dtype

    Raises
    ------
    MetadataError
        ``UnsupportedDtypeError`` for a well-formed but unsupported type.

    Examples
    --------
    >>> parse_dtype_v2(">i4"), parse_dtype_v2("|S5"), parse_dtype_v2("|O")
    (dtype('>i4'), dtype('S5'), dtype('O'))
    >>> parse_dtype_v2([["a", "<i4"], ["b", [["c", "|u1"]], [2]]])
    dtype([('a', '<i4'), ('b', [('c', 'u1')], (2,))])
    """
    if isinstance(doc, list):
        return _numpy_dtype([_parse_field_v2(entry, doc) for entry in doc], doc)
    if not isinstance(doc, str):
        raise MetadataError(f"dtype must be a typestr or a list of fields, got {doc!r}")
    try:
        dtype = np.dtype(doc)
    except (TypeError, ValueError, SyntaxError) as err:
        raise UnsupportedDtypeError(f"dtype {doc!r} is not a NumPy typestr ({err})") from err
    if dtype.subdtype is not None or dtype.kind not in _V2_KINDS or _is_empty_item(dtype):
        raise UnsupportedDtypeError(f"dtype {doc!r} ({dtype}) cannot be stored in Zarr v2")
    return dtype


def _is_empty_item(dtype: np.dtype) -> bool:
    # "|S0" / "<U" parse in numpy but hold nothing; no Zarr implementation stores them.
    return dtype.itemsize == 0 and dtype.kind in "SUV"


def _parse_field_v2(entry: JSONValue, doc: list[Any]) -> tuple[Any, ...]:
    if not (isinstance(entry, list) and len(entry) in (2, 3) and isinstance(entry[0], str)):
        raise MetadataError(
            f"structured dtype entries must be [name, typestr] or [name, typestr, shape], "
            f"got {entry!r} in {doc!r}"
        )
    field_dtype = parse_dtype_v2(entry[1])
    if len(entry) == 2:
        return (entry[0], field_dtype)
    shape = entry[2]
    if not (isinstance(shape, list) and all(_is_int(n) and n >= 0 for n in shape)):
        raise MetadataError(
            f"structured dtype field shape must be a list of ints, got {entry!r} in {doc!r}"
        )
    return (entry[0], field_dtype, tuple(shape))


def encode_dtype_v2(dtype: np.dtype) -> str | list[Any]:
    """Encode a dtype as a v2 ``dtype`` value (the inverse of :func:`parse_dtype_v2`).

    NumPy's ``StringDType`` is written as ``"|O"`` (with a ``vlen-utf8`` filter), as
    zarr-python does.

    Raises
    ------
    UnsupportedDtypeError
        For dtypes Zarr v2 cannot describe: sub-array dtypes at the top level and
        structured dtypes with padding or out-of-order fields (repack them first with
        ``numpy.lib.recfunctions.repack_fields``).

    Examples
    --------
    >>> encode_dtype_v2(np.dtype("bool")), encode_dtype_v2(np.dtype("U3"))
    ('|b1', '<U3')
    """
    dtype = np.dtype(dtype)
    if dtype.kind == "T":
        return "|O"
    if dtype.fields is not None:
        doc = _encode_fields_v2(dtype)
        if parse_dtype_v2(doc) != dtype:
            raise UnsupportedDtypeError(
                f"structured dtype {dtype} has padding or reordered fields, which Zarr "
                "cannot describe; repack it (numpy.lib.recfunctions.repack_fields)"
            )
        return doc
    if dtype.subdtype is not None or dtype.kind not in _V2_KINDS or _is_empty_item(dtype):
        raise UnsupportedDtypeError(f"dtype {dtype} cannot be stored in Zarr v2")
    return dtype.str


def _fields(dtype: np.dtype) -> Mapping[str, tuple[Any, ...]]:
    """``dtype.fields``: name -> (dtype, offset[, title]); empty for a plain dtype."""
    return dtype.fields or {}


def _encode_fields_v2(dtype: np.dtype) -> list[Any]:
    fields: list[Any] = []
    for name in dtype.names or ():
        field_dtype = _fields(dtype)[name][0]
        if field_dtype.subdtype is not None:
            base, shape = field_dtype.subdtype
            fields.append([name, encode_dtype_v2(base), list(shape)])
        else:
            fields.append([name, encode_dtype_v2(field_dtype)])
    return fields


# --------------------------------------------------------------------------- v3


def parse_data_type_v3(doc: str | dict[str, Any]) -> np.dtype:
    """Parse the ``data_type`` of a v3 array ``zarr.json``.

    Accepts the core names (``"int16"``, ``"float64"``, ``"r16"``...), the object
    form ``{"name": "int32"}``, and the extension types zarr-python 3.1 writes:
    ``numpy.datetime64`` / ``numpy.timedelta64`` (``unit``, ``scale_factor``),
    ``fixed_length_utf32`` / ``null_terminated_bytes`` / ``raw_bytes``
    (``length_bytes``), ``structured`` (``fields``), zarr-extensions' ``struct``
    (tensorstore's structured type), ``string`` and
    ``variable_length_bytes`` (both NumPy ``object``).

    Raises
    ------
    UnsupportedDtypeError
        For names chunkflow does not know, naming them.
    MetadataError
        For a malformed configuration.

    Examples
    --------
    >>> parse_data_type_v3("int16"), parse_data_type_v3("r24"), parse_data_type_v3("string")
    (dtype('int16'), dtype('V3'), dtype('O'))
    >>> parse_data_type_v3({"name": "numpy.datetime64",
    ...                     "configuration": {"unit": "s", "scale_factor": 10}})
    dtype('<M8[10s]')
    """
    name, config = _split_named(doc)
    if name in V3_CORE_NAMES:
        return V3_CORE_NAMES[name]
    if (match := _RAW_BITS.fullmatch(name)) is not None:
        bits = int(match.group(1))
        if bits % 8:
            raise UnsupportedDtypeError(f"data_type {name!r}: raw bits must be a multiple of 8")
        return _numpy_dtype(f"V{bits // 8}", doc)
    if name in _TIME_NAMES:
        return _parse_time_v3(name, config, doc)
    if name == "fixed_length_utf32":
        length = _length_bytes(config, doc)
        if length % 4:
            raise MetadataError(f"data_type {doc!r}: length_bytes must be a multiple of 4")
        return _numpy_dtype(f"<U{length // 4}", doc)
    if name == "null_terminated_bytes":
        return _numpy_dtype(f"S{_length_bytes(config, doc)}", doc)
    if name == "raw_bytes":
        return _numpy_dtype(f"V{_length_bytes(config, doc)}", doc)
    if name == "structured":
        return _parse_structured_v3(config, doc)
    if name == "struct":
        return _parse_struct_v3(config, doc)
    if name in VLEN_STRING_NAMES or name in VLEN_BYTES_NAMES:
        return np.dtype(object)
    raise UnsupportedDtypeError(f"data_type {doc!r} is not supported")


def _numpy_dtype(spec: Any, doc: JSONValue) -> np.dtype:
    """``np.dtype(spec)``, with numpy's refusals (duplicate field names, items too large
    for numpy) as chunkflow errors that quote the document."""
    try:
        return np.dtype(spec)
    except (TypeError, ValueError, OverflowError, MemoryError) as err:
        raise UnsupportedDtypeError(f"data type {doc!r} cannot be represented: {err}") from None


def _split_named(doc: JSONValue) -> tuple[str, dict[str, Any]]:
    if isinstance(doc, str):
        return doc, {}
    if isinstance(doc, dict) and isinstance(doc.get("name"), str):
        config = doc.get("configuration", {})
        if not isinstance(config, dict):
            raise MetadataError(f"data_type {doc!r}: configuration must be an object")
        return doc["name"], config
    raise MetadataError(f"data_type must be a name or an object with a 'name', got {doc!r}")


def _length_bytes(config: dict[str, Any], doc: JSONValue) -> int:
    length = config.get("length_bytes")
    if not (_is_int(length) and length >= 1):
        raise MetadataError(f"data_type {doc!r}: configuration.length_bytes must be an int >= 1")
    return int(length)


def _parse_time_v3(name: str, config: dict[str, Any], doc: JSONValue) -> np.dtype:
    unit = config.get("unit")
    scale = config.get("scale_factor", 1)
    if unit not in _TIME_UNITS:
        raise MetadataError(f"data_type {doc!r}: unit must be one of {_TIME_UNITS}, got {unit!r}")
    if not (_is_int(scale) and 1 <= scale < 2**31):
        raise MetadataError(f"data_type {doc!r}: scale_factor must be an int in [1, 2**31)")
    if unit == "generic":
        return _numpy_dtype(_TIME_NAMES[name], doc)
    return _numpy_dtype(f"{_TIME_NAMES[name]}8[{scale}{unit}]", doc)


def _parse_structured_v3(config: dict[str, Any], doc: JSONValue) -> np.dtype:
    fields = config.get("fields")
    if not isinstance(fields, list):
        raise MetadataError(f"data_type {doc!r}: configuration.fields must be a list")
    parsed = []
    for entry in fields:
        if not (isinstance(entry, list) and len(entry) == 2 and isinstance(entry[0], str)):
            raise MetadataError(f"data_type {doc!r}: each field must be [name, data_type]")
        field_dtype = parse_data_type_v3(entry[1])
        if field_dtype.kind == "O":
            raise UnsupportedDtypeError(f"data_type {doc!r}: variable-length fields")
        parsed.append((entry[0], field_dtype))
    return _numpy_dtype(parsed, doc)


def _parse_struct_v3(config: dict[str, Any], doc: JSONValue) -> np.dtype:
    # zarr-extensions' "struct" (what tensorstore writes): the fields are objects
    # {"name": ..., "data_type": ...} instead of zarr-python's [name, data_type] pairs.
    fields = config.get("fields")
    if not isinstance(fields, list) or not all(
        isinstance(f, dict) and isinstance(f.get("name"), str) and "data_type" in f
        for f in fields
    ):
        raise MetadataError(
            f"data_type {doc!r}: configuration.fields must be a list of "
            '{"name": ..., "data_type": ...} objects'
        )
    pairs = [[f["name"], f["data_type"]] for f in fields]
    return _parse_structured_v3({"fields": pairs}, doc)


def struct_field_types(data_type: JSONValue) -> dict[str, Any] | None:
    """The field ``data_type`` documents of a zarr-extensions ``struct``, else ``None``.

    Examples
    --------
    >>> struct_field_types({"name": "struct", "configuration": {"fields": [
    ...     {"name": "x", "data_type": "r16"}]}})
    {'x': 'r16'}
    >>> struct_field_types("int8") is None
    True
    """
    if not (isinstance(data_type, dict) and data_type.get("name") == "struct"):
        return None
    fields = data_type.get("configuration", {}).get("fields", [])
    return {f["name"]: f["data_type"] for f in fields}


def encode_data_type_v3(dtype: np.dtype) -> str | dict[str, Any]:
    """The v3 ``data_type`` zarr-python 3.1 writes for ``dtype``.

    Byte order is dropped (v3 keeps it in the ``bytes`` codec). ``object`` and
    NumPy ``StringDType`` become ``"string"``, the variable-length UTF-8 type.

    Raises
    ------
    UnsupportedDtypeError
        For dtypes v3 cannot describe, e.g. structured dtypes with sub-array fields
        (zarr-python would silently turn them into raw bytes).

    Examples
    --------
    >>> encode_data_type_v3(np.dtype(">f8")), encode_data_type_v3(np.dtype(object))
    ('float64', 'string')
    >>> encode_data_type_v3(np.dtype("S5"))
    {'name': 'null_terminated_bytes', 'configuration': {'length_bytes': 5}}
    """
    dtype = np.dtype(dtype)
    kind = dtype.kind
    if _is_empty_item(dtype):
        raise UnsupportedDtypeError(f"dtype {dtype} holds no bytes and cannot be stored")
    if (kind, dtype.itemsize) in _V3_NAME_OF and kind in "biufc":
        return _V3_NAME_OF[(kind, dtype.itemsize)]
    if kind in "Mm":
        unit, scale = np.datetime_data(dtype)
        name = "numpy.datetime64" if kind == "M" else "numpy.timedelta64"
        return {"name": name, "configuration": {"unit": unit, "scale_factor": int(scale)}}
    if kind == "U":
        return _sized("fixed_length_utf32", dtype.itemsize)
    if kind == "S":
        return _sized("null_terminated_bytes", dtype.itemsize)
    if kind in "OT":
        return "string"
    if kind == "V" and dtype.fields is not None:
        return _encode_structured_v3(dtype)
    if kind == "V" and dtype.subdtype is None:
        return _sized("raw_bytes", dtype.itemsize)
    raise UnsupportedDtypeError(f"dtype {dtype} cannot be stored in Zarr v3")


def _sized(name: str, length: int) -> dict[str, Any]:
    return {"name": name, "configuration": {"length_bytes": length}}


def _encode_structured_v3(dtype: np.dtype) -> dict[str, Any]:
    fields = []
    for name in dtype.names or ():
        field_dtype = _fields(dtype)[name][0]
        if field_dtype.subdtype is not None:
            raise UnsupportedDtypeError(
                f"structured dtype {dtype}: field {name!r} is a sub-array, which Zarr v3 "
                "data types cannot describe"
            )
        fields.append([name, encode_data_type_v3(field_dtype)])
    doc = {"name": "structured", "configuration": {"fields": fields}}
    if parse_data_type_v3(doc).itemsize != dtype.itemsize or _has_gaps(dtype):
        raise UnsupportedDtypeError(
            f"structured dtype {dtype} has padding or reordered fields; repack it "
            "(numpy.lib.recfunctions.repack_fields)"
        )
    return doc


def _has_gaps(dtype: np.dtype) -> bool:
    offset = 0
    for name in dtype.names or ():
        field_dtype, field_offset = _fields(dtype)[name][:2]
        if field_offset != offset:
            return True
        offset += field_dtype.itemsize
    return offset != dtype.itemsize


def _is_int(value: object) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool)
