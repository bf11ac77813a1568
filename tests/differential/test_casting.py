"""Casting against numpy: the writers' ``casting=`` rule and assignment of other dtypes.

The writers (:func:`chunkflow.map_chunks`, :func:`chunkflow.store`,
:func:`chunkflow.to_chunkflow`) cast each result to the output's dtype under the rule
``casting=``. For random source and target dtypes (every kind, either byte order) and
values (NaN, inf, extremes, NaT...):

- ``"same_value"`` (the default) writes exactly the bits of numpy's
  ``values.astype(target)`` when every value survives the cast, and refuses with
  :class:`~chunkflow.errors.CastingError` (a ``ValueError``) when one does not. numpy
  decides which: its own ``astype(casting="same_value")`` into integers (numpy >=
  2.4; a round trip through the target otherwise), a round trip into bool, and a
  finite value that numpy's cast makes infinite into floats (rounding is allowed);
  a complex's imaginary part never vanishes silently. Dtypes that are not numbers
  cast only where ``np.can_cast(..., "safe")``.
- numpy's rules refuse where ``np.can_cast(source, target, casting)`` refuses (a
  ``TypeError``, as numpy's ``out=`` raises, before anything is written), or write
  exactly the bits of numpy's ``values.astype(target)``; where ``astype`` itself
  raises (a string that is no number), chunkflow raises an error of the same builtin
  class.

``z[...] = values`` of another numeric dtype gives numpy's assignment's bits
(``a[...] = values``: numpy's unsafe cast).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import dask.array as da
import numpy as np
import pytest
from hypothesis import assume, event, example, given
from hypothesis import strategies as st

import chunkflow
from chunkflow.errors import CastingError
from chunkflow.testing import strategies as cst
from tests.differential.conftest import budget

DTYPES = cst.dtypes(kinds="biufcmMUS", byteorder="any")
NUMERIC = cst.dtypes(kinds="biufcmM", byteorder="any")
CASTINGS = ("no", "equiv", "safe", "same_kind", "same_value", "unsafe")
NUMBERS = "biufc"
SHAPES = cst.shapes(min_dims=1, max_dims=2, max_side=5)

Case = tuple[np.ndarray, np.dtype, str, tuple[int, ...]]


@st.composite
def casting_cases(draw: st.DrawFn, dtypes: st.SearchStrategy[np.dtype] = DTYPES) -> Case:
    """Values of a source dtype, a target dtype, numpy's casting rule and a chunk shape."""
    target = draw(dtypes)
    if draw(st.booleans()):
        values = draw(cst.arrays(dtypes, SHAPES))
    else:  # values of the target's, in another dtype: most of them survive the cast back
        held = draw(cst.arrays(st.just(target), SHAPES))
        source = draw(dtypes)
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            try:
                values = held.astype(source)
            except (TypeError, ValueError, RuntimeError, OverflowError):  # no such value there
                values = held
    # The writers' default and "unsafe" most often: they are the rules that cast.
    casting = draw(st.sampled_from([*CASTINGS, "same_value", "same_value", "unsafe"]))
    chunks = draw(cst.chunk_shapes(values.shape))
    return values, target, casting, chunks


def _bytes(values: Any, dtype: np.dtype) -> np.ndarray:
    native = np.array(values, dtype=dtype.newbyteorder("="))
    return native.reshape(-1).view(np.uint8).reshape(*native.shape, dtype.itemsize)


