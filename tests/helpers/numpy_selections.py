"""Hypothesis strategies for numpy selections of every kind, and the checks that compare
a chunked array's answer with numpy's.

A selection mixes integers, slices (negative steps too), ``...``, ``None``, integer
arrays (1-d and n-d, as arrays or nested lists, broadcasting together or not), and
boolean masks over one or several dimensions. Some draws are invalid for numpy (out of
bounds, arrays that do not broadcast, masks whose counts differ): then the chunked
array must raise an ``IndexError`` too, and write nothing.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from hypothesis import strategies as st

__all__ = ["check_get", "check_set", "chunked_shape", "chunked_shapes", "numpy_selection",
           "numpy_selections", "values_for"]


# The structure is drawn from a generator seeded by hypothesis: hypothesis favours its
# simplest choices (rank 1, the first option, cutting entries off), which would leave
# separated index arrays, masks among arrays and None in a sliver of the examples. A
# failing example is still reproduced (and kept) through its seed.


def _rng(draw: st.DrawFn, salt: int) -> np.random.Generator:
    # Salted: hypothesis may hand the same seed to the draws of one example.
    return np.random.default_rng([draw(st.randoms(use_true_random=True)).getrandbits(64), salt])


@st.composite
def chunked_shapes(draw: st.DrawFn, min_dims: int = 1, max_dims: int = 4,
                   max_side: int = 7) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """A shape (zero-length sides sometimes) and a chunk shape that often leaves edge
    chunks (the shape is not a multiple of the chunks)."""
    return chunked_shape(_rng(draw, 1), min_dims, max_dims, max_side)


def chunked_shape(rng: np.random.Generator, min_dims: int = 1, max_dims: int = 4,
                  max_side: int = 7) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """:func:`chunked_shapes` from ``rng``."""
    ndim = int(rng.integers(min_dims, max_dims + 1))
    low = 0 if rng.random() < 0.1 else 1
    shape = tuple(int(n) for n in rng.integers(low, max_side + 1, size=ndim))
    chunks = tuple(int(rng.integers(1, max(n, 1) + 1)) for n in shape)
    return shape, chunks


def _slice(rng: np.random.Generator, size: int) -> slice:
    def bound() -> int | None:
        return None if rng.random() < 0.3 else int(rng.integers(-size - 2, size + 3))

    step = [None, None, 1, 2, 3, -1, -2, -3][rng.integers(8)]
    if rng.random() < 0.5:
        return slice(bound(), bound(), step)  # anything, empty often
    low, high = sorted(int(n) for n in rng.integers(0, size + 1, size=2))
    if step is not None and step < 0:
        return slice(high - 1 if high else None, low - 1 if low else None, step)
    return slice(low, high if high > low else None, step)


def _int(rng: np.random.Generator, size: int) -> int:
    # Now and then one past either end: numpy refuses it, and so must the array.
    if rng.random() < 0.03 or not size:
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


@st.composite
def numpy_selections(draw: st.DrawFn, shape: tuple[int, ...]) -> tuple[Any, ...]:
    """A selection for an array of ``shape``, in numpy's full syntax.

    One draw in five is basic (integers and slices); the others hold index arrays or
    masks too, among integers and slices, so that the advanced entries are often
    adjacent and often separated (their block then comes first).
    """
    return numpy_selection(_rng(draw, 2), shape)


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
    # Mostly all entries; else trailing ones left out, or a run replaced by "...".
    form = rng.choice(["all", "drop", "ellipsis"], p=[0.6, 0.15, 0.25])
    cut = int(rng.integers(0, len(entries) + 1))
    if form == "drop":
        entries = entries[:cut]
    elif form == "ellipsis":
        run = int(rng.integers(0, len(entries) - cut + 1))
        entries = [*entries[:cut], Ellipsis, *entries[cut + run:]]
    if rng.random() < 0.2:
        for _ in range(rng.integers(1, 3)):
            entries.insert(int(rng.integers(0, len(entries) + 1)), None)
    return tuple(entries)


def values_for(draw: st.DrawFn, shape: tuple[int, ...]) -> Any:
    """A value to assign to a selection of ``shape``: as many values, fewer sides
    (broadcast), sides of 1, or a scalar."""
    rng = _rng(draw, 3)
    form = rng.choice(["full", "suffix", "ones", "scalar"], p=[0.5, 0.2, 0.2, 0.1])
    if form == "scalar":
        return int(rng.integers(-1000, -1))
    if form == "suffix":
        shape = shape[int(rng.integers(0, len(shape) + 1)):]
    elif form == "ones":
        shape = tuple(1 if rng.random() < 0.5 else n for n in shape)
    return rng.integers(-1000, -1, size=shape)


def check_get(read: Callable[[Any], Any], data: np.ndarray, selection: Any) -> None:
    """``read(selection)`` equals numpy's ``data[selection]``: values, shape, dtype, and
    the scalar-or-array kind; an ``IndexError`` when numpy raises one."""
    try:
        expected = data[selection]
    except IndexError:
        with pytest.raises(IndexError):
            read(selection)
        return
    got = read(selection)
    assert isinstance(got, np.ndarray) == isinstance(expected, np.ndarray), (got, expected)
    got, expected = np.asarray(got), np.asarray(expected)
    assert got.shape == expected.shape, (selection, got.shape, expected.shape)
    assert got.dtype == expected.dtype
    np.testing.assert_array_equal(got, expected)


def check_set(write: Callable[[Any, Any], None], read_all: Callable[[], np.ndarray],
              data: np.ndarray, selection: Any, value: Any) -> None:
    """``write(selection, value)`` leaves what numpy's assignment leaves, or raises an
    ``IndexError`` as numpy does and leaves ``data`` unchanged."""
    expected = data.copy()
    try:
        expected[selection] = value
    except IndexError:
        with pytest.raises(IndexError):
            write(selection, value)
        np.testing.assert_array_equal(read_all(), data)
        return
    write(selection, value)
    np.testing.assert_array_equal(read_all(), expected)
