"""One chunkflow array as an xarray variable: dimensions, attributes and encoding.

The encoding is the one xarray's zarr engine gives, so that ``to_zarr`` of a dataset
read here writes the same arrays again: ``chunks``, ``preferred_chunks``, ``shards``,
and the codecs ``compressors``, ``filters`` and (v3) ``serializer``. The codecs are
zarr-python's own codec objects when zarr-python is installed (``to_zarr`` needs it,
and xarray's engine returns those); chunkflow's codec documents otherwise.

Fill values, deliberately as xarray's zarr engine:

- **Zarr v2**: the array's ``fill_value`` is always the ``_FillValue`` attribute.
  xarray stores a v2 variable's ``_FillValue`` *as* the array's ``fill_value`` (v2 has
  no other place for it), so reporting it any other way would lose it on a round
  trip. ``use_zarr_fill_value_as_mask=False`` therefore does not apply to v2, as with
  ``engine="zarr"`` (whose entrypoint does not pass the option on at all); whether
  ``_FillValue`` masks is ``mask_and_scale``'s decision, as for any variable: pass
  ``mask_and_scale=False`` to read the stored values unmasked. This holds for the v2
  arrays xarray writes, those with an ``_ARRAY_DIMENSIONS`` attribute. A v2 array
  without it was not written by xarray (the zarr engine cannot open it): an OME-Zarr
  level, an image a tool wrote, whose ``fill_value`` says what unwritten chunks hold
  and marks no missing value (background 0 in a label image). Its ``fill_value`` is
  treated as a v3 one.
- **Zarr v3**: the ``fill_value`` goes to ``encoding["fill_value"]`` and masks only
  through a ``_FillValue`` attribute (decoded from the Base64 form xarray writes for
  floats); ``use_zarr_fill_value_as_mask=True`` makes the ``fill_value`` itself the
  ``_FillValue``, as xarray documents the option.
"""

from __future__ import annotations

import base64
import struct
from collections.abc import Sequence
from typing import Any

import numpy as np

from chunkflow.core.array import Array
from chunkflow.errors import DimensionNamesError, MetadataError
from chunkflow.jobs import JOB_ATTRIBUTE

__all__ = ["DIMENSION_KEY", "DimensionNamesError", "codec_encoding", "decode_fill_attribute",
           "dims_and_attrs", "fill_value_entries"]

#: The v2 attribute xarray stores the dimension names in (hidden from ``attrs``).
DIMENSION_KEY = "_ARRAY_DIMENSIONS"


def dims_and_attrs(array: Array, default: Sequence[str] | None = None
                   ) -> tuple[tuple[str, ...], dict[str, Any]]:
    """The dimension names and the user attributes (xarray's, NCZarr's and an
    unfinished job's mark hidden: see :mod:`chunkflow.xarray.unfinished`).

    An array without a name for every dimension is refused, as by xarray's zarr
    engine, unless ``default`` gives names: then the names it has are kept and the
    missing ones taken from ``default`` (all of ``default`` if that would repeat a
    name). The engine passes a ``default`` for arrays that only it opens: the levels
    of an OME-Zarr image (its NGFF axis names) and a store holding one array
    (``dim_0``, ``dim_1``... when it has no NGFF axes either).

    Examples
    --------
    >>> import chunkflow
    >>> z = chunkflow.create_array(None, shape=(2, 3), dtype="u1", dimension_names=("y", "x"))
    >>> z.attrs["units"] = "m"
    >>> dims_and_attrs(z)
    (('y', 'x'), {'units': 'm'})
    >>> v2 = chunkflow.create_array(None, shape=(2, 3), dtype="u1", zarr_format=2)
    >>> dims_and_attrs(v2, default=("dim_0", "dim_1"))
    (('dim_0', 'dim_1'), {})
    """
    attrs = dict(array.attrs)
    attrs.pop(JOB_ATTRIBUTE, None)
    names: Sequence[Any]
    if array.zarr_format == 3:
        names = array.dimension_names or ()
        where = "dimension_names"
    else:
        names = attrs.pop(DIMENSION_KEY, None) or ()
        attrs = {k: v for k, v in attrs.items() if not k.lower().startswith("_nc")}
        where = f"the {DIMENSION_KEY} attribute"
    if len(names) == array.ndim and all(isinstance(n, str) for n in names):
        return tuple(str(name) for name in names), attrs
    if default is not None and len(default) == array.ndim:
        given = list(names) if len(names) == array.ndim else [None] * array.ndim
        filled = tuple(n if isinstance(n, str) else d for n, d in zip(given, default))
        return (filled if len(set(filled)) == len(filled) else tuple(default)), attrs
    raise DimensionNamesError(
        f"array {array.path or '/'!r}: xarray needs a name for each of its {array.ndim} "
        f"dimensions in {where}, found {list(names)!r} (names are required for xarray "
        f"to determine variable dimensions)"
    )


