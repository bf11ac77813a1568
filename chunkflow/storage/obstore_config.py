"""obstore for object URLs: which backend opens a URL, how ``storage_options`` map to
obstore's arguments, and how an obstore store's location is named.

chunkflow opens ``s3://``, ``gs://``, ``az://`` (and ``abfs://``...) and
``http(s)://`` URLs with obstore (:class:`~chunkflow.storage.obstore_store.ObstoreStore`)
when obstore is installed, and with fsspec (:class:`~chunkflow.storage.FsspecStore`,
s3fs for S3) otherwise; the setting ``chunkflow.io.object-backend`` chooses
explicitly (:func:`object_backend`).

``storage_options`` keep the names users know from s3fs, gcsfs and adlfs where
obstore has the same thing (:func:`obstore_arguments`):

==============================================  ======================================
``storage_options``                             obstore
==============================================  ======================================
``key``, ``secret``, ``token`` (S3)             ``access_key_id``,
                                                ``secret_access_key``, ``token``
``endpoint_url``, ``client_kwargs.endpoint_url``  ``endpoint`` (``http://``: allowed)
``client_kwargs.region_name``, ``region_name``  ``region``
``requester_pays``                              ``request_payer``
``anon=True``                                   ``skip_signature``
``token`` (GCS): ``"anon"``, a JSON file path   ``skip_signature``,
                                                ``service_account_path``
``account_name``, ``account_key``,              the same names (Azure)
``sas_token``, ``tenant_id``, ``client_id``...
``headers``, ``client_kwargs.headers`` (HTTP)   ``client_options.default_headers``
``config``, ``client_options``,                 passed as they are
``retry_config``, ``credential_provider``
any other key                                   an obstore config key
==============================================  ======================================

fsspec's cache and listing options (``skip_instance_cache``, ``use_listings_cache``...)
mean nothing to obstore and are left out. What obstore does not know makes the
automatic choice fall back to fsspec (``chunkflow.io.object-backend: obstore`` raises
instead, naming the options).
"""

from __future__ import annotations

import datetime
import importlib.util
import os
from pathlib import Path
from typing import Any

from fsspec.utils import get_protocol

from chunkflow import config
from chunkflow.errors import InvalidArgumentError, SettingError

__all__ = ["OBJECT_SCHEMES", "OBSTORE_RETRIES", "ObstoreArguments", "object_backend",
           "obstore_arguments", "obstore_location"]

#: URL schemes obstore opens (``object_store``'s).
OBJECT_SCHEMES = frozenset({"s3", "s3a", "gs", "gcs", "az", "abfs", "abfss", "azure", "adl",
                            "http", "https"})

#: Retries of every request (``object_store``'s ``RetryConfig``): 10 attempts in all, as
#: chunkflow gives botocore (:data:`~chunkflow.storage.retries.S3_RETRIES`), within 3
#: minutes, with obstore's exponential backoff (100 ms doubling up to 15 s).
OBSTORE_RETRIES: dict[str, Any] = {"max_retries": 9,
                                   "retry_timeout": datetime.timedelta(minutes=3)}

ObstoreArguments = dict[str, Any]

# fsspec options that mean nothing to obstore (caches of file system instances,
# listings and file objects).
_FSSPEC_ONLY = frozenset({"skip_instance_cache", "use_listings_cache", "listings_expiry_time",
                          "max_paths", "default_block_size", "default_fill_cache",
                          "default_cache_type", "asynchronous", "loop", "auto_mkdir",
                          "cache_regions"})
_PASSED = ("client_options", "retry_config", "credential_provider")
_S3_NAMES = {"key": "access_key_id", "secret": "secret_access_key", "token": "token",
             "endpoint_url": "endpoint", "region_name": "region",
             "requester_pays": "request_payer"}
_S3_CLIENT_KWARGS = {"region_name": "region", "endpoint_url": "endpoint",
                     "aws_access_key_id": "access_key_id",
                     "aws_secret_access_key": "secret_access_key",
                     "aws_session_token": "token"}
_AZURE_NAMES = {"sas_token": "sas_key"}
_SCHEME_KIND = {"s3": "s3", "s3a": "s3", "gs": "gcs", "gcs": "gcs", "az": "azure",
                "abfs": "azure", "abfss": "azure", "azure": "azure", "adl": "azure",
                "http": "http", "https": "http"}


