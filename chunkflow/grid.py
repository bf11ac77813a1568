"""The regular chunk grid, chunk keys, and normalization of ``shape`` / ``chunks``.

Pure arithmetic: nothing here touches a store.

Examples
--------
>>> grid = RegularChunkGrid(shape=(10, 7), chunks=(4, 4))
>>> grid.grid_shape
(3, 2)
>>> grid.chunk_region((2, 1))
(slice(8, 10, None), slice(4, 7, None))
>>> ChunkKeyEncoding("default", "/").encode((2, 1))
'c/2/1'
"""

from __future__ import annotations

import math
import operator
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from itertools import product
from typing import TYPE_CHECKING, Any, SupportsIndex, TypeAlias

from chunkflow.errors import (
    ArgumentTypeError,
    BoundsCheckError,
    InvalidArgumentError,
    InvalidSelectionError,
    MetadataError,
)

if TYPE_CHECKING:
    from typing_extensions import TypeIs  # typing.TypeIs is Python 3.13+

__all__ = [
    "ChunkKeyEncoding", "ChunksLike", "KeyEncodingLike", "RegularChunkGrid", "ShapeLike", "ceil_div",
    "normalize_chunks", "normalize_shape",
]

#: A shape as users give it: one integer (a 1-d array) or one integer per dimension.
ShapeLike: TypeAlias = SupportsIndex | Sequence[SupportsIndex]

#: A chunk shape as users give it (see :func:`normalize_chunks`): ``None`` or ``True`` to
#: guess, ``False`` for one chunk, one integer for every dimension, or one entry per
#: dimension (``None`` or ``-1`` for the whole dimension).
ChunksLike: TypeAlias = bool | SupportsIndex | Sequence[SupportsIndex | None] | None

#: A chunk key encoding as users give it: ``"default"`` or ``"v2"``, a ``(name,
#: separator)`` pair, the v3 document (``{"name": ..., "configuration": {"separator":
#: ...}}``), or ``None`` for the format's default.
KeyEncodingLike: TypeAlias = str | tuple[str, str] | Mapping[str, Any] | None

_ENCODING_NAMES = ("default", "v2")
_SEPARATORS = ("/", ".")

# Chunk-guessing bounds (bytes). zarr-python 2 uses a 128 KiB floor; chunkflow reads
# chunks through a thread pool and a dask graph, where ~1 MiB chunks amortize the per-task
# and per-request overhead far better, so the floor is raised to 1 MiB.
_GUESS_MIN_BYTES = 1024 * 1024
_GUESS_MAX_BYTES = 64 * 1024 * 1024
_GUESS_INCREMENT_BYTES = 256 * 1024


