"""chunkflow.ndimage's binary and grey morphology against scipy.ndimage, bit for bit.

Binary operations with drawn structures (scipy's label structures and arbitrary
boolean ones), iterations, border values, origins and masks; grey operations with
sizes, footprints and structures, every mode and the dtypes scipy takes, NaN included
(the 1-D passes over a box whose NaN results depend on the line).
"""

from __future__ import annotations

import math
import os
import subprocess
import sys
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import example, given
from hypothesis import strategies as st
from scipy import ndimage as scipy_ndimage

import chunkflow
from chunkflow import ndimage
from chunkflow.testing import strategies as cst
from tests.differential.conftest import budget
from tests.differential.test_ndimage_filters import MODES, _same

BINARY = ("binary_erosion", "binary_dilation", "binary_opening", "binary_closing")
GREY = ("grey_erosion", "grey_dilation", "grey_opening", "grey_closing")


def _run(name: str, data: np.ndarray, chunks: tuple[int, ...], params: dict[str, Any],
         scheduler: str) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        oracle = dict(params)
        if name in BINARY and oracle.get("iterations", 1) > 1:
            # scipy's default changed-pixel path corrupts the heap when the structure is
            # large against the array (scipy issue 11400; found here by the long profile):
            # its brute force gives the same answer without the crash.
            oracle["brute_force"] = True
        try:
            expected = getattr(scipy_ndimage, name)(data, **oracle)
        except (TypeError, ValueError, RuntimeError) as error:
            expected = error
        z = chunkflow.array(data, chunks=chunks)
        blocks = (1,) * data.ndim  # one chunk per block: every halo crosses chunks
        job_params = dict(params)
        if isinstance(job_params.get("mask"), np.ndarray):
            job_params["mask"] = chunkflow.array(job_params["mask"], chunks=chunks)
        if isinstance(expected, Exception):
            try:
                getattr(ndimage, name)(z, **job_params, scheduler=scheduler, blocks=blocks)
            except type(expected):
                return
            raise AssertionError(f"scipy raised {expected!r}; chunkflow did not")
        got = getattr(ndimage, name)(z, **job_params, scheduler=scheduler, blocks=blocks)
    _same(np.asarray(got[...]), np.asarray(expected))


