"""chunkflow.measure against skimage.measure.regionprops_table: the same columns, in
the same order, with the same names and dtypes, and the same values (integers exactly,
floats to a tolerance that follows their conditioning), for label images of every
integer dtype and byte order, values over the whole range, random property lists of
every name skimage takes (its deprecated aliases too), callables, spacing and
intensity images with NaN; a refusal of a builtin class skimage raises for one of the
requested properties (skimage stops at the first property and region in its order,
chunkflow at the first of its parallel tasks to fail).

The oracle is skimage on the whole image, with three documented departures:

- label values too large for skimage (its ``find_objects`` allocates a slot per value
  up to the largest) are measured on the image renumbered 1, 2, ... in their order,
  and the label column takes the values back (``uint64`` past 2**63);
- chunkflow sums intensities in ``float64``: the one-pass intensity statistics are
  compared with skimage on the ``float64`` intensities (skimage averages float16 and
  float32 in their own precision);
- skimage weighs an object's bounding box times its mask, so NaN or inf beside an
  object (NaN * 0) makes its weighted centroid NaN: the weighted centroid is compared
  with skimage measuring each object alone (the intensity 0 outside it);
- skimage measures only 2-D and 3-D images: in 1-D and 4-D the one-pass properties
  are compared with a numpy reference (checked against skimage in 2-D and 3-D here);
- skimage fails on an image with a zero-length axis: the table of an image without
  objects (of the same dimensions and dtypes) is the expected answer.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

import dask.array as da
import numpy as np
import pytest
from hypothesis import assume, event, example, given
from hypothesis import strategies as st

import chunkflow
from chunkflow.errors import LabelError
from chunkflow.testing import strategies as cst
from tests.differential.conftest import budget
from tests.helpers.labels import compacted, label_column, regionprops_reference

skimage_measure = pytest.importorskip("skimage.measure")
from skimage.measure._regionprops import (  # noqa: E402 - the oracle's own tables
    COL_DTYPES,
    PROPS,
    _require_intensity_image,
)

regionprops_table = skimage_measure.regionprops_table

#: What chunkflow computes in one pass over the blocks.
ONE_PASS = ["label", "area", "num_pixels", "bbox", "centroid", "centroid_weighted",
            "intensity_mean", "intensity_min", "intensity_max", "intensity_std"]
ONE_PASS_NAMES = ONE_PASS + sorted(a for a, n in PROPS.items() if n in ONE_PASS)
#: Every name skimage takes, deprecated ones included.
ALL_NAMES = sorted(COL_DTYPES) + sorted(PROPS)
INTENSITY = set(_require_intensity_image)
#: From sums of coordinates in the one pass too (2-D and 3-D; eccentricity and
#: orientation 2-D): chunkflow rounds the central moments once, skimage sums rounded
#: products, so they are compared to a tolerance that follows their conditioning.
MOMENTS = {"inertia_tensor", "inertia_tensor_eigvals", "axis_major_length",
           "axis_minor_length", "eccentricity", "orientation"}
#: Raw moments merged across blocks in the one pass too (2-D and 3-D; Hu's 2-D with a
#: spacing of 1): the merge and the central moments from raw ones round differently
#: from skimage's sums over the crop, so they are compared to a tolerance that follows
#: the sums' magnitudes (raw_moment_tolerance).
RAW_MOMENTS = {"moments", "moments_central", "moments_normalized", "moments_hu",
               "moments_weighted", "moments_weighted_central", "moments_weighted_normalized",
               "moments_weighted_hu"}
WEIGHTED_MOMENTS = {n for n in RAW_MOMENTS if "weighted" in n}
# Summed in float64 by chunkflow: compared with skimage on float64 intensities.
FLOAT_STATS = {"intensity_mean", "intensity_std", "centroid_weighted", "intensity_min",
               "intensity_max"}


def current(name: str) -> str:
    return PROPS.get(name, name)


# Extra properties, as skimage's ``extra_properties`` (module level: they pickle).
def pixel_count(mask: np.ndarray) -> int:
    return int(mask.sum())


def box_shape(mask: np.ndarray) -> np.ndarray:
    return np.array(mask.shape)


def voxels(mask: np.ndarray) -> np.ndarray:
    return np.argwhere(mask)


def intensity_range(mask: np.ndarray, crop: np.ndarray) -> float:
    return float(crop[mask].max() - crop[mask].min())


FUNCTIONS = [pixel_count, box_shape, voxels]
INTENSITY_FUNCTIONS = [intensity_range]


@dataclass
class MeasureCase:
    labels: np.ndarray = field(repr=False)
    intensity: np.ndarray | None = field(repr=False)
    properties: list[str]
    functions: list[Any] = field(default_factory=list)
    chunks: tuple[int, ...] = ()
    spacing: Any = None
    blocks: tuple[int, ...] | None = None
    form: str = "array"
    scheduler: str = "sync"

    def __post_init__(self) -> None:
        self.chunks = self.chunks or tuple(max(1, n) for n in self.labels.shape)

    def run(self) -> dict[str, np.ndarray]:
        if self.form == "numpy":
            labels: Any = self.labels
        elif self.form == "dask":
            labels = da.from_array(self.labels, chunks=self.chunks)
        else:
            labels = chunkflow.array(self.labels, chunks=self.chunks)
        intensity: Any = self.intensity
        if intensity is not None and self.form == "array":
            intensity = chunkflow.array(intensity, chunks=self.chunks)
        return chunkflow.measure(labels, intensity, properties=self.properties + self.functions,
                                 spacing=self.spacing, blocks=self.blocks,
                                 scheduler=self.scheduler)


def _native(image: np.ndarray) -> np.ndarray:
    return image.astype(image.dtype.newbyteorder("="))


def oracle(case: MeasureCase) -> dict[str, np.ndarray]:
    """skimage's table (or the numpy reference in 1-D and 4-D), as the module says."""
    labels = _native(case.labels)
    present, ranks = compacted(labels)
    # skimage allocates per label value: large values are renumbered (their order kept).
    image = ranks if len(present) and int(present.max()) > 2**16 else labels
    intensity = None if case.intensity is None else _native(case.intensity)
    if not labels.size:
        # skimage fails on an empty image (a reduction without identity): the table of
        # an image without objects is its answer.
        image = np.zeros((1,) * labels.ndim, labels.dtype)
        intensity = None if intensity is None else np.zeros(image.shape, intensity.dtype)
    if labels.ndim not in (2, 3) and not case.functions and \
            all(current(p) in ONE_PASS for p in case.properties):
        return regionprops_reference(labels, intensity, case.properties, dict(PROPS),
                                     case.spacing)
    table = regionprops_table(image, intensity, properties=case.properties,
                              extra_properties=case.functions or None, spacing=case.spacing)
    stats = [p for p in case.properties if current(p) in FLOAT_STATS | WEIGHTED_MOMENTS]
    if stats and intensity is not None:
        table.update(regionprops_table(image, intensity.astype(np.float64), properties=stats,
                                       spacing=case.spacing))
        weighted = [p for p in case.properties
                    if current(p) in {"centroid_weighted"} | WEIGHTED_MOMENTS]
        if weighted:
            table.update(each_object_alone(image, intensity.astype(np.float64), weighted,
                                           case.spacing))
    for name in case.properties:
        if current(name) == "label":
            table[name] = label_column(present)
    return table


