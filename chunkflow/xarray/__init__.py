"""The xarray engine: ``xr.open_dataset(path, engine="chunkflow")`` reads through chunkflow.

The engine reads the stores xarray's own ``"zarr"`` engine reads (Zarr v2 with the
``_ARRAY_DIMENSIONS`` attribute, Zarr v3 with ``dimension_names``, consolidated or
not) and returns the same datasets: it hands xarray a data store (variables,
attributes, dimensions) and xarray's ``StoreBackendEntrypoint`` applies the CF
decoding (``scale_factor``/``add_offset``, ``_FillValue``, times) exactly as it does
for the zarr engine. It opens paths, URLs, chunkflow stores and groups, mappings, and
zarr-python 3 ``Store`` objects (``MemoryStore``, ``LocalStore``, ``ZipStore``,
``FsspecStore``, wrappers), read through their public API. What matches the zarr
engine, by module: fill values, codecs in the
encoding (``to_zarr`` writes a dataset read here with the same codecs), strings,
and the ``KeyError`` for missing dimension names (:mod:`~chunkflow.xarray.variables`); the
consolidated-metadata fallback and its ``RuntimeWarning`` (:mod:`~chunkflow.xarray.opening`);
``load_async`` (:mod:`~chunkflow.xarray.wrapper`). A missing store raises ``FileNotFoundError``
saying it does not exist.

Why a lazily indexed ``BackendArray`` and not :func:`chunkflow.to_dask` arrays:
xarray chunks backend variables itself, *after* CF decoding has wrapped them (a
backend never sees ``chunks=``), through ``dask.array.from_array`` over the wrapped
variable. Returning dask arrays from the backend would build dask arrays for
``chunks=None`` too, and would add a ``map_blocks`` layer per decoding step; a custom
``ChunkManager`` would have to unwrap xarray's private decoding wrappers. Instead
every variable declares its I/O unit in ``encoding["preferred_chunks"]`` — the shard
of a sharded array, the chunk otherwise, the unit :func:`chunkflow.to_dask` uses — so
``chunks={}`` gives one dask block per chunk (shard), ``chunks="auto"`` and
``chunks={dim: n}`` whole multiples of it, and each block's task is one
``get_basic_selection`` of whole chunks: the same reads ``to_dask`` makes, in a graph
that is likewise one ``Blockwise`` layer over the pickled array. On a latency-bound
store (S3, HTTP: ``Store.latency_bound``) the preferred block is ``to_dask``'s default
block there instead, many chunks whose requests one task keeps in flight together:
one chunk per task would keep only one request per thread in flight (measured over
HTTP with 20 ms per request, 512 chunks of 512 KiB with ``chunks={}``: 6.6 s, against
0.5 s grouped). xarray then warns, rightly, when asked for chunks that split those
blocks.

Beyond the zarr engine: a store holding one array (or ``group=`` naming one) opens as
a dataset of one variable named after the array (:mod:`~chunkflow.xarray.single`);
OME-Zarr levels take their NGFF axis names and, as datasets of their own
(``open_datatree`` nodes), coordinates from their NGFF scale and translation
(:mod:`~chunkflow.xarray.ngff`); the consolidated-metadata warning is left out for
single arrays, OME-Zarr groups and stores that cannot hold consolidated metadata
(:mod:`~chunkflow.xarray.opening`).

This package needs xarray; nothing else in chunkflow imports it, so ``import chunkflow``
works without xarray. Its modules import ``xarray`` absolutely, which finds the xarray
package, never this one. xarray finds the engine through the ``xarray.backends`` entry
point named ``chunkflow``; the class itself can be passed as ``engine=`` too.

Modules:

* :mod:`~chunkflow.xarray.entrypoint` — the engine xarray calls (datasets, groups, trees);
* :mod:`~chunkflow.xarray.datastore` — one group's variables, attributes and dimensions;
* :mod:`~chunkflow.xarray.wrapper` — the lazily indexed array (sync and async);
* :mod:`~chunkflow.xarray.variables` — dimensions, attributes, encoding;
* :mod:`~chunkflow.xarray.opening` — the group or array, with or without consolidated
  metadata, and when the fallback warns;
* :mod:`~chunkflow.xarray.single` — a single array's variable name, parent image, dims;
* :mod:`~chunkflow.xarray.ngff` — OME-Zarr levels: axis names, coordinates, members;
* :mod:`~chunkflow.xarray.unfinished` — unfinished jobs' outputs: the
  :class:`~chunkflow.errors.IncompleteJobWarning` and the ``chunkflow_unfinished``
  attribute on the variables and the dataset.

Examples
--------
>>> import numpy as np, xarray as xr, chunkflow
>>> from chunkflow.storage import MemoryStore
>>> store = MemoryStore()
>>> root = chunkflow.group(store)
>>> t = root.create_array("t", shape=(4, 6), chunks=(2, 3), dtype="f4",
...                       dimension_names=("y", "x"))
>>> t[:] = np.arange(24).reshape(4, 6)
>>> ds = xr.open_dataset(store, engine=ChunkflowBackendEntrypoint, chunks={},
...                      consolidated=False)  # None would warn: there is no consolidated metadata
>>> ds.t.chunks
((2, 2), (3, 3))
>>> float(ds.t.sum())
276.0
"""

from __future__ import annotations

from chunkflow.errors import MissingDependencyError

try:
    import xarray as _xarray  # noqa: F401  (absolute: the xarray package, not this one)
except ImportError as error:  # xarray is optional: only this package needs it
    raise MissingDependencyError(
        "chunkflow.xarray needs xarray (pip install 'xarray>=2024.1')") from error
from chunkflow.xarray.datastore import ChunkflowDataStore
from chunkflow.xarray.entrypoint import ChunkflowBackendEntrypoint
from chunkflow.xarray.variables import DimensionNamesError
from chunkflow.xarray.wrapper import ChunkflowArrayWrapper

__all__ = ["ChunkflowArrayWrapper", "ChunkflowBackendEntrypoint", "ChunkflowDataStore",
           "DimensionNamesError"]
