"""``chunkflow.skimage.segmentation`` against ``skimage.segmentation``, on random label
images, chunkings and schedulers: the same image (values and dtype), the same maps, or
an error of the same builtin class."""

from __future__ import annotations

import tempfile
import warnings
from typing import Any

import dask
import numpy as np
import skimage.segmentation
from hypothesis import example, given
from hypothesis import strategies as st

import chunkflow
from chunkflow.skimage import segmentation
from chunkflow.testing import strategies as cst
from tests.differential.conftest import budget
from tests.differential.pools import process_pool

SHAPES = cst.shapes(min_dims=1, max_dims=3, max_side=9, zero_sides=False)


def outcome(call: Any) -> tuple[str, Any]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            return "value", call()
        except (ValueError, TypeError, MemoryError) as error:
            return "error", error


def builtin_classes(error: BaseException) -> set[type]:
    return {c for c in type(error).__mro__ if c.__module__ == "builtins"} - {
        BaseException, Exception, object}


def assert_same_image(got: Any, expected: np.ndarray, what: str) -> None:
    values = got[...]
    assert values.dtype.newbyteorder("=") == expected.dtype.newbyteorder("="), (
        what, values.dtype, expected.dtype)
    np.testing.assert_array_equal(values, expected, err_msg=what)


@st.composite
def stored_labels(draw: st.DrawFn, dtypes: Any = None) -> tuple[np.ndarray, Any]:
    data = draw(st.one_of(
        cst.label_images(shapes=SHAPES, **({"dtypes": dtypes} if dtypes else {})),
        cst.label_images(shapes=SHAPES, dtypes=cst.dtypes(kinds="u", byteorder="any"),
                         max_labels=3).map(lambda a: a % 50)))
    chunks = draw(cst.chunk_shapes(data.shape))
    return data, chunks


def _source(data: np.ndarray, chunks: Any, kind: str, store: Any = None) -> Any:
    if kind == "numpy":
        return data
    return chunkflow.create_array(store, data=data, chunks=chunks)


def check_relabel(data: np.ndarray, chunks: Any, offset: int, kind: str, scheduler: str,
                  store: Any = None) -> None:
    source = _source(data, chunks, kind, store)
    got = outcome(lambda: segmentation.relabel_sequential(source, offset, scheduler=scheduler))
    expected = outcome(lambda: skimage.segmentation.relabel_sequential(data, offset))
    what = f"relabel_sequential {data.dtype} {data.shape} offset={offset}"
    assert got[0] == expected[0], (what, got, expected)
    if got[0] == "error":
        assert builtin_classes(got[1]) & builtin_classes(expected[1]), (what, got, expected)
        return
    (image, forward, inverse), (image_e, forward_e, inverse_e) = got[1], expected[1]
    assert_same_image(image, image_e, what)
    for ours, theirs in ((forward, forward_e), (inverse, inverse_e)):
        np.testing.assert_array_equal(ours.in_values, theirs.in_values, err_msg=what)
        np.testing.assert_array_equal(ours.out_values, theirs.out_values, err_msg=what)
        assert ours.out_values.dtype == theirs.out_values.dtype, what
        probe = np.unique(np.concatenate([theirs.in_values[:5], [0, 1, 2]])).astype(
            theirs.in_values.dtype)
        np.testing.assert_array_equal(ours[probe], theirs[probe], err_msg=what)


@budget(40)
@given(stored_labels(), st.sampled_from([1, 1, 5, 300, 0, -2]),
       st.sampled_from(["stored", "stored", "numpy"]), cst.schedulers(processes=False))
@example((np.array([[0, 7, 7], [42, 0, 7]], "u1"), (1, 2)), 255, "stored", "sync")
@example((np.array([3, -1], "i2"), (1,)), 1, "stored", "sync")
def test_relabel_sequential(labels: tuple[np.ndarray, Any], offset: int, kind: str,
                            scheduler: str) -> None:
    check_relabel(*labels, offset, kind, scheduler)


