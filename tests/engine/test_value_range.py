"""Python integers that do not fit the dtype raise OverflowError (as numpy 2 and
zarr-python do) and leave the array unchanged; numpy arrays cast as numpy casts them."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import chunkflow
from chunkflow.errors import ChunkflowError


@pytest.mark.parametrize("dtype,value", [("i4", 2**40), ("u1", 300), ("u1", -1), ("i1", -129),
                                         ("u8", 2**64), ("i2", [1, 2**15])])
@pytest.mark.parametrize("how", ["basic", "oindex", "vindex", "mask"])
def test_out_of_range_python_ints_raise_and_change_nothing(dtype: str, value: Any,
                                                           how: str) -> None:
    z = chunkflow.full(4, 7, chunks=2, dtype=dtype, path="counts")
    n = len(value) if isinstance(value, list) else 1
    with pytest.raises(OverflowError, match=rf"'counts'.*{np.dtype(dtype)}") as info:
        if how == "basic":
            z[0:n] = value
        elif how == "oindex":
            z.oindex[list(range(n))] = value
        elif how == "vindex":
            z.vindex[list(range(n))] = value
        else:
            z[np.arange(4) < n] = value
    assert isinstance(info.value, ChunkflowError)
    np.testing.assert_array_equal(z[:], np.full(4, 7, dtype=dtype))
    # numpy refuses the same assignment.
    with pytest.raises(OverflowError):
        np.full(4, 7, dtype=dtype)[0:n] = value


def test_in_range_values_and_numpy_arrays_follow_numpy() -> None:
    z = chunkflow.zeros(4, chunks=2, dtype="u1")
    z[0] = 255
    z[1] = 1.7  # floats truncate, as numpy assigns them
    z[2:4] = np.array([300, 2])  # numpy arrays cast (wrap) as numpy casts them
    expected = np.zeros(4, dtype="u1")
    expected[0] = 255
    expected[1] = 1.7
    expected[2:4] = np.array([300, 2])
    np.testing.assert_array_equal(z[:], expected)
