"""Selections of every kind, for an array of a given shape.

- :func:`numpy_selections`: numpy's full syntax: integers, slices (steps of both signs,
  bounds outside the array), ``...``, ``None``, integer arrays (1-d and n-d, as arrays
  or nested lists, broadcasting together or not) and boolean masks over one or several
  dimensions. Some draws are invalid for numpy (out of bounds, arrays that do not
  broadcast): a chunked array must then raise ``IndexError`` too.
- :func:`basic_selections`: integers, slices and ``...`` (what ``to_dask`` and
  ``get_basic_selection`` take).
- :func:`orthogonal_selections`: one entry per dimension (integer, slice, integer
  array or mask), in zarr's ``oindex`` meaning.
- :func:`coordinate_selections`: integer arrays that broadcast together (``vindex``).
- :func:`mask_selections`: one boolean mask of the whole shape.

The structure of a selection is drawn from a generator that hypothesis seeds: its
simplest choices (rank 1, the first option) would otherwise leave separated index
arrays, masks among arrays and ``None`` in a sliver of the examples. A failing example
is still reproduced, and shrinks, through its seed.

Examples
--------
>>> from hypothesis import find
>>> import numpy as np
>>> selection = find(basic_selections((5, 4)), lambda s: any(
...     isinstance(e, slice) and (e.step or 1) < 0 for e in s))
>>> np.arange(20).reshape(5, 4)[selection].ndim <= 2
True
"""

from __future__ import annotations

from typing import Any

import numpy as np
from hypothesis import strategies as st

__all__ = [
    "basic_selections",
    "coordinate_selections",
    "mask_selections",
    "numpy_selections",
    "orthogonal_selections",
    "selection_values",
]


def _rng(draw: st.DrawFn, salt: int) -> np.random.Generator:
    # Salted: hypothesis may hand the same seed to the draws of one example.
    return np.random.default_rng([draw(st.integers(0, 2**64 - 1)), salt])


def _slice(rng: np.random.Generator, size: int) -> slice:
    def bound() -> int | None:
        return None if rng.random() < 0.3 else int(rng.integers(-size - 2, size + 3))

    step = [None, None, 1, 2, 3, -1, -2, -3, size + 1, -size - 1][rng.integers(10)]
    if rng.random() < 0.5:
        return slice(bound(), bound(), step)  # anything, empty often
    low, high = sorted(int(n) for n in rng.integers(0, size + 1, size=2))
    if step is not None and step < 0:
        return slice(high - 1 if high else None, low - 1 if low else None, step)
    return slice(low, high if high > low else None, step)


def _int(rng: np.random.Generator, size: int, *, in_bounds: bool = False) -> int:
    # Now and then one past either end: numpy refuses it, and so must the array.
    if not in_bounds and (rng.random() < 0.03 or not size):
        return [size, -size - 1][rng.integers(2)]
    return int(rng.integers(-size, size))


def _int_array(rng: np.random.Generator, size: int, block: tuple[int, ...]) -> Any:
    """Integers broadcasting to ``block`` (a suffix of it, some sides 1), sometimes as
    nested lists."""
    keep = int(rng.integers(0, len(block) + 1))
    shape = tuple(1 if rng.random() < 0.3 else n for n in block[len(block) - keep:])
    if not shape:
        shape = (1,)  # a 0-d integer array is an integer: keep it an array
    low = -size if rng.random() < 0.5 else 0
    values = rng.integers(low, max(size, 1), size=shape)
    if size == 0 and rng.random() < 0.8:
        values = values[..., :0] if values.ndim else values  # mostly nothing to pick
    dtype = ["i8", "i4", "u2"][rng.integers(3)] if low >= 0 else "i8"
    values = values.astype(dtype)
    return values.tolist() if rng.random() < 0.25 else values


def numpy_selection(rng: np.random.Generator, shape: tuple[int, ...]) -> tuple[Any, ...]:
    """:func:`numpy_selections` from ``rng``."""
    ndim = len(shape)
    block = tuple(int(n) for n in rng.choice([0, 1, 2, 3, 3, 2, 3], size=rng.integers(0, 3)))
    weights = [1, 1, 0, 0] if rng.random() < 0.15 else [2, 2, 5, 1]  # int slice array mask
    p = np.array(weights) / sum(weights)
    entries: list[Any] = []
    dim = 0
    while dim < ndim:
        kind = rng.choice(["int", "slice", "array", "mask"], p=p)
        size = shape[dim]
        if kind == "int":
            entries.append(_int(rng, size))
        elif kind == "slice":
            entries.append(_slice(rng, size))
        elif kind == "array":
            entries.append(_int_array(rng, size, block))
        else:
            k = int(rng.integers(1, min(2, ndim - dim) + 1))
            share = [0.0, 0.3, 0.7, 1.0][rng.integers(4)]
            entries.append(rng.random(shape[dim:dim + k]) < share)
            dim += k - 1
        dim += 1
    if ndim >= 3 and len(entries) == ndim and rng.random() < 0.3:
        # Advanced entries separated by a slice: numpy puts their block first.
        i = int(rng.integers(0, ndim - 2))
        j = int(rng.integers(i + 2, ndim))
        entries[i] = _int(rng, shape[i]) if rng.random() < 0.4 else _int_array(rng, shape[i], block)
        entries[i + 1] = _slice(rng, shape[i + 1])
        entries[j] = _int_array(rng, shape[j], block)
    return _shorten(rng, entries, allow_none=True)


