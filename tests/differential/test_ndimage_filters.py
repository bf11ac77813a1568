"""chunkflow.ndimage's filters against scipy.ndimage on the whole array, bit for bit.

Every filter, every mode (``wrap`` included), every dtype scipy takes, inputs whose
every element is drawn (NaN, ±inf, ±0 and the extremes among them), chunks of 1 and
edge chunks, the job's schedulers. Where scipy refuses (float16 in its linear filters,
complex in its order statistics), chunkflow raises the same builtin class before any
job. NaN payloads are compared as NaN (a sum of two NaNs keeps either one, as the
compiled loop orders its operands).
"""

from __future__ import annotations

import math
import tempfile
import warnings
from typing import Any

import dask
import numpy as np
from hypothesis import example, given
from hypothesis import strategies as st
from scipy import ndimage as scipy_ndimage

import chunkflow
from chunkflow import ndimage
from chunkflow.testing import strategies as cst
from tests.differential.conftest import budget
from tests.differential.pools import process_pool

MODES = ("reflect", "mirror", "nearest", "constant", "grid-constant", "wrap", "grid-wrap",
         "grid-mirror")
LINEAR = ("gaussian_filter", "gaussian_laplace", "gaussian_gradient_magnitude", "sobel",
          "prewitt", "laplace", "uniform_filter", "correlate", "convolve")
ORDER = ("median_filter", "minimum_filter", "maximum_filter", "rank_filter",
         "percentile_filter")


def _lists(draw: st.DrawFn, values: st.SearchStrategy[Any], n: int) -> list[Any]:
    return draw(st.lists(values, min_size=n, max_size=n))


def _footprint_or_size(draw: st.DrawFn, n: int) -> dict[str, Any]:
    if draw(st.booleans()):
        sides = _lists(draw, st.integers(1, 4), n)
        flat = _lists(draw, st.booleans(), math.prod(sides))
        footprint = np.array(flat, bool).reshape(sides)
        footprint.flat[draw(st.integers(0, footprint.size - 1))] = True  # never empty
        if draw(st.booleans()):
            footprint[...] = True  # a full box: scipy's separable path
        return {"footprint": footprint}
    return {"size": draw(st.integers(1, 4) | st.lists(st.integers(1, 5), min_size=n,
                                                      max_size=n))}


