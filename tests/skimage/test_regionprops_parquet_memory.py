"""regionprops_table(out="....parquet") holds one row group of objects at a time: its
peak memory (numpy's allocations, as tracemalloc sees them) follows the row group
size, not the number of objects."""

from __future__ import annotations

import gc
import tracemalloc
from pathlib import Path

import numpy as np
import pytest

import chunkflow
from chunkflow.skimage import measure

pq = pytest.importorskip("pyarrow.parquet")

PROPERTIES = ("label", "area", "bbox", "centroid")
MiB = 2**20


def dots(side: int) -> np.ndarray:
    """A ``side`` x ``side`` image of one-voxel objects on every other row and column,
    numbered 1, 2, ... in raster order: ``(side // 2)**2`` objects."""
    labels = np.zeros((side, side), np.int32)
    count = (side // 2) ** 2
    labels[::2, ::2] = np.arange(1, count + 1, dtype=np.int32).reshape(side // 2, side // 2)
    return labels


def peak_writing(source: chunkflow.Array, path: Path, row_group_size: int) -> int:
    """tracemalloc's peak while the table is measured and written, in bytes."""
    gc.collect()
    tracemalloc.start()
    try:
        measure.regionprops_table(source, properties=PROPERTIES, out=str(path),
                                  row_group_size=row_group_size, blocks=(1, 1),
                                  scheduler="sync")
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_parquet_output_holds_one_row_group_of_objects(tmp_path: Path) -> None:
    group = 50_000
    small = chunkflow.create_array(str(tmp_path / "small.zarr"), data=dots(1000),
                                   chunks=(250, 250))
    large = chunkflow.create_array(str(tmp_path / "large.zarr"), data=dots(2000),
                                   chunks=(250, 250))
    # Imports and first-use caches (pyarrow, scikit-image) out of the measurement.
    measure.regionprops_table(dots(4), properties=PROPERTIES, out=str(tmp_path / "w.parquet"))
    peak_small = peak_writing(small, tmp_path / "small.parquet", group)
    peak_large = peak_writing(large, tmp_path / "large.parquet", group)

    objects = 1000**2
    written = pq.ParquetFile(tmp_path / "large.parquet")
    assert written.metadata.num_rows == objects
    assert [written.metadata.row_group(i).num_rows for i in range(written.num_row_groups)] \
        == [group] * (objects // group)
    last = written.read_row_group(written.num_row_groups - 1)
    np.testing.assert_array_equal(last["label"].to_numpy(),
                                  np.arange(objects - group + 1, objects + 1))
    np.testing.assert_array_equal(last["bbox-0"].to_numpy(),
                                  2 * ((np.arange(objects - group, objects)) // 1000))
    # The whole table's columns alone (8 float64 or int64 values per object) would
    # be 61 MiB; what is held follows the row group (about 270 bytes per object of a
    # group: its partial rows, merged rows and columns) and not the number of objects
    # (four times as many here as in the small image).
    whole = objects * 8 * 8
    assert peak_large < whole / 2, (peak_large / MiB, whole / MiB)
    assert peak_large < 600 * group, peak_large / MiB
    assert peak_large < 1.25 * peak_small + 2 * MiB, (peak_large / MiB, peak_small / MiB)