def _numpy_cast(values: np.ndarray, target: np.dtype, casting: str
                ) -> np.ndarray | type[BaseException]:
    """numpy's answer: the cast values, or the builtin class of its refusal
    (:class:`CastingError`, chunkflow's ``ValueError``: a value changes under
    ``same_value``)."""
    if casting == "same_value":
        if values.dtype.kind not in NUMBERS or target.kind not in NUMBERS:
            casting = "safe"  # no values to compare: numpy's cast that never changes one
        elif _changes_a_value(values, target):
            return CastingError
    if casting not in ("unsafe", "same_value") and not np.can_cast(values.dtype, target, casting):  # type: ignore[arg-type]
        return TypeError  # as a ufunc's out= refuses
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # overflow, invalid (NaN to int), complex parts
            return values.astype(target)
    except Exception as err:  # noqa: BLE001 - compared by builtin class
        refused = next(c for c in type(err).__mro__ if c.__module__ == "builtins")
        # Bytes or text that is no text of numpy's codec (UnicodeDecodeError and the
        # like) are ValueErrors: chunkflow's errors derive from the common classes.
        return ValueError if issubclass(refused, UnicodeError) else refused


def _text_that_is_no_number(*more: None) -> Callable[[Callable[..., None]], Callable[..., None]]:
    """The long profile's cases: bytes that are no UTF-8 into complex, and text that is
    no ASCII into datetimes, under ``"unsafe"``. numpy raises a ``UnicodeError`` or a
    plain ``ValueError``, whichever value it meets first; a chunked cast meets another
    value first. ``more``: the test's other arguments."""
    def add(test: Callable[..., None]) -> Callable[..., None]:
        for values, target in ((np.array([b"\xff", b"x"]), "c8"),
                               (np.array([b"x", b"\xff"]), "c8"),
                               (np.array(["1", "\xe9"]), "M8[s]")):
            test = example((values, np.dtype(target), "unsafe", (1,)), *more)(test)
        # ... and bytes that are no ASCII into text (numpy: a UnicodeDecodeError), which
        # same_value leaves to numpy's cast: no number changes.
        test = example((np.array([b"\xff"]), np.dtype("<U1"), "same_value", (1,)), *more)(test)
        return test
    return add


def _numpy_same_value() -> bool:
    try:
        np.zeros(1).astype("u1", casting="same_value")
    except (TypeError, ValueError):
        return False
    return True


NUMPY_SAME_VALUE = _numpy_same_value()


def _changes_a_value(values: np.ndarray, target: np.dtype) -> bool:
    """Whether numpy's cast of the numbers ``values`` to ``target`` changes one."""
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        if values.dtype.kind == "c" and target.kind != "c":
            if np.any(values.imag != 0):  # NaN counts: not 0
                return True
            values = values.real
        cast = values.astype(target)
        if target.kind in "fc":  # rounding is no change; an overflow to inf is
            return bool(np.any(np.isfinite(values) & ~np.isfinite(cast)))
        if target.kind in "iu" and NUMPY_SAME_VALUE:
            # numpy 2.4 checks nothing when a side is not in native byte order, and
            # refuses float16 -0.0 into integers (float32 holds every float16 exactly).
            native = values.astype(values.dtype.newbyteorder("="))
            if native.dtype == np.float16:
                native = native.astype(np.float32)
            try:
                native.astype(target.newbyteorder("="), casting="same_value")
            except ValueError:
                return True
            return False
        # bool (and integers on an older numpy): the value must come back
        return not np.array_equal(cast.astype(values.dtype), values)


def _defined(values: np.ndarray, target: np.dtype) -> np.ndarray:
    """Where numpy's cast of ``values`` to ``target`` is defined. A float (or a complex's
    real part) that is NaN, infinite or beyond the integer target's range converts as
    C leaves undefined: numpy's result then depends on the array's length and strides
    (``[-inf]`` gives 0 in uint32, ``[-inf, 0, 0, 0]`` gives 2**31 first), so a
    chunked cast cannot be compared there."""
    if values.dtype.kind not in "fc" or target.kind not in "iumM":
        return np.ones(values.shape, bool)
    bits = 64 if target.kind in "mM" else 8 * target.itemsize
    low, high = (0.0, 2.0**bits) if target.kind == "u" else (-(2.0 ** (bits - 1)),
                                                              2.0 ** (bits - 1))
    with np.errstate(invalid="ignore"):
        whole = np.trunc(np.real(values).astype("f8"))
        return np.isfinite(whole) & (whole >= low) & (whole < high)


