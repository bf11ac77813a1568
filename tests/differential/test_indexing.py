"""Reads and writes by selection against numpy, on stored arrays of every dtype and byte
order (Zarr v2, v3, sharded, edge chunks, fill values):

- ``z[selection]`` in numpy's full syntax (integers, slices of any step, ``...``,
  ``None``, integer arrays that broadcast, masks of any rank, boolean scalars, masks
  with a side of 0) against ``data[selection]``;
- ``z.oindex`` against numpy's orthogonal indexing (``np.ix_``);
- ``z.vindex`` (points and masks) and ``z[mask]`` against numpy's advanced indexing;
- writes of values of the array's dtype, and of any other dtype or Python scalar,
  converted as numpy's assignment converts them.

Values are compared by their bytes (NaN payloads, -0.0, NaT); where numpy refuses,
chunkflow raises an error of numpy's builtin class and the array is unchanged.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import assume, example, given
from hypothesis import strategies as st

from chunkflow.testing import strategies as cst
from chunkflow.testing.strategies import StoredArraySpec
from tests.differential.conftest import budget
from tests.helpers.numpy_selections import (
    assert_identical,
    check_get,
    check_set,
    refusal_class,
)

DTYPES = cst.dtypes(kinds="biufcmMUS", byteorder="any")
SPECS = cst.stored_arrays(dtypes=DTYPES)

Case = tuple[StoredArraySpec, Any, Any]


def _stored_values(spec: StoredArraySpec, z: Any) -> np.ndarray:
    """The values as the array holds them: a Zarr v3 array keeps its byte order in its
    bytes codec, and its dtype is native."""
    return spec.data.astype(z.dtype)


def _target_shape(data: np.ndarray, selection: Any) -> tuple[int, ...]:
    try:
        return np.shape(data[selection])
    except IndexError:
        return ()


@st.composite
def _with_flags_and_empty_masks(draw: st.DrawFn, shape: tuple[int, ...]) -> tuple[Any, ...]:
    """A numpy selection with a boolean scalar or two (a side of 1 or 0 each, taking no
    dimension), and masks with sides of 0 (numpy takes them on any dimension; a side of
    1 on a longer dimension it refuses)."""
    entries = list(draw(cst.numpy_selections(shape)))
    for i, entry in enumerate(entries):
        if isinstance(entry, np.ndarray) and entry.dtype == bool and draw(st.booleans()):
            sides = tuple(0 if draw(st.booleans()) else n for n in entry.shape)
            entries[i] = np.zeros(sides, bool)
    one_dim = [i for i, e in enumerate(entries) if e is not None and e is not Ellipsis
               and not (isinstance(e, np.ndarray) and e.dtype == bool)]
    if one_dim and draw(st.booleans()):  # an entry of one dimension becomes a 1-d mask
        entries[draw(st.sampled_from(one_dim))] = np.zeros(draw(st.sampled_from([0, 0, 1])), bool)
    for _ in range(draw(st.integers(1, 2))):
        flag = draw(st.sampled_from([True, False, np.True_, np.False_, np.array(True)]))
        entries.insert(draw(st.integers(0, len(entries))), flag)
    return tuple(entries)


@st.composite
def numpy_cases(draw: st.DrawFn, flags: bool = False) -> Case:
    """A stored array, a numpy selection of it and a value of its dtype to write there."""
    spec = draw(SPECS)
    shape = spec.data.shape
    selection = draw(_with_flags_and_empty_masks(shape) if flags else cst.numpy_selections(shape))
    value = draw(cst.selection_values(_target_shape(spec.data, selection), spec.data.dtype))
    return spec, selection, value


def _check_numpy(case: Case) -> None:
    spec, selection, value = case
    z = spec.create()
    data = _stored_values(spec, z)
    check_get(z.__getitem__, data, selection)
    check_set(z.__setitem__, lambda: z[...], data, selection, value)


@budget(150)
@given(numpy_cases())
def test_numpy_selections_read_and_write_as_numpy(case: Case) -> None:
    _check_numpy(case)


@budget(80)
@given(numpy_cases(flags=True))
@example((StoredArraySpec(np.arange(5), (2,)), (np.zeros(0, bool),), np.array(7)))
@example((StoredArraySpec(np.arange(6.0).reshape(2, 3), (1, 2)),
          (slice(None), np.zeros(0, bool)), np.ones((2, 0))))
@example((StoredArraySpec(np.arange(6).reshape(2, 3), (2, 2)),
          (np.zeros((2, 0), bool), [0]), np.array(1)))
@example((StoredArraySpec(np.arange(6).reshape(2, 3), (2, 2)),
          (np.zeros((1, 0), bool),), np.array(1)))  # a side of 1 on a side of 2: refused
@example((StoredArraySpec(np.array(3.5), ()), (np.True_,), np.array([-0.0])))
@example((StoredArraySpec(np.arange(6).reshape(2, 3), (1, 2)),
          (True, slice(None), [0, 2]), np.array(9)))
def test_boolean_scalars_and_empty_masks_as_numpy(case: Case) -> None:
    _check_numpy(case)


# -- oindex: numpy's orthogonal indexing (np.ix_) ------------------------------------

def _ix(shape: tuple[int, ...], selection: tuple[Any, ...]) -> tuple[tuple[Any, ...], tuple[Any, ...]]:
    """``np.ix_`` of an orthogonal selection, and what then drops its integers' axes."""
    arrays, keep = [], []
    for entry, size in zip(selection, shape):
        if isinstance(entry, slice):
            arrays.append(np.arange(*entry.indices(size)))
        elif isinstance(entry, np.ndarray) and entry.dtype == bool:
            arrays.append(np.flatnonzero(entry))
        elif isinstance(entry, np.ndarray):
            arrays.append(entry.astype(np.intp))
        else:
            arrays.append(np.array([entry], np.intp))
        keep.append(0 if isinstance(entry, (int, np.integer)) else slice(None))
    return np.ix_(*arrays), tuple(keep)


