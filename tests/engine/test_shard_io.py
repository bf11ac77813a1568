"""Part of a shard: reads fetch the index and the inner chunks touched; writes re-encode only those."""

from __future__ import annotations

import uuid
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import chunkflow
from chunkflow.cache import ChunkCache
from chunkflow.engine.shard_reads import shifted_selection, touched_inner_chunks
from chunkflow.errors import ChunkDecodeError


def sharded(shape: tuple[int, ...], shards: tuple[int, ...], inner: tuple[int, ...],
            store: Any = None, **kwargs: Any) -> chunkflow.Array:
    return chunkflow.create_array({} if store is None else store, shape=shape, chunks=inner,
                                  shards=shards, dtype="i4", fill_value=-1,
                                  compressors={"name": "zstd", "configuration": {"level": 1}},
                                  **kwargs)


def _selection(data: st.DataObject, shape: tuple[int, ...]) -> tuple[str, Any]:
    kind = data.draw(st.sampled_from(["basic", "orthogonal", "coordinate", "mask"]))
    rng = np.random.default_rng(data.draw(st.integers(0, 2**16)))
    if kind == "basic":
        selection = []
        for n in shape:
            if data.draw(st.booleans()) and n:
                selection.append(int(rng.integers(n)))
            else:
                start, stop = sorted(int(i) for i in rng.integers(0, n + 1, 2))
                step = data.draw(st.sampled_from([1, 1, 2, 5, -1, -3]))
                selection.append(slice(start, stop, step) if step > 0 else slice(stop, start, step))
        return kind, tuple(selection)
    if kind == "orthogonal":
        return kind, tuple(np.sort(rng.choice(n, size=min(n, 3), replace=False)) if n else slice(None)
                           for n in shape)
    if kind == "coordinate":
        points = int(rng.integers(1, 6))
        return kind, tuple(rng.integers(0, n, points) for n in shape) if all(shape) else (
            tuple(slice(None) for _ in shape))
    return kind, rng.random(shape) < 0.05


def _read(z: chunkflow.Array, kind: str, selection: Any) -> np.ndarray:
    if kind == "orthogonal":
        return z.oindex[selection]
    if kind in ("coordinate", "mask") and not isinstance(selection[0], slice):
        return z.vindex[selection]
    return z[selection]


def _expected(data: np.ndarray, kind: str, selection: Any) -> np.ndarray:
    if kind == "orthogonal":
        return data[np.ix_(*selection)] if all(isinstance(s, np.ndarray) for s in selection) \
            else data[selection]
    return data[selection]


def _layout(data: st.DataObject, most_per_shard: int, largest: int) -> tuple[tuple[int, ...], ...]:
    """Random (shape, shards, inner chunks) of 1 to 3 dimensions."""
    ndim = data.draw(st.integers(1, 3))
    inner = tuple(data.draw(st.integers(1, 4)) for _ in range(ndim))
    shards = tuple(c * data.draw(st.integers(1, most_per_shard)) for c in inner)
    shape = tuple(data.draw(st.integers(1, largest)) for _ in range(ndim))
    return shape, shards, inner


@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_partial_shard_reads_match_numpy(data: st.DataObject) -> None:
    shape, shards, inner = _layout(data, most_per_shard=4, largest=20)
    cache = data.draw(st.sampled_from([False, True]))
    z = sharded(shape, shards, inner, cache=ChunkCache(1 << 20) if cache else False)
    values = np.random.default_rng(0).integers(0, 1000, shape).astype("i4")
    values[values % 7 == 0] = -1  # some inner chunks all fill: not stored
    z[...] = values
    for _ in range(3):
        kind, selection = _selection(data, shape)
        np.testing.assert_array_equal(_read(z, kind, selection), _expected(values, kind, selection))


def test_touched_inner_chunks_of_points_are_the_points_own() -> None:
    # A diagonal of points touches the diagonal inner chunks, not the outer product.
    points = (np.array([0, 5, 10, 15]), np.array([0, 5, 10, 15]))
    flats, origin, box = touched_inner_chunks(points, (4, 4), (4, 4))
    assert flats.tolist() == [0, 5, 10, 15]
    assert origin == (0, 0) and box == (16, 16)