def _check(write: Callable[[], Any], values: np.ndarray, target: np.dtype, casting: str,
           read: Callable[[], Any] | None = None) -> None:
    expected = _numpy_cast(values, target, casting)
    event(f"{casting}: {expected.__name__ if isinstance(expected, type) else 'written'}")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if isinstance(expected, type):
            refused = expected
            with pytest.raises(refused) as error:
                write()
            if refused is CastingError:
                assert "changes when cast" in str(error.value) and "casting='unsafe'" in str(error.value)
            return
        result = write()
        got = np.asarray(result if read is None else read())
    _assert_cast(got, expected, values, target)


def _assert_cast(got: np.ndarray, expected: np.ndarray, values: np.ndarray,
                 target: np.dtype) -> None:
    assert got.shape == expected.shape
    defined = _defined(values, target)
    np.testing.assert_array_equal(_bytes(got, target)[defined],
                                  _bytes(expected, target)[defined])


def _source(values: np.ndarray, chunks: tuple[int, ...]) -> chunkflow.Array:
    z = chunkflow.create_array(None, shape=values.shape, chunks=chunks, dtype=values.dtype)
    z[...] = values
    return z


_I8_MIN = np.array([np.iinfo("i8").min, -1], "i8")


@budget(30)
@given(casting_cases())
@_text_that_is_no_number()
@example((np.array([1.5, -0.0, np.nan]), np.dtype("i2"), "same_kind", (2,)))
@example((np.array([1.5, -0.0, np.nan]), np.dtype("i2"), "unsafe", (2,)))
@example((np.array([300, -1], "i8"), np.dtype(">u1"), "same_kind", (1,)))
# Found by the long profile: numpy's own -inf -> uint32 depends on the array's length.
@example((np.array([-np.inf, 0, 0, 0], "f4"), np.dtype("<u4"), "unsafe", (1,)))
@example((np.array(["1.5", "x"]), np.dtype("f8"), "unsafe", (1,)))
@example((np.array([], ">i2"), np.dtype("<i2"), "no", (1,)))
# The cases: a uint16 Gaussian (1393..13078) into uint8 wrapped silently.
@example((np.array([1393, 13078, 200], "u2"), np.dtype("u1"), "same_value", (2,)))
@example((np.array([1393, 13078, 200], "u2"), np.dtype("u1"), "unsafe", (2,)))
@example((np.array([1393, 13078, 200], "u2"), np.dtype("i1"), "same_value", (1,)))
@example((np.array([0, 1, 1393], "u2"), np.dtype("?"), "same_value", (1,)))
@example((np.array([0.0, 1.0, -0.0]), np.dtype("?"), "same_value", (1,)))
@example((np.array([1.0, 2.5]), np.dtype("i4"), "same_value", (1,)))
@example((np.array([1.0, np.nan]), np.dtype(">u2"), "same_value", (1,)))
@example((np.array([1.0, -np.inf]), np.dtype("i8"), "same_value", (1,)))
@example((np.array([-(2.0**63), 2.0**63]), np.dtype("i8"), "same_value", (1,)))
@example((np.array([-(2.0**63), 2.0**62]), np.dtype("i8"), "same_value", (1,)))
@example((np.array([2**63, 1], "u8"), np.dtype("i8"), "same_value", (1,)))
@example((np.array([0.1, 1e-300, np.nan, -np.inf]), np.dtype("f4"), "same_value", (2,)))
@example((np.array([0.1, 1e300]), np.dtype("f4"), "same_value", (2,)))
@example((np.array([65504, 70000], "u4"), np.dtype("f2"), "same_value", (1,)))
@example((np.array([1 + 0j, 2 + 1j]), np.dtype("f8"), "same_value", (1,)))
@example((np.array([1 + 0j, 2 - 0j]), np.dtype("i2"), "same_value", (1,)))
# numpy 2.4's astype(casting="same_value") checks nothing across byte orders.
@example((np.array([0.5, 1.0]), np.dtype(">i2"), "same_value", (1,)))
# Found by the long profile: float16 -inf passed the range check (-2**31 is -inf in
# float16) and was written as -2**31; numpy refuses float16 -0.0 into integers.
@example((np.array([-np.inf], "f2"), np.dtype("i4"), "same_value", (1,)))
@example((np.array([-0.0, 3.0], "f2"), np.dtype("i1"), "same_value", (1,)))
@example((np.array([300, 1], ">u2"), np.dtype("u1"), "same_value", (1,)))
def test_map_chunks_casts_as_numpy(case: Case) -> None:
    values, target, casting, chunks = case
    source = _source(values, chunks)
    # The blocks are the source's: in native order when it is a Zarr v3 array.
    _check(lambda: chunkflow.map_chunks(lambda block: block, source, dtype=target,
                                        casting=casting, scheduler="sync").compute(),
           values.astype(source.dtype), target, casting)


