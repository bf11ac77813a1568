"""The checks that compare a chunked array's answer with numpy's, over the selections of
:mod:`chunkflow.testing.strategies` (re-exported here for the tests that import them).

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

from chunkflow.testing.strategies import selection_values

__all__ = ["check_get", "check_set", "chunked_shape", "chunked_shapes", "numpy_selection",
           "numpy_selections", "values_for"]


from chunkflow.testing.strategies.selections import _rng, numpy_selection, numpy_selections


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


def values_for(draw: st.DrawFn, shape: tuple[int, ...]) -> Any:
    """A value to assign to a selection of ``shape`` (see
    :func:`chunkflow.testing.strategies.selection_values`)."""
    return draw(selection_values(shape))


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
