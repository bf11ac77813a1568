"""zarr-python Stores that pickle travel to a real ``LocalCluster`` as themselves:
every reader (to_dask, reduce, map_chunks, the xarray engine) over an Icechunk
read-only session and over ``ObjectStore(S3Store)`` on a moto server, and ``store`` /
``reduce`` under a default ``Client``. Values are compared with numpy."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

zarr = pytest.importorskip("zarr", minversion="3")
icechunk = pytest.importorskip("icechunk")
obstore_store = pytest.importorskip("obstore.store")
distributed = pytest.importorskip("distributed")

import chunkflow  # noqa: E402

DATA = np.arange(24 * 20, dtype="f8").reshape(24, 20) % 97


def _write(store: Any) -> None:
    root = zarr.open_group(store, mode="w")
    arr = root.create_array("a", shape=DATA.shape, chunks=(5, 4), dtype="f8",
                            dimension_names=["y", "x"])
    arr[:] = DATA


@pytest.fixture(scope="module")
def icechunk_store(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """A read-only session of an Icechunk repository in a temporary folder."""
    folder = tmp_path_factory.mktemp("icechunk")
    repo = icechunk.Repository.create(icechunk.local_filesystem_storage(str(folder)))
    session = repo.writable_session("main")
    _write(session.store)
    session.commit("the data")
    return repo.readonly_session("main").store


def s3_object_store(s3_server: dict[str, Any], prefix: str, read_only: bool = False) -> Any:
    """zarr-python's ObjectStore over obstore's S3Store on the moto server."""
    inner = obstore_store.S3Store(
        "chunkflow-test", prefix=prefix, endpoint=s3_server["endpoint_url"],
        access_key_id=s3_server["key"], secret_access_key=s3_server["secret"],
        region=s3_server["client_kwargs"]["region_name"], client_options={"allow_http": True})
    return zarr.storage.ObjectStore(inner, read_only=read_only)


@pytest.fixture(scope="module")
def object_store(s3_server: dict[str, Any]) -> Any:
    prefix = f"travel-{uuid.uuid4().hex}"
    _write(s3_object_store(s3_server, prefix))
    return s3_object_store(s3_server, prefix, read_only=True)


@pytest.fixture(params=["icechunk", pytest.param("object-store", marks=pytest.mark.s3)])
def source(request: pytest.FixtureRequest) -> Any:
    return request.getfixturevalue("icechunk_store" if request.param == "icechunk"
                                   else "object_store")


def _double(block: np.ndarray) -> np.ndarray:
    return block * 2


def test_to_dask_sum_on_a_cluster(source: Any, cluster_client: Any) -> None:
    x = chunkflow.to_dask(chunkflow.open_array(source, mode="r", path="a"))
    assert float(x.sum().compute(scheduler=cluster_client)) == DATA.sum()
    np.testing.assert_array_equal(x[3:17, 2:].compute(scheduler=cluster_client), DATA[3:17, 2:])


def test_reduce_on_a_cluster(source: Any, cluster_client: Any) -> None:
    found = chunkflow.reduce(chunkflow.open_array(source, mode="r", path="a"),
                             ("mean", "max"), axis=0, scheduler=cluster_client)
    np.testing.assert_allclose(found["mean"], DATA.mean(axis=0))
    np.testing.assert_array_equal(found["max"], DATA.max(axis=0))


def test_map_chunks_reads_on_a_cluster(source: Any, cluster_client: Any, tmp_path: Path) -> None:
    out = str(tmp_path / "doubled.zarr")
    chunkflow.map_chunks(_double, chunkflow.open_array(source, mode="r", path="a"), out=out,
                         depth=1, scheduler=cluster_client)
    np.testing.assert_array_equal(zarr.open_array(out, mode="r")[:], DATA * 2)


def test_xarray_engine_on_a_cluster(source: Any, cluster_client: Any) -> None:
    xr = pytest.importorskip("xarray")
    ds = xr.open_dataset(source, engine="chunkflow", chunks={})
    assert ds["a"].chunks is not None
    np.testing.assert_array_equal(ds["a"].compute(scheduler=cluster_client).values, DATA)


@pytest.fixture
def default_client(cluster_client: Any) -> Iterator[Any]:
    """A Client of the shared cluster set as the default, as a user's notebook has."""
    with distributed.Client(cluster_client.cluster, set_as_default=True) as client:
        yield client


def test_store_and_reduce_use_the_default_client(source: Any, default_client: Any,
                                                 tmp_path: Path) -> None:
    def transitions() -> int:
        return int(default_client.run_on_scheduler(
            lambda dask_scheduler: dask_scheduler.transition_counter))

    before = transitions()
    x = chunkflow.to_dask(chunkflow.open_array(source, mode="r", path="a"))
    target = chunkflow.create_array(str(tmp_path / "copy.zarr"), shape=DATA.shape,
                                    chunks=(6, 5), dtype="f8")
    chunkflow.store(x + 1, target)
    np.testing.assert_array_equal(zarr.open_array(str(tmp_path / "copy.zarr"))[:], DATA + 1)
    found = chunkflow.reduce(chunkflow.open_array(source, mode="r", path="a"), ("sum",))
    assert float(found["sum"]) == DATA.sum()
    assert transitions() > before  # the work went to the cluster, not to threads


@pytest.mark.slow
@pytest.mark.s3
def test_writers_into_an_object_store_on_a_cluster(object_store: Any, s3_server: dict[str, Any],
                                                   cluster_client: Any) -> None:
    target = s3_object_store(s3_server, f"written-{uuid.uuid4().hex}")
    source = chunkflow.open_array(object_store, mode="r", path="a")
    chunkflow.map_chunks(_double, source, out=chunkflow.create_array(
        target, name="doubled", shape=DATA.shape, chunks=(8, 10), dtype="f8"),
        scheduler=cluster_client)
    copy = chunkflow.create_array(target, name="copy", shape=DATA.shape, chunks=(5, 4),
                                  dtype="f8")
    chunkflow.store(chunkflow.to_dask(source), copy, scheduler=cluster_client)
    np.testing.assert_array_equal(zarr.open_array(target, path="doubled", mode="r")[:], DATA * 2)
    np.testing.assert_array_equal(zarr.open_array(target, path="copy", mode="r")[:], DATA)
