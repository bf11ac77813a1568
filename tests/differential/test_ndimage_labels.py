"""chunkflow.ndimage's label, find_objects and label statistics against scipy.ndimage.

Labels are scipy's bit for bit (numbering and dtype); bounding boxes, counts,
integer sums, minima, maxima and histograms are exact; float sums, means, variances and
centres of mass are rounded in another order than scipy's, and are compared to a few
roundings of the magnitudes summed. Positions are scipy's where scipy's are unique (one
group; or a voxel holding the same value where ties make scipy's sort choose).
Results have scipy's types: numpy scalars, arrays, tuples and lists of tuples.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
from hypothesis import assume, example, given
from hypothesis import strategies as st
from scipy import ndimage as scipy_ndimage

import chunkflow
from chunkflow import ndimage
from chunkflow.testing import strategies as cst
from tests.differential.conftest import budget

SHAPES = cst.shapes(min_dims=1, max_dims=3, zero_sides=False, max_side=9)
STATISTICS = ("sum_labels", "sum", "mean", "variance", "standard_deviation", "minimum",
              "maximum", "minimum_position", "maximum_position", "extrema", "center_of_mass",
              "histogram", "median")


@budget(20)
@given(cst.binary_images(shapes=SHAPES), st.data())
@example(np.array([[1, 0, 1], [1, 1, 1]], bool), None)
def test_label_equals_scipy(image: np.ndarray, data: Any) -> None:
    structure = data.draw(st.none() | cst.structures(image.ndim)) if data else None
    chunks = data.draw(cst.chunk_shapes(image.shape)) if data else (1, 1)
    output = data.draw(st.sampled_from([None, "u2", "i8"])) if data else None
    expected, count = scipy_ndimage.label(image, structure, output)
    got, n = ndimage.label(chunkflow.array(image, chunks=chunks), structure, output,
                           blocks=(1,) * image.ndim,
                           scheduler=data.draw(cst.schedulers(processes=False)) if data else None)
    assert n == count and got.dtype == expected.dtype
    np.testing.assert_array_equal(got[...], expected)


@budget(15)
@given(cst.label_images(shapes=SHAPES), st.integers(-1, 8), st.data())
def test_find_objects_equals_scipy(labels: np.ndarray, max_label: int, data: Any) -> None:
    assume(labels.dtype.kind != "b" or max_label > 0)
    labels = labels.astype(labels.dtype.newbyteorder("="))
    # scipy's answer has a slot per label value up to the largest: label values of 10**9
    # took the oracle to 23.6 GB (killed by the kernel in the long profile) before the
    # length check below could run.
    top = max_label if max_label >= 1 else int(labels.max(initial=0))
    assume(top < 10_000)
    try:
        expected = scipy_ndimage.find_objects(labels, max_label)
    except (MemoryError, ValueError, OverflowError):  # labels of 2**62 and more
        assume(False)
    assume(len(expected) < 10_000)
    z = chunkflow.array(labels, chunks=data.draw(cst.chunk_shapes(labels.shape)))
    assert ndimage.find_objects(z, max_label) == expected


def _index(draw: st.DrawFn, labels: np.ndarray) -> Any:
    present = np.unique(labels).tolist()
    values = st.sampled_from(present) | st.integers(-2, 9)
    return draw(st.none() | values | st.lists(values, min_size=1, max_size=5)
                | st.lists(values, min_size=1, max_size=4).map(np.array))


@st.composite
def statistic_cases(draw: st.DrawFn) -> tuple[Any, ...]:
    labels = draw(cst.label_images(shapes=SHAPES, dtypes=cst.dtypes(kinds="iu")))
    labels = labels.astype(labels.dtype.newbyteorder("="))
    image = draw(cst.intensity_images(labels.shape, dtypes=cst.dtypes(kinds="biuf")))
    image = image.astype(image.dtype.newbyteorder("="))
    name = draw(st.sampled_from(STATISTICS))
    with_labels = draw(st.integers(0, 5)) > 0
    index = _index(draw, labels) if with_labels else None
    return (name, image, labels if with_labels else None, index,
            draw(cst.chunk_shapes(labels.shape)), draw(cst.schedulers(processes=False)))


def _scipy(name: str, image: np.ndarray, labels: Any, index: Any) -> Any:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if name == "histogram":
            return scipy_ndimage.histogram(image, -50, 200, 7, labels, index)
        return getattr(scipy_ndimage, name)(image, labels, index)


def _ours(name: str, image: Any, labels: Any, index: Any, scheduler: str) -> Any:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if name == "histogram":
            return ndimage.histogram(image, -50, 200, 7, labels, index, scheduler=scheduler)
        return getattr(ndimage, name)(image, labels, index, scheduler=scheduler)


def _tolerance(name: str, image: np.ndarray) -> float:
    """A few roundings of the magnitudes a float statistic sums (0 for exact ones)."""
    finite = np.abs(image[np.isfinite(image)].astype(np.float64)) if image.size else np.zeros(0)
    rounded = ("variance", "standard_deviation", "center_of_mass")
    if not finite.size or (image.dtype.kind != "f" and name not in rounded):
        return 0.0  # integer sums and means are exact
    eps = float(np.finfo(np.float64).eps)
    if image.dtype.kind == "f":
        eps = max(eps, float(np.finfo(image.dtype).eps))
    big = float(finite.max())
    scale = {"variance": big * big, "standard_deviation": big}.get(name, big)
    return 8 * (image.size + 1) * eps * scale * image.size


def _same_value(got: Any, expected: Any, tolerance: float) -> None:
    g, e = np.asarray(got), np.asarray(expected)
    assert g.shape == e.shape and g.dtype == e.dtype, (got, expected)
    if e.dtype.kind in "fc":
        np.testing.assert_array_equal(np.isnan(g), np.isnan(e))
        both = ~np.isnan(e)
        if tolerance:
            np.testing.assert_allclose(g[both], e[both], rtol=0, atol=tolerance)
        else:
            np.testing.assert_array_equal(g[both], e[both])
    else:
        np.testing.assert_array_equal(g, e)


def _same_positions(got: Any, expected: Any, image: np.ndarray, single: bool) -> None:
    assert type(got) is type(expected)
    if single:  # the first voxel in C order: scipy's too
        assert got == expected
        return
    assert len(got) == len(expected)
    for g, e in zip(got, expected):  # ties: scipy's sort is not stable
        assert len(g) == len(e)
        vg, ve = image[tuple(int(i) for i in g)], image[tuple(int(i) for i in e)]
        assert vg == ve or (vg != vg and ve != ve) or g == e


def _center_bounds(image: np.ndarray, labels: Any, index: Any) -> list[float]:
    """Per group, how far a centre of mass (weighted sums over a sum, each rounded in
    its own order) may move: ``dw / |s| + |w| ds / s**2``."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        sums = np.atleast_1d(np.asarray(scipy_ndimage.sum_labels(image, labels, index),
                                        np.float64))
    finite = np.abs(image[np.isfinite(image)].astype(np.float64))
    eps = float(np.finfo(image.dtype if image.dtype.kind == "f" else np.float64).eps)
    magnitude = 8 * (image.size + 1) * eps * float(finite.sum())
    far = max(image.shape)
    with np.errstate(divide="ignore", invalid="ignore"):
        return [float(magnitude * far / abs(s) + far * abs(s) * magnitude / (s * s))
                if s == s else 0.0 for s in sums]


