"""Writers into an Icechunk session (chunkflow.graph.transactions): on a real
LocalCluster (worker processes) through forks of the session merged back, on threads
into the session itself; one commit with ``commit=``; conflicts, refusals and failed
jobs leave the branch as it was. Values are compared with numpy and scipy."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np
import pytest

zarr = pytest.importorskip("zarr", minversion="3")
icechunk = pytest.importorskip("icechunk")
ndimage = pytest.importorskip("scipy.ndimage")
pytest.importorskip("distributed")

import chunkflow  # noqa: E402
from chunkflow.errors import TransactionConflictError, TransactionError  # noqa: E402

DATA = (np.arange(32 * 24, dtype="f4").reshape(32, 24) * 7) % 23
MASK = DATA > 15


@pytest.fixture
def repo(tmp_path: Path) -> Any:
    """A repository whose main branch holds "src" (DATA) and an empty "out"."""
    repo = icechunk.Repository.create(icechunk.local_filesystem_storage(str(tmp_path / "repo")))
    session = repo.writable_session("main")
    zarr.create_array(session.store, name="src", shape=DATA.shape, chunks=(8, 8),
                      dtype="f4")[:] = DATA
    zarr.create_array(session.store, name="out", shape=DATA.shape, chunks=(8, 6), dtype="f4")
    session.commit("src and out")
    return repo


def _main(repo: Any, path: str) -> np.ndarray:
    """What the main branch's last commit holds at ``path``."""
    return np.asarray(zarr.open_array(repo.readonly_session("main").store, path=path,
                                      mode="r")[:])


def _messages(repo: Any) -> list[str]:
    return [entry.message for entry in repo.ancestry(branch="main")]


def smooth(block: np.ndarray) -> np.ndarray:
    return ndimage.uniform_filter(block, size=3, mode="reflect")


def _fails_on_the_last_block(block: np.ndarray, block_info: dict[str, Any]) -> np.ndarray:
    if block_info["block_index"] == tuple(n - 1 for n in block_info["num_blocks"]):
        raise RuntimeError("the last block fails")
    return block * 2


def _src(session: Any) -> chunkflow.Array:
    return chunkflow.open_array(session.store, path="src", mode="r")


def _run_writer(name: str, session: Any, scheduler: Any, commit: str | None,
                src: chunkflow.Array | None = None) -> str:
    """Run writer ``name`` into ``session`` (reading ``src``, by default the session's
    "src"); the path of the array to check."""
    src = _src(session) if src is None else src
    if name == "store":
        out = chunkflow.open_array(session.store, path="out")
        chunkflow.store(chunkflow.to_dask(src) + 1, out, scheduler=scheduler, commit=commit)
        return "out"
    if name == "to_chunkflow":
        chunkflow.to_chunkflow(chunkflow.to_dask(src) + 1, session.store, path="new",
                               chunks=(16, 5), scheduler=scheduler, commit=commit)
        return "new"
    if name == "map_chunks":
        out = chunkflow.open_array(session.store, path="out")
        chunkflow.map_chunks(smooth, src, out=out, depth=1, boundary="reflect",
                             scheduler=scheduler, commit=commit)
        return "out"
    if name == "rechunk":  # into the root of an empty repository
        chunkflow.rechunk(src, (32, 3), session.store, max_memory="64 MiB",
                          scheduler=scheduler, commit=commit)
        return ""
    if name == "pyramid":  # into the root of an empty repository
        chunkflow.pyramid(src, session.store, levels=2, chunks=(8, 8),
                          scheduler=scheduler, commit=commit)
        return "1"
    assert name == "label"
    labels = chunkflow.create_array(session.store, name="labels", shape=DATA.shape,
                                    chunks=(8, 8), dtype="u4")
    chunkflow.label(chunkflow.to_dask(src) > 15, labels, blocks=(1, 1), scheduler=scheduler,
                    commit=commit)
    return "labels"


def _expected(name: str) -> np.ndarray:
    if name in ("store", "to_chunkflow"):
        return DATA + 1
    if name == "map_chunks":
        return ndimage.uniform_filter(DATA, size=3, mode="reflect")
    if name == "rechunk":
        return DATA
    if name == "pyramid":  # level 1: means of 2 x 2 windows
        return DATA.reshape(16, 2, 12, 2).mean(axis=(1, 3), dtype="f8").astype("f4")
    return ndimage.label(MASK)[0]


WRITERS = ["store", "to_chunkflow", "map_chunks", "rechunk", "pyramid", "label"]


@pytest.mark.slow
@pytest.mark.parametrize("writer", WRITERS)
def test_every_writer_on_a_cluster_makes_one_commit(repo: Any, cluster_client: Any,
                                                     writer: str, tmp_path: Path) -> None:
    target = repo
    if writer in ("rechunk", "pyramid"):  # they write at the root of a store
        target = icechunk.Repository.create(icechunk.local_filesystem_storage(
            str(tmp_path / "empty")))
    session = target.writable_session("main")
    before = _messages(target)
    path = _run_writer(writer, session, cluster_client, commit=f"{writer} on a cluster",
                       src=_src(repo.readonly_session("main")))
    assert _messages(target) == [f"{writer} on a cluster", *before]
    np.testing.assert_allclose(_main(target, path), _expected(writer), rtol=1e-6)
    np.testing.assert_array_equal(_main(repo, "src"), DATA)  # the source is untouched