def each_object_alone(image: np.ndarray, intensity: np.ndarray, properties: list[str],
                      spacing: Any) -> dict[str, np.ndarray]:
    """skimage's ``properties`` of each object measured alone, the intensity 0 outside
    it. skimage weighs the intensity of the object's whole bounding box times its mask,
    so a NaN or an infinity beside the object (NaN * 0) makes its weighted centroid
    NaN; chunkflow weighs the object's own voxels."""
    rows = []
    for value in np.unique(image[image > 0]):
        mask = image == value
        rows.append(regionprops_table(mask.astype(np.uint8), np.where(mask, intensity, 0.0),
                                      properties=properties, spacing=spacing))
    if not rows:
        return {}
    return {key: np.concatenate([row[key] for row in rows]) for key in rows[0]}


def _objects(labels: np.ndarray) -> list[np.ndarray]:
    _, ranks = compacted(labels)
    return [ranks == rank for rank in range(1, int(ranks.max(initial=0)) + 1)]


def weighted_tolerance(case: MeasureCase, axis: int) -> np.ndarray:
    """Per object, what rounding may move ``sum(w x) / sum(w)``: the sums' error
    (a few ulps of the sums of magnitudes) through the quotient. Cancelling weights
    (float intensities of both signs) make it large: the quotient is ill-conditioned."""
    assert case.intensity is not None
    w_all = _native(case.intensity).astype(np.float64)
    scale = 1.0 if case.spacing is None else float(np.broadcast_to(case.spacing,
                                                                   (case.labels.ndim,))[axis])
    found = []
    for mask in _objects(case.labels):
        w, x = w_all[mask], np.argwhere(mask)[:, axis].astype(np.float64)
        with np.errstate(all="ignore"):
            b, a = w.sum(), (w * x).sum()
            bound = 1e-13 * len(w) * (np.abs(w * x).sum() / abs(b)
                                      + abs(a) * np.abs(w).sum() / b**2) + 1e-12 * abs(a / b)
        found.append(abs(scale) * bound if np.isfinite(bound) else np.inf)
    return np.array(found)


