"""TIFF and OME-TIFF through tifffile: one file (multi-page, BigTIFF, tiled or in
strips, pyramidal), or a folder or glob of files stacked along an axis.

A file's regions are read through tifffile's own Zarr view of it (``aszarr``), which
decodes only the tiles or strips a region touches; a stack reads each file's part and
stacks them. OME-XML gives the axes, the channel names and the physical sizes with
their units; ImageJ's metadata the z spacing and unit; the resolution tags x and y.

Examples
--------
>>> import os, tempfile, numpy as np, tifffile
>>> folder = tempfile.mkdtemp()
>>> values = np.arange(2 * 16 * 16, dtype="u2").reshape(2, 16, 16)
>>> path = os.path.join(folder, "cells.ome.tif")
>>> tifffile.imwrite(path, values, ome=True, metadata={"axes": "CYX",
...     "Channel": {"Name": ["DAPI", "GFP"]}, "PhysicalSizeX": 0.5, "PhysicalSizeXUnit": "µm"})
>>> reader = TiffReader(path)
>>> reader.shape, reader.info.axes, reader.info.channel_names, dict(reader.info.units)
((2, 16, 16), 'cyx', ('DAPI', 'GFP'), {'x': 'micrometer'})
>>> int(reader.read((slice(1, 2), slice(0, 1), slice(3, 4)))[0, 0, 0]) == int(values[1, 0, 3])
True
"""

from __future__ import annotations

import contextlib
import os
import xml.etree.ElementTree as ElementTree
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import numpy as np

from chunkflow.errors import MissingDependencyError, UnsupportedFormatError
from chunkflow.io.raw import mapped_region
from chunkflow.io.source import Reader, Region, SourceInfo, ngff_order, unit_name

__all__ = ["TiffReader", "TiffStackReader", "tiff_axes"]

# tifffile's axis letters as NGFF's names (I and Q: see tiff_axes).
_LETTERS = {"T": "t", "C": "c", "Z": "z", "Y": "y", "X": "x", "S": "c"}


def _tifffile() -> Any:
    try:
        import tifffile
    except ImportError as err:  # an optional extra
        raise MissingDependencyError("reading TIFF needs tifffile: pip install 'chunkflow[tiff]'"
                                     ) from err
    return tifffile


def tiff_axes(letters: str, where: str) -> str:
    """tifffile's axes (``"ZCYX"``, ``"IYX"``, ``"YXS"``) as NGFF names.

    Examples
    --------
    >>> tiff_axes("IYX", "f.tif"), tiff_axes("YXS", "f.tif"), tiff_axes("TQYX", "f.tif")
    ('zyx', 'yxc', 'tzyx')
    >>> tiff_axes("QQYX", "f.tif"), tiff_axes("ZQYX", "f.tif")
    ('czyx', 'zcyx')
    """
    known = [_LETTERS.get(letter) for letter in letters.upper()]
    # Unknown axes (I: images, Q: tifffile's "unknown") take the names NGFF puts last
    # among those left (z, then c, then t), in their order: nothing is transposed.
    left = [n for n in "tcz" if n not in known]
    unknown = sum(1 for letter in letters.upper() if letter in "IQ")
    guessed = iter(left[len(left) - unknown:] if unknown <= len(left) else [])
    names: list[str] = []
    for letter, name in zip(letters.upper(), known):
        if name is None and letter in "IQ":
            name = next(guessed, None)
        if name is None or name in names:
            raise UnsupportedFormatError(
                f"{where}: the TIFF's axes {letters!r} have no NGFF meaning for {letter!r}; "
                "pass axes= (e.g. axes='tczyx') to name them")
        names.append(name)
    return "".join(names)


def _plain(tag: str) -> str:
    return tag.rpartition("}")[2]


def ome_info(xml: str, series: int, axes: str, where: str) -> SourceInfo:
    """Physical sizes, units and channel names of image ``series`` of OME-XML."""
    root = ElementTree.fromstring(xml)
    images = [e for e in root if _plain(e.tag) == "Image"]
    if series >= len(images):
        return SourceInfo(axes=axes, description=where)
    pixels = next((e for e in images[series] if _plain(e.tag) == "Pixels"), None)
    if pixels is None:
        return SourceInfo(axes=axes, description=where)
    scale: dict[str, float] = {}
    units: dict[str, str] = {}
    for name in "xyz":
        size = pixels.get(f"PhysicalSize{name.upper()}")
        if size is not None and name in axes:
            scale[name] = float(size)
            # OME's default unit of a physical size is the micrometer.
            units[name] = unit_name(pixels.get(f"PhysicalSize{name.upper()}Unit", "µm")) or ""
    increment = pixels.get("TimeIncrement")
    if increment is not None and "t" in axes and float(increment) > 0:
        scale["t"] = float(increment)
        units["t"] = unit_name(pixels.get("TimeIncrementUnit", "s")) or ""
    channels = [e for e in pixels if _plain(e.tag) == "Channel"]
    names = tuple(e.get("Name") or f"Channel {i}" for i, e in enumerate(channels))
    named = any(e.get("Name") for e in channels)
    return SourceInfo(axes=axes, scale=scale, units=units,
                      channel_names=names if named and "c" in axes else None, description=where)


