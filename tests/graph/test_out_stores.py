"""``out=`` a zarr-python Store in every writer: an Icechunk session's ``store``, a
``LocalStore``, a ``MemoryStore``, a ``StorePath`` below a folder of one, resolved in
one place (chunkflow.storage.output_location). What each writer wrote is read back with
zarr-python: its documents compared with the same writer's output in a folder, its
values with numpy and scipy. The rules of a location hold for a store too: something
there already is refused, and so is an output that would replace the source."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

zarr = pytest.importorskip("zarr", minversion="3")
icechunk = pytest.importorskip("icechunk")
pytest.importorskip("scipy")

import chunkflow  # noqa: E402
from chunkflow.errors import ContainsArrayError, OutputIsSourceError  # noqa: E402
from tests.helpers import writers  # noqa: E402

KINDS = ["icechunk", "local", "memory", "store-path"]


@pytest.fixture(scope="module")
def sources(tmp_path_factory: pytest.TempPathFactory) -> writers.Sources:
    return writers.Sources(tmp_path_factory.mktemp("sources"))


@pytest.fixture(scope="module")
def references(sources: writers.Sources, tmp_path_factory: pytest.TempPathFactory
               ) -> dict[str, dict[str, Any]]:
    """Each writer's documents when ``out`` is a folder's path (checked values)."""
    folder = tmp_path_factory.mktemp("references")
    found = {}
    for writer in writers.WRITERS:
        out = str(folder / f"{writer}.zarr")
        writers.prepare(writer, out)
        writers.run(writer, lambda out=out: out, sources, "threads")
        found[writer] = writers.documents(out)
        writers.check_values(writer, writers.values(out, found[writer]))
    return found


class Target:
    """A zarr-python store of one kind, as a writer's ``out`` (``outs()``, a new
    session's store for each Icechunk job that commits) and for reading back."""

    def __init__(self, kind: str, folder: Path) -> None:
        self.kind = kind
        self.repo = None
        if kind == "icechunk":
            self.repo = icechunk.Repository.create(icechunk.local_filesystem_storage(
                str(folder / "repo")))
            self.session = self.repo.writable_session("main")
            self.store: Any = self.session.store
        elif kind == "local":
            self.store = zarr.storage.LocalStore(str(folder / "out.zarr"))
        elif kind == "memory":
            self.store = zarr.storage.MemoryStore()
        else:
            self.store = zarr.storage.StorePath(zarr.storage.MemoryStore(), "deep/er")

    def outs(self) -> Callable[[], Any]:
        def out() -> Any:
            if self.repo is not None and self.session.read_only:  # committed
                self.session = self.repo.writable_session("main")
                self.store = self.session.store
            return self.store
        return out

    def prepared(self, writer: str) -> None:
        writers.prepare(writer, self.store)
        if self.repo is not None and self.session.has_uncommitted_changes:
            self.session.commit("before the job")
            self.outs()()

    def written(self, writer: str) -> Any:
        """What zarr-python reads of the output (the committed branch for Icechunk)."""
        if self.repo is None:
            return self.store
        if writer not in writers.COMMITTING:
            self.session.commit("the user's")
        return self.repo.readonly_session("main").store


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("writer", writers.WRITERS)
def test_every_writer_takes_a_zarr_python_store(writer: str, kind: str, tmp_path: Path,
                                                sources: writers.Sources,
                                                references: dict[str, Any]) -> None:
    target = Target(kind, tmp_path)
    target.prepared(writer)
    writers.run(writer, target.outs(), sources, "threads",
                commit="the job's" if kind == "icechunk" else None)
    written = target.written(writer)
    documents = writers.documents(written)
    assert documents == references[writer], writers.difference(references[writer], documents)
    writers.check_values(writer, writers.values(written, documents))


@pytest.mark.parametrize("kind", ["memory", "icechunk"])
def test_a_store_holding_an_array_is_refused(kind: str, tmp_path: Path,
                                            sources: writers.Sources) -> None:
    target = Target(kind, tmp_path)
    zarr.create_array(target.store, shape=(3,), dtype="u1", attributes={"keep": 1})[:] = 5
    with pytest.raises(ContainsArrayError, match="overwrite=True"):
        chunkflow.map_chunks(writers.smooth, sources.image, out=target.store)
    with pytest.raises(ContainsArrayError, match="overwrite=True"):
        chunkflow.label(sources.mask, target.store)
    with pytest.raises(ContainsArrayError, match="overwrite=True"):
        chunkflow.pyramid(sources.image, target.store)
    kept = zarr.open_array(target.store, mode="r")
    assert dict(kept.attrs) == {"keep": 1}
    np.testing.assert_array_equal(kept[:], 5)


def test_an_output_that_would_replace_its_source_is_refused() -> None:
    inner = zarr.storage.MemoryStore()
    zarr.create_array(inner, name="src", data=writers.IMAGE, chunks=(32, 32))
    source = chunkflow.open_array(inner, path="src", mode="r")
    for write in (lambda: chunkflow.rechunk(source, (64, 64), inner, max_memory="8 MiB",
                                            overwrite=True),
                  lambda: chunkflow.pyramid(source, inner, overwrite=True),
                  lambda: chunkflow.map_chunks(writers.smooth, source, out=inner, depth=1,
                                               overwrite=True)):
        with pytest.raises(OutputIsSourceError):
            write()
    np.testing.assert_array_equal(zarr.open_array(inner, path="src", mode="r")[:],
                                  writers.IMAGE)
