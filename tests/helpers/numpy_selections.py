"""The checks that compare a chunked array's answer with numpy's, over the selections of
:mod:`chunkflow.testing.strategies` (re-exported here for the tests that import them).

A selection mixes integers, slices (negative steps too), ``...``, ``None``, integer
arrays (1-d and n-d, as arrays or nested lists, broadcasting together or not), and
boolean masks over one or several dimensions. Some draws are invalid for numpy (out of
bounds, arrays that do not broadcast, masks whose counts differ): then the chunked
array must raise an ``IndexError`` too, and write nothing.

Values are compared by their bytes (:func:`assert_identical`): NaN payloads, -0.0,
NaT and the padding of strings count.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from hypothesis import strategies as st

from chunkflow.testing.strategies import selection_values
from chunkflow.testing.strategies.selections import _rng, numpy_selection, numpy_selections

__all__ = ["assert_identical", "check_get", "check_set", "chunked_shape", "chunked_shapes",
           "numpy_selection", "numpy_selections", "refusal_class", "values_for"]


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


def assert_identical(got: Any, expected: Any, context: object = "") -> None:
    """``got`` and ``expected`` have one shape, one dtype (byte order included) and the
    same bytes: NaN payloads, -0.0, NaT and string padding count."""
    got, expected = np.asarray(got), np.asarray(expected)
    assert got.shape == expected.shape, (context, got.shape, expected.shape)
    assert got.dtype == expected.dtype, (context, got.dtype, expected.dtype)
    same = np.array_equal(_bytes(got), _bytes(expected))
    assert same, f"{context!r}: values differ\n got      {got!r}\n expected {expected!r}"


def _bytes(values: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(values).reshape(-1).view(np.uint8)


def refusal_class(err: BaseException) -> type[BaseException]:
    """The builtin class of numpy's refusal a chunked array must raise too."""
    for cls in (IndexError, OverflowError, TypeError, ValueError):
        if isinstance(err, cls):
            return cls
    return type(err)


def _numpy_get(data: np.ndarray, selection: Any) -> Any:
    return data[selection]


def _numpy_set(data: np.ndarray, selection: Any, value: Any) -> None:
    data[selection] = value


def check_get(read: Callable[[Any], Any], data: np.ndarray, selection: Any, *,
              oracle: Callable[[np.ndarray, Any], Any] = _numpy_get,
              scalars: bool = True) -> None:
    """``read(selection)`` equals ``oracle(data, selection)`` (numpy's
    ``data[selection]``): values (bytes), shape, dtype, and with ``scalars`` the
    scalar-or-array kind; an ``IndexError`` when numpy raises one."""
    try:
        expected = oracle(data, selection)
    except IndexError:
        with pytest.raises(IndexError):
            read(selection)
        return
    got = read(selection)
    if scalars:
        assert isinstance(got, np.ndarray) == isinstance(expected, np.ndarray), (got, expected)
    assert_identical(got, expected, selection)


def check_set(write: Callable[[Any, Any], None], read_all: Callable[[], np.ndarray],
              data: np.ndarray, selection: Any, value: Any, *,
              assign: Callable[[np.ndarray, Any, Any], None] = _numpy_set) -> None:
    """``write(selection, value)`` leaves what ``assign(copy, selection, value)``
    (numpy's ``copy[selection] = value``) leaves, or raises an error of the builtin
    class numpy raises (``IndexError``, ``ValueError``, ``TypeError``,
    ``OverflowError``) and leaves ``data`` unchanged."""
    expected = data.copy()
    try:
        assign(expected, selection, value)
    except Exception as err:  # noqa: BLE001 - any refusal of numpy's, compared by class
        with pytest.raises(refusal_class(err)):
            write(selection, value)
        assert_identical(read_all(), data, ("refused", selection))
        return
    write(selection, value)
    assert_identical(read_all(), expected, selection)
