"""Fill value encodings for Zarr v2 and v3 metadata, and user input normalization.

JSON forms (both formats unless noted):

- floats: a number, ``"NaN"``, ``"Infinity"``, ``"-Infinity"``, or raw bits in hex
  (``"0x7fc00000"``, the v3 spelling; also accepted in v2); complex: ``[re, im]``.
- datetime64 / timedelta64: the int64 count, ``NaT`` being ``-2**63``.
- ``|S`` bytes, ``|V`` void and structured: standard Base64 of the *full* item
  (short decoded values are padded with NUL; tensorstore refuses short ones).
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
import binascii
import datetime
import math
from typing import Any

import numpy as np

from chunkflow.errors import MetadataError
from chunkflow.metadata.dtypes import VLEN_BYTES_NAMES, struct_field_types

__all__ = [
    "normalize_fill_value",
    "parse_fill_value_v2",
    "encode_fill_value_v2",
    "is_all_fill",
    "parse_fill_value_v3",
    "encode_fill_value_v3",
]

_SPECIAL_FLOATS = {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}
_NAT = -(2**63)


def _invalid(value: object, dtype: np.dtype, expected: str) -> MetadataError:
    return MetadataError(f"fill_value {value!r} is not valid for dtype {dtype}: expected {expected}")


# --------------------------------------------------------------------- numeric kinds


def _to_bool(value: Any, dtype: np.dtype, lenient: bool) -> np.generic:
    if isinstance(value, (bool, np.bool_)) or (_is_integer(value) and value in (0, 1)):
        return np.bool_(bool(value))
    raise _invalid(value, dtype, "true or false")


def _to_int(value: Any, dtype: np.dtype, lenient: bool) -> np.generic:
    if isinstance(value, (float, np.floating)) and float(value).is_integer():
        value = int(value)
    if not _is_integer(value):
        raise _invalid(value, dtype, "an integer")
    info = np.iinfo(dtype)
    if not info.min <= int(value) <= info.max:
        raise _invalid(value, dtype, f"an integer in [{info.min}, {info.max}]")
    return dtype.type(int(value))


def _to_float(value: Any, dtype: np.dtype, lenient: bool) -> np.generic:
    if isinstance(value, str):
        return _float_from_string(value, dtype, lenient)
    if not isinstance(value, (int, float, np.integer, np.floating)):
        raise _invalid(value, dtype, 'a number, "NaN", "Infinity", "-Infinity" or "0x..." bits')
    try:
        with np.errstate(over="ignore"):
            result = np.array(value, dtype=dtype)[()]
        overflowed = bool(np.isinf(result)) and math.isfinite(float(value))
    except OverflowError:  # Python ints beyond any float
        overflowed = True
    if overflowed:
        raise _invalid(value, dtype, f"a number within the range of {dtype}")
    return result


def _float_from_string(value: str, dtype: np.dtype, lenient: bool) -> np.generic:
    if value in _SPECIAL_FLOATS:
        return dtype.type(_SPECIAL_FLOATS[value])
    if value.startswith("0x"):
        digits = value[2:]
        try:
            raw = bytes.fromhex(digits)
        except ValueError:
            raw = b""
        if len(raw) != dtype.itemsize or len(digits) != 2 * dtype.itemsize:
            raise _invalid(value, dtype, f"'0x' and {2 * dtype.itemsize} hex digits")
        # Through a big-endian view so NaN payloads survive bit for bit.
        return np.frombuffer(raw, dtype=dtype.newbyteorder(">")).astype(dtype)[0]
    if lenient:
        try:
            return _to_float(float(value), dtype, lenient)
        except ValueError:
            pass
    raise _invalid(value, dtype, 'a number, "NaN", "Infinity", "-Infinity" or "0x..." bits')


def _to_complex(value: Any, dtype: np.dtype, lenient: bool) -> np.generic:
    part = np.dtype(f"f{dtype.itemsize // 2}")
    if isinstance(value, (list, tuple)) and len(value) == 2:
        real, imag = (_to_float(v, part, lenient) for v in value)
    elif isinstance(value, (complex, np.complexfloating)):
        real, imag = _to_float(value.real, part, lenient), _to_float(value.imag, part, lenient)
    elif isinstance(value, (int, float, str, np.integer, np.floating)):
        real, imag = _to_float(value, part, lenient), part.type(0)
    else:
        raise _invalid(value, dtype, "[real, imag]")
    out = np.zeros((), dtype=dtype)
    out.real, out.imag = real, imag
    return out[()]


def _to_time(value: Any, dtype: np.dtype, lenient: bool) -> np.generic:
    expected = "an int64 count (NaT = -2**63)"
    native = dtype.newbyteorder("=")
    if isinstance(value, (float, np.floating)) and float(value).is_integer():
        value = int(value)
    if _is_integer(value):
        if not _NAT <= int(value) < 2**63:
            raise _invalid(value, dtype, expected)
        return np.array(int(value), dtype=np.int64).view(native)[()]
    if isinstance(value, str) and not (value == "NaT" or lenient):
        raise _invalid(value, dtype, expected)
    try:
        if isinstance(value, (str, datetime.date)) and dtype.kind == "M":
            value = np.datetime64(value)
        elif isinstance(value, datetime.timedelta) and dtype.kind == "m":
            value = np.timedelta64(value)
        if isinstance(value, (np.datetime64, np.timedelta64, str)):
            return np.array(value).astype(native)[()]
    except (TypeError, ValueError) as err:
        raise _invalid(value, dtype, f"{expected} or a {native} value ({err})") from err
    raise _invalid(value, dtype, expected)


_NUMERIC = {"b": _to_bool, "i": _to_int, "u": _to_int, "f": _to_float, "c": _to_complex,
            "M": _to_time, "m": _to_time}  # fmt: skip


# ------------------------------------------------------------------ byte-like kinds


def _item_from_bytes(raw: bytes, value: object, dtype: np.dtype) -> np.generic:
    if len(raw) > dtype.itemsize:
        raise _invalid(value, dtype, f"at most {dtype.itemsize} bytes, got {len(raw)}")
    padded = raw.ljust(dtype.itemsize, b"\0")
    return np.frombuffer(padded, dtype=dtype).copy()[0]


def _from_base64(value: Any, dtype: np.dtype) -> np.generic:
    if _is_integer(value) and value == 0:  # old writers used 0 for "all zero bytes"
        return np.zeros((), dtype=dtype)[()]
    return _item_from_bytes(_decode_base64(value, dtype), value, dtype)


def _decode_base64(value: Any, dtype: np.dtype) -> bytes:
    if not isinstance(value, str):
        raise _invalid(value, dtype, "a Base64 string of the item's bytes")
    try:
        return base64.b64decode(value.encode("ascii"), validate=True)
    except (binascii.Error, UnicodeEncodeError) as err:
        raise _invalid(value, dtype, f"a Base64 string of the item's bytes ({err})") from err


def _from_byte_list(value: Any, dtype: np.dtype) -> np.generic:
    if not all(_is_integer(b) and 0 <= b <= 255 for b in value) or len(value) != dtype.itemsize:
        raise _invalid(value, dtype, f"a list of {dtype.itemsize} byte values")
    return _item_from_bytes(bytes(value), value, dtype)


def _unicode_from_json(value: Any, dtype: np.dtype) -> np.generic:
    if _is_integer(value) and value == 0:
        return np.str_("")
    if not isinstance(value, str):
        raise _invalid(value, dtype, "a string")
    if len(value) * 4 <= dtype.itemsize:
        return np.array(value, dtype=dtype)[()]
    # A full item in Base64 is always longer than the item's character count, so a
    # string too long to be the value itself can only be Base64.
    expected = f"a string of at most {dtype.itemsize // 4} characters"
    raw = _decode_base64(value, dtype)
    if len(raw) > dtype.itemsize or len(raw) % 4:
        raise _invalid(value, dtype, expected)
    try:
        text = raw.decode("utf-32-be" if dtype.byteorder == ">" else "utf-32-le")
    except UnicodeDecodeError as err:
        raise _invalid(value, dtype, expected) from err
    return np.array(text, dtype=dtype)[()]


def _bytes_from_user(value: Any, dtype: np.dtype) -> np.generic:
    if _is_integer(value) and value == 0:
        return np.zeros((), dtype=dtype)[()]
    if isinstance(value, str):
        try:
            value = value.encode("ascii")
        except UnicodeEncodeError as err:
            raise _invalid(value, dtype, "bytes or an ASCII string") from err
    if not isinstance(value, (bytes, bytearray, memoryview)):
        raise _invalid(value, dtype, "bytes")
    return _item_from_bytes(bytes(value), value, dtype)


def _unicode_from_user(value: Any, dtype: np.dtype) -> np.generic:
    if _is_integer(value) and value == 0:
        return np.str_("")
    if not isinstance(value, str) or len(value) * 4 > dtype.itemsize:
        raise _invalid(value, dtype, f"a string of at most {dtype.itemsize // 4} characters")
    return np.array(value, dtype=dtype)[()]


def _void_from_user(value: Any, dtype: np.dtype) -> np.generic:
    if isinstance(value, np.ndarray) and value.ndim == 0:
        value = value[()]
    if isinstance(value, np.void) and value.dtype.fields is not None and dtype.fields is not None:
        try:
            return np.array(value).astype(dtype, casting="same_kind").copy()[()]
        except (TypeError, ValueError) as err:
            raise _invalid(value, dtype, f"a value castable to {dtype} ({err})") from err
    if isinstance(value, np.void):
        value = value.tobytes()
    if isinstance(value, tuple) and dtype.fields is not None:
        try:
            return np.array(value, dtype=dtype)[()]
        except (TypeError, ValueError) as err:
            raise _invalid(value, dtype, f"one value per field ({err})") from err
    return _bytes_from_user(value, dtype)


# ------------------------------------------------------------------------- public


def normalize_fill_value(value: object, dtype: np.dtype) -> Any:
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
    >>> normalize_fill_value(300, np.dtype("i1"))
    Traceback (most recent call last):
    ...
    chunkflow.errors.MetadataError: fill_value 300 is not valid for dtype int8: expected an integer in [-128, 127]
    """
    dtype = np.dtype(dtype)
    if value is None or dtype.kind in "OT":
        return value
    if isinstance(value, np.ndarray) and value.ndim == 0:
        value = value[()]
    kind = dtype.kind
    if kind == "V":
        return _void_from_user(value, dtype)
    if kind == "S":
        return _bytes_from_user(value.tobytes() if isinstance(value, np.void) else value, dtype)
    if kind == "U":
        return _unicode_from_user(value, dtype)
    if kind in _NUMERIC:
        return _NUMERIC[kind](value, dtype, True)
    raise _invalid(value, dtype, "a supported dtype")