def test_shifted_negative_steps_never_wrap() -> None:
    values = np.arange(16)
    for selection in [slice(None, None, -1), slice(9, 2, -2), slice(15, None, -5)]:
        flats, origin, box = touched_inner_chunks((selection,), (4,), (4,))
        moved = shifted_selection((selection,), origin, (16,))
        window = values[origin[0]:origin[0] + box[0]]
        np.testing.assert_array_equal(window[moved], values[selection])


# -- the cache holds inner chunks ------------------------------------------------------


def test_cache_holds_inner_chunks_and_panning_decodes_each_once(monkeypatch: Any) -> None:
    cache = ChunkCache(64 << 20)
    z = sharded((64, 64), (32, 32), (8, 8), cache=cache)
    values = np.arange(64 * 64, dtype="i4").reshape(64, 64)
    z[...] = values
    decoded = []
    inner = z._io.shards.stage.inner
    original = inner.decode
    monkeypatch.setattr(inner, "decode", lambda data: decoded.append(1) or original(data))
    for x in range(0, 40, 4):  # pan right by half an inner chunk
        np.testing.assert_array_equal(z[10:26, x:x + 16], values[10:26, x:x + 16])
    # rows 10:26 touch inner rows 1..3; columns 0..56 touch inner columns 0..6
    assert len(decoded) == 3 * 7
    assert all("#" in key for key in cache._tiers.data.keys())  # never a whole shard


def test_write_to_a_shard_drops_its_cached_inner_chunks() -> None:
    store: dict[str, bytes] = {}
    cache = ChunkCache(64 << 20)
    z = sharded((64, 64), (32, 32), (8, 8), store=store, cache=cache)
    z[...] = 1
    assert int(z[3:5, 3:5].sum()) == 4  # inner chunk (0, 0) now cached
    other = chunkflow.open_array(z.store, mode="r+", cache=False)  # another handle, no cache
    other[0:32, 0:32] = 2  # a whole-shard write elsewhere
    assert int(z[3:5, 3:5].sum()) == 8
    other[4, 4] = 7  # a partial-shard write
    assert z[4, 4] == 7


def test_a_change_behind_the_process_is_seen_by_a_handle_opened_after_it(tmp_path: Any) -> None:
    import zarr

    path = str(tmp_path / "s.zarr")
    cache = ChunkCache(64 << 20)
    z = sharded((64, 64), (32, 32), (8, 8), store=path, cache=cache)
    z[...] = 1
    assert z[5, 5] == 1  # cached
    zarr.open_array(path, mode="r+")[5, 5] = 9  # another library: no announcement here
    assert chunkflow.open_array(path, mode="r", cache=cache)[5, 5] == 9


# -- partial writes ------------------------------------------------------------------


@settings(max_examples=40, deadline=None)
@given(data=st.data())
def test_partial_shard_writes_match_numpy(data: st.DataObject) -> None:
    shape, shards, inner = _layout(data, most_per_shard=3, largest=14)
    z = sharded(shape, shards, inner, cache=False)
    expected = np.full(shape, -1, dtype="i4")
    rng = np.random.default_rng(data.draw(st.integers(0, 2**16)))
    for _ in range(4):
        kind, selection = _selection(data, shape)
        target = _expected(expected, kind, selection)
        value = rng.integers(-1, 3, np.shape(target)).astype("i4")  # -1 is the fill value
        if kind == "orthogonal":
            z.oindex[selection] = value
            if all(isinstance(s, np.ndarray) for s in selection):
                expected[np.ix_(*selection)] = value
            else:
                expected[selection] = value
        elif kind in ("coordinate", "mask") and not isinstance(selection[0], slice):
            z.vindex[selection] = value
            expected[selection] = value
        else:
            z[selection] = value
            expected[selection] = value
        np.testing.assert_array_equal(z[...], expected)


