"""Hypothesis strategies for differential tests of chunked arrays (chunkflow's, and yours).

Each strategy draws what a user could hand chunkflow, corners included, so that a test
compares chunkflow with its oracle (numpy, scipy, scikit-image, zarr-python) on inputs
that nobody picked:

- :mod:`~chunkflow.testing.strategies.values`: dtypes of every kind and byte order, and
  arrays of them holding NaN (with payloads), ±0, ±inf, subnormals and each type's
  extremes;
- :mod:`~chunkflow.testing.strategies.grids`: shapes from 0-D to 4-D with zero-length
  sides, chunk grids with edge chunks and chunks of 1, shard grids, Zarr formats,
  fill values, and :class:`StoredArraySpec`, an array ready to create in any store;
- :mod:`~chunkflow.testing.strategies.selections`: every selection kind (integers,
  slices with steps of both signs, index arrays, masks, ``None``, ``Ellipsis``) in
  numpy's syntax and in zarr's ``oindex``/``vindex`` meanings;
- :mod:`~chunkflow.testing.strategies.storage`: arrays made of the fill value and of
  values ``==`` calls equal to it with other bits (``-0.0``, other NaNs);
- :mod:`~chunkflow.testing.strategies.labels`: label images (objects touching chunk
  faces, holes, large and negative label values), binary images of any density,
  structuring elements ``scipy.ndimage.label`` takes, intensity images with NaN;
- :mod:`~chunkflow.testing.strategies.reductions`: reduction axes in numpy's spellings,
  ``blocks=`` arguments, arrays of ordinary values, and dask chunks with zero-size
  blocks;
- :mod:`~chunkflow.testing.strategies.filters`: arrays whose every element is drawn
  (neighbours differ: for filters, halos and downsampling);
- :func:`schedulers`: the dask schedulers ``sync``, ``threads`` and ``processes``;
- :mod:`~chunkflow.testing.strategies.user_files`: folders where a user's files and
  Zarr nodes live side by side, and places in them for a writer.

hypothesis is needed (``pip install hypothesis``; it comes with chunkflow's ``test``
extra). Nothing here is imported by ``import chunkflow``.

Examples
--------
>>> from hypothesis import given, settings
>>> import numpy as np
>>> from chunkflow.testing import strategies as cst
>>> @settings(max_examples=20, database=None)
... @given(cst.stored_arrays(dtypes=cst.dtypes(kinds="f")))
... def test_round_trip(spec):
...     z = spec.create()
...     np.testing.assert_array_equal(z[...], spec.data)
>>> test_round_trip()
"""

from chunkflow.testing.strategies.array_shapes import shapes
from chunkflow.testing.strategies.filters import varied_arrays
from chunkflow.testing.strategies.grids import (
    StoredArraySpec,
    chunk_shapes,
    fill_values,
    shard_shapes,
    stored_arrays,
    zarr_formats,
)
from chunkflow.testing.strategies.labels import (
    binary_images,
    intensity_images,
    label_images,
    structures,
)
from chunkflow.testing.strategies.reductions import (
    block_arguments,
    dask_chunks,
    ordinary_arrays,
    reduction_axes,
)
from chunkflow.testing.strategies.scheduling import SCHEDULERS, schedulers
from chunkflow.testing.strategies.selections import (
    basic_selections,
    coordinate_selections,
    mask_selections,
    numpy_selections,
    orthogonal_selections,
    selection_values,
)
from chunkflow.testing.strategies.storage import fill_twins, near_fill_arrays
from chunkflow.testing.strategies.user_files import (
    FolderTree,
    NodeSpec,
    folder_trees,
    tree_locations,
)
from chunkflow.testing.strategies.values import (
    DTYPE_CODES,
    arrays,
    dtypes,
    elements,
    special_values,
)

__all__ = [
    "DTYPE_CODES",
    "SCHEDULERS",
    "FolderTree",
    "NodeSpec",
    "StoredArraySpec",
    "arrays",
    "basic_selections",
    "binary_images",
    "block_arguments",
    "chunk_shapes",
    "coordinate_selections",
    "dask_chunks",
    "dtypes",
    "elements",
    "fill_twins",
    "fill_values",
    "folder_trees",
    "intensity_images",
    "label_images",
    "mask_selections",
    "near_fill_arrays",
    "numpy_selections",
    "ordinary_arrays",
    "orthogonal_selections",
    "reduction_axes",
    "schedulers",
    "selection_values",
    "shapes",
    "shard_shapes",
    "special_values",
    "stored_arrays",
    "structures",
    "tree_locations",
    "varied_arrays",
    "zarr_formats",
]