@budget(25)
@given(casting_cases())
@_text_that_is_no_number()
@example((np.array([1.5, 2.5]), np.dtype("u1"), "same_kind", (1,)))
@example((np.array([7, -1], "i2"), np.dtype("U3"), "same_kind", (1,)))
@example((np.array([1.5, -np.inf]), np.dtype("S4"), "unsafe", (2,)))
@example((_I8_MIN, np.dtype("m8[s]"), "unsafe", (1,)))
@example((np.array([1393, 13078], "u2"), np.dtype("u1"), "same_value", (1,)))
@example((np.array([-1, 255], "i8"), np.dtype("u1"), "same_value", (1,)))
@example((np.array([3.0, 255.0], "f2"), np.dtype("u1"), "same_value", (1,)))
@example((np.array([7, -1], "i2"), np.dtype("U3"), "same_value", (1,)))
def test_store_casts_as_numpy(case: Case) -> None:
    values, target, casting, chunks = case
    out = chunkflow.create_array(None, shape=values.shape, chunks=chunks, dtype=target)
    x = da.from_array(values, chunks=chunks)
    # The output's dtype is the target (Zarr v3 arrays are in native order).
    _check(lambda: chunkflow.store(x, out, casting=casting, scheduler="sync"),
           values, out.dtype, casting, read=lambda: out[...])


@budget(20)
@given(casting_cases())
@_text_that_is_no_number()
@example((np.array([1 + 2j, np.nan]), np.dtype("f4"), "same_kind", (1,)))
@example((np.array([1 + 2j, np.nan]), np.dtype("f4"), "unsafe", (1,)))
@example((np.array(["NaT", "2020-01-01"], "M8[D]"), np.dtype("M8[s]"), "safe", (1,)))
# Found by the long profile: the new (Zarr v3) array is native, dtype= asked '>i2'.
@example((np.array([], ">i2"), np.dtype(">i2"), "no", (1,)))
@example((np.array([1 + 2j, np.nan]), np.dtype("f4"), "same_value", (1,)))
@example((np.array([1.5, 2.0]), np.dtype("u8"), "same_value", (1,)))
@example((np.array(["NaT", "2020-01-01"], "M8[s]"), np.dtype("M8[D]"), "same_value", (1,)))
def test_to_chunkflow_casts_as_numpy(case: Case) -> None:
    values, target, casting, chunks = case
    x = da.from_array(values, chunks=chunks)
    _check(lambda: chunkflow.to_chunkflow(x, None, dtype=target, casting=casting,
                                          scheduler="sync")[...],
           values, target, casting)


