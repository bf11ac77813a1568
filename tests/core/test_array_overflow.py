"""Writing Python values that do not fit the dtype: chunkflow does what numpy 2 does.

numpy 2 raises ``OverflowError`` for ``a[0] = 300`` on ``uint8`` (Python integers are
checked) but wraps numpy arrays and scalars (``astype`` semantics), truncates floats
toward zero, and refuses NaN for integers. chunkflow mimics each case, raises before
anything is written, and leaves the array as it was.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import pytest

import chunkflow
from chunkflow.errors import ChunkflowError, MetadataError, ValueOutOfRangeError

CASES = [
    ("i4", 2**40), ("u1", 300), ("u1", -1), ("i1", -129), ("u8", 2**64), ("i8", 2**63),
    ("u1", [300, 1]), ("i4", [1, 2**70]), ("u1", [[1, 2], [3, 300]]), ("u1", (1, 256)),
    ("u1", np.array([300, 1])), ("u1", np.int64(300)), ("i1", np.int64(300)),
    ("i4", 1.5), ("i4", -1.5), ("i4", [1.5, 2.7]), ("i4", float("nan")), ("u1", 255),
    ("f4", 2**200), ("f2", 70000), ("b1", 2), ("m8[s]", 2**40), ("u2", True),
]


def _numpy(dtype: str, value: Any) -> Any:
    target = np.zeros(np.shape(value) or (2,), dtype=dtype)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        try:
            target[...] = value
        except Exception as err:  # noqa: BLE001 - the outcome to compare with
            return type(err)
    return target.tolist()


@pytest.mark.parametrize("dtype, value", CASES, ids=[f"{d}-{v!r:.20}" for d, v in CASES])
def test_assignment_matches_numpy(dtype: str, value: Any) -> None:
    expected = _numpy(dtype, value)
    shape = np.shape(value) or (2,)
    z = chunkflow.full(shape, 1, chunks=(1,) * len(shape), dtype=dtype)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        try:
            z[...] = value
        except ChunkflowError as err:
            assert isinstance(expected, type) and isinstance(err, expected), (err, expected)
            assert "array '/'" in str(err) and np.dtype(dtype).name in str(err)
            assert (z[...] == 1).all()  # nothing was written
            return
    assert not isinstance(expected, type), f"numpy raised {expected}, chunkflow wrote"
    assert z[...].tolist() == expected


def test_overflow_is_an_overflow_error_and_leaves_the_array_unchanged() -> None:
    z = chunkflow.array(np.arange(4, dtype="u1"), chunks=2)
    with pytest.raises(OverflowError, match="300 out of bounds for uint8"):
        z[1:3] = 300
    with pytest.raises(ValueOutOfRangeError):
        z[[0, 3]] = [1, 300]
    with pytest.raises(ValueOutOfRangeError):
        z.vindex[[0, 3]] = [256, 1]
    with pytest.raises(ValueOutOfRangeError):
        z.set_orthogonal_selection(([0],), [-1])
    assert z[:].tolist() == [0, 1, 2, 3]


def test_int32_does_not_store_zero_for_two_to_the_forty() -> None:
    z = chunkflow.zeros(3, chunks=2, dtype="i4")
    with pytest.raises(OverflowError):
        z[0] = 2**40
    assert z[:].tolist() == [0, 0, 0]


def test_append_refuses_overflowing_python_ints() -> None:
    z = chunkflow.array(np.arange(3, dtype="u1"), chunks=2)
    with pytest.raises(OverflowError):
        z.append([1, 300])
    assert z.shape == (3,) and z[:].tolist() == [0, 1, 2]


def test_array_from_overflowing_python_ints_creates_nothing() -> None:
    store = chunkflow.MemoryStore()
    with pytest.raises(OverflowError, match="uint8"):
        chunkflow.array([1, 300], dtype="u1", store=store)
    assert list(store.list_prefix("")) == []
    # numpy arrays are cast as numpy casts them.
    assert chunkflow.array(np.array([300]), dtype="u1")[:].tolist() == [44]
    assert chunkflow.array([1.7], dtype="i4")[:].tolist() == [1]


@pytest.mark.parametrize("dtype, fill_value", [
    ("u1", 300), ("u1", -1), ("i4", 2**40), ("u8", 2**64), ("i1", np.int64(300)),
    ("f2", 1e10), ("i4", float("nan")),
])
def test_out_of_range_fill_values_are_refused(dtype: str, fill_value: Any) -> None:
    store = chunkflow.MemoryStore()
    with pytest.raises(MetadataError, match=f"fill_value .* not valid for dtype {np.dtype(dtype)}"):
        chunkflow.create(4, chunks=2, dtype=dtype, fill_value=fill_value, store=store)
    assert list(store.list_prefix("")) == []
