"""ChunkIO's shape-change section: clearing a grown region, trimming, repairing."""

from __future__ import annotations

import numpy as np
import pytest

import chunkflow
from chunkflow.engine.repair import (
    RepairReport,
    clear_grown_region,
    repair_array,
    trim_beyond_shape,
)
from chunkflow.storage import MemoryStore


def _filled(zarr_format: int) -> chunkflow.Array:
    # Two chunks of 4: [0, 4) and [4, 8), both holding 7 (fill value 0).
    z = chunkflow.zeros(6, chunks=4, dtype="u1", store=MemoryStore(), zarr_format=zarr_format)
    z[:] = 7
    return z


@pytest.mark.parametrize("zarr_format", [2, 3])
def test_trim_beyond_shape_deletes_outside_chunks_and_resets_padding(zarr_format: int) -> None:
    z = _filled(zarr_format)
    smaller = z._staged(z.metadata.with_shape((3,)))._io  # the grid of shape (3,)
    assert trim_beyond_shape(smaller) == (1, 1)
    assert sorted(k for k in z.store if not k.endswith(("zarr.json", ".zarray"))) == [
        "c/0" if zarr_format == 3 else "0"]
    np.testing.assert_array_equal(z[:], [7, 7, 7, 0, 0, 0])
    assert trim_beyond_shape(smaller) == (0, 0)  # nothing left to do


@pytest.mark.parametrize("zarr_format", [2, 3])
def test_trim_beyond_shape_resets_padding_only_in_the_given_dims(zarr_format: int) -> None:
    z = chunkflow.zeros((3, 3), chunks=(2, 2), dtype="u1", store=MemoryStore(),
                        zarr_format=zarr_format)
    z[:] = 5
    smaller = z._staged(z.metadata.with_shape((3, 1)))._io
    # dims picks the chunks cut in those dimensions; each is reset beyond the shape
    # in every dimension. Chunks (0, 1) and (1, 1) lie outside; (1, 0) is cut in dim 0.
    assert trim_beyond_shape(smaller, dims=[0]) == (2, 1)
    assert trim_beyond_shape(smaller, dims=[1]) == (0, 1)  # (0, 0), cut in dim 1 only
    np.testing.assert_array_equal(z[:], [[5, 0, 0]] * 3)


def test_clear_grown_region_makes_it_read_as_fill_value() -> None:
    z = _filled(3)
    smaller = z._staged(z.metadata.with_shape((3,)))._io
    clear_grown_region(smaller, (3,), (6,))
    np.testing.assert_array_equal(z[:], [7, 7, 7, 0, 0, 0])


def test_repair_reports_what_it_removed() -> None:
    z = _filled(2)
    report = repair_array(z._staged(z.metadata.with_shape((3,)))._io, 3600.0)
    assert report == RepairReport(deleted_chunks=1, cleared_chunks=1, removed_temporaries=0)
