"""chunkflow.ndimage's binary and grey morphology against scipy.ndimage, bit for bit.

Binary operations with drawn structures (scipy's label structures and arbitrary
boolean ones), iterations, border values, origins and masks; grey operations with
sizes, footprints and structures, every mode and the dtypes scipy takes, NaN included
(the 1-D passes over a box whose NaN results depend on the line).
"""

from __future__ import annotations

import math
import warnings
from typing import Any

import numpy as np
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
        try:
            expected = getattr(scipy_ndimage, name)(data, **params)
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
