"""In-memory stores across processes: the same object in this process, a clear error
in any other, never a silent copy (chunkflow.storage.process_local)."""

from __future__ import annotations

import multiprocessing
import pickle
import uuid
from collections.abc import Callable

import numpy as np
import pytest

import chunkflow
from chunkflow.errors import ProcessLocalStoreError, StoreValueChangedError
from chunkflow.storage import FsspecStore, MappingStore, MemoryStore, Store


def _memory() -> Store:
    return MemoryStore("m")


def _fsspec_memory() -> Store:
    return FsspecStore(f"memory://chunkflow-tests/{uuid.uuid4().hex}")


def _dict() -> Store:
    return MappingStore({})


IN_MEMORY: list[Callable[[], Store]] = [_memory, _fsspec_memory, _dict]


def _use_in_child(payload: bytes, queue: multiprocessing.Queue) -> None:
    """Runs in a spawned process: unpickle an array and try to read and write it."""
    try:
        z = pickle.loads(payload)
        z[0] = 99
        queue.put(("wrote", None))
    except Exception as err:  # the child reports what happened, whatever it was
        queue.put((type(err).__name__, str(err)))


@pytest.mark.parametrize("make", IN_MEMORY, ids=lambda f: f.__name__)
class TestInMemoryStores:
    def test_same_process_resolves_to_the_same_store(self, make: Callable[[], Store]) -> None:
        store = make()
        z = chunkflow.zeros(10, chunks=5, dtype="i4", store=store)
        clone = pickle.loads(pickle.dumps(z))
        assert clone.store is store
        clone[0] = 7  # a write through the unpickled array lands in the original
        assert z[0] == 7

    def test_byte_ranges_stay_ranged_through_a_pickle(self, make: Callable[[], Store]) -> None:
        store = make()
        store["shard"] = b"0123456789"
        clone = pickle.loads(pickle.dumps(store))
        with clone.open_ranges("shard") as reader, store.open_ranges("shard") as direct:
            assert type(reader) is type(direct)  # the same backend reader, not a copy's
            clone["shard"] = b"replaced!!"
            try:
                assert reader.read([(8, 10), (0, 2)]) == [b"89", b"01"]
            except StoreValueChangedError:
                assert isinstance(store, FsspecStore)  # the only one that cannot pin

    def test_other_process_gets_a_clear_error(self, make: Callable[[], Store]) -> None:
        store = make()
        z = chunkflow.zeros(10, chunks=5, dtype="i4", store=store)
        ctx = multiprocessing.get_context("spawn")
        queue = ctx.Queue()
        child = ctx.Process(target=_use_in_child, args=(pickle.dumps(z), queue))
        child.start()
        kind, message = queue.get(timeout=60)
        child.join(60)
        assert kind == "ProcessLocalStoreError", (kind, message)
        assert "another process" in message and "scheduler='threads'" in message
        assert z[0] == 0


def test_forked_child_does_not_use_its_copy() -> None:
    if "fork" not in multiprocessing.get_all_start_methods():
        pytest.skip("no fork on this platform")
    z = chunkflow.zeros(10, chunks=5, dtype="i4", store=MemoryStore())
    ctx = multiprocessing.get_context("fork")
    queue = ctx.Queue()
    # The child inherits the parent's registry; the renewed process token still
    # tells the pickle it was made elsewhere.
    child = ctx.Process(target=_use_in_child, args=(pickle.dumps(z), queue))
    child.start()
    kind, _ = queue.get(timeout=60)
    child.join(60)
    assert kind == "ProcessLocalStoreError"


def test_dead_store_gives_a_clear_error() -> None:
    payload = pickle.dumps(MemoryStore("gone"))
    import gc

    gc.collect()
    detached = pickle.loads(payload)
    with pytest.raises(ProcessLocalStoreError, match="garbage-collected"):
        detached["zarr.json"]
    for use in (lambda: detached.open_ranges("c/0"), lambda: detached.get_range("c/0", 0, 1)):
        with pytest.raises(ProcessLocalStoreError, match="garbage-collected"):
            use()


def test_file_backed_stores_still_pickle_by_value(tmp_path) -> None:
    z = chunkflow.open(str(tmp_path / "a.zarr"), mode="w", shape=4, chunks=2, dtype="i1")
    z[:] = np.arange(4)
    clone = pickle.loads(pickle.dumps(z))
    assert clone.store is not z.store and clone.store == z.store
    assert clone[:].tolist() == [0, 1, 2, 3]