def _orthogonal_get(data: np.ndarray, selection: tuple[Any, ...]) -> np.ndarray:
    ix, keep = _ix(data.shape, selection)
    # ... keeps one element a 0-d array: data[()] is a scalar of native byte order.
    return data[ix][(*keep, Ellipsis)] if data.ndim else data[...]


def _points_get(data: np.ndarray, selection: Any) -> np.ndarray:
    return data[selection] if data.ndim else data[...]  # as above


def _orthogonal_set(data: np.ndarray, selection: tuple[Any, ...], value: Any) -> None:
    if not data.ndim:
        data[...] = value  # data[()] is a scalar, whose array would be of another dtype
        return
    ix, keep = _ix(data.shape, selection)
    block = np.array(data[ix])
    block[keep] = value
    data[ix] = block  # repeated indices: the last value given stays, as numpy


@st.composite
def orthogonal_cases(draw: st.DrawFn) -> Case:
    spec = draw(SPECS)
    selection = draw(cst.orthogonal_selections(spec.data.shape))
    shape = _orthogonal_get(spec.data, selection).shape
    return spec, selection, draw(cst.selection_values(shape, spec.data.dtype))


@budget(100)
@given(orthogonal_cases())
@example((StoredArraySpec(np.arange(12.0).reshape(3, 4), (2, 3)),
          (np.array([2, -3, 2]), np.array([True, False, True, True])),
          np.arange(9.0).reshape(3, 3) * -1))
@example((StoredArraySpec(np.array([0], ">i2"), (1,), zarr_format=2), (0,), np.array(0, ">i2")))
@example((StoredArraySpec(np.array("", "U5"), ()), (), np.array("ééééé", "U5")))
def test_oindex_as_numpy_ix(case: Case) -> None:
    spec, selection, value = case
    z = spec.create()
    data = _stored_values(spec, z)
    check_get(z.get_orthogonal_selection, data, selection, oracle=_orthogonal_get,
              scalars=False)
    check_get(lambda sel: z.oindex[sel], data, selection, oracle=_orthogonal_get,
              scalars=False)

    def write(sel: Any, val: Any) -> None:
        z.oindex[sel] = val

    check_set(write, lambda: z[...], data, selection, value, assign=_orthogonal_set)


