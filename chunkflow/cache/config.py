"""chunkflow's settings, kept in ``dask.config`` under the ``chunkflow`` namespace.

``chunkflow.config.set(cache_max_bytes=...)`` and
``dask.config.set({"chunkflow.cache.max-bytes": ...})`` change the same setting: the
values live in dask's config, whose defaults chunkflow registers from
``chunkflow/chunkflow.yaml`` at import (as distributed does with ``distributed.yaml``).

Settings
--------
``cache_max_bytes`` (dask key ``chunkflow.cache.max-bytes``)
    Budget of the decoded-chunk cache, one per process. Default ``"auto"``: 1 GiB or
    1/16 of physical memory, whichever is smaller; inside a dask distributed worker,
    also no more than 1/8 of the worker's memory limit (see :func:`auto_cache_bytes`).
    Old variable: ``CHUNKFLOW_CACHE_MAX_BYTES``.
``cache_compressed_bytes`` (``chunkflow.cache.compressed-bytes``)
    Budget of the compressed second tier; 0 (the default) means none. Old variable:
    ``CHUNKFLOW_CACHE_COMPRESSED_BYTES``.
``cache_enabled`` (``chunkflow.cache.enabled``)
    Whether arrays opened without an explicit ``cache=`` use the process-wide cache.
    Default ``True``. Old variable: ``CHUNKFLOW_CACHE_ENABLED``.
``recheck_cached_data`` (``chunkflow.cache.recheck-cached-data``)
    How stale a cached chunk may be when it is read, as tensorstore's option of the
    same name. ``"open"`` (default): a chunk cached before the array handle was opened
    is compared with the store's version of it once before use, so a handle opened
    after another process's write sees that write. ``True``: compared before every
    use. ``False``: never compared. A number: compared when last proven current more
    than that many seconds ago. (Writes in this process always reach every cache at
    once, and a partial-chunk write always proves its starting copy current.) Old
    variable: ``CHUNKFLOW_RECHECK_CACHED_DATA``.
``io_threads`` (``chunkflow.io.threads``)
    Threads that fetch, decode and encode the chunks of one read or write. Default
    ``"auto"``: the cores this process may use (one per core was fastest from the page
    cache); more for storage with long latencies. Old variable: ``CHUNKFLOW_IO_THREADS``.

Byte sizes may be given with a unit (``"512 MiB"``, ``"2GB"``), read by
:func:`dask.utils.parse_bytes`. Flags accept ``True``/``False``, ``0``/``1`` and the
words ``"true"``, ``"yes"``, ``"on"``, ``"false"``, ``"no"``, ``"off"``.

Precedence, strongest first: ``chunkflow.config.set`` and ``dask.config.set`` (the same
thing), then ``DASK_CHUNKFLOW__...`` environment variables (for example
``DASK_CHUNKFLOW__CACHE__MAX_BYTES``), then dask YAML files, then the old ``CHUNKFLOW_*``
variables, then the built-in defaults. The old variables are read at import and stand
in for the defaults, so that a value dask already holds (from its own variables, its
files, or config inherited from a parent process) is never overridden by them.
dask reads a ``DASK_`` variable's value as a Python literal, so there a bare number is a
number: ``DASK_CHUNKFLOW__CACHE__RECHECK_CACHED_DATA=0`` means 0 seconds (check every
time), where ``CHUNKFLOW_RECHECK_CACHED_DATA=0`` means ``False``; write ``false``.

Settings travel as dask config does: they are process-wide (threads, including
dask's threaded scheduler, see a ``with`` block's values), and distributed's
``LocalCluster``/``Nanny`` hand the config of the process that starts them to their
workers. A change made after the workers started does not reach them; nor do changes
reach the processes of ``scheduler="processes"``, which read only the environment and
dask's YAML files.

Values are checked when set through ``chunkflow.config.set``. A value put directly in
dask's config is checked when chunkflow reads it (and at import), and a bad one raises
:class:`~chunkflow.errors.SettingError` naming the dask key.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any

import dask.config
import yaml
from dask.utils import parse_bytes

from chunkflow.cache.budget import (
    WORKER_CACHE_SHARE,
    auto_cache_bytes,
    default_cache_bytes,
    worker_memory_limit,
)
from chunkflow.errors import SettingError, UnknownSettingError

__all__ = [
    "Config", "WORKER_CACHE_SHARE", "auto_cache_bytes", "cache_bytes_for", "config",
    "default_cache_bytes", "recheck_policy", "worker_memory_limit",
]

DEFAULTS_FILE = Path(__file__).resolve().parents[1] / "chunkflow.yaml"
"""The built-in defaults, registered with ``dask.config.update_defaults`` at import."""

_TRUE = ("1", "true", "yes", "on")
_FALSE = ("0", "false", "no", "off")
_MISSING = object()


def _byte_count(name: str, value: Any) -> int:
    """Validate a budget: a non-negative whole number of bytes, or a size string."""
    expected = "a non-negative whole number of bytes such as 1000000 or '512 MiB'"
    if isinstance(value, str):
        # dask's parse_bytes reads "" and "MiB" as one unit; a size needs a number.
        if not any(char.isdigit() for char in value):
            raise SettingError(f"setting {name!r} must be {expected}, got {value!r}")
        try:
            count = parse_bytes(value)
        except (ValueError, OverflowError):  # OverflowError: "1e400"
            count = -1
        if count < 0:  # parse_bytes reads "-1" as -1
            raise SettingError(f"setting {name!r} must be {expected}, got {value!r}")
        return count
    if isinstance(value, float) and value.is_integer():
        value = int(value)  # 1e9 is a fine way to write a byte count
    if isinstance(value, bool) or not hasattr(value, "__index__") or value.__index__() < 0:
        raise SettingError(f"setting {name!r} must be {expected}, got {value!r}")
    return int(value.__index__())


def _cache_budget(name: str, value: Any) -> int:
    """A byte count, or ``"auto"`` for :func:`auto_cache_bytes`."""
    if _is_auto(value):
        return auto_cache_bytes()
    return _byte_count(name, value)


def _is_auto(value: Any) -> bool:
    return isinstance(value, str) and value.strip().lower() == "auto"


def _flag(name: str, value: Any) -> bool:
    """Validate a boolean: True/False, 0/1, or the usual words (environment variables)."""
    if isinstance(value, bool):
        return value
    # dask reads DASK_...=0 from the environment as the integer 0.
    if hasattr(value, "__index__") and value.__index__() in (0, 1):
        return bool(value.__index__())
    if isinstance(value, str):
        text = value.strip().lower()
        if text in _TRUE or text in _FALSE:
            return text in _TRUE
    raise SettingError(f"setting {name!r} must be True or False, got {value!r}")


def usable_cores() -> int:
    """The cores this process may use (its CPU affinity where the system has one).

    Examples
    --------
    >>> usable_cores() >= 1
    True
    """
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # macOS, Windows
        return max(1, os.cpu_count() or 1)


def thread_count(name: str, value: Any) -> int:
    """Validate a thread count: a whole number >= 1, or ``"auto"`` for the usable cores.

    Examples
    --------
    >>> thread_count("io_threads", "3"), thread_count("io_threads", "auto") >= 1
    (3, True)
    """
    if isinstance(value, str):
        text = value.strip().lower()
        if text == "auto":
            return usable_cores()
        value = int(text) if text.isdigit() else text
    if isinstance(value, bool) or not hasattr(value, "__index__") or value.__index__() < 1:
        raise SettingError(
            f"setting {name!r} must be a whole number of threads >= 1 or 'auto', got {value!r}"
        )
    return int(value.__index__())


def recheck_policy(name: str, value: Any) -> bool | str | float:
    """Validate a ``recheck_cached_data`` value: ``"open"``, a bool, or seconds >= 0.

    Raises
    ------
    SettingError
        (a ``ValueError``) naming ``name`` and the value, for anything else.

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
        text = value.strip().lower()
        if text == "open":
            return text
        if text in _TRUE or text in _FALSE:
            return text in _TRUE
        try:
            value = float(text)
        except ValueError:
            value = text
    if isinstance(value, (int, float)) and value >= 0 and value == value:
        return float(value)
    raise SettingError(
        f"setting {name!r} must be 'open', True, False or a number of seconds >= 0, "
        f"got {value!r}"
    )


