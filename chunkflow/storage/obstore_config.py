"""Where an obstore store points, named as chunkflow's other stores name it.

obstore (Python bindings of Rust's ``object_store``) describes a store by its
``config`` (bucket, endpoint, region...) and ``prefix``. :func:`obstore_location`
turns that into the location string chunkflow uses as a store's identity (the cache's
key part), the same string :class:`~chunkflow.storage.FsspecStore` gives the same
location, so a write through one backend drops what another cached.

This module imports nothing from obstore: it reads the stores it is given.
"""

from __future__ import annotations

import os
from typing import Any

__all__ = ["obstore_location"]

# URL schemes of obstore's object stores, by class name.
_SCHEMES = {"S3Store": "s3", "GCSStore": "gs", "AzureStore": "az"}
# Config keys naming the bucket (or container) and a custom endpoint.
_BUCKET_KEYS = ("bucket", "aws_bucket", "aws_bucket_name", "bucket_name", "google_bucket",
                "google_bucket_name", "container_name", "azure_container_name")
_ENDPOINT_KEYS = ("endpoint", "aws_endpoint", "aws_endpoint_url", "endpoint_url",
                  "azure_endpoint")


def _first(config: dict[str, Any], names: tuple[str, ...]) -> Any:
    return next((config[name] for name in names if config.get(name)), None)


def obstore_location(store: Any) -> str | None:
    """The location of an obstore store as a URL (``s3://bucket/prefix``, with
    ``@endpoint`` when one is set, as :attr:`FsspecStore.identity
    <chunkflow.storage.FsspecStore.identity>` writes it), or ``None`` for a store whose
    data lives in this process (``MemoryStore``) or that says nothing of its location.

    Examples
    --------
    >>> from obstore.store import MemoryStore, S3Store
    >>> obstore_location(S3Store("bucket", prefix="a.zarr", endpoint="http://127.0.0.1:9000",
    ...                          skip_signature=True))
    's3://bucket/a.zarr@http://127.0.0.1:9000'
    >>> obstore_location(MemoryStore()) is None
    True
    """
    kind = type(store).__name__
    prefix = str(getattr(store, "prefix", None) or "").strip("/")
    if kind == "LocalStore":
        return "file://" + os.path.realpath(prefix or "/")
    if kind == "HTTPStore":
        url = str(getattr(store, "url", "")).rstrip("/")
        return url or None
    scheme = _SCHEMES.get(kind)
    config = dict(getattr(store, "config", None) or {})
    bucket = _first(config, _BUCKET_KEYS)
    if scheme is None or not bucket:
        return None
    location = f"{scheme}://{bucket}/{prefix}".rstrip("/")
    endpoint = _first(config, _ENDPOINT_KEYS)
    return f"{location}@{endpoint}" if endpoint else location
