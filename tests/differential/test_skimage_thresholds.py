"""``chunkflow.skimage.filters``' thresholds against scikit-image's, on random images.

Otsu, Yen, triangle, Multi-Otsu and Li: scikit-image's value, type, dtype and bits (or
an error of the same builtin class); Li on floats too (numpy's pairwise sums rebuilt
from the blocks, :mod:`chunkflow.graph.thresholds.pairwise`).
"""

from __future__ import annotations

import itertools
import math
import tempfile
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import dask
import numpy as np
import skimage.filters
from hypothesis import example, given
from hypothesis import strategies as st

import chunkflow
from chunkflow.errors import InvalidArgumentError, MemoryPlanError
from chunkflow.graph.thresholds.methods import MAX_SEARCH
from chunkflow.skimage import filters
from chunkflow.testing import strategies as cst
from chunkflow.testing.strategies import StoredArraySpec
from tests.differential.conftest import budget
from tests.differential.pools import process_pool

METHODS = ("threshold_otsu", "threshold_yen", "threshold_triangle", "threshold_multiotsu",
           "threshold_li")
# Integer images spanning this many values or more are run with a budget their
# histogram (a bin per value) does not fit, and must be refused.
WIDE = 2**22


@dataclass(frozen=True)
class Case:
    spec: StoredArraySpec
    method: str
    nbins: int = 256
    classes: int = 3
    source: str = "stored"
    scheduler: str = "sync"

    def kwargs(self) -> dict[str, Any]:
        if self.method == "threshold_li":
            return {}
        if self.method == "threshold_multiotsu":
            return {"classes": self.classes, "nbins": self.nbins}
        return {"nbins": self.nbins}


@st.composite
def cases(draw: st.DrawFn, methods: tuple[str, ...] = METHODS, processes: bool = False) -> Case:
    dtypes = st.one_of(cst.dtypes(kinds="f", byteorder="any"),
                       cst.dtypes(kinds="biuf", byteorder="any"))
    shapes = cst.shapes(min_dims=1, max_dims=3, max_side=9, zero_sides=False)
    values = st.one_of(cst.ordinary_arrays(dtypes, shapes), cst.arrays(dtypes, shapes),
                       cst.ordinary_arrays(dtypes, shapes).map(lambda a: a // 7 if a.dtype.kind
                                                               in "iu" else a.round()))
    spec = draw(cst.stored_arrays(data=values))
    return Case(spec, draw(st.sampled_from(methods)), draw(st.sampled_from([256, 256, 7, 2])),
                draw(st.sampled_from([2, 3, 3, 4])),
                draw(st.sampled_from(["stored", "stored", "numpy", "dask"])),
                draw(cst.schedulers(processes=processes)))


def _outcome(call: Any) -> tuple[str, Any]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            return "value", call()
        except (ValueError, TypeError, MemoryError, ZeroDivisionError, IndexError) as error:
            return "error", error


def _classes(error: BaseException) -> set[type]:
    return {c for c in type(error).__mro__ if c.__module__ == "builtins"} - {
        BaseException, Exception, object}


def _bits(value: Any) -> Any:
    data = np.asarray(value)
    if data.dtype.kind == "f":
        return data.view(f"u{data.dtype.itemsize}").tolist()
    return data.tolist()


def assert_same_value(got: Any, expected: Any, what: str, exact: bool = True) -> None:
    assert type(got) is type(expected), (what, got, expected)
    assert np.asarray(got).dtype == np.asarray(expected).dtype, (what, got, expected)
    if exact:
        if np.isnan(np.asarray(expected, float)).any():
            np.testing.assert_array_equal(np.isnan(np.asarray(got, float)),
                                          np.isnan(np.asarray(expected, float)))
            return
        assert _bits(got) == _bits(expected), (what, got, expected)
    else:
        np.testing.assert_allclose(np.asarray(got, float), np.asarray(expected, float),
                                   rtol=1e-3, atol=1e-3 * (1 + abs(float(expected))),
                                   err_msg=what)


def _wide(data: np.ndarray, limit: int = WIDE) -> bool:
    if data.dtype.kind not in "iu" or data.size == 0:
        return False
    return int(data.max()) - int(data.min()) >= limit or int(data.max()) > np.iinfo(np.int64).max


def _search_refused(data: np.ndarray, case: Case) -> bool:
    """Whether Multi-Otsu's search is too long for chunkflow (and for a test of
    scikit-image's): more combinations than MAX_SEARCH."""
    bins = int(data.max()) - int(data.min()) + 1 if data.dtype.kind in "iu" else case.nbins
    return math.comb(bins - 1, case.classes - 1) > MAX_SEARCH or \
        math.comb(bins - 1, case.classes - 2) > MAX_SEARCH // 1000


