"""Selection by cells of the chunk grid: zarr-python's ``z.blocks[...]``,
``get_block_selection`` and ``set_block_selection``.

zarr-python calls a cell of the array's regular chunk grid as stored a "block", and
these names are its API; everywhere else in chunkflow a *block* is a dask block (a
group of chunks), so this module speaks of grid cells. As in zarr-python 3, a cell
is one chunk of the stored grid, which for a sharded array is the *shard*
(zarr-python's ``BlockIndexer`` walks ``metadata.chunk_grid``, the shard grid);
chunkflow calls that shape :attr:`~chunkflow.Array.write_chunks`. Each dimension takes
a cell index (negative counts from the end) or a slice of cell indices with step 1; the
selected cells are read or written as one basic selection, and no dimension is dropped.

Examples
--------
>>> import numpy as np, chunkflow
>>> z = chunkflow.array(np.arange(10), chunks=4)
>>> z.blocks[1], z.blocks[-1], z.blocks[1:]
(array([4, 5, 6, 7]), array([8, 9]), array([4, 5, 6, 7, 8, 9]))
"""

from __future__ import annotations

import numbers
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from chunkflow.core.selection import SelectionAccessor
from chunkflow.errors import BoundsCheckError, InvalidSelectionError
from chunkflow.grid import ceil_div
from chunkflow.indexing import expand_ellipsis

if TYPE_CHECKING:
    from numpy.typing import ArrayLike

    from chunkflow.indexing import Selection

__all__ = ["ChunkGridSelection", "chunk_grid_slices"]


def chunk_grid_slices(selection: Selection, shape: Sequence[int], chunks: Sequence[int],
                      path: str = "") -> tuple[slice, ...]:
    """The element slices covered by a block selection on a grid of ``chunks``.

    Raises :class:`~chunkflow.errors.BoundsCheckError` for a first block outside the
    grid and :class:`~chunkflow.errors.InvalidSelectionError` for anything that is not
    an integer or a step-1 slice, as zarr-python 3 does.

    Examples
    --------
    >>> chunk_grid_slices((1, slice(-2, None)), shape=(10, 10), chunks=(4, 3))
    (slice(4, 8, None), slice(6, 10, None))
    >>> chunk_grid_slices(3, shape=(10,), chunks=(4,))  # doctest: +NORMALIZE_WHITESPACE
    Traceback (most recent call last):
    ...
    chunkflow.errors.BoundsCheckError: array '': block 3 is out of bounds for dimension 0 of 3 blocks (length
    10, blocks of 4)
    """
    slices = []
    entries = expand_ellipsis(selection, tuple(shape), taken=_one_block_dim,
                              prefix=f"array {path!r}, blocks: ")
    for dim, (item, size, chunk) in enumerate(zip(entries, shape, chunks)):
        nblocks = ceil_div(size, chunk)
        if isinstance(item, numbers.Integral) and not isinstance(item, (bool, np.bool_)):
            first = int(item) + nblocks if item < 0 else int(item)
            last = first + 1
        elif isinstance(item, slice):
            if item.step not in (None, 1):
                raise InvalidSelectionError(
                    f"array {path!r}: block selection {item!r} in dimension {dim} has step "
                    f"{item.step}; blocks take integers or slices with step 1")
            first = 0 if item.start is None else int(item.start)
            last = nblocks if item.stop is None else int(item.stop)
            first = first + nblocks if first < 0 else first
            last = last + nblocks if last < 0 else last
        else:
            raise InvalidSelectionError(
                f"array {path!r}: block selection {item!r} in dimension {dim} is not an "
                "integer or a slice; blocks take integers or slices with step 1")
        if first < 0 or first * chunk >= size:
            shown = item if isinstance(item, numbers.Integral) else f"{item!r} (first block {first})"
            raise BoundsCheckError(
                f"array {path!r}: block {shown} is out of bounds for dimension {dim} of "
                f"{nblocks} blocks (length {size}, blocks of {chunk})")
        slices.append(slice(first * chunk, min(max(last, first) * chunk, size)))
    return tuple(slices)


def _one_block_dim(entry: object) -> int:
    return 1


class ChunkGridSelection:
    """Mixin of :class:`~chunkflow.Array`: selection by chunk grid cells, zarr-python's
    "block selection" (needs ``write_chunks``, ``get_basic_selection`` and
    ``set_basic_selection``)."""

    _path: str

    if TYPE_CHECKING:
        @property
        def shape(self) -> tuple[int, ...]: ...

        @property
        def write_chunks(self) -> tuple[int, ...]: ...

    def get_block_selection(self, selection: Selection) -> np.ndarray:
        """Read whole blocks of the chunk grid (shards, for a sharded array).

        Examples
        --------
        >>> import numpy as np, chunkflow
        >>> z = chunkflow.array(np.arange(12).reshape(3, 4), chunks=(2, 2))
        >>> z.get_block_selection((1, 0))
        array([[8, 9]])
        """
        return self.get_basic_selection(self._chunk_grid_slices(selection))  # type: ignore[attr-defined]  # provided by Array

    def set_block_selection(self, selection: Selection, value: ArrayLike) -> None:
        """Write whole blocks of the chunk grid; ``value`` broadcasts like numpy.

        Examples
        --------
        >>> import chunkflow
        >>> z = chunkflow.zeros(6, chunks=2, dtype="i1")
        >>> z.set_block_selection(slice(1, 2), 5)
        >>> z[:].tolist()
        [0, 0, 5, 5, 0, 0]
        """
        self.set_basic_selection(self._chunk_grid_slices(selection), value)  # type: ignore[attr-defined]  # provided by Array

    @property
    def blocks(self) -> SelectionAccessor:
        """Block selection: ``z.blocks[1, :2]`` reads blocks, ``z.blocks[0] = v`` writes."""
        return SelectionAccessor(self.get_block_selection, self.set_block_selection)

    def _chunk_grid_slices(self, selection: Selection) -> tuple[slice, ...]:
        return chunk_grid_slices(selection, self.shape, self.write_chunks, self._path)
