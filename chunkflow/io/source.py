"""What ``convert`` reads: a :class:`Reader` over a file of another format.

A reader says what the file says about itself (shape, dtype, axes, physical sizes,
units, channel names: a :class:`SourceInfo`) and reads regions of it as numpy arrays,
through the library made for the format. Its ``blocks`` are the units the format
stores (TIFF tiles or strips, HDF5 chunks, pages), so that a job can read along them.

A reader pickles without its open file handles (each process, and each thread, opens
its own when it first reads): the same reader runs on threads, processes or a
``distributed`` cluster.

Axes are NGFF's names (``t``, ``c``, ``z``, ``y``, ``x``) in NGFF's order; a reader of
a format that orders them otherwise (TIFF's ``YXS`` samples) transposes what it reads.

Examples
--------
>>> import numpy as np
>>> reader = ArrayReader(np.arange(24, dtype="u1").reshape(2, 3, 4))
>>> reader.shape, reader.dtype.name, reader.info.axes
((2, 3, 4), 'uint8', None)
>>> reader.read((slice(1, 2), slice(0, 3), slice(2, 4))).tolist()
[[[14, 15], [18, 19], [22, 23]]]
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from chunkflow.core.array import Array

__all__ = ["ArrayReader", "Reader", "SourceInfo", "ZarrReader", "ngff_order", "unit_name"]

Region = tuple[slice, ...]

#: OME's unit symbols (and a few spellings in the wild) as NGFF's unit names.
UNIT_NAMES = {
    "µm": "micrometer", "um": "micrometer", "μm": "micrometer", "micron": "micrometer",
    "nm": "nanometer", "mm": "millimeter", "cm": "centimeter", "m": "meter",
    "pm": "picometer", "Å": "angstrom", "km": "kilometer", "in": "inch", "ft": "foot",
    "s": "second", "sec": "second", "ms": "millisecond", "µs": "microsecond",
    "us": "microsecond", "ns": "nanosecond", "min": "minute", "h": "hour",
}
_ORDER = "tczyx"


def unit_name(unit: str | None) -> str | None:
    """An OME unit symbol as NGFF's unit name (names pass through).

    Examples
    --------
    >>> unit_name("µm"), unit_name("micrometer"), unit_name(None)
    ('micrometer', 'micrometer', None)
    """
    if unit is None:
        return None
    return UNIT_NAMES.get(unit.strip(), unit.strip())


def ngff_order(axes: str) -> tuple[int, ...]:
    """The permutation putting ``axes`` (NGFF names) in NGFF's order (t, c, z, y, x).

    Examples
    --------
    >>> ngff_order("yxc"), ngff_order("zcyx")
    ((2, 0, 1), (1, 0, 2, 3))
    """
    return tuple(sorted(range(len(axes)), key=lambda i: _ORDER.index(axes[i])))


@dataclass(frozen=True)
class SourceInfo:
    """What a file says about itself, in NGFF's terms (``None``: it does not say).

    ``scale`` and ``units`` are by axis name; ``channel_names`` list the ``c`` axis.
    """

    axes: str | None = None
    scale: Mapping[str, float] = field(default_factory=dict)
    units: Mapping[str, str] = field(default_factory=dict)
    channel_names: tuple[str, ...] | None = None
    description: str = ""


class Reader:
    """A source ``convert`` reads region by region (a subclass per format).

    Subclasses set ``shape``, ``dtype``, ``blocks`` and ``info`` and implement
    :meth:`_read` (a region in the file's own axis order); open handles live in
    ``self._local`` (per thread) and are dropped when the reader pickles.
    """

    shape: tuple[int, ...]
    dtype: np.dtype
    blocks: tuple[int, ...]
    info: SourceInfo
    #: The permutation from the file's axis order to NGFF's (identity by default).
    order: tuple[int, ...] | None = None

    @property
    def ndim(self) -> int:
        """How many dimensions."""
        return len(self.shape)

    @property
    def nbytes(self) -> int:
        """Bytes of the whole array."""
        return int(np.prod(self.shape, dtype=np.int64)) * self.dtype.itemsize

    def read(self, region: Region) -> np.ndarray:
        """The values of ``region`` (slices with steps of 1, in NGFF axis order)."""
        if self.order is None:
            return np.asarray(self._read(region))
        native = [slice(0)] * len(region)
        for new, old in enumerate(self.order):
            native[old] = region[new]
        return np.ascontiguousarray(np.transpose(self._read(tuple(native)), self.order))

    def get_basic_selection(self, selection: Region) -> np.ndarray:
        """:meth:`read`, by the name a chunkflow array reads with (a pyramid's plan
        reads its source so)."""
        return self.read(selection)

    def identity(self) -> dict[str, Any]:
        """What identifies the source's content for a job (a resume of another file
        is another job): files with their sizes and times, or a token of the values."""
        raise NotImplementedError

    def _read(self, region: Region) -> np.ndarray:
        raise NotImplementedError

    @property
    def _local(self) -> threading.local:
        local = self.__dict__.get("_handles")
        if local is None:
            local = self.__dict__.setdefault("_handles", threading.local())
        return local

    def __getstate__(self) -> dict[str, Any]:
        return {k: v for k, v in self.__dict__.items() if k != "_handles"}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)

    def __repr__(self) -> str:
        axes = f", axes={self.info.axes!r}" if self.info.axes else ""
        return (f"<{type(self).__name__} {self.info.description} shape={self.shape} "
                f"dtype={self.dtype.name}{axes}>")


class ArrayReader(Reader):
    """An array in memory (numpy or anything ``numpy.asarray`` takes per region)."""

    def __init__(self, values: Any, info: SourceInfo | None = None) -> None:
        self.values = values
        self.shape = tuple(int(n) for n in values.shape)
        self.dtype = np.dtype(values.dtype)
        self.blocks = tuple(getattr(values, "chunks", None) or self.shape)
        self.info = info or SourceInfo(description="an array in memory")

    def _read(self, region: Region) -> np.ndarray:
        return np.asarray(self.values[region])

    def identity(self) -> dict[str, Any]:
        from dask.base import tokenize

        return {"array": tokenize(np.asarray(self.values))}


class ZarrReader(Reader):
    """A chunkflow array (anything Zarr, opened through chunkflow)."""

    def __init__(self, array: Array) -> None:
        self.array = array
        self.shape, self.dtype = tuple(array.shape), np.dtype(array.dtype)
        self.blocks = tuple(array.shards or array.chunks)
        names = array.dimension_names
        axes = "".join(str(n) for n in names) if names and all(
            isinstance(n, str) and len(n) == 1 and n in _ORDER for n in names) else None
        self.info = SourceInfo(axes=axes, description=f"Zarr array {array.path or '/'!r}")

    def _read(self, region: Region) -> np.ndarray:
        return np.asarray(self.array.get_basic_selection(region))

    def identity(self) -> dict[str, Any]:
        from chunkflow.jobs import source_parts

        return dict(source_parts([self.array]))