def ceil_div(a: int, b: int) -> int:
    """``a / b`` rounded up, for whole numbers: how many chunks of ``b`` cover ``a``.

    Examples
    --------
    >>> ceil_div(10, 4), ceil_div(8, 4), ceil_div(0, 4)
    (3, 2, 0)
    """
    return -(-a // b)


def _as_index(value: SupportsIndex) -> int:
    """``operator.index`` that refuses bools (``True`` is an int, but never a size)."""
    if isinstance(value, bool) or getattr(getattr(value, "dtype", None), "kind", None) == "b":
        raise ArgumentTypeError(f"expected an integer, got the boolean {value!r}")
    return operator.index(value)


@dataclass(frozen=True)
class ChunkKeyEncoding:
    """How chunk grid coordinates become store keys.

    Parameters
    ----------
    name : {"default", "v2"}
        ``"default"`` is the Zarr v3 encoding (``c/1/2``); ``"v2"`` is the Zarr v2 one
        (``1.2``), also available to v3 arrays.
    separator : {"/", "."}
        Joins the coordinates.

    Examples
    --------
    >>> enc = ChunkKeyEncoding("default", ".")
    >>> enc.encode((1, 2)), enc.encode(())
    ('c.1.2', 'c')
    >>> enc.decode("c.1.2", 2)
    (1, 2)
    >>> ChunkKeyEncoding("v2", "/").encode((1, 2)), ChunkKeyEncoding("v2", ".").encode(())
    ('1/2', '0')
    >>> print(ChunkKeyEncoding("v2", ".").decode(".zarray", 2))
    None
    """

    name: str
    separator: str

    def __post_init__(self) -> None:
        if self.name not in _ENCODING_NAMES:
            raise MetadataError(
                f"chunk key encoding name must be one of {_ENCODING_NAMES}, got {self.name!r}"
            )
        if self.separator not in _SEPARATORS:
            raise MetadataError(
                f"chunk key separator must be one of {_SEPARATORS}, got {self.separator!r}"
            )

    @cached_property
    def _prefix(self) -> str:
        # Cached because encode() runs once per chunk on the read and write paths.
        return "c" + self.separator if self.name == "default" else ""

    def encode(self, coords: tuple[int, ...]) -> str:
        """Return the store key (relative to the array) of the chunk at ``coords``."""
        if not coords:
            return "c" if self.name == "default" else "0"
        return self._prefix + self.separator.join(map(str, coords))

    def decode(self, key: str, ndim: int) -> tuple[int, ...] | None:
        """Return the chunk coordinates of ``key``, or None if it is not a chunk key.

        Only keys that :meth:`encode` could have produced for an ``ndim``-dimensional
        array are accepted (no signs, no leading zeros, exactly ``ndim`` parts), so
        metadata documents and other arrays' keys are never mistaken for chunks.
        """
        if ndim == 0:
            return () if key == ("c" if self.name == "default" else "0") else None
        prefix = self._prefix
        if not key.startswith(prefix):
            return None
        parts = key[len(prefix):].split(self.separator)
        if len(parts) != ndim:
            return None
        for part in parts:
            # isdecimal() alone would accept non-ASCII digits and "007".
            if not (part.isascii() and part.isdecimal()) or (part[0] == "0" and len(part) > 1):
                return None
        return tuple(map(int, parts))


@dataclass(frozen=True)
class RegularChunkGrid:
    """A grid of equally shaped chunks covering an array; edge chunks are clipped.

    Parameters
    ----------
    shape : tuple of int
        The array shape (zero-length dimensions allowed).
    chunks : tuple of int
        The chunk shape, every entry at least 1.

    Examples
    --------
    >>> grid = RegularChunkGrid((5, 0), (2, 1))
    >>> grid.grid_shape, grid.nchunks
    ((3, 0), 0)
    >>> grid = RegularChunkGrid((5,), (2,))
    >>> list(grid.all_chunk_coords()), grid.is_edge_chunk((2,))
    ([(0,), (1,), (2,)], True)
    >>> list(grid.chunk_coords_in_region((slice(1, 4),)))
    [(0,), (1,)]
    """

    shape: tuple[int, ...]
    chunks: tuple[int, ...]

    def __post_init__(self) -> None:
        shape = normalize_shape(self.shape)
        try:
            chunks = tuple(_as_index(c) for c in self.chunks)
        except TypeError as err:
            raise InvalidArgumentError(
                f"chunks must be a sequence of integers, got {self.chunks!r} for shape {shape}"
            ) from err
        if len(chunks) != len(shape):
            raise InvalidArgumentError(
                f"chunks {chunks} must have one entry per dimension of shape {shape}"
            )
        if any(c < 1 for c in chunks):
            raise InvalidArgumentError(
                f"chunk sizes must be at least 1, got chunks {chunks} for shape {shape}"
            )
        # Frozen dataclass: store the canonical (plain int tuple) forms.
        object.__setattr__(self, "shape", shape)
        object.__setattr__(self, "chunks", chunks)

    @property
    def ndim(self) -> int:
        """Number of dimensions."""
        return len(self.shape)

    @cached_property
    def grid_shape(self) -> tuple[int, ...]:
        """Number of chunks along each dimension (0 for zero-length dimensions)."""
        return tuple(ceil_div(s, c) for s, c in zip(self.shape, self.chunks))

    @cached_property
    def nchunks(self) -> int:
        """Total number of chunks (1 for a 0-d array)."""
        return math.prod(self.grid_shape)

    def contains(self, coords: Sequence[int]) -> bool:
        """Return whether ``coords`` are the coordinates of a chunk of this grid."""
        return len(coords) == len(self.shape) and all(
            0 <= c < g for c, g in zip(coords, self.grid_shape)
        )

    def _check(self, coords: Sequence[int]) -> None:
        if not self.contains(coords):
            raise BoundsCheckError(
                f"chunk coordinates {tuple(coords)} are outside the chunk grid of shape "
                f"{self.grid_shape} (array shape {self.shape}, chunks {self.chunks})"
            )

    def chunk_region(self, coords: Sequence[int]) -> tuple[slice, ...]:
        """Return the region of the array covered by a chunk, clipped to the array."""
        self._check(coords)
        return tuple(
            slice(i * c, min((i + 1) * c, s)) for i, c, s in zip(coords, self.chunks, self.shape)
        )

    def is_edge_chunk(self, coords: Sequence[int]) -> bool:
        """Return whether the chunk sticks out of the array (its region is clipped)."""
        self._check(coords)
        return any((i + 1) * c > s for i, c, s in zip(coords, self.chunks, self.shape))

    def all_chunk_coords(self) -> Iterator[tuple[int, ...]]:
        """Iterate over the coordinates of every chunk in C order."""
        return product(*map(range, self.grid_shape))

    def chunk_coords_in_region(self, region: Sequence[slice]) -> Iterator[tuple[int, ...]]:
        """Iterate (C order) over the chunks holding at least one element of ``region``.

        ``region`` is a tuple of slices with numpy semantics (clipped to the array, any
        non-zero step); missing trailing entries mean whole dimensions.
        """
        if len(region) > len(self.shape):
            raise InvalidSelectionError(
                f"region {tuple(region)} has more entries than the array has dimensions "
                f"(shape {self.shape})"
            )
        per_dim = []
        for dim, (size, chunk) in enumerate(zip(self.shape, self.chunks)):
            sl = region[dim] if dim < len(region) else slice(None)
            if not isinstance(sl, slice):
                raise InvalidSelectionError(
                    f"region entries must be slices, got {sl!r} for dimension {dim}"
                )
            per_dim.append(_chunks_of_slice(sl, size, chunk))
        return product(*per_dim)


def _chunks_of_slice(sl: slice, size: int, chunk: int) -> Sequence[int]:
    """Chunk indices (ascending) along one dimension that hold an element of ``sl``."""
    if sl.step == 0:
        raise InvalidSelectionError(f"slice step cannot be zero: {sl!r}")
    start, stop, step = sl.indices(size)
    elements = range(start, stop, step)
    if not elements:
        return ()
    low, high, step = min(elements[0], elements[-1]), max(elements[0], elements[-1]), abs(step)
    if step < chunk:
        # Consecutive elements are closer than a chunk: every chunk in between is hit.
        return range(low // chunk, high // chunk + 1)
    # Every element lies in its own chunk, so this is proportional to the chunks hit.
    return [i // chunk for i in range(low, high + 1, step)]


def normalize_shape(shape: ShapeLike) -> tuple[int, ...]:
    """Return ``shape`` as a tuple of non-negative Python ints.

    Examples
    --------
    >>> normalize_shape(5), normalize_shape([2, 3]), normalize_shape(())
    ((5,), (2, 3), ())
    """
    try:
        result = (_as_index(shape),) if _is_scalar(shape) else tuple(_as_index(s) for s in shape)
    except TypeError as err:
        raise InvalidArgumentError(
            f"shape must be an integer or a sequence of integers, got {shape!r}"
        ) from err
    if any(s < 0 for s in result):
        raise InvalidArgumentError(f"shape entries must be non-negative, got {result}")
    return result


def _is_scalar(value: object) -> TypeIs[SupportsIndex]:
    return not hasattr(value, "__iter__") or getattr(value, "ndim", 1) == 0


def normalize_chunks(chunks: ChunksLike, shape: tuple[int, ...], itemsize: int) -> tuple[int, ...]:
    """Turn the user's ``chunks`` argument into a chunk shape for ``shape``.

    Parameters
    ----------
    chunks : None, bool, int or sequence of (int or None)
        ``None`` or ``True``: guess (about 1 MiB and up per chunk, never above 64 MiB);
        ``False``: one chunk for the whole array; an int: that size along every
        dimension; a sequence: one entry per dimension, ``None`` or ``-1`` meaning the
        whole dimension.
    shape : tuple of int
        The (normalized) array shape.
    itemsize : int
        Bytes per element, used by the guess.

    Returns
    -------
    tuple of int
        Every entry at least 1 (also along zero-length dimensions).

    Examples
    --------
    >>> normalize_chunks(None, (10000, 10000), 8)
    (313, 625)
    >>> normalize_chunks(100, (1000, 10), 8), normalize_chunks((None, -1, 5), (0, 4, 10), 8)
    ((100, 100), (1, 4, 5))
    >>> normalize_chunks(False, (3, 0), 8), normalize_chunks(None, (), 8)
    ((3, 1), ())
    >>> normalize_chunks((0, 2, 3), (0, 2, 3), 8)  # zarr-python's chunks for no data
    (1, 2, 3)
    """
    shape = normalize_shape(shape)
    if chunks is None or chunks is True:
        return _guess_chunks(shape, itemsize)
    if chunks is False:
        return tuple(max(s, 1) for s in shape)
    if isinstance(chunks, (str, bytes)):
        raise InvalidArgumentError(
            f"chunks must be None, True, False, an int or a sequence of ints, got {chunks!r} "
            f"for shape {shape}"
        )
    if _is_scalar(chunks):
        return tuple(_chunk_entry(chunks, s, chunks, shape) for s in shape)
    entries = tuple(chunks)
    if len(entries) != len(shape):
        raise InvalidArgumentError(
            f"chunks {chunks!r} must have one entry per dimension of shape {shape} "
            f"({len(shape)} entries, got {len(entries)})"
        )
    return tuple(_chunk_entry(c, s, chunks, shape) for c, s in zip(entries, shape))


def _chunk_entry(
    entry: SupportsIndex | None, size: int, chunks: ChunksLike, shape: tuple[int, ...]
) -> int:
    if entry is None:
        return max(size, 1)
    try:
        value = _as_index(entry)
    except TypeError as err:
        raise InvalidArgumentError(
            f"chunks {chunks!r} for shape {shape}: entries must be integers, None or -1, "
            f"got {entry!r} (irregular dask-style chunks are not supported)"
        ) from err
    if value == -1 or (value == 0 and size == 0):
        # 0 along a zero-length dimension, as zarr-python takes it: the whole (empty)
        # dimension, stored as 1 (tensorstore refuses a chunk size of 0).
        return max(size, 1)
    if value < 1:
        raise InvalidArgumentError(
            f"chunks {chunks!r} for shape {shape}: chunk sizes must be positive "
            f"(or -1 / None for the whole dimension, 0 for a zero-length one), got {value}"
        )
    return value


def _guess_chunks(shape: tuple[int, ...], itemsize: int) -> tuple[int, ...]:
    """Halve the largest chunk dimension until the chunk fits the target size.

    The target grows with the array (as in h5py and zarr-python 2): 256 KiB times
    2 ** log10(array MiB), clamped to [1 MiB, 64 MiB]; a chunk may overshoot the
    target by 50% (halving any further would undershoot it by more), but never
    exceeds 64 MiB unless a single element does.
    """
    chunks = [max(s, 1) for s in shape]
    if not chunks:
        return ()
    itemsize = max(int(itemsize), 1)
    array_bytes = math.prod(chunks) * itemsize
    target = _GUESS_INCREMENT_BYTES * 2 ** math.log10(array_bytes / (1024 * 1024))
    target = min(max(target, _GUESS_MIN_BYTES), _GUESS_MAX_BYTES)
    limit = min(1.5 * target, _GUESS_MAX_BYTES)
    chunk_bytes = array_bytes
    while chunk_bytes > limit:
        largest = max(range(len(chunks)), key=chunks.__getitem__)
        if chunks[largest] == 1:
            break  # a single element is bigger than the limit
        chunks[largest] = ceil_div(chunks[largest], 2)
        chunk_bytes = math.prod(chunks) * itemsize
    return tuple(chunks)