def _tensors(case: MeasureCase) -> np.ndarray:
    """skimage's inertia tensor of each object, ``(objects, ndim, ndim)``."""
    labels = _native(case.labels)
    present, ranks = compacted(labels)
    ndim = labels.ndim
    if not len(present):  # skimage fails on an empty image (see the module notes)
        return np.zeros((0, ndim, ndim))
    table = regionprops_table(ranks, properties=["inertia_tensor"], spacing=case.spacing)
    return np.stack([table[f"inertia_tensor-{i}-{j}"] for i in range(ndim)
                     for j in range(ndim)], axis=-1).reshape(-1, ndim, ndim)


def moment_tolerance(case: MeasureCase, name: str) -> np.ndarray:
    """Per object, what rounding may move a moment property: ``delta``, a bound on
    the tensor's error (both sides' roundings, relative to its trace), through the
    property's conditioning: square roots of eigenvalues near 0 (lengths,
    eccentricity) take ``sqrt(delta)``; the orientation of a tensor with ``a == c``
    and ``b == 0`` (no axis) or with ``b == 0`` and ``c < a`` (its angle jumps between
    pi/2 and -pi/2) is not compared, unless exactly symmetric (skimage's branch)."""
    tensors = _tensors(case)
    trace = np.trace(tensors, axis1=1, axis2=2)
    delta = 1e-11 * (1 + trace)
    if name in ("inertia_tensor", "inertia_tensor_eigvals"):
        return delta
    if name in ("axis_major_length", "axis_minor_length"):
        return 10 * np.sqrt(delta)
    ev = np.linalg.eigvalsh(tensors)[:, ::-1]
    if name == "eccentricity":
        with np.errstate(divide="ignore"):
            return np.where(ev[:, 0] > 0, np.sqrt(8 * delta / ev[:, 0]), 0.0)
    a, b, c = tensors[:, 0, 0], tensors[:, 0, 1], tensors[:, 1, 1]
    spread = np.abs(a - c) + 2 * np.abs(b)
    with np.errstate(divide="ignore"):
        bound = 8 * delta / spread
    flat = (spread <= 1e3 * delta) | ((np.abs(b) <= 1e3 * delta) & (c < a))
    # Exactly symmetric (a == c, b == 0, as both compute it for a symmetric object):
    # skimage's own branch, compared exactly.
    symmetric = (a == c) & (b == 0)
    return np.where(symmetric, 0.0, np.where(flat, np.inf, bound))


def _powers(key: str, name: str) -> tuple[int, ...]:
    """The powers of a moment column: ``moments-1-2`` -> (1, 2)."""
    return tuple(int(p) for p in key.split("-")[1:])


def _moment_bound(weights: np.ndarray, local: np.ndarray, extent: np.ndarray,
                  centre: np.ndarray, scale: np.ndarray, powers: tuple[int, ...]) -> float:
    """What float64 rounding may move the moment of ``powers`` (raw about the box's
    corner, or central about ``centre``): a few ulps per term of the sums of
    magnitudes, ``sum |w| prod (s (extent + |c|))**p``, times the number of terms."""
    magnitude = np.abs(weights).sum() * np.prod(
        [(s * (e + abs(c))) ** p for s, e, c, p in zip(scale, extent, centre, powers)])
    return 1e-13 * (len(weights) + 1) * magnitude