@budget(2)
@given(stored_labels(), st.sampled_from([1, 4]))
def test_relabel_sequential_on_processes(labels: tuple[np.ndarray, Any], offset: int) -> None:
    with tempfile.TemporaryDirectory() as folder, dask.config.set(pool=process_pool()):
        data, chunks = labels
        source = chunkflow.create_array(f"{folder}/a.zarr", data=data, chunks=chunks)
        integers = data.dtype.kind in "iu" and data.min() >= 0
        got = segmentation.relabel_sequential(source, offset, out=f"{folder}/b.zarr",
                                              scheduler="processes") if integers else None
        if got is not None:
            assert_same_image(got[0], skimage.segmentation.relabel_sequential(data, offset)[0],
                              "relabel_sequential on processes")


def check_clear_border(data: np.ndarray, chunks: Any, buffer_size: int, bgval: Any,
                       scheduler: str, store: Any = None, out: Any = None) -> None:
    source = chunkflow.create_array(store, data=data, chunks=chunks)
    got = outcome(lambda: segmentation.clear_border(source, buffer_size, bgval, out=out,
                                                    scheduler=scheduler))
    expected = outcome(lambda: skimage.segmentation.clear_border(data, buffer_size, bgval))
    what = f"clear_border {data.dtype} {data.shape} buffer_size={buffer_size} bgval={bgval}"
    assert got[0] == expected[0], (what, got, expected)
    if got[0] == "error":
        assert builtin_classes(got[1]) & builtin_classes(expected[1]), (what, got, expected)
        return
    assert_same_image(got[1], expected[1], what)


@budget(30)
@given(stored_labels(), st.sampled_from([0, 0, 1, 2, 5]), st.sampled_from([0, 0, 1, 7]),
       cst.schedulers(processes=False))
@example((np.array([[0, 0, 0, 0], [0, 1, 0, 2], [0, 0, 0, 0]]), (2, 2)), 0, 0, "sync")
@example((np.array([[3, 3, 0], [0, 1, 0], [0, 0, 0]], "u1"), (1, 1)), 0, 7, "sync")
def test_clear_border(labels: tuple[np.ndarray, Any], buffer_size: int, bgval: int,
                      scheduler: str) -> None:
    data, chunks = labels
    check_clear_border(data, chunks, buffer_size, bool(bgval) if data.dtype == bool else bgval,
                       scheduler)


@budget(2)
@given(stored_labels())
def test_clear_border_on_processes(labels: tuple[np.ndarray, Any]) -> None:
    with tempfile.TemporaryDirectory() as folder, dask.config.set(pool=process_pool()):
        check_clear_border(*labels, 0, 0, "processes", f"{folder}/a.zarr", f"{folder}/b.zarr")


@budget(30)
@given(stored_labels(dtypes=cst.dtypes(kinds="iu")), st.sampled_from([0, 1, 1.5, 2, 3]),
       st.sampled_from([1, 1, 0.5, 2.0]), cst.schedulers(processes=False))
@example((np.array([0, 0, 1, 0, 0, 0, 2, 0]), (3,)), 1, 1, "sync")
def test_expand_labels(labels: tuple[np.ndarray, Any], distance: float, spacing: float,
                       scheduler: str) -> None:
    data, chunks = labels
    source = chunkflow.create_array(None, data=data, chunks=chunks)
    got = outcome(lambda: segmentation.expand_labels(source, distance, spacing,
                                                     scheduler=scheduler))
    expected = outcome(lambda: skimage.segmentation.expand_labels(data, distance, spacing))
    what = f"expand_labels {data.dtype} {data.shape} distance={distance} spacing={spacing}"
    assert got[0] == expected[0], (what, got, expected)
    if got[0] == "value":
        assert_same_image(got[1], expected[1], what)
