"""A filter's result written into another dtype, against scipy and numpy.

``map_chunks(ndimage.gaussian_filter, image, out=..., dtype=...)`` either writes
exactly numpy's ``astype`` of scipy's filter of the whole image (when no value changes
in the cast, or under ``casting="unsafe"``), or refuses with
:class:`~chunkflow.errors.CastingError`, naming a value that numpy says changes and its
position in the array. numpy decides which (see
:func:`tests.differential.test_casting._changes_a_value`).
"""

from __future__ import annotations

import re
import warnings

import dask.array as da
import numpy as np
import pytest
from hypothesis import event, example, given
from hypothesis import strategies as st
from scipy import ndimage

import chunkflow
from chunkflow.errors import CastingError
from chunkflow.graph import casting as casting_module
from chunkflow.testing import strategies as cst
from tests.differential.conftest import budget
from tests.differential.test_casting import Case as Case2
from tests.differential.test_casting import _changes_a_value, casting_cases
from tests.differential.test_casting import _check as _check_cast

Case = tuple[np.ndarray, tuple[int, ...], float, np.dtype, str]


@st.composite
def filter_cases(draw: st.DrawFn) -> Case:
    """A uint16 image (values up to a drawn top), chunks, sigma, output dtype, rule."""
    shape = draw(cst.shapes(min_dims=1, max_dims=2, max_side=24, zero_sides=False))
    top = draw(st.sampled_from([1, 127, 255, 1000, 65535]))
    seed = draw(st.integers(0, 2**32 - 1))
    image = np.random.default_rng(seed).integers(0, top, shape, endpoint=True).astype("u2")
    chunks = draw(cst.chunk_shapes(shape))
    sigma = draw(st.sampled_from([0.5, 1.0, 2.0]))
    out = draw(cst.dtypes(kinds="biuf", byteorder="any"))
    casting = draw(st.sampled_from(["same_value", "same_value", "unsafe"]))
    return image, chunks, sigma, out, casting


def _as_float(window: np.ndarray, sigma: float) -> np.ndarray:
    return ndimage.gaussian_filter(window, sigma, output=np.float64, mode="reflect")


def _named(error: CastingError, values: np.ndarray) -> tuple[int, ...]:
    found = re.search(r"the value (\S+) at \(([\d, ]*)\)", str(error))
    assert found, str(error)
    position = tuple(int(i) for i in found[2].split(",") if i.strip())
    assert float(found[1]) == float(values[position]) or np.isnan(values[position])
    return position


def _check(write: object, whole: np.ndarray, out: np.dtype, casting: str) -> None:
    changes = casting == "same_value" and _changes_a_value(whole, out)
    event(f"{casting}: {'refused' if changes else 'written'}")
    assert callable(write)
    if changes:
        with pytest.raises(CastingError, match="casting='unsafe'") as refused:
            write()
        position = _named(refused.value, whole)
        assert _changes_a_value(whole[position][None], out)  # numpy agrees on that value
        return
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        got = write()
        want = whole.astype(out)
    native = out.newbyteorder("=")
    np.testing.assert_array_equal(np.asarray(got, native).view(f"u{native.itemsize}")
                                  if native.kind != "b" else np.asarray(got),
                                  want.astype(native).view(f"u{native.itemsize}")
                                  if native.kind != "b" else want)


@budget(20)
@given(filter_cases())
# The case: a uint16 Gaussian (values in the thousands) into uint8 wrapped.
@example((np.arange(1393, 1393 + 40 * 10, 10, dtype="u2").reshape(20, 2), (8, 2), 2.0,
          np.dtype("u1"), "same_value"))
@example((np.arange(1393, 1393 + 40 * 10, 10, dtype="u2").reshape(20, 2), (8, 2), 2.0,
          np.dtype("u1"), "unsafe"))
