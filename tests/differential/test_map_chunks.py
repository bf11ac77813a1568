"""map_chunks with halos and every boundary mode against scipy.ndimage on the whole array.

``map_chunks(f, z, depth=d, boundary=b, mode=m, cval=k, constant_value=k)`` must give
the bits of ``f(data, mode=m, cval=k)`` for every scipy filter that computes an output
element from its footprint alone, on every dtype scipy takes, with ``m`` the boundary's
scipy spelling (:data:`~chunkflow.graph.map.halo.SCIPY_MODES`; with ``b="none"`` any of
scipy's modes but ``wrap``, which the function then applies at the array's edge itself).
Where scipy refuses (float16 in its linear filters, complex in its order statistics),
map_chunks raises the same builtin class.

NaN payloads are compared as NaN: a sum of two NaNs keeps either one, as the compiled
loop orders its operands, and scipy's lines over the whole array and over a window
take different loops.

Some scipy filters are not local, and no halo can give their bits; the data are kept to
where they are (each rule below says which scipy behaviour it avoids):

- uniform_filter keeps a running sum along each line: floats are compared to a few
  ulps of the data's magnitude and drawn finite (an inf turns the rest of scipy's line
  into NaN), 8-byte integers below 2**40 (their sums exact in float64);
- minimum/maximum filters over a full box run 1-D passes whose NaN results depend on
  the line before the footprint (as do rank filters that reduce to them, rank 0 or the
  last): NaN is drawn only for the n-D path;
- 1-D rank, median and percentile filters take a fast path (when the array is not
  shorter than half the footprint) whose NaN results depend on the line, that casts
  unsigned 64-bit values to int64 and ``cval`` to the integer type: no NaN, no uint64
  values of 2**63 or more, and integral ``cval`` for integers; and that mirrors a
  single element from memory it never set (``median_filter([127], 3, mode="mirror")``
  gives 127 or 33): no ``mirror`` for arrays of one element.
"""

from __future__ import annotations

import functools
import math
import tempfile
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import pytest
from hypothesis import example, given
from hypothesis import strategies as st
from scipy import ndimage

import chunkflow
from chunkflow.graph.map.halo import BOUNDARIES, SCIPY_MODES
from chunkflow.testing import strategies as cst
from tests.differential.conftest import budget

LINEAR = ("gaussian_filter", "gaussian_laplace", "gaussian_gradient_magnitude", "sobel",
          "prewitt", "laplace", "uniform_filter", "correlate", "convolve", "correlate1d",
          "convolve1d")
ORDER = ("median_filter", "minimum_filter", "maximum_filter", "rank_filter",
         "percentile_filter")
#: scipy's modes that the function applies itself at the array's edge (boundary="none").
OWN_MODES = ("reflect", "mirror", "nearest", "constant", "grid-constant")


@dataclass(frozen=True)
class Filter:
    """A scipy.ndimage filter: its name, parameters (mode and cval apart) and reach
    (elements it reads on each side, per axis)."""

    name: str
    params: dict[str, Any] = field(compare=False)
    reach: tuple[int, ...]

    def __call__(self, data: np.ndarray, **modes: Any) -> np.ndarray:
        return getattr(ndimage, self.name)(data, **self.params, **modes)

    @property
    def footprint(self) -> np.ndarray | None:
        """The order statistic's footprint (all of a box with ``size=``)."""
        if self.name not in ORDER:
            return None
        if "footprint" in self.params:
            return np.asarray(self.params["footprint"], bool)
        return np.ones(self.params["size"], bool)


@dataclass(frozen=True)
class MapCase:
    """One map_chunks call and its oracle's arguments."""

    spec: cst.StoredArraySpec
    filter: Filter
    boundary: str
    mode: str  # the function's own mode
    cval: Any  # the function's cval and map_chunks' constant_value
    extra_depth: int = 0
    depth_form: str = "tuple"  # how depth is spelled: "int", "tuple" or "dict"
    partial: bool = False  # the filter's arguments in a functools.partial, not kwargs
    blocks: tuple[int, ...] | None = None
    dtype: str | None = None
    out_chunks: tuple[int, ...] | None = None  # write into an array of these chunks
    per_task: int | None = None
    scheduler: str = "sync"


def _gaussian(draw: st.DrawFn, name: str, ndim: int) -> Filter:
    sigma = draw(st.lists(st.floats(0, 2), min_size=ndim, max_size=ndim))
    truncate = draw(st.floats(0.5, 4))
    params: dict[str, Any] = {"sigma": sigma, "truncate": truncate}
    reach = [int(truncate * s + 0.5) for s in sigma]  # scipy's kernel radius
    if name == "gaussian_filter":
        params["order"] = draw(st.lists(st.integers(0, 2), min_size=ndim, max_size=ndim))
        if draw(st.booleans()):  # scipy's radius= overrides truncate
            reach = draw(st.lists(st.integers(0, 3), min_size=ndim, max_size=ndim))
            params["radius"] = reach
    return Filter(name, params, tuple(reach))


