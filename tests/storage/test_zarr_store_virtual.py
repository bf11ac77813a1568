"""Icechunk virtual chunks (byte ranges of an HDF5 file) read through chunkflow's
adapter of zarr-python stores, against h5py and zarr-python on the same session."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

zarr = pytest.importorskip("zarr", minversion="3")
icechunk = pytest.importorskip("icechunk")
h5py = pytest.importorskip("h5py")

import chunkflow  # noqa: E402

SHAPE, CHUNKS = (20, 30), (8, 16)  # edge chunks on both axes


def hdf5_chunks(path: Path) -> tuple[np.ndarray, dict[tuple[int, ...], tuple[int, int]]]:
    """An uncompressed chunked HDF5 dataset and its chunks' (offset, size) by index."""
    data = np.random.default_rng(5).normal(size=SHAPE).astype("<f4")
    with h5py.File(path, "w") as f:
        dset = f.create_dataset("t", data=data, chunks=CHUNKS)
        where = {}
        for i in range(dset.id.get_num_chunks()):
            info = dset.id.get_chunk_info(i)
            index = tuple(o // c for o, c in zip(info.chunk_offset, CHUNKS))
            where[index] = (info.byte_offset, info.size)
    return data, where


@pytest.fixture
def virtual_repo(tmp_path: Path) -> tuple[Any, np.ndarray]:
    folder = tmp_path / "files"
    folder.mkdir()
    data, where = hdf5_chunks(folder / "data.h5")
    prefix = f"file://{folder}/"
    config = icechunk.RepositoryConfig.default()
    config.set_virtual_chunk_container(
        icechunk.VirtualChunkContainer(prefix, icechunk.local_filesystem_store(str(folder))))
    repo = icechunk.Repository.create(
        icechunk.local_filesystem_storage(str(tmp_path / "repo")), config,
        authorize_virtual_chunk_access=icechunk.containers_credentials({prefix: None}))
    session = repo.writable_session("main")
    zarr.create_array(session.store, name="t", shape=SHAPE, chunks=CHUNKS, dtype="<f4",
                      compressors=None, fill_value=0.0)
    for (i, j), (offset, size) in where.items():
        session.store.set_virtual_ref(f"t/c/{i}/{j}", f"{prefix}data.h5", offset=offset,
                                      length=size)
    session.commit("virtual chunks")
    return repo, data


def test_virtual_chunks_read_through_the_adapter(virtual_repo: tuple[Any, np.ndarray]) -> None:
    repo, data = virtual_repo
    store = repo.readonly_session("main").store
    array = chunkflow.open_array(store, path="t", mode="r")
    np.testing.assert_array_equal(array[...], data)
    np.testing.assert_array_equal(array[3:17, 5:29:3], data[3:17, 5:29:3])
    np.testing.assert_array_equal(array[...], zarr.open_array(store, path="t", mode="r")[...])
    np.testing.assert_array_equal(chunkflow.to_dask(array).compute(scheduler="threads"), data)
    assert chunkflow.open_group(store, mode="r").keys() == ["t"]
