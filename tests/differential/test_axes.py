"""Axes everywhere, against the oracles: per-channel histograms against
``numpy.histogram`` of each channel, scipy's ``axes=`` (the filters run on the spatial
axes of a ``c...`` image) against scipy with the same ``axes=``, and the filter sizes
that leave channels and time alone against scipy with those sizes written out.

- ``histogram(x, bins, axis=A)``: for every index ``i`` of the axes not in ``A``,
  ``counts[i], edges[i] == numpy.histogram(x[i], bins, range, density)`` (values, dtype
  and bits; the refusal of the same builtin class when numpy refuses any channel);
- ``chunkflow.ndimage.F(x, ..., axes=A)`` equals ``scipy.ndimage.F(x, ..., axes=A)``
  bit for bit, for the Gaussian, uniform, minimum, maximum, median, rank and
  percentile filters, on 3-D and 4-D arrays whose first axis is left alone;
- ``per_axis_sizes`` (the CLI's sizes): a scalar size on named axes gives scipy's
  filter with the neutral size (sigma 0, side 1) written on ``c`` and ``t``.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable
from functools import partial
from typing import Any

import numpy as np
import pytest
from hypothesis import event, example, given
from hypothesis import strategies as st
from scipy import ndimage as scipy_ndimage

import chunkflow
from chunkflow.cli.filters import apply_filter, filter_depth
from chunkflow.graph.filters.axes import per_axis_sizes
from chunkflow.testing import strategies as cst
from chunkflow.testing.strategies import StoredArraySpec
from tests.differential.conftest import budget
from tests.differential.test_histograms import (
    assert_same,
    bin_choices,
    builtin_classes,
    range_choices,
)
from tests.differential.test_ndimage_filters import MODES, _check

# ------------------------------------------------------------ histograms per channel


@st.composite
def histogram_cases(draw: st.DrawFn) -> tuple[Any, ...]:
    dtypes = st.one_of(cst.dtypes(kinds="f", byteorder="any"),
                       cst.dtypes(kinds="biuf", byteorder="any"))
    shapes = cst.shapes(min_dims=1, max_dims=4, max_side=7)
    values = st.one_of(cst.arrays(dtypes, shapes), cst.ordinary_arrays(dtypes, shapes))
    spec = draw(cst.stored_arrays(data=values))
    ndim = spec.data.ndim
    axis: Any = draw(st.one_of(
        st.integers(-ndim, ndim - 1),
        st.lists(st.integers(-ndim, ndim - 1), max_size=ndim, unique_by=lambda a: a % ndim)
        .map(tuple)))
    bins = draw(bin_choices(spec.data))
    if isinstance(bins, str):
        bins = 5  # (estimators are refused with or without axis: test_histograms)
    # Blocks of one chunk most often: channels split across blocks.
    return (spec, bins, draw(range_choices(spec.data)), draw(st.booleans()), axis,
            draw(cst.schedulers(processes=False)), draw(cst.block_arguments(spec.data.shape)))


def _numpy_per_index(data: np.ndarray, bins: Any, bounds: Any, density: bool,
                     axis: Any) -> tuple[np.ndarray, np.ndarray]:
    """numpy.histogram of every index of the kept axes, stacked (the oracle)."""
    listed = axis if isinstance(axis, tuple) else (axis,)
    reduced = sorted(a % data.ndim for a in listed)
    kept = [d for d in range(data.ndim) if d not in reduced]
    moved = np.transpose(data, kept + reduced)
    kept_shape = moved.shape[:len(kept)]
    results = [np.histogram(moved[index], bins, bounds, density=density)
               for index in np.ndindex(*kept_shape)]
    if results:
        counts = np.stack([r[0] for r in results]).reshape(*kept_shape, -1)
        edges = np.stack([r[1] for r in results]).reshape(*kept_shape, -1)
        return counts, edges
    edges0 = np.histogram_bin_edges(np.empty(0, data.dtype if data.dtype != bool else "u1"),
                                    bins, bounds)
    kind = np.float64 if density else np.intp
    return (np.zeros((*kept_shape, len(edges0) - 1), kind),
            np.empty((*kept_shape, len(edges0)), edges0.dtype))


def _check_histogram(spec: StoredArraySpec, bins: Any, range: Any, density: bool, axis: Any,
                     scheduler: str, blocks: Any = None) -> None:
    what = f"histogram of {spec.data.dtype}{spec.data.shape} axis={axis!r} bins={bins!r} " \
           f"range={range!r} density={density}"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        try:
            expected = _numpy_per_index(spec.data, bins, range, density, axis)
        except Exception as error:  # numpy refuses (some channel): so must chunkflow
            with pytest.raises(builtin_classes(error)[0]):
                chunkflow.histogram(spec.create(), bins, range, density=density, axis=axis,
                                    scheduler=scheduler, blocks=blocks)
            event(f"both refuse: {type(error).__name__}")
            return
        got = chunkflow.histogram(spec.create(), bins, range, density=density, axis=axis,
                                  scheduler=scheduler, blocks=blocks)
    event("compared")
    assert_same(got, expected, what)


@budget(60)
@given(case=histogram_cases())
@example(case=(StoredArraySpec(np.arange(2 * 5 * 4, dtype="u2").reshape(2, 5, 4), (1, 2, 3)),
               4, None, False, (1, 2), "sync", 1))  # per channel, each its own range
@example(case=(StoredArraySpec(np.array([[1.0, np.nan], [2.0, 3.0]]), (1, 1)), 3, None,
               False, 1, "sync"))  # one channel's range is NaN: numpy refuses
@example(case=(StoredArraySpec(np.zeros((3, 0), "i2"), (2, 1)), 3, None, True, 1, "sync"))
@example(case=(StoredArraySpec(np.zeros((0, 3), "f4"), (1, 2)), 3, None, False, 1, "sync"))
def test_histogram_per_channel_equals_numpy(case: tuple[Any, ...]) -> None:
    _check_histogram(*case)


def test_histogram_axis_refusals_are_numpys() -> None:
    z = chunkflow.array(np.zeros((2, 3)), chunks=(1, 2))
    with pytest.raises(np.exceptions.AxisError):
        chunkflow.histogram(z, axis=2)
    with pytest.raises(ValueError, match="names an axis twice"):
        chunkflow.histogram(z, axis=(1, -1))


def test_histogram_axis_deferred() -> None:
    data = np.random.default_rng(0).random((3, 10, 10))
    lazy = chunkflow.histogram(chunkflow.array(data, chunks=(1, 4, 4)), 6, axis=(1, 2),
                               compute=False)
    counts, edges = lazy.compute()
    want = _numpy_per_index(data, 6, None, False, (1, 2))
    assert_same((counts, edges), want, "deferred")


# ------------------------------------------------------------ scipy's axes=

AXES_FILTERS = ("gaussian_filter", "uniform_filter", "minimum_filter", "maximum_filter",
                "median_filter", "rank_filter", "percentile_filter")


@st.composite
def axes_cases(draw: st.DrawFn) -> tuple[Any, ...]:
    ndim = draw(st.integers(3, 4))
    data = draw(cst.varied_arrays(cst.dtypes(kinds="iuf"),
                                  cst.shapes(min_dims=ndim, max_dims=ndim, zero_sides=False,
                                             max_side=6)))
    # The spatial axes of a c... image (the first axis left alone), in any order scipy
    # takes, sometimes negative.
    spatial = list(range(1, ndim))
    chosen = draw(st.lists(st.sampled_from(spatial), min_size=1, unique=True))
    axes = tuple(a - ndim if draw(st.booleans()) else a for a in chosen)
    n = len(axes)
    name = draw(st.sampled_from(AXES_FILTERS))
    params: dict[str, Any] = {"axes": axes}
    if name == "gaussian_filter":
        params["sigma"] = draw(st.lists(st.floats(0, 2), min_size=n, max_size=n))
        params["order"] = draw(st.lists(st.integers(0, 1), min_size=n, max_size=n))
    else:
        sides = draw(st.lists(st.integers(1, 4), min_size=n, max_size=n))
        if name != "uniform_filter" and draw(st.booleans()):
            footprint = np.array(draw(st.lists(st.booleans(), min_size=math.prod(sides),
                                               max_size=math.prod(sides))), bool)
            footprint = footprint.reshape(sides)
            footprint.flat[0] = True
            params["footprint"] = footprint
            count = int(footprint.sum())
        else:
            params["size"] = sides
            count = math.prod(sides)
        if name == "rank_filter":
            params["rank"] = draw(st.integers(-count, count - 1))
        elif name == "percentile_filter":
            params["percentile"] = draw(st.floats(0, 100))
    mode = draw(st.sampled_from(MODES))
    return (data, draw(cst.chunk_shapes(data.shape)), name, params, mode,
            draw(cst.schedulers(processes=False)))


@budget(30)
@given(case=axes_cases())
@example(case=(np.arange(2 * 5 * 6, dtype="f8").reshape(2, 5, 6) % 7, (1, 2, 4),
               "gaussian_filter", {"sigma": [1.0, 1.5], "order": [0, 0], "axes": (1, 2)},
               "reflect", "sync"))
@example(case=(np.arange(2 * 3 * 4 * 5, dtype="f4").reshape(2, 3, 4, 5) % 11, (1, 2, 2, 3),
               "maximum_filter", {"size": [2, 3], "axes": (-1, 1)}, "nearest", "sync"))
def test_ndimage_axes_equal_scipys(case: tuple[Any, ...]) -> None:
    data, chunks, name, params, mode, scheduler = case
    _check(name, data, chunks, params, mode, 0.0, scheduler)


# ------------------------------------------------------------ sizes of the CLI


@st.composite
def named_images(draw: st.DrawFn) -> tuple[np.ndarray, tuple[str, ...], str, float]:
    names = draw(st.sampled_from([("c", "y", "x"), ("t", "y", "x"), ("c", "z", "y", "x"),
                                  ("t", "c", "y", "x"), ("z", "y", "x")]))
    data = draw(cst.varied_arrays(np.dtype("f8"), cst.shapes(
        min_dims=len(names), max_dims=len(names), zero_sides=False, max_side=7)))
    kind = draw(st.sampled_from(["gaussian", "median", "uniform"]))
    size = draw(st.floats(0.3, 2.0)) if kind == "gaussian" else draw(st.integers(2, 4))
    return data, names, kind, size


@budget(20)
@given(case=named_images(), chunks=st.data())
def test_scalar_sizes_leave_channels_and_time_alone(case: tuple[Any, ...],
                                                    chunks: st.DataObject) -> None:
    _check_scalar_sizes(case, lambda shape: chunks.draw(cst.chunk_shapes(shape)))


def test_scalar_sizes_where_the_running_sums_overflow() -> None:
    """Found by the long profile: a running sum that overflows is inf on one side and
    NaN (inf - inf) on the other."""
    data = np.array([[[0.0, np.finfo("f8").max, 0.0]]])
    _check_scalar_sizes((data, ("c", "y", "x"), "uniform", 2), lambda shape: (1, 1, 1))


def _check_scalar_sizes(case: tuple[Any, ...],
                        chunks_of: Callable[[tuple[int, ...]], tuple[int, ...]]) -> None:
    data, names, kind, size = case
    sizes = per_axis_sizes(size, names, neutral=0.0 if kind == "gaussian" else 1)
    assert [s for s, n in zip(sizes, names) if n in "ct"] == \
        [0.0 if kind == "gaussian" else 1] * sum(n in "ct" for n in names)
    func = {"gaussian": scipy_ndimage.gaussian_filter, "median": scipy_ndimage.median_filter,
            "uniform": scipy_ndimage.uniform_filter}[kind]
    keyword = "sigma" if kind == "gaussian" else "size"
    expected = func(data, **{keyword: sizes}, mode="reflect")
    # Each channel (frame) apart: the oracle of "never across c or t".
    leading = [d for d, n in enumerate(names) if n in "ct"]
    for index in np.ndindex(*[data.shape[d] for d in leading]):
        where = [slice(None)] * data.ndim
        for d, i in zip(leading, index):
            where[d] = i
        plane = data[tuple(where)]
        spatial = [s for s, n in zip(sizes, names) if n not in "ct"]
        np.testing.assert_array_equal(expected[tuple(where)],
                                      func(plane, **{keyword: spatial}, mode="reflect"))
    got = _cli_windows(data, chunks_of(data.shape), kind, sizes)
    if kind == "uniform":
        # The CLI runs scipy's uniform filter on windows: its running sum starts at the
        # window, not the line, so the bits differ (within rounding; inf makes NaN, see
        # test_cli_uniform_filter_is_not_scipys_running_sum): compared within rounding
        # where every value is finite. A running sum that overflows (values near the
        # largest float) is inf on one side, and inf - inf = NaN on the other: there,
        # both sides must overflow.
        if np.isfinite(data).all():
            finite = np.isfinite(expected)
            np.testing.assert_array_equal(np.isfinite(got), finite)
            np.testing.assert_allclose(got[finite], expected[finite], rtol=1e-9,
                                       atol=1e-9 * float(np.abs(data).max(initial=1.0)))
        return
    np.testing.assert_array_equal(got, expected)


def _cli_windows(data: np.ndarray, chunks: tuple[int, ...], kind: str,
                 sizes: tuple[float, ...]) -> np.ndarray:
    """What ``chunkflow filter`` computes: the filter on each window with its halo."""
    z = chunkflow.array(data, chunks=chunks)
    depth = tuple(filter_depth(kind, s) for s in sizes)
    # The CLI's window function (map_chunks keeps boundary= for itself: a partial).
    got = chunkflow.map_chunks(partial(apply_filter, boundary="reflect"), z, depth=depth,
                               boundary="none", kind=kind, size=tuple(sizes))
    return np.asarray(got[...])


@pytest.mark.xfail(strict=True, reason="chunkflow filter --uniform runs on windows, not on "
                   "whole lines as scipy's running sum does (chunkflow.ndimage.uniform_filter "
                   "does): an inf makes NaN after it in scipy's line only")
def test_cli_uniform_filter_is_not_scipys_running_sum() -> None:
    # Found by the long profile of test_scalar_sizes_leave_channels_and_time_alone.
    data = np.zeros((2, 2, 3))
    data[1, 1, 1] = np.inf
    expected = scipy_ndimage.uniform_filter(data, (1, 2, 2), mode="reflect")
    np.testing.assert_array_equal(_cli_windows(data, (1, 1, 1), "uniform", (1, 2, 2)), expected)


# ------------------------------------------------------------ order statistics per channel

ORDER_STATISTICS = ("percentile", "nanpercentile", "quantile", "nanquantile", "median",
                    "nanmedian")


@st.composite
def order_cases(draw: st.DrawFn) -> tuple[Any, ...]:
    dtypes = st.one_of(cst.dtypes(kinds="f"), cst.dtypes(kinds="iuf"))
    shapes = cst.shapes(min_dims=1, max_dims=3, max_side=6)
    data = draw(st.one_of(cst.arrays(dtypes, shapes), cst.ordinary_arrays(dtypes, shapes)))
    ndim = data.ndim
    axis: Any = draw(st.one_of(
        st.integers(-ndim, ndim - 1),
        st.lists(st.integers(-ndim, ndim - 1), min_size=1, max_size=ndim,
                 unique_by=lambda a: a % ndim).map(tuple)))
    name = draw(st.sampled_from(ORDER_STATISTICS))
    call: dict[str, Any] = {}
    if "percentile" in name:
        call["q"] = draw(st.floats(0, 100) | st.lists(st.floats(0, 100), min_size=1, max_size=3))
    elif "quantile" in name:
        call["q"] = draw(st.floats(0, 1) | st.lists(st.floats(0, 1), min_size=1, max_size=3))
    return (data, draw(cst.chunk_shapes(data.shape)), name, call, axis,
            draw(cst.schedulers(processes=False)))


@budget(25)
@given(case=order_cases())
@example(case=(np.array([[1.0, np.nan, 3.0], [4.0, 5.0, 6.0]], "f4"), (1, 2), "nanmedian", {},
               1, "sync"))
@example(case=(np.zeros((0, 3), "f4"), (1, 2), "percentile", {"q": [5, 50]}, 1, "sync"))
@example(case=(np.array([[np.nan, 0.0]], "f4"), (1, 1), "nanpercentile", {"q": [0.0]}, 0,
               "sync"))  # (numpy's axis= path: float32; its slices: float64)
@example(case=(np.array([[3.4028235e38]], "f4"), (1, 1), "nanmedian", {}, 0, "sync"))
def test_order_statistics_per_channel_equal_numpys(case: tuple[Any, ...]) -> None:
    data, chunks, name, call, axis, scheduler = case
    z = chunkflow.array(data, chunks=chunks)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        try:
            expected = getattr(np, name)(data, **call, axis=axis)
        except Exception as error:  # numpy refuses: so must chunkflow, alike
            with pytest.raises(builtin_classes(error)[0]):
                getattr(chunkflow, name)(z, **call, axis=axis, scheduler=scheduler)
            event(f"both refuse: {type(error).__name__}")
            return
        got = getattr(chunkflow, name)(z, **call, axis=axis, scheduler=scheduler)
    event("compared")
    # The oracle: numpy's answer of each slice, laid out as numpy's axis= result. numpy's
    # own axis= path differs from it in two corners the long profile found (an all-NaN
    # slice makes nanpercentile's whole result the input's float type; nanmedian's mean
    # of the middle values overflows near the dtype's largest value): see
    # test_numpys_axis_path_differs_from_its_slices.
    per_slice = _per_slice(getattr(np, name), data, call, axis)
    got, expected = np.asarray(got), np.asarray(expected)
    assert got.shape == expected.shape, (got, expected)
    assert got.dtype == per_slice.dtype, (got, per_slice)
    np.testing.assert_array_equal(got, per_slice)


def _per_slice(func: Any, data: np.ndarray, call: dict[str, Any], axis: Any) -> np.ndarray:
    listed = axis if isinstance(axis, tuple) else (axis,)
    reduced = sorted(a % data.ndim for a in listed)
    kept = [d for d in range(data.ndim) if d not in reduced]
    results = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        for index in np.ndindex(*[data.shape[d] for d in kept]):
            where: list[Any] = [slice(None)] * data.ndim
            for d, i in zip(kept, index):
                where[d] = i
            results.append(np.asarray(func(data[tuple(where)], **call)))
    if not results:
        return np.asarray(func(data, **call, axis=axis))
    stacked = np.stack(results, axis=-1)
    return stacked.reshape(stacked.shape[:-1] + tuple(data.shape[d] for d in kept))


@pytest.mark.xfail(strict=True, reason="numpy's axis= path is not its per-slice answer here; "
                   "chunkflow gives the per-slice answer")
@pytest.mark.parametrize("name, data, call", [
    ("nanpercentile", np.array([[np.nan, 0.0]], "f4"), {"q": [0.0]}),
    ("nanmedian", np.array([[3.4028235e38]], "f4"), {}),
])
def test_numpys_axis_path_differs_from_its_slices(name: str, data: np.ndarray,
                                                  call: dict[str, Any]) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        expected = getattr(np, name)(data, **call, axis=0)
        got = getattr(chunkflow, name)(chunkflow.array(data, chunks=(1, 1)), **call, axis=0)
    assert np.asarray(got).dtype == expected.dtype
    np.testing.assert_array_equal(got, expected)