def _origin(draw: st.DrawFn, sides: list[int]) -> Any:
    return [draw(st.integers(-(s // 2), (s - 1) // 2)) for s in sides]


@st.composite
def filter_calls(draw: st.DrawFn, ndim: int) -> tuple[str, dict[str, Any]]:
    """A filter's name and its scipy keywords (mode and cval apart)."""
    name = draw(st.sampled_from(LINEAR + ORDER))
    n = ndim
    axes = None
    if ndim > 1 and draw(st.integers(0, 3)) == 0:
        axes = tuple(sorted(draw(st.sets(st.integers(0, ndim - 1), min_size=1))))
        n = len(axes)
    params: dict[str, Any] = {}
    if name.startswith("gaussian"):
        params["sigma"] = _lists(draw, st.floats(0, 2), n)
        params["truncate"] = draw(st.floats(0.5, 4))
        if name == "gaussian_filter":
            params["order"] = _lists(draw, st.integers(0, 2), n)
        if draw(st.booleans()):
            params["radius"] = _lists(draw, st.integers(0, 3), n)
    elif name in ("sobel", "prewitt"):
        return name, {"axis": draw(st.integers(-ndim, ndim - 1))}
    elif name == "uniform_filter":
        params["size"] = _lists(draw, st.integers(1, 5), n)
        params["origin"] = _origin(draw, params["size"])
    elif name in ("correlate", "convolve"):
        shape = _lists(draw, st.integers(1, 4), n)
        values = _lists(draw, st.integers(-3, 3) | st.floats(-2, 2, width=32), math.prod(shape))
        params["weights"] = np.array(values, float).reshape(shape)
        params["origin"] = _origin(draw, shape)
    elif name in ORDER:
        params.update(_footprint_or_size(draw, n))
        fp = params.get("footprint")
        size = params.get("size")
        sides = list(fp.shape) if fp is not None else (
            [size] * n if isinstance(size, int) else list(size))
        if draw(st.booleans()):
            params["origin"] = _origin(draw, sides)
        count = int(fp.sum()) if fp is not None else math.prod(sides)
        if name == "rank_filter":
            params["rank"] = draw(st.integers(-count, count - 1))
        elif name == "percentile_filter":
            params["percentile"] = draw(st.floats(-100, 100))
    if axes is not None and name != "laplace" or (name == "laplace" and axes is not None):
        params["axes"] = axes
    return name, params


def _mode(draw: st.DrawFn, name: str, shape: tuple[int, ...]) -> str:
    return draw(st.sampled_from(MODES))


def _longer_than_the_line(name: str, data: np.ndarray, params: dict[str, Any]) -> bool:
    """Whether scipy would run its fast 1-D rank filter with a footprint longer than
    the line: a peer bug (scipy 1.17's ``_rank_filter_1d`` reads outside the line,
    its results change from call to call, e.g. median_filter([255, 0], 4, mode=
    "mirror"); the long profile found it). chunkflow runs scipy's N-dimensional code
    there, and so does the oracle (:func:`_scipy`)."""
    if name not in ("rank_filter", "median_filter", "percentile_filter") or data.ndim != 1:
        return False
    footprint = params.get("footprint")
    length = np.shape(footprint)[0] if footprint is not None else \
        int(np.ravel(params["size"])[0])
    return length > data.shape[0]


def _same(got: np.ndarray, expected: np.ndarray) -> None:
    assert got.dtype == expected.dtype, (got.dtype, expected.dtype)
    assert got.shape == expected.shape
    if expected.dtype.kind in "fc":
        nan = np.isnan(expected)
        np.testing.assert_array_equal(np.isnan(got), nan)
        kind = {2: "u2", 4: "u4", 8: "u8", 16: "u8"}[expected.dtype.itemsize
                                                      if expected.dtype.kind == "f" else 8]
        g, e = got.copy(), expected.copy()
        g[nan], e[nan] = 0, 0
        np.testing.assert_array_equal(np.ascontiguousarray(g).view(kind),
                                      np.ascontiguousarray(e).view(kind))
    else:
        np.testing.assert_array_equal(got, expected)


def _scipy(name: str, data: np.ndarray, params: dict[str, Any], **modes: Any) -> Any:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            if _longer_than_the_line(name, data, params):
                # scipy's own call first: its refusals (a non-finite cval for an integer
                # image...) are the answer; only its values there are unreliable.
                getattr(scipy_ndimage, name)(data, **params, **modes)
                row = {k: v for k, v in params.items()
                       if k not in ("size", "footprint", "axes", "origin")}
                footprint = params.get("footprint")
                footprint = np.ones(int(np.ravel(params["size"])[0]), bool) \
                    if footprint is None else np.asarray(footprint)
                origin = int(np.ravel(params.get("origin", 0))[0])
                return getattr(scipy_ndimage, name)(data[None], **row, **modes,
                                                    footprint=footprint[None],
                                                    origin=(0, origin))[0]
            return getattr(scipy_ndimage, name)(data, **params, **modes)
        except (TypeError, ValueError, RuntimeError, OverflowError) as error:
            return error  # OverflowError: a non-finite cval for an integer or bool image


def _check(name: str, data: np.ndarray, chunks: tuple[int, ...], params: dict[str, Any],
           mode: str, cval: Any, scheduler: str, output: Any = None) -> None:
    """Compare with one chunk per block (every halo crosses chunks), as a job would."""
    extra = {"output": output} if output is not None else {}
    expected = _scipy(name, data, params, mode=mode, cval=cval, **extra)
    z = chunkflow.array(data, chunks=chunks)
    if isinstance(expected, Exception):
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                getattr(ndimage, name)(z, **params, mode=mode, cval=cval, scheduler=scheduler,
                                       blocks=(1,) * data.ndim, **extra)
        except type(expected):
            return
        raise AssertionError(f"scipy raised {expected!r}; chunkflow did not")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got = getattr(ndimage, name)(z, **params, mode=mode, cval=cval, scheduler=scheduler,
                                     blocks=(1,) * data.ndim, **extra)
    _same(np.asarray(got[...]), expected)


@st.composite
def cases(draw: st.DrawFn) -> tuple[Any, ...]:
    data = draw(cst.varied_arrays(cst.dtypes(kinds="biuf"),
                                  cst.shapes(min_dims=1, max_dims=3, zero_sides=False,
                                             max_side=9)))
    chunks = draw(cst.chunk_shapes(data.shape))
    name, params = draw(filter_calls(data.ndim))
    mode = _mode(draw, name, data.shape)
    cval = draw(st.just(0) | st.integers(-3, 300) | st.floats(-10, 10)
                | st.sampled_from([np.nan, np.inf])) if "constant" in mode else 0.0
    return data, chunks, name, params, mode, cval, draw(cst.schedulers(processes=False))


@budget(60)
@given(cases())
@example((np.array([np.nan, 1.0, 0.9, np.nan, np.nan, 0.8, 0.3, 0.1]), (2,), "minimum_filter",
          {"size": 4}, "reflect", 0.0, "sync"))  # NaN results depend on the line before
@example((np.array([0.2804087579860399, 0.48519097443163506, 0.9807371998012386,
                    0.9616571936637868, 0.7247899407735336, 0.5412268555474342,
                    0.2768912040453708, 0.16065200877512686]), (7,), "uniform_filter",
          {"size": [2]}, "reflect", 0.0, "sync"))  # a running sum: windows differ
@example((np.arange(40.0).reshape(5, 8) / 7, (2, 3), "uniform_filter", {"size": [3, 4]},
          "wrap", 0.0, "threads"))
@example((np.arange(7, dtype="u1"), (1,), "median_filter", {"size": 4}, "wrap", 0.0, "sync"))
@example((np.arange(9.0) ** 2, (1,), "correlate", {"weights": np.array([1.0, 2.0, 4.0]),
                                                   "origin": [1]}, "nearest", 0.0, "sync"))
@example((np.arange(24, dtype="i2").reshape(4, 6) ** 2, (1, 2), "rank_filter",
          {"rank": 1, "size": [1, 4], "origin": [0, -2]}, "mirror", 0.0, "sync"))
@example((np.array([255, 0], "u1"), (1,), "median_filter", {"size": 4}, "mirror", 0.0,
          "sync"))  # scipy's 1-D fast path reads outside the line (see _longer_than_the_line)
@example((np.array([3.0]), (1,), "median_filter", {"size": 3}, "mirror", 0.0, "sync"))
@example((np.arange(5.0), (2,), "percentile_filter", {"percentile": 30, "size": 9,
                                                      "origin": 1}, "wrap", 0.0, "sync"))
@example((np.array([False]), (1,), "percentile_filter",
          {"footprint": np.ones(4, bool), "percentile": 25.0}, "constant", np.inf, "sync"))
@example((np.array([False]), (1,), "percentile_filter",  # both refuse a non-finite cval
          {"footprint": np.ones(4, bool), "percentile": 25.0}, "constant", np.nan, "sync"))
def test_filter_equals_scipy(case: tuple[Any, ...]) -> None:
    data, chunks, name, params, mode, cval, scheduler = case
    _check(name, data, chunks, params, mode, cval, scheduler)


@budget(10)
@given(cst.varied_arrays(cst.dtypes(kinds="iuf"), cst.shapes(min_dims=2, max_dims=2,
                                                            zero_sides=False, max_side=9)),
       st.sampled_from(["f4", "f8", "i4"]), st.sampled_from(["gaussian_filter", "sobel",
                                                             "median_filter"]))
def test_output_dtype_and_array(data: np.ndarray, dtype: str, name: str) -> None:
    params: dict[str, Any] = {"gaussian_filter": {"sigma": 1.0}, "sobel": {},
                              "median_filter": {"size": 3}}[name]
    _check(name, data, (2, 3), params, "reflect", 0.0, "sync", output=np.dtype(dtype))
    filled = np.zeros(data.shape, dtype)
    expected = _scipy(name, data, params, output=np.zeros(data.shape, dtype))
    if isinstance(expected, Exception):
        return
    got = getattr(ndimage, name)(data, **params, output=filled)
    assert got is filled
    _same(filled, expected)


@budget(2)
@given(cst.varied_arrays(np.dtype("f4"), (7, 6)),
       st.sampled_from(["gaussian_filter", "uniform_filter", "maximum_filter"]))
def test_processes_into_folder(data: np.ndarray, name: str) -> None:
    params: dict[str, Any] = {"gaussian_filter": {"sigma": 1.5}, "uniform_filter": {"size": 3},
                              "maximum_filter": {"size": (2, 3)}}[name]
    expected = getattr(scipy_ndimage, name)(data, **params, mode="wrap")
    with tempfile.TemporaryDirectory() as folder, dask.config.set(pool=process_pool()):
        z = chunkflow.array(data, chunks=(3, 2), store=f"{folder}/in.zarr")
        got = getattr(ndimage, name)(f"{folder}/in.zarr", **params, mode="wrap",
                                     out=f"{folder}/out.zarr", temp=f"{folder}/temp.zarr",
                                     scheduler="processes")
        assert isinstance(got, chunkflow.Array) and z.shape == got.shape
        _same(got[...], expected)
