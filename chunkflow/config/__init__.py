"""chunkflow's settings: dask config keys under ``chunkflow``, one name each.

The values live in ``dask.config``; chunkflow registers their defaults from
``chunkflow/config/chunkflow.yaml`` when imported (as distributed registers
``distributed.yaml``). :func:`set` and :func:`get` are ``dask.config.set`` and
``dask.config.get`` for these keys, with every value checked, and parsed where it is
text (``"512 MiB"``).

Settings
--------
``chunkflow.array.zarr-format``
    The Zarr format (2 or 3) of the arrays and groups created without ``zarr_format=``,
    as zarr-python 3's ``default_zarr_format``. Default 3.
``chunkflow.cache.max-bytes``
    Budget of the decoded-chunk cache, one per process. Default ``"auto"``: 1 GiB or
    1/16 of physical memory, whichever is smaller; inside a dask distributed worker,
    also no more than 1/8 of the worker's memory limit (see
    :func:`chunkflow.config.resources.auto_cache_bytes`).
``chunkflow.cache.compressed-bytes``
    Budget of the compressed second tier; 0 (the default) means none.
``chunkflow.cache.enabled``
    Whether arrays opened without an explicit ``cache=`` use the process-wide cache.
    Default ``True``.
``chunkflow.cache.recheck-cached-data``
    How stale a cached chunk may be when it is read, as tensorstore's option of the
    same name; arrays take it per handle as ``recheck_cached_data=``. This is the one
    full description of the policy:

    - ``"open"`` (default): a chunk cached before the array handle was opened is
      compared with the store's version of it once before use, so a handle opened
      after another process finished writing sees that write;
    - ``True``: compared before every use;
    - ``False``: never compared;
    - a number: compared when last proven current more than that many seconds ago.

    Writes in this process always reach every cache of the process at once, and a
    partial-chunk write always proves its starting copy current (a file's inode and
    times, an object's ETag), whatever the policy: it governs only what reads may
    serve from the cache after another process's writes.
``chunkflow.io.threads``
    Threads that fetch, decode and encode the chunks of one read or write. Default
    ``"auto"``: the cores this process may use (one per core was fastest from the page
    cache). Object stores need no more threads: their requests are sent concurrently
    by the two settings below.
``chunkflow.io.inflight-requests``
    Requests one read or write keeps in flight at once on a latency-bound store (an
    object store or HTTP server: :attr:`Store.latency_bound
    <chunkflow.storage.Store.latency_bound>`), on fsspec's event loop (see
    :meth:`Store.stream_many <chunkflow.storage.Store.stream_many>` and
    :meth:`Store.put_stream <chunkflow.storage.Store.put_stream>`). Default 64: with
    20 ms per request, 64 chunks arrive in about the time of one. A read or write
    inside a :func:`chunkflow.to_dask` task takes one thread's share.
``chunkflow.io.inflight-bytes``
    The memory budget of those requests: decoded bytes of the chunks one read or
    write has fetched and not yet decoded (or encoded and not yet sent), over all its
    threads. Default ``"128 MiB"``. The requests in flight are the smaller of the two
    limits (at least one chunk per thread).
``chunkflow.io.object-backend``
    What opens object URLs (``s3://``, ``gs://``, ``az://``, ``http(s)://``):
    ``"obstore"`` (:class:`~chunkflow.storage.obstore_store.ObstoreStore`, Rust's
    ``object_store``: the least client CPU per byte), ``"fsspec"``
    (:class:`~chunkflow.storage.FsspecStore`: s3fs, gcsfs, adlfs, aiohttp), or
    ``"auto"`` (the default): obstore when it is installed (``pip install
    'chunkflow-zarr[obstore]'``) and knows every ``storage_options`` name given, fsspec
    otherwise (see :func:`chunkflow.storage.obstore_config.object_backend`). Chained
    URLs (``simplecache::s3://...``) always go to fsspec.

Byte sizes may be given with a unit (``"512 MiB"``, ``"2GB"``), read by
:func:`dask.utils.parse_bytes`. Flags accept ``True``/``False``, ``0``/``1`` and the
words ``"true"``, ``"yes"``, ``"on"``, ``"false"``, ``"no"``, ``"off"``. As in dask,
``-`` and ``_`` are the same in a key (``chunkflow.cache.max_bytes``).

Precedence, strongest first: :func:`set` and ``dask.config.set`` (the same thing),
then ``DASK_CHUNKFLOW__...`` environment variables (for example
``DASK_CHUNKFLOW__CACHE__MAX_BYTES="512 MiB"``), then dask YAML files
(``~/.config/dask/chunkflow.yaml``), then the built-in defaults. dask reads a
``DASK_`` variable's value as a Python literal, so there a bare number is a number:
``DASK_CHUNKFLOW__CACHE__RECHECK_CACHED_DATA=0`` means 0 seconds (check every time);
write ``false``.

Settings travel as dask config does: they are process-wide (threads, including
dask's threaded scheduler, see a ``with`` block's values), and distributed's
``LocalCluster``/``Nanny`` hand the config of the process that starts them to their
workers. A change made after the workers started does not reach them; nor do changes
reach the processes of ``scheduler="processes"``, which read only the environment and
dask's YAML files.

Values are checked when set through :func:`set`. A value put directly in dask's config
is checked when chunkflow reads it (and at import), and a bad one raises
:class:`~chunkflow.errors.SettingError` naming the dask key.

Examples
--------
>>> import dask.config
>>> import chunkflow
>>> with chunkflow.config.set({"chunkflow.cache.max-bytes": "1 MiB"}):
...     chunkflow.config.get("chunkflow.cache.max-bytes")
1048576
>>> with dask.config.set({"chunkflow.cache.enabled": "off"}):  # the same setting
...     chunkflow.config.get("chunkflow.cache.enabled")
False
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import dask.config
import yaml
from dask.utils import parse_bytes

from chunkflow.config.resources import auto_cache_bytes, usable_cores
from chunkflow.errors import SettingError, UnknownSettingError

__all__ = [
    "DEFAULTS_FILE", "SETTINGS", "byte_count", "get", "inflight_limits", "is_auto",
    "recheck_policy", "request_count", "set", "thread_count", "values", "zarr_format",
]

DEFAULTS_FILE = Path(__file__).resolve().with_name("chunkflow.yaml")
"""The built-in defaults, registered with ``dask.config.update_defaults`` at import."""

_TRUE = ("1", "true", "yes", "on")
_FALSE = ("0", "false", "no", "off")
_MISSING = object()


def byte_count(what: str, value: object, *, text: bool = True) -> int:
    """``value`` as a number of bytes: a whole number >= 0, or (``text``) a size string.

    Raises
    ------
    SettingError
        (a ``ValueError``) naming ``what`` and the value.

    Examples
    --------
    >>> byte_count("max_bytes", "1.5 KiB"), byte_count("max_bytes", 1e6)
    (1536, 1000000)
    >>> byte_count("max_bytes", "1 KiB", text=False)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    chunkflow.errors.SettingError: max_bytes must be a non-negative whole number ..., got '1 KiB'
    """
    expected, given = "a non-negative whole number of bytes", value
    if text:
        expected += " such as 1000000 or '512 MiB'"
        # dask's parse_bytes reads "" and "MiB" as one unit; a size needs a number.
        if isinstance(value, str) and any(char.isdigit() for char in value):
            try:
                value = parse_bytes(value)  # "-1" becomes -1, refused below
            except (ValueError, OverflowError):  # OverflowError: "1e400"
                pass
        if isinstance(value, float) and value.is_integer():
            value = int(value)  # 1e9 is a fine way to write a byte count
    if isinstance(value, bool) or not hasattr(value, "__index__") or value.__index__() < 0:
        raise SettingError(f"{what} must be {expected}, got {given!r}")
    return int(value.__index__())


def is_auto(value: object) -> bool:
    """Whether ``value`` is the word ``"auto"`` (any case, any surrounding spaces).

    Examples
    --------
    >>> is_auto(" AUTO "), is_auto(0)
    (True, False)
    """
    return isinstance(value, str) and value.strip().lower() == "auto"


def _cache_budget(what: str, value: object) -> int:
    """A byte count, or ``"auto"`` for :func:`~chunkflow.config.resources.auto_cache_bytes`."""
    return auto_cache_bytes() if is_auto(value) else byte_count(what, value)


def _flag(what: str, value: object) -> bool:
    """A boolean: True/False, 0/1, or the usual words (environment variables)."""
    if isinstance(value, bool):
        return value
    # dask reads DASK_...=0 from the environment as the integer 0.
    if hasattr(value, "__index__") and value.__index__() in (0, 1):
        return bool(value.__index__())
    if isinstance(value, str):
        word = value.strip().lower()
        if word in _TRUE or word in _FALSE:
            return word in _TRUE
    raise SettingError(f"{what} must be True or False, got {value!r}")


def thread_count(what: str, value: object) -> int:
    """A thread count: a whole number >= 1, or ``"auto"`` for the usable cores.

    Examples
    --------
    >>> thread_count("threads", "3"), thread_count("threads", "auto") >= 1
    (3, True)
    """
    if is_auto(value):
        return usable_cores()
    if isinstance(value, str):
        value = int(value.strip()) if value.strip().isdigit() else value
    if isinstance(value, bool) or not hasattr(value, "__index__") or value.__index__() < 1:
        raise SettingError(
            f"{what} must be a whole number of threads >= 1 or 'auto', got {value!r}"
        )
    return int(value.__index__())


def request_count(what: str, value: object) -> int:
    """A number of requests: a whole number >= 1.

    Examples
    --------
    >>> request_count("inflight-requests", "32")
    32
    """
    if isinstance(value, str) and value.strip().isdigit():
        value = int(value.strip())
    if isinstance(value, bool) or not hasattr(value, "__index__") or value.__index__() < 1:
        raise SettingError(f"{what} must be a whole number of requests >= 1, got {value!r}")
    return int(value.__index__())


def object_backend_choice(what: str, value: object) -> str:
    """What opens object URLs: ``"auto"``, ``"obstore"`` or ``"fsspec"``.

    Examples
    --------
    >>> object_backend_choice("object-backend", " Obstore ")
    'obstore'
    """
    word = value.strip().lower() if isinstance(value, str) else value
    if word not in ("auto", "obstore", "fsspec"):
        raise SettingError(f"{what} must be 'auto', 'obstore' or 'fsspec', got {value!r}")
    return str(word)


def zarr_format(what: str, value: object) -> int:
    """A Zarr format version: 2 or 3.

    Examples
    --------
    >>> zarr_format("zarr-format", "2")
    2
    """
    if isinstance(value, str) and value.strip() in ("2", "3"):
        value = int(value.strip())
    if isinstance(value, bool) or value not in (2, 3):
        raise SettingError(f"{what} must be 2 or 3, got {value!r}")
    return int(value)


def recheck_policy(what: str, value: object) -> bool | str | float:
    """A recheck policy (see the module docs): ``"open"``, a bool, or seconds >= 0.

    Raises
    ------
    SettingError
        (a ``ValueError``) naming ``what`` and the value, for anything else.

    Examples
    --------
    >>> recheck_policy("recheck_cached_data", "open"), recheck_policy("x", "false")
    ('open', False)
    >>> recheck_policy("recheck_cached_data", "2.5")
    2.5
    """
    if isinstance(value, bool) or value == "open":
        return value
    if isinstance(value, str):
        word = value.strip().lower()
        if word == "open":
            return word
        if word in _TRUE or word in _FALSE:
            return word in _TRUE
        try:
            value = float(word)
        except ValueError:
            value = word
    if isinstance(value, (int, float)) and value >= 0 and value == value:
        return float(value)
    raise SettingError(
        f"{what} must be 'open', True, False or a number of seconds >= 0, got {value!r}"
    )


_PARSERS: dict[str, Callable[[str, Any], Any]] = {
    "chunkflow.cache.max-bytes": _cache_budget,
    "chunkflow.cache.compressed-bytes": byte_count,
    "chunkflow.cache.enabled": _flag,
    "chunkflow.cache.recheck-cached-data": recheck_policy,
    "chunkflow.io.threads": thread_count,
    "chunkflow.io.inflight-requests": request_count,
    "chunkflow.io.inflight-bytes": byte_count,
    "chunkflow.io.object-backend": object_backend_choice,
    "chunkflow.array.zarr-format": zarr_format,
}

SETTINGS: tuple[str, ...] = tuple(_PARSERS)
"""Every setting's key."""

