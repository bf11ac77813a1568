"""chunkflow over zarr-python 3 ``Store`` objects: the conformance mixin, then specifics."""

from __future__ import annotations

import asyncio
import pickle
import subprocess
import sys
import uuid
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from chunkflow.testing import StoreConformance

zarr = pytest.importorskip("zarr", minversion="3")
from zarr.buffer import default_buffer_prototype  # noqa: E402
from zarr.core.sync import sync  # noqa: E402

import chunkflow  # noqa: E402
from chunkflow.errors import ReadOnlyError  # noqa: E402
from chunkflow.storage import make_store  # noqa: E402
from chunkflow.storage.zarr_store import ZarrStoreAdapter  # noqa: E402

PROTOTYPE = default_buffer_prototype()


class _ZarrChannel:
    """The bypass channel: zarr-python's own calls on the wrapped store."""

    def raw_get(self, store: ZarrStoreAdapter, key: str) -> bytes | None:
        buffer = sync(store.store.get(key, prototype=PROTOTYPE))
        return None if buffer is None else buffer.to_bytes()

    def raw_set(self, store: ZarrStoreAdapter, key: str, value: bytes) -> None:
        sync(store.store.set(key, PROTOTYPE.buffer.from_bytes(value)))


class TestZarrMemoryStore(_ZarrChannel, StoreConformance):
    @pytest.fixture
    def store(self) -> ZarrStoreAdapter:
        return ZarrStoreAdapter(zarr.storage.MemoryStore())

    def twin(self, store: ZarrStoreAdapter) -> ZarrStoreAdapter:
        return ZarrStoreAdapter(store.store)  # another adapter over the same object

    def test_pickles_by_reference(self, store: ZarrStoreAdapter) -> None:
        # The data lives in this process: a copy elsewhere would be a silent fork.
        assert pickle.loads(pickle.dumps(store)) is store


class TestZarrLocalStore(_ZarrChannel, StoreConformance):
    @pytest.fixture
    def store(self, tmp_path: Path) -> ZarrStoreAdapter:
        return ZarrStoreAdapter(zarr.storage.LocalStore(tmp_path / "root"))

    def twin(self, store: ZarrStoreAdapter) -> ZarrStoreAdapter:
        return ZarrStoreAdapter(zarr.storage.LocalStore(store.store.root))

    def test_named_like_chunkflow_local_store(self, store: ZarrStoreAdapter) -> None:
        # One location, one cache name: writes through either invalidate the other's.
        native = chunkflow.storage.LocalStore(store.store.root)
        assert store.identity == native.identity
        native["k"] = b"v"
        assert store["k"] == b"v"


class TestZarrFsspecStore(_ZarrChannel, StoreConformance):
    @pytest.fixture
    def store(self, tmp_path: Path) -> ZarrStoreAdapter:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # zarr wraps the synchronous local fs
            inner = zarr.storage.FsspecStore.from_url(
                (tmp_path / "root").as_uri(), read_only=False,
                storage_options={"auto_mkdir": True})
        return ZarrStoreAdapter(inner)


class TestZarrLoggingStore(_ZarrChannel, StoreConformance):
    """A wrapper store: read through the wrapper, never around it."""

    @pytest.fixture
    def store(self) -> ZarrStoreAdapter:
        return ZarrStoreAdapter(zarr.storage.LoggingStore(zarr.storage.MemoryStore()))


class TestZarrZipStore(StoreConformance):
    no_raw_reason = "a zip file being written has no central directory to read it by"
    supports_deletes = False
    supports_overwrite = False
    supports_pickle = False
    reason = "zarr-python's zip stores neither delete nor replace members"

    @pytest.fixture
    def store(self, tmp_path: Path) -> Iterator[ZarrStoreAdapter]:
        inner = sync(zarr.storage.ZipStore.open(tmp_path / "data.zip", mode="w"))
        yield ZarrStoreAdapter(inner)
        inner.close()


# ------------------------------------------------------------------ specifics


def test_make_store_wraps_zarr_stores() -> None:
    inner = zarr.storage.MemoryStore()
    store = make_store(inner)
    assert isinstance(store, ZarrStoreAdapter) and store.store is inner
    assert not store.read_only
    assert make_store(inner, mode="r").read_only
    with pytest.raises(ValueError, match="storage_options"):
        make_store(inner, storage_options={"anon": True})


def test_read_only_zarr_store_refuses_writes() -> None:
    inner = zarr.storage.MemoryStore()
    sync(inner.set("k", PROTOTYPE.buffer.from_bytes(b"v")))
    store = make_store(inner.with_read_only(True))
    assert store.read_only and store["k"] == b"v"
    with pytest.raises(ReadOnlyError, match="read-only"):
        store["k"] = b"w"


