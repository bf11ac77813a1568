"""One fill value, from JSON or from user input, as a NumPy scalar of a given dtype.

Per dtype kind: numbers (with ``"NaN"``, ``"Infinity"`` and hex raw bits for floats),
complex pairs, datetime / timedelta counts, Base64 or byte lists for bytes and void,
plain or Base64 strings for unicode. Lenient converters (user input) accept what numpy
would cast without loss; strict ones (metadata) accept only the JSON forms.
:mod:`chunkflow.metadata.fill_values` picks the converter for each format.

Examples
--------
>>> to_numeric("NaN", np.dtype("<f4"), lenient=False)
np.float32(nan)
>>> from_base64("YQ==", np.dtype("S2"))
np.bytes_(b'a')
"""

from __future__ import annotations

import base64
import binascii
import datetime
import math
from collections.abc import Mapping, Sequence
from typing import TypeAlias, TypeGuard, cast

import numpy as np

from chunkflow.errors import MetadataError

__all__ = [
    "NUMERIC_KINDS",
    "FillValueLike",
    "bytes_from_user",
    "decode_base64",
    "from_base64",
    "from_byte_list",
    "invalid",
    "is_integer",
    "to_numeric",
    "unicode_from_json",
    "unicode_from_user",
    "void_from_user",
]

#: A fill value as users give it (see
#: :func:`~chunkflow.metadata.fill_values.normalize_fill_value`): a Python or NumPy
#: scalar, bytes or a string, a sequence (a complex pair, a structured record), a
#: mapping of field names (a structured record), or ``None`` (no fill value, Zarr v2).
FillValueLike: TypeAlias = (
    bool | int | float | complex | str | bytes | np.generic | Sequence[object]
    | Mapping[str, object] | None
)


_SPECIAL_FLOATS = {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}
_NAT = -(2**63)


def item_of(array: np.ndarray) -> np.generic:
    """``array[()]``: the element of a 0-d array as a numpy scalar.

    numpy's stubs type ``a[()]`` as an array (an empty tuple of integer arrays); at run
    time it is the element.

    Examples
    --------
    >>> item_of(np.array(3, dtype="u1"))
    np.uint8(3)
    """
    return cast("np.generic", array[()])


def invalid(value: object, dtype: np.dtype, expected: str) -> MetadataError:
    return MetadataError(f"fill_value {value!r} is not valid for dtype {dtype}: expected {expected}")


# --------------------------------------------------------------------- numeric kinds


def _to_bool(value: FillValueLike, dtype: np.dtype, lenient: bool) -> np.generic:
    if isinstance(value, (bool, np.bool_)) or (is_integer(value) and value in (0, 1)):
        return np.bool_(bool(value))
    raise invalid(value, dtype, "true or false")


def _to_int(value: FillValueLike, dtype: np.dtype, lenient: bool) -> np.generic:
    if isinstance(value, (float, np.floating)) and float(value).is_integer():
        value = int(value)
    if not is_integer(value):
        raise invalid(value, dtype, "an integer")
    info = np.iinfo(dtype)
    if not info.min <= int(value) <= info.max:
        raise invalid(value, dtype, f"an integer in [{info.min}, {info.max}]")
    return dtype.type(int(value))


def _to_float(value: object, dtype: np.dtype, lenient: bool) -> np.generic:
    if isinstance(value, str):
        return _float_from_string(value, dtype, lenient)
    if not isinstance(value, (int, float, np.integer, np.floating)):
        raise invalid(value, dtype, 'a number, "NaN", "Infinity", "-Infinity" or "0x..." bits')
    try:
        with np.errstate(over="ignore"):
            result = item_of(np.array(value, dtype=dtype))
        overflowed = bool(np.isinf(result)) and math.isfinite(float(value))
    except OverflowError:  # Python ints beyond any float
        overflowed = True
    if overflowed:
        raise invalid(value, dtype, f"a number within the range of {dtype}")
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
            raise invalid(value, dtype, f"'0x' and {2 * dtype.itemsize} hex digits")
        # Through a big-endian view so NaN payloads survive bit for bit.
        return np.frombuffer(raw, dtype=dtype.newbyteorder(">")).astype(dtype)[0]
    if lenient:
        try:
            return _to_float(float(value), dtype, lenient)
        except ValueError:
            pass
    raise invalid(value, dtype, 'a number, "NaN", "Infinity", "-Infinity" or "0x..." bits')


def _to_complex(value: FillValueLike, dtype: np.dtype, lenient: bool) -> np.generic:
    part = np.dtype(f"f{dtype.itemsize // 2}")
    if isinstance(value, (list, tuple)) and len(value) == 2:
        real, imag = (_to_float(v, part, lenient) for v in value)
    elif isinstance(value, (complex, np.complexfloating)):
        real, imag = _to_float(value.real, part, lenient), _to_float(value.imag, part, lenient)
    elif isinstance(value, (int, float, str, np.integer, np.floating)):
        real, imag = _to_float(value, part, lenient), part.type(0)
    else:
        raise invalid(value, dtype, "[real, imag]")
    out = np.zeros((), dtype=dtype)
    out.real, out.imag = real, imag
    return item_of(out)