def _compare(name: str, got: Any, expected: Any, image: np.ndarray, single: bool,
             labels: Any = None, index: Any = None) -> None:
    tolerance = _tolerance(name, image)
    if name in ("minimum_position", "maximum_position"):
        _same_positions(got, expected, image, single)
    elif name == "extrema":
        assert type(got) is type(expected) and len(got) == 4
        for g, e in zip(got[:2], expected[:2]):
            _same_value(g, e, 0)
        for g, e in zip(got[2:], expected[2:]):
            _same_positions(g, e, image, single)
    elif name == "center_of_mass":
        assert type(got) is type(expected)
        bounds = _center_bounds(image, labels, index)
        for g, e, bound in zip(got if not single else [got], expected if not single else [expected],
                               bounds):
            _same_value(g, e, bound)
    elif name == "histogram":
        if isinstance(expected, np.ndarray) and expected.dtype == object:
            assert got.shape == expected.shape
            for g, e in zip(got.ravel(), expected.ravel()):
                assert (g is None and e is None) or np.array_equal(g, e)
        else:
            assert (got is None and expected is None) or np.array_equal(got, expected)
    else:
        _same_value(got, expected, tolerance)


@budget(60)
@given(statistic_cases())
@example(("minimum", np.array([3.0, np.nan, 1.0, 2.0]), np.array([1, 1, 2, 2]), [1, 2],
          (1,), "sync"))
@example(("maximum", np.array([3.0, np.nan, 1.0, 2.0]), np.array([1, 1, 2, 2]), [1, 2, 0],
          (3,), "sync"))
@example(("variance", np.arange(6, dtype="u1"), np.array([-1, -1, 5, 5, 5, 0]), [5, -1, 2],
          (2,), "threads"))
@example(("histogram", np.arange(6.0), np.array([1, 1, 0, 2, 2, 2]), 2, (4,), "sync"))
@example(("median", np.array([3.0, np.nan, 1.0, 2.0, -0.0, 7.0]), np.array([4, 4, 4, 2, 2, 2]),
          [4, 2, 3, 9], (2,), "sync"))  # NaN sorts last; absent labels: the first value