@dataclass
class _ObjectSums:
    """One object's voxels as skimage measures them: weights, coordinates in its box,
    the box's extent, the centroid in the box (zero for raw moments), the spacing."""

    w: np.ndarray
    local: np.ndarray
    extent: np.ndarray
    centre: np.ndarray
    scale: np.ndarray

    def bound(self, powers: tuple[int, ...]) -> float:
        return _moment_bound(self.w, self.local, self.extent, self.centre, self.scale, powers)

    def normalized_bound(self, powers: tuple[int, ...]) -> float:
        """Through ``mu / (min(s)**t * mu0**(t/ndim + 1))``: the numerator's error, and
        the zeroth moment's relative error (large for weights of both signs) times
        the exponent."""
        total, ndim = sum(powers), len(powers)
        if total < 2:
            return 0.0
        exponent = total / ndim + 1
        mu0 = self.w.sum()
        with np.errstate(all="ignore"):
            denominator = abs(min(self.scale) ** total * mu0 ** exponent)
            numerator = self.bound(powers)
            relative0 = self.bound((0,) * ndim) / abs(mu0)
            return float(numerator / denominator * (1 + 1e3 * exponent * relative0))


def _object_sums(case: MeasureCase, mask: np.ndarray, weighted: bool,
                 central: bool) -> _ObjectSums | None:
    ndim = case.labels.ndim
    scale = np.ones(ndim) if case.spacing is None else np.broadcast_to(
        np.asarray(case.spacing, np.float64), (ndim,))
    coords = np.argwhere(mask)
    low, extent = coords.min(axis=0), np.ptp(coords, axis=0) + 1
    local = (coords - low).astype(np.float64)
    w = (_native(case.intensity).astype(np.float64)[mask]
         if weighted and case.intensity is not None else np.ones(len(coords)))
    with np.errstate(all="ignore"):
        centre = (w @ local) / w.sum() if central else np.zeros(ndim)
    if not (np.isfinite(w).all() and np.isfinite(centre).all()):
        return None
    return _ObjectSums(w, local, extent, centre, scale)


def raw_moment_tolerance(case: MeasureCase, key: str, name: str,
                         expected: np.ndarray) -> np.ndarray:
    """Per object, the absolute tolerance of column ``key`` of a raw-moment property:
    ``_moment_bound`` for ``moments*`` and ``moments*_central``; through the quotient
    for the normalized moments; through Hu's polynomials (degree 4 at most in the
    normalized moments: 100 times the largest normalized moment's bound times
    ``(2 + |hu|)**3``) for ``moments*_hu``. Infinite (not compared) where a weight or
    the weighted centroid is not finite."""
    name = current(name)
    found = []
    for row, mask in enumerate(_objects(case.labels)):
        raw = name in ("moments", "moments_weighted")
        sums = _object_sums(case, mask, "weighted" in name, not raw)
        if sums is None:
            found.append(np.inf)
        elif raw or name.endswith("_central"):
            found.append(sums.bound(_powers(key, name)))
        elif not name.endswith("_hu"):
            found.append(sums.normalized_bound(_powers(key, name)))
        else:
            delta = max(sums.normalized_bound((p, q)) for p in range(4) for q in range(4)
                        if 2 <= p + q <= 3)
            size = abs(expected[row]) if np.isfinite(expected[row]) else 1.0
            found.append(100 * delta * (2 + size) ** 3)
    return np.array(found)


def tolerance(case: MeasureCase, key: str, name: str, expected: np.ndarray | None = None) -> Any:
    """The absolute tolerance of column ``key`` of property ``name``."""
    current_name = current(name)
    if current_name in RAW_MOMENTS:
        assert expected is not None
        return raw_moment_tolerance(case, key, name, expected)
    if current_name in MOMENTS:
        return moment_tolerance(case, current_name)
    if current_name == "centroid_weighted":
        return weighted_tolerance(case, int(key.rsplit("-", 1)[1]))
    if current_name in ("intensity_mean", "intensity_std") and case.intensity is not None:
        values = _native(case.intensity).astype(np.float64)
        finite = np.abs(values[np.isfinite(values)])
        return 1e-12 * len(values.reshape(-1)) * (finite.max() if finite.size else 0.0)
    return 1e-12 * max(case.labels.shape, default=1) * 16


def _same_object(actual: Any, expected: Any) -> bool:
    if isinstance(expected, tuple):
        return bool(actual == expected)
    return bool(np.array_equal(np.asarray(actual), np.asarray(expected), equal_nan=True)
                and np.asarray(actual).dtype == np.asarray(expected).dtype)


