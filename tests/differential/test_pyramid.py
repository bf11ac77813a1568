"""chunkflow.pyramid against numpy (and scipy) downsampling of each whole level.

Each level is computed here from the level before it, on the whole image, as the
methods are documented (:mod:`chunkflow.graph.pyramid.downsample`):

- ``nearest``: ``level[::f]``, bit for bit;
- ``mean``: integers exactly (Python integers, rounded half to even), floats summed in
  float64 one window axis after the other and cast back, bit for bit;
- ``max``: the window's largest value, NaN if any (compared as values: which of -0.0
  and 0.0 is the largest depends on the order of the comparisons);
- ``mode``: the most frequent value (NaN equal to NaN, NaT to NaT, as ``numpy.unique``
  counts),
  the smallest (numpy's order, NaN last) on a tie, compared as values;
- ``gaussian``: ``scipy.ndimage.gaussian_filter`` (sigma ``f / 3``, reflect, truncate 4)
  of the level in float64, ``[::f]``, integers rounded half to even and clipped to the
  dtype's range, bit for bit.

NaN payloads are compared as NaN: the sum of two NaNs is either one (the hardware
picks), and a chunk of NaN equal to a NaN fill value reads as the fill value.

Level shapes are ``ceil(n / f)`` per level, as many levels as asked or until every
downsampled axis fits in one chunk; the NGFF ``multiscales`` lists one dataset per level
with a scale of ``scale * f**k`` and a translation of ``scale * (f**k - 1) / 2`` for the
window methods (a pixel at its window's center), 0 for the sampling ones.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest
from hypothesis import example, given
from hypothesis import strategies as st
from scipy import ndimage

import chunkflow
from chunkflow.testing import strategies as cst
from tests.differential.conftest import budget

#: The dtypes each method takes (mean, max and gaussian need numbers).
METHOD_KINDS = {"mean": "biuf", "max": "biuf", "gaussian": "biuf", "nearest": "biufcmMUS",
                "mode": "biufcmMUS"}
SPACE = {2: "yx", 3: "zyx", 4: "czyx"}


@dataclass(frozen=True)
class PyramidCase:
    """One pyramid call."""

    spec: cst.StoredArraySpec
    method: str
    factors: Any  # as pyramid takes them
    levels: int | None = None
    chunks: tuple[int, ...] | None = None
    zarr_format: int | None = None
    scale: tuple[float, ...] | None = None
    scheduler: str = "sync"

    @property
    def per_axis(self) -> tuple[int, ...]:
        """The factor of every axis (the channel axis of czyx keeps 1 for an int)."""
        axes = SPACE[self.spec.data.ndim]
        if isinstance(self.factors, int):
            return tuple(1 if a == "c" else self.factors for a in axes)
        if isinstance(self.factors, dict):
            return tuple(self.factors.get(a, 1 if a == "c" else 2) for a in axes)
        return tuple(self.factors)


@st.composite
def pyramid_cases(draw: st.DrawFn, method: str | None = None) -> PyramidCase:
    """A pyramid call (``method``: that one, else any)."""
    method = method or draw(st.sampled_from(sorted(METHOD_KINDS)))
    ndim = draw(st.integers(2, 4))
    # Every element drawn, so that windows differ.
    spec = draw(cst.stored_arrays(data=cst.varied_arrays(
        cst.dtypes(kinds=METHOD_KINDS[method], byteorder="any"),
        cst.shapes(min_dims=ndim, max_dims=ndim, max_side={2: 13, 3: 7, 4: 4}[ndim]))))
    ndim = spec.data.ndim
    axes = SPACE[ndim]
    form = draw(st.sampled_from(["int", "tuple", "dict"]))
    if form == "int":
        factors: Any = draw(st.integers(2, 3))
    elif form == "tuple":
        factors = tuple(draw(st.lists(st.integers(1, 3), min_size=ndim, max_size=ndim)
                             .filter(lambda f: max(f) > 1)))
    else:
        factors = {a: draw(st.integers(1, 3)) for a in draw(st.sets(st.sampled_from(axes)))}
        if all(f == 1 for f in [factors.get(a, 1 if a == "c" else 2) for a in axes]):
            factors[axes[-1]] = 2
    chunks = draw(cst.chunk_shapes(spec.data.shape)) if draw(st.booleans()) else None
    scale = (tuple(draw(st.lists(st.floats(0.1, 10), min_size=ndim, max_size=ndim)))
             if draw(st.booleans()) else None)
    return PyramidCase(spec, method, factors, draw(st.none() | st.integers(1, 4)), chunks,
                       draw(st.sampled_from([None, 2, 3])), scale,
                       draw(cst.schedulers(processes=False)))


# ----------------------------------------------------------------- the reference


def _windows(level: np.ndarray, factors: tuple[int, ...]) -> list[tuple[np.ndarray, tuple[int, ...]]]:
    """(window, output index) of every output element, windows cut at the end."""
    out_shape = [-(-n // f) for n, f in zip(level.shape, factors)]
    return [(level[tuple(slice(i * f, (i + 1) * f) for i, f in zip(index, factors))], index)
            for index in itertools.product(*(range(n) for n in out_shape))]


def _round_half_even(total: int, count: int) -> int:
    quotient, remainder = divmod(total, count)
    if 2 * remainder > count or (2 * remainder == count and quotient % 2):
        quotient += 1
    return quotient


def _mean(level: np.ndarray, factors: tuple[int, ...]) -> np.ndarray:
    out_shape = tuple(-(-n // f) for n, f in zip(level.shape, factors))
    if level.dtype.kind in "biu":
        out = np.empty(out_shape, level.dtype)
        for window, index in _windows(level, factors):
            total = sum(int(v) for v in window.flat)
            out[index] = _round_half_even(total, window.size)
        return out
    # Floats: float64 sums over whole windows (partial ones padded with 0), one window
    # axis after the other, each in order.
    total = np.pad(level.astype(np.float64), [(0, -n % f) for n, f in zip(level.shape, factors)])
    for axis, f in enumerate(factors):
        parts = [total[(slice(None),) * axis + (slice(j, None, f),)] for j in range(f)]
        total = parts[0].copy()
        for part in parts[1:]:
            total += part
    counts = np.ones(out_shape, np.int64)
    for window, index in _windows(level, factors):
        counts[index] = window.size
    with np.errstate(invalid="ignore", over="ignore"):
        return (total / counts).astype(level.dtype)


def _max(level: np.ndarray, factors: tuple[int, ...]) -> np.ndarray:
    out = np.empty(tuple(-(-n // f) for n, f in zip(level.shape, factors)), level.dtype)
    for window, index in _windows(level, factors):
        out[index] = window.max()  # NaN when the window holds one
    return out


def _mode(level: np.ndarray, factors: tuple[int, ...]) -> np.ndarray:
    out = np.empty(tuple(-(-n // f) for n, f in zip(level.shape, factors)), level.dtype)
    for window, index in _windows(level, factors):
        values, counts = np.unique(window, return_counts=True)  # NaN last, counted together
        out[index] = values[np.argmax(counts)]  # the first (smallest) of the most frequent
    return out


def _cast(values: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """float64 as ``dtype``: integers rounded half to even and clipped to its range."""
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        rounded = np.rint(values)
        out = np.empty(values.shape, dtype)
        for index, value in np.ndenumerate(rounded):
            out[index] = min(max(int(value), int(info.min)), int(info.max))
        return out
    if dtype.kind == "b":
        return np.rint(values).astype(dtype)
    return values.astype(dtype)


def next_level(level: np.ndarray, factors: tuple[int, ...], method: str) -> np.ndarray:
    """One level coarser, from the whole level before it."""
    if method == "nearest":
        return level[tuple(slice(None, None, f) for f in factors)]
    if method == "mean":
        return _mean(level, factors)
    if method == "max":
        return _max(level, factors)
    if method == "mode":
        return _mode(level, factors)
    sigma = [2.0 * f / 6.0 if f > 1 else 0.0 for f in factors]
    smooth = ndimage.gaussian_filter(level.astype(np.float64), sigma, mode="reflect",
                                     truncate=4.0)
    return _cast(smooth[tuple(slice(None, None, f) for f in factors)], level.dtype)


def _natural_levels(shape: tuple[int, ...], chunks: tuple[int, ...],
                    factors: tuple[int, ...]) -> int:
    count = 1
    while any(n > c for n, c, f in zip(shape, chunks, factors) if f > 1):
        shape = tuple(-(-n // f) for n, f in zip(shape, factors))
        count += 1
    return count


# ----------------------------------------------------------------- comparisons


def _same_values(got: np.ndarray, want: np.ndarray) -> None:
    """Equal as values: NaN equals NaN (NaT equals NaT), -0.0 equals 0.0."""
    if want.dtype.kind in "fcmM":
        np.testing.assert_array_equal(got, want)  # NaN (NaT) at the same places, else ==
    else:
        assert (got == want).all(), (got, want)


def _same_bits(got: np.ndarray, want: np.ndarray) -> None:
    """Bit for bit, but for NaN payloads (the sum of two NaNs is either one, as the
    hardware picks)."""
    if want.dtype.kind in "fc":
        nan = np.isnan(want)
        np.testing.assert_array_equal(np.isnan(got), nan)
        got, want = got[~nan], want[~nan]
    np.testing.assert_array_equal(np.ascontiguousarray(got).view(np.uint8),
                                  np.ascontiguousarray(want).view(np.uint8))


def _multiscale(group: chunkflow.Group) -> dict[str, Any]:
    attrs = group.attrs.asdict() if hasattr(group.attrs, "asdict") else dict(group.attrs)
    return (attrs["ome"] if "ome" in attrs else attrs)["multiscales"][0]


def _check_metadata(case: PyramidCase, group: chunkflow.Group, shapes: list[tuple[int, ...]]) -> None:
    multiscale = _multiscale(group)
    axes = SPACE[case.spec.data.ndim]
    assert [a["name"] for a in multiscale["axes"]] == list(axes)
    datasets = multiscale["datasets"]
    assert [d["path"] for d in datasets] == [str(k) for k in range(len(shapes))]
    base = case.scale or (1.0,) * len(axes)
    centered = case.method in ("mean", "max", "mode")
    for k, (dataset, shape) in enumerate(zip(datasets, shapes)):
        assert group[dataset["path"]].shape == shape
        transforms = {t["type"]: t for t in dataset["coordinateTransformations"]}
        for axis, (s, f) in enumerate(zip(base, case.per_axis)):
            assert math.isclose(transforms["scale"]["scale"][axis], s * f**k, rel_tol=1e-12)
            translation = s * (f**k - 1) / 2 if centered else 0.0
            assert math.isclose(transforms["translation"]["translation"][axis], translation,
                                rel_tol=1e-12, abs_tol=1e-12)


def _check(case: PyramidCase) -> None:
    source = case.spec.create()
    data = source[...]  # what the array holds (a chunk of NaN equal to the fill reads as it)
    factors = case.per_axis
    chunks = case.chunks or source.chunks
    count = case.levels or _natural_levels(data.shape, chunks, factors)
    want = [data]
    for _ in range(count - 1):
        want.append(next_level(want[-1], factors, case.method))
    shapes = [w.shape for w in want]
    if case.levels is not None and len(shapes) > 1 and shapes[-2] == shapes[-1]:
        try:
            chunkflow.pyramid(source, chunkflow.MemoryStore(), levels=case.levels,
                              factors=case.factors, method=case.method, chunks=case.chunks)
        except chunkflow.errors.PyramidError as refusal:
            assert "goes past the smallest image" in str(refusal)
            return
        raise AssertionError("levels past the smallest image were not refused")
    out = chunkflow.MemoryStore()
    levels = chunkflow.pyramid(source, out, levels=case.levels, factors=case.factors,
                               method=case.method, chunks=case.chunks,
                               zarr_format=case.zarr_format, scale=case.scale,
                               scheduler=case.scheduler)
    assert len(levels) == count
    group = chunkflow.open_group(out, mode="r")
    _check_metadata(case, group, shapes)
    for k, (level, expected) in enumerate(zip(levels, want)):
        got = group[str(k)][...]
        assert got.shape == expected.shape == level.shape, k
        assert level.path == group[str(k)].path
        assert got.dtype.newbyteorder("=") == expected.dtype.newbyteorder("=")
        expected = expected.astype(got.dtype)
        if case.method in ("max", "mode"):
            _same_values(got, expected)
        else:
            _same_bits(got, expected)


@pytest.mark.parametrize("method", sorted(METHOD_KINDS))
@budget(12)
@given(data=st.data())
def test_each_method_equals_numpy_downsampling(method: str, data: st.DataObject) -> None:
    _check(data.draw(pyramid_cases(method), label="case"))


@budget(20)
@given(case=pyramid_cases())
# Odd sizes, partial windows, a factor of 3 on one axis; int64 at its extremes.
@example(case=PyramidCase(cst.StoredArraySpec(np.arange(7 * 5, dtype="u1").reshape(7, 5),
                                              (2, 3)), "mean", (3, 2), levels=3))
@example(case=PyramidCase(cst.StoredArraySpec(
    np.full((5, 6), np.iinfo("i8").max, dtype="i8"), (2, 2)), "gaussian", 2, levels=2))
@example(case=PyramidCase(cst.StoredArraySpec(
    np.array([[np.nan, np.nan, 1, 2, 2, 1], [3, 3, 0, 0, -0.0, 5]], "f4"), (1, 4)), "mode", (1, 3),
    levels=2))
@example(case=PyramidCase(cst.StoredArraySpec(
    np.array([["NaT", "NaT", 1, 2, "NaT", 2]], "M8[s]"), (1, 2)), "mode", (1, 3), levels=2))
def test_pyramid_levels_equal_numpy_downsampling(case: PyramidCase) -> None:
    _check(case)


# ----------------------------------------------------------------- time, channels, labels

TIMED = {3: "tyx", 4: "tcyx", 5: "tczyx"}


@st.composite
def timed_cases(draw: st.DrawFn) -> tuple[Any, ...]:
    """An image with time (and channels), factors as an int or by name, a level-0
    scale and translation by axis, and a label image of its space axes."""
    ndim = draw(st.integers(3, 5))
    axes = TIMED[ndim]
    data = draw(cst.varied_arrays(cst.dtypes(kinds="iu"), cst.shapes(
        min_dims=ndim, max_dims=ndim, zero_sides=False, max_side={3: 9, 4: 7, 5: 5}[ndim])))
    chunks = draw(cst.chunk_shapes(data.shape))
    factors: Any = draw(st.integers(2, 3) | st.fixed_dictionaries(
        {}, optional={a: st.integers(1, 3) for a in axes if a in "zyx"}).filter(
        lambda f: any(v > 1 for v in f.values()) or len(f) < len([a for a in axes if a in "zyx"])))
    finite = st.floats(-1e3, 1e3, allow_nan=False)
    scale = {a: draw(st.floats(0.01, 100)) for a in axes}
    translation = {a: draw(finite) for a in axes}
    return (data, chunks, axes, factors, scale, translation, draw(st.sampled_from([2, 3])),
            draw(st.sampled_from(["mean", "nearest"])))


def _level_transforms(group: chunkflow.Group) -> list[dict[str, list[float]]]:
    return [{t["type"]: t[t["type"]] for t in d["coordinateTransformations"]}
            for d in _multiscale(group)["datasets"]]


@budget(8)
@given(case=timed_cases())
@example(case=(np.arange(2 * 3 * 4 * 6, dtype="u1").reshape(2, 3, 4, 6), (1, 2, 3, 4), "tcyx",
               2, {"t": 1.0, "c": 1.0, "y": 0.65, "x": 0.65},
               {"t": 0.0, "c": 0.0, "y": 10.0, "x": -5.0}, 2, "mean"))
def test_time_and_channels_are_kept_and_labels_overlay_the_image(case: tuple[Any, ...]) -> None:
    data, chunks, axes, factors, scale, translation, zarr_format, method = case
    per_axis = tuple(1 if a in "tc" else (factors if isinstance(factors, int)
                                          else factors.get(a, 2)) for a in axes)
    out = chunkflow.MemoryStore()
    source = chunkflow.array(data, chunks=chunks, zarr_format=zarr_format)
    levels = chunkflow.pyramid(source, out, axes=axes, factors=factors, method=method,
                               scale=scale, translation=translation)
    # Each (t, c) plane is a pyramid of its own: numpy's downsampling of that plane.
    leading = axes.index("y") - (1 if "z" in axes else 0)
    space = per_axis[leading:]
    for index in np.ndindex(*data.shape[:leading]):
        want = [data[index]]
        for _ in range(len(levels) - 1):
            want.append(next_level(want[-1], space, method))
        for level, expected in zip(levels, want):
            assert level.shape[:leading] == data.shape[:leading]
            _same_bits(level[index], expected)
    # The label image of the space axes sits where the image's levels sit.
    labels = data[(0,) * leading].astype("u4")
    chunkflow.pyramid(chunkflow.array(labels, chunks=chunks[leading:]), out, labels="cells",
                      factors=factors)
    image = chunkflow.open_group(out, mode="r")
    cells = chunkflow.open_group(out, mode="r", path="labels/cells")
    assert [a["name"] for a in _multiscale(cells)["axes"]] == list(axes[leading:])
    centered = method == "mean"
    image_transforms, label_transforms = _level_transforms(image), _level_transforms(cells)
    for k, found in enumerate(image_transforms):
        for d, a in enumerate(axes):
            f = per_axis[d]
            assert math.isclose(found["scale"][d], scale[a] * f**k, rel_tol=1e-12)
            shift = translation[a] + (scale[a] * (f**k - 1) / 2 if centered else 0.0)
            assert math.isclose(found["translation"][d], shift, rel_tol=1e-9, abs_tol=1e-9)
    for k, found in enumerate(label_transforms[:len(image_transforms)]):
        # Labels use mode, a window method like mean: centred as the image's mean levels.
        for d, a in enumerate(axes[leading:]):
            f = per_axis[leading + d]
            assert math.isclose(found["scale"][d], scale[a] * f**k, rel_tol=1e-12)
            shift = translation[a] + scale[a] * (f**k - 1) / 2
            assert math.isclose(found["translation"][d], shift, rel_tol=1e-9, abs_tol=1e-9)