def _shorten(rng: np.random.Generator, entries: list[Any], *, allow_none: bool) -> tuple[Any, ...]:
    # Mostly all entries; else trailing ones left out, or a run replaced by "...".
    form = rng.choice(["all", "drop", "ellipsis"], p=[0.6, 0.15, 0.25])
    cut = int(rng.integers(0, len(entries) + 1))
    if form == "drop":
        entries = entries[:cut]
    elif form == "ellipsis":
        run = int(rng.integers(0, len(entries) - cut + 1))
        entries = [*entries[:cut], Ellipsis, *entries[cut + run:]]
    if allow_none and rng.random() < 0.2:
        for _ in range(rng.integers(1, 3)):
            entries.insert(int(rng.integers(0, len(entries) + 1)), None)
    return tuple(entries)


@st.composite
def numpy_selections(draw: st.DrawFn, shape: tuple[int, ...]) -> tuple[Any, ...]:
    """A selection for an array of ``shape``, in numpy's full syntax.

    One draw in five is basic (integers and slices); the others hold index arrays or
    masks too, among integers and slices, so that the advanced entries are often
    adjacent and often separated (their block then comes first).
    """
    return numpy_selection(_rng(draw, 2), shape)


@st.composite
def basic_selections(draw: st.DrawFn, shape: tuple[int, ...], *, in_bounds: bool = False
                     ) -> tuple[Any, ...]:
    """Integers, slices (any step, any bounds) and at most one ``...``.

    ``in_bounds`` keeps integers inside their dimension (for code that must not fail).
    """
    rng = _rng(draw, 3)
    entries: list[Any] = []
    for size in shape:
        if size and rng.random() < 0.25:
            entries.append(_int(rng, size, in_bounds=in_bounds))
        else:
            entries.append(_slice(rng, size))
    return _shorten(rng, entries, allow_none=False)


@st.composite
def orthogonal_selections(draw: st.DrawFn, shape: tuple[int, ...]) -> tuple[Any, ...]:
    """One entry per dimension in zarr's ``oindex`` meaning: an integer, a slice, a
    1-d integer array (any order, repeats, negative) or a 1-d mask."""
    rng = _rng(draw, 4)
    entries: list[Any] = []
    for size in shape:
        kind = rng.choice(["int", "slice", "array", "mask"])
        if kind == "int" and size:
            entries.append(_int(rng, size, in_bounds=True))
        elif kind == "array":
            count = int(rng.integers(0, 5)) if size else 0
            entries.append(rng.integers(-size, size, size=count) if size else np.zeros(0, "i8"))
        elif kind == "mask":
            entries.append(rng.random(size) < rng.random())
        else:
            entries.append(_slice(rng, size))
    return tuple(entries)


@st.composite
def coordinate_selections(draw: st.DrawFn, shape: tuple[int, ...]) -> tuple[np.ndarray, ...]:
    """One integer array per dimension, all of one shape (``vindex`` points)."""
    rng = _rng(draw, 5)
    points = tuple(int(n) for n in rng.integers(0, 4, size=rng.integers(1, 3)))
    if not shape or 0 in shape:
        return tuple(np.zeros((0,), "i8") for _ in shape)
    return tuple(rng.integers(-size, size, size=points) for size in shape)


@st.composite
def mask_selections(draw: st.DrawFn, shape: tuple[int, ...]) -> np.ndarray:
    """A boolean mask of ``shape`` (empty, full or anything between)."""
    rng = _rng(draw, 6)
    share = [0.0, 0.2, 0.6, 1.0][rng.integers(4)]
    return rng.random(shape) < share


@st.composite
def selection_values(draw: st.DrawFn, shape: tuple[int, ...], dtype: np.dtype | None = None
                     ) -> Any:
    """A value to assign to a selection of ``shape``: as many values, fewer sides
    (broadcast), sides of 1, or a scalar; of ``dtype`` (default: negative integers)."""
    rng = _rng(draw, 7)
    form = rng.choice(["full", "suffix", "ones", "scalar"], p=[0.5, 0.2, 0.2, 0.1])
    if form == "suffix":
        shape = shape[int(rng.integers(0, len(shape) + 1)):]
    elif form == "ones":
        shape = tuple(1 if rng.random() < 0.5 else n for n in shape)
    if dtype is None:
        if form == "scalar":
            return int(rng.integers(-1000, -1))
        return rng.integers(-1000, -1, size=shape)
    from chunkflow.testing.strategies.values import arrays

    return draw(arrays(np.dtype(dtype), () if form == "scalar" else shape))