@st.composite
def binary_cases(draw: st.DrawFn) -> tuple[Any, ...]:
    data = draw(cst.binary_images(shapes=cst.shapes(min_dims=1, max_dims=3, zero_sides=False,
                                                    max_side=9)))
    ndim = data.ndim
    params: dict[str, Any] = {"iterations": draw(st.integers(1, 3))}
    kind = draw(st.sampled_from(["default", "label", "box"]))
    sides = [3] * ndim
    if kind == "label":
        params["structure"] = draw(cst.structures(ndim))
    elif kind == "box":
        sides = draw(st.lists(st.integers(1, 4), min_size=ndim, max_size=ndim))
        flat = draw(st.lists(st.booleans(), min_size=math.prod(sides), max_size=math.prod(sides)))
        params["structure"] = np.array(flat, bool).reshape(sides)
    if draw(st.booleans()):
        params["origin"] = [draw(st.integers(-(s // 2), (s - 1) // 2)) for s in sides]
    params["border_value"] = draw(st.sampled_from([0, 1]))
    if draw(st.integers(0, 3)) == 0:
        params["mask"] = draw(cst.binary_images(shapes=st.just(data.shape)))
    return (data, draw(cst.chunk_shapes(data.shape)), draw(st.sampled_from(BINARY)), params,
            draw(cst.schedulers(processes=False)))


@budget(40)
@given(binary_cases())
@example((np.ones((5, 6), bool), (1, 1), "binary_erosion",
          {"iterations": 3, "border_value": 1}, "sync"))
@example((np.arange(81).reshape(9, 9) == 60, (2, 2), "binary_dilation",
          {"iterations": 3, "border_value": 0}, "sync"))  # the halo grows with iterations
def test_binary_equals_scipy(case: tuple[Any, ...]) -> None:
    data, chunks, name, params, scheduler = case
    _run(name, data, chunks, params, scheduler)


@given(binary_cases(), st.data())
def test_an_origin_off_the_structure_is_refused(case: tuple[Any, ...], data: st.DataObject
                                                ) -> None:
    """scipy's binary_erosion does not check ``origin`` and reads outside its buffers
    (a crash: scipy issue 22533); chunkflow refuses it as scipy's binary_dilation does."""
    image, chunks, name, params, scheduler = case
    structure = params.get("structure", np.ones((3,) * image.ndim, bool))
    shape = np.shape(structure)
    axis = data.draw(st.integers(0, len(shape) - 1))
    origin = [0] * len(shape)
    low, high = -(shape[axis] // 2), (shape[axis] - 1) // 2
    origin[axis] = data.draw(st.sampled_from([low - 1, high + 1, low - 3]))
    job = {**params, "structure": structure, "origin": origin}
    job.pop("mask", None)
    with pytest.raises(ValueError, match=f"origin=.* is invalid on axis {axis}"):
        getattr(ndimage, name)(chunkflow.array(image, chunks=chunks), **job,
                               scheduler=scheduler)


_MALLOC_DEBUG = Path("/usr/lib/x86_64-linux-gnu/libc_malloc_debug.so.0")
_CORRUPTING = """
import numpy as np, chunkflow
from chunkflow import ndimage
data = np.array([[[1,1,0,0],[0,0,0,0],[0,0,0,1],[0,0,1,1]],
                 [[1,0,1,0],[1,0,1,0],[1,1,1,1],[1,1,0,1]]], bool)
structure = np.array([[[1,1,1],[1,1,0],[1,1,1]], [[1,0,1],[0,0,1],[1,0,0]],
                      [[0,0,0],[0,0,0],[0,1,0]], [[1,1,0],[1,1,1],[1,1,0]]], bool)
mask = np.array([[[1,0,1,1],[1,1,1,1],[0,0,0,0],[1,1,0,1]],
                 [[1,0,0,1],[1,1,1,0],[0,0,0,1],[0,1,1,1]]], bool)
for _ in range(20):
    ndimage.binary_dilation(chunkflow.array(data, chunks=(2, 4, 4)), structure, iterations=3,
                            mask=chunkflow.array(mask, chunks=(2, 4, 4)), border_value=1,
                            origin=[-2, 0, 0], scheduler="sync")[...]
"""


@pytest.mark.skipif(not _MALLOC_DEBUG.exists(), reason="needs glibc's malloc debug library")
def test_no_heap_corruption_under_glibcs_malloc_check() -> None:
    """The case (found by the long profile) on which scipy's default binary_dilation
    corrupts the heap (``realloc(): invalid next size``): chunkflow's, under glibc's
    consistency checks, exits cleanly."""
    env = {**os.environ, "LD_PRELOAD": str(_MALLOC_DEBUG),
           "GLIBC_TUNABLES": "glibc.malloc.check=3"}
    done = subprocess.run([sys.executable, "-c", _CORRUPTING], env=env, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]


@st.composite
def grey_cases(draw: st.DrawFn) -> tuple[Any, ...]:
    data = draw(cst.varied_arrays(cst.dtypes(kinds="biuf"),
                                  cst.shapes(min_dims=1, max_dims=3, zero_sides=False,
                                             max_side=8)))
    ndim = data.ndim
    sides = draw(st.lists(st.integers(1, 4), min_size=ndim, max_size=ndim))
    params: dict[str, Any] = {}
    kind = draw(st.sampled_from(["size", "footprint", "box", "structure"]))
    if kind == "size":
        params["size"] = sides
    else:
        flat = draw(st.lists(st.booleans(), min_size=math.prod(sides), max_size=math.prod(sides)))
        footprint = np.array(flat, bool).reshape(sides)
        footprint.flat[0] = True
        if kind == "box":
            footprint[...] = True
        if kind == "structure":
            values = draw(st.lists(st.integers(-2, 2), min_size=len(flat), max_size=len(flat)))
            params["structure"] = np.array(values, float).reshape(sides)
        else:
            params["footprint"] = footprint
    if draw(st.booleans()):
        params["origin"] = [draw(st.integers(-(s // 2), (s - 1) // 2)) for s in sides]
    params["mode"] = draw(st.sampled_from(MODES))
    if "constant" in params["mode"]:
        params["cval"] = draw(st.integers(-3, 300) | st.floats(-10, 10) | st.just(np.nan))
    return (data, draw(cst.chunk_shapes(data.shape)), draw(st.sampled_from(GREY)), params,
            draw(cst.schedulers(processes=False)))


@budget(40)
@given(grey_cases())
@example((np.array([np.nan, 1.0, 0.9, np.nan, np.nan, 0.8, 0.3, 0.1]), (2,), "grey_erosion",
          {"size": [4], "mode": "reflect"}, "sync"))  # NaN results depend on the line before
@example((np.array([[np.nan, 1.0, 0.9, np.nan], [np.nan, 0.8, 0.3, 0.1]]), (1, 2),
          "grey_opening", {"size": [1, 4], "mode": "reflect"}, "sync"))
def test_grey_equals_scipy(case: tuple[Any, ...]) -> None:
    data, chunks, name, params, scheduler = case
    _run(name, data, chunks, params, scheduler)