@example((np.full((9, 9), 200, "u2"), (4, 4), 2.0, np.dtype("u1"), "same_value"))
@example((np.eye(9, dtype="u2"), (4, 4), 1.0, np.dtype("?"), "same_value"))
def test_gaussian_written_into_another_dtype(case: Case) -> None:
    image, chunks, sigma, out, casting = case
    source = chunkflow.array(image, chunks=chunks)
    depth = int(4.0 * sigma + 0.5)
    whole = ndimage.gaussian_filter(image, sigma, mode="reflect")  # uint16, as scipy gives

    def write() -> np.ndarray:
        return chunkflow.map_chunks(ndimage.gaussian_filter, source, out=chunkflow.MemoryStore(),
                                    depth=depth, sigma=sigma, mode="reflect", dtype=out,
                                    casting=casting, scheduler="sync")[...]

    _check(write, whole, out, casting)


@budget(15)
@given(filter_cases())
@example((np.arange(1393, 1393 + 40 * 10, 10, dtype="u2").reshape(20, 2), (8, 2), 2.0,
          np.dtype("u2"), "same_value"))
@example((np.full((9, 9), 7, "u2"), (4, 4), 2.0, np.dtype("i1"), "same_value"))
# Found by hypothesis: numpy 2.4's checked cast into '>i2' checks nothing.
@example((np.array([1, 1, 1, 0], "u2"), (1,), 0.5, np.dtype(">i2"), "same_value"))
def test_float_gaussian_stored_into_another_dtype(case: Case) -> None:
    """A float64 filter, rounded or not, through ``store`` (fractions are values too)."""
    image, chunks, sigma, out, casting = case
    whole = _as_float(image, sigma)
    if image.size % 2:  # half of the cases: rounded to integers, which may survive
        whole = np.rint(whole)
    x = da.from_array(whole, chunks=chunks)

    def write() -> np.ndarray:
        z = chunkflow.zeros(image.shape, chunks=chunks, dtype=out)
        chunkflow.store(x, z, casting=casting, scheduler="sync")
        return z[...]

    _check(write, whole, out, casting)


@budget(30)
@given(casting_cases(cst.dtypes(kinds="biufc", byteorder="any")), st.booleans())
@example((np.array([0.5, 1.0]), np.dtype(">i2"), "same_value", (1,)), False)
@example((np.array([2**63, 1], "u8"), np.dtype("i8"), "same_value", (1,)), False)
@example((np.array([-(2.0**63), 2.0**63], "f4"), np.dtype("i8"), "same_value", (1,)), False)
@example((np.array([np.inf, 1.0], "f2"), np.dtype("u8"), "same_value", (1,)), False)
# Each integer bound, just inside and just outside, without numpy's check.
@example((np.array([255.0, 256.0]), np.dtype("u1"), "same_value", (1,)), False)
@example((np.array([-128.0, -129.0], "f4"), np.dtype("i1"), "same_value", (1,)), False)
@example((np.array([127.0, 128.0], "f2"), np.dtype("i1"), "same_value", (1,)), False)
@example((np.array([-0.0, -1.0]), np.dtype(">u4"), "same_value", (1,)), False)
@example((np.array([32767, 32768], "u2"), np.dtype("i2"), "same_value", (1,)), False)
@example((np.array([0, -1], "i4"), np.dtype("u8"), "same_value", (1,)), False)
# Into bool: 0 and 1 only (no negative, no NaN, no 2).
@example((np.array([0, -1], "i1"), np.dtype("?"), "same_value", (1,)), True)
@example((np.array([0.0, np.nan]), np.dtype("?"), "same_value", (1,)), True)
@example((np.array([1 + 0j, 1j]), np.dtype("?"), "same_value", (1,)), True)
def test_the_check_with_and_without_numpys_own(case: Case2, numpys: bool) -> None:
    """The value check on one block, with numpy's ``same_value`` cast (numpy >= 2.4) or
    without it (the vectorized check older numpy versions use)."""
    values, target, _, _ = case
    casting = "same_value"  # the rule whose check this is
    kept = casting_module.NUMPY_SAME_VALUE
    casting_module.NUMPY_SAME_VALUE = numpys and kept  # numpy's check where numpy has it
    try:
        _check_cast(lambda: casting_module.cast_block(values, target, casting, "block (0,)"),
                    values, target, casting)
    finally:
        casting_module.NUMPY_SAME_VALUE = kept
