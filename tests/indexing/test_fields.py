"""Field names in selections (zarr-python 2's rules) and the dtypes they give."""

from __future__ import annotations

import numpy as np
import pytest

from chunkflow.errors import InvalidSelectionError
from chunkflow.indexing import fields_dtype, pop_fields, select_fields, writable_field

DTYPE = np.dtype([("foo", "S3"), ("bar", "<i4"), ("baz", "<f8", (2,))])


@pytest.mark.parametrize(("selection", "fields", "rest"), [
    ("foo", "foo", ()),
    (["foo", "bar"], ["foo", "bar"], ()),
    (("foo", slice(1, 3)), "foo", slice(1, 3)),
    ((slice(1, 3), "foo", "bar"), ["foo", "bar"], slice(1, 3)),
    ((Ellipsis, "foo"), "foo", Ellipsis),
    (([0, 2], "foo"), "foo", [0, 2]),
    ((1, 2), None, (1, 2)),
    ([0, 1], None, [0, 1]),
    (slice(None), None, slice(None)),
])
def test_pop_fields(selection: object, fields: object, rest: object) -> None:
    assert pop_fields(selection) == (fields, rest)


def test_fields_dtype_and_selection_match_numpy() -> None:
    values = np.zeros(3, dtype=DTYPE)
    values["bar"] = [1, 2, 3]
    values["baz"] = [[1, 2], [3, 4], [5, 6]]
    for fields in ("bar", "baz", ["foo"], ["baz", "foo"], ["bar", "baz", "foo"]):
        expected = values[fields]
        got = select_fields(values, fields)
        np.testing.assert_array_equal(got, expected)
        assert got.shape == expected.shape
        assert got.dtype.names == expected.dtype.names
        assert got.flags.c_contiguous and not np.shares_memory(got, values)
        assert fields_dtype(DTYPE, fields) == got.dtype or fields_dtype(
            DTYPE, fields).subdtype is not None
    assert fields_dtype(DTYPE, ["baz", "foo"]).itemsize == 19  # packed: 16 + 3
    assert fields_dtype(DTYPE, None) == fields_dtype(DTYPE, []) == DTYPE


@pytest.mark.parametrize(("dtype", "fields", "match"), [
    (DTYPE, "nope", "no field 'nope'"),
    (DTYPE, ["foo", "nope"], "no field 'nope'"),
    (DTYPE, slice(None), "field name or a list"),
    (DTYPE, [1], "field name or a list"),
    (np.dtype("i4"), "foo", "has none"),
])
def test_bad_fields_raise_index_errors(dtype: np.dtype, fields: object, match: str) -> None:
    with pytest.raises(InvalidSelectionError, match=match) as info:
        fields_dtype(dtype, fields, prefix="array 'x': ")
    assert isinstance(info.value, IndexError)
    assert str(info.value).startswith("array 'x': ")


def test_writes_take_one_field() -> None:
    assert writable_field(DTYPE, "foo") == "foo"
    assert writable_field(DTYPE, ["bar"]) == "bar"
    assert writable_field(DTYPE, []) is None
    with pytest.raises(InvalidSelectionError, match="one field"):
        writable_field(DTYPE, ["foo", "bar"])