@dataclass(frozen=True)
class _Setting:
    """One setting: its dask config key, its check and its old environment variable."""

    key: str
    check: Callable[[str, Any], Any]
    legacy_env: str

    @property
    def dask_env(self) -> str:
        """The variable dask reads for this key (``DASK_`` + ``.`` as ``__``)."""
        return "DASK_" + self.key.upper().replace(".", "__").replace("-", "_")


_SETTINGS: dict[str, _Setting] = {
    "cache_max_bytes": _Setting(
        "chunkflow.cache.max-bytes", _cache_budget, "CHUNKFLOW_CACHE_MAX_BYTES"),
    "cache_compressed_bytes": _Setting(
        "chunkflow.cache.compressed-bytes", _byte_count, "CHUNKFLOW_CACHE_COMPRESSED_BYTES"),
    "cache_enabled": _Setting("chunkflow.cache.enabled", _flag, "CHUNKFLOW_CACHE_ENABLED"),
    "recheck_cached_data": _Setting(
        "chunkflow.cache.recheck-cached-data", recheck_policy, "CHUNKFLOW_RECHECK_CACHED_DATA"),
    "io_threads": _Setting("chunkflow.io.threads", thread_count, "CHUNKFLOW_IO_THREADS"),
}

with DEFAULTS_FILE.open() as _file:
    _BUILT_IN: dict[str, Any] = yaml.safe_load(_file)