def _imagej_info(tif: Any, axes: str, where: str) -> SourceInfo:
    """ImageJ's z spacing and unit, and the x and y resolution tags."""
    meta = tif.imagej_metadata or {}
    unit = unit_name(meta.get("unit")) if meta.get("unit") not in (None, "pixel") else None
    scale: dict[str, float] = {}
    page = tif.pages.first
    for name, tag in (("x", "XResolution"), ("y", "YResolution")):
        value = page.tags.get(tag)
        if value is not None and name in axes and unit is not None:
            num, den = value.value
            if num:
                scale[name] = den / num
    if "spacing" in meta and "z" in axes:
        scale["z"] = float(meta["spacing"])
    units = {name: unit for name in scale} if unit else {}
    return SourceInfo(axes=axes, scale=scale, units=units, description=where)


def _file_info(tif: Any, series: int, axes: str, where: str) -> SourceInfo:
    if tif.is_ome and tif.ome_metadata:
        return ome_info(tif.ome_metadata, series, axes, where)
    if tif.is_imagej:
        return _imagej_info(tif, axes, where)
    return SourceInfo(axes=axes, description=where)


@contextlib.contextmanager
def _opened(path: Any, storage_options: Mapping[str, Any] | None) -> Iterator[Any]:
    """``tifffile.TiffFile`` over a path, or over an fsspec file for a URL."""
    tifffile = _tifffile()
    if isinstance(path, str) and "://" in path:
        import fsspec

        with fsspec.open(path, "rb", **dict(storage_options or {})) as handle, \
                tifffile.TiffFile(handle) as tif:
            yield tif
        return
    with tifffile.TiffFile(path) as tif:
        yield tif


class TiffReader(Reader):
    """One TIFF or OME-TIFF file: image series ``series`` at pyramid level ``level``."""

    def __init__(self, path: str | os.PathLike[str], *, series: int = 0, level: int = 0,
                 storage_options: Mapping[str, Any] | None = None) -> None:
        self.path = os.fspath(path)
        self.series, self.level = series, level
        self.storage_options = dict(storage_options or {})
        where = f"TIFF {self.path!r}"
        with _opened(self.path, self.storage_options) as tif:
            if series >= len(tif.series):
                raise UnsupportedFormatError(f"{where} has {len(tif.series)} image series; "
                                             f"series={series} is not one of them")
            image = tif.series[series]
            if level >= len(image.levels):
                raise UnsupportedFormatError(f"{where} has {len(image.levels)} pyramid levels; "
                                             f"level={level} is not one of them")
            part = image.levels[level]
            native = tiff_axes(part.axes, where)
            self.shape, self.dtype = tuple(part.shape), np.dtype(part.dtype)
            page = part.keyframe
            tile = (page.tilelength, page.tilewidth) if page.is_tiled else (
                min(page.rowsperstrip or page.imagelength, page.imagelength), page.imagewidth)
            info = _file_info(tif, series, native, where)
            self.pyramidal = len(image.levels) > 1
            # Uncompressed values stored contiguously (tifffile's dataoffset) are mapped,
            # not decoded: a region reads its rows' bytes only, whatever the strips.
            self.mapped_at = (part.dataoffset if "://" not in self.path
                              and part.dataoffset is not None else None)
            self.byteorder = tif.byteorder
        self.native_axes, self.native_shape = native, self.shape
        blocks = [1] * len(self.shape)
        for i, letter in enumerate(native):
            if letter == "y":
                blocks[i] = tile[0]
            elif letter == "x":
                blocks[i] = tile[1]
            elif letter == "c" and i == len(native) - 1:
                blocks[i] = self.shape[i]  # samples are interleaved in a pixel
        if self.mapped_at is not None:  # any row can be read on its own
            blocks = [1] * (len(self.shape) - 1) + [self.shape[-1]]
        self.native_blocks = tuple(blocks)
        order = ngff_order(native)
        self.order = None if order == tuple(range(len(native))) else order
        ordered = self.order or range(len(native))
        self.blocks = tuple(blocks[i] for i in ordered)
        self.shape = tuple(self.native_shape[i] for i in ordered)
        self.info = SourceInfo("".join(native[i] for i in ordered), info.scale, info.units,
                               info.channel_names, where)

    def _view(self) -> Any:
        """This thread's zarr view of the series (tifffile's ``aszarr``)."""
        view = getattr(self._local, "view", None)
        if view is None:
            import zarr

            stack = contextlib.ExitStack()
            tif = stack.enter_context(_opened(self.path, self.storage_options))
            store = tif.series[self.series].aszarr(level=self.level)
            view = zarr.open_array(store, mode="r")
            self._local.view, self._local.closing = view, stack
        return view

    def _read(self, region: Region) -> np.ndarray:
        if self.mapped_at is not None:
            return read_mapped(self.path, self.mapped_at, self.native_shape, self.dtype,
                               self.byteorder, region)
        return np.asarray(self._view()[region])

    def identity(self) -> dict[str, Any]:
        return {"tiff": _file_identity(self.path, self.storage_options),
                "series": str((self.series, self.level))}