def object_backend(url: str, storage_options: dict[str, Any] | None = None) -> str:
    """``"obstore"`` or ``"fsspec"``: the backend that opens ``url``.

    The setting ``chunkflow.io.object-backend`` decides: ``"fsspec"`` always fsspec;
    ``"obstore"`` obstore for every URL it opens (an error if obstore is missing);
    ``"auto"`` (the default) obstore for unchained object URLs (:data:`OBJECT_SCHEMES`)
    when obstore is installed and understands ``storage_options``, unless S3
    credentials can only come from botocore's profile files (``AWS_PROFILE``,
    ``~/.aws``), which obstore does not read.

    Examples
    --------
    >>> with config.set({"chunkflow.io.object-backend": "fsspec"}):
    ...     object_backend("s3://bucket/a.zarr")
    'fsspec'
    >>> object_backend("memory://a"), object_backend("simplecache::s3://bucket/a.zarr")
    ('fsspec', 'fsspec')
    """
    choice = config.get("chunkflow.io.object-backend")
    if choice == "fsspec" or "::" in url or get_protocol(url) not in OBJECT_SCHEMES:
        return "fsspec"
    installed = importlib.util.find_spec("obstore") is not None
    if choice == "obstore":
        if not installed:
            raise SettingError("chunkflow.io.object-backend is 'obstore', but obstore is not "
                               "installed: pip install 'chunkflow-zarr[obstore]'")
        return "obstore"
    if not installed or _needs_botocore(url, storage_options or {}):
        return "fsspec"
    return "obstore" if _obstore_opens(url, storage_options or {}) else "fsspec"


def _needs_botocore(url: str, options: dict[str, Any]) -> bool:
    """Whether S3 credentials may come only from botocore's profile files."""
    if _SCHEME_KIND[get_protocol(url)] != "s3" or options.get("anon"):
        return False
    if {"key", "secret", "credential_provider", "profile", "config"} & set(options):
        return "profile" in options
    if any(name in os.environ for name in ("AWS_ACCESS_KEY_ID", "AWS_WEB_IDENTITY_TOKEN_FILE",
                                           "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
                                           "AWS_CONTAINER_CREDENTIALS_FULL_URI")):
        return False
    aws = Path(os.environ.get("AWS_SHARED_CREDENTIALS_FILE", "~/.aws/credentials")).expanduser()
    return "AWS_PROFILE" in os.environ or aws.exists() or Path("~/.aws/config").expanduser().exists()


def obstore_arguments(url: str, storage_options: dict[str, Any]) -> ObstoreArguments:
    """Keyword arguments of ``obstore.store.from_url(url, ...)`` for ``storage_options``
    (see the module's table), with chunkflow's retries (:data:`OBSTORE_RETRIES`) unless
    the options set ``retry_config``, and plain ``http://`` allowed where the URL or
    endpoint uses it.

    Raises
    ------
    ValueError
        Options that have no obstore equivalent, named. (obstore checks its own config
        keys when the store is built.)

    Examples
    --------
    >>> arguments = obstore_arguments("s3://bucket/a.zarr", {
    ...     "key": "K", "secret": "S", "endpoint_url": "http://127.0.0.1:9000",
    ...     "client_kwargs": {"region_name": "us-west-2"}, "skip_instance_cache": True})
    >>> sorted(arguments["config"].items())  # doctest: +NORMALIZE_WHITESPACE
    [('access_key_id', 'K'), ('endpoint', 'http://127.0.0.1:9000'), ('region', 'us-west-2'),
     ('secret_access_key', 'S')]
    >>> arguments["client_options"], arguments["retry_config"]["max_retries"]
    ({'allow_http': True}, 9)
    """
    kind = _SCHEME_KIND.get(get_protocol(url))
    if kind is None:
        raise InvalidArgumentError(f"obstore does not open {url!r}")
    options = {k: v for k, v in storage_options.items() if k not in _FSSPEC_ONLY}
    arguments: ObstoreArguments = {name: options.pop(name) for name in _PASSED if name in options}
    arguments["client_options"] = dict(arguments.get("client_options") or {})
    settings = dict(options.pop("config", None) or {})
    unknown = _map_options(kind, options, settings, arguments["client_options"])
    if unknown:
        raise InvalidArgumentError(f"storage_options {sorted(unknown)} have no obstore equivalent for "
                                   f"{url!r}; use chunkflow.io.object-backend 'fsspec' for them")
    endpoint = str(next((settings[k] for k in _ENDPOINT_KEYS if settings.get(k)), ""))
    if url.startswith("http://") or endpoint.startswith("http://"):
        arguments["client_options"].setdefault("allow_http", True)
    if settings:
        arguments["config"] = settings
    arguments.setdefault("retry_config", dict(OBSTORE_RETRIES))
    return arguments


