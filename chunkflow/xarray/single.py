"""A store (or ``group=``) holding one array, opened as a dataset of one variable.

xarray's zarr engine opens groups only. chunkflow's steps write single arrays
(``map_chunks(..., out="smooth.zarr")``), so the engine opens one as a dataset whose
one variable is the array:

- named after the array: the last component of its path in the store, else of the
  store's location less ``.zarr``/``.zip`` (``"smooth.zarr"`` gives ``smooth``), else
  (an unnamed in-memory store) ``__xarray_dataarray_variable__``, the name
  ``xr.open_dataarray`` gives back as ``None``;
- with the dimension names the array has (``dimension_names`` in v3,
  ``_ARRAY_DIMENSIONS`` in v2), else those of the OME-Zarr image it is a level of
  (the NGFF axes, with coordinates: :mod:`chunkflow.xarray.ngff`), else ``dim_0``,
  ``dim_1``...;
- with the array's attributes on the variable (the dataset has none).

Examples
--------
>>> variable_name("data/smooth.zarr", "")
'smooth'
>>> variable_name("s3://bucket/images/cells.ome.zarr/", "")
'cells.ome'
>>> variable_name(None, "labels/cells/0")
'0'
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from chunkflow.api.hierarchy import open_group
from chunkflow.core.array import Array
from chunkflow.errors import ChunkflowError

__all__ = ["ANONYMOUS", "default_dims", "parent_attributes", "variable_name"]

#: xarray's name for the variable of an unnamed DataArray (``open_dataarray`` gives
#: it back as ``name=None``).
ANONYMOUS = "__xarray_dataarray_variable__"

_SUFFIXES = (".zip", ".zarr")


def variable_name(source: object, path: str, identity: str | None = None) -> str:
    """The variable's name for the array at ``path`` of ``source`` (module notes);
    ``identity`` is the store's (:attr:`chunkflow.storage.Store.identity`), used when
    ``source`` is no path or URL."""
    if path:
        return path.rstrip("/").rpartition("/")[2]
    if isinstance(source, os.PathLike):
        source = os.fspath(source)
    location = source if isinstance(source, str) else identity
    if not location or not _names_a_place(location):
        return ANONYMOUS
    name = location.split("::")[0].rstrip("/").rpartition("/")[2]
    for suffix in _SUFFIXES:
        name = name.removesuffix(suffix)
    return name or ANONYMOUS


def _names_a_place(location: str) -> bool:
    """Whether a location names a place (a path or URL with a path), not a token such
    as an in-memory store's ``memory:<uuid>``."""
    scheme, colon, rest = location.partition(":")
    if not colon or len(scheme) == 1:  # no scheme: a path (or a Windows drive letter)
        return True
    return rest.startswith("/") and rest.strip("/") != ""


def parent_attributes(array: Array, source: object, storage_options: Mapping[str, Any] | None
                      ) -> tuple[dict[str, Any], str] | None:
    """The attributes of the group the array is a member of, and the array's path in
    it: in its store, or for an array at the root of a path or URL the folder above it
    (``image.zarr/0``); ``None`` when there is none or it cannot be read. One read, for
    the NGFF metadata of the image the array may be a level of."""
    if array.path:
        parent, _, name = array.path.rpartition("/")
        attrs = _attributes(array.store, parent or None, None)
        return None if attrs is None else (attrs, name)
    if isinstance(source, os.PathLike):
        source = os.fspath(source)
    if not isinstance(source, str) or "::" in source:
        return None
    above, slash, name = source.rstrip("/").rpartition("/")
    if not slash or not above or above.endswith(":/") or not name:
        return None
    attrs = _attributes(above, None, storage_options)
    return None if attrs is None else (attrs, name)


def _attributes(store: Any, path: str | None,
                storage_options: Mapping[str, Any] | None) -> dict[str, Any] | None:
    try:
        group = open_group(store, mode="r", path=path, use_consolidated=False,
                           storage_options=dict(storage_options) if storage_options else None)
    except (ChunkflowError, OSError, ValueError):
        return None  # no group there (or nothing readable): the array is no level
    return group.attrs.asdict()


def default_dims(ndim: int, axes: tuple[str, ...] | None) -> tuple[str, ...]:
    """The names of a single array's unnamed dimensions: its NGFF ``axes`` when given
    for every dimension, else ``dim_0``, ``dim_1``...

    Examples
    --------
    >>> default_dims(2, None), default_dims(2, ("y", "x"))
    (('dim_0', 'dim_1'), ('y', 'x'))
    """
    if axes is not None and len(axes) == ndim:
        return axes
    return tuple(f"dim_{d}" for d in range(ndim))