def test_a_partial_write_encodes_only_the_inner_chunks_it_touches(monkeypatch: Any) -> None:
    z = sharded((64, 64), (64, 64), (8, 8), cache=False)
    z[...] = 5
    inner = z._io.shards.stage.inner
    encoded = []
    original = inner.encode
    monkeypatch.setattr(inner, "encode", lambda chunk: encoded.append(1) or original(chunk))
    z[6:10, 6:10] = 7  # touches 4 of 64 inner chunks
    assert len(encoded) == 4
    expected = np.full((64, 64), 5, "i4")
    expected[6:10, 6:10] = 7
    np.testing.assert_array_equal(chunkflow.open_array(z.store, mode="r", cache=False)[...],
                                  expected)


def _stored_inner_chunks(z: chunkflow.Array, data: bytes) -> int:
    from chunkflow.codecs.sharding import MISSING

    stage = z._io.shards.stage
    start, stop = stage.index_range(len(data))
    offsets, _ = stage.parse_index(data[start:stop], len(data))
    return int((offsets != MISSING).sum())


def test_inner_chunks_written_back_to_fill_leave_the_shard() -> None:
    store: dict[str, bytes] = {}
    z = sharded((16, 16), (16, 16), (4, 4), store=store, cache=False)
    z[0, 0] = 3
    z[1, 1] = 4  # the same inner chunk
    z[15, 15] = 5
    assert _stored_inner_chunks(z, store["c/0/0"]) == 2
    z[0, 0] = z[1, 1] = -1  # back to the fill value: left out of the shard
    assert _stored_inner_chunks(z, store["c/0/0"]) == 1
    z[15, 15] = -1
    assert "c/0/0" not in store  # nothing left but fill: the shard is deleted


