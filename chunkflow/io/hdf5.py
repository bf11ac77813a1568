"""HDF5 and NetCDF4 datasets through h5py.

A dataset is read region by region; its ``blocks`` are its HDF5 chunks (or rows of it
when it is contiguous). Axes come from the dimension scales NetCDF4 attaches (``time``,
``z``, ``y``, ``x``... when they are NGFF's names) or an ``axes`` attribute.

Examples
--------
>>> import os, tempfile, h5py, numpy as np
>>> path = os.path.join(tempfile.mkdtemp(), "scan.h5")
>>> with h5py.File(path, "w") as f:
...     _ = f.create_dataset("raw/volume", data=np.arange(60, dtype="i2").reshape(3, 4, 5),
...                          chunks=(1, 4, 5))
>>> reader = Hdf5Reader(path, "raw/volume")
>>> reader.shape, reader.blocks, reader.read((slice(2, 3), slice(0, 1), slice(0, 2))).tolist()
((3, 4, 5), (1, 4, 5), [[[40, 41]]])
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

import numpy as np

from chunkflow.errors import ArrayNotFoundError, MissingDependencyError
from chunkflow.io.source import Reader, Region, SourceInfo

__all__ = ["Hdf5Reader", "hdf5_datasets"]

_NAMES = {"time": "t", "t": "t", "channel": "c", "c": "c", "z": "z", "y": "y", "x": "x"}


def _h5py() -> Any:
    try:
        import h5py
    except ImportError as err:  # an optional extra
        raise MissingDependencyError("reading HDF5 needs h5py: pip install 'chunkflow[hdf5]'"
                                     ) from err
    return h5py


def hdf5_datasets(path: str | os.PathLike[str]) -> list[str]:
    """The names of every dataset in the file (to name one when ``dataset=`` is not given)."""
    h5py = _h5py()
    found: list[str] = []
    with h5py.File(path, "r") as f:
        f.visititems(lambda name, node: found.append(name)
                     if isinstance(node, h5py.Dataset) else None)
    return found


def _axes(dataset: Any) -> str | None:
    """NGFF axis names from the dataset's dimension scales or its ``axes`` attribute."""
    given = dataset.attrs.get("axes")
    if isinstance(given, (str, bytes)):
        text = given.decode() if isinstance(given, bytes) else given
        names = [_NAMES.get(n) for n in text.lower()]
    else:
        names = []
        for dim in dataset.dims:
            label = dim.label or (dim[0].name.rpartition("/")[2] if len(dim) else "")
            names.append(_NAMES.get(str(label).lower()))
    joined = "".join(n for n in names if n)
    if len(joined) != dataset.ndim or len(set(joined)) != len(joined):
        return None
    return joined


class Hdf5Reader(Reader):
    """The dataset ``dataset`` of an HDF5 (or NetCDF4) file."""

    def __init__(self, path: str | os.PathLike[str], dataset: str | None = None,
                 storage_options: Mapping[str, Any] | None = None) -> None:
        h5py = _h5py()
        self.path = os.fspath(path)
        where = f"HDF5 {self.path!r}"
        if dataset is None:
            names = hdf5_datasets(self.path)
            if len(names) != 1:
                raise ArrayNotFoundError(
                    f"{where} holds {len(names)} datasets ({', '.join(names[:8])}); name one "
                    f"with dataset= (on the command line: {self.path}::NAME)")
            dataset = names[0]
        self.dataset = dataset
        with h5py.File(self.path, "r") as f:
            node = f.get(dataset)
            if not isinstance(node, h5py.Dataset):
                raise ArrayNotFoundError(f"{where} has no dataset {dataset!r}")
            self.shape, self.dtype = tuple(node.shape), np.dtype(node.dtype)
            self.blocks = tuple(node.chunks or (1, *node.shape[1:]))
            axes = _axes(node)
        self.info = SourceInfo(axes=axes, description=f"{where} dataset {dataset!r}")

    def _read(self, region: Region) -> np.ndarray:
        node = getattr(self._local, "dataset", None)
        if node is None:
            handle = _h5py().File(self.path, "r")
            node = self._local.dataset = handle[self.dataset]
        out = np.empty(tuple(r.stop - r.start for r in region), self.dtype)
        if out.size:
            node.read_direct(out, region)
        return out

    def identity(self) -> dict[str, Any]:
        stat = os.stat(self.path)
        return {"hdf5": f"{os.path.abspath(self.path)} {stat.st_size} {stat.st_mtime_ns}",
                "dataset": self.dataset}
