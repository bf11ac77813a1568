"""A new output of another dtype than its source: the source's fill value goes along
only where the new dtype holds it (a float image's 0.0 is a boolean mask's False)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from scipy import ndimage as scipy_ndimage

import chunkflow
from chunkflow import ndimage
from chunkflow.api.creation import like_kwargs


def test_binary_opening_of_a_float_array_into_a_new_folder(tmp_path: Path) -> None:
    image = np.random.default_rng(3).random((40, 30))
    smooth = chunkflow.array(image, chunks=(16, 16), store=str(tmp_path / "smooth.zarr"))
    opened = ndimage.binary_opening(smooth, iterations=2, out=str(tmp_path / "mask.zarr"))
    np.testing.assert_array_equal(opened[...], scipy_ndimage.binary_opening(image, iterations=2))
    assert opened.dtype == np.dtype(bool) and opened.fill_value == np.False_


@pytest.mark.parametrize(("fill", "dtype", "expected"), [
    (0.0, "bool", False), (7.0, "u1", 7), (0.5, "u1", None), (np.nan, "f4", np.nan),
    (np.nan, "i4", None), (-1, "u2", None), (300, "u1", None)])
def test_a_fill_value_goes_along_when_the_dtype_holds_it(fill: float, dtype: str,
                                                         expected: float | None) -> None:
    source = chunkflow.full((4,), fill, chunks=(2,), dtype="f8" if isinstance(fill, float) else "i8")
    like = like_kwargs(source, dtype=np.dtype(dtype))
    if expected is None:
        assert "fill_value" not in like
    else:
        np.testing.assert_array_equal(np.array(like["fill_value"]), np.array(expected, dtype))
        chunkflow.create(**like)  # a valid fill value for the new dtype