def close(got: np.ndarray, expected: np.ndarray, atol: Any, key: str) -> None:
    """``got`` equals ``expected`` within ``atol`` (per row or one for all) and a
    relative 1e-12, NaN where it is NaN (an infinite ``atol``: the row is not
    compared, its quotient being ill-conditioned)."""
    atol = np.broadcast_to(np.asarray(atol, np.float64), expected.shape)
    with np.errstate(invalid="ignore"):
        ok = ((got == expected) | (np.isnan(got) & np.isnan(expected)) | np.isinf(atol)
              | (np.abs(got - expected) <= atol + 1e-12 * np.abs(expected)))
    assert ok.all(), (f"{key}: rows {np.flatnonzero(~ok).tolist()} differ: "
                      f"{got[~ok].tolist()} != {expected[~ok].tolist()} (atol {atol[~ok].tolist()})")


def compare(case: MeasureCase, table: dict[str, np.ndarray],
            expected: dict[str, np.ndarray]) -> None:
    assert list(table) == list(expected)
    names = case.properties + [f.__name__ for f in case.functions]
    for key, column in expected.items():
        got = table[key]
        assert got.dtype == column.dtype, (key, got.dtype, column.dtype)
        assert got.shape == column.shape, key
        name = next(n for n in names if key == n or key.startswith(f"{n}-"))
        if column.dtype == object:
            assert all(_same_object(a, e) for a, e in zip(got, column)), key
        elif column.dtype.kind in "iub" or current(name) not in ONE_PASS + list(MOMENTS) + \
                list(RAW_MOMENTS):
            np.testing.assert_array_equal(got, column, err_msg=key)
        else:
            close(got, column, tolerance(case, key, name, column), key)


def _refusals(case: MeasureCase, error: Exception) -> tuple[type[Exception], ...]:
    """The classes skimage refuses ``case`` with: its own (the first property and
    region it reaches in order), and each requested property's alone."""
    found = {type(error)}
    for name in case.properties:
        try:
            oracle(replace(case, properties=[name], functions=[]))
        except Exception as alone:  # noqa: BLE001 - the oracle's refusal, whatever it is
            found.add(type(alone))
    return tuple(found)


def check(case: MeasureCase) -> None:
    try:
        expected = oracle(case)
    except Exception as error:
        # skimage refuses: so must chunkflow, with the class skimage gives one of the
        # requested properties. Which one comes first may differ: skimage stops at the
        # first property (and region) in its order, chunkflow at the first of its
        # parallel tasks to fail (3-D FeretDiameter of a flat region and moments_hu,
        # found by the long profile).
        event(f"refused: {type(error).__name__}")
        with pytest.raises(_refusals(case, error)):
            case.run()
        return
    event(f"compared: {'objects' if len(next(iter(expected.values()))) else 'empty'}, "
          f"{case.labels.ndim}-D")
    compare(case, case.run(), expected)


def _spacings(ndim: int) -> st.SearchStrategy[Any]:
    number = st.one_of(st.integers(1, 3), st.floats(0.25, 4.0))
    return st.one_of(st.none(), number, st.tuples(*[number] * ndim))


