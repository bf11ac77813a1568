"""store and to_chunkflow: numpy's output casting rule, and outputs that are sources
(issue 26, points 2 and 5)."""

from __future__ import annotations

from pathlib import Path

import dask.array as da
import numpy as np
import pytest

import chunkflow
from chunkflow.errors import CastingError, UsageError


def _halves() -> tuple[np.ndarray, da.Array]:
    data = np.arange(65534, 65534 - 30 * 20, -1).astype("u2").reshape(30, 20)
    return data, da.from_array(data, chunks=(7, 9)) * 0.5  # float64


def test_store_refuses_a_cast_numpy_refuses_before_writing() -> None:
    data, x = _halves()
    z = chunkflow.zeros((30, 20), chunks=(8, 8), dtype="u1")
    with pytest.raises(CastingError, match=r"float64 to the output's dtype uint8.*same_kind"):
        chunkflow.store(x, z)
    assert not z[:].any()  # nothing written
    chunkflow.store(x, z, casting="unsafe")
    np.testing.assert_array_equal(z[:], (data * 0.5).astype("u1"))
    # int64 into int16 is the same kind: numpy allows it, with its wrap-around.
    y = chunkflow.zeros((30, 20), chunks=(8, 8), dtype="i2")
    chunkflow.store(da.from_array(data.astype("i8") * 3, chunks=9), y)
    np.testing.assert_array_equal(y[:], (data.astype("i8") * 3).astype("i2"))


def test_store_checks_each_block_whose_dtype_is_not_its_arrays() -> None:
    data, x = _halves()
    # A dask array that claims uint8 but computes float64 blocks.
    lying = x.map_blocks(lambda b: b, dtype="u1")
    z = chunkflow.zeros((30, 20), chunks=(8, 8), dtype="u1")
    with pytest.raises(CastingError, match=r"block for chunk keys? 'c/\d/\d.*array region"):
        chunkflow.store(lying, z, scheduler="sync")
    chunkflow.store(lying, z, casting="unsafe", scheduler="sync")
    np.testing.assert_array_equal(z[:], (data * 0.5).astype("u1"))


def test_to_chunkflow_refuses_a_cast_before_creating(tmp_path: Path) -> None:
    data, x = _halves()
    where = tmp_path / "a.zarr"
    with pytest.raises(CastingError, match="to_chunkflow"):
        chunkflow.to_chunkflow(x, str(where), dtype="u1")
    assert not where.exists()
    z = chunkflow.to_chunkflow(x, str(where), dtype="u1", casting="unsafe")
    np.testing.assert_array_equal(z[:], (data * 0.5).astype("u1"))
    with pytest.raises(UsageError, match="casting"):
        chunkflow.to_chunkflow(x, str(tmp_path / "b.zarr"), casting="maybe")
    assert not (tmp_path / "b.zarr").exists()