def _near_overflow(data: np.ndarray) -> bool:
    """Whether the sum of a float image (shifted by its minimum) comes within a factor 8
    of the range of numpy's accumulator."""
    if data.dtype.kind != "f":
        return False
    finite = data[np.isfinite(data)].astype(np.float64)
    if finite.size == 0:
        return False
    total = float(np.sum(finite - finite.min()))
    limit = float(np.finfo(np.float32 if data.dtype.itemsize <= 4 else np.float64).max)
    return limit / 8 <= total <= limit * 8


def _skimage_bins(data: np.ndarray) -> int:
    """How many bins scikit-image's histogram of an integer image allocates: one per
    value from 0 (or the minimum, when negative) to the maximum, both taken as int64
    (uint64 values from 2**63 wrap, as scikit-image casts them)."""
    low, high = (int(np.asarray(v).astype(np.int64)) for v in (data.min(), data.max()))
    return high - min(low, 0) + 1


def _skimage(case: Case, data: np.ndarray) -> Any:
    """scikit-image's threshold of ``data``, or, when its histogram would allocate more
    than WIDE bins, scikit-image's arithmetic on the histogram it would compute.

    scikit-image's integer histogram counts from 0 to the image's maximum (a peer
    limitation: ``np.bincount(minlength=max + 1)``): [3166144729] asks for 25 GB, and
    larger maxima raise or get the process killed (a worker of the long profile died,
    "node down: Not properly terminated", on such an image). Nothing of chunkflow's
    is involved: it counts from the minimum. So those images are compared through
    ``hist=`` (Otsu still sees the image for its constant shortcut; Multi-Otsu's
    histogram normalized as scikit-image normalizes it) and triangle, which works on
    bin indices, on the image shifted to start at 0.
    """
    method = getattr(skimage.filters, case.method)
    if data.dtype.kind not in "iu" or case.method == "threshold_li" or \
            _skimage_bins(data) <= WIDE:
        return method(data, **case.kwargs())
    low, high = (int(np.asarray(v).astype(np.int64)) for v in (data.min(), data.max()))
    shifted = (data - data.min()).astype(np.int64)  # the range is below WIDE
    counts = np.bincount(shifted.ravel(), minlength=high - low + 1)
    centers = np.arange(low, high + 1)
    if case.method == "threshold_triangle":
        # a bin center (int64) shifted back as scikit-image's int64 centers; a constant
        # image's own first value (in its dtype: min() of it) shifted back in the dtype
        found = skimage.filters.threshold_triangle(data - data.min(), case.nbins)
        return found + (np.int64(low) if found.dtype == np.int64 and data.dtype != np.int64
                        else data.min())
    if case.method == "threshold_multiotsu":
        return method(data, hist=(counts / counts.sum(), centers), **case.kwargs())
    if case.method == "threshold_yen":
        return method(hist=(counts, centers), **case.kwargs())
    return method(data, hist=(counts, centers), **case.kwargs())


def run_case(case: Case, store: Any = None) -> None:
    data = case.spec.data
    source: Any = data if case.source == "numpy" else case.spec.create(store)
    if case.source == "dask":
        source = chunkflow.to_dask(source)
    ours = getattr(filters, case.method)
    # Otsu and Li return a constant image's value before any histogram (both libraries)
    shortcut = case.method in ("threshold_otsu", "threshold_li") and \
        bool((data == data.flat[0]).all())
    wide = not shortcut and (_wide(data) or (
        case.method == "threshold_li" and data.dtype.kind in "iu"
        and _wide(data.astype(np.int64) - int(data.min()))))
    # Wide integer images: a budget their histogram (a bin per value) does not fit.
    budget = {"max_memory": "64 MiB"} if wide else {}
    got = _outcome(lambda: ours(source, **case.kwargs(), scheduler=case.scheduler, **budget))
    what = f"{case.method} {data.dtype} {data.shape} {case.kwargs()}"
    if wide:
        assert got[0] == "error" and isinstance(got[1], (MemoryPlanError, ValueError)), (what, got)
        return
    if got[0] == "error" and "search of" in str(got[1]):
        assert _search_refused(data, case), (what, got)
        return
    expected = _outcome(lambda: _skimage(case, data))
    if expected[0] == "error" and isinstance(expected[1], TypeError) and \
            data.dtype.kind in "iu" and int(data.max()) == np.iinfo(np.int64).max:
        return  # scikit-image's np.arange(min, max + 1) fails at int64's largest value
    assert got[0] == expected[0], (what, got, expected)
    if got[0] == "error":
        assert _classes(got[1]) & _classes(expected[1]), (what, got, expected)
        return
    assert_same_value(got[1], expected[1], what)


def _spec(data: np.ndarray, chunks: tuple[int, ...]) -> StoredArraySpec:
    return StoredArraySpec(data, chunks, None, 3, None, write_empty_chunks=False)


