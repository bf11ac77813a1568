"""chunkflow.ndimage.binary_fill_holes against scipy.ndimage's, bit for bit.

Binary images of every density (and images of other dtypes, NaN being foreground as
``numpy.logical_not`` says), structures that ``scipy.ndimage.label`` takes (any
centre value, and sides of 1), ``axes``, chunks of 1 and edge chunks, one chunk per
block so that every hole crosses blocks and is found by the merge tree.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from hypothesis import example, given
from hypothesis import strategies as st
from scipy import ndimage as scipy_ndimage

import chunkflow
from chunkflow import ndimage
from chunkflow.testing import strategies as cst
from tests.differential.conftest import budget


@st.composite
def cases(draw: st.DrawFn) -> tuple[Any, ...]:
    data = draw(cst.binary_images(shapes=cst.shapes(min_dims=1, max_dims=3, zero_sides=False,
                                                    max_side=10)))
    if draw(st.integers(0, 4)) == 0:  # other dtypes: nonzero is foreground
        data = data * draw(st.sampled_from([np.float32(np.nan), np.int16(-3), np.float64(-0.0),
                                            np.uint8(7)]))
    axes = None
    n = data.ndim
    if data.ndim > 1 and draw(st.integers(0, 3)) == 0:
        axes = tuple(sorted(draw(st.sets(st.integers(0, data.ndim - 1), min_size=1))))
        n = len(axes)
    structure = draw(st.none() | cst.structures(n))
    if structure is not None and n > 1 and draw(st.integers(0, 4)) == 0:
        structure = np.asarray(structure, bool)[1:2]  # a side of 1
    return (data, draw(cst.chunk_shapes(data.shape)), structure, axes,
            draw(cst.schedulers(processes=False)))


@budget(15)
@given(cases())
@example((np.pad(np.pad(np.zeros((2, 2), bool), 1, constant_values=True), 1), (1, 1), None,
          None, "sync"))
@example((np.array([[1, 1, 1, 1], [1, 0, 0, 1], [1, 0, 1, 1], [0, 1, 1, 1]], bool), (2, 2),
          np.ones((3, 3), bool), None, "threads"))  # diagonal escape to the border
@example((np.array([[1, 1, 1], [1, 0, 1], [1, 1, 1]], bool), (1, 1),
          np.array([[0, 0, 0], [1, 1, 1], [0, 0, 0]], bool), None, "sync"))  # rows only
def test_fill_holes_equals_scipy(case: tuple[Any, ...]) -> None:
    data, chunks, structure, axes, scheduler = case
    expected = scipy_ndimage.binary_fill_holes(data, structure, axes=axes)
    z = chunkflow.array(data, chunks=chunks)
    got = ndimage.binary_fill_holes(z, structure, axes=axes, scheduler=scheduler,
                                    blocks=(1,) * data.ndim)
    assert got.dtype == expected.dtype
    np.testing.assert_array_equal(got[...], expected)


@budget(5)
@given(data=cst.binary_images(shapes=cst.shapes(min_dims=2, max_dims=3, zero_sides=False,
                                                max_side=24)),
       relabelled=st.booleans())
@example(data=np.pad(np.pad(np.zeros((6, 6), bool), 2, constant_values=True), 3),
         relabelled=False)
def test_fill_holes_from_and_to_folders_with_every_default(tmp_path_factory: Any, data: np.ndarray,
                                                           relabelled: bool) -> None:
    # The path users take: file:// URLs in and out with storage_options, no tuning
    # argument; with the chunk cache or without it (then the write pass labels each
    # block again).
    folder = tmp_path_factory.mktemp("holes")
    chunks = tuple(max(1, n // 3) for n in data.shape)
    chunkflow.array(data, chunks=chunks, store=str(folder / "in.zarr"))
    settings = {"chunkflow.cache.max-bytes": 0} if relabelled else {}
    with chunkflow.config.set(settings):
        got = ndimage.binary_fill_holes(f"file://{folder}/in.zarr",
                                        out=f"file://{folder}/new/out.zarr",
                                        storage_options={"auto_mkdir": True})
    np.testing.assert_array_equal(got[...], scipy_ndimage.binary_fill_holes(data))
    assert got.dtype == bool and got.chunks == chunks