def _weights(draw: st.DrawFn, ndim: int) -> np.ndarray:
    shape = draw(st.lists(st.integers(1, 4), min_size=ndim, max_size=ndim))
    values = draw(st.lists(st.integers(-3, 3) | st.floats(-2, 2, width=32),
                           min_size=math.prod(shape), max_size=math.prod(shape)))
    return np.array(values, float).reshape(shape)


def _order_statistic(draw: st.DrawFn, name: str, ndim: int) -> Filter:
    params: dict[str, Any] = {}
    if draw(st.booleans()):
        sides = draw(st.lists(st.integers(1, 4), min_size=ndim, max_size=ndim))
        footprint = np.array(draw(st.lists(st.booleans(), min_size=math.prod(sides),
                                           max_size=math.prod(sides))), bool).reshape(sides)
        footprint.flat[draw(st.integers(0, footprint.size - 1))] = True  # never empty
        params["footprint"] = footprint
        count = int(footprint.sum())
    else:
        sides = draw(st.lists(st.integers(1, 5), min_size=ndim, max_size=ndim))
        params["size"] = sides
        count = math.prod(sides)
    if name == "rank_filter":
        params["rank"] = draw(st.integers(-count, count - 1))
    elif name == "percentile_filter":
        params["percentile"] = draw(st.floats(-100, 100))
    return Filter(name, params, tuple(s // 2 for s in sides))


@st.composite
def filters(draw: st.DrawFn, ndim: int) -> Filter:
    """Any filter of :data:`LINEAR` and :data:`ORDER`, its parameters drawn."""
    name = draw(st.sampled_from(LINEAR + ORDER))
    if name.startswith("gaussian"):
        return _gaussian(draw, name, ndim)
    if name in ("sobel", "prewitt"):
        return Filter(name, {"axis": draw(st.integers(-ndim, ndim - 1))}, (1,) * ndim)
    if name == "laplace":
        return Filter(name, {}, (1,) * ndim)
    if name == "uniform_filter":
        size = draw(st.lists(st.integers(1, 5), min_size=ndim, max_size=ndim))
        return Filter(name, {"size": size}, tuple(s // 2 for s in size))
    if name in ("correlate", "convolve"):
        weights = _weights(draw, ndim)
        return Filter(name, {"weights": weights}, tuple(s // 2 for s in weights.shape))
    if name in ("correlate1d", "convolve1d"):
        weights = _weights(draw, 1)
        axis = draw(st.integers(-ndim, ndim - 1))
        reach = [0] * ndim
        reach[axis] = len(weights) // 2
        return Filter(name, {"weights": weights, "axis": axis}, tuple(reach))
    return _order_statistic(draw, name, ndim)


def _out_dtype(source: np.dtype) -> st.SearchStrategy[str | None]:
    """``dtype=``: none (the source's), or one every result casts to (same_kind)."""
    return st.sampled_from([None, "c16" if source.kind == "c" else "f8"])


@st.composite
def map_cases(draw: st.DrawFn, *, processes: bool = False) -> MapCase:
    """A map_chunks call: stored array, filter, boundary, depth, blocks, output, scheduler
    (``processes``: only that one)."""
    # Every element drawn: a halo or padding that is off by one shows in the results.
    spec = draw(cst.stored_arrays(data=cst.varied_arrays(
        cst.dtypes(kinds="biufc", byteorder="any"),
        cst.shapes(min_dims=1, max_dims=3, zero_sides=False))))
    ndim = spec.data.ndim
    flt = draw(filters(ndim))
    boundary = draw(st.sampled_from(BOUNDARIES))
    mode = draw(st.sampled_from(OWN_MODES)) if boundary == "none" else SCIPY_MODES[boundary]
    if mode == "mirror" and flt.name in ORDER and spec.data.shape == (1,):
        mode = "reflect"  # scipy's 1-D rank filters mirror one element from unset memory
    cval: Any = 0
    if "constant" in mode or boundary == "constant":
        cval = draw(st.just(0) | st.integers(-3, 300) | st.floats(-10, 10)
                    | st.sampled_from([np.nan, np.inf]))
    write = draw(st.booleans())
    return MapCase(
        spec, flt, boundary, mode, cval,
        extra_depth=draw(st.integers(0, 2)),
        depth_form=draw(st.sampled_from(["tuple", "int", "dict"])),
        partial=draw(st.booleans()),
        blocks=draw(st.none() | st.tuples(*[st.integers(1, 3)] * ndim)),
        dtype=draw(_out_dtype(spec.data.dtype)),
        out_chunks=draw(cst.chunk_shapes(spec.data.shape)) if write else None,
        per_task=draw(st.none() | st.integers(1, 3)) if write else None,
        scheduler="processes" if processes else draw(cst.schedulers(processes=False)),
    )


def _exact_domain(case: MapCase) -> tuple[np.ndarray, Any]:
    """The data (and cval) kept to where scipy's filter is local (see the module)."""
    data = case.spec.data.copy()
    native = data.dtype.newbyteorder("=")
    flt, cval = case.filter, case.cval
    if flt.name == "uniform_filter":
        if native.kind in "fc":
            data[~np.isfinite(data)] = 0
            data[np.abs(data) > 1e3] = 0.5  # sums of finite values stay finite
        elif native.kind in "iu" and native.itemsize == 8:
            data = data // 2**24
    footprint = flt.footprint
    if footprint is not None:
        one_d = data.ndim == 1 and flt.name not in ("minimum_filter", "maximum_filter")
        count = int(footprint.sum())
        rank = {"minimum_filter": 0, "maximum_filter": count - 1, "median_filter": count // 2,
                "rank_filter": flt.params.get("rank", 0) % count}.get(flt.name)
        pct = flt.params.get("percentile")
        if pct is not None:
            pct = pct + 100 if pct < 0 else pct
            rank = count - 1 if pct == 100 else int(count * pct / 100)
        separable = footprint.all() and rank in (0, count - 1)
        if native.kind == "f" and (separable or one_d):
            data[np.isnan(data)] = 0
        if one_d and native.kind == "u" and native.itemsize == 8:
            data[data >= 2**63] = 2**63 - 1
        if one_d and native.kind in "biu" and isinstance(cval, float):
            cval = float(math.trunc(cval)) if math.isfinite(cval) else 0
    return data, cval


def _depth(case: MapCase) -> Any:
    per_axis = tuple(r + case.extra_depth for r in case.filter.reach)
    if case.depth_form == "int":
        return max(per_axis)
    if case.depth_form == "dict":
        return dict(enumerate(per_axis))
    return per_axis


def _expected(case: MapCase, data: np.ndarray, cval: Any) -> tuple[np.ndarray | None, type | None]:
    """scipy on the whole array, cast to the result's dtype, or the class it raises."""
    modes = {"mode": case.mode, "cval": cval}
    try:
        want = case.filter(data, **modes)
    except (RuntimeError, TypeError, ValueError) as error:
        return None, type(error)
    dtype = np.dtype(case.dtype) if case.dtype is not None else data.dtype
    return want.astype(dtype), None


def _run(case: MapCase, source: chunkflow.Array, cval: Any, store: Any = None) -> np.ndarray:
    modes = {"mode": case.mode, "cval": cval}
    if case.partial:
        func: Any = functools.partial(getattr(ndimage, case.filter.name), **case.filter.params,
                                      **modes)
        kwargs: dict[str, Any] = {}
    else:
        func, kwargs = getattr(ndimage, case.filter.name), {**case.filter.params, **modes}
    common = dict(depth=_depth(case), boundary=case.boundary, constant_value=cval,
                  dtype=case.dtype, blocks=case.blocks, scheduler=case.scheduler, **kwargs)
    if case.out_chunks is None:
        lazy = chunkflow.map_chunks(func, source, **common)
        return lazy.compute(scheduler=case.scheduler)
    dtype = case.dtype if case.dtype is not None else source.dtype
    out = chunkflow.create(source.shape, chunks=case.out_chunks, dtype=dtype, store=store)
    chunkflow.map_chunks(func, source, out=out, blocks_per_task=case.per_task, **common)
    return out[...]


def _bits(values: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(values).view(np.uint8)


def _same_bits(got: np.ndarray, want: np.ndarray) -> None:
    """Bit for bit, but for NaN payloads: a sum of two NaNs is either one, as the
    compiled loop orders its operands (scipy's whole-array and window lines differ)."""
    if want.dtype.kind in "fc":
        nan = np.isnan(want)
        np.testing.assert_array_equal(np.isnan(got), nan)
        got, want = got[~nan], want[~nan]
    np.testing.assert_array_equal(_bits(got), _bits(want))


def _check(case: MapCase, store: Any = None, out_store: Any = None) -> None:
    data, cval = _exact_domain(case)
    source = replace(case.spec, data=data).create(store)
    # What the array holds: a chunk of NaN is not stored where the fill value is a NaN
    # of another payload (zarr-python's rule too), and reads as the fill value.
    data = source[...]
    want, refusal = _expected(case, data, cval)
    if refusal is not None:
        with pytest.raises(refusal):
            _run(case, source, cval, out_store)
        return
    assert want is not None
    got = _run(case, source, cval, out_store)
    # A Zarr v3 output keeps its byte order in the bytes codec: it reads in native order.
    assert got.dtype.newbyteorder("=") == want.dtype.newbyteorder("=")
    assert got.shape == want.shape
    want = want.astype(got.dtype)
    if case.filter.name == "uniform_filter" and data.dtype.kind in "fc":
        # A running sum: a few ulps of the largest value (of the output's precision).
        scale = max(float(np.abs(data).max(initial=0)), 1.0)
        eps = np.finfo(want.real.dtype if want.dtype.kind == "c" else want.dtype).eps
        np.testing.assert_allclose(got, want, rtol=0, atol=64 * eps * scale)
        return
    if case.filter.name in ORDER and want.dtype.kind == "f":
        # An order statistic picks one of equal values, and -0.0 == 0.0: which zero
        # scipy returns depends on the length of the line it sorts (median_filter of
        # [0, 0, 0, -0.0] ends in +0.0 on the whole array, -0.0 on its last two).
        got, want = got + want.dtype.type(0), want + want.dtype.type(0)  # -0.0 + 0 is +0.0
    _same_bits(got, want)


def _spec(data: Any, chunks: tuple[int, ...], **kwargs: Any) -> cst.StoredArraySpec:
    return cst.StoredArraySpec(np.asarray(data), chunks, **kwargs)


_U8 = np.random.default_rng(8).integers(0, 256, (9, 7)).astype("u1")
_INF_NAN = np.zeros((5, 5, 6), "f4")
_INF_NAN[4, 4, 4:] = np.inf, np.nan


@budget(200)
@given(case=map_cases())
# Found by the long profile: which zero scipy's median of {0, -0.0} returns depends on
# the length of the array it filters.
@example(case=MapCase(_spec(np.array([0.0, 0.0, 0.0, -0.0], "f2"), (1,), zarr_format=2),
                      Filter("median_filter", {"size": [3]}, (1,)), "reflect", "reflect", 0))
# Issue 34, defect 8: uint8 Gaussian with boundary="constant" was off by one at the
# borders (the halo held the filtered constant where scipy pads each pass with cval).
@example(case=MapCase(_spec(_U8, (4, 3)), Filter("gaussian_filter", {"sigma": 1.0}, (4, 4)),
                      "constant", "constant", 0))
@example(case=MapCase(_spec(_U8, (2, 5)), Filter("sobel", {"axis": 0}, (1, 1)),
                      "constant", "constant", 7, partial=True))
@example(case=MapCase(_spec(_U8.astype("f4"), (4, 4)),
                      Filter("gaussian_laplace", {"sigma": 0.7}, (3, 3)),
                      "constant", "constant", 2.5, out_chunks=(3, 2), per_task=2))
# inf beside NaN: -inf + inf gives the default NaN, added to the input's NaN; which
# payload a sum of two NaNs keeps depends on the loop (NaN compared as NaN).
@example(case=MapCase(_spec(_INF_NAN, (1, 1, 1)), Filter("laplace", {}, (1, 1, 1)),
                      "reflect", "reflect", 0))
def test_map_chunks_equals_scipy_on_the_whole_array(case: MapCase) -> None:
    _check(case)


@budget(1)
@given(case=map_cases(processes=True))
def test_map_chunks_on_processes_equals_scipy(case: MapCase) -> None:
    with tempfile.TemporaryDirectory() as folder:
        _check(case, f"{folder}/source.zarr", f"{folder}/out.zarr")


@budget(15)
@given(spec=cst.stored_arrays(dtypes=cst.dtypes(codes=[c for c in cst.DTYPE_CODES["i"]
                                                     + cst.DTYPE_CODES["u"] + ("f4", "f8")]),
                              shapes=cst.shapes(min_dims=1, max_dims=3, zero_sides=False)),
       mode=st.sampled_from(["reflect", "nearest", "mirror"]), cval=st.integers(0, 9),
       sigma=st.floats(0.3, 1.5))
def test_constant_boundary_pads_the_input_once_for_other_modes(
        spec: cst.StoredArraySpec, mode: str, cval: int, sigma: float) -> None:
    """A function that does not pad with the constant itself sees the padded window:
    the result is scipy's on the array padded with ``constant_value`` (dask's meaning)."""
    data = spec.data.copy()
    if data.dtype.kind == "f":
        data[~np.isfinite(data)] = 0
    depth = int(4 * sigma + 0.5)
    z = replace(spec, data=data).create()
    data = z[...]
    got = chunkflow.map_chunks(ndimage.gaussian_filter, z, depth=depth, boundary="constant",
                               constant_value=cval, sigma=sigma, mode=mode).compute()
    padded = np.pad(data, depth, mode="constant", constant_values=cval)
    want = ndimage.gaussian_filter(padded, sigma, mode=mode)[(slice(depth, -depth),) * data.ndim]
    _same_bits(got, want.astype(data.dtype))
