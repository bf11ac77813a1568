"""Byte-range readers across stores, and the counting store the sharding tests use
(chunkflow/testing/counting.py) to prove that a small read of a big shard reads little."""

from __future__ import annotations

import os
import pickle
from pathlib import Path

import pytest

from chunkflow.storage import LocalStore, MappingStore, MemoryStore, Store
from chunkflow.storage.ranges import BytesRangeReader, check_ranges
from chunkflow.testing import CountingStore, Counts, StoreConformance


class TestCountingOverMemory(StoreConformance):
    @pytest.fixture
    def store(self) -> CountingStore:
        return CountingStore(MemoryStore())

    def raw_get(self, store: CountingStore, key: str) -> bytes | None:
        entry = store.inner._data.get(key)  # type: ignore[attr-defined]
        return None if entry is None else entry[0]

    def raw_set(self, store: CountingStore, key: str, value: bytes) -> None:
        store.inner._data[key] = (value, -1)  # type: ignore[attr-defined]


class TestCountingOverLocal(StoreConformance):
    def twin(self, store: CountingStore) -> CountingStore:
        return CountingStore(LocalStore(store.inner.root))  # type: ignore[attr-defined]

    @pytest.fixture
    def store(self, tmp_path: Path) -> CountingStore:
        return CountingStore(LocalStore(tmp_path / "root"))

    def raw_get(self, store: CountingStore, key: str) -> bytes | None:
        path = Path(store.inner.root) / key  # type: ignore[attr-defined]
        return path.read_bytes() if path.is_file() else None

    def raw_set(self, store: CountingStore, key: str, value: bytes) -> None:
        path = Path(store.inner.root) / key  # type: ignore[attr-defined]
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(value)


SHARD = os.urandom(1 << 20)


@pytest.fixture(params=["memory", "local"])
def counting(request: pytest.FixtureRequest, tmp_path: Path) -> CountingStore:
    inner: Store = MemoryStore() if request.param == "memory" else LocalStore(tmp_path)
    store = CountingStore(inner)
    store["shard"] = SHARD
    store["small"] = b"0123456789"
    store.counts.reset()
    return store


def test_every_read_path_is_counted(counting: CountingStore) -> None:
    counts = counting.counts
    assert counting["small"] == b"0123456789"
    assert (counts.bytes_read, counts.requests, counts.calls["get"]) == (10, 1, 1)
    counting.get_many(["small", "missing"])
    assert (counts.bytes_read, counts.requests, counts.calls["get_many"]) == (20, 2, 1)
    counting.get_many_versioned(["small"])
    assert (counts.bytes_read, counts.requests) == (30, 3)
    assert counting.get_range("shard", -4) == SHARD[-4:]
    assert (counts.bytes_read, counts.requests, counts.calls["get_range"]) == (34, 4, 1)
    assert counts.bytes_by_key == {"small": 30, "shard": 4}
    counts.reset()
    assert (counts.bytes_read, counts.requests, counts.calls) == (0, 0, {})


def test_ranges_of_a_big_value_count_kilobytes(counting: CountingStore) -> None:
    with counting.open_ranges("shard") as reader:
        assert reader.size == len(SHARD) and reader.version == counting.versions(["shard"])["shard"]
        index = reader.read([(len(SHARD) - 16, len(SHARD))])
        chunks = reader.read([(4096, 8192), (0, 100), (4096, 8192)])
    assert index == [SHARD[-16:]] and chunks == [SHARD[4096:8192], SHARD[:100], SHARD[4096:8192]]
    counts = counting.counts
    # What the backend was asked for (a repeated range is fetched once): kilobytes,
    # not the 1 MiB shard.
    assert counts.bytes_read == 16 + 4096 + 100 and counts.bytes_by_key == {"shard": 4212}
    assert counts.requests == 2 and counts.calls["read_ranges"] == 2
    assert counts.calls["open_ranges"] == 1


def test_a_whole_value_reader_counts_the_whole_value() -> None:
    store = CountingStore(MappingStore({}))  # a dict has no ranged reads
    store["shard"] = SHARD
    store.counts.reset()
    with store.open_ranges("shard") as reader:
        assert reader.read([(0, 10)]) == [SHARD[:10]]
    assert store.counts.bytes_read == len(SHARD)  # fetched whole at open; honest count
    assert store.counts.requests == 1 and store.counts.calls["open_ranges_whole"] == 1


def test_pickled_in_this_process_counts_into_the_same_counts(counting: CountingStore) -> None:
    clone = pickle.loads(pickle.dumps(counting))
    assert clone.counts is counting.counts and clone == counting
    clone["small"]
    assert counting.counts.bytes_read == 10


def test_writes_and_flags_pass_through() -> None:
    inner = MemoryStore()
    store = CountingStore(inner)
    store.set_many({"a/0": b"1"})
    assert inner["a/0"] == b"1" and store.identity == inner.identity
    store.read_only = True
    assert inner.read_only and store.read_only
    assert repr(store) == f"CountingStore({inner!r})" and "Counts(" in repr(store.counts)
    assert isinstance(Counts(), Counts)


def test_check_ranges_messages() -> None:
    assert check_ranges("k", [], 0) == []
    with pytest.raises(ValueError, match=r"byte range \(0, 5\) of key 'k' is out of bounds.*<= 4"):
        check_ranges("k", [(0, 5)], 4)
    with pytest.raises(ValueError, match="not a \\(start, stop\\) pair of ints"):
        check_ranges("k", [(0, 1, 2)], 4)  # type: ignore[list-item]


def test_bytes_reader_copies_mutable_values_once() -> None:
    buf = bytearray(b"abc")
    reader = BytesRangeReader("k", buf, None)  # type: ignore[arg-type]
    buf[:] = b"xyz"
    assert reader.read([(0, 3)]) == [b"abc"]


def test_close_waits_for_reads_in_flight(tmp_path: Path) -> None:
    import threading

    store = LocalStore(tmp_path)
    store["k"] = b"v" * 100
    reader = store.open_ranges("k")
    inner_read = reader._read  # type: ignore[attr-defined]
    started, resume = threading.Event(), threading.Event()
    got: list[list[bytes]] = []

    def slow_read(ranges: list[tuple[int, int]]) -> list[bytes]:
        started.set()
        resume.wait(10)
        return inner_read(ranges)

    reader._read = slow_read  # type: ignore[method-assign]
    thread = threading.Thread(target=lambda: got.append(reader.read([(0, 5)])))
    thread.start()
    started.wait(10)
    reader.close()  # while the read is in flight: the descriptor must stay open
    fd = reader._fd  # type: ignore[attr-defined]
    os.fstat(fd)
    with pytest.raises(ValueError, match="closed"):
        reader.read([(0, 1)])  # no new reads, though
    resume.set()
    thread.join(10)
    assert got == [[b"vvvvv"]]
    with pytest.raises(OSError):  # released by the read that finished last
        os.fstat(fd)