def read_mapped(path: str, offset: int, shape: tuple[int, ...], dtype: np.dtype,
                byteorder: str, region: Region) -> np.ndarray:
    """``region`` of the contiguous uncompressed values of a TIFF series (mapped a
    slice at a time, see :func:`~chunkflow.io.raw.mapped_region`)."""
    stored = dtype.newbyteorder(">" if byteorder == ">" else "<")
    return mapped_region(path, offset, shape, stored, dtype, region)


def _file_identity(path: str, storage_options: Mapping[str, Any]) -> str:
    """A file's path, size and modification time (a rewritten file is another job)."""
    if "://" in path:
        import fsspec

        fs, _, (found,) = fsspec.get_fs_token_paths(path, storage_options=dict(storage_options))
        info = fs.info(found)
        return f"{path} {info.get('size')} {info.get('mtime') or info.get('LastModified')}"
    stat = os.stat(path)
    return f"{os.path.abspath(path)} {stat.st_size} {stat.st_mtime_ns}"


class TiffStackReader(Reader):
    """TIFF files of one shape and dtype stacked along a new axis ``axis`` (z, t or c),
    in the order given (a glob's matches in natural order: ``2.tif`` before ``10.tif``)."""

    def __init__(self, files: Sequence[str | os.PathLike[str]], axis: str = "z", *,
                 storage_options: Mapping[str, Any] | None = None) -> None:
        self.files = [os.fspath(f) for f in files]
        self.axis = axis
        self.storage_options = dict(storage_options or {})
        first = TiffReader(self.files[0], storage_options=self.storage_options)
        where = f"TIFF stack of {len(self.files)} files ({self.files[0]!r}, ...)"
        axes = first.native_axes
        if len(axis) != 1 or axis not in "tcz" or axis in axes:
            raise UnsupportedFormatError(
                f"{where}: cannot stack along {axis!r}: the files' axes are {axes!r}; stack "
                "along z, t or c, an axis the files do not have")
        # Each file is read in its own (native) axis order, as tifffile gives it.
        self.file_shape, self.dtype = first.native_shape, first.dtype
        native = axis + axes
        order = ngff_order(native)
        self.order = None if order == tuple(range(len(native))) else order
        ordered = self.order or range(len(native))
        self.shape = tuple((len(self.files), *self.file_shape)[i] for i in ordered)
        self.blocks = tuple((1, *first.native_blocks)[i] for i in ordered)
        info = first.info
        self.info = SourceInfo("".join(native[i] for i in ordered), info.scale, info.units,
                               info.channel_names, where)

    def _read(self, region: Region) -> np.ndarray:
        files, rest = region[0], region[1:]
        shape = tuple(r.stop - r.start for r in region)
        out = np.empty(shape, self.dtype)
        for i, path in enumerate(self.files[files]):
            out[i] = self._read_file(path, rest)
        return out

    def _read_file(self, path: str, region: Region) -> np.ndarray:
        """``region`` of one file, in its own axis order (each read opens the file: a
        stack may have more files than a process may hold open). Where values are
        stored uncompressed and contiguous, where they start is kept (per thread), and
        later reads map them without parsing the file again."""
        mapped = self._mapped_files.get(path)
        if mapped is not None:
            return read_mapped(path, *mapped, region)
        with _opened(path, self.storage_options) as tif:
            series = tif.series[0]
            if tuple(series.shape) != self.file_shape or np.dtype(series.dtype) != self.dtype:
                raise UnsupportedFormatError(
                    f"TIFF {path!r} holds {tuple(series.shape)} {series.dtype}, where the "
                    f"stack's first file holds {self.file_shape} {self.dtype}")
            if "://" not in path and series.dataoffset is not None:
                found = (series.dataoffset, self.file_shape, self.dtype, tif.byteorder)
                self._mapped_files[path] = found
                return read_mapped(path, *found, region)
            whole = all(r.start == 0 and r.stop == n for r, n in zip(region, self.file_shape))
            if whole:  # the pages at once, decoded by tifffile
                return np.asarray(series.asarray())
            import zarr

            return np.asarray(zarr.open_array(series.aszarr(), mode="r")[region])

    @property
    def _mapped_files(self) -> dict[str, tuple[int, tuple[int, ...], np.dtype, str]]:
        files = getattr(self._local, "mapped_files", None)
        if files is None:
            files = self._local.mapped_files = {}
        return files

    def identity(self) -> dict[str, Any]:
        return {"tiff stack": self.axis, **{f"file {i}": _file_identity(f, self.storage_options)
                                            for i, f in enumerate(self.files)}}
