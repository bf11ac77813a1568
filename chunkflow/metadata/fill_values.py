"""Fill value encodings for Zarr v2 and v3 metadata, and user input normalization.

JSON forms (both formats unless noted):

- floats: a number, ``"NaN"``, ``"Infinity"``, ``"-Infinity"``, or raw bits in hex
  (``"0x7fc00000"``, the v3 spelling; also accepted in v2); complex: ``[re, im]``.
- datetime64 / timedelta64: the int64 count, ``NaT`` being ``-2**63``.
- ``|S`` bytes, ``|V`` void and structured: standard Base64 of the *full* item
  (short decoded values are padded with NUL; tensorstore refuses short ones in v2);
  v3 ``null_terminated_bytes`` without its trailing NULs, as zarr-python 3 writes it.
  v3 ``r<N>`` raw bits: a list of byte values.
- ``<U`` unicode: the plain string, as zarr-python 2 and 3 write it (a full-item
  Base64 string is also understood when reading; no peer writes it).
- ``object``: the value itself (a string for ``vlen-utf8`` / ``"string"``), Base64
  for variable-length bytes.
- v2 ``null`` means "undefined" and parses to ``None``; v3 requires a value.

Examples
--------
>>> parse_fill_value_v2("NaN", np.dtype("<f4"))
np.float32(nan)
>>> encode_fill_value_v2(b"ab", np.dtype("|S4"))
'YWIAAA=='
>>> parse_fill_value_v3("0x7fc00000", np.dtype("float32"))
np.float32(nan)
>>> encode_fill_value_v3(np.datetime64("NaT", "ns"), np.dtype("<M8[ns]"))
-9223372036854775808
"""

from __future__ import annotations

import base64
from typing import TYPE_CHECKING, Any

import numpy as np

from chunkflow.metadata.dtypes import VLEN_BYTES_NAMES, struct_field_types

if TYPE_CHECKING:
    from chunkflow.metadata.json import JSONValue
from chunkflow.metadata.fill_scalars import (
    NUMERIC_KINDS,
    FillValueLike,
    bytes_from_user,
    decode_base64,
    from_base64,
    from_byte_list,
    invalid,
    item_of,
    to_numeric,
    unicode_from_json,
    unicode_from_user,
    void_from_user,
)

__all__ = [
    "FillValueLike",
    "encode_fill_value_v2",
    "encode_fill_value_v3",
    "normalize_fill_value",
    "parse_fill_value_v2",
    "parse_fill_value_v3",
]


def normalize_fill_value(value: FillValueLike, dtype: np.dtype) -> Any:
    """Turn a user-given fill value into a NumPy scalar of ``dtype``.

    Parameters
    ----------
    value : object
        ``None`` (stays ``None``), a Python or NumPy number, ``"NaN"``/``"inf"``-like
        strings for floats, ``[re, im]`` or ``complex`` for complex types, an int
        count, ``numpy.datetime64`` or ISO string for times, ``bytes`` (or ASCII
        ``str``) for ``|S``/``|V``, ``str`` for ``<U``, a tuple or ``numpy.void`` for
        structured types, and ``0`` for "all zero" of any byte-like type. For
        ``object`` dtypes the value is returned unchanged (e.g. a ``str``).
    dtype : numpy.dtype

    Returns
    -------
    numpy.generic or None

    Raises
    ------
    MetadataError
        (a ``ValueError``) naming the value and the dtype.

    Examples
    --------
    >>> normalize_fill_value("nan", np.dtype("f8")), normalize_fill_value(2.0, np.dtype("u1"))
    (np.float64(nan), np.uint8(2))
    >>> normalize_fill_value(300, np.dtype("i1"))  # doctest: +NORMALIZE_WHITESPACE
    Traceback (most recent call last):
    ...
    chunkflow.errors.MetadataError: fill_value 300 is not valid for dtype int8: expected an integer in [-128,
    127]
    """
    dtype = np.dtype(dtype)
    if value is None or dtype.kind in "OT":
        return value
    if isinstance(value, np.ndarray) and value.ndim == 0:
        value = item_of(value)
    kind = dtype.kind
    if kind == "V":
        return void_from_user(value, dtype)
    if kind == "S":
        return bytes_from_user(value.tobytes() if isinstance(value, np.void) else value, dtype)
    if kind == "U":
        return unicode_from_user(value, dtype)
    if kind in NUMERIC_KINDS:
        return to_numeric(value, dtype, lenient=True)
    raise invalid(value, dtype, "a supported dtype")


