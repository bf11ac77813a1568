"""store and to_chunkflow: numpy's output casting rule, and outputs that are sources
(issue 26, points 2 and 5)."""

from __future__ import annotations

import re
from pathlib import Path

import dask.array as da
import numpy as np
import pytest

import chunkflow
from chunkflow.errors import CastingError, OutputIsSourceError, UsageError


def _halves() -> tuple[np.ndarray, da.Array]:
    data = np.arange(65534, 65534 - 30 * 20, -1).astype("u2").reshape(30, 20)
    return data, da.from_array(data, chunks=(7, 9)) * 0.5  # float64


def test_store_refuses_a_cast_numpy_refuses_before_writing() -> None:
    data, x = _halves()
    z = chunkflow.zeros((30, 20), chunks=(8, 8), dtype="u1")
    with pytest.raises(CastingError, match=r"float64 to the output's dtype uint8.*same_kind"):
        chunkflow.store(x, z, casting="same_kind")
    assert not z[:].any()  # nothing written
    chunkflow.store(x, z, casting="unsafe")
    np.testing.assert_array_equal(z[:], (data * 0.5).astype("u1"))
    # int64 into int16 is the same kind: numpy allows it, with its wrap-around.
    y = chunkflow.zeros((30, 20), chunks=(8, 8), dtype="i2")
    chunkflow.store(da.from_array(data.astype("i8") * 3, chunks=9), y, casting="same_kind")
    np.testing.assert_array_equal(y[:], (data.astype("i8") * 3).astype("i2"))


def test_store_refuses_a_value_that_changes_by_default() -> None:
    data, x = _halves()
    z = chunkflow.zeros((30, 20), chunks=(8, 8), dtype="u1")
    # The write task of chunk (0, 0) checks its block: the first value does not fit.
    with pytest.raises(CastingError, match=r"array '/' in memory:.*chunk keys? 'c/\d/\d'.*"
                       r"the value \d+\.0 at \(\d+, \d+\) changes when cast to the output's "
                       r"dtype uint8 \(out of its range 0\.\.255\); (\d+) of \1 values") as refused:
        chunkflow.store(x, z, scheduler="sync")
    _assert_names_a_value_of(refused, data * 0.5)
    y = chunkflow.zeros((30, 20), chunks=(8, 8), dtype="i2")
    with pytest.raises(CastingError, match="int16"):
        chunkflow.store(da.from_array(data.astype("i8") * 3, chunks=9), y, scheduler="sync")
    # Values that survive the cast are written, whatever the dtypes' kinds.
    whole = chunkflow.zeros((30, 20), chunks=(8, 8), dtype="u1")
    chunkflow.store(da.from_array((data % 200).astype("f8"), chunks=(7, 9)), whole)
    np.testing.assert_array_equal(whole[:], (data % 200).astype("u1"))


def test_store_checks_each_block_whose_dtype_is_not_its_arrays() -> None:
    data, x = _halves()
    # A dask array that claims uint8 but computes float64 blocks.
    lying = x.map_blocks(lambda b: b, dtype="u1")
    z = chunkflow.zeros((30, 20), chunks=(8, 8), dtype="u1")
    with pytest.raises(CastingError, match=r"block for array '/' .*chunk keys? 'c/\d/\d.*array region"):
        chunkflow.store(lying, z, scheduler="sync", casting="same_kind")
    chunkflow.store(lying, z, casting="unsafe", scheduler="sync")
    np.testing.assert_array_equal(z[:], (data * 0.5).astype("u1"))


def test_to_chunkflow_refuses_a_cast_before_creating(tmp_path: Path) -> None:
    data, x = _halves()
    where = tmp_path / "a.zarr"
    with pytest.raises(CastingError, match="to_chunkflow"):
        chunkflow.to_chunkflow(x, str(where), dtype="u1", casting="same_kind")
    assert not where.exists()
    # By values (the default), the first block written is refused; the output is left
    # unfinished, as after any failed job.
    with pytest.raises(CastingError, match="the value .* at") as refused:
        chunkflow.to_chunkflow(x, str(where), dtype="u1", scheduler="sync")
    _assert_names_a_value_of(refused, data * 0.5)
    with pytest.warns(chunkflow.IncompleteJobWarning):
        chunkflow.open(str(where), mode="r")
    z = chunkflow.to_chunkflow(x, str(where), dtype="u1", casting="unsafe", overwrite=True)
    np.testing.assert_array_equal(z[:], (data * 0.5).astype("u1"))
    with pytest.raises(UsageError, match="casting"):
        chunkflow.to_chunkflow(x, str(tmp_path / "b.zarr"), casting="maybe")
    assert not (tmp_path / "b.zarr").exists()


def test_store_refuses_a_source_that_reads_its_target_unless_overwrite(tmp_path: Path) -> None:
    data = np.arange(30 * 20, dtype="f8").reshape(30, 20)
    z = chunkflow.array(data, chunks=(8, 8), store=str(tmp_path / "a.zarr"))
    again = chunkflow.open(str(tmp_path / "a.zarr"), mode="r+")  # another handle
    with pytest.raises(OutputIsSourceError, match="needs overwrite=True"):
        chunkflow.store(chunkflow.to_dask(again) + 1, z)
    np.testing.assert_array_equal(z[:], data)
    chunkflow.store(chunkflow.to_dask(again) + 1, z, overwrite=True)  # elementwise: safe
    np.testing.assert_array_equal(z[:], data + 1)
    # A lazy map_chunks with a halo over the target: never.
    from scipy import ndimage
    smooth = chunkflow.map_chunks(ndimage.uniform_filter, z, depth=1, size=3)
    with pytest.raises(OutputIsSourceError, match="halo"):
        chunkflow.store(smooth, z, overwrite=True)
    np.testing.assert_array_equal(z[:], data + 1)


def test_to_chunkflow_refuses_to_create_where_it_reads(tmp_path: Path) -> None:
    data = np.arange(30 * 20, dtype="f8").reshape(30, 20)
    root = chunkflow.open_group(str(tmp_path / "g.zarr"), mode="w")
    z = root.create_array("img", shape=(30, 20), chunks=(8, 8), dtype="f8")
    z[:] = data
    for where, path in ((str(tmp_path / "g.zarr"), None), (str(tmp_path / "g.zarr"), "img")):
        with pytest.raises(OutputIsSourceError, match="delete what the job reads"):
            chunkflow.to_chunkflow(chunkflow.to_dask(z) * 2, where, path=path, overwrite=True)
    np.testing.assert_array_equal(chunkflow.open(str(tmp_path / "g.zarr"), path="img")[:], data)


def _assert_names_a_value_of(error: pytest.ExceptionInfo[CastingError], values: np.ndarray) -> None:
    """The refusal names a value of ``values`` and its position in the array."""
    found = re.search(r"the value (\S+) at \(([\d, ]*)\)", str(error.value))
    assert found, str(error.value)
    position = tuple(int(i) for i in found[2].split(",") if i.strip())
    assert float(found[1]) == float(values[position])
