"""Tests of chunkflow.storage: the conformance mixin per backend, then specifics."""

from __future__ import annotations

import copy
import os
import pickle
import threading
import uuid
import warnings
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import fsspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from chunkflow.errors import InvalidKeyError, ReadOnlyError, StoreValueChangedError
from chunkflow.storage import (
    FsspecStore,
    LocalStore,
    MappingStore,
    MemoryStore,
    Store,
    ZipStore,
    make_store,
    normalize_key,
)
from chunkflow.storage.fsspec_store import FsspecRangeReader
from chunkflow.storage.local import TMP_SUFFIX
from chunkflow.testing import StoreConformance

# ------------------------------------------------------------------ backends


class TestMemoryStore(StoreConformance):
    @pytest.fixture
    def store(self) -> MemoryStore:
        return MemoryStore()

    def raw_get(self, store: MemoryStore, key: str) -> bytes | None:
        entry = store._data.get(key)
        return None if entry is None else entry[0]

    def raw_set(self, store: MemoryStore, key: str, value: bytes) -> None:
        store._data[key] = (value, -1)

    def test_deepcopy_copies_contents_with_new_identity(self) -> None:
        store = MemoryStore("named")
        store["k"] = b"v"
        clone = copy.deepcopy(store)
        clone["k"] = b"changed"
        assert store["k"] == b"v"
        assert clone.identity != store.identity and "named" in clone.identity

    def test_distinct_identities(self) -> None:
        assert MemoryStore().identity != MemoryStore().identity
        assert MemoryStore() != MemoryStore()

    def test_threads(self) -> None:
        store = MemoryStore()

        def work(t: int) -> None:
            for i in range(200):
                store[f"t{t}/{i}"] = b"x"
                store.get_many([f"t{t}/{i}", "missing"])
                list(store.list_prefix(""))

        threads = [threading.Thread(target=work, args=(t,)) for t in range(4)]
        for th in threads:
            th.start()
        for th in threads:
            th.join()
        assert len(store) == 800


    def test_range_reader_holds_the_value_without_copying(self) -> None:
        store = MemoryStore()
        store["k"] = b"x" * 100
        stored = store._data["k"][0]
        with store.open_ranges("k") as reader:
            assert reader._data is stored  # type: ignore[attr-defined]
            assert reader.version == store._data["k"][1]


class _FolderChannel:
    """The bypass channel of stores over a local folder: the file system itself."""

    def raw_get(self, store: Any, key: str) -> bytes | None:
        path = Path(_folder_of(store)) / key
        return path.read_bytes() if path.is_file() else None

    def raw_set(self, store: Any, key: str, value: bytes) -> None:
        path = Path(_folder_of(store)) / key
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(value)


def _folder_of(store: Any) -> str:
    return store.root if isinstance(store, LocalStore) else store.fs._strip_protocol(store.root)


