"""Raw binary files and ``.npy`` files through ``numpy.memmap``.

A raw file needs its shape and dtype (and the byte ``offset`` of the values, and the
``order``, C or Fortran); a ``.npy`` file says them in its header. Either is mapped,
not read: a region reads only its pages.

Examples
--------
>>> import os, tempfile, numpy as np
>>> folder = tempfile.mkdtemp()
>>> values = np.arange(24, dtype=">u2").reshape(4, 6)
>>> raw = os.path.join(folder, "frame.raw")
>>> with open(raw, "wb") as f:
...     _ = f.write(b"HEADER") and f.write(values.tobytes())
>>> reader = MemmapReader(raw, shape=(4, 6), dtype=">u2", offset=6)
>>> reader.read((slice(1, 2), slice(0, 3))).tolist()
[[6, 7, 8]]
>>> np.save(os.path.join(folder, "v.npy"), values)
>>> npy_reader(os.path.join(folder, "v.npy")).shape
(4, 6)
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any, Literal

import numpy as np

from chunkflow.errors import InvalidArgumentError
from chunkflow.io.source import Reader, Region, SourceInfo

__all__ = ["MAP_BYTES", "MemmapReader", "mapped_region", "npy_reader"]

#: Bytes of the file one map covers (see :func:`mapped_region`).
MAP_BYTES = 8 * 2**20


def mapped_region(path: str, offset: int, shape: tuple[int, ...], stored: np.dtype,
                  dtype: np.dtype, region: Region, order: str = "C") -> np.ndarray:
    """``region`` of the values of ``shape`` and ``stored`` dtype at ``offset`` in a
    file, as ``dtype``, through maps of a few MiB of the slowest axis at a time.

    A map counts every page it touched in the process's resident memory while it is
    open, and a region touches whole pages (a few of its columns read whole rows): maps
    of ``MAP_BYTES`` keep that near a few MiB, not the region's rows; more maps cost
    system calls.
    """
    out = np.empty(tuple(r.stop - r.start for r in region), dtype)
    if not out.size:
        return out
    slow = 0 if order == "C" or len(shape) < 2 else len(shape) - 1
    rest = shape[1:] if slow == 0 else shape[:-1]
    step = int(np.prod(rest, dtype=np.int64)) * stored.itemsize
    flag: Literal["C", "F"] = "F" if order == "F" else "C"
    inner = region[1:] if slow == 0 else region[:-1]
    group = max(1, MAP_BYTES // max(step, 1))
    start, stop = region[slow].start, region[slow].stop
    for first in range(start, stop, group):
        last = min(first + group, stop)
        span = (last - first, *rest) if slow == 0 else (*rest, last - first)
        mapped = np.memmap(path, dtype=stored, mode="r", offset=offset + first * step,
                           shape=span, order=flag)
        part = slice(first - start, last - start)
        if slow == 0:
            out[part] = mapped[(slice(None), *inner)]
        else:
            out[..., part] = mapped[(*inner, slice(None))]
        del mapped  # unmapped now, not when the collector gets to it
    return out


class MemmapReader(Reader):
    """The file ``path`` mapped as an array of ``shape`` and ``dtype`` from ``offset``."""

    def __init__(self, path: str | os.PathLike[str], *, shape: Sequence[int], dtype: Any,
                 offset: int = 0, order: str = "C") -> None:
        self.path = os.fspath(path)
        self.shape = tuple(int(n) for n in shape)
        self.dtype = np.dtype(dtype)
        self.offset, self.order_flag = int(offset), str(order).upper()
        where = f"raw file {self.path!r}"
        if self.order_flag not in ("C", "F"):
            raise InvalidArgumentError(f"{where}: order={order!r} must be 'C' or 'F'")
        if self.offset < 0 or any(n < 0 for n in self.shape):
            raise InvalidArgumentError(f"{where}: offset={offset!r} and shape={tuple(shape)!r} "
                                       "must not be negative")
        need = self.offset + self.nbytes
        size = os.path.getsize(self.path)
        if size < need:
            raise InvalidArgumentError(
                f"{where} has {size} bytes; shape={self.shape} of {self.dtype} from "
                f"offset={self.offset} needs {need}")
        # A region along the slowest axis is contiguous: that axis is the read unit.
        slow = 0 if self.order_flag == "C" else len(self.shape) - 1
        self.blocks = tuple(1 if i == slow else n for i, n in enumerate(self.shape))
        self.info = SourceInfo(description=where)

    def _read(self, region: Region) -> np.ndarray:
        return mapped_region(self.path, self.offset, self.shape, self.dtype, self.dtype,
                             region, self.order_flag)

    def identity(self) -> dict[str, Any]:
        stat = os.stat(self.path)
        return {"raw": f"{os.path.abspath(self.path)} {stat.st_size} {stat.st_mtime_ns}",
                "layout": str((self.shape, self.dtype.str, self.offset, self.order_flag))}


def npy_reader(path: str | os.PathLike[str]) -> MemmapReader:
    """A ``.npy`` file: its header gives the shape, dtype, order and offset."""
    mapped = np.load(os.fspath(path), mmap_mode="r")
    order = "F" if mapped.flags.f_contiguous and not mapped.flags.c_contiguous else "C"
    reader = MemmapReader(path, shape=mapped.shape, dtype=mapped.dtype,
                          offset=int(mapped.offset), order=order)
    reader.info = SourceInfo(description=f".npy file {os.fspath(path)!r}")
    return reader