def _to_time(value: FillValueLike, dtype: np.dtype, lenient: bool) -> np.generic:
    expected = "an int64 count (NaT = -2**63)"
    native = dtype.newbyteorder("=")
    if isinstance(value, (float, np.floating)) and float(value).is_integer():
        value = int(value)
    if is_integer(value):
        if not _NAT <= int(value) < 2**63:
            raise invalid(value, dtype, expected)
        return item_of(np.array(int(value), dtype=np.int64).view(native))
    if isinstance(value, str) and not (value == "NaT" or lenient):
        raise invalid(value, dtype, expected)
    try:
        if isinstance(value, (str, datetime.date)) and dtype.kind == "M":
            value = np.datetime64(value)
        elif isinstance(value, datetime.timedelta) and dtype.kind == "m":
            value = np.timedelta64(value)
        if isinstance(value, (np.datetime64, np.timedelta64, str)):
            return item_of(np.array(value).astype(native))
    except (TypeError, ValueError) as err:
        raise invalid(value, dtype, f"{expected} or a {native} value ({err})") from err
    raise invalid(value, dtype, expected)


_NUMERIC = {"b": _to_bool, "i": _to_int, "u": _to_int, "f": _to_float, "c": _to_complex,
            "M": _to_time, "m": _to_time}  # fmt: skip

#: The dtype kinds :func:`to_numeric` converts.
NUMERIC_KINDS = frozenset(_NUMERIC)


def to_numeric(value: FillValueLike, dtype: np.dtype, *, lenient: bool) -> np.generic:
    """A bool, number, complex or datetime/timedelta fill value as a scalar of ``dtype``."""
    return _NUMERIC[dtype.kind](value, dtype, lenient)


# ------------------------------------------------------------------ byte-like kinds


def _item_from_bytes(raw: bytes, value: object, dtype: np.dtype) -> np.generic:
    if len(raw) > dtype.itemsize:
        raise invalid(value, dtype, f"at most {dtype.itemsize} bytes, got {len(raw)}")
    padded = raw.ljust(dtype.itemsize, b"\0")
    return np.frombuffer(padded, dtype=dtype).copy()[0]


def from_base64(value: FillValueLike, dtype: np.dtype) -> np.generic:
    if is_integer(value) and value == 0:  # old writers used 0 for "all zero bytes"
        return item_of(np.zeros((), dtype=dtype))
    return _item_from_bytes(decode_base64(value, dtype), value, dtype)


def decode_base64(value: FillValueLike, dtype: np.dtype) -> bytes:
    if not isinstance(value, str):
        raise invalid(value, dtype, "a Base64 string of the item's bytes")
    try:
        return base64.b64decode(value.encode("ascii"), validate=True)
    except (binascii.Error, UnicodeEncodeError) as err:
        raise invalid(value, dtype, f"a Base64 string of the item's bytes ({err})") from err


def from_byte_list(value: FillValueLike, dtype: np.dtype) -> np.generic:
    if (not isinstance(value, (list, tuple)) or len(value) != dtype.itemsize
            or not all(is_integer(b) and 0 <= b <= 255 for b in value)):
        raise invalid(value, dtype, f"a list of {dtype.itemsize} byte values")
    return _item_from_bytes(bytes(value), value, dtype)


def unicode_from_json(value: FillValueLike, dtype: np.dtype) -> np.generic:
    if is_integer(value) and value == 0:
        return np.str_("")
    if not isinstance(value, str):
        raise invalid(value, dtype, "a string")
    if len(value) * 4 <= dtype.itemsize:
        return item_of(np.array(value, dtype=dtype))
    # A full item in Base64 is always longer than the item's character count, so a
    # string too long to be the value itself can only be Base64.
    expected = f"a string of at most {dtype.itemsize // 4} characters"
    raw = decode_base64(value, dtype)
    if len(raw) > dtype.itemsize or len(raw) % 4:
        raise invalid(value, dtype, expected)
    try:
        text = raw.decode("utf-32-be" if dtype.byteorder == ">" else "utf-32-le")
    except UnicodeDecodeError as err:
        raise invalid(value, dtype, expected) from err
    return item_of(np.array(text, dtype=dtype))


def bytes_from_user(value: FillValueLike, dtype: np.dtype) -> np.generic:
    if is_integer(value) and value == 0:
        return item_of(np.zeros((), dtype=dtype))
    if isinstance(value, str):
        try:
            value = value.encode("ascii")
        except UnicodeEncodeError as err:
            raise invalid(value, dtype, "bytes or an ASCII string") from err
    if not isinstance(value, (bytes, bytearray, memoryview)):
        raise invalid(value, dtype, "bytes")
    return _item_from_bytes(bytes(value), value, dtype)


def unicode_from_user(value: FillValueLike, dtype: np.dtype) -> np.generic:
    if is_integer(value) and value == 0:
        return np.str_("")
    if not isinstance(value, str) or len(value) * 4 > dtype.itemsize:
        raise invalid(value, dtype, f"a string of at most {dtype.itemsize // 4} characters")
    return item_of(np.array(value, dtype=dtype))


def void_from_user(value: FillValueLike, dtype: np.dtype) -> np.generic:
    if isinstance(value, np.ndarray) and value.ndim == 0:
        value = value[()]
    if isinstance(value, np.void) and value.dtype.fields is not None and dtype.fields is not None:
        try:
            return item_of(np.array(value).astype(dtype, casting="same_kind").copy())
        except (TypeError, ValueError) as err:
            raise invalid(value, dtype, f"a value castable to {dtype} ({err})") from err
    if isinstance(value, np.void):
        value = value.tobytes()
    if isinstance(value, tuple) and dtype.fields is not None:
        try:
            return item_of(np.array(value, dtype=dtype))
        except (TypeError, ValueError) as err:
            raise invalid(value, dtype, f"one value per field ({err})") from err
    return bytes_from_user(value, dtype)


# ------------------------------------------------------------------------- public


def is_integer(value: object) -> TypeGuard[int | np.integer]:
    # numpy.timedelta64 subclasses numpy.signedinteger, but it is a duration, not a count.
    return isinstance(value, (int, np.integer)) and not isinstance(
        value, (bool, np.bool_, np.timedelta64)
    )
