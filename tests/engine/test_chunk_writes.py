"""Writes hand stores views of the caller's chunks (no copy for uncompressed chunks):
what is stored never changes when the caller's array does afterwards."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import chunkflow
from chunkflow.storage import LocalStore, MappingStore, MemoryStore


@pytest.mark.parametrize("kind", ["memory", "local", "mapping"])
@pytest.mark.parametrize("zarr_format", [2, 3])
def test_stored_chunks_do_not_follow_later_changes_of_the_written_array(
    tmp_path: Path, kind: str, zarr_format: int
) -> None:
    store = {"memory": lambda: MemoryStore(), "local": lambda: LocalStore(tmp_path / "a"),
             "mapping": lambda: MappingStore({})}[kind]()
    data = np.arange(16 * 16, dtype="u2").reshape(16, 16)
    original = data.copy()
    # Chunks of whole rows: each chunk of `data` is a contiguous view, and goes to the
    # store as it is.
    z = chunkflow.create_array(store, shape=(16, 16), chunks=(8, 16), dtype="u2",
                               compressors=None, zarr_format=zarr_format, cache=False)
    z[:] = data
    z[8:16] = data[8:16]
    data[:] = 7
    np.testing.assert_array_equal(z[:], original)
