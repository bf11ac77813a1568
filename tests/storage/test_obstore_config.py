"""Which backend opens an object URL, and how storage_options map to obstore's
arguments (chunkflow.storage.obstore_config)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("obstore")

from chunkflow import config  # noqa: E402
from chunkflow.errors import SettingError  # noqa: E402
from chunkflow.storage import FsspecStore, make_store  # noqa: E402
from chunkflow.storage.obstore_config import (  # noqa: E402
    OBSTORE_RETRIES,
    object_backend,
    obstore_arguments,
)
from chunkflow.storage.obstore_store import ObstoreStore  # noqa: E402

BACKEND = "chunkflow.io.object-backend"
S3FS_NAMES = {"key": "K", "secret": "S", "token": "T", "endpoint_url": "http://127.0.0.1:9",
              "client_kwargs": {"region_name": "eu-west-1"}, "requester_pays": True,
              "skip_instance_cache": True, "use_listings_cache": False}


@pytest.fixture
def no_aws_files(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """No AWS credentials in the environment or in profile files."""
    for name in ("AWS_ACCESS_KEY_ID", "AWS_PROFILE", "AWS_WEB_IDENTITY_TOKEN_FILE",
                 "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI", "AWS_CONTAINER_CREDENTIALS_FULL_URI"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "none"))


def test_s3fs_names_map_to_obstore() -> None:
    arguments = obstore_arguments("s3://bucket/a.zarr", S3FS_NAMES)
    assert arguments["config"] == {"access_key_id": "K", "secret_access_key": "S", "token": "T",
                                   "endpoint": "http://127.0.0.1:9", "region": "eu-west-1",
                                   "request_payer": True}
    assert arguments["client_options"] == {"allow_http": True}  # the endpoint is http://
    assert arguments["retry_config"] == OBSTORE_RETRIES


def test_other_schemes_and_obstore_names() -> None:
    assert obstore_arguments("gs://b/a", {"token": "anon"})["config"] == {"skip_signature": True}
    azure = obstore_arguments("az://c/a", {"account_name": "acc", "sas_token": "sig"})
    assert azure["config"] == {"account_name": "acc", "sas_key": "sig"}
    http = obstore_arguments("http://127.0.0.1:9/a.zarr", {"headers": {"X-Token": "t"}})
    assert http["client_options"] == {"default_headers": {"X-Token": "t"}, "allow_http": True}
    native = obstore_arguments("s3://b/a", {"config": {"virtual_hosted_style_request": True},
                                            "retry_config": {"max_retries": 2},
                                            "client_options": {"timeout": "5s"}})
    assert native == {"config": {"virtual_hosted_style_request": True},
                      "retry_config": {"max_retries": 2}, "client_options": {"timeout": "5s"}}


def test_unknown_options_are_named() -> None:
    with pytest.raises(ValueError, match=r"\['client_kwargs.verify', 'config_kwargs'\]"):
        obstore_arguments("s3://b/a", {"config_kwargs": {}, "client_kwargs": {"verify": False}})
    assert object_backend("s3://b/a", {"anon": True, "no_such_key": 1}) == "fsspec"
    with pytest.raises(ValueError, match="no_such_key"):  # obstore's own check
        ObstoreStore("s3://b/a", {"anon": True, "no_such_key": 1})


def test_object_urls_go_to_obstore(no_aws_files: None) -> None:
    for url in ("s3://b/a.zarr", "gs://b/a.zarr", "https://h/a.zarr"):
        assert object_backend(url, {"anon": True}) == "obstore", url
    assert object_backend("az://c/a.zarr", {"anon": True, "account_name": "acc"}) == "obstore"
    assert object_backend("az://c/a.zarr", {"anon": True}) == "fsspec"  # obstore needs one
    store = make_store("s3://b/a.zarr", mode="r", storage_options=S3FS_NAMES)
    assert isinstance(store, ObstoreStore) and store.read_only
    assert store.identity == "s3://b/a.zarr@http://127.0.0.1:9"


def test_fsspec_where_obstore_cannot(no_aws_files: None, tmp_path: Path,
                                     monkeypatch: pytest.MonkeyPatch) -> None:
    assert object_backend("memory://a") == "fsspec"
    assert object_backend("simplecache::s3://b/a", {}) == "fsspec"
    s3fs_only = {**S3FS_NAMES, "config_kwargs": {"retries": {"max_attempts": 3}}}
    assert object_backend("s3://b/a", s3fs_only) == "fsspec"
    assert isinstance(make_store("s3://b/a", storage_options=s3fs_only), FsspecStore)
    assert object_backend("s3://b/a", {"profile": "work"}) == "fsspec"
    (tmp_path / ".aws").mkdir()
    (tmp_path / ".aws" / "config").write_text("[default]\nregion = eu-west-1\n")
    assert object_backend("s3://b/a", {}) == "fsspec"  # botocore's profile files
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "K")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "S")
    assert object_backend("s3://b/a", {}) == "obstore"  # obstore reads the environment


def test_the_setting_chooses(no_aws_files: None) -> None:
    with config.set({BACKEND: "fsspec"}):
        assert isinstance(make_store("s3://b/a", storage_options={"anon": True}), FsspecStore)
    with config.set({BACKEND: "obstore"}):
        assert object_backend("s3://b/a", {"config_kwargs": {}}) == "obstore"
        with pytest.raises(ValueError, match="config_kwargs"):
            make_store("s3://b/a", storage_options={"config_kwargs": {}})
        assert object_backend("memory://a") == "fsspec"  # not an object URL


def test_obstore_missing(monkeypatch: pytest.MonkeyPatch, no_aws_files: None) -> None:
    import importlib.util

    real = importlib.util.find_spec

    def without_obstore(name: str, *args: Any) -> Any:
        return None if name == "obstore" else real(name, *args)

    monkeypatch.setattr(importlib.util, "find_spec", without_obstore)
    assert object_backend("s3://b/a", {"anon": True}) == "fsspec"
    with config.set({BACKEND: "obstore"}), pytest.raises(SettingError, match="not installed"):
        object_backend("s3://b/a", {"anon": True})
