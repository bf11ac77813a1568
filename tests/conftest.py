"""Shared fixtures: one factory per store backend, so every array test runs on each."""

from __future__ import annotations

import itertools
import os
import shutil
import socket
import tempfile
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import fsspec
import pytest
from hypothesis import HealthCheck, settings

from chunkflow.storage import FsspecStore, LocalStore, MappingStore, MemoryStore, Store, ZipStore

_counter = itertools.count()

# Hypothesis profiles (``--hypothesis-profile=NAME``). ``ci``, the default, is
# derandomized: CI runs the same examples every time, and a red run reproduces. ``long``
# draws fresh examples, 100 times each test's budget in tests/differential
# (tests/differential/conftest.py). Neither sets a deadline: a loaded 2-core machine
# makes an example slow, not wrong.
_SLOW_DRAWS = [HealthCheck.too_slow, HealthCheck.data_too_large]
settings.register_profile("ci", derandomize=True, deadline=None, database=None,
                          suppress_health_check=_SLOW_DRAWS)
settings.register_profile("long", deadline=None, suppress_health_check=_SLOW_DRAWS)
settings.load_profile("ci")


def _scratch() -> Path:
    return Path(tempfile.mkdtemp(prefix="chunkflow-test-"))


def _memory(_: Path) -> Store:
    return MemoryStore()


def _local(folder: Path) -> Store:
    return LocalStore(folder / "data.zarr")


def _zip(folder: Path) -> Store:
    return ZipStore(folder / "data.zip", mode="w")


def _fsspec_memory(_: Path) -> Store:
    return FsspecStore(f"memory://chunkflow-tests/{os.getpid()}-{next(_counter)}")


def _fsspec_file(folder: Path) -> Store:
    return FsspecStore(f"file://{folder}/data.zarr")


def _mapping(_: Path) -> Store:
    return MappingStore({})


STORE_FACTORIES: dict[str, Callable[[Path], Store]] = {
    "memory": _memory,
    "local": _local,
    "zip": _zip,
    "fsspec-memory": _fsspec_memory,
    "fsspec-file": _fsspec_file,
    "mapping": _mapping,
}


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture(scope="session")
def s3_server() -> Iterator[dict[str, Any]]:
    """A moto S3 server on loopback with a bucket; yields fsspec storage options."""
    from moto.server import ThreadedMotoServer

    port = _free_port()
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    try:
        options = {
            "endpoint_url": f"http://127.0.0.1:{port}",
            "key": "testing",
            "secret": "testing",
            "client_kwargs": {"region_name": "us-west-2"},
        }
        fs = fsspec.filesystem("s3", skip_instance_cache=True, **options)
        fs.mkdir("chunkflow-test")
        yield options
    finally:
        server.stop()


class StoreMaker:
    """Makes fresh stores of one backend, and cleans up their folders afterwards."""

    def __init__(self, backend: str, s3_options: dict[str, Any] | None = None) -> None:
        self.backend = backend
        self._s3_options = s3_options
        self._folders: list[Path] = []
        self._stores: list[Store] = []

    def __call__(self) -> Store:
        if self.backend == "s3":
            store: Store = FsspecStore(f"s3://chunkflow-test/{uuid.uuid4().hex}",
                                       storage_options=self._s3_options)
            self._stores.append(store)
            return store
        folder = _scratch()
        self._folders.append(folder)
        store = STORE_FACTORIES[self.backend](folder)
        self._stores.append(store)
        return store

    def close(self) -> None:
        for store in self._stores:
            store.close()
        for folder in self._folders:
            shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture(params=[*sorted(STORE_FACTORIES), pytest.param("s3", marks=pytest.mark.s3)])
def make_store(request: pytest.FixtureRequest) -> Iterator[StoreMaker]:
    """A callable returning a new, empty store of each backend in turn (S3: moto)."""
    options = request.getfixturevalue("s3_server") if request.param == "s3" else None
    maker = StoreMaker(request.param, options)
    yield maker
    maker.close()


@pytest.fixture(scope="session")
def cluster_client() -> Iterator[Any]:
    """A real distributed ``LocalCluster`` (2 worker processes) and its client, not set
    as the default client, shared by the tests that run graphs on a cluster."""
    import distributed

    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=":0") as cluster, \
            distributed.Client(cluster, set_as_default=False) as client:
        yield client


@pytest.fixture
def log(tmp_path: Path) -> Path:
    """An empty folder for :func:`tests.helpers.jobs.logged_filter`: where it logs its
    calls and finds the faults a test asks for."""
    folder = tmp_path / "log"
    folder.mkdir()
    return folder
