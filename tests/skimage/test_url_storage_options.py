"""Every image-writing function of chunkflow.skimage and chunkflow.ndimage reads a URL
and writes ``out=`` a URL with ``storage_options``, equal to its oracle.

``local://`` is fsspec's local file system (chunkflow opens ``file://`` as a local
folder, which takes no storage options); ``auto_mkdir`` makes the parent folders.
clear_border, remove_small_objects and remove_small_holes write an intermediate label
array to a folder of this machine: the caller's storage_options once reached it too
and were refused (issue 36).
"""

from __future__ import annotations

import itertools
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import scipy.ndimage
import skimage.measure
import skimage.morphology
import skimage.segmentation

import chunkflow
from chunkflow import ndimage
from chunkflow.skimage import measure, morphology, segmentation

OPTIONS = {"auto_mkdir": True}
RNG = np.random.default_rng(36)
IMAGE = RNG.random((19, 23))
MASK = IMAGE > 0.55
LABELS = (np.arange(19 * 23).reshape(19, 23) // 29 % 5).astype("i4")
LABELS[7:10, 8:12] = 0

# name: (chunkflow function, oracle, input, scipy's / scikit-image's arguments)
CASES: dict[str, tuple[Callable[..., Any], Callable[..., Any], np.ndarray, dict[str, Any]]] = {
    "gaussian_filter": (ndimage.gaussian_filter, scipy.ndimage.gaussian_filter, IMAGE,
                        {"sigma": 1.5}),
    "uniform_filter": (ndimage.uniform_filter, scipy.ndimage.uniform_filter, IMAGE,
                       {"size": 3}),
    "median_filter": (ndimage.median_filter, scipy.ndimage.median_filter, IMAGE, {"size": 3}),
    "minimum_filter": (ndimage.minimum_filter, scipy.ndimage.minimum_filter, IMAGE,
                       {"size": 3}),
    "sobel": (ndimage.sobel, scipy.ndimage.sobel, IMAGE, {}),
    "correlate": (ndimage.correlate, scipy.ndimage.correlate, IMAGE,
                  {"weights": np.arange(9.0).reshape(3, 3)}),
    "binary_opening": (ndimage.binary_opening, scipy.ndimage.binary_opening, MASK, {}),
    "grey_closing": (ndimage.grey_closing, scipy.ndimage.grey_closing, IMAGE, {"size": 3}),
    "binary_fill_holes": (ndimage.binary_fill_holes, scipy.ndimage.binary_fill_holes, MASK,
                          {}),
    "label": (lambda x, **k: ndimage.label(x, **k)[0],
              lambda x: scipy.ndimage.label(x)[0], MASK, {}),
    "distance_transform_edt": (ndimage.distance_transform_edt,
                               scipy.ndimage.distance_transform_edt, MASK, {}),
    "remove_small_objects": (morphology.remove_small_objects,
                             skimage.morphology.remove_small_objects, MASK, {"max_size": 3}),
    "remove_small_objects-labels": (morphology.remove_small_objects,
                                    skimage.morphology.remove_small_objects, LABELS,
                                    {"max_size": 20}),
    "remove_small_holes": (morphology.remove_small_holes,
                           skimage.morphology.remove_small_holes, MASK, {"max_size": 3}),
    "relabel_sequential": (lambda x, **k: segmentation.relabel_sequential(x, **k)[0],
                           lambda x: skimage.segmentation.relabel_sequential(x)[0], LABELS,
                           {}),
    "clear_border": (segmentation.clear_border, skimage.segmentation.clear_border, LABELS, {}),
    "expand_labels": (segmentation.expand_labels, skimage.segmentation.expand_labels, LABELS,
                      {"distance": 2}),
    "measure.label": (measure.label, skimage.measure.label, LABELS, {}),
}
_COUNT = itertools.count()


def _url(folder: Path, name: str) -> str:
    # a folder that does not exist yet: auto_mkdir makes it
    return f"local://{folder}/{next(_COUNT)}/more/{name}.zarr"


@pytest.mark.parametrize("name", sorted(CASES))
def test_url_in_url_out_with_storage_options(tmp_path: Path, name: str) -> None:
    ours, oracle, data, arguments = CASES[name]
    source = _url(tmp_path, "in")
    chunkflow.create_array(source, data=data, chunks=(8, 7), storage_options=OPTIONS)
    out = _url(tmp_path, "out")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # scikit-image's and ours alike
        result = ours(source, out=out, storage_options=OPTIONS, **arguments)
        expected = oracle(data, **arguments)
    written = chunkflow.open(out, mode="r", storage_options=OPTIONS)
    if name == "distance_transform_edt":  # scipy's results by their names in a group
        written = written["distances"]
    assert isinstance(result, chunkflow.Array)
    assert written.dtype == expected.dtype, name
    np.testing.assert_array_equal(written[...], expected)
