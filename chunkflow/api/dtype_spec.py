"""What a creation call's ``dtype=`` (and zarr-python 2's ``object_codec=``) asks for.

A dtype is a numpy dtype, or one of the spellings zarr-python 2 and 3 accept for
``object`` items, each naming the codec that stores them:

==========================================================  ===============================
``dtype=``                                                  stored as
==========================================================  ===============================
``str``, ``"str"``, ``"string"``, numpy ``StringDType``     ``vlen-utf8`` (v3 ``"string"``)
``bytes``, ``"bytes"``, ``"variable_length_bytes"``         ``vlen-bytes`` (v3
                                                            ``"variable_length_bytes"``)
``"array:i8"`` (any numpy type after ``array:``)            ``vlen-array`` (v2 only)
``object`` with ``object_codec=`` a numcodecs codec         that codec (v3: only the two
                                                            ``vlen-*`` codecs)
a zarr-python 3 data type object (``zarr.dtype.Int32()``)   its numpy dtype, or the above
==========================================================  ===============================

Examples
--------
>>> normalize_dtype(bytes)
DtypeSpec(dtype=dtype('O'), object_codec={'id': 'vlen-bytes'})
>>> normalize_dtype("array:i2").object_codec
{'id': 'vlen-array', 'dtype': '<i2'}
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from chunkflow.errors import MetadataError
from chunkflow.metadata import parse_data_type_v3

if TYPE_CHECKING:
    from numpy.typing import DTypeLike

__all__ = ["VLEN_DATA_TYPES", "DtypeSpec", "default_fill_value", "items_dtype", "normalize_dtype"]

VLEN_UTF8 = {"id": "vlen-utf8"}
VLEN_BYTES = {"id": "vlen-bytes"}
#: The v3 data type of each object codec that has one (zarr-python 3.1's names).
VLEN_DATA_TYPES = {"vlen-utf8": "string", "vlen-bytes": "variable_length_bytes"}
_SPELLINGS: dict[Any, dict[str, str]] = {
    str: VLEN_UTF8, "str": VLEN_UTF8, "string": VLEN_UTF8, "vlen-utf8": VLEN_UTF8,
    bytes: VLEN_BYTES, "bytes": VLEN_BYTES, "variable_length_bytes": VLEN_BYTES,
    "vlen-bytes": VLEN_BYTES,
}


@dataclass(frozen=True)
class DtypeSpec:
    """The numpy dtype to store, and for ``object`` items the numcodecs config of the
    codec that encodes them (``None`` when the caller named none)."""

    dtype: np.dtype
    object_codec: dict[str, Any] | None = None

    @property
    def data_type_v3(self) -> str | None:
        """The v3 ``data_type`` of the object items, when they have one."""
        if self.object_codec is None:
            return None
        return VLEN_DATA_TYPES.get(self.object_codec["id"])


def normalize_dtype(dtype: DTypeLike, object_codec: Any = None) -> DtypeSpec:
    """Resolve ``dtype`` (and zarr-python 2's ``object_codec=``), see the module docs.

    Raises
    ------
    MetadataError
        For what is not a dtype, and for an ``object_codec`` that contradicts the dtype
        (``dtype=str, object_codec=VLenBytes()``) or given with a non-object dtype.

    Examples
    --------
    >>> import numcodecs
    >>> normalize_dtype("uint16"), normalize_dtype(str).object_codec
    (DtypeSpec(dtype=dtype('uint16'), object_codec=None), {'id': 'vlen-utf8'})
    >>> normalize_dtype(object, numcodecs.JSON()).object_codec["id"]
    'json2'
    """
    spec = _from_dtype(dtype)
    if object_codec is None:
        return spec
    config = _codec_config(object_codec)
    if spec.dtype.kind != "O":
        raise MetadataError(f"object_codec={object_codec!r} is for dtype=object arrays, "
                            f"got dtype {spec.dtype}")
    if spec.object_codec is not None and spec.object_codec != config:
        raise MetadataError(f"dtype={dtype!r} is stored with {spec.object_codec['id']!r}, but "
                            f"object_codec={object_codec!r} was given; pass one of them")
    return DtypeSpec(spec.dtype, config)


def _from_dtype(dtype: DTypeLike) -> DtypeSpec:
    if isinstance(dtype, (str, type)) and dtype in _SPELLINGS:
        return DtypeSpec(np.dtype(object), dict(_SPELLINGS[dtype]))
    if isinstance(dtype, str) and dtype.startswith("array:"):
        item = _numpy_dtype(dtype[len("array:"):])
        return DtypeSpec(np.dtype(object), {"id": "vlen-array", "dtype": item.str})
    if hasattr(dtype, "to_native_dtype") and hasattr(dtype, "to_json"):
        return _from_zarr_python(dtype)
    resolved = _numpy_dtype(dtype)
    if resolved.kind == "T":  # numpy's StringDType is stored as variable-length strings
        return DtypeSpec(np.dtype(object), dict(VLEN_UTF8))
    return DtypeSpec(resolved)


def _from_zarr_python(dtype: Any) -> DtypeSpec:
    """A zarr-python 3 data type object (``zarr.core.dtype.ZDType``), by its v3 document:
    the variable-length ones by name, the others by their numpy dtype (byte order
    included, which the v3 document leaves to the ``bytes`` codec)."""
    doc = dtype.to_json(zarr_format=3)
    name = doc.get("name") if isinstance(doc, dict) else doc
    for codec_id, data_type in VLEN_DATA_TYPES.items():
        if name == data_type:
            return DtypeSpec(np.dtype(object), {"id": codec_id})
    parse_data_type_v3(doc)  # refuse what chunkflow cannot store, naming the document
    return DtypeSpec(np.dtype(dtype.to_native_dtype()))


def _numpy_dtype(dtype: DTypeLike) -> np.dtype:
    try:
        return np.dtype(dtype)
    except TypeError as err:
        raise MetadataError(f"dtype {dtype!r} is not a numpy dtype: {err}") from None


def _codec_config(codec: Any) -> dict[str, Any]:
    if isinstance(codec, dict) and "id" in codec:
        return dict(codec)
    if callable(getattr(codec, "get_config", None)):
        return dict(codec.get_config())
    raise MetadataError(f"object_codec must be a numcodecs codec or its config, got {codec!r}")


def default_fill_value(spec: DtypeSpec) -> Any:
    """zarr-python 3's default fill value: zero of ``dtype``, ``NaT`` for times, ``""``
    and ``b""`` for variable-length strings and bytes, ``None`` for other objects.

    Examples
    --------
    >>> default_fill_value(normalize_dtype("f4")), default_fill_value(normalize_dtype(bytes))
    (np.float32(0.0), b'')
    >>> default_fill_value(normalize_dtype("M8[s]"))
    np.datetime64('NaT','s')
    """
    dtype, codec = spec.dtype, spec.object_codec
    if dtype.kind == "O":
        return {"vlen-utf8": "", "vlen-bytes": b""}.get(codec["id"]) if codec else None
    if dtype.kind in "Mm":
        return np.array("NaT", dtype=dtype)[()]
    return np.zeros((), dtype=dtype)[()]


def items_dtype(data: Any, dtype: DTypeLike) -> DTypeLike:
    """``dtype``, or for an ``object`` array of ``data`` whose items are all ``bytes`` (or
    all ``str``) the spelling that stores them so, ``bytes`` (``str``); ``None`` items
    are left out. zarr-python 3 refuses such data as ambiguous; chunkflow reads it.

    Examples
    --------
    >>> items_dtype(np.array([b"a", None], dtype=object), None)
    <class 'bytes'>
    >>> items_dtype(np.array(["a", 1], dtype=object), object)
    <class 'object'>
    """
    if getattr(data, "dtype", None) != np.dtype(object):
        return dtype
    if dtype is not None and not (dtype is object or (isinstance(dtype, np.dtype)
                                                       and dtype == np.dtype(object))):
        return dtype
    items = [item for item in np.asarray(data).flat if item is not None]
    for kind in (bytes, str):
        if items and all(isinstance(item, kind) for item in items):
            return kind
    return dtype if dtype is not None else data.dtype