with DEFAULTS_FILE.open() as _file:
    _BUILT_IN: dict[str, Any] = yaml.safe_load(_file)


def _known(key: str) -> str:
    """``key`` spelled as in :data:`SETTINGS` (dask treats ``_`` and ``-`` alike)."""
    canonical = key.replace("_", "-")
    if canonical not in _PARSERS:
        raise UnknownSettingError(
            f"unknown chunkflow setting {key!r}; known settings: {', '.join(SETTINGS)}"
        )
    return canonical


def _dask_variable(key: str) -> str:
    """The environment variable dask reads for ``key`` (``DASK_`` + ``.`` as ``__``)."""
    return "DASK_" + key.upper().replace(".", "__").replace("-", "_")


def get(key: str, config: dict[str, Any] | None = None) -> Any:
    """The current value of setting ``key``, checked and parsed.

    Parameters
    ----------
    key
        One of :data:`SETTINGS`, such as ``"chunkflow.cache.max-bytes"``.
    config
        The dask config dictionary to read (default: ``dask.config.config``). One
        that lacks the key gives the built-in default.

    Raises
    ------
    UnknownSettingError
        (a ``KeyError``) if ``key`` is not a setting; the message lists them.
    SettingError
        (a ``ValueError``) if dask's config holds a bad value for it; the message
        names the key, where such a value comes from, the value and what is expected.

    Examples
    --------
    >>> get("chunkflow.cache.recheck-cached-data", config={})
    'open'
    """
    key = _known(key)
    raw = dask.config.get(key, default=_MISSING, config=dask.config.config
                          if config is None else config)
    if raw is _MISSING:
        raw = dask.config.get(key, config=_BUILT_IN)
    source = f"dask config (dask.config.set, a dask YAML file or {_dask_variable(key)})"
    return _PARSERS[key](f"setting {key!r} from {source}", raw)