class TestLocalStore(_FolderChannel, StoreConformance):
    def twin(self, store: LocalStore) -> LocalStore:
        return LocalStore(store.root)

    @pytest.fixture
    def store(self, tmp_path: Path) -> LocalStore:
        return LocalStore(tmp_path / "root")

    def test_layout_on_disk(self, tmp_path: Path) -> None:
        store = LocalStore(tmp_path)
        store["a/b/c"] = b"1"
        assert (tmp_path / "a" / "b" / "c").read_bytes() == b"1"
        del store["a/b/c"]
        assert (tmp_path / "a" / "b").is_dir()  # folders stay, as in zarr-python

    def test_same_folder_same_identity(self, tmp_path: Path) -> None:
        real = tmp_path / "real"
        real.mkdir()
        (tmp_path / "link").symlink_to(real)
        assert LocalStore(real).identity == LocalStore(str(real)).identity
        assert LocalStore(tmp_path / "link").identity == LocalStore(real).identity
        assert LocalStore(real) == LocalStore(real, read_only=True)
        assert hash(LocalStore(real)) == hash(LocalStore(real))
        assert FsspecStore(real.as_uri()).identity == LocalStore(real).identity
        assert LocalStore(tmp_path).identity != LocalStore(real).identity

    def test_read_only_reopen(self, tmp_path: Path) -> None:
        LocalStore(tmp_path)["k"] = b"1"
        ro = LocalStore(tmp_path, read_only=True)
        with pytest.raises(ReadOnlyError, match="'k'"):
            ro["k"] = b"2"
        assert ro["k"] == b"1"
        assert pickle.loads(pickle.dumps(ro)).read_only

    def test_missing_root_reads_as_empty(self, tmp_path: Path) -> None:
        store = LocalStore(tmp_path / "nope", read_only=True)
        assert list(store) == [] and store.list_dir("") == ([], [])
        with pytest.raises(KeyError):
            store["x"]
        assert not (tmp_path / "nope").exists()

    def test_failed_write_leaves_no_temp_file(self, tmp_path: Path) -> None:
        store = LocalStore(tmp_path)
        store["a/b"] = b"1"
        with pytest.raises(OSError):
            store["a"] = b"a folder is in the way"
        assert sorted(os.listdir(tmp_path)) == ["a"]
        assert os.listdir(tmp_path / "a") == ["b"]

    def test_temp_files_hidden_from_listings(self, tmp_path: Path) -> None:
        store = LocalStore(tmp_path)
        store["a/b"] = b"1"
        (tmp_path / "a" / f"b.123{TMP_SUFFIX}").write_bytes(b"partial")
        assert list(store) == ["a/b"] and store.list_dir("a") == (["b"], [])
        assert store.getsize_prefix("") == 1

    def test_no_torn_reads(self, tmp_path: Path) -> None:
        store = LocalStore(tmp_path)
        values = [b"a" * 300_000, b"b" * 200_000 + b"c" * 100_000]
        store["k"] = values[0]
        stop = threading.Event()
        seen: list[bytes] = []

        def writer() -> None:
            i = 0
            while not stop.is_set():
                store["k"] = values[i % 2]
                i += 1

        def reader() -> None:
            for _ in range(400):
                seen.append(store["k"])

        w = threading.Thread(target=writer)
        w.start()
        try:
            reader()
        finally:
            stop.set()
            w.join()
        assert all(v in values for v in seen)
        assert not [n for n in os.listdir(tmp_path) if n.endswith(TMP_SUFFIX)]

    def test_concurrent_writers_distinct_keys(self, tmp_path: Path) -> None:
        store = LocalStore(tmp_path)

        def work(t: int) -> None:
            store.set_many({f"c/{t}/{i}": bytes([t]) * 100 for i in range(50)})

        threads = [threading.Thread(target=work, args=(t,)) for t in range(4)]
        for th in threads:
            th.start()
        for th in threads:
            th.join()
        assert len(store) == 200


    def test_ranges_read_with_pread_not_whole_files(self, tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
        store = LocalStore(tmp_path)
        data = os.urandom(1 << 20)
        store["shard"] = data
        asked: list[tuple[int, int]] = []
        real_pread = os.pread

        def pread(fd: int, n: int, offset: int) -> bytes:
            asked.append((offset, n))
            return real_pread(fd, n, offset)

        def no_read(fd: int, n: int) -> bytes:
            raise AssertionError("a ranged read must not read the file from its start")

        monkeypatch.setattr(os, "pread", pread)
        monkeypatch.setattr(os, "read", no_read)
        with store.open_ranges("shard") as reader:
            got = reader.read([(len(data) - 16, len(data)), (4096, 4196), (4096, 4196)])
        assert got == [data[-16:], data[4096:4196], data[4096:4196]]
        assert sorted(asked) == [(4096, 100), (len(data) - 16, 16)]  # repeats fetched once

    def test_range_reader_keeps_its_file_across_atomic_replacements(self, tmp_path: Path) -> None:
        store = LocalStore(tmp_path)
        store["k"] = b"old" * 1000
        reader = store.open_ranges("k")
        for i in range(20):  # each write replaces the file; the descriptor keeps the old one
            store["k"] = bytes([i]) * 3000
        assert reader.read([(0, 3), (2997, 3000)]) == [b"old", b"old"]
        reader.close()
        with pytest.raises(OSError):  # the descriptor is released on close
            os.fstat(reader._fd)  # type: ignore[attr-defined]

    def test_range_reader_version_of_a_settled_file(self, tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
        import chunkflow.storage.local as local

        monkeypatch.setattr(local, "SETTLE_NS", -(10**18))  # every file counts as settled
        store = LocalStore(tmp_path)
        store["k"] = b"value"
        with store.open_ranges("k") as reader:
            assert reader.version is not None and reader.version == store.versions(["k"])["k"]
            store["k"] = b"other"
            assert store.versions(["k"])["k"] != reader.version
            assert reader.read([(0, 5)]) == [b"value"]

    def test_range_reader_notices_an_in_place_rewrite(self, tmp_path: Path) -> None:
        store = LocalStore(tmp_path)
        store["k"] = b"a" * 100
        os.utime(tmp_path / "k", ns=(10**18, 10**18))  # as if written long ago
        with store.open_ranges("k") as reader:
            with open(tmp_path / "k", "r+b") as f:  # same size, same inode, new bytes
                f.write(b"b" * 100)
            with pytest.raises(StoreValueChangedError, match="in place"):
                reader.read([(0, 10)])

    def test_unclosed_range_reader_releases_its_descriptor(self, tmp_path: Path) -> None:
        import gc

        store = LocalStore(tmp_path)
        store["k"] = b"v"
        reader = store.open_ranges("k")
        fd = reader._fd  # type: ignore[attr-defined]
        opened = os.fstat(fd)
        del reader
        gc.collect()
        # Released: the number is closed, or (other threads of the test process open
        # files too) already reused for another file, never still this one.
        try:
            now = os.fstat(fd)
        except OSError:
            return
        assert (now.st_dev, now.st_ino) != (opened.st_dev, opened.st_ino)


class TestZipStore(StoreConformance):
    no_raw_reason = "a zip file being written has no central directory to read it by"

    supports_deletes = False
    supports_pickle = False
    reason = "zip files cannot delete members; only read-only zip stores pickle"

    @pytest.fixture
    def store(self, tmp_path: Path) -> Iterator[ZipStore]:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)  # overwrite warning, tested below
            with ZipStore(tmp_path / "data.zip", mode="w") as store:
                yield store

    def test_overwrite_appends_newest_wins(self, tmp_path: Path) -> None:
        path = tmp_path / "o.zip"
        with ZipStore(path, mode="w") as store:
            store["k"] = b"old"
            with pytest.warns(UserWarning, match="appends a newer member"):
                store["k"] = b"new"
            with warnings.catch_warnings():
                warnings.simplefilter("error")  # warned once per store only
                store["k"] = b"newest"
            assert list(store) == ["k"] and store["k"] == b"newest"
        assert zipfile.ZipFile(path).namelist() == ["k", "k", "k"]
        with ZipStore(path) as ro:
            assert ro["k"] == b"newest" and list(ro) == ["k"] and len(ro) == 1

    def test_modes_and_pickle(self, tmp_path: Path) -> None:
        path = tmp_path / "sub" / "m.zip"
        with ZipStore(path, mode="a") as store:
            store["a/0"] = b"1"
            with pytest.raises(TypeError, match="mode='r'"):
                pickle.dumps(store)
        with ZipStore(path, mode="a") as store:
            store["a/1"] = b"2"
        with ZipStore(path, mode="r") as ro:
            assert sorted(ro) == ["a/0", "a/1"]
            with pytest.raises(ReadOnlyError, match="'a/2'"):
                ro["a/2"] = b"3"
            clone = pickle.loads(pickle.dumps(ro))
            assert dict(clone.items()) == {"a/0": b"1", "a/1": b"2"}
            assert clone.identity == ro.identity
            clone.close()
        with ZipStore(path, mode="w") as store:
            assert list(store) == []
        with pytest.raises(ValueError, match="mode"):
            ZipStore(path, mode="x")

    def test_delete_refused_clearly(self, store: ZipStore) -> None:
        store["k"] = b"1"
        with pytest.raises(NotImplementedError, match="'k'"):
            del store["k"]
        with pytest.raises(KeyError):
            del store["missing"]
        store.delete_many(["missing"])  # nothing to delete: fine

    def test_closed_store(self, tmp_path: Path) -> None:
        store = ZipStore(tmp_path / "c.zip", mode="w")
        store.close()
        store.close()
        with pytest.raises(ValueError, match="closed"):
            store["k"]

    def test_threads(self, store: ZipStore) -> None:
        def work(t: int) -> None:
            for i in range(50):
                store[f"t{t}/{i}"] = bytes([t]) * 1000
                assert store[f"t{t}/{i}"] == bytes([t]) * 1000

        threads = [threading.Thread(target=work, args=(t,)) for t in range(4)]
        for th in threads:
            th.start()
        for th in threads:
            th.join()
        assert len(store) == 200

    def test_readable_by_zipfile_and_fsspec(self, tmp_path: Path) -> None:
        path = tmp_path / "x.zip"
        with ZipStore(path, mode="w") as store:
            store.set_many({"g/.zgroup": b"{}", "g/a/0": b"abc"})
        store = FsspecStore(f"zip::file://{path}")
        assert store["g/a/0"] == b"abc" and sorted(store) == ["g/.zgroup", "g/a/0"]


class _FsspecChannel:
    """The bypass channel of fsspec stores: their file system object."""

    def raw_get(self, store: Any, key: str) -> bytes | None:
        fs, path = _fs_of(store), _path_of(store, key)
        return fs.cat_file(path) if fs.isfile(path) else None

    def raw_set(self, store: Any, key: str, value: bytes) -> None:
        _fs_of(store).pipe_file(_path_of(store, key), value)


def _fs_of(store: Any) -> Any:
    return store.mapping.fs if isinstance(store, MappingStore) else store.fs


def _path_of(store: Any, key: str) -> str:
    root = store.mapping.root if isinstance(store, MappingStore) else store.root
    return f"{root.rstrip('/')}/{key}"


class TestFsspecMemory(_FsspecChannel, StoreConformance):
    pins_ranges = False  # an object store cannot keep an old value

    def twin(self, store: FsspecStore) -> FsspecStore:
        return FsspecStore(store.url)

    @pytest.fixture
    def store(self) -> FsspecStore:
        return FsspecStore(f"memory://chunkflow-tests/{uuid.uuid4().hex}")

    def test_pickle_shares_memory_fs(self, store: FsspecStore) -> None:
        clone = pickle.loads(pickle.dumps(store))
        clone["k"] = b"1"
        assert store["k"] == b"1" and clone.identity == store.identity

    def test_glob_characters_in_keys(self, store: FsspecStore) -> None:
        store.set_many({"a*b": b"1", "c[0]": b"2", "d?": b"3", "plain": b"4"})
        assert store.get_many(["a*b", "c[0]", "d?", "plain", "e*"]) == {
            "a*b": b"1", "c[0]": b"2", "d?": b"3", "plain": b"4"
        }
        store.delete_many(["a*b", "plain"])
        assert sorted(store) == ["c[0]", "d?"]


    def test_ranges_are_one_cat_ranges_call_per_read(self, store: FsspecStore,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
        data = bytes(range(256)) * 8
        store["shard"] = data
        calls: list[tuple[list[int], list[int]]] = []
        real = store.fs.cat_ranges

        def cat_ranges(paths: list[str], starts: list[int], ends: list[int], **kw: Any) -> Any:
            calls.append((starts, ends))
            return real(paths, starts, ends, **kw)

        real_cat_file = store.fs.cat_file

        def ranged_cat_file(path: str, start: int | None = None, end: int | None = None,
                            **kw: Any) -> bytes:
            assert start is not None and end is not None, "a whole read behind our back"
            return real_cat_file(path, start=start, end=end, **kw)

        monkeypatch.setattr(store.fs, "cat_ranges", cat_ranges)
        monkeypatch.setattr(store.fs, "cat_file", ranged_cat_file)
        with store.open_ranges("shard") as reader:
            assert isinstance(reader, FsspecRangeReader)
            got = reader.read([(2000, 2048), (0, 4), (0, 4), (7, 7)])
        assert got == [data[2000:], data[:4], data[:4], b""]
        assert calls == [([0, 2000], [4, 2048])]  # sorted, repeats and empties dropped

    def test_range_reader_raises_when_the_file_changes(self, store: FsspecStore) -> None:
        store["k"] = b"a" * 100
        reader = store.open_ranges("k")
        store.fs.pipe_file(_path_of(store, "k"), b"b" * 100)
        with pytest.raises(StoreValueChangedError, match="'k'.*open a new reader") as info:
            reader.read([(0, 10)])
        assert info.value.key == "k"
        store.fs.rm_file(_path_of(store, "k"))
        with pytest.raises(StoreValueChangedError, match="deleted"):
            reader.read([(0, 10)])
        assert pickle.loads(pickle.dumps(info.value)).key == "k"


class TestFsspecLocal(_FolderChannel, StoreConformance):
    def twin(self, store: FsspecStore) -> FsspecStore:
        return FsspecStore(store.url)

    @pytest.fixture
    def store(self, tmp_path: Path) -> FsspecStore:
        return FsspecStore((tmp_path / "root").as_uri())


    def test_ranges_of_local_files_read_the_value_once(self, store: FsspecStore) -> None:
        # fsspec's local file system rewrites in place, which no info field reliably
        # tracks: its values are read whole, which pins them.
        store["k"] = b"abc"
        assert not isinstance(store.open_ranges("k"), FsspecRangeReader)


def test_fsspec_ranges_without_change_tracking_read_whole(monkeypatch: pytest.MonkeyPatch) -> None:
    store = FsspecStore(f"memory://chunkflow-tests/{uuid.uuid4().hex}")
    store["k"] = b"abcdef"
    real_info = store.fs.info
    monkeypatch.setattr(store.fs, "info", lambda path, **kw: {
        k: v for k, v in real_info(path, **kw).items() if k != "created"})
    with store.open_ranges("k") as reader:
        assert not isinstance(reader, FsspecRangeReader)
        store["k"] = b"ABCDEF"
        assert reader.read([(0, 3)]) == [b"abc"]


class TestZipUrl:
    def test_local_zip_urls_read_and_write_through_zipstore(self, tmp_path: Path) -> None:
        path = tmp_path / "r.zip"
        with zipfile.ZipFile(path, "w") as zf:
            zf.writestr("a/0", b"zero")
            zf.writestr("a/1", b"one")
        store = make_store(f"zip::file://{path}", mode="r")
        assert isinstance(store, ZipStore) and store.read_only
        assert store.get_many(["a/0", "a/1", "a/2"]) == {"a/0": b"zero", "a/1": b"one"}
        assert store.get_range("a/0", 1, 2) == b"er" and store.list_dir("a") == (["0", "1"], [])
        with pytest.raises(ReadOnlyError, match="ZipStore"):
            store["a/2"] = b"x"
        assert pickle.loads(pickle.dumps(store))["a/1"] == b"one"
        store.close()
        writable = make_store(f"zip::{path}", mode="a")
        writable["a/2"] = b"two"
        writable.close()
        with ZipStore(path) as zs:
            assert zs["a/2"] == b"two" and zs["a/0"] == b"zero"


def test_fsspec_zip_write_mode(tmp_path: Path) -> None:
    path = tmp_path / "w.zip"
    store = FsspecStore(f"zip::file://{path}", storage_options={"zip": {"mode": "w"}})
    assert not store.read_only
    store.set_many({"a/0": b"x", "a/1": b"y"})
    store["b"] = b"z"
    assert sorted(store) == ["a/0", "a/1", "b"]
    store.close()
    with ZipStore(path) as zs:
        assert dict(zs.items()) == {"a/0": b"x", "a/1": b"y", "b": b"z"}
    assert FsspecStore(f"zip::file://{path}")["b"] == b"z"  # not the closed instance


class TestMappingDict(StoreConformance):
    @pytest.fixture
    def store(self) -> MappingStore:
        return MappingStore({})

    def raw_get(self, store: MappingStore, key: str) -> bytes | None:
        return store.mapping.get(key)

    def raw_set(self, store: MappingStore, key: str, value: bytes) -> None:
        store.mapping[key] = value

    def test_writes_reach_the_dict(self) -> None:
        backing: dict[str, bytes] = {}
        MappingStore(backing).set_many({"a": bytearray(b"1")})
        assert backing == {"a": b"1"} and type(backing["a"]) is bytes

    def test_stores_over_one_dict_share_its_identity_while_they_live(self) -> None:
        import gc

        backing: dict[str, bytes] = {}
        first, second = MappingStore(backing), MappingStore(backing)
        assert first.identity == second.identity  # the same data: one name
        assert MappingStore({}).identity != first.identity
        identity = first.identity
        del first, second
        gc.collect()
        # No store holds the dict any more: its id() could name a new dict.
        assert MappingStore(backing).identity != identity

    @pytest.mark.slow
    def test_stores_dying_in_the_garbage_collector_never_deadlock_new_ones(self) -> None:
        # A store in a reference cycle dies inside a collection, which may run while
        # another store is being created (holding the identity lock) in this thread.
        import gc

        class Cycle:
            def __init__(self) -> None:
                self.store = MappingStore({})
                self.me = self

        def churn() -> None:
            for i in range(5000):
                Cycle()
                if i % 500 == 0:
                    gc.collect()

        worker = threading.Thread(target=churn, daemon=True)
        worker.start()
        worker.join(timeout=120)
        assert not worker.is_alive(), "creating stores deadlocked"

    def test_read_only_mapping(self) -> None:
        from types import MappingProxyType

        store = MappingStore(MappingProxyType({"a": b"1"}))
        assert store.read_only and store["a"] == b"1"
        with pytest.raises(ReadOnlyError, match="not mutable"):
            store["b"] = b"2"


class TestMappingFSMap(_FsspecChannel, StoreConformance):
    pins_ranges = False  # an object store cannot keep an old value

    def twin(self, store: MappingStore) -> MappingStore:
        return MappingStore(fsspec.get_mapper(store.mapping.fs.unstrip_protocol(store.mapping.root)))

    @pytest.fixture
    def store(self) -> MappingStore:
        return MappingStore(fsspec.get_mapper(f"memory://chunkflow-map/{uuid.uuid4().hex}"))

    def test_ranges_go_through_the_file_system(self, store: MappingStore) -> None:
        store["k"] = b"0123456789"
        with store.open_ranges("k") as reader:  # ranged and checked, as FsspecStore's
            assert isinstance(reader, FsspecRangeReader)
            assert reader.read([(8, 10)]) == [b"89"]

    def test_identity_follows_location(self) -> None:
        url = f"memory://chunkflow-map/{uuid.uuid4().hex}"
        assert MappingStore(fsspec.get_mapper(url)).identity == FsspecStore(url).identity


class TestMappingZictZip(StoreConformance):
    no_raw_reason = "zict.Zip keeps an open zip file with no central directory yet"
    supports_deletes = False
    supports_overwrite = False
    supports_pickle = False
    reason = "zict.Zip cannot delete or overwrite members, and does not pickle"

    @pytest.fixture
    def store(self, tmp_path: Path) -> Iterator[MappingStore]:
        import zict
        mapping = zict.Zip(str(tmp_path / "z.zip"), mode="a")
        yield MappingStore(mapping)
        mapping.close()

    def test_identity_matches_zip_store(self, tmp_path: Path) -> None:
        import zict
        path = tmp_path / "id.zip"
        with ZipStore(path, mode="w") as zs:
            zs["k"] = b"1"
        assert MappingStore(zict.Zip(str(path), mode="r")).identity == zs.identity


# ---------------------------------------------------------------------- S3


# The s3_server fixture (a moto server on loopback) lives in conftest.py.


@pytest.mark.s3
class TestFsspecS3(_FsspecChannel, StoreConformance):
    pins_ranges = False  # an object store cannot keep an old value

    @pytest.fixture
    def store(self, s3_server: dict[str, Any]) -> FsspecStore:
        return FsspecStore(f"s3://chunkflow-test/{uuid.uuid4().hex}", storage_options=s3_server)

    def test_identity_names_the_endpoint(self, store: FsspecStore, s3_server: dict[str, Any]) -> None:
        assert store.identity.startswith("s3://chunkflow-test/")
        assert s3_server["endpoint_url"] in store.identity

    def test_ranges_check_the_etag(self, store: FsspecStore) -> None:
        store["k"] = b"a" * 100
        with store.open_ranges("k") as reader:
            assert isinstance(reader, FsspecRangeReader)
            assert reader.read([(90, 100), (0, 2)]) == [b"a" * 10, b"aa"]
            store["k"] = b"b" * 100  # same size: only the ETag tells
            with pytest.raises(StoreValueChangedError, match="'k'"):
                reader.read([(0, 10)])

    def test_make_store_s3(self, s3_server: dict[str, Any]) -> None:
        url = f"s3://chunkflow-test/{uuid.uuid4().hex}"
        make_store(url, storage_options=s3_server)["k"] = b"1"
        ro = make_store(url, mode="r", storage_options=s3_server)
        assert ro["k"] == b"1" and ro.read_only


# ---------------------------------------------------------- keys and factory


@pytest.mark.parametrize("key", ["a", "c/0/0", "0.0", ".zarray", "a/.zattrs", "a..b", "ab:c", "é/ü"])
def test_normalize_key_accepts(key: str) -> None:
    assert normalize_key(key) == key


def test_normalize_key_str_subclass() -> None:
    class Key(str):
        pass

    out = normalize_key(Key("a/b"))
    assert out == "a/b" and type(out) is str


@pytest.mark.parametrize("key", ["..", "a/..", "/a", "a//b", "a/", "", "a\\b", "C:\\x", "\x00", 1])
def test_normalize_key_refuses(key: object) -> None:
    with pytest.raises(InvalidKeyError, match="expected"):
        normalize_key(key)  # type: ignore[arg-type]


def test_make_store_dispatch(tmp_path: Path) -> None:
    mem = make_store(None)
    assert isinstance(mem, MemoryStore) and make_store(mem) is mem
    assert isinstance(make_store({}), MappingStore)
    assert isinstance(make_store(f"memory://mk/{uuid.uuid4().hex}"), FsspecStore)
    local = make_store(tmp_path / "a.zarr")
    assert isinstance(local, LocalStore) and not local.read_only
    from_url = make_store((tmp_path / "b.zarr").as_uri(), mode="r")
    assert isinstance(from_url, LocalStore) and from_url.read_only
    assert from_url.root == str(tmp_path / "b.zarr")
    zs = make_store(str(tmp_path / "c.zip"))
    assert isinstance(zs, ZipStore) and zs.mode == "a"
    zs.close()
    with make_store(tmp_path / "c.zip", mode="r") as ro:
        assert ro.read_only
    with make_store(tmp_path / "c.zip", mode="w") as truncating:
        assert truncating.mode == "w"  # type: ignore[attr-defined]
    assert make_store(None, mode="r").read_only


def test_make_store_refusals(tmp_path: Path) -> None:
    with pytest.raises(TypeError, match="int"):
        make_store(3)
    with pytest.raises(ValueError, match="mode"):
        make_store(None, mode="rw")
    with pytest.raises(ValueError, match="storage_options"):
        make_store(tmp_path, storage_options={"anon": True})


class _DictBackend(Store):
    """The least a backend must write: identity and four hooks over a dict."""

    def __init__(self) -> None:
        self.data: dict[str, bytes] = {}

    @property
    def identity(self) -> str:
        return f"test-dict:{id(self)}"

    def _get(self, key: str) -> bytes:
        return self.data[key]

    def _set(self, key: str, value: bytes | memoryview) -> None:
        self.data[key] = bytes(value)

    def _delete(self, key: str) -> None:
        del self.data[key]

    def _list_prefix(self, prefix: str) -> Iterator[str]:
        start = prefix + "/" if prefix else ""
        return (k for k in list(self.data) if k.startswith(start))


REQUIRED_HOOKS = ["identity", "_get", "_set", "_delete", "_list_prefix"]


def test_store_is_abstract() -> None:
    class Nothing(Store):
        pass

    with pytest.raises(TypeError, match="abstract") as info:
        Nothing()
    assert all(name in str(info.value) for name in REQUIRED_HOOKS)


@pytest.mark.parametrize("missing", REQUIRED_HOOKS)
def test_a_backend_missing_a_hook_fails_at_construction(missing: str) -> None:
    namespace = {name: getattr(_DictBackend, name) for name in REQUIRED_HOOKS if name != missing}
    namespace["__init__"] = _DictBackend.__init__
    forgetful = type("Forgetful", (Store,), namespace)
    with pytest.raises(TypeError) as info:
        forgetful()
    assert missing in str(info.value) and "Forgetful" in str(info.value)


def test_the_required_hooks_are_enough() -> None:
    store = _DictBackend()
    store["a/0"] = b"0123456789"
    store.set_many({"a/1": b"x", "b": b"y"})
    assert store.get_many(["a/0", "a/1", "nope"]) == {"a/0": b"0123456789", "a/1": b"x"}
    assert store.get_range("a/0", -3) == b"789" and store.getsize("a/0") == 10
    assert store.list_dir("") == (["b"], ["a"]) and "b" in store and len(store) == 3
    assert store.versions(["a/0"]) == {"a/0": None}
    with store.open_ranges("a/0") as reader:  # the whole value, fetched once: pinned
        store["a/0"] = b"changed"
        assert reader.read([(8, 10), (0, 1)]) == [b"89", b"0"] and reader.version is None
    with pytest.raises(KeyError):
        store.open_ranges("a")
    store.delete_prefix("a")
    assert list(store) == ["b"]


def _reference_is_safe(key: str) -> bool:
    segments = key.split("/")
    drive = len(key) > 1 and key[0].isascii() and key[0].isalpha() and key[1] == ":"
    return (
        bool(key)
        and not drive
        and all(s and s not in (".", "..") and "\\" not in s and "\x00" not in s for s in segments)
    )


@given(st.text(alphabet=st.sampled_from(list("ab.:/\\\x00\nCé")), max_size=12))
@settings(max_examples=400, deadline=None)
def test_normalize_key_matches_reference(key: str) -> None:
    if _reference_is_safe(key):
        assert normalize_key(key) == key
    else:
        with pytest.raises(InvalidKeyError):
            normalize_key(key)