def _map_options(kind: str, options: dict[str, Any], settings: dict[str, Any],
                 client_options: dict[str, Any]) -> list[str]:
    """Move ``options`` into obstore's ``settings`` (config) and ``client_options``;
    returns the names that have no equivalent."""
    unknown: list[str] = []
    if options.pop("anon", False) and kind != "http":  # HTTP signs nothing anyway
        settings["skip_signature"] = True
    client_kwargs = dict(options.pop("client_kwargs", None) or {})
    headers = {**client_kwargs.pop("headers", {}), **options.pop("headers", {})}
    if headers and kind == "http":
        client_options["default_headers"] = headers
    elif headers:
        unknown.append("headers")
    if kind == "s3":
        for name, value in client_kwargs.items():
            if name in _S3_CLIENT_KWARGS:
                settings[_S3_CLIENT_KWARGS[name]] = value
            else:
                unknown.append(f"client_kwargs.{name}")
        for name in list(options):
            if name in _S3_NAMES:
                settings[_S3_NAMES[name]] = options.pop(name)
    else:
        unknown.extend(f"client_kwargs.{name}" for name in client_kwargs)
    if kind == "gcs" and "token" in options:
        token = options.pop("token")
        if token == "anon" or token is None:
            settings["skip_signature"] = True
        elif isinstance(token, (str, os.PathLike)) and os.path.isfile(token):
            settings["service_account_path"] = os.fspath(token)
        elif token not in ("google_default", "cloud"):
            unknown.append("token")
    if kind == "azure":
        for name in list(options):
            settings[_AZURE_NAMES.get(name, name)] = options.pop(name)
    for name in ("profile", "config_kwargs", "version_aware", "project", "s3_additional_kwargs",
                 "connection_string"):
        if name in options:
            unknown.append(name)
            options.pop(name)
    if kind == "http":  # obstore's HTTPStore takes client options only
        unknown.extend(options)
        options.clear()
    settings.update(options)  # obstore's own config names (checked by obstore)
    return unknown


def _obstore_opens(url: str, storage_options: dict[str, Any]) -> bool:
    """Whether obstore builds a store for ``url`` from ``storage_options``: every name
    maps, obstore knows every config key, and the configuration is complete (an Azure
    account, a secret with a key...). Building sends no request."""
    from obstore.store import from_url

    try:
        from_url(url, **obstore_arguments(url, storage_options))
    except Exception:  # noqa: BLE001 - any refusal: fsspec's file system may accept them
        return False
    return True


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
    scheme = {"S3Store": "s3", "GCSStore": "gs", "AzureStore": "az"}.get(kind)
    settings = dict(getattr(store, "config", None) or {})
    bucket = next((settings[k] for k in _BUCKET_KEYS if settings.get(k)), None)
    if scheme is None or not bucket:
        return None
    location = f"{scheme}://{bucket}/{prefix}".rstrip("/")
    endpoint = next((settings[k] for k in _ENDPOINT_KEYS if settings.get(k)), None)
    return f"{location}@{endpoint}" if endpoint else location


# Config keys naming the bucket (or container) and a custom endpoint.
_BUCKET_KEYS = ("bucket", "aws_bucket", "aws_bucket_name", "bucket_name", "google_bucket",
                "google_bucket_name", "container_name", "azure_container_name")
_ENDPOINT_KEYS = ("endpoint", "aws_endpoint", "aws_endpoint_url", "endpoint_url",
                  "azure_endpoint")