def _setting(name: str) -> _Setting:
    try:
        return _SETTINGS[name]
    except KeyError:
        raise UnknownSettingError(
            f"unknown chunkflow setting {name!r}; known settings: {', '.join(_SETTINGS)}"
        ) from None


def _nested(flat: Mapping[str, Any]) -> dict[str, Any]:
    """``{"a.b.c": v}`` as ``{"a": {"b": {"c": v}}}``, the shape of dask's config."""
    nested: dict[str, Any] = {}
    for key, value in flat.items():
        *parents, leaf = key.split(".")
        level = nested
        for part in parents:
            level = level.setdefault(part, {})
        level[leaf] = value
    return nested


def _defaults(env: Mapping[str, str]) -> dict[str, Any]:
    """The built-in defaults, overridden by the old ``CHUNKFLOW_*`` variables in ``env``.

    Raises
    ------
    SettingError
        Naming the variable and its value, if one does not hold a valid value.
    """
    found: dict[str, Any] = {}
    for name, setting in _SETTINGS.items():
        raw = env.get(setting.legacy_env)
        if raw is None:
            continue
        try:
            found[setting.key] = setting.check(name, raw)
        except SettingError as error:
            raise SettingError(f"environment variable {setting.legacy_env}={raw!r}: {error}") \
                from None
    return dask.config.merge(_BUILT_IN, _nested(found))


