"""``z[...]`` reads and writes against numpy on real arrays: every index kind, 1-d to
4-d, edge chunks, sharded arrays, both formats (hypothesis)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import chunkflow
from tests.helpers.numpy_selections import (
    check_get,
    check_set,
    chunked_shapes,
    numpy_selections,
    values_for,
)

PROPERTIES = settings(max_examples=120, deadline=None,
                      suppress_health_check=[HealthCheck.too_slow])
HEAVY = settings(max_examples=800, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@st.composite
def arrays(draw: st.DrawFn) -> tuple[chunkflow.Array, np.ndarray]:
    """A chunkflow array (plain v2 or v3, or sharded) holding ``np.arange`` values."""
    shape, chunks = draw(chunked_shapes())
    layout = draw(st.sampled_from(["v3", "v2", "sharded"]))
    data = np.arange(int(np.prod(shape)), dtype="i8").reshape(shape)
    if layout == "sharded":
        shards = tuple(c * draw(st.integers(1, 3)) for c in chunks)
        z = chunkflow.create_array(None, shape=shape, chunks=chunks, shards=shards, dtype="i8")
    else:
        z = chunkflow.create_array(None, shape=shape, chunks=chunks, dtype="i8",
                                   zarr_format=2 if layout == "v2" else 3)
    z[...] = data
    return z, data


@st.composite
def cases(draw: st.DrawFn) -> tuple[chunkflow.Array, np.ndarray, Any, Any]:
    z, data = draw(arrays())
    selection = draw(numpy_selections(data.shape))
    try:
        target = np.empty(data.shape)[selection].shape
    except IndexError:
        target = ()
    return z, data, selection, values_for(draw, target)


def check(case: tuple[chunkflow.Array, np.ndarray, Any, Any]) -> None:
    z, data, selection, value = case
    check_get(z.__getitem__, data, selection)
    check_set(z.__setitem__, lambda: z[...], data, selection, value)


@PROPERTIES
@given(cases())
def test_get_and_set_like_numpy(case: tuple[chunkflow.Array, np.ndarray, Any, Any]) -> None:
    check(case)


@pytest.mark.slow
@HEAVY
@given(cases())
def test_get_and_set_like_numpy_heavy(case: tuple[chunkflow.Array, np.ndarray, Any, Any]) -> None:
    check(case)


@PROPERTIES
@given(arrays(), st.data())
def test_fast_path_selections(array: tuple[chunkflow.Array, np.ndarray], data: Any) -> None:
    # Integers, slices and "...": the cached basic plans (read twice: the second read
    # takes the kept plan).
    z, values = array
    entries = []
    for size in values.shape:
        if size and data.draw(st.booleans()):
            entries.append(data.draw(st.integers(-size, size - 1)))
        else:
            bound = st.none() | st.integers(-size - 1, size + 1)
            entries.append(slice(data.draw(bound), data.draw(bound),
                                 data.draw(st.sampled_from([None, 1, 2, -1, -3]))))
    selection = tuple(entries)
    check_get(z.__getitem__, values, selection)
    check_get(z.__getitem__, values, selection)