def test_disjoint_writes_from_threads_to_one_shard_all_land() -> None:
    import threading

    from chunkflow.sync import ThreadSynchronizer

    z = sharded((64, 64), (64, 64), (8, 8), synchronizer=ThreadSynchronizer(), cache=False)
    z[...] = 0

    def writer(row: int) -> None:
        for column in range(0, 64, 3):  # unaligned, all in the one shard
            z[row * 8 + 1:row * 8 + 6, column:column + 3] = row + 1

    threads = [threading.Thread(target=writer, args=(row,)) for row in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    expected = np.zeros((64, 64), "i4")
    for row in range(8):
        expected[row * 8 + 1:row * 8 + 6] = row + 1
    np.testing.assert_array_equal(z[...], expected)


# -- bytes read ----------------------------------------------------------------------


def _backend(kind: str, tmp_path: Any) -> Any:
    from chunkflow.storage import LocalStore, MemoryStore, make_store

    if kind == "memory":
        return MemoryStore()
    if kind == "local":
        return LocalStore(str(tmp_path / "s.zarr"))
    if kind == "zip":
        return make_store(str(tmp_path / "s.zip"), mode="w")
    return make_store(f"memory://shards-{uuid.uuid4().hex}", mode="w")  # fsspec


@pytest.mark.parametrize("kind", ["memory", "local", "zip", "fsspec"])
def test_ten_pixels_of_a_64_mib_shard_read_kilobytes(kind: str, tmp_path: Any) -> None:
    from chunkflow.testing import CountingStore

    store = CountingStore(_backend(kind, tmp_path))
    # One 4096x4096 uint32 shard (64 MiB decoded) of 128x128 inner chunks.
    z = chunkflow.create_array(store, shape=(4096, 4096), chunks=(128, 128),
                               shards=(4096, 4096), dtype="u4", cache=False,
                               compressors={"name": "zstd", "configuration": {"level": 1}})
    rows = np.arange(4096, dtype="u4")[:, None]
    z[...] = rows * 4096 + np.arange(4096, dtype="u4")
    shard_bytes = len(store.inner["c/0/0"])
    if kind == "zip":  # a zip is read back once it is closed
        store.inner.close()
        store = CountingStore(_backend_reopen(tmp_path))
    reader = chunkflow.open_array(store, mode="r", cache=False)
    store.counts.reset()
    np.testing.assert_array_equal(reader[1000, 2000:2010], 1000 * 4096 + np.arange(2000, 2010))
    index = 16 * 32 * 32 + 4
    # The index (16 KiB) and one inner chunk (64 KiB decoded, less compressed).
    assert store.counts.bytes_read <= index + 64 * 1024, store.counts
    assert store.counts.bytes_read < shard_bytes / 20
    assert store.counts.bytes_by_key["c/0/0"] >= index


def _backend_reopen(tmp_path: Any) -> Any:
    from chunkflow.storage import make_store

    return make_store(str(tmp_path / "s.zip"), mode="r")


class _ChangingStore:
    """A memory store whose shard readers report a concurrent change on their second
    read (index read, then the shard is replaced) the first ``changes`` times."""

    @staticmethod
    def make(changes: int) -> Any:
        from chunkflow.errors import StoreValueChangedError
        from chunkflow.storage import ByteRangeReader, MemoryStore

        class Reader(ByteRangeReader):
            def __init__(self, store: Any, inner: ByteRangeReader) -> None:
                self.store, self.inner = store, inner
                self.key, self.size, self.version = inner.key, inner.size, inner.version
                self.reads = 0

            def _read(self, ranges: list[tuple[int, int]]) -> list[bytes]:
                self.reads += 1
                if self.reads > 1 and self.store.changes > 0:
                    self.store.changes -= 1
                    raise StoreValueChangedError(self.key, f"key {self.key!r} changed")
                return self.inner.read(ranges)

            def _close(self) -> None:
                self.inner.close()

        class Store(MemoryStore):
            def _open_ranges(self, key: str) -> ByteRangeReader:
                self.opens += 1
                return Reader(self, super()._open_ranges(key))

        store = Store()
        store.changes, store.opens = changes, 0
        return store


@pytest.mark.parametrize("changes, opens", [(1, 2), (2, 3), (50, 3)])
def test_a_shard_changing_between_reads_is_read_again_never_mixed(changes: int, opens: int) -> None:
    store = _ChangingStore.make(0)
    z = sharded((64, 64), (64, 64), (8, 8), store=store, cache=False)
    values = np.arange(64 * 64, dtype="i4").reshape(64, 64)
    z[...] = values
    store.changes, store.opens = changes, 0
    np.testing.assert_array_equal(z[3:5, 3:5], values[3:5, 3:5])
    assert store.opens == opens  # after three changes in a row: one whole fetch


def test_the_index_of_an_unchanged_shard_is_read_once() -> None:
    from chunkflow.storage import MemoryStore
    from chunkflow.testing import CountingStore

    store = CountingStore(MemoryStore())
    z = sharded((64, 64), (64, 64), (8, 8), store=store, cache=ChunkCache(64 << 20))
    z[...] = np.arange(64 * 64, dtype="i4").reshape(64, 64)
    assert z[1, 1] == 65
    store.counts.reset()
    assert z[40, 40] == 40 * 64 + 40  # another inner chunk: the index comes from the cache
    assert store.counts.requests == 1, store.counts
    index_bytes = z._io.shards.stage.index_nbytes
    assert store.counts.bytes_read < index_bytes
    z[40, 41] = -5  # the shard changes: its index (and inner chunks) leave the cache
    store.counts.reset()
    assert z[0, 9] == 9
    assert store.counts.requests == 2 and store.counts.bytes_read > index_bytes


def test_a_cached_index_is_used_only_for_the_version_it_came_from() -> None:
    from chunkflow.storage import MemoryStore

    store = MemoryStore()
    z = sharded((64, 64), (64, 64), (8, 8), store=store, cache=ChunkCache(64 << 20),
                recheck_cached_data=True)
    z[...] = 1
    assert z[1, 1] == 1  # the index and one inner chunk cached
    other = sharded((64, 64), (64, 64), (8, 8), cache=False)
    other[...] = np.arange(64 * 64, dtype="i4").reshape(64, 64)
    other[0:8, 0:8] = -1  # one inner chunk less: every offset moves
    # Replaced behind the cache's back (no change announced in this process).
    store._set_many_versioned({"c/0/0": other.store["c/0/0"]})
    assert z[40, 40] == 40 * 64 + 40
    assert z[1, 1] == -1


@pytest.mark.parametrize("selection", [np.s_[20, 20], np.s_[16:32, 16:32], np.s_[:]],
                         ids=["one value (index read)", "whole shard", "whole array"])
def test_a_garbled_shard_index_names_array_and_shard(tmp_path: Any, selection: Any) -> None:
    root = chunkflow.open_group(str(tmp_path / "g.zarr"), mode="w")
    z = root.create_array("images/a", shape=(32, 32), chunks=(8, 8), shards=(16, 16),
                          dtype="u2")
    z[:] = np.arange(32 * 32, dtype="u2").reshape(32, 32)
    shard = tmp_path / "g.zarr" / "images" / "a" / "c" / "1" / "1"
    raw = bytearray(shard.read_bytes())
    raw[-20:] = b"\x5a" * 20  # the index (at the shard's end) and its checksum
    shard.write_bytes(bytes(raw))
    again = chunkflow.open(str(tmp_path / "g.zarr"), mode="r")["images/a"]
    with pytest.raises(ChunkDecodeError) as caught:
        again[selection]
    message = str(caught.value)
    assert message.startswith("array 'images/a': the index of shard 'images/a/c/1/1' "
                              "could not be decoded: codec 'crc32c'"), message
    assert isinstance(caught.value, ValueError) and caught.value.__cause__ is not None


def test_a_garbled_inner_chunk_names_array_shard_and_inner_chunk(tmp_path: Any) -> None:
    z = chunkflow.open_array(str(tmp_path / "a.zarr"), mode="w", shape=(32, 32),
                             chunks=(8, 8), shards=(16, 16), dtype="f4")
    z[:] = np.random.default_rng(0).random((32, 32), dtype="f4")
    shard = tmp_path / "a.zarr" / "c" / "0" / "1"
    raw = bytearray(shard.read_bytes())
    raw[:64] = b"\x5a" * 64  # the first stored inner chunk: (0, 0) of the shard
    shard.write_bytes(bytes(raw))
    with pytest.raises(ChunkDecodeError, match=r"^array '/': inner chunk \(0, 0\) of shard "
                                               r"'c/0/1' could not be decoded: codec ") as caught:
        chunkflow.open(str(tmp_path / "a.zarr"), mode="r")[0:4, 16:20]
    assert caught.value.__cause__ is not None


def test_a_handle_without_cache_reads_an_unchanged_index_once() -> None:
    from chunkflow.storage import MemoryStore
    from chunkflow.testing import CountingStore

    store = CountingStore(MemoryStore())
    z = sharded((64, 64), (64, 64), (8, 8), store=store, cache=False)
    z[...] = np.arange(64 * 64, dtype="i4").reshape(64, 64)
    assert z[1, 1] == 65  # reads the index
    store.counts.reset()
    assert z[40, 40] == 40 * 64 + 40  # the same version of the shard: its index is known
    assert store.counts.requests == 1, store.counts
    index_bytes = z._io.shards.stage.index_nbytes
    assert store.counts.bytes_read < index_bytes
    # Replaced behind the handle's back (another process): a new version, every offset
    # moved (one inner chunk less), so the index is read again.
    other = sharded((64, 64), (64, 64), (8, 8), cache=False)
    other[...] = np.arange(64 * 64, dtype="i4").reshape(64, 64)
    other[0:8, 0:8] = -1
    store._set_many_versioned({"c/0/0": other.store["c/0/0"]})
    store.counts.reset()
    assert z[40, 40] == 40 * 64 + 40 and z[1, 1] == -1
    assert store.counts.bytes_read > index_bytes