def set(  # noqa: A001 - dask.config.set's name
    arg: Mapping[str, Any] | None = None,
    config: dict[str, Any] | None = None,
    **kwargs: Any,
) -> dask.config.set:
    """Change settings now; used in a ``with`` block, restore them on exit.

    Takes what ``dask.config.set`` takes, for chunkflow's keys only: a mapping of keys,
    or keywords with ``__`` for ``.`` (``chunkflow__cache__max_bytes=0``). All values
    are checked before any is applied, and stored parsed (``"512 MiB"`` as 536870912),
    so workers receive checked values.

    Raises
    ------
    UnknownSettingError
        (a ``KeyError``) for an unknown key.
    SettingError
        (a ``ValueError``) for a value the setting does not accept.

    Examples
    --------
    >>> with set({"chunkflow.cache.max-bytes": "2 MiB"}, chunkflow__io__threads=3):
    ...     get("chunkflow.cache.max-bytes"), get("chunkflow.io.threads")
    (2097152, 3)
    """
    changes = dict(arg or {})
    changes.update({name.replace("__", "."): value for name, value in kwargs.items()})
    checked = {}
    for key, value in changes.items():
        known = _known(key)
        checked[known] = _PARSERS[known](f"setting {known!r}", value)
    return dask.config.set(checked, config=dask.config.config if config is None else config)


def values(config: dict[str, Any] | None = None) -> dict[str, Any]:
    """Every setting's current value, checked (as :func:`get` reads them).

    Examples
    --------
    >>> values(config={})["chunkflow.cache.enabled"]
    True
    """
    return {key: get(key, config) for key in SETTINGS}


# As distributed does with distributed.yaml: defaults yield to anything dask already
# holds, such as config a Nanny handed to its worker.
dask.config.update_defaults(_BUILT_IN)
values()  # a bad value (a DASK_CHUNKFLOW__ variable, a YAML file) fails the import


def inflight_limits() -> tuple[int, int]:
    """``(requests, bytes)``: the settings ``chunkflow.io.inflight-requests`` and
    ``chunkflow.io.inflight-bytes`` (what one read or write of a latency-bound store
    may have in flight). Every reader of the two settings reads them here.

    Examples
    --------
    >>> with set({"chunkflow.io.inflight-requests": 8, "chunkflow.io.inflight-bytes": "1 MiB"}):
    ...     inflight_limits()
    (8, 1048576)
    """
    return get("chunkflow.io.inflight-requests"), get("chunkflow.io.inflight-bytes")
