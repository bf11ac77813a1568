"""io: the files users have, read through each format's library, and ``convert``.

- :mod:`~chunkflow.io.source`: :class:`Reader` (what every format's reader gives) and
  the readers of arrays in memory and of Zarr;
- :mod:`~chunkflow.io.tiff`: TIFF and OME-TIFF through tifffile, and stacks of files;
- :mod:`~chunkflow.io.hdf5`: HDF5 and NetCDF4 through h5py;
- :mod:`~chunkflow.io.raw`: raw binary and ``.npy`` through ``numpy.memmap``;
- :mod:`~chunkflow.io.opening`: :func:`open_source`, the reader for a path or object;
- :mod:`~chunkflow.io.layout`, :mod:`~chunkflow.io.metadata`: what ``convert`` writes;
- :mod:`~chunkflow.io.converting`: :func:`convert`.
"""

from chunkflow.io.converting import convert
from chunkflow.io.hdf5 import Hdf5Reader
from chunkflow.io.opening import open_source
from chunkflow.io.raw import MemmapReader, npy_reader
from chunkflow.io.source import ArrayReader, Reader, SourceInfo, ZarrReader
from chunkflow.io.tiff import TiffReader, TiffStackReader

__all__ = [
    "ArrayReader",
    "Hdf5Reader",
    "MemmapReader",
    "Reader",
    "SourceInfo",
    "TiffReader",
    "TiffStackReader",
    "ZarrReader",
    "convert",
    "npy_reader",
    "open_source",
]