def _parse_json(value: Any, dtype: np.dtype, *, raw_bits: bool, vlen_bytes: bool) -> Any:
    kind = dtype.kind
    if kind in _NUMERIC:
        return _NUMERIC[kind](value, dtype, False)
    if kind == "U":
        return _unicode_from_json(value, dtype)
    if kind in "SV":
        if raw_bits and isinstance(value, list):
            return _from_byte_list(value, dtype)
        return _from_base64(value, dtype)
    if kind in "OT":
        if vlen_bytes and isinstance(value, str):
            return _decode_base64(value, dtype)
        return value
    raise _invalid(value, dtype, "a supported dtype")


def _encode_json(value: Any, dtype: np.dtype, *, raw_bits: bool) -> Any:
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
        return _encode_float(value)
    if kind == "c":
        return [_encode_float(value.real), _encode_float(value.imag)]
    if kind in "Mm":
        return int(np.array(value).view(np.int64))
    if kind == "U":
        return str(value)
    raw = np.array(value, dtype=dtype).tobytes()  # the full item, padding included
    if raw_bits:
        return list(raw)
    return base64.standard_b64encode(raw).decode("ascii")


def _encode_float(value: Any) -> Any:
    if np.isnan(value):
        return "NaN"
    if np.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    return float(value)