def codec_encoding(array: Array) -> dict[str, Any]:
    """``compressors``, ``filters`` and (v3) ``serializer``, as xarray's zarr engine
    gives them (inside the shard for a sharded array).

    Examples
    --------
    >>> import chunkflow
    >>> z = chunkflow.create_array(None, shape=(4,), dtype="u1")
    >>> codec_encoding(z)["compressors"]
    (ZstdCodec(level=0, checksum=False),)
    """
    encoding: dict[str, Any] = {"compressors": array.compressors, "filters": array.filters}
    if array.zarr_format == 3:
        encoding["serializer"] = array.serializer
        encoding = {k: _zarr_codecs(v) for k, v in encoding.items()}
    return encoding


def _zarr_codecs(documents: Any) -> Any:
    """v3 codec documents as zarr-python codec objects (the documents without it)."""
    try:
        from zarr.registry import get_codec_class
    except ImportError:
        return documents
    def build(doc: dict[str, Any]) -> Any:
        codec_class = get_codec_class(doc["name"])
        if doc["name"] == "bytes" and "endian" not in doc.get("configuration", {}):
            # Stored without an endian (1-byte types): zarr-python's array holds
            # endian=None, where from_dict would fill in the default.
            return codec_class(endian=None)  # type: ignore[call-arg]  # BytesCodec's own keyword
        return codec_class.from_dict(doc)

    if documents is None:
        return None
    if isinstance(documents, dict):
        return build(documents)
    return tuple(build(doc) for doc in documents)


def decode_fill_attribute(value: Any, dtype: np.dtype, path: str) -> Any:
    """A v3 ``_FillValue`` attribute as xarray writes it (floats as Base64 doubles).

    Examples
    --------
    >>> decode_fill_attribute("AAAAAAAA+H8=", np.dtype("f4"), "a")
    nan
    >>> decode_fill_attribute(-1, np.dtype("i2"), "a")
    -1
    """
    kind = dtype.kind
    if kind in "fc" and isinstance(value, (int, float)) and not isinstance(value, bool):
        return value  # a plain number, as tools other than xarray write it
    try:
        if kind == "f":
            return struct.unpack("<d", base64.standard_b64decode(value))[0]
        if kind == "c":
            real, imag = (struct.unpack("<d", base64.standard_b64decode(v))[0] for v in value)
            return complex(real, imag)
        if kind == "b":
            return bool(value)
        if kind in "iu":
            return int(value)
    except (TypeError, ValueError, struct.error) as error:
        raise MetadataError(
            f"array {path!r}: cannot decode the _FillValue attribute {value!r} for dtype "
            f"{dtype}: expected Base64 of a little-endian double for floats, [re, im] of "
            f"those for complex, a number for integers"
        ) from error
    return value


def fill_value_entries(array: Array, attrs: dict[str, Any],
                       use_fill_value_as_mask: bool | None) -> dict[str, Any]:
    """Put the fill value where xarray's zarr engine does (see the module notes):
    updates ``attrs``, returns the encoding entries.

    Examples
    --------
    >>> import chunkflow
    >>> z = chunkflow.create_array(None, shape=(2,), dtype="i2", fill_value=-1, zarr_format=2)
    >>> attrs = {}
    >>> z.attrs[DIMENSION_KEY] = ["x"]  # written by xarray
    >>> fill_value_entries(z, attrs, use_fill_value_as_mask=False), int(attrs["_FillValue"])
    ({}, -1)
    """
    written_by_xarray = array.zarr_format == 2 and DIMENSION_KEY in array.attrs
    if written_by_xarray or use_fill_value_as_mask:
        if array.fill_value is not None:
            attrs["_FillValue"] = array.fill_value
        return {}
    if "_FillValue" in attrs:
        attrs["_FillValue"] = decode_fill_attribute(attrs["_FillValue"], array.dtype,
                                                    array.path)
    return {"fill_value": array.fill_value}
