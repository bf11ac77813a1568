"""chunkflow's obstore backend (chunkflow.storage.obstore_store) on a moto S3 server:
the store conformance suite, with s3fs as the bypass channel; versions from GETs and
PUTs; byte ranges pinned by If-Match; streaming; pickling; arrays read and written
beside zarr-python."""

from __future__ import annotations

import pickle
import uuid
from typing import Any

import fsspec
import numpy as np
import pytest

from chunkflow.testing import StoreConformance

pytest.importorskip("obstore")

import chunkflow  # noqa: E402
from chunkflow.errors import StoreValueChangedError  # noqa: E402
from chunkflow.storage.obstore_store import ObstoreStore  # noqa: E402


def _url() -> str:
    return f"s3://chunkflow-test/obstore-{uuid.uuid4().hex}"


@pytest.mark.s3
class TestObstoreS3Store(StoreConformance):
    """Every store's behaviour, against S3 (moto); s3fs reads and writes behind it."""

    #: Object stores cannot keep a replaced object: readers raise instead.
    pins_ranges = False

    @pytest.fixture
    def store(self, s3_server: dict[str, Any]) -> ObstoreStore:
        self._fs = fsspec.filesystem("s3", skip_instance_cache=True, **s3_server)
        return ObstoreStore(_url(), s3_server)

    def _path(self, store: ObstoreStore, key: str) -> str:
        return store.url.removeprefix("s3://") + "/" + key

    def raw_get(self, store: ObstoreStore, key: str) -> bytes | None:
        try:
            return bytes(self._fs.cat_file(self._path(store, key)))
        except FileNotFoundError:
            return None

    def raw_set(self, store: ObstoreStore, key: str, value: bytes) -> None:
        self._fs.pipe_file(self._path(store, key), value)

    def twin(self, store: ObstoreStore) -> ObstoreStore:
        return ObstoreStore(store.url, store.storage_options)


@pytest.mark.s3
def test_versions_come_with_the_bytes(s3_server: dict[str, Any]) -> None:
    store = ObstoreStore(_url(), s3_server)
    written = store.set_many_versioned({"a": b"one", "b": b"two"})
    assert written == store.versions(["a", "b", "missing"])
    assert written["a"] == (3, ("ETag", written["a"][1][1]))
    got = store.get_many_versioned(["a", "b", "missing"])
    assert {key: version for key, (_, version) in got.items()} == written
    with store.stream_many(["a", "missing"], window=2, versioned=True) as stream:
        assert sorted(stream.take(), key=lambda item: item[0]) == [
            ("a", b"one", written["a"]), ("missing", None, None)]
    # The same location through s3fs names the same version (the caches agree).
    fsspec_store = chunkflow.storage.FsspecStore(store.url, s3_server)
    assert fsspec_store.identity == store.identity
    assert fsspec_store.versions(["a"]) == {"a": written["a"]}


@pytest.mark.s3
def test_expected_version_reads_without_opening(s3_server: dict[str, Any]) -> None:
    store = ObstoreStore(_url(), s3_server)
    store["shard"] = bytes(range(100))
    version = store.versions(["shard"])["shard"]
    with store.open_ranges("shard", expect=version) as reader:
        assert reader.read([(10, 12), (98, 100)]) == [bytes([10, 11]), bytes([98, 99])]
        store["shard"] = bytes(100)
        with pytest.raises(StoreValueChangedError, match="'shard'"):
            reader.read([(0, 4)])


@pytest.mark.s3
def test_put_stream_returns_versions(s3_server: dict[str, Any]) -> None:
    store = ObstoreStore(_url(), s3_server)
    with store.put_stream(window=4) as sink:
        for i in range(10):
            sink.put(f"c/{i}", np.full(1000, i, dtype="u1"))
    assert sink.versions == store.versions([f"c/{i}" for i in range(10)])
    assert store.get_many(["c/3"]) == {"c/3": bytes([3]) * 1000}


@pytest.mark.s3
def test_pickles_with_its_options(s3_server: dict[str, Any]) -> None:
    store = ObstoreStore(_url(), s3_server, read_only=True)
    clone = pickle.loads(pickle.dumps(store))
    assert (clone.url, clone.storage_options, clone.read_only) == (store.url, s3_server, True)
    assert clone.identity == store.identity


