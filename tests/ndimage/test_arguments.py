"""chunkflow.ndimage's arguments: refusals by name, inputs and outputs of every kind.

Refusals: a keyword neither scipy's nor chunkflow's, what no halo bounds
(``iterations < 1``), what connected components cannot model (a shifted or asymmetric
structure for ``binary_fill_holes``), a mode mixing ``wrap`` with others,
``labeled_comprehension``; scipy's own refusals raised before any job creates anything.
Inputs and outputs: numpy arrays, chunkflow arrays, folders, fsspec ``memory://`` URLs
with ``storage_options``, ``out=`` with ``overwrite``, scipy's ``output`` as a dtype, a
numpy array or a chunkflow array, ``compute=False``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import dask.array as da
import numpy as np
import pytest
from scipy import ndimage as scipy_ndimage

import chunkflow
from chunkflow import ndimage
from chunkflow.errors import (
    ArgumentTypeError,
    ContainsArrayError,
    InvalidArgumentError,
)

IMAGE = np.random.default_rng(0).random((12, 10)).astype("f4")
MASK = IMAGE > 0.4

CALLS: dict[str, tuple[tuple[Any, ...], dict[str, Any]]] = {
    "gaussian_filter": ((IMAGE, 1.0), {}),
    "uniform_filter": ((IMAGE,), {}),
    "median_filter": ((IMAGE,), {"size": 3}),
    "minimum_filter": ((IMAGE,), {"size": 3}),
    "maximum_filter": ((IMAGE,), {"footprint": np.eye(3)}),
    "percentile_filter": ((IMAGE, 20), {"size": 3}),
    "rank_filter": ((IMAGE, 1), {"size": 3}),
    "sobel": ((IMAGE,), {}),
    "prewitt": ((IMAGE,), {}),
    "laplace": ((IMAGE,), {}),
    "gaussian_laplace": ((IMAGE, 1.0), {}),
    "gaussian_gradient_magnitude": ((IMAGE, 1.0), {}),
    "generic_filter": ((IMAGE, np.mean), {"size": 2}),
    "convolve": ((IMAGE, np.ones((2, 3))), {}),
    "correlate": ((IMAGE, np.ones((2, 3))), {}),
    "binary_erosion": ((MASK,), {}),
    "binary_dilation": ((MASK,), {}),
    "binary_opening": ((MASK,), {}),
    "binary_closing": ((MASK,), {}),
    "grey_erosion": ((IMAGE,), {"size": 3}),
    "grey_dilation": ((IMAGE,), {"size": 3}),
    "grey_opening": ((IMAGE,), {"size": 3}),
    "grey_closing": ((IMAGE,), {"size": 3}),
    "binary_fill_holes": ((MASK,), {}),
    "label": ((MASK,), {}),
    "find_objects": ((MASK.astype(int),), {}),
    "sum_labels": ((IMAGE, MASK.astype(int)), {}),
    "mean": ((IMAGE, MASK.astype(int), [0, 1]), {}),
    "variance": ((IMAGE,), {}),
    "minimum_position": ((IMAGE, MASK.astype(int), 1), {}),
    "center_of_mass": ((IMAGE,), {}),
    "histogram": ((IMAGE, 0, 1, 4), {}),
}


def test_every_public_name_is_scipy_s() -> None:
    assert ndimage.__all__ == sorted(ndimage.__all__)
    for name in ndimage.__all__:
        assert hasattr(scipy_ndimage, name), name
    assert chunkflow.ndimage is ndimage


@pytest.mark.parametrize("name", sorted(CALLS))
def test_result_equals_scipy_and_unknown_keywords_are_refused(name: str) -> None:
    args, kwargs = CALLS[name]
    got = getattr(ndimage, name)(*args, **kwargs)
    expected = getattr(scipy_ndimage, name)(*args, **kwargs)
    if isinstance(got, chunkflow.Array):
        np.testing.assert_allclose(got[...], expected)
    elif name == "label":
        np.testing.assert_array_equal(got[0][...], expected[0])
        assert got[1] == expected[1]
    elif name == "find_objects":
        assert got == expected
    else:
        np.testing.assert_allclose(np.asarray(got, float), np.asarray(expected, float))
    with pytest.raises(TypeError, match="unexpected keyword 'chunks'"):
        getattr(ndimage, name)(*args, **kwargs, chunks=4)


def test_what_no_halo_bounds_is_refused_by_name() -> None:
    with pytest.raises(InvalidArgumentError, match="iterations=-1"):
        ndimage.binary_dilation(MASK, iterations=-1)
    with pytest.raises(InvalidArgumentError, match="labeled_comprehension"):
        ndimage.labeled_comprehension(IMAGE, MASK, 1, np.sum, float, 0)
    with pytest.raises(InvalidArgumentError, match="mixes 'wrap'"):
        ndimage.gaussian_filter(IMAGE, 1.0, mode=["wrap", "reflect"])


def test_fill_holes_refuses_what_components_cannot_model() -> None:
    with pytest.raises(InvalidArgumentError, match="origin"):
        ndimage.binary_fill_holes(MASK, origin=1)
    with pytest.raises(InvalidArgumentError, match="not symmetric"):
        ndimage.binary_fill_holes(MASK, np.array([[0, 0, 0], [1, 1, 0], [0, 0, 0]]))
    with pytest.raises(InvalidArgumentError, match="shape"):
        ndimage.binary_fill_holes(MASK, np.ones((5, 5)))


def test_scipy_s_refusals_come_first_and_create_nothing(tmp_path: Path) -> None:
    out = tmp_path / "out.zarr"
    with pytest.raises(RuntimeError):  # scipy: a sigma per axis
        ndimage.gaussian_filter(IMAGE, [1.0, 2.0, 3.0], out=out)
    with pytest.raises(TypeError):  # scipy: no complex order statistics
        ndimage.median_filter(IMAGE.astype("c8"), 3, out=out)
    with pytest.raises(ValueError):  # scipy: an origin outside the footprint
        ndimage.correlate(IMAGE, np.ones(3), axes=0, origin=2, out=out)
    assert not out.exists()


def test_line_pass_filters_refuse_compute_false_and_multi_pass_resume() -> None:
    with pytest.raises(InvalidArgumentError, match="compute=False"):
        ndimage.uniform_filter(IMAGE, 3, compute=False)
    with pytest.raises(InvalidArgumentError, match="resume=True"):
        ndimage.uniform_filter(IMAGE, 3, out=chunkflow.MemoryStore(), resume=True)


def test_urls_with_storage_options_in_and_out() -> None:
    options = {"skip_instance_cache": False}
    url = "memory://ndimage-arguments/in.zarr"
    chunkflow.array(IMAGE, chunks=(5, 4), store=url, overwrite=True)
    got = ndimage.gaussian_filter(url, 1.5, mode="wrap", storage_options=options,
                                  out="memory://ndimage-arguments/out.zarr", overwrite=True)
    again = chunkflow.open_array("memory://ndimage-arguments/out.zarr")
    expected = scipy_ndimage.gaussian_filter(IMAGE, 1.5, mode="wrap")
    np.testing.assert_array_equal(got[...], expected)
    np.testing.assert_array_equal(again[...], expected)
    assert ndimage.maximum(url, storage_options=options) == IMAGE.max()


def test_out_folder_needs_overwrite_to_be_replaced(tmp_path: Path) -> None:
    out = tmp_path / "smooth.zarr"
    first = ndimage.sobel(IMAGE, out=out)
    assert isinstance(first, chunkflow.Array) and first.dtype == IMAGE.dtype
    with pytest.raises(ContainsArrayError):
        ndimage.sobel(IMAGE, 0, out=out)
    second = ndimage.sobel(IMAGE, 0, out=out, overwrite=True)
    np.testing.assert_array_equal(second[...], scipy_ndimage.sobel(IMAGE, 0))
    labels, count = ndimage.label(MASK, out=tmp_path / "labels.zarr")
    assert count == scipy_ndimage.label(MASK)[1] and labels.dtype == np.int32


def test_output_as_dtype_numpy_array_or_chunkflow_array() -> None:
    as_dtype = ndimage.gaussian_filter(IMAGE, 1.0, output=np.float64)
    assert as_dtype.dtype == np.float64
    filled = np.zeros(IMAGE.shape, "f8")
    assert ndimage.laplace(IMAGE, output=filled) is filled
    np.testing.assert_array_equal(filled, scipy_ndimage.laplace(IMAGE, output=np.float64))
    target = chunkflow.zeros(IMAGE.shape, chunks=(4, 4), dtype="f8")
    assert ndimage.laplace(IMAGE, output=target) is target
    np.testing.assert_array_equal(target[...], filled)
    with pytest.raises(InvalidArgumentError, match="out= is given too"):
        ndimage.laplace(IMAGE, output=target, out=chunkflow.MemoryStore())
    counts = np.zeros(MASK.shape, "u2")
    assert ndimage.label(MASK, output=counts) == scipy_ndimage.label(MASK)[1]


def test_compute_false_returns_the_dask_array() -> None:
    lazy = ndimage.median_filter(chunkflow.array(IMAGE, chunks=(4, 4)), 3, compute=False)
    assert isinstance(lazy, da.Array)
    np.testing.assert_array_equal(lazy.compute(), scipy_ndimage.median_filter(IMAGE, 3))


def test_statistics_refuse_job_keywords_they_do_not_take() -> None:
    with pytest.raises(ArgumentTypeError, match="'out'"):
        ndimage.mean(IMAGE, out=chunkflow.MemoryStore())