def _parse_json(value: JSONValue, dtype: np.dtype, *, raw_bits: bool, vlen_bytes: bool) -> Any:
    kind = dtype.kind
    if kind in NUMERIC_KINDS:
        return to_numeric(value, dtype, lenient=False)
    if kind == "U":
        return unicode_from_json(value, dtype)
    if kind in "SV":
        if raw_bits and isinstance(value, list):
            return from_byte_list(value, dtype)
        return from_base64(value, dtype)
    if kind in "OT":
        if vlen_bytes and isinstance(value, str):
            return decode_base64(value, dtype)
        return value
    raise invalid(value, dtype, "a supported dtype")


def _encode_json(value: Any, dtype: np.dtype, *, raw_bits: bool, full_item: bool = True,
                 nan_bits: bool = False) -> Any:
    kind = dtype.kind
    if kind in "OT":
        if isinstance(value, (bytes, bytearray)):
            return base64.standard_b64encode(bytes(value)).decode("ascii")
        return value
    value = normalize_fill_value(value, dtype)
    if kind == "b":
        return bool(value)
    if kind in "iu":
        return int(value)
    if kind == "f":
        return _encode_float(value, nan_bits)
    if kind == "c":
        return [_encode_float(value.real, nan_bits), _encode_float(value.imag, nan_bits)]
    if kind in "Mm":
        return int(np.array(value).view(np.int64))
    if kind == "U":
        return str(value)
    if kind == "S" and not full_item:
        # v3 null_terminated_bytes: the value without its trailing NULs, as zarr-python 3
        # writes it (b"" is ""); readers pad it back to the item size.
        return base64.standard_b64encode(bytes(value)).decode("ascii")
    raw = np.array(value, dtype=dtype).tobytes()  # the full item, padding included
    if raw_bits:
        return list(raw)
    return base64.standard_b64encode(raw).decode("ascii")


def _encode_float(value: np.floating, nan_bits: bool) -> Any:
    if np.isnan(value):
        # "NaN" is one bit pattern (0x7fc00000 for float32): another NaN (sign, payload)
        # is written as its bits where the format allows it (v3), so that chunks equal
        # to it, left out of the store, read back as they were written.
        canonical = value.dtype.type(np.nan)
        if nan_bits and value.tobytes() != canonical.tobytes():
            return "0x" + np.array(value, dtype=value.dtype.newbyteorder(">")).tobytes().hex()
        return "NaN"
    if np.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    return float(value)


def parse_fill_value_v2(value: JSONValue, dtype: np.dtype, *, vlen_bytes: bool = False) -> Any:
    """Decode the ``fill_value`` of a v2 ``.zarray`` (``null`` gives ``None``).

    ``vlen_bytes=True`` (an ``object`` array with a ``vlen-bytes`` filter) decodes
    a Base64 string to ``bytes``; other ``object`` fill values are returned as is.

    Examples
    --------
    >>> parse_fill_value_v2(["NaN", 1.0], np.dtype("<c8"))
    np.complex64(nan+1j)
    >>> parse_fill_value_v2("YWI=", np.dtype("|S4")), parse_fill_value_v2(None, np.dtype("<i4"))
    (np.bytes_(b'ab'), None)
    """
    if value is None:
        return None
    return _parse_json(value, np.dtype(dtype), raw_bits=False, vlen_bytes=vlen_bytes)