@pytest.mark.parametrize("writer", ["store", "map_chunks", "label"])
def test_writers_on_threads_write_into_the_session(repo: Any, writer: str) -> None:
    session = repo.writable_session("main")
    path = _run_writer(writer, session, "threads", commit=None)
    assert session.has_uncommitted_changes
    np.testing.assert_array_equal(_main(repo, "out"), 0)  # nothing committed yet
    session.commit("the user's commit")
    np.testing.assert_allclose(_main(repo, path), _expected(writer), rtol=1e-6)


@pytest.mark.slow
def test_the_user_commits_the_merged_forks(repo: Any, cluster_client: Any) -> None:
    session = repo.writable_session("main")
    before = _messages(repo)
    _run_writer("map_chunks", session, cluster_client, commit=None)
    assert _messages(repo) == before  # chunkflow merged, and did not commit
    out = chunkflow.open_array(session.store, path="out")
    np.testing.assert_allclose(out[:], _expected("map_chunks"), rtol=1e-6)
    session.commit("mine")
    np.testing.assert_allclose(_main(repo, "out"), _expected("map_chunks"), rtol=1e-6)


@pytest.mark.slow
def test_uncommitted_chunks_are_refused_on_a_cluster(repo: Any, cluster_client: Any) -> None:
    session = repo.writable_session("main")
    zarr.open_array(session.store, path="src")[0, 0] = -1  # an uncommitted chunk
    with pytest.raises(TransactionError, match=r"'out'.*uncommitted.*commit them first"):
        _run_writer("map_chunks", session, cluster_client, commit="refused")
    assert _messages(repo)[0] == "src and out"
    assert sorted(session.status().updated_chunks) == ["/src"]  # the session as it was
    np.testing.assert_array_equal(chunkflow.open_array(session.store, path="out")[:], 0)


@pytest.mark.slow
def test_an_output_replaced_before_the_job_is_carried(repo: Any, cluster_client: Any) -> None:
    session = repo.writable_session("main")
    zarr.open_array(session.store, path="out")[:] = -1  # old chunks everywhere
    session.commit("old out")
    session = repo.writable_session("main")
    out = chunkflow.create_array(session.store, name="out", shape=DATA.shape, chunks=(8, 6),
                                 dtype="f8", overwrite=True)  # deletes "out", uncommitted
    right = chunkflow.to_dask(_src(session))[:, 6:].astype("f8")
    chunkflow.store(right, out, (slice(None), slice(6, None)), scheduler=cluster_client,
                    commit="replaced")  # the first columns are not written
    assert _messages(repo)[:2] == ["replaced", "old out"]
    committed = zarr.open_array(repo.readonly_session("main").store, path="out", mode="r")
    assert committed.dtype == np.float64
    expected = DATA.astype("f8")
    expected[:, :6] = 0  # the old chunks went with the old array: nothing shows through
    np.testing.assert_array_equal(committed[:], expected)


def test_processes_are_refused(repo: Any) -> None:
    session = repo.writable_session("main")
    with pytest.raises(TransactionError, match=r"'out'.*scheduler='processes'"):
        _run_writer("store", session, "processes", commit=None)
    assert not session.has_uncommitted_changes


def test_commit_needs_an_icechunk_output(tmp_path: Path) -> None:
    out = chunkflow.zeros((4,), chunks=2, store=str(tmp_path / "plain.zarr"))
    ones = chunkflow.to_dask(chunkflow.ones((4,), chunks=2))
    with pytest.raises(TransactionError, match="commit='x'.*no output is in a writable"):
        chunkflow.store(ones, out, commit="x")
    np.testing.assert_array_equal(out[:], 0)
    src = chunkflow.ones((8, 8), chunks=4)
    refusals = {  # each refused before it creates its output
        "to_chunkflow": lambda where: chunkflow.to_chunkflow(ones, where, commit="x"),
        "map_chunks": lambda where: chunkflow.map_chunks(smooth, src, out=where, commit="x"),
        "rechunk": lambda where: chunkflow.rechunk(src, 8, where, max_memory="1 MiB",
                                                   commit="x"),
        "pyramid": lambda where: chunkflow.pyramid(src, where, levels=2, commit="x"),
        "label": lambda where: chunkflow.label(src, where, commit="x"),
    }
    for name, refused in refusals.items():
        with pytest.raises(TransactionError, match=f"{name}: commit='x'"):
            refused(str(tmp_path / f"{name}.zarr"))
        assert not (tmp_path / f"{name}.zarr").exists()


