""":func:`open_source`: a :class:`~chunkflow.io.source.Reader` for what a user has.

Examples
--------
>>> import numpy as np
>>> open_source(np.zeros((4, 5), "u1")).shape
(4, 5)
>>> split_dataset("scan.h5::raw/volume"), split_dataset("cells.tif")
(('scan.h5', 'raw/volume'), ('cells.tif', None))
"""

from __future__ import annotations

import glob
import os
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from chunkflow.api.hierarchy import open_node
from chunkflow.core.array import Array
from chunkflow.errors import ArgumentTypeError, InvalidArgumentError, OpenError
from chunkflow.io.hdf5 import Hdf5Reader
from chunkflow.io.raw import MemmapReader, npy_reader
from chunkflow.io.source import ArrayReader, Reader, ZarrReader
from chunkflow.io.tiff import TiffReader, TiffStackReader

__all__ = ["HDF5_SUFFIXES", "TIFF_SUFFIXES", "open_source", "split_dataset"]

TIFF_SUFFIXES = (".tif", ".tiff", ".btf", ".tf8", ".tf2")
HDF5_SUFFIXES = (".h5", ".hdf5", ".hdf", ".he5", ".nc", ".nc4", ".cdf")


def split_dataset(location: str) -> tuple[str, str | None]:
    """``file.h5::dataset`` as (file, dataset); anything else as (it, None)."""
    path, sep, dataset = location.rpartition("::")
    if sep and path and "://" not in dataset:
        return path, dataset or None
    return location, None


def _natural(paths: Sequence[str]) -> list[str]:
    """Paths in natural order (``2.tif`` before ``10.tif``), as tifffile sorts them."""
    import re

    def key(path: str) -> list[Any]:
        return [int(part) if part.isdigit() else part for part in re.split(r"(\d+)", path)]

    return sorted(paths, key=key)


def _tiff_files(location: str) -> list[str] | None:
    """The files of a glob, or of a folder of TIFF files (None: neither)."""
    if any(ch in location for ch in "*?["):
        return _natural(glob.glob(location))
    if os.path.isdir(location) and not _is_zarr(location):
        return _natural([os.path.join(location, name) for name in os.listdir(location)
                         if name.lower().endswith(TIFF_SUFFIXES)])
    return None


def _is_zarr(folder: str) -> bool:
    return any(os.path.exists(os.path.join(folder, name))
               for name in ("zarr.json", ".zarray", ".zgroup"))


def open_source(
    source: Any,
    *,
    dataset: str | None = None,
    stack_axis: str = "z",
    shape: Sequence[int] | None = None,
    dtype: Any = None,
    offset: int = 0,
    order: str = "C",
    storage_options: Mapping[str, Any] | None = None,
) -> Reader:
    """A reader of ``source``.

    ``source`` is a path or URL of a TIFF file, a glob or folder of TIFF files
    (stacked along ``stack_axis``), a list of TIFF paths, an HDF5 or NetCDF file
    (``dataset=``, or ``file.h5::dataset``), an h5py dataset, a ``.npy`` file, a raw
    file (with ``shape=`` and ``dtype=``), a numpy array or ``memmap``, a Zarr array
    (path, URL, store, chunkflow or zarr-python array), or a reader.

    ``dtype``, ``offset`` and ``order`` describe a raw file, given with ``shape``;
    any other source has its own, and they are refused there rather than ignored
    (``dtype="uint8"`` on a uint16 TIFF file would otherwise look like a cast).

    Examples
    --------
    >>> import numpy as np
    >>> open_source(np.zeros(3, "u2"), dtype="u1")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    chunkflow.errors.InvalidArgumentError: convert: dtype='u1' describes a raw file ... leave dtype= out
    """
    reader = _reader(source, dataset, stack_axis, shape, dtype, offset, order, storage_options)
    raw = {name: value for name, value, default in (
        ("dtype", dtype, None), ("offset", offset, 0), ("order", order, "C"))
        if value != default}
    if shape is None and raw:
        given = ", ".join(f"{name}={value!r}" for name, value in raw.items())
        what = (f"{os.fspath(source)!r}" if isinstance(source, (str, os.PathLike))
                else f"the {type(source).__name__}")
        raise InvalidArgumentError(
            f"convert: {given} describe{'s' if len(raw) == 1 else ''} a raw file (given "
            f"with shape=); {what} is read as it is stored ({reader.dtype}, shape "
            f"{reader.shape}), and convert casts nothing; leave "
            f"{', '.join(f'{name}=' for name in raw)} out")
    return reader