@pytest.mark.s3
def test_arrays_beside_zarr_python(s3_server: dict[str, Any]) -> None:
    zarr = pytest.importorskip("zarr", minversion="3")
    url = _url()
    data = np.arange(30 * 40, dtype="f4").reshape(30, 40)
    store = ObstoreStore(url, s3_server)
    z = chunkflow.create_array(store, shape=data.shape, chunks=(8, 16), dtype="f4")
    z[:] = data
    back = zarr.open_array(url, mode="r", storage_options=s3_server)
    np.testing.assert_array_equal(back[:], data)
    np.testing.assert_array_equal(chunkflow.to_dask(z)[5:25, 3:39].compute(), data[5:25, 3:39])


@pytest.mark.s3
def test_a_request_that_fails_for_good_names_the_key(s3_server: dict[str, Any]) -> None:
    from chunkflow.errors import StoreRequestError
    from chunkflow.testing import FaultProxy

    url = _url()
    ObstoreStore(url, s3_server)["k/0"] = b"v"
    with FaultProxy(s3_server["endpoint_url"], fail_share=1.0, faults=["500"]) as proxy:
        options = {**s3_server, "endpoint_url": proxy.url, "retry_config": {"max_retries": 1}}
        store = ObstoreStore(url, options)
        with pytest.raises(StoreRequestError, match=r"could not read key 'k/0' of "
                           r"ObstoreStore\('s3://chunkflow-test/obstore-.*500"):
            store.get_many(["k/0"])
        with pytest.raises(StoreRequestError, match=r"could not write key 'out/c/0/1'"):
            store["out/c/0/1"] = b"x"
    assert proxy.requests["GET"] == 2 and proxy.requests["PUT"] == 2  # one retry each


@pytest.mark.s3
def test_a_window_of_a_shard_costs_one_get_once_its_index_is_cached(
        s3_server: dict[str, Any]) -> None:
    # Ranged GETs carry If-Match: no HEAD proves a read afterwards (s3fs needs one).
    from chunkflow.testing import FaultProxy

    values = np.arange(64 * 64, dtype="i4").reshape(64, 64)
    with FaultProxy(s3_server["endpoint_url"]) as proxy:
        store = ObstoreStore(_url(), {**s3_server, "endpoint_url": proxy.url})
        z = chunkflow.create_array(store, shape=values.shape, chunks=(8, 8), shards=(64, 64),
                                   dtype="i4", cache=chunkflow.ChunkCache(2**24))
        z[...] = values
        proxy.reset()
        np.testing.assert_array_equal(z[3:5, 6:10], values[3:5, 6:10])
        assert dict(proxy.requests) == {"HEAD": 1, "GET": 2}  # open, index, chunks
        proxy.reset()
        np.testing.assert_array_equal(z[40:42, 20:22], values[40:42, 20:22])
        assert dict(proxy.requests) == {"GET": 1}  # the cached index's version, If-Match
        other = ObstoreStore(store.url, s3_server)  # another writer replaces the shard
        replaced = chunkflow.open_array(other, mode="r+", cache=False)
        replaced[...] = values * 7
        proxy.reset()
        np.testing.assert_array_equal(z[50:52, 20:22], values[50:52, 20:22] * 7)
        # The stale version's GET fails its If-Match; then open, index, chunks.
        assert dict(proxy.requests) == {"GET": 3, "HEAD": 1}


class _InFlight:
    """Wraps one of obstore's coroutine functions, recording the most calls out at once."""

    def __init__(self, function: Any) -> None:
        import threading

        self.function, self.active, self.most = function, 0, 0
        self.lock = threading.Lock()

    async def __call__(self, *args: Any, **kwargs: Any) -> Any:
        import asyncio

        with self.lock:
            self.active += 1
            self.most = max(self.most, self.active)
        try:
            await asyncio.sleep(0.02)  # a round trip: let the others start meanwhile
            return await self.function(*args, **kwargs)
        finally:
            with self.lock:
                self.active -= 1