def test_a_conflict_names_the_array(repo: Any) -> None:
    ours, theirs = repo.writable_session("main"), repo.writable_session("main")
    zarr.open_array(theirs.store, path="out")[:8] = 5
    theirs.commit("theirs: the same chunks")
    with pytest.raises(TransactionConflictError, match=r"array\(s\) 'out' on branch 'main'"):
        _run_writer("store", ours, "threads", commit="ours")
    assert _messages(repo)[0] == "theirs: the same chunks"
    np.testing.assert_array_equal(_main(repo, "out")[:8], 5)
    assert ours.has_uncommitted_changes  # our writes wait in the session


def test_other_arrays_committed_meanwhile_are_rebased_over(repo: Any) -> None:
    ours, theirs = repo.writable_session("main"), repo.writable_session("main")
    zarr.open_array(theirs.store, path="src")[:8] = 5
    theirs.commit("theirs: another array")
    _run_writer("store", ours, "threads", commit="ours")
    assert _messages(repo)[:2] == ["ours", "theirs: another array"]
    np.testing.assert_array_equal(_main(repo, "out"), DATA + 1)  # read before their commit
    np.testing.assert_array_equal(_main(repo, "src")[:8], 5)


@pytest.mark.slow
def test_a_failed_job_commits_nothing_and_resume_runs_it_whole(repo: Any,
                                                             cluster_client: Any) -> None:
    session = repo.writable_session("main")
    out = chunkflow.create_array(session.store, name="doubled", shape=DATA.shape,
                                 chunks=(8, 8), dtype="f4")  # created by the job's caller
    with pytest.raises(RuntimeError, match="the last block fails"):
        chunkflow.map_chunks(_fails_on_the_last_block, _src(session), out=out, block_info=True,
                             blocks=(1, 1), scheduler=cluster_client, commit="failed",
                             resume=True)
    assert _messages(repo)[0] == "src and out"
    # Nothing of the failed job was merged: the session holds the new array only.
    assert session.status().new_arrays == {"/doubled"} and not session.status().updated_chunks
    chunkflow.map_chunks(smooth, _src(session), out=out, blocks=(1, 1),
                         scheduler=cluster_client, commit="resumed", resume=True)
    assert _messages(repo)[:2] == ["resumed", "src and out"]
    np.testing.assert_allclose(_main(repo, "doubled"), _blockwise_smooth(), rtol=1e-6)


def _blockwise_smooth() -> np.ndarray:
    """``smooth`` applied to each 8 x 8 block alone (depth 0), as map_chunks does."""
    result = np.empty_like(DATA)
    for i in range(0, 32, 8):
        for j in range(0, 24, 8):
            result[i:i + 8, j:j + 8] = smooth(DATA[i:i + 8, j:j + 8])
    return result


def test_resume_on_threads_runs_the_whole_job(repo: Any) -> None:
    session = repo.writable_session("main")
    out = chunkflow.open_array(session.store, path="out")
    with pytest.raises(RuntimeError, match="the last block fails"):
        chunkflow.map_chunks(_fails_on_the_last_block, _src(session), out=out, block_info=True,
                             blocks=(1, 1), scheduler="threads", commit="failed", resume=True)
    assert _messages(repo)[0] == "src and out"  # blocks written, nothing committed
    chunkflow.map_chunks(lambda block: block * 2, _src(session), out=out, scheduler="threads",
                         commit="resumed", resume=True)
    np.testing.assert_array_equal(_main(repo, "out"), DATA * 2)


def _dies_once(block: np.ndarray, block_info: dict[str, Any], marker: str) -> np.ndarray:
    """Kill this worker process the first time the last block runs (the nanny starts a
    new one, and the scheduler reruns the task there)."""
    if block_info["block_index"] == tuple(n - 1 for n in block_info["num_blocks"]):
        if not Path(marker).exists():
            Path(marker).touch()
            os._exit(1)
    return block * 2


@pytest.mark.slow
def test_a_worker_lost_during_the_job_merges_nothing(repo: Any, tmp_path: Path) -> None:
    import distributed

    session = repo.writable_session("main")
    out = chunkflow.open_array(session.store, path="out")
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=":0") as cluster, \
            distributed.Client(cluster, set_as_default=False) as client:
        with pytest.raises(TransactionError, match=r"left the cluster.*'out'.*Nothing was merged"):
            chunkflow.map_chunks(_dies_once, _src(session), out=out, block_info=True,
                                 blocks=(1, 1), blocks_per_task=1, scheduler=client,
                                 commit="lost", marker=str(tmp_path / "died"))
    assert (tmp_path / "died").exists()
    assert _messages(repo)[0] == "src and out"
    assert not session.has_uncommitted_changes  # the writes the others held: not merged


@pytest.mark.slow
def test_copy_on_a_cluster_into_a_session(repo: Any, cluster_client: Any,
                                          tmp_path: Path) -> None:
    """chunkflow.copy writes each array's values with store: through forks on a
    cluster, merged into the session with the arrays it created; the user commits."""
    session = repo.writable_session("main")
    group = chunkflow.open_group(session.store, mode="a")
    source = chunkflow.array(DATA, chunks=(5, 7), store=str(tmp_path / "plain.zarr"))
    chunkflow.copy(source, group, name="copied", scheduler=cluster_client)
    session.commit("copied")
    np.testing.assert_array_equal(_main(repo, "copied"), DATA)