def encode_fill_value_v2(value: Any, dtype: np.dtype) -> Any:
    """Encode a fill value for a v2 ``.zarray`` (``None`` gives ``null``).

    Examples
    --------
    >>> encode_fill_value_v2(float("-inf"), np.dtype("<f8")), encode_fill_value_v2(None, np.dtype("<f8"))
    ('-Infinity', None)
    """
    if value is None:
        return None
    return _encode_json(value, np.dtype(dtype), raw_bits=False)


def parse_fill_value_v3(
    value: JSONValue, dtype: np.dtype, *, data_type: str | dict[str, Any] | None = None
) -> Any:
    """Decode the (required) ``fill_value`` of a v3 array ``zarr.json``.

    ``data_type`` is the stored ``data_type`` document when it matters beyond the
    NumPy dtype: ``r<N>`` fill values are byte lists, ``variable_length_bytes`` ones
    Base64.

    Examples
    --------
    >>> parse_fill_value_v3("-Infinity", np.dtype("float16"))
    np.float16(-inf)
    >>> parse_fill_value_v3([1, 2], np.dtype("V2"), data_type="r16")
    np.void(b'\\x01\\x02')
    """
    dtype = np.dtype(dtype)
    if value is None:
        raise invalid(value, dtype, "a value (v3 requires a fill_value; null is not allowed)")
    field_types = struct_field_types(data_type)
    if field_types is not None and isinstance(value, dict):
        return _parse_struct_fill(value, dtype, field_types)
    return _parse_json(
        value, dtype, raw_bits=_is_raw_bits(data_type), vlen_bytes=_is_vlen_bytes(data_type)
    )


def encode_fill_value_v3(
    value: Any, dtype: np.dtype, *, data_type: str | dict[str, Any] | None = None
) -> Any:
    """Encode a fill value for a v3 array ``zarr.json`` (see :func:`parse_fill_value_v3`).

    Examples
    --------
    >>> encode_fill_value_v3(complex(1, float("nan")), np.dtype("complex128"))
    [1.0, 'NaN']

    A NaN other than the one ``"NaN"`` stands for is written as its bits:

    >>> encode_fill_value_v3(-np.float32("nan"), np.dtype("float32"))
    '0xffc00000'
    """
    dtype = np.dtype(dtype)
    if value is None:
        raise invalid(value, dtype, "a value (v3 requires a fill_value)")
    field_types = struct_field_types(data_type)
    fields = dtype.fields
    if field_types is not None and fields is not None:
        item = normalize_fill_value(value, dtype)
        return {
            name: _encode_json(item[name], fields[name][0],
                               raw_bits=_is_raw_bits(field_types.get(name)), nan_bits=True)
            for name in dtype.names or ()
        }
    return _encode_json(value, dtype, raw_bits=_is_raw_bits(data_type), full_item=False,
                        nan_bits=True)


def _parse_struct_fill(value: dict[str, Any], dtype: np.dtype, field_types: dict[str, Any]) -> Any:
    # zarr-extensions' struct: one JSON fill value per field, by field name.
    fields = dtype.fields
    if dtype.names is None or fields is None or set(value) != set(dtype.names):
        raise invalid(value, dtype, f"an object with exactly the fields {list(dtype.names or ())}")
    item = np.zeros((), dtype=dtype)
    for name in dtype.names:
        item[name] = _parse_json(value[name], fields[name][0],
                                 raw_bits=_is_raw_bits(field_types.get(name)), vlen_bytes=False)
    return item[()]


def _is_raw_bits(data_type: JSONValue) -> bool:
    return isinstance(data_type, str) and data_type.startswith("r") and data_type[1:].isdigit()


def _is_vlen_bytes(data_type: JSONValue) -> bool:
    name = data_type.get("name") if isinstance(data_type, dict) else data_type
    return name in VLEN_BYTES_NAMES
