"""Every writer into an Icechunk session on a real ``LocalCluster`` (2 worker processes),
many times: the committed output keeps every document (group and array attributes,
OME-Zarr ``multiscales``, array metadata) and every value.

On a cluster a job's tasks write into forks of the session, merged back at the end
(:mod:`chunkflow.graph.transactions`). Each fork holds the nodes created before the job;
a task that writes a document (a pyramid's ``multiscales``, a label image created once
its count is known) writes it into its worker's fork only, and Icechunk takes a
document held by two forks from the fork merged last. A pyramid's later stages read the
levels earlier tasks wrote, on other workers. Each output, read back with zarr-python
from a fresh read-only session of the committed branch, is compared document by
document with the same writer's output on one thread into a folder (nothing forked
there), and its values with numpy and scipy; no unfinished-job mark may be left.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

zarr = pytest.importorskip("zarr", minversion="3")
icechunk = pytest.importorskip("icechunk")
pytest.importorskip("scipy")
pytest.importorskip("distributed")

from tests.helpers import writers  # noqa: E402

pytestmark = pytest.mark.slow

# Runs per writer: before the fix, the pyramid's metadata was lost in most runs.
RUNS = {"pyramid": 8, "map_chunks": 2, "label": 3, "segment": 3, "rechunk": 2,
        "to_chunkflow": 2, "store": 2, "copy": 2, "copy_all": 3}


def _reference(writer: str, folder: Path, sources: writers.Sources
               ) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    """The output of ``writer`` run on one thread into a folder, checked."""
    out = str(folder / f"{writer}.zarr")
    writers.prepare(writer, out)
    writers.run(writer, lambda: out, sources, "sync")
    documents = writers.documents(out)
    values = writers.values(out, documents)
    writers.check_values(writer, values)
    writers.no_marks(documents)
    return documents, values


def _on_the_cluster(writer: str, repo: Any, sources: writers.Sources, client: Any,
                    message: str) -> None:
    """Run ``writer`` into a writable session of ``repo``, committed by the job (or by
    the user, for the copies), on ``client``."""
    session = repo.writable_session("main")
    writers.prepare(writer, session.store)
    if session.has_uncommitted_changes:
        session.commit("before the job")
        session = repo.writable_session("main")
    sessions = [session]

    def outs() -> Any:
        if sessions[-1].read_only:  # committed: the next job writes in a new session
            sessions.append(repo.writable_session("main"))
        return sessions[-1].store

    writers.run(writer, outs, sources, client, commit=message)
    if writer not in writers.COMMITTING:
        sessions[-1].commit(message)


@pytest.mark.parametrize("writer", sorted(RUNS))
def test_every_document_survives_the_merge(writer: str, cluster_client: Any,
                                           tmp_path: Path) -> None:
    sources = writers.Sources(tmp_path)
    expected, expected_values = _reference(writer, tmp_path, sources)
    lost = []
    for run in range(RUNS[writer]):
        repo = icechunk.Repository.create(icechunk.local_filesystem_storage(
            str(tmp_path / f"repo{run}")))
        _on_the_cluster(writer, repo, sources, cluster_client, f"{writer} {run}")
        committed = repo.readonly_session("main").store
        documents = writers.documents(committed)
        if documents != expected:
            lost.append((run, writers.difference(expected, documents)))
            continue
        values = writers.values(committed, documents)
        assert values.keys() == expected_values.keys()
        for path, value in values.items():
            np.testing.assert_array_equal(value, expected_values[path],
                                          err_msg=f"run {run}: {path}")
    assert not lost, f"{len(lost)} of {RUNS[writer]} runs lost documents: {lost}"


@pytest.mark.parametrize("writer", ["label", "segment"])
def test_labels_of_a_source_in_the_same_session(writer: str, cluster_client: Any,
                                                tmp_path: Path) -> None:
    """The label image is created once its count is known: by the client, between the
    job's two rounds, so that every worker's fork holds it (a worker that read the
    source from the session before held a fork without it)."""
    from scipy import ndimage

    import chunkflow

    for run in range(2):
        repo = icechunk.Repository.create(icechunk.local_filesystem_storage(
            str(tmp_path / f"repo{run}")))
        session = repo.writable_session("main")
        zarr.create_array(session.store, name="mask", data=writers.MASK, chunks=(16, 16))
        session.commit("the mask")
        session = repo.writable_session("main")
        mask = chunkflow.open_array(session.store, path="mask", mode="r")
        out = zarr.storage.StorePath(session.store, "found/labels")
        if writer == "label":
            _, count = chunkflow.label(mask, out, blocks=(2, 2), scheduler=cluster_client,
                                       commit="labels")
        else:
            _, count = chunkflow.segment(writers.components, mask, out, depth=1,
                                         blocks=(2, 2), scheduler=cluster_client,
                                         commit="labels")
        expected, n = ndimage.label(writers.MASK)
        assert count == n
        committed = repo.readonly_session("main").store
        labels = zarr.open_array(committed, path="found/labels", mode="r")
        np.testing.assert_array_equal(labels[:], expected)
        assert (labels.dtype, labels.chunks, dict(labels.attrs)) == (np.dtype("u4"), (16, 16), {})
        np.testing.assert_array_equal(zarr.open_array(committed, path="mask", mode="r")[:],
                                      writers.MASK)