@st.composite
def measure_cases(draw: st.DrawFn, *, names: list[str], min_dims: int = 1, max_dims: int = 4,
                  max_side: int = 8, functions: bool = False) -> MeasureCase:
    # Mostly no zero-length side, several chunks per side and small blocks, so that
    # objects cross blocks (a weighted pick: one_of would merge repeated strategies).
    dims = draw(st.sampled_from([n for n in (1, 2, 2, 3, 3, 4) if min_dims <= n <= max_dims]))
    shapes = cst.shapes(min_dims=dims, max_dims=dims, max_side=max_side,
                        zero_sides=draw(st.integers(0, 3)) == 0)
    labels = draw(cst.label_images(shapes=shapes, dtypes=cst.dtypes(kinds="iu", byteorder="any")))
    ndim = labels.ndim
    chunks = (cst.chunk_shapes(labels.shape) if draw(st.integers(0, 2)) == 0 else
              st.tuples(*[st.integers(1, max(1, (n + 1) // 2)) for n in labels.shape]))
    blocks = st.tuples(*[st.integers(1, 3)] * ndim)
    intensity = draw(st.none() | cst.intensity_images(labels.shape))
    allowed = [n for n in names if intensity is not None or current(n) not in INTENSITY]
    properties = draw(st.lists(st.sampled_from(allowed), min_size=1, max_size=6))
    extra = []
    if functions:
        pool = FUNCTIONS + (INTENSITY_FUNCTIONS if intensity is not None else [])
        extra = draw(st.lists(st.sampled_from(pool), max_size=2, unique=True))
    return MeasureCase(
        labels, intensity, properties, extra, draw(chunks), draw(_spacings(ndim)),
        draw(st.none() if draw(st.integers(0, 3)) == 0 else blocks),
        draw(st.sampled_from(["array", "array", "numpy", "dask"])),
        draw(cst.schedulers(processes=False)))


def _case(labels: Any, *args: Any, **kwargs: Any) -> MeasureCase:
    """A case of ``labels``, then (optionally) the intensity, the properties, the
    chunks."""
    if len(args) == 3:
        kwargs["intensity"], args = args[0], args[1:]
    properties, chunks = args
    labels = np.asarray(labels)
    return MeasureCase(labels, kwargs.pop("intensity", None), properties, chunks=chunks, **kwargs)


_BOX = np.zeros((7, 7), np.int64)
_BOX[4:6, 3:5] = 1


@budget(120)
@given(case=measure_cases(names=ONE_PASS_NAMES))
# Issue 34's cases: deprecated names in crop coordinates; uint64 labels past 2**63
# negative and out of order (an OverflowError with chunks of 1); numpy labels refused.
@example(case=_case(_BOX, ["label", "Centroid", "BoundingBox", "weighted_centroid",
                           "WeightedCentroid"], (3, 3), intensity=np.arange(49.0).reshape(7, 7)))
@example(case=_case(np.array([[1, 2**63 + 5, 2**64 - 1]], np.uint64), ["label", "area"], (1, 2)))
@example(case=_case(np.array([[1, 2**63 + 5, 2**64 - 1]], np.uint64), ["label", "area"], (1, 1)))
@example(case=_case(np.array([[1, 2**63 + 5, 2**64 - 1]], ">u8"), ["label", "bbox"], (1, 1),
                    form="numpy"))
# Negative labels are background, as in skimage; the signed extremes.
@example(case=_case(np.array([[1, -3, 127], [-128, -3, 127]], np.int8), ["label", "area", "bbox"],
                    (1, 2)))
# NaN intensities, spacing, one object across every chunk of 1.
@example(case=_case(np.ones((4, 5), np.uint16), ["label", "intensity_mean", "intensity_max",
                                                 "centroid_weighted", "area", "centroid"],
                    (1, 1), intensity=np.where(np.eye(4, 5) > 0, np.nan, 2.0), spacing=(2, 0.5)))
# Partial statistics merged across blocks (Chan et al.'s variance).
@example(case=_case(np.ones((4, 4), np.int32), ["intensity_std", "intensity_mean"], (2, 2),
                    intensity=np.arange(16, dtype=np.int16).reshape(4, 4), blocks=(1, 1)))
# A -inf beside the object, in its bounding box (skimage's weighted centroid is NaN).
@example(case=_case(np.array([[[0, 0, 1], [1, 0, 0]]], np.int8), ["WeightedCentroid"], (1, 1, 1),
                    intensity=np.array([[[1.043e+04, 4.42e+03, 6.71e+02],
                                         [2.708e+02, 1.332e+04, -np.inf]]], np.float16),
                    spacing=1))
# 1-D and 4-D (the numpy reference).
@example(case=_case(np.array([0, 3, 3, 0, 2**40], np.int64), ["label", "bbox", "centroid"], (2,)))
@example(case=_case(np.arange(16).reshape(2, 2, 2, 2) % 3, ["label", "area", "bbox", "centroid"],
                    (1, 2, 1, 2)))
# Few labels in a large block: boxes from scipy's find_objects (else from the edges).
@example(case=_case(np.pad(np.ones((5, 3), np.uint8), ((2, 9), (4, 8))), ["bbox", "BoundingBox"],
                    (16, 15)))
def test_one_pass_properties_equal_skimage(case: MeasureCase) -> None:
    check(case)


@budget(50)
@given(case=measure_cases(names=ALL_NAMES, min_dims=2, max_dims=3, max_side=7, functions=True))
# Issue 34's case: no objects dropped every crop column and the callables.
@example(case=_case(np.zeros((4, 4), np.int32), ["label", "perimeter"], (2, 2),
                    functions=[pixel_count, box_shape]))
@example(case=_case(-np.ones((3, 4), np.int16), ["label", "moments_hu", "image", "coords",
                                                  "intensity_median"], (2, 2),
                    intensity=np.ones((3, 4), np.float32), functions=[intensity_range]))
# Positions from crops: coords, slice, and their deprecated names, with spacing.
@example(case=_case(_BOX, ["Coordinates", "Slice", "coords_scaled", "slice", "image"], (3, 3),
                    spacing=(2, 3)))
@example(case=_case(np.array([[2**64 - 1, 0, 2**63], [2**64 - 1, 0, 2**63]], np.uint64),
                    ["label", "perimeter", "coords", "Label"], (1, 1), functions=[voxels]))
# Found by the long profile: skimage's refusal is FeretDiameter's ValueError (a flat
# region), chunkflow's whichever task fails first (moments_hu's NotImplementedError in 3-D).
@example(case=MeasureCase(np.array([[[0, 0, 1, 0], [0, 0, 0, 0]], [[0, 1, 0, 0], [0, 0, 0, 0]],
                                    [[2, 0, 2, 1], [0, 1, 0, 0]]], np.int8), None,
                          ["FeretDiameter", "moments_hu"], chunks=(1, 1, 1), scheduler="threads"))
def test_every_property_equals_skimage(case: MeasureCase) -> None:
    check(case)


MOMENT_NAMES = sorted(MOMENTS) + sorted(a for a, n in PROPS.items() if n in MOMENTS)
_SQUARE = np.zeros((6, 6), np.int32)  # a == c and b == 0: skimage's -pi/4, eccentricity 0
_SQUARE[1:4, 2:5] = 7
_SQUARE[5, 0] = 3  # one voxel: a zero tensor


@budget(25)
@given(case=measure_cases(names=["label", "area", *MOMENT_NAMES], min_dims=2, max_dims=3,
                          max_side=12))
@example(case=_case(_SQUARE, ["label", "orientation", "eccentricity", "inertia_tensor",
                              "axis_minor_length"], (2, 2), blocks=(1, 1)))
@example(case=_case(_SQUARE, ["Orientation", "MajorAxisLength", "InertiaTensorEigvals"], (5, 4),
                    spacing=(2, 0.5)))
# An object along one axis (a zero eigenvalue), in 3-D across blocks.
@example(case=_case(np.pad(np.ones((1, 1, 9), np.uint8), 1), ["axis_minor_length",
                                                              "inertia_tensor_eigvals"],
                    (2, 2, 2), blocks=(1, 1, 1)))
# An empty image (found by the long profile: the tolerance's own skimage call failed).
@example(case=_case(np.zeros((0, 0), np.int8), ["axis_major_length"], (1, 1)))
# In 3-D, skimage refuses eccentricity and orientation (crops raise as it does).
@example(case=_case(np.ones((2, 3, 3), np.uint8), ["label", "eccentricity"], (1, 2, 2)))
@example(case=_case(np.ones((2, 3, 3), np.uint8), ["orientation"], (1, 2, 2)))
def test_moment_properties_equal_skimage(case: MeasureCase) -> None:
    """The second-order moment properties, from sums merged across blocks."""
    check(case)


def _drawn(seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Labels 0-3 and int32 intensities of both signs, ``(2, 5, 6)``, from ``seed``."""
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, 4, (2, 5, 6)).astype(np.uint8)
    return labels, rng.integers(-2**31, 2**31, (2, 5, 6)).astype(np.int32)


RAW_MOMENT_NAMES = sorted(RAW_MOMENTS) + sorted(a for a, n in PROPS.items() if n in RAW_MOMENTS)
_CROSS = np.zeros((7, 8), np.int16)  # one object across blocks, one beside it
_CROSS[1:6, 3] = 4
_CROSS[3, 1:7] = 4
_CROSS[6, 0:2] = -2  # background
_CROSS[0, 5:8] = 9


@budget(20)
@given(case=measure_cases(names=["label", *RAW_MOMENT_NAMES], min_dims=2, max_dims=3,
                          max_side=10))
@example(case=_case(_CROSS, ["label", "moments", "moments_central", "moments_normalized",
                             "moments_hu"], (2, 3), blocks=(1, 1)))
@example(case=_case(_CROSS, ["moments_weighted", "WeightedCentralMoments", "moments_weighted_hu",
                             "weighted_moments_normalized"], (3, 2), blocks=(1, 1),
                    intensity=np.linspace(-3.0, 5.0, 56).reshape(7, 8)))
# NaN beside the object (in its box): skimage's weighted moments are NaN (see the notes).
@example(case=_case(_CROSS, ["moments_weighted_central"], (2, 2),
                    intensity=np.where(np.eye(7, 8) > 0, np.nan, 1.5)))
# With spacing: moments scaled; Hu's invariants refused as skimage refuses them.
@example(case=_case(_CROSS, ["moments", "moments_normalized", "HuMoments"], (4, 4),
                    spacing=(2, 0.5)))
@example(case=_case(np.pad(np.ones((3, 1, 4), np.uint8), 1), ["moments_central",
                                                              "moments_normalized"],
                    (2, 2, 2), blocks=(1, 1, 1), spacing=(1, 3, 0.5)))
# Found by the long profile: weighted raw moments of int32 intensities of both signs
# (the tolerance took the normalized moments' bound for them).
@example(case=_case(*_drawn(11), ["moments_weighted"], (1, 1, 1), spacing=3))
def test_raw_moment_properties_equal_skimage(case: MeasureCase) -> None:
    """moments, moments_central, moments_normalized, moments_hu and their weighted
    variants, from raw moments merged across blocks."""
    check(case)


@budget(15)
@given(case=measure_cases(names=["label", "perimeter", "Perimeter", "area"], min_dims=2,
                          max_dims=2, max_side=12))
# Objects across blocks of 2 (codes depend on labels 2 away), negative labels beside
# them (background), spacing (isotropic: one pass; anisotropic: refused, as skimage).
@example(case=_case(np.array([[1, 1, 1, 0, 2], [1, -4, 1, 2, 2], [1, 1, 1, 0, 2],
                              [0, 3, 0, 0, 0]], np.int16), ["label", "perimeter"], (2, 2),
                    blocks=(1, 1), spacing=1.5))
@example(case=_case(np.ones((5, 4), np.uint8), ["perimeter"], (1, 1), spacing=(1, 2)))
def test_perimeter_equals_skimage_bit_for_bit(case: MeasureCase) -> None:
    """2-D perimeters from counts of border codes merged across blocks: skimage's
    values exactly (compare() compares every non-ONE_PASS float column exactly)."""
    check(case)


@budget(15)
@given(case=measure_cases(names=ONE_PASS_NAMES, min_dims=2, max_dims=3))
@example(case=_case(np.array([[0, 0, 1], [1, 0, 0]], np.int8), ["centroid_weighted"], (1, 1),
                    intensity=np.array([[1.043e+04, 4.42e+03, 6.71e+02],
                                        [2.708e+02, 1.332e+04, -np.inf]], np.float16)))
def test_the_numpy_reference_equals_skimage(case: MeasureCase) -> None:
    """The oracle of 1-D and 4-D images, where skimage measures: skimage's values."""
    labels = _native(case.labels)
    assume(labels.size)  # skimage fails on empty images (see the module notes)
    intensity = None if case.intensity is None else _native(case.intensity)
    reference = regionprops_reference(labels, intensity, case.properties, dict(PROPS),
                                      case.spacing)
    compare(case, reference, oracle(case))


@budget(10)
@given(labels=cst.arrays(cst.dtypes(kinds="bf", byteorder="any"),
                         cst.shapes(min_dims=2, max_dims=3, max_side=4)),
       form=st.sampled_from(["numpy", "array", "dask"]))
@example(labels=np.array([[True, False]]), form="numpy")
def test_labels_skimage_refuses_are_refused(labels: np.ndarray, form: str) -> None:
    """Booleans and floats are ambiguous as labels: both raise TypeError."""
    with pytest.raises(TypeError):
        regionprops_table(_native(labels))
    source = (labels if form == "numpy" else da.from_array(labels) if form == "dask"
              else chunkflow.array(labels))
    with pytest.raises(TypeError, match="labels must be integers"):
        chunkflow.measure(source)


@budget(10)
@given(case=measure_cases(names=ONE_PASS_NAMES, min_dims=2, max_dims=3, max_side=5),
       unknown=st.sampled_from(["centre", "Area ", "bbox-0", "areas", "intensity"]))
def test_names_skimage_refuses_are_refused(case: MeasureCase, unknown: str) -> None:
    case.properties = [*case.properties, unknown]
    # skimage raises AttributeError (it looks the name up on each region); chunkflow
    # refuses before reading anything, with LabelError (a ValueError) listing the names.
    with pytest.raises(AttributeError):
        oracle(case)
    with pytest.raises(LabelError, match="not a property"):
        case.run()