# -- vindex: points and masks ---------------------------------------------------------

@st.composite
def coordinate_cases(draw: st.DrawFn) -> Case:
    spec = draw(SPECS)
    selection = draw(cst.coordinate_selections(spec.data.shape))
    shape = _target_shape(spec.data, selection)
    return spec, selection, draw(cst.selection_values(shape, spec.data.dtype))


@budget(100)
@given(coordinate_cases())
@example((StoredArraySpec(np.arange(10), (3,)), (np.array([[9, -1], [0, 9]]),),
          np.array([[1, 2], [3, 4]])))  # repeated points: the last value stays
def test_vindex_points_as_numpy(case: Case) -> None:
    spec, selection, value = case
    z = spec.create()
    data = _stored_values(spec, z)
    check_get(z.vindex.__getitem__, data, selection, oracle=_points_get, scalars=False)

    def write(sel: Any, val: Any) -> None:
        z.vindex[sel] = val

    check_set(write, lambda: z[...], data, selection, value)


@st.composite
def mask_cases(draw: st.DrawFn) -> Case:
    spec = draw(SPECS)
    mask = np.asarray(draw(cst.mask_selections(spec.data.shape)))
    shape = np.shape(spec.data[mask])
    return spec, mask, draw(cst.selection_values(shape, spec.data.dtype))


@budget(80)
@given(mask_cases())
@example((StoredArraySpec(np.array(2.5), ()), np.array(True), np.array([-0.0])))
@example((StoredArraySpec(np.array(2.5), ()), np.array(False), np.zeros(0)))
def test_masks_as_numpy(case: Case) -> None:
    spec, mask, value = case
    z = spec.create()
    data = _stored_values(spec, z)
    check_get(z.vindex.__getitem__, data, mask, scalars=False)
    check_get(z.__getitem__, data, mask)

    def write_vindex(sel: Any, val: Any) -> None:
        z.vindex[sel] = val

    check_set(write_vindex, lambda: z[...], data, mask, value)
    z[...] = data
    check_set(z.__setitem__, lambda: z[...], data, mask, value)


# -- values of other dtypes: numpy's assignment converts them ------------------------

def _python_scalars() -> st.SearchStrategy[Any]:
    numbers = st.one_of(st.integers(-(2**70), 2**70), st.floats(), st.booleans(),
                        st.complex_numbers())
    return st.one_of(numbers, numbers.map(str), st.text(max_size=3), st.binary(max_size=3),
                     st.sampled_from(["1.5", " 2 ", "-0.0", "nan", "inf", "1e3", "", "é",
                                      b"7", "2024-02-29", "3 s", None]))


@st.composite
def conversion_cases(draw: st.DrawFn) -> Case:
    """A value of another dtype than the array's (an array of any dtype, or a Python
    scalar, a number as text included) written to a numpy selection."""
    spec = draw(SPECS)
    selection = draw(cst.numpy_selections(spec.data.shape))
    target = _target_shape(spec.data, selection)
    if draw(st.booleans()):
        value = draw(_python_scalars())
    else:
        value = draw(cst.selection_values(target, draw(DTYPES)))
    return spec, selection, value


def _numpy_is_deterministic(spec: StoredArraySpec, value: Any) -> bool:
    """Whether numpy converts ``value`` one way whatever its loop: casts that C leaves
    undefined (NaN, inf or out-of-range floats to integers, datetimes, timedeltas) may
    differ between numpy's strided and contiguous loops, so neither is the oracle."""
    kind = spec.data.dtype.kind
    if not isinstance(value, np.ndarray) or value.dtype.kind not in "fc" or kind not in "iumM":
        return True
    info = np.iinfo(spec.data.dtype if kind in "iu" else np.int64)
    part = value.real.astype(np.float64)  # numpy casts the real part of complex values
    return bool(((part > float(info.min) - 1) & (part < float(info.max) + 1)).all())