@budget(60)
@given(cases(methods=METHODS[:4]))
@example(Case(_spec(np.array([[5, 5], [5, 5]], "i2"), (1, 1)), "threshold_otsu"))
@example(Case(_spec(np.array([-0.0, 0.0, 0.0], "f4"), (2,)), "threshold_otsu"))
@example(Case(_spec(np.array([1.0, np.nan, 3.0]), (2,)), "threshold_yen"))
@example(Case(_spec(np.array([[1, 9], [200, 3]], "u1"), (1, 1)), "threshold_multiotsu"))
@example(Case(_spec(np.array([0, 1048576], "i4"), (1,)), "threshold_otsu"))
@example(Case(_spec(np.array([0.0, 0.0566, 0.963, 4.02], "f4"), (1,)), "threshold_multiotsu",
              classes=4))
# scikit-image's histogram from 0 to the maximum: 25 GB here (see _skimage)
@example(Case(_spec(np.array([[[3166144729]]]), (1, 1, 1)), "threshold_yen"))
@example(Case(_spec(np.array([2**63 - 9, 2**63 - 2, 2**63 - 2], "i8"), (2,)), "threshold_otsu"))
@example(Case(_spec(np.array([2**64 - 9, 2**64 - 2, 2**64 - 5], "u8"), (2,)), "threshold_triangle"))
@example(Case(_spec(np.array([2**40 + 9, 2**40 + 2, 2**40, 2**40 + 3], "u8"), (3,)),
              "threshold_multiotsu"))
@example(Case(_spec(np.array([4294967295], "u4"), (1,)), "threshold_triangle"))
@example(Case(_spec(np.array([2**64 - 1, 2**64 - 1], "u8"), (1,)), "threshold_otsu"))
@example(Case(_spec(np.array([2**40 + 1, 2**40 + 1], "u8"), (1,)), "threshold_triangle"))
def test_histogram_thresholds(case: Case) -> None:
    run_case(case)


@budget(40)
@given(cases(methods=("threshold_li",)))
@example(Case(_spec(np.array([-128, 127, 0, 5], "i1"), (3,)), "threshold_li"))
@example(Case(_spec(np.array([1.0, np.inf, np.nan, 3.0]), (3,)), "threshold_li"))
@example(Case(_spec(np.array([np.nan, -0.0, 0.0]), (1,)), "threshold_li"))
@example(Case(_spec(np.array([0.0, 3.4028235e38, 3.4028235e38], "f4"), (1,)), "threshold_li"))
@example(Case(_spec(np.array([0.0, 3.0e38, 1.0], "f4"), (2,)), "threshold_li"))
@example(Case(_spec(np.array([0.0, 16.0, -65504.0], "f2"), (1,)), "threshold_li"))
@example(Case(_spec(np.array([16.0, -65504.0], "f2"), (1,)), "threshold_li"))
# found by the long profile (issue 36): NaN with a subnormal, zeros, a single kept pair
@example(Case(_spec(np.array([-1e-45, np.nan, 0, 0, 0, 0, 0], "f4"), (1,)), "threshold_li"))
@example(Case(_spec(np.array([1.0, np.nan, 0.0], "f4"), (1,)), "threshold_li"))
@example(Case(_spec(np.array([0.0, np.nan], "f4"), (1,)), "threshold_li"))
@example(Case(_spec(np.array([2**64 - 1], "u8"), (1,)), "threshold_li"))  # constant, huge
# a signaling NaN (numpy's nanmin of [0, sNaN] is NaN): found by the long profile
@example(Case(_spec(np.array([0, 0x7F800001], "u4").view("f4"), (1,)), "threshold_li"))
def test_li(case: Case) -> None:
    run_case(case)


@budget(3)
@given(cases().filter(lambda c: c.spec.data.size > 1))
def test_thresholds_on_processes(case: Case) -> None:
    with tempfile.TemporaryDirectory() as folder, dask.config.set(pool=process_pool()):
        run_case(Case(case.spec, case.method, case.nbins, case.classes, "stored", "processes"),
                 f"{folder}/a.zarr")


@budget(30)
@given(st.lists(st.integers(0, 30), min_size=2, max_size=40), st.sampled_from(
    ["threshold_otsu", "threshold_yen", "threshold_multiotsu"]), st.booleans())
def test_given_histograms(counts: list[int], method: str, centers: bool) -> None:
    hist: Any = np.array(counts)
    if centers:
        hist = (hist, np.linspace(-3.0, 17.0, len(counts)))
    ours = _outcome(lambda: getattr(filters, method)(hist=hist))
    expected = _outcome(lambda: getattr(skimage.filters, method)(hist=hist))
    assert ours[0] == expected[0], (ours, expected)
    if ours[0] == "value":
        assert_same_value(ours[1], expected[1], method)


