"""Retries and request errors: S3 stores get botocore's standard retry mode unless the
user chose otherwise, they outlast a share of failing requests (through a fault proxy
in front of a real moto server), and what still fails names the store and the key."""

from __future__ import annotations

import errno
import os
import pickle
import uuid
from typing import Any

import fsspec.asyn
import numpy as np
import pytest

import chunkflow
from chunkflow.errors import StoreRequestError
from chunkflow.storage import FsspecStore, LocalStore
from chunkflow.storage.retries import S3_RETRIES, with_retry_defaults
from chunkflow.testing import FaultProxy


def _url() -> str:
    return f"s3://chunkflow-test/retries-{uuid.uuid4().hex}"


def _client_retries(store: FsspecStore) -> dict[str, Any]:
    client = fsspec.asyn.sync(store.fs.loop, store.fs.set_session)
    return dict(client.meta.config.retries)


def test_defaults_fill_in_only_what_the_user_left_out() -> None:
    mine = {"config_kwargs": {"read_timeout": 5}}
    merged = with_retry_defaults("s3://b/a", mine)
    assert merged == {"config_kwargs": {"read_timeout": 5, "retries": S3_RETRIES}}
    assert mine == {"config_kwargs": {"read_timeout": 5}}  # the user's dict is untouched
    assert merged["config_kwargs"]["retries"] is not S3_RETRIES
    chosen = {"config_kwargs": {"retries": {"mode": "legacy", "max_attempts": 1}}}
    assert with_retry_defaults("s3://b/a", chosen) == chosen
    assert with_retry_defaults("simplecache::s3://b/a", {}) == {}
    assert with_retry_defaults("gs://b/a", {"token": "anon"}) == {"token": "anon"}


@pytest.mark.s3
def test_s3_stores_use_the_standard_retry_mode(s3_server: dict[str, Any]) -> None:
    store = FsspecStore(_url(), storage_options=s3_server)
    assert _client_retries(store) == {"mode": "standard", "total_max_attempts": 10}
    assert store.storage_options == s3_server  # pickled as given: defaults apply again
    assert pickle.loads(pickle.dumps(store)).storage_options == s3_server
    legacy = {**s3_server, "config_kwargs": {"retries": {"mode": "legacy", "max_attempts": 2}}}
    assert _client_retries(FsspecStore(_url(), storage_options=legacy))["mode"] == "legacy"


@pytest.mark.slow
@pytest.mark.s3
@pytest.mark.parametrize("backend", ["fsspec", "obstore"])
def test_an_array_survives_a_third_of_requests_failing(s3_server: dict[str, Any],
                                                       backend: str) -> None:
    # Faults of every kind (500, 503, dropped connections), on writes and reads; s3fs
    # retries with botocore's settings, obstore with its RetryConfig (OBSTORE_RETRIES).
    data = np.arange(80 * 100, dtype="i4").reshape(80, 100)
    with FaultProxy(s3_server["endpoint_url"], fail_share=0.3, seed=5) as proxy, \
            chunkflow.config.set({"chunkflow.io.object-backend": backend}):
        options = {**s3_server, "endpoint_url": proxy.url}
        url = _url()
        z = chunkflow.create(data.shape, chunks=(10, 10), dtype="i4", store=url,
                             storage_options=options)
        z[:] = data
        got = chunkflow.open(url, storage_options=options, cache=False)
        assert type(got.store).__name__ == {"fsspec": "FsspecStore",
                                            "obstore": "ObstoreStore"}[backend]
        got = got[:]
    np.testing.assert_array_equal(got, data)
    assert proxy.failures["PUT"] > 10 and proxy.failures["GET"] > 10