@pytest.mark.parametrize("zarr_format", [2, 3])
def test_chunkflow_reads_what_zarr_python_wrote(zarr_format: int) -> None:
    inner = zarr.storage.MemoryStore()
    root = zarr.open_group(inner, mode="w", zarr_format=zarr_format)
    written = root.create_array("a/b", shape=(5, 7), chunks=(2, 3), dtype="i4")
    written[:] = np.arange(35).reshape(5, 7)
    for opened in (chunkflow.open(inner, mode="r", path="a/b"),
                   chunkflow.open_array(inner, mode="r", path="a/b"),
                   chunkflow.open_group(inner, mode="r")["a/b"]):
        np.testing.assert_array_equal(opened[:], np.arange(35).reshape(5, 7))
        assert opened.zarr_format == zarr_format


def test_zarr_python_reads_what_chunkflow_wrote(tmp_path: Path) -> None:
    inner = zarr.storage.LocalStore(tmp_path / "data.zarr")
    z = chunkflow.open_array(inner, mode="w", shape=(6,), chunks=(4,), dtype="f8")
    z[:] = np.linspace(0, 1, 6)
    np.testing.assert_array_equal(zarr.open_array(inner, mode="r")[:], np.linspace(0, 1, 6))


def test_sharded_array_over_a_zarr_store() -> None:
    inner = zarr.storage.MemoryStore()
    z = zarr.create_array(inner, shape=(8, 8), chunks=(2, 2), shards=(4, 4), dtype="u2")
    z[:] = np.arange(64).reshape(8, 8)
    opened = chunkflow.open_array(inner, mode="r")
    np.testing.assert_array_equal(opened[1:7, 3], np.arange(64).reshape(8, 8)[1:7, 3])


def test_usable_inside_a_running_event_loop() -> None:
    # Synchronous chunkflow calls from a coroutine (a notebook cell, an async web
    # handler) run the store's coroutines on zarr-python's loop, not this one.
    inner = zarr.storage.MemoryStore()
    zarr.create_array(inner, shape=(4,), chunks=(2,), dtype="u1")[:] = [1, 2, 3, 4]

    async def read() -> list[int]:
        return chunkflow.open_array(inner, mode="r")[:].tolist()

    assert asyncio.run(read()) == [1, 2, 3, 4]


def test_dask_reads_through_the_threaded_scheduler() -> None:
    inner = zarr.storage.MemoryStore()
    zarr.create_array(inner, shape=(40,), chunks=(4,), dtype="i8")[:] = np.arange(40)
    x = chunkflow.to_dask(chunkflow.open_array(inner, mode="r"))
    assert int(x.sum().compute(scheduler="threads")) == sum(range(40))


def test_import_chunkflow_does_not_import_zarr(tmp_path: Path) -> None:
    code = ("import sys, chunkflow; z = chunkflow.open_array(None, mode='w', shape=(2,), "
            "dtype='u1'); z[:] = 1; assert 'zarr' not in sys.modules, 'zarr imported'")
    subprocess.run([sys.executable, "-c", code], check=True, cwd=tmp_path,
                   env=_env_with_repo())


def _env_with_repo() -> dict[str, Any]:
    import os

    repo = str(Path(chunkflow.__file__).resolve().parents[1])
    return dict(os.environ, PYTHONPATH=os.pathsep.join([repo, os.environ.get("PYTHONPATH", "")]))


def test_a_dict_zarr_python_wrote_into() -> None:
    # zarr-python 3 wraps a dict in its MemoryStore and stores Buffer objects in it.
    backing: dict[str, Any] = {}
    zarr.create_array(backing, shape=(3,), chunks=(2,), dtype="i2")[:] = [7, 8, 9]
    assert not isinstance(backing["zarr.json"], bytes)
    assert chunkflow.open_array(backing, mode="r")[:].tolist() == [7, 8, 9]


class TestZarrFsspecS3Store(_ZarrChannel, StoreConformance):
    """zarr-python's FsspecStore over S3 (a moto server on loopback): object-store
    prefixes are not keys, and the identity carries the endpoint."""

    @pytest.fixture
    def store(self, s3_server: dict[str, Any]) -> ZarrStoreAdapter:
        url = f"s3://chunkflow-test/zarr-python-{uuid.uuid4().hex}"
        inner = zarr.storage.FsspecStore.from_url(url, storage_options=dict(s3_server),
                                                  read_only=False)
        return ZarrStoreAdapter(inner)

    def twin(self, store: ZarrStoreAdapter) -> ZarrStoreAdapter:
        return ZarrStoreAdapter(zarr.storage.FsspecStore(store.store.fs, path=store.store.path))

    def test_identity_names_the_endpoint(self, store: ZarrStoreAdapter,
                                         s3_server: dict[str, Any]) -> None:
        assert store.identity.startswith("s3://chunkflow-test/zarr-python-")
        assert store.identity.endswith("@" + s3_server["endpoint_url"])

    def test_arrays_through_s3(self, store: ZarrStoreAdapter) -> None:
        z = chunkflow.open_array(store.store, mode="w", shape=(10, 10), chunks=(4, 4),
                                 dtype="i4")
        z[:] = np.arange(100).reshape(10, 10)
        back = zarr.open_array(store.store, mode="r")
        np.testing.assert_array_equal(back[:], np.arange(100).reshape(10, 10))
        assert "c" not in store and sorted(store.list_dir("")[1]) == ["c"]