class Config:
    """chunkflow's settings by their chunkflow names, read from and written to dask config.

    Parameters
    ----------
    dask_config
        The dask config dictionary that holds the values. ``chunkflow.config`` uses
        dask's process-wide ``dask.config.config``. ``None`` makes a private one, as a
        new process would see it: the defaults, the ``CHUNKFLOW_*`` and ``DASK_*``
        environment variables, and dask's YAML files.

    Raises
    ------
    SettingError
        If a setting already holds a bad value (the message names where it came from).

    Notes
    -----
    Thread-safe, and process-wide like ``dask.config`` (not per thread): ``with
    config.set(...)`` blocks in several threads at once may restore each other's
    values, so change settings from one thread.

    Examples
    --------
    >>> cfg = Config()
    >>> with cfg.set(cache_max_bytes=2**20, cache_enabled=False):
    ...     cfg.get("cache_max_bytes"), cfg.get("cache_enabled")
    (1048576, False)
    >>> cfg.get("cache_enabled")
    True
    >>> cfg.set(cache_compressed_bytes="64 MiB")  # without `with`: stays set
    <chunkflow settings change: cache_compressed_bytes>
    >>> cfg.get("cache_compressed_bytes")
    67108864
    >>> import dask.config
    >>> with dask.config.set({"chunkflow.cache.max-bytes": "1 MiB"}):  # the same setting
    ...     config.get("cache_max_bytes")
    1048576
    """

    def __init__(self, dask_config: dict[str, Any] | None = None) -> None:
        if dask_config is None:
            dask_config = dask.config.merge(_defaults(os.environ), dask.config.collect())
        self._dask_config = dask_config
        for name in _SETTINGS:
            self.get(name)  # a bad value fails now, not at the first read

    def get(self, name: str) -> Any:
        """The current value of setting ``name``, checked.

        Raises
        ------
        UnknownSettingError
            (a ``KeyError``) if ``name`` is not a setting; the message lists them.
        SettingError
            (a ``ValueError``) if dask's config holds a bad value for it; the message
            names the dask key, the value and what is expected.
        """
        setting = _setting(name)
        raw = dask.config.get(setting.key, default=_MISSING, config=self._dask_config)
        if raw is _MISSING:  # a config dictionary that lacks it: the built-in default
            raw = dask.config.get(setting.key, config=_BUILT_IN)
        try:
            return setting.check(name, raw)
        except SettingError as error:
            raise SettingError(
                f"dask config {setting.key!r} (from dask.config.set, a dask YAML file or "
                f"{setting.dask_env}): {error}"
            ) from None

    def set(self, **settings: Any) -> _Change:
        """Change settings now; used in a ``with`` block, restore them on exit.

        All values are checked before any is applied. The checked values are stored
        in dask config (``"512 MiB"`` as 536870912), so workers receive checked values.

        Raises
        ------
        UnknownSettingError
            (a ``KeyError``) for an unknown setting name.
        SettingError
            (a ``ValueError``) for a value the setting does not accept.
        """
        checked = {_setting(name).key: _setting(name).check(name, value)
                   for name, value in settings.items()}
        return _Change(self, dask.config.set(checked, config=self._dask_config), settings)

    def __repr__(self) -> str:
        values = []
        for name in _SETTINGS:
            try:
                values.append(f"{name}={self.get(name)!r}")
            except SettingError:  # a repr must not raise: show what is there
                raw = dask.config.get(_SETTINGS[name].key, None, config=self._dask_config)
                values.append(f"{name}=<invalid {raw!r}>")
        return "Config(" + ", ".join(values) + ")"


def cache_bytes_for(memory_limit: int | None, settings: Config | None = None) -> int:
    """The budget the process-wide cache has in a process with ``memory_limit``.

    What a dask worker with that memory limit (``None``: none) gives its cache under
    ``settings`` (default: this process's, which a ``LocalCluster`` hands to its
    workers): 0 if the cache is disabled, the set budget, or for ``"auto"``
    :func:`auto_cache_bytes` of ``memory_limit``. Memory plans count it.

    Examples
    --------
    >>> cache_bytes_for(2**30) == 2**27
    True
    >>> with config.set(cache_max_bytes="64 MiB"):
    ...     cache_bytes_for(2**30)
    67108864
    >>> with config.set(cache_enabled=False):
    ...     cache_bytes_for(2**30)
    0
    """
    settings = config if settings is None else settings
    if not settings.get("cache_enabled"):
        return 0
    key = _SETTINGS["cache_max_bytes"].key
    raw = dask.config.get(key, default="auto", config=settings._dask_config)
    if _is_auto(raw):
        return auto_cache_bytes(memory_limit) if memory_limit else default_cache_bytes()
    return int(settings.get("cache_max_bytes"))


class _Change:
    """Returned by :meth:`Config.set`; as a context manager, undoes the change on exit."""

    def __init__(self, owner: Config, change: dask.config.set, names: Mapping[str, Any]) -> None:
        self._owner = owner
        self._change = change
        self._names = tuple(names)

    def __enter__(self) -> Config:
        return self._owner

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        self._change.__exit__(kind, error, trace)

    def __repr__(self) -> str:
        return f"<chunkflow settings change: {', '.join(self._names)}>"


# As distributed does with distributed.yaml. Registered as defaults, the old variables
# yield to anything dask already holds, such as config a Nanny handed to its worker.
dask.config.update_defaults(_defaults(os.environ))

config = Config(dask.config.config)
"""The process-wide settings: a view of ``dask.config.config``."""