@pytest.mark.s3
def test_a_write_that_fails_for_good_names_the_chunk_key(s3_server: dict[str, Any]) -> None:
    with FaultProxy(s3_server["endpoint_url"], fail_share=1.0, fail_methods=["PUT"],
                    faults=["500"]) as proxy:
        options = {**s3_server, "endpoint_url": proxy.url,
                   "config_kwargs": {"retries": {"mode": "standard", "total_max_attempts": 2}}}
        store = FsspecStore(_url(), storage_options=options)
        with pytest.raises(StoreRequestError, match=r"could not write key 'out/c/0/1' of "
                           r"FsspecStore\('s3://chunkflow-test/retries-.*internal error"):
            store["out/c/0/1"] = b"x"
        with pytest.raises(StoreRequestError, match=r"write 2 keys \('a/0', 'a/1'\)"):
            store.set_many({"a/0": b"0", "a/1": b"1"})
    assert proxy.requests["PUT"] >= 2 * 2  # botocore retried, as told, then gave up


@pytest.mark.s3
def test_a_read_or_listing_that_fails_for_good_names_the_key(s3_server: dict[str, Any]) -> None:
    url = _url()
    FsspecStore(url, storage_options=s3_server)["k/0"] = b"v"
    with FaultProxy(s3_server["endpoint_url"], fail_share=1.0, fail_methods=["GET"],
                    faults=["500"]) as proxy:
        options = {**s3_server, "endpoint_url": proxy.url,
                   "config_kwargs": {"retries": {"mode": "standard", "total_max_attempts": 1}}}
        store = FsspecStore(url, storage_options=options)
        with pytest.raises(StoreRequestError, match="could not read key 'k/0'") as caught:
            store.get_many(["k/0"])
        with pytest.raises(StoreRequestError, match="could not list the keys below 'k'"):
            store.list_prefix("k")
    assert isinstance(caught.value, OSError)


def test_a_full_disk_names_the_key_and_keeps_the_errno(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = LocalStore(tmp_path / "a.zarr")

    def full_disk(*args: Any) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "replace", full_disk)
    with pytest.raises(StoreRequestError, match="could not write key 'x/c/0'") as caught:
        store["x/c/0"] = b"1"
    assert caught.value.errno == errno.ENOSPC
    assert isinstance(caught.value.__cause__, OSError)
    with pytest.raises(StoreRequestError, match="No space left"):
        store.set_many({"x/c/1": b"1"})
    monkeypatch.undo()
    assert list(store.list_prefix("")) == []  # no temporaries, no partial values


def test_missing_keys_and_refusals_keep_their_types(tmp_path: Any) -> None:
    store = LocalStore(tmp_path / "a.zarr")
    with pytest.raises(KeyError):
        store["missing"]
    store.read_only = True
    with pytest.raises(PermissionError):
        store["k"] = b"1"
    assert not isinstance(pytest.raises(KeyError, store.__getitem__, "m").value,
                          StoreRequestError)


@pytest.fixture
def obstore_registered_for_s3() -> Any:
    """obstore's fsspec file system registered for ``s3://`` (as its docs suggest), and
    s3fs registered again afterwards."""
    obstore_fsspec = pytest.importorskip("obstore.fsspec")
    import s3fs

    obstore_fsspec.register("s3", asynchronous=True)
    try:
        with chunkflow.config.set({"chunkflow.io.object-backend": "fsspec"}):
            yield
    finally:
        fsspec.register_implementation("s3", s3fs.S3FileSystem, clobber=True)


@pytest.mark.s3
def test_s3fs_options_only_for_s3fs(s3_server: dict[str, Any],
                                    obstore_registered_for_s3: None) -> None:
    # Another implementation of s3:// gets the user's options only: obstore refuses
    # s3fs's config_kwargs (UnknownConfigurationKeyError).
    options = {"config": {"endpoint": s3_server["endpoint_url"], "region": "us-west-2",
                          "access_key_id": s3_server["key"],
                          "secret_access_key": s3_server["secret"]},
               "client_options": {"allow_http": True}}
    data = np.arange(60, dtype="u2").reshape(6, 10)
    url = _url()
    z = chunkflow.create_array(url, shape=data.shape, chunks=(4, 4), dtype="u2",
                               storage_options=options)
    z[:] = data
    opened = chunkflow.open_array(url, mode="r", storage_options=options)
    assert type(opened.store.fs).__module__.startswith("obstore")
    np.testing.assert_array_equal(opened[:], data)
    assert with_retry_defaults("s3://b/a", {"region": "x"}) == {"region": "x"}