@example(("median", np.array([5, 3, 9, 1], "i2"), np.array([1, 1, 2, 2]), [2, 1], (1,),
          "sync"))  # even counts: the two middle values averaged
@example(("median", np.array([3.0, np.nan, 1.0, 2.0]), np.array([4, 4, 4, 2]), None, (3,),
          "sync"))  # numpy's median of one group with NaN: NaN
@example(("variance", np.array([[False, True, True, True, False], [False] * 5]), None, None,
          (1, 1), "sync"))  # integers' variances are rounded too
@example(("maximum", np.arange(130.0), (np.arange(130) % 3 == 0).astype("i1") * 127,
          [0, 127, 5], (40,), "sync"))  # scipy overflows int8 labels of 127 (labels.max() + 2)
@example(("minimum", np.arange(300.0), (np.arange(300) % 3 == 0).astype("u1") * 255,
          [0, 255, 5], (40,), "sync"))  # ... and uint8 labels of 255 (an IndexError)
@example(("maximum", np.array([False]), np.array([127], "i1"), 0, (1,), "sync"))  # and an
# absent label: scipy's error on the widened labels too (a maximum of no values)
@example(("minimum", np.array([False]), np.array([2**64 - 1], "u8"), -1, (1,), "sync"))  # no
# widening of uint64 (int64 would make 2**64 - 1 the label -1)
@example(("histogram", np.array([False, True, True]), np.array([0, 0, 255], "u1"), -1, (1,),
          "sync"))  # scipy refuses the index -1 for uint8 labels: not the wrap's error
# Found by the long profile: a median without labels failed (an AssertionError).
@example(("median", np.array([False]), None, None, (1,), "sync"))
@example(("median", np.array([3.0, 1.0, 2.0, 7.0, np.nan]), None, None, (2,), "threads"))
@example(("median", np.array([False]), np.array([0], "i1"), [1], (1,), "sync"))  # none present
# float16 sums: numpy accumulates in float32; a float16 running total overflowed to inf
@example(("sum_labels", np.array([3e4, 3e4, -2e4, -2e4], "f2"), None, None, (1,), "sync"))
@example(("sum_labels", np.array([3e4, 3e4, -3e4, -3e4, 7.0], "f2"), None, None, (1,), "sync"))
# ... and scipy divides by that float16 sum: inf here, so the centre is 0
@example(("center_of_mass", np.array([1e4, 4e3, 7e2, 3e2, 1.3e4, 1.5e4, 1e4, 1.2e4], "f2"), None,
          None, (1,), "sync"))
def test_statistic_equals_scipy(case: tuple[Any, ...]) -> None:
    name, image, labels, index, chunks, scheduler = case
    expected = _oracle(name, image, labels, index)
    z = chunkflow.array(image, chunks=chunks)
    lz = None if labels is None else chunkflow.array(labels, chunks=chunks[::-1][:1] * len(
        chunks) if chunks else chunks)  # another chunk grid than the image's
    if isinstance(expected, Exception):
        try:
            _ours(name, z, lz, index, scheduler)
        except type(expected):
            return
        raise AssertionError(f"scipy raised {expected!r}; chunkflow did not")
    got = _ours(name, z, lz, index, scheduler)
    single = labels is None or index is None or np.isscalar(index)
    _compare(name, got, expected, image, single, labels, index)


def _oracle(name: str, image: np.ndarray, labels: Any, index: Any) -> Any:
    """scipy's result, or the error it raises."""
    try:
        return _scipy(name, image, labels, index)
    except (ValueError, IndexError, TypeError) as error:
        if not (_top_label_wraps(labels) and _a_wrap_error(error)):
            return error
        # scipy's labels.max() + 2 wraps round in narrow labels holding their dtype's
        # largest values (int8 127: "negative dimensions"; uint8 255: an IndexError):
        # its answer on the same labels widened (a result, or the error it raises for
        # other reasons), which chunkflow gives on the narrow ones.
        try:
            return _scipy(name, image, labels.astype(np.int64), index)
        except (ValueError, IndexError, TypeError) as widened:
            return widened


def _a_wrap_error(error: Exception) -> bool:
    """Whether ``error`` is what a wrapped ``labels.max() + 2`` makes scipy raise: an
    array of negative size, or a label past an array of size 1."""
    text = str(error)
    return (isinstance(error, ValueError) and "negative dimensions" in text) or (
        isinstance(error, IndexError) and "out of bounds" in text)


def _top_label_wraps(labels: Any) -> bool:
    """Whether ``labels.max() + 2`` wraps round in the labels' own integer dtype, one
    that int64 widens (not 64-bit labels: int64 would change uint64's values)."""
    if not isinstance(labels, np.ndarray) or labels.dtype.kind not in "iu" \
            or labels.dtype.itemsize >= 8 or not labels.size:
        return False
    return int(labels.max()) + 2 > np.iinfo(labels.dtype).max