@pytest.mark.s3
def test_requests_in_flight_follow_the_budget(s3_server: dict[str, Any],
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    import obstore

    from chunkflow import config

    store = ObstoreStore(_url(), s3_server)
    items = {f"c/{i}": bytes([i]) * 100 for i in range(40)}
    puts = _InFlight(obstore.put_async)
    gets = _InFlight(obstore.get_range_async)  # whole values: one ranged GET each
    monkeypatch.setattr(obstore, "put_async", puts)
    monkeypatch.setattr(obstore, "get_range_async", gets)
    with config.set({"chunkflow.io.inflight-requests": 6}):
        store.set_many(items)
        assert store.get_many(list(items)) == items
    assert puts.most == 6 and gets.most == 6  # batch calls: the request limit
    gets.most = 0
    with store.stream_many(list(items), window=3) as stream:
        assert {key: value for key, value, _ in stream.take()} == items
    assert gets.most == 3  # streams: their window
    puts.most = 0
    with store.put_stream(window=5) as sink:
        for key, value in items.items():
            sink.put(key, value)
    assert puts.most == 5


def test_listings_over_plain_http(http_folder: Any) -> None:
    # A static file server refuses obstore's PROPFIND: listings read its folder pages.
    proxy, folder = http_folder
    group = chunkflow.open_group(str(folder / "g.zarr"), mode="w")
    group.create_array("a", shape=(4,), chunks=(2,), dtype="u1")[:] = 1
    group.create_array("b", shape=(4,), chunks=(2,), dtype="u1")[:] = 2
    store = ObstoreStore(f"{proxy.url}/g.zarr", read_only=True)
    assert sorted(store.list_prefix("a")) == ["a/c/0", "a/c/1", "a/zarr.json"]
    assert store.list_dir("") == (["zarr.json"], ["a", "b"])
    opened = chunkflow.open_group(store, mode="r")
    assert sorted(opened.array_keys()) == ["a", "b"] and opened["b"][:].tolist() == [2] * 4
    assert "PROPFIND" not in proxy.requests


@pytest.mark.s3
def test_whole_values_come_in_one_ranged_get(s3_server: dict[str, Any]) -> None:
    # Unversioned reads ask for bytes 0 to far past the end: one GET each, the value
    # exact; an empty value (416: no byte 0) is read again with a plain GET.
    from chunkflow.testing import FaultProxy

    url = _url()
    items = {"c/0": bytes(range(256)) * 3, "c/1": b"x", "empty": b""}
    ObstoreStore(url, s3_server).set_many(items)
    with FaultProxy(s3_server["endpoint_url"]) as proxy:
        store = ObstoreStore(url, {**s3_server, "endpoint_url": proxy.url})
        with store.stream_many([*items, "missing"], window=4) as stream:
            got = {key: value for key, value, _ in stream.take()}
        assert got == {**items, "missing": None}
        assert all(type(got[key]) is memoryview for key in items)  # views, no copies
        assert proxy.requests["GET"] == len(items) + 2  # + the empty value's plain GET
        proxy.reset()
        assert store.get_many(["c/0", "c/1"]) == {"c/0": items["c/0"], "c/1": b"x"}
        assert store["empty"] == b"" and type(store["c/1"]) is bytes
        assert dict(proxy.requests) == {"GET": 5}
    assert store._ranged_whole_gets  # a 416 is the value's, not the server's refusal


def test_a_server_that_serves_no_ranges_gets_plain_gets(http_folder: Any) -> None:
    # Python's http.server answers a ranged GET with the whole file (200): obstore
    # refuses that answer, the value is fetched again with a plain GET, and the store
    # sends only plain GETs from then on.
    proxy, folder = http_folder
    values = {f"c/{i}": bytes([i]) * (1000 + i) for i in range(6)}
    for key, value in values.items():
        (folder / key).parent.mkdir(parents=True, exist_ok=True)
        (folder / key).write_bytes(value)
    store = ObstoreStore(proxy.url, read_only=True)
    assert store["c/0"] == values["c/0"]
    assert proxy.requests["GET"] == 2 and not store._ranged_whole_gets
    proxy.reset()
    with store.stream_many([*values, "c/missing"], window=3) as stream:
        got = {key: value for key, value, _ in stream.take()}
    assert got == {**values, "c/missing": None}
    assert proxy.requests["GET"] == len(values) + 1


def test_only_a_range_status_is_a_refused_range() -> None:
    # A failed GET is read again with a plain GET only when its range was refused;
    # any other failure (a 500 at a port or after a time holding "416") is raised.
    from obstore.exceptions import GenericError, NotSupportedError

    from chunkflow.storage.obstore_store import _range_refused

    prefix = "Generic S3 error: Error performing GET http://127.0.0.1:41634/b/k in 416ms - "
    assert not _range_refused(GenericError(prefix + "Server returned non-2xx status code: "
                                           "500 Internal Server Error: <Code>InternalError"))
    assert _range_refused(GenericError(prefix + "Server returned non-2xx status code: "
                                       "416 Range Not Satisfiable: <Code>InvalidRange</Code>"))
    assert _range_refused(NotSupportedError("Range request not supported by k"))