@budget(25)
@given(casting_cases(), st.data())
@_text_that_is_no_number(None)
# The CLI's case: rechunk --dtype uint8 of a uint16 image wrapped 3999 to 159.
@example((np.array([1393, 3999, 200], "u2"), np.dtype("u1"), "same_value", (1,)), None)
@example((np.array([1393, 3999, 200], "u2"), np.dtype("u1"), "unsafe", (1,)), None)
@example((np.array([7, -1], "i2"), np.dtype("U3"), "same_value", (1,)), None)
@example((np.array([0.5, 2.0]), np.dtype(">i2"), "same_value", (2,)), None)
# Found by the long profile: the fill value NaT into '<U1' (numpy: RuntimeError)
@example((np.array([], "M8[s]"), np.dtype("<U1"), "unsafe", (1,)), None)
def test_rechunk_casts_as_numpy(case: Case, data: st.DataObject | None) -> None:
    """rechunk(dtype=...) to new chunks, in one pass or two (an intermediate array of the
    smaller dtype: the one cast happens in whichever pass converts)."""
    values, target, casting, chunks = case
    source = _source(values, chunks)
    new_chunks = chunks if data is None else data.draw(cst.chunk_shapes(values.shape))
    memory = "1 MiB" if data is None else data.draw(st.sampled_from(["1 MiB", "64 B"]))
    out = chunkflow.MemoryStore()

    def write() -> chunkflow.Array:
        return chunkflow.rechunk(source, new_chunks, out, dtype=target, casting=casting,
                                 max_memory=memory, temp=chunkflow.MemoryStore(),
                                 scheduler="sync")

    try:
        _check(write, values.astype(source.dtype), target, casting,
               read=lambda: chunkflow.open_array(out, mode="r")[...])
    except chunkflow.MemoryPlanError:  # "64 B" fits no block of a wide dtype: not this test's
        assume(False)


def _first_of_each_block(values: np.ndarray, chunks: tuple[int, ...]) -> np.ndarray:
    grid = tuple(range(0, n, c) for n, c in zip(values.shape, chunks))
    firsts = np.empty(tuple(len(g) for g in grid), values.dtype)
    for index in np.ndindex(*firsts.shape):
        firsts[index] = values[tuple(g[i] for g, i in zip(grid, index))]
    return firsts


@budget(20)
@given(casting_cases())
@_text_that_is_no_number()
@example((np.array([-8, 3, 300], "i2"), np.dtype("u1"), "same_value", (1,)))
@example((np.array([-8, 3, 300], "i2"), np.dtype("u1"), "unsafe", (1,)))
def test_summarize_chunks_casts_as_numpy(case: Case) -> None:
    """Each block's summary (here its first value) cast to ``dtype`` by the rule."""
    values, target, casting, chunks = case
    assume(values.size > 0)  # an empty array is one empty block (dask's grid): no first value
    source = _source(values, chunks)
    def first(block: np.ndarray) -> np.ndarray:  # 0-d, in the block's dtype (a str keeps its width)
        return block.reshape(-1)[:1].reshape(())

    _check(lambda: chunkflow.summarize_chunks(first, source, dtype=target, casting=casting,
                                              scheduler="sync"),
           _first_of_each_block(values.astype(source.dtype), chunks), target, casting)


@budget(25)
@given(casting_cases(NUMERIC))
@example((np.array([1.5, -0.0, np.nan, np.inf]), np.dtype(">i4"), "unsafe", (3,)))
@example((np.array([-1, 256], ">i2"), np.dtype("u1"), "unsafe", (1,)))
@example((np.array([1 - 1j]), np.dtype("?"), "unsafe", (1,)))
def test_assigning_another_dtype_is_numpy_assignment(case: Case) -> None:
    values, target, _, chunks = case
    z = chunkflow.create_array(None, shape=values.shape, chunks=chunks, dtype=target)

    def numpy_assignment() -> np.ndarray:
        out = np.zeros(values.shape, target)
        out[...] = values
        return out

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            expected = numpy_assignment()
        except Exception as err:  # noqa: BLE001 - compared by builtin class
            refused = next(c for c in type(err).__mro__ if c.__module__ == "builtins")
            with pytest.raises(refused):
                z[...] = values
            return
        z[...] = values
    _assert_cast(z[...], expected, values, target)
