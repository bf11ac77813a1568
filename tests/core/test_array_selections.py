"""Array item access and selection methods: numpy's meaning of ``z[...]``, structured
fields, ``out=`` buffers, arrays as indices."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import chunkflow
from chunkflow.errors import InvalidOutError, InvalidSelectionError, ShapeMismatchError

A = np.arange(125).reshape(5, 5, 5)


@pytest.fixture
def z() -> chunkflow.Array:
    return chunkflow.array(A, chunks=2)


# -- numpy's indexing (issue 26's cases) --------------------------------------------


@pytest.mark.parametrize("selection", [
    ([1, 2, 3], [1, 2, 3]),
    ([0, 1], 1, [0, 1]),
    (1, [0, 1], [2, 3]),
    (np.array([[0, 1], [1, 2]]), 0, 0),
    (1, slice(None), [0, 1]),  # separated by a slice: the block comes first
    ([0, 1], None, [0, 1]),  # separated by None
    (slice(None), [0, 1], None, 1),
    (np.eye(5, dtype=bool), slice(1, 3)),
    (Ellipsis, [-1, 0]),
    ([[0], [4]], [1, 2, 3]),
    ([0], Ellipsis, [1, 2]),  # a "..." of one dimension separates
    ([9], [], 0),  # broadcast to nothing: numpy reads no index, so none is out of bounds
])
def test_reads_are_numpys(z: chunkflow.Array, selection: Any) -> None:
    got, expected = z[selection], A[selection]
    assert got.shape == expected.shape and got.dtype == expected.dtype
    np.testing.assert_array_equal(got, expected)


def test_writes_set_numpys_cells(z: chunkflow.Array) -> None:
    z[[1, 2], [1, 2]] = -1
    expected = A.copy()
    expected[[1, 2], [1, 2]] = -1
    assert int((z[:] == -1).sum()) == 10
    np.testing.assert_array_equal(z[:], expected)
    value = np.arange(10).reshape(2, 5)
    z[1, :, [3, 4]] = value  # value in numpy's order: the block (2,) first
    expected[1, :, [3, 4]] = value
    np.testing.assert_array_equal(z[:], expected)


def test_repeated_indices_last_value_wins() -> None:
    z = chunkflow.zeros(6, chunks=2, dtype="i4")
    expected = np.zeros(6, dtype="i4")
    for target in (z, expected):
        target[[4, 0, 4, 4]] = [1, 2, 3, 7]
    np.testing.assert_array_equal(z[:], expected)
    assert z[4] == 7


@pytest.mark.parametrize(("selection", "match"), [
    (([1, 2, 3], [1, 2]), "broadcast"),
    ((1.5,), "valid indices"),
    ((np.array([1.0]),), "integer"),
    ((np.ones(4, dtype=bool),), "did not match"),
    ((0, 0, 0, 0), "too many indices"),
    ((..., 0, ...), "more than one Ellipsis"),
    (([0, 9],), "out of bounds"),
    ((["a", 1],), "valid indices|integer"),
])
def test_refusals_are_index_errors(z: chunkflow.Array, selection: Any, match: str) -> None:
    with pytest.raises(IndexError, match=match):
        z[selection]
    with pytest.raises(IndexError):
        A[selection]  # numpy refuses too
    with pytest.raises(IndexError, match=match):
        z[selection] = 0
    np.testing.assert_array_equal(z[:], A)  # nothing was written


def test_boolean_scalars_index_as_numpy(z: chunkflow.Array) -> None:
    # numpy reads them as a new axis indexed by [0] or [], broadcast with the other
    # advanced entries.
    for selection in (True, (0, np.False_), np.array(True), (True, slice(None), [1, 2])):
        np.testing.assert_array_equal(z[selection], A[selection])
        assert z[selection].shape == A[selection].shape


def test_oindex_and_vindex_keep_zarrs_meaning(z: chunkflow.Array) -> None:
    np.testing.assert_array_equal(z.oindex[[0, 2], [1, 3]], A[np.ix_([0, 2], [1, 3])])
    np.testing.assert_array_equal(z.vindex[[0, 2], [1, 3], [0, 4]], A[[0, 2], [1, 3], [0, 4]])
    with pytest.raises(InvalidSelectionError):
        z.vindex[[0, 2], :, 1]


# -- structured fields -------------------------------------------------------------

RECORDS = np.array([("aaa", 1, (4.2, 1.0)), ("bbb", 2, (8.4, 2.0)), ("ccc", 3, (12.6, 3.0))],
                   dtype=[("foo", "S3"), ("bar", "i4"), ("baz", "f8", (2,))])


@pytest.fixture
def records() -> chunkflow.Array:
    return chunkflow.array(RECORDS, chunks=2, zarr_format=2)  # v3 has no sub-array fields


@pytest.mark.parametrize("fields", ["foo", "baz", ["foo"], ["foo", "bar"], ["baz", "bar", "foo"]])
def test_fields_read_as_numpy(records: chunkflow.Array, fields: Any) -> None:
    def check(got: np.ndarray, expected: np.ndarray) -> None:
        assert got.shape == expected.shape and got.dtype.names == expected.dtype.names
        np.testing.assert_array_equal(got, expected)

    view = RECORDS[fields]
    check(records.get_basic_selection(Ellipsis, fields=fields), view)
    check(records.get_basic_selection(slice(0, 2), fields=fields), view[0:2])
    check(records.get_orthogonal_selection([0, 2], fields=fields), view[[0, 2]])
    check(records.get_coordinate_selection([2, 0], fields=fields), view[[2, 0]])
    check(records.get_mask_selection([True, False, True], fields=fields), view[[0, 2]])
    names = [fields] if isinstance(fields, str) else fields
    view = RECORDS[names[0] if len(names) == 1 else names]  # names in a selection
    check(records[(*names,)], view)
    check(records[(slice(1, 3), *names)], view[1:3])
    check(records[(*names, [2, 0])], view[[2, 0]])
    check(records.oindex[([0, 2], *names)], view[[0, 2]])
    check(records.vindex[([True, False, True], *names)], view[[0, 2]])


def test_field_scalars(records: chunkflow.Array) -> None:
    assert records[1, "foo"] == b"bbb"
    assert records["bar", -1] == 3
    assert records[0] == RECORDS[0]


def test_field_writes_keep_the_other_fields() -> None:
    z = chunkflow.zeros(3, chunks=2, dtype=RECORDS.dtype, synchronizer="thread",
                        zarr_format=2)
    expected = np.zeros(3, dtype=RECORDS.dtype)
    for target in (z, expected):
        target[:] = RECORDS
    z["bar"] = [7, 8, 9]
    expected["bar"] = [7, 8, 9]
    z[[0, 2], "baz"] = -1.0
    expected["baz"][[0, 2]] = -1.0
    z.set_mask_selection([False, True, False], b"zz", fields=["foo"])
    expected["foo"][1] = b"zz"
    z.set_orthogonal_selection([2], (b"q", 0, (0.5, 0.5)))  # whole records, as tuples
    expected[2] = (b"q", 0, (0.5, 0.5))
    np.testing.assert_array_equal(z[:], expected)


def test_bad_field_writes_write_nothing(records: chunkflow.Array) -> None:
    with pytest.raises(InvalidSelectionError, match="one field"):
        records[..., "foo", "bar"] = RECORDS[["foo", "bar"]]
    with pytest.raises(InvalidSelectionError, match="no field 'nope'"):
        records["nope"] = 1
    with pytest.raises(ShapeMismatchError):
        records["bar"] = [1, 2]
    with pytest.raises(IndexError, match="has none"):
        chunkflow.zeros(3)["foo"]
    np.testing.assert_array_equal(records[:], RECORDS)


# -- out= --------------------------------------------------------------------------


def test_out_of_another_dtype_is_cast_as_numpy_assigns(z: chunkflow.Array) -> None:
    out = np.zeros((2, 5), dtype="f4")
    assert z.get_basic_selection((1, slice(1, 3)), out=out) is out
    np.testing.assert_array_equal(out, A[1, 1:3].astype("f4"))
    narrow = np.zeros(3, dtype="u1")
    z.get_basic_selection((4, 4, slice(2, None)), out=narrow)
    np.testing.assert_array_equal(narrow, A[4, 4, 2:].astype("u1"))  # wraps as numpy does


@pytest.mark.parametrize("same_dtype", [True, False])
def test_out_of_every_reader(z: chunkflow.Array, same_dtype: bool) -> None:
    dtype = A.dtype if same_dtype else "f8"
    cases = [
        (z.get_orthogonal_selection, ([0, 4], slice(1, 3), 2), A[np.ix_([0, 4], [1, 2], [2])][..., 0]),
        (z.get_coordinate_selection, ([[0, 4]], [[1, 2]], 3), A[[[0, 4]], [[1, 2]], 3]),
        (z.get_mask_selection, (A % 7 == 0,), A[A % 7 == 0]),
    ]
    for read, selection, expected in cases:
        out = np.full(expected.shape, -1, dtype=dtype)
        assert read(selection, out=out) is out
        np.testing.assert_array_equal(out, expected)


def test_bad_out_refused(z: chunkflow.Array) -> None:
    with pytest.raises(InvalidOutError):
        z.get_basic_selection(Ellipsis, out=[])
    with pytest.raises(ShapeMismatchError, match=r"\(5, 5\)"):
        z.get_orthogonal_selection((0, [1, 2]), out=np.zeros((5, 5)))


def test_out_takes_zarr_python_buffers(z: chunkflow.Array) -> None:
    from zarr.core.buffer import default_buffer_prototype

    buffer = default_buffer_prototype().nd_buffer.from_numpy_array(np.zeros((5, 2)))
    z.get_orthogonal_selection((0, slice(None), [1, 4]), out=buffer)
    np.testing.assert_array_equal(buffer.as_numpy_array(), A[0][:, [1, 4]])


# -- arrays as indices, equality -------------------------------------------------


def test_chunkflow_arrays_as_indices() -> None:
    a = np.arange(10)
    za = chunkflow.array(a, chunks=3)
    mask = a % 3 == 0
    zmask = chunkflow.array(mask, chunks=4)
    zint = chunkflow.array(np.array([0, 2, 9, 2], dtype="i4"), chunks=2)
    for got in (za[zmask], za.oindex[zmask], za.vindex[zmask]):
        np.testing.assert_array_equal(got, a[mask])
    for got in (za[zint], za.oindex[zint], za.vindex[zint]):
        np.testing.assert_array_equal(got, a[[0, 2, 9, 2]])
    za[zint] = -1
    assert za[9] == -1


def test_equality_is_store_and_path(tmp_path: Any) -> None:
    path = str(tmp_path / "a.zarr")
    group = chunkflow.open_group(path, mode="w")
    first = group.create_array("x", shape=(3,), dtype="i1")
    group.create_array("y", shape=(3,), dtype="i1")
    again = chunkflow.open_array(path, path="x")
    assert first == again and hash(first) == hash(again) and first is not again
    assert len({first, again}) == 1
    assert first != chunkflow.open_array(path, path="y")
    assert first != chunkflow.zeros(3, dtype="i1")
    assert chunkflow.zeros(3) != chunkflow.zeros(3)  # two in-memory stores
    assert first != np.zeros(3)


# -- zero-length dimensions ------------------------------------------------------


@pytest.mark.parametrize("shape", [(0, 2, 3), (0,), (3, 0)])
def test_zero_chunks_of_zero_length_dimensions(tmp_path: Any, shape: tuple[int, ...]) -> None:
    # zarr-python takes chunks=shape here and stores the 0; chunkflow takes it too and
    # stores 1, which tensorstore also opens (it refuses a chunk size of 0).
    import tensorstore as ts
    import zarr

    z = chunkflow.create_array(str(tmp_path / "a.zarr"), shape=shape, chunks=shape, dtype="f8")
    z[...] = 42
    assert z[...].shape == shape and z.nchunks_initialized == 0
    assert z.chunks == tuple(max(c, 1) for c in shape)
    spec = {"driver": "zarr3", "kvstore": {"driver": "file", "path": str(tmp_path / "a.zarr")}}
    assert ts.open(spec).result().shape == shape
    written = zarr.create_array(str(tmp_path / "b.zarr"), shape=shape, chunks=shape, dtype="i2")
    assert written.metadata.chunk_grid.chunk_shape == shape  # zarr-python's 0
    opened = chunkflow.open_array(str(tmp_path / "b.zarr"))
    assert opened.shape == shape and opened[...].dtype == "i2"
    with pytest.raises(ValueError, match="chunk sizes must be positive"):
        grown = tuple(2 if n == 0 else n for n in shape)  # a 0 chunk of a non-empty dimension
        chunkflow.create_array(None, shape=grown, chunks=shape, dtype="f8")