def parse_fill_value_v2(value: Any, dtype: np.dtype, *, vlen_bytes: bool = False) -> Any:
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
    value: Any, dtype: np.dtype, *, data_type: str | dict[str, Any] | None = None
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
        raise _invalid(value, dtype, "a value (v3 requires a fill_value; null is not allowed)")
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
    """
    dtype = np.dtype(dtype)
    if value is None:
        raise _invalid(value, dtype, "a value (v3 requires a fill_value)")
    field_types = struct_field_types(data_type)
    if field_types is not None:
        item = normalize_fill_value(value, dtype)
        return {
            name: _encode_json(item[name], dtype.fields[name][0],
                               raw_bits=_is_raw_bits(field_types.get(name)))
            for name in dtype.names
        }
    return _encode_json(value, dtype, raw_bits=_is_raw_bits(data_type))


def _parse_struct_fill(value: dict[str, Any], dtype: np.dtype, field_types: dict[str, Any]) -> Any:
    # zarr-extensions' struct: one JSON fill value per field, by field name.
    if dtype.names is None or set(value) != set(dtype.names):
        raise _invalid(value, dtype, f"an object with exactly the fields {list(dtype.names or ())}")
    item = np.zeros((), dtype=dtype)
    for name in dtype.names:
        item[name] = _parse_json(value[name], dtype.fields[name][0],
                                 raw_bits=_is_raw_bits(field_types.get(name)), vlen_bytes=False)
    return item[()]


def _is_raw_bits(data_type: Any) -> bool:
    return isinstance(data_type, str) and data_type.startswith("r") and data_type[1:].isdigit()


def _is_vlen_bytes(data_type: Any) -> bool:
    name = data_type.get("name") if isinstance(data_type, dict) else data_type
    return name in VLEN_BYTES_NAMES


def _is_integer(value: object) -> bool:
    # numpy.timedelta64 subclasses numpy.signedinteger, but it is a duration, not a count.
    return isinstance(value, (int, np.integer)) and not isinstance(
        value, (bool, np.bool_, np.timedelta64)
    )


def is_all_fill(chunk: np.ndarray, fill_value: np.generic) -> bool:
    """Whether every element of ``chunk`` equals ``fill_value`` (NaN equals NaN).

    Examples
    --------
    >>> is_all_fill(np.full(4, np.nan), np.float64("nan"))
    True
    >>> is_all_fill(np.array([0, 0, 1]), np.int64(0))
    False
    """
    if chunk.size == 0:
        return True
    kind = chunk.dtype.kind
    if kind in "fc" and np.isnan(fill_value):
        return bool(np.isnan(chunk).all())
    if kind in "mM" and np.isnat(fill_value):
        return bool(np.isnat(chunk).all())
    # The first element decides most data chunks without a full comparison (indexed,
    # not reshaped: reshaping a strided view would copy the whole chunk).
    if chunk[(0,) * chunk.ndim] != fill_value:
        return False
    return bool((chunk == fill_value).all())