def _numpy_assign(data: np.ndarray, selection: Any, value: Any) -> None:
    """numpy's ``data[selection] = value``; but bytes that are no date are refused on
    numpy's plain path first: its fancy-index path leaves the parse error set (numpy
    2.4), which breaks a later call (a ``SystemError``, or a crash)."""
    if isinstance(value, np.ndarray) and value.dtype.kind == "S" \
            and data.dtype.kind == "M" and np.size(data[selection]):
        np.empty(value.shape, data.dtype)[...] = value
    data[selection] = value


@pytest.mark.filterwarnings("ignore::numpy.exceptions.ComplexWarning")  # drawn on purpose
@pytest.mark.filterwarnings("ignore:.*encountered in cast:RuntimeWarning")
@budget(120)
@given(conversion_cases())
@example((StoredArraySpec(np.zeros(3), (2,)), Ellipsis, "1.5"))
@example((StoredArraySpec(np.zeros(3), (2,)), Ellipsis, "abc"))  # ValueError, as numpy
@example((StoredArraySpec(np.zeros(3, "U3"), (2,)), slice(1, None), 1.5))
@example((StoredArraySpec(np.zeros(3, "i2"), (2,)), 0, np.array(["7"])))
@example((StoredArraySpec(np.zeros(3, "u1"), (2,)), 0, 300))  # OverflowError, as numpy
@example((StoredArraySpec(np.zeros(3, "S3"), (2,)), 0, "é"))  # UnicodeEncodeError (a ValueError)
@example((StoredArraySpec(np.zeros(3, ">f4"), (2,)), [0, 2], 1 + 2j))  # TypeError, as numpy
@example((StoredArraySpec(np.zeros((1, 0, 0), "i1"), (1, 1, 1)),
          (-1, slice(-2, None, -1), np.array([], "u2")), np.array(["é"])))  # nothing converted
@example((StoredArraySpec(np.zeros((1, 2, 0), "i1"), (1, 1, 1)),
          (-1, Ellipsis, np.array([0, 0, 0]), []), 0j))  # both bad: either error
@example((StoredArraySpec(np.zeros(4), (3,)), slice(0, 2), np.ones((1, 1, 2))))
@example((StoredArraySpec(np.zeros(4), (3,)), 0, np.ones(1)))  # one element: a scalar only
@example((StoredArraySpec(np.zeros(4), (3,)), slice(0, 2), [[[1, 2]]]))  # a list: refused
@example((StoredArraySpec(np.array(True), ()), (None,), None))  # None is a value: False
@example((StoredArraySpec(np.zeros((2, 2, 7), "M8[D]"), (3, 2, 7), zarr_format=2),
          (np.array([-2]), [0, -2, 1], np.array([2], "i4")),
          np.array([b"", b"\xaf", b"P"])))  # no dates: ValueError (see _numpy_assign)
@example((StoredArraySpec(np.array([-0.0, -0.0], "f2"), (1,), shards=(1,)), (-1,),
          np.array(False)))  # a shard's inner chunk of -0.0 is not all fill (0.0)
def test_writes_convert_values_as_numpy(case: Case) -> None:
    spec, selection, value = case
    assume(_numpy_is_deterministic(spec, value))  # else numpy is no oracle
    target = _target_shape(spec.data, selection)
    # A 0-d array into an empty selection: numpy converts it first on some of its
    # paths and not on others (a[[]] = np.array("x") refuses on a 1-d int array, not
    # on a 3-d one); chunkflow converts no element it does not write, as numpy's
    # other paths.
    assume(not (isinstance(value, np.ndarray) and value.ndim == 0 and 0 in target))
    z = spec.create()
    data = _stored_values(spec, z)
    try:
        data[selection]
    except IndexError:
        # Selection and value both bad: numpy names the value first on its paths that
        # convert it before checking index arrays; chunkflow checks the selection first.
        expected = data.copy()
        try:
            _numpy_assign(expected, selection, value)
        except Exception as err:  # noqa: BLE001 - compared by class below
            with pytest.raises((IndexError, refusal_class(err))):
                z[selection] = value
        assert_identical(z[...], data, ("refused", selection))
        return
    check_set(z.__setitem__, lambda: z[...], data, selection, value, assign=_numpy_assign)
