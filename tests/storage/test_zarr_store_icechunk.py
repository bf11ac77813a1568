"""Writes into an Icechunk session through chunkflow (one process): new arrays with
mode "w", append and resize (the session refuses chunks outside the shape it holds),
overwrite that never leaves the array deleted, prefix listings the session refuses;
Icechunk's raw errors (a KeyError for a node it lacks, IcechunkError) raised as
chunkflow's, naming the key and what to do. Values are compared with numpy and read
back with zarr-python."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

zarr = pytest.importorskip("zarr", minversion="3")
icechunk = pytest.importorskip("icechunk")

import chunkflow  # noqa: E402
from chunkflow.errors import (  # noqa: E402
    ArrayNotFoundError,
    BoundsCheckError,
    ReadOnlyError,
    TransactionError,
    UnsupportedFormatError,
)
from chunkflow.storage.session_errors import session_error  # noqa: E402
from chunkflow.storage.zarr_store import ZarrStoreAdapter  # noqa: E402

DATA = np.arange(100, dtype="i4").reshape(10, 10)


@pytest.fixture
def repo(tmp_path: Path) -> Any:
    repo = icechunk.Repository.create(icechunk.local_filesystem_storage(str(tmp_path / "repo")))
    session = repo.writable_session("main")
    zarr.create_array(session.store, name="g/a", shape=DATA.shape, chunks=(4, 4),
                      dtype="i4")[:] = DATA
    session.commit("g/a")
    return repo


def _committed(repo: Any, path: str) -> np.ndarray:
    return np.asarray(zarr.open_array(repo.readonly_session("main").store, path=path,
                                      mode="r")[:])


def test_mode_w_on_a_new_path(repo: Any) -> None:
    session = repo.writable_session("main")
    z = chunkflow.open(session.store, mode="w", path="g/new", shape=(5,), chunks=(2,),
                       dtype="u2")
    z[:] = [1, 2, 3, 4, 5]
    session.commit("new")
    assert _committed(repo, "g/new").tolist() == [1, 2, 3, 4, 5]
    np.testing.assert_array_equal(_committed(repo, "g/a"), DATA)


def test_append(repo: Any) -> None:
    session = repo.writable_session("main")
    z = chunkflow.open_array(session.store, path="g/a")
    rows = np.full((3, 10), -1, dtype="i4")
    assert z.append(rows) == (13, 10)
    assert z.append(np.ones((13, 2), dtype="i4"), axis=1) == (13, 12)
    expected = np.concatenate([np.concatenate([DATA, rows]), np.ones((13, 2), "i4")], axis=1)
    np.testing.assert_array_equal(z[:], expected)
    session.commit("appended")
    np.testing.assert_array_equal(_committed(repo, "g/a"), expected)


def test_resize_grow_and_shrink(repo: Any) -> None:
    session = repo.writable_session("main")
    z = chunkflow.open_array(session.store, path="g/a")
    z.resize((6, 13))  # shrinks one axis, grows the other
    z.resize((14, 13))  # rows 6.. read fill_value, never the old rows 6-9
    expected = np.zeros((14, 13), dtype="i4")
    expected[:6, :10] = DATA[:6]
    np.testing.assert_array_equal(z[:], expected)
    session.commit("resized")
    np.testing.assert_array_equal(_committed(repo, "g/a"), expected)


def test_overwrite_replaces_the_array(repo: Any) -> None:
    session = repo.writable_session("main")
    z = chunkflow.create_array(session.store, name="g/a", shape=(5,), chunks=(2,),
                               dtype="f4", overwrite=True)
    z[:] = 0.5
    assert [name for name, _ in zarr.open_group(session.store, path="g").members()] == ["a"]
    session.commit("replaced")
    assert _committed(repo, "g/a").tolist() == [0.5] * 5


def test_listing_below_prefixes_the_session_refuses(repo: Any) -> None:
    # Icechunk lists only below groups and arrays ("bad key prefix" elsewhere).
    store = ZarrStoreAdapter(repo.writable_session("main").store)
    assert list(store.list_prefix("g/nothing")) == []
    chunks = sorted(store.list_prefix("g/a/c"))
    assert chunks == sorted(f"g/a/c/{i}/{j}" for i in range(3) for j in range(3))
    assert sorted(store.list_prefix("g/a/c/2")) == ["g/a/c/2/0", "g/a/c/2/1", "g/a/c/2/2"]
    assert store.list_dir("g/a/c") == ([], ["0", "1", "2"])


def test_a_chunk_of_an_array_the_session_lacks_is_an_error_naming_it(repo: Any) -> None:
    store = ZarrStoreAdapter(repo.writable_session("main").store)
    with pytest.raises(ArrayNotFoundError, match=r"key 'g/b/c/0'.*no array 'g/b'.*create the "
                                                 r"array first"):
        store["g/b/c/0"] = b"1"  # Icechunk raises KeyError('/g/b')


def test_a_chunk_outside_the_shape_is_a_bounds_error(repo: Any) -> None:
    store = ZarrStoreAdapter(repo.writable_session("main").store)
    with pytest.raises(BoundsCheckError, match=r"key 'g/a/c/9/0'.*outside the shape of "
                                               r"array 'g/a'"):
        store["g/a/c/9/0"] = b"1"


def test_zarr_v2_in_a_session_is_refused_naming_what_to_do(repo: Any) -> None:
    session = repo.writable_session("main")
    with pytest.raises(UnsupportedFormatError, match=r"Zarr v3 only; create 'g/v2'.*zarr_format=3"):
        chunkflow.create_array(session.store, name="g/v2", shape=(3,), dtype="u1",
                               zarr_format=2)
    assert not session.has_uncommitted_changes
    # A writer making its output like a v2 source: refused the same way, nothing made.
    source = chunkflow.array(DATA, chunks=(5, 5), zarr_format=2)
    with pytest.raises(UnsupportedFormatError, match="Zarr v3 only"):
        chunkflow.pyramid(source, zarr.storage.StorePath(session.store, "img"), levels=2)
    assert not session.has_uncommitted_changes
    np.testing.assert_array_equal(_committed(repo, "g/a"), DATA)


def test_a_committed_session_writes_no_more(repo: Any) -> None:
    session = repo.writable_session("main")
    store = ZarrStoreAdapter(session.store)
    store["g/a/c/0/0"] = store["g/a/c/1/1"]
    session.commit("one chunk")
    with pytest.raises(ReadOnlyError, match=r"read-only.*repo.writable_session"):
        store["g/a/c/0/0"] = b"0"


def test_a_key_icechunk_cannot_hold_is_absent(repo: Any) -> None:
    # Icechunk raises KeyError for a v2 key even when asked whether it exists.
    store = ZarrStoreAdapter(repo.writable_session("main").store)
    assert "g/a/.zattrs" not in store
    assert store.get_many(["g/a/.zattrs", "g/a/zarr.json"]).keys() == {"g/a/zarr.json"}
    with pytest.raises(KeyError):
        store["g/a/.zarray"]


def test_a_worker_fork_without_the_node_says_why() -> None:
    error = session_error(KeyError("/labels"), "IcechunkStore", "write", ["labels/c/0"],
                          in_fork=True)
    assert isinstance(error, TransactionError)
    assert "fork of the Icechunk session holds no node 'labels'" in str(error)
    assert "create the output before the job" in str(error)


def test_a_fork_handed_back_reads_and_writes_no_more(repo: Any) -> None:
    """An adapter over a session pickles as the job's fork while one is registered; a
    copy unpickled after the worker handed the fork back (a result of an earlier round
    of the job) still reads, and refuses writes: they would be merged nowhere."""
    import pickle

    from chunkflow.storage.forks import end_fork, forget_fork, start_fork, take_forks

    session = repo.writable_session("main")
    adapter = ZarrStoreAdapter(session.store)
    fork_id = start_fork(session, session.fork())
    try:
        copy = pickle.loads(pickle.dumps(adapter))  # a worker's copy of the fork
        copy["g/a/c/0/0"] = copy["g/a/c/2/2"]
        assert pickle.loads(pickle.dumps(adapter)).store is copy.store  # one per process
        [handed] = take_forks(fork_id)
        later = pickle.loads(pickle.dumps(copy))  # pickled as that fork again
        assert later["g/a/c/0/0"] == copy["g/a/c/2/2"]
        with pytest.raises(ReadOnlyError, match="earlier round of an Icechunk job"):
            later["g/a/c/1/1"] = b""
    finally:
        end_fork(fork_id)
        forget_fork(fork_id)
    session.merge(handed)
    session.commit("merged")
    committed = ZarrStoreAdapter(repo.readonly_session("main").store)
    assert committed["g/a/c/0/0"] == committed["g/a/c/2/2"]
    assert committed["g/a/c/1/1"] != b""