@dataclass(frozen=True)
class LongLi:
    """A float image long enough that numpy's pairwise sums split it (more than 128
    values), read in C-order runs of ``memory // 16 // itemsize`` values."""

    dtype: str
    shape: tuple[int, ...]
    chunks: tuple[int, ...]
    seed: int
    scale: float
    specials: int
    memory: str = "64 KiB"
    tolerance: float | None = None

    def data(self) -> np.ndarray:
        rng = np.random.default_rng(self.seed)
        data = (rng.random(self.shape) ** 3 * self.scale).astype(self.dtype)
        flat = data.reshape(-1)
        spots = rng.integers(0, flat.size, self.specials)
        flat[spots] = rng.choice(np.array([np.nan, np.inf, -np.inf, 0.0], self.dtype),
                                 self.specials)
        return data


#: More steps than scikit-image's Li ever takes on these images when it ends (tens).
ENDLESS_LI = 3000


class _Endless(ValueError):
    """scikit-image's Li iteration went on past :data:`ENDLESS_LI` steps."""


def _give_up_after(steps: int) -> Callable[[Any], None]:
    count = itertools.count(1)

    def step(_: Any) -> None:
        if next(count) > steps:
            raise _Endless(f"more than {steps} steps")

    return step


@st.composite
def long_li(draw: st.DrawFn) -> LongLi:
    shape = draw(st.sampled_from([(3000,), (129,), (8193,), (40, 97), (7, 33, 45)]))
    # at most 512 values a chunk: a task of "64 KiB" holds one (the planner's refusal
    # of a larger chunk, MemoryPlanError, is right and not what this test is about)
    cap = {1: 512, 2: 22, 3: 8}[len(shape)]
    chunks = tuple(draw(st.integers(1, min(n, cap))) for n in shape)
    return LongLi(draw(st.sampled_from(["f4", "f4", "f8", "f2", ">f4", ">f2", "<f8"])), shape,
                  chunks, draw(st.integers(0, 2**32 - 1)),
                  draw(st.sampled_from([1.0, 1000.0, 3e4, 1e30])),
                  draw(st.sampled_from([0, 0, 1, 40])),
                  draw(st.sampled_from(["64 KiB", "64 KiB", "1 MiB"])),
                  draw(st.sampled_from([None, 1e-3, 0.5])))


@budget(2)
@given(long_li())
@example(LongLi("f4", (3000,), (7,), 1, 1000.0, 0))
@example(LongLi("f4", (3000,), (1639,), 0, 1.0, 0, "256 KiB", tolerance=1e-3))
@example(LongLi(">f2", (8193,), (100,), 2, 3e4, 40, tolerance=0.5))
@example(LongLi("f8", (7, 33, 45), (3, 5, 45), 3, 1e30, 1, tolerance=1e-3))
# float16 overflows to inf everywhere: no finite value, both refuse (ValueError)
@example(LongLi("f2", (3000,), (1,), 0, 1e30, 40))
# float16 around 6000 moves in steps of 4 or more: the iteration cycles between 6168
# and 6184 forever, below tolerance=1e-3 (found by the long profile)
@example(LongLi("f2", (8193,), (54,), 306, 3e4, 40, tolerance=1e-3))
def test_li_on_long_float_images(case: LongLi) -> None:
    """Li on floats is scikit-image's bit for bit: each mean is numpy's pairwise sum,
    rebuilt from many C-order runs whose leaves cross the runs' edges (with the
    default tolerance, the distinct values' gap, when the budget holds them)."""
    data = case.data()
    source = chunkflow.array(data, chunks=case.chunks)
    kwargs = {} if case.tolerance is None else {"tolerance": case.tolerance}
    memory = case.memory if case.tolerance is not None else "16 MiB"
    # Both stop after ENDLESS_LI steps: a test that fails rather than hangs.
    got = _outcome(lambda: filters.threshold_li(
        source, max_memory=memory, iter_callback=_give_up_after(ENDLESS_LI), **kwargs))
    expected = _outcome(lambda: skimage.filters.threshold_li(
        data, iter_callback=_give_up_after(ENDLESS_LI), **kwargs))
    if isinstance(expected[1], _Endless):
        # scikit-image would loop forever (floats have finitely many values: an endless
        # iteration is a cycle); chunkflow refuses, naming the tolerance that ends it.
        assert got[0] == "error" and isinstance(got[1], InvalidArgumentError), (case, got)
        assert "cycle" in str(got[1]) and "tolerance=" in str(got[1]), got
        return
    assert got[0] == expected[0], (case, got, expected)
    if got[0] == "error":  # e.g. no finite value: both refuse with the same builtin class
        assert _classes(got[1]) & _classes(expected[1]), (case, got, expected)
        return
    assert_same_value(got[1], expected[1], repr(case))