def _reader(source: Any, dataset: str | None, stack_axis: str, shape: Sequence[int] | None,
            dtype: Any, offset: int, order: str,
            storage_options: Mapping[str, Any] | None) -> Reader:
    if isinstance(source, Reader):
        return source
    if isinstance(source, Array):
        return ZarrReader(source)
    if isinstance(source, np.memmap) and getattr(source, "filename", None):
        base = source.base if isinstance(source.base, np.memmap) else source
        order_flag = "F" if source.flags.f_contiguous and not source.flags.c_contiguous else "C"
        if base is source or base.shape == source.shape:
            return MemmapReader(str(source.filename), shape=source.shape, dtype=source.dtype,
                                offset=int(source.offset), order=order_flag)
    if isinstance(source, np.ndarray):
        return ArrayReader(source)
    module = type(source).__module__.split(".")[0]
    if module == "h5py" and hasattr(source, "file"):
        return Hdf5Reader(source.file.filename, source.name)
    if module == "zarr" and hasattr(source, "store") and hasattr(source, "shape"):
        return ZarrReader(_zarr_array(source.store, getattr(source, "path", ""), None))
    if isinstance(source, (list, tuple)) and source and all(
            isinstance(p, (str, os.PathLike)) for p in source):
        return TiffStackReader(list(source), stack_axis, storage_options=storage_options)
    if not isinstance(source, (str, os.PathLike)):
        if module == "zarr" or isinstance(source, Mapping):  # a zarr-python Store, a mapping
            return ZarrReader(_zarr_array(source, "", None))
        raise ArgumentTypeError(
            f"convert: cannot read a {type(source).__name__}; give a path, a glob, a URL, an "
            "h5py dataset, a numpy array or memmap, or a Zarr array")
    return _from_location(os.fspath(source), dataset, stack_axis, shape, dtype, offset, order,
                          storage_options)


def _from_location(location: str, dataset: str | None, stack_axis: str,
                   shape: Sequence[int] | None, dtype: Any, offset: int, order: str,
                   storage_options: Mapping[str, Any] | None) -> Reader:
    path, named = split_dataset(location)
    dataset = dataset or named
    lower = path.lower().rstrip("/")
    if shape is not None:
        if dtype is None:
            raise InvalidArgumentError(f"convert: the raw file {path!r} needs dtype= with shape=")
        return MemmapReader(path, shape=shape, dtype=dtype, offset=offset, order=order)
    if lower.endswith(".npy"):
        return npy_reader(path)
    if lower.endswith(HDF5_SUFFIXES) or dataset is not None:
        return Hdf5Reader(path, dataset)
    files = None if "://" in path else _tiff_files(path)
    if files is not None:
        if not files:
            raise OpenError(f"convert: no TIFF files match {path!r}")
        if len(files) == 1 and not os.path.isdir(path):
            return TiffReader(files[0])
        return TiffStackReader(files, stack_axis, storage_options=storage_options)
    if lower.endswith(TIFF_SUFFIXES):
        return TiffReader(path, storage_options=storage_options)
    return ZarrReader(_zarr_array(path, "", storage_options))


def _zarr_array(location: Any, path: str, storage_options: Mapping[str, Any] | None) -> Array:
    node = open_node(location, mode="r", path=path or None,
                     storage_options=dict(storage_options or {}) or None, cache=False)
    if not isinstance(node, Array):
        raise ArgumentTypeError(f"convert: {location!r} holds a Zarr group, not an array; "
                                "name the array (its path) to convert")
    return node
