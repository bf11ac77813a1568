"""What a zarr-python store is (chunkflow.storage.zarr_traits): whether it travels to
other processes, where its data lives, whether its writes wait for a commit; and how
the adapter pickles accordingly."""

from __future__ import annotations

import pickle
from pathlib import Path
from typing import Any

import pytest

zarr = pytest.importorskip("zarr", minversion="3")
icechunk = pytest.importorskip("icechunk")
obstore_store = pytest.importorskip("obstore.store")

from zarr.storage import (  # noqa: E402
    FsspecStore,
    LocalStore,
    LoggingStore,
    MemoryStore,
    ObjectStore,
    WrapperStore,
)

import chunkflow  # noqa: E402
from chunkflow.errors import ProcessLocalStoreError  # noqa: E402
from chunkflow.storage.process_local import DetachedStore, resolve  # noqa: E402
from chunkflow.storage.zarr_store import ZarrStoreAdapter  # noqa: E402
from chunkflow.storage.zarr_traits import (  # noqa: E402
    identity_of,
    is_transactional,
    process_local_reason,
)


def _repository(folder: Path) -> Any:
    repo = icechunk.Repository.create(icechunk.local_filesystem_storage(str(folder)))
    session = repo.writable_session("main")
    zarr.create_array(session.store, name="a", shape=(6,), chunks=(2,), dtype="i4")[:] = 7
    session.commit("one array")
    return repo


class _Counting(WrapperStore[Any]):
    """A user's own wrapper store (any WrapperStore subclass)."""


def _in_memory_cases() -> dict[str, Any]:
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # zarr wraps the synchronous memory file system
        memory_fs = FsspecStore.from_url("memory://chunkflow-traits", read_only=False)
    return {
        "MemoryStore": MemoryStore(),
        "GpuMemoryStore-like subclass": type("Mine", (MemoryStore,), {})(),
        "memory file system": memory_fs,
        "obstore MemoryStore": ObjectStore(obstore_store.MemoryStore()),
        "LoggingStore(MemoryStore)": LoggingStore(MemoryStore()),
        "wrapper of a wrapper": _Counting(LoggingStore(MemoryStore())),
    }


@pytest.mark.parametrize("name", list(_in_memory_cases()))
def test_in_memory_stores_stay_in_their_process(name: str) -> None:
    store = _in_memory_cases()[name]
    reason = process_local_reason(store)
    assert reason is not None and "this process" in reason
    adapter = ZarrStoreAdapter(store)
    assert pickle.loads(pickle.dumps(adapter)) is adapter  # the same object here
    function, (_, _, _, why) = adapter.__reduce__()
    assert function is resolve and why == reason  # elsewhere: refused, saying why


def test_the_reference_says_which_store_and_why_in_another_process() -> None:
    adapter = ZarrStoreAdapter(LoggingStore(MemoryStore()))
    function, (identity, _, description, why) = adapter.__reduce__()
    elsewhere = function(identity, "a token of another process", description, why)
    assert isinstance(elsewhere, DetachedStore)
    with pytest.raises(ProcessLocalStoreError) as info:
        elsewhere["k"]
    message = str(info.value)
    assert "LoggingStore" in message and "MemoryStore" in message and "dict of this process" in message


def test_stores_that_pickle_travel_as_themselves(tmp_path: Path) -> None:
    repo = _repository(tmp_path / "repo")
    session = repo.writable_session("main")
    cases = {
        "LocalStore": LocalStore(tmp_path / "data.zarr"),
        "LoggingStore(LocalStore)": LoggingStore(LocalStore(tmp_path / "data.zarr")),
        "ObjectStore(LocalStore)": ObjectStore(obstore_store.LocalStore(str(tmp_path))),
        "Icechunk read-only session": repo.readonly_session("main").store,
        "Icechunk fork session": session.fork().store,
    }
    for name, store in cases.items():
        assert process_local_reason(store) is None, name
        adapter = ZarrStoreAdapter(store)
        clone = pickle.loads(pickle.dumps(adapter))
        assert clone is not adapter and type(clone.store) is type(store), name
        assert clone.identity == adapter.identity, name  # the same data, the same name


def test_a_store_that_refuses_to_pickle_goes_by_reference(tmp_path: Path) -> None:
    # A writable Icechunk session must be forked to travel: chunkflow keeps it in
    # this process and says so (with Icechunk's own words) in any other.
    store = _repository(tmp_path / "repo").writable_session("main").store
    adapter = ZarrStoreAdapter(store)
    assert pickle.loads(pickle.dumps(adapter)) is adapter
    function, (identity, _, description, why) = adapter.__reduce__()
    with pytest.raises(ProcessLocalStoreError, match="refuses to be pickled.*fork"):
        function(identity, "another process", description, why).get_many(["a/zarr.json"])


def test_read_only_sessions_are_named_by_their_snapshot(tmp_path: Path) -> None:
    repo = _repository(tmp_path / "repo")
    one, two = repo.readonly_session("main").store, repo.readonly_session("main").store
    snapshot = repo.readonly_session("main").snapshot_id
    assert identity_of(one, one) == identity_of(two, two) == f"icechunk-snapshot:{snapshot}"
    writable = repo.writable_session("main").store
    assert identity_of(writable, writable) != identity_of(one, one)


def test_object_stores_are_named_like_chunkflow_names_the_location() -> None:
    inner = obstore_store.S3Store("bucket", prefix="a.zarr", endpoint="http://127.0.0.1:9",
                                  skip_signature=True)
    adapter = ZarrStoreAdapter(ObjectStore(inner, read_only=True))
    native = chunkflow.storage.FsspecStore("s3://bucket/a.zarr",
                                           {"endpoint_url": "http://127.0.0.1:9", "anon": True})
    assert adapter.identity == native.identity


def test_sessions_are_transactional(tmp_path: Path) -> None:
    repo = _repository(tmp_path / "repo")
    session = repo.writable_session("main")
    assert is_transactional(session.store) and is_transactional(LoggingStore(session.store))
    assert ZarrStoreAdapter(session.store).transactional
    assert not is_transactional(LocalStore(tmp_path / "x"))
    assert not ZarrStoreAdapter(MemoryStore()).transactional
