"""Shared fixtures: one factory per store backend, so every array test runs on each."""

from __future__ import annotations

import itertools
import os
import shutil
import tempfile
from pathlib import Path
from typing import Callable, Iterator

import pytest

from chunkflow.storage import FsspecStore, LocalStore, MappingStore, MemoryStore, Store, ZipStore

_counter = itertools.count()


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


class StoreMaker:
    """Makes fresh stores of one backend, and cleans up their folders afterwards."""

    def __init__(self, backend: str) -> None:
        self.backend = backend
        self._folders: list[Path] = []
        self._stores: list[Store] = []

    def __call__(self) -> Store:
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


@pytest.fixture(params=sorted(STORE_FACTORIES))
def make_store(request: pytest.FixtureRequest) -> Iterator[StoreMaker]:
    """A callable returning a new, empty store of each backend in turn."""
    maker = StoreMaker(request.param)
    yield maker
    maker.close()
