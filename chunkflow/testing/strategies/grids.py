"""Shapes, chunk and shard grids, Zarr formats and fill values, and whole stored arrays.

Chunk grids are drawn to leave edge chunks (a side that is not a multiple of its
chunk), chunks of 1 and chunks as large as the side (or larger); shard grids hold a
whole number of chunks per side. :class:`StoredArraySpec` bundles values and layout, so
a test creates the array in the store it wants (memory for threads, a folder for
processes) and compares with ``spec.data``.

Examples
--------
>>> from hypothesis import find
>>> find(chunk_shapes((7, 3)), lambda c: c[0] < 7 and 7 % c[0])
(2, 1)
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
from hypothesis import strategies as st

from chunkflow.testing.strategies.array_shapes import shapes
from chunkflow.testing.strategies.values import arrays, dtypes, elements

if TYPE_CHECKING:
    from chunkflow.core import Array
    from chunkflow.storage import StoreLike

__all__ = [
    "StoredArraySpec",
    "chunk_shapes",
    "fill_values",
    "shard_shapes",
    "stored_arrays",
    "zarr_formats",
]


def chunk_shapes(shape: tuple[int, ...]) -> st.SearchStrategy[tuple[int, ...]]:
    """A chunk shape for ``shape``: each side 1, the whole side (or more), or between
    (mostly leaving an edge chunk).

    Examples
    --------
    >>> from hypothesis import find
    >>> find(chunk_shapes((5, 0)), lambda c: c[0] == 2)
    (2, 1)
    """
    def side(n: int) -> st.SearchStrategy[int]:
        return st.one_of(st.just(1), st.integers(1, max(n, 1)), st.just(max(n, 1)),
                         st.integers(max(n, 1), max(n, 1) + 3))

    return st.tuples(*[side(n) for n in shape])


def shard_shapes(chunks: tuple[int, ...], *, max_chunks_per_side: int = 3
                 ) -> st.SearchStrategy[tuple[int, ...]]:
    """A shard shape holding a whole number (1 to ``max_chunks_per_side``) of
    ``chunks`` per side.

    Examples
    --------
    >>> from hypothesis import find
    >>> find(shard_shapes((2, 3)), lambda s: s[0] > 2)
    (4, 3)
    """
    def side(chunk: int) -> st.SearchStrategy[int]:
        return st.integers(1, max_chunks_per_side).map(lambda k: k * chunk)

    return st.tuples(*[side(c) for c in chunks])


def zarr_formats() -> st.SearchStrategy[int]:
    """Zarr format 2 or 3."""
    return st.sampled_from([3, 2])


def fill_values(dtype: np.dtype) -> st.SearchStrategy[Any]:
    """A fill value for ``dtype``: 0 most often (the default), else any value of it,
    NaN with payloads and -0.0 included.

    Examples
    --------
    >>> from hypothesis import find
    >>> import numpy as np
    >>> find(fill_values(np.dtype("f8")), lambda v: v == 0)
    np.float64(0.0)
    """
    native = np.dtype(dtype).newbyteorder("=")
    if native.kind in "mM":
        unit = np.datetime_data(native)[0]  # a generic timedelta64(0) cannot be hashed
        return st.one_of(st.just(native.type(0, unit)), st.just(native.type("NaT", unit)))
    zero = st.just(native.type(0) if native.kind not in "US" else native.type())
    return st.one_of(zero, elements(native))


@dataclass(frozen=True)
class StoredArraySpec:
    """Values and layout of an array to create: ``spec.create(store)``.

    Attributes
    ----------
    data : numpy.ndarray
        The values (their dtype, byte order included, is the array's).
    chunks, shards : tuple of int
        The chunk shape, and the shard shape or ``None``.
    zarr_format : int
    fill_value : scalar
        The array's fill value (``None``: the format's default).
    write_empty_chunks : bool
        Whether chunks equal to the fill value are stored.
    """

    data: np.ndarray = field(compare=False)
    chunks: tuple[int, ...]
    shards: tuple[int, ...] | None = None
    zarr_format: int = 3
    fill_value: Any = None
    write_empty_chunks: bool = False

    def create(self, store: StoreLike = None, **kwargs: Any) -> Array:
        """The array, created in ``store`` (``None``: in memory) holding ``data``."""
        from chunkflow.api import create_array

        options: dict[str, Any] = {"zarr_format": self.zarr_format}
        if self.shards is not None:
            options["shards"] = self.shards
        if self.fill_value is not None:
            options["fill_value"] = self.fill_value
        array = create_array(store, shape=self.data.shape, chunks=self.chunks,
                             dtype=self.data.dtype, write_empty_chunks=self.write_empty_chunks,
                             **options, **kwargs)
        array[...] = self.data
        return array


@st.composite
def stored_arrays(
    draw: st.DrawFn,
    *,
    dtypes: st.SearchStrategy[np.dtype] = dtypes(),  # noqa: B008 - a strategy, not a value
    shapes: st.SearchStrategy[tuple[int, ...]] = shapes(),  # noqa: B008
    formats: tuple[int, ...] = (3, 2),
    sharded: bool = True,
    fill: bool = True,
    data: st.SearchStrategy[np.ndarray] | None = None,
) -> StoredArraySpec:
    """A :class:`StoredArraySpec`: values from :func:`~.values.arrays`, a chunk grid,
    sometimes shards (Zarr 3 only), a format and a fill value.

    Parameters
    ----------
    dtypes, shapes : strategies
        What the values are drawn from.
    formats : tuple of int
        The Zarr formats to draw.
    sharded : bool
        Whether Zarr 3 arrays are sometimes sharded.
    fill : bool
        Whether fill values other than the default are drawn.
    data : strategy, optional
        Draw the values from this strategy instead (dtypes and shapes then unused).
    """
    values = draw(data if data is not None else arrays(dtypes, shapes))
    chunks = draw(chunk_shapes(values.shape)) if values.ndim else ()
    zarr_format = draw(st.sampled_from(formats))
    shards = None
    if sharded and zarr_format == 3 and values.ndim and draw(st.booleans()):
        shards = draw(shard_shapes(chunks))
    fill_value = draw(fill_values(values.dtype)) if fill and draw(st.booleans()) else None
    return StoredArraySpec(values, chunks, shards, zarr_format, fill_value,
                           write_empty_chunks=draw(st.booleans()))
