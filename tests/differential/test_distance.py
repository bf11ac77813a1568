"""distance_transform_edt against scipy.ndimage.distance_transform_edt on the whole
array: the same distances bit for bit (float64 bits compared) and the same indices,
ties included (the passes replay scipy's arithmetic), for any image, dtype, sampling,
chunk grid, block plan and scheduler; a refusal wherever scipy refuses."""

from __future__ import annotations

import tempfile
import warnings
from dataclasses import dataclass, field
from typing import Any

import dask.array as da
import numpy as np
import pytest
from hypothesis import example, given
from hypothesis import strategies as st
from scipy import ndimage

import chunkflow
from chunkflow.errors import DistanceTransformError
from chunkflow.graph.distance import distance_transform_edt
from chunkflow.testing import strategies as cst
from tests.differential.conftest import budget


@dataclass
class Case:
    """One transform: the image, how it is handed over, the options."""

    image: np.ndarray = field(repr=False)
    chunks: tuple[int, ...]
    sampling: Any = None
    form: str = "numpy"  # "numpy", "array" (a chunkflow array) or "dask"
    returns: tuple[bool, bool] = (True, True)
    scheduler: str = "sync"
    zarr_format: int = 3

    def source(self, store: Any = None) -> Any:
        if self.form == "numpy":
            return self.image
        if self.form == "dask":
            return da.from_array(self.image, chunks=self.chunks or 1)
        return chunkflow.array(self.image, chunks=self.chunks or None, store=store,
                               zarr_format=self.zarr_format)


# Spacings scipy takes: mostly positive, sometimes zero, negative, tiny (squares
# underflow), huge (squares overflow) or infinite; each changes which comparisons fall.
SPECIAL = [0.0, -1.5, 1e-200, 1e200, float("inf"), 1.0, 0.5, 2.0]
positive = st.floats(0.05, 20.0, allow_nan=False, allow_infinity=False)


@st.composite
def samplings(draw: st.DrawFn, ndim: int) -> Any:
    kind = draw(st.integers(0, 5))
    if kind == 0:
        return None
    value = st.sampled_from(SPECIAL) if kind == 5 else positive
    if kind == 1:
        return draw(value)
    return draw(st.lists(value, min_size=ndim, max_size=ndim))


@st.composite
def images(draw: st.DrawFn, shapes: st.SearchStrategy[tuple[int, ...]]) -> np.ndarray:
    """A binary image as bool, or as values of another dtype (zero, or -0.0, where the
    image is background; NaN counts as foreground, as in scipy)."""
    mask = draw(cst.binary_images(shapes=shapes))
    dtype = draw(st.one_of(st.just(np.dtype(bool)),
                           cst.dtypes(kinds="biufc", byteorder="any")))
    if dtype.kind == "b":
        return mask.astype(dtype)
    one = {"f": draw(st.sampled_from([1.0, float("nan"), -3.5])), "c": 1j}.get(dtype.kind, 1)
    zero = -0.0 if dtype.kind == "f" and draw(st.booleans()) else 0
    return np.where(mask, np.asarray(one).astype(dtype), np.asarray(zero).astype(dtype))


@st.composite
def cases(draw: st.DrawFn, max_dims: int = 3, max_side: int = 9) -> Case:
    shapes = (cst.shapes(min_dims=1, max_dims=max_dims, max_side=max_side)
              if draw(st.integers(0, 3)) == 0 else
              cst.shapes(min_dims=1, max_dims=max_dims, max_side=max_side, zero_sides=False))
    image = draw(images(shapes))
    # Mostly several chunks per side (chunks of 1 and edge chunks among them).
    chunks = draw(cst.chunk_shapes(image.shape) if draw(st.integers(0, 2)) == 0 else
                  st.tuples(*[st.integers(1, max(1, (n + 1) // 2)) for n in image.shape]))
    returns = draw(st.sampled_from([(True, False), (False, True), (True, True)]))
    return Case(image, chunks, draw(samplings(image.ndim)),
                draw(st.sampled_from(["numpy", "array", "dask"])), returns,
                draw(cst.schedulers(processes=False)), draw(cst.zarr_formats()))


def scipy_edt(case: Case) -> tuple[np.ndarray | None, np.ndarray | None]:
    image = case.image.astype(case.image.dtype.newbyteorder("="))
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore", RuntimeWarning)
        found = ndimage.distance_transform_edt(image, case.sampling, *case.returns)
    if case.returns == (True, True):
        return found
    return (found, None) if case.returns[0] else (None, found)


def chunkflow_edt(case: Case, store: Any = None, **kwargs: Any) -> tuple[Any, Any]:
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore", RuntimeWarning)
        found = distance_transform_edt(case.source(store), case.sampling, *case.returns,
                                       chunks=case.chunks or None, scheduler=case.scheduler,
                                       **kwargs)
    if case.returns == (True, True):
        return found
    return (found, None) if case.returns[0] else (None, found)


def check(case: Case, store: Any = None, **kwargs: Any) -> None:
    distances, indices = scipy_edt(case)
    got_distances, got_indices = chunkflow_edt(case, store, **kwargs)
    if distances is not None:
        got = np.asarray(got_distances[...])
        assert got.shape == distances.shape and got.dtype == np.float64
        np.testing.assert_array_equal(got.view(np.uint64), distances.view(np.uint64))
    if indices is not None:
        got = np.asarray(got_indices[...])
        assert got.shape == indices.shape and got.dtype == np.int32
        np.testing.assert_array_equal(got, indices)


def unique_nearest(image: np.ndarray) -> np.ndarray:
    """Where an element has one nearest background element (brute force, unit spacing)."""
    background = np.argwhere(image == 0)
    points = np.indices(image.shape).reshape(image.ndim, -1).T
    squared = ((points[:, None, :] - background[None, :, :]) ** 2).sum(axis=2)
    return ((squared == squared.min(axis=1, keepdims=True)).sum(axis=1) == 1).reshape(image.shape)


@budget(120)
@given(case=cases())
# All foreground (scipy's -1 and 0 indices), all background, 0-d inputs.
@example(case=Case(np.ones((3, 4), bool), (1, 2)))
@example(case=Case(np.zeros((3, 4), bool), (2, 3), sampling=0.5))
@example(case=Case(np.array(0), ()))
@example(case=Case(np.array(7.0), (), form="array"))
@example(case=Case(np.zeros((0, 3), bool), (1, 1)))
# Negative, tiny and infinite spacings: scipy's envelope pops, underflows, NaNs.
@example(case=Case(np.array([1, 0, 1, 1, 0, 1]), (2,), sampling=-1.5))
@example(case=Case(np.zeros(3, int), (1,), sampling=-1.5))  # scipy: indices [0, 0, 2]
@example(case=Case(np.indices((6, 5)).sum(axis=0) % 3 != 0, (2, 2), sampling=[1e-200, 1.0]))
@example(case=Case(np.eye(5) == 0, (2, 2), sampling=[1.0, float("inf")]))
# A 3-4-5 tie with an anisotropic spacing; lines of chunks of 1 in 3-D.
@example(case=Case(np.pad([[0]], ((0, 4), (0, 4)), constant_values=1) * np.pad(
    [[0]], ((4, 0), (0, 4)), constant_values=1), (1, 1), sampling=[0.3, 0.7]))
@example(case=Case(np.random.default_rng(3).random((5, 6, 7)) > 0.2, (1, 2, 3),
                   scheduler="threads", form="array"))
def test_distance_transform_edt_equals_scipy(case: Case) -> None:
    check(case)


@budget(25)
@given(image=cst.binary_images(shapes=cst.shapes(min_dims=1, max_dims=3, max_side=7,
                                                  zero_sides=False)),
       chunks=st.integers(1, 3))
def test_indices_equal_scipy_where_the_nearest_is_unique(image: np.ndarray, chunks: int) -> None:
    # What the issue asks at least (the test above checks every index).
    expected = ndimage.distance_transform_edt(image, return_indices=True)[1]
    got = distance_transform_edt(image, return_distances=False, return_indices=True,
                                 chunks=(chunks,) * image.ndim)
    if (image == 0).any():
        unique = unique_nearest(image)
        np.testing.assert_array_equal(got[:, unique], expected[:, unique])
    np.testing.assert_array_equal(got, expected)


@budget(2)  # a process pool per example: seconds each
@given(case=cases(max_dims=3, max_side=7).filter(lambda c: c.image.size > 1))
def test_distance_transform_edt_on_processes_from_and_to_folders(case: Case) -> None:
    case.scheduler, case.form = "processes", "array"
    case.returns = (True, True)
    with tempfile.TemporaryDirectory() as folder:
        check(case, store=f"{folder}/source.zarr", out=f"{folder}/edt.zarr",
              max_memory="64 MiB")


@budget(10)
@given(image=cst.binary_images(shapes=cst.shapes(min_dims=1, max_dims=3, max_side=5,
                                                  zero_sides=False)),
       kind=st.sampled_from(["nothing", "sampling", "distances", "indices"]))
def test_refuses_what_scipy_refuses(image: np.ndarray, kind: str) -> None:
    kwargs: dict[str, Any] = {
        "nothing": {"return_distances": False},
        "sampling": {"sampling": [1.0] * (image.ndim + 1)},
        "distances": {"distances": np.zeros(image.shape, np.float32)},
        "indices": {"indices": np.zeros((image.ndim,) + image.shape, np.int64),
                    "return_indices": True},
    }[kind]
    with pytest.raises(RuntimeError):
        ndimage.distance_transform_edt(image, **kwargs)
    with pytest.raises(DistanceTransformError):
        distance_transform_edt(image, **kwargs)


@budget(6)
@given(image=cst.binary_images(shapes=cst.shapes(min_dims=1, max_dims=3, max_side=6)),
       sampling=st.floats(0.1, 4.0))
def test_fills_the_arrays_given_as_scipy_does(image: np.ndarray, sampling: float) -> None:
    shape = (image.ndim,) + image.shape
    want_d, want_i = np.zeros(image.shape), np.zeros(shape, np.int32)
    got_d, got_i = np.zeros(image.shape), np.zeros(shape, np.int32)
    assert ndimage.distance_transform_edt(image, sampling, True, True, want_d, want_i) is None
    assert distance_transform_edt(image, sampling, True, True, got_d, got_i) is None
    np.testing.assert_array_equal(got_d.view(np.uint64), want_d.view(np.uint64))
    np.testing.assert_array_equal(got_i, want_i)
