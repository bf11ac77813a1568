"""Process-wide settings: ``chunkflow.config.set(cache_max_bytes=...)``.

Settings
--------
``cache_max_bytes`` (int)
    Budget of the decoded-chunk cache. Default: 1 GiB or 1/16 of physical memory,
    whichever is smaller. Environment: ``CHUNKFLOW_CACHE_MAX_BYTES``.
``cache_compressed_bytes`` (int)
    Budget of the compressed second tier; 0 (the default) means none. Environment:
    ``CHUNKFLOW_CACHE_COMPRESSED_BYTES``.
``cache_enabled`` (bool)
    Whether arrays opened without an explicit ``cache=`` use the process-wide cache.
    Default ``True``. Environment: ``CHUNKFLOW_CACHE_ENABLED``.
``recheck_cached_data`` (``"open"``, bool or seconds)
    How stale a cached chunk may be when it is read, as tensorstore's option of the
    same name. ``"open"`` (default): a chunk cached before the array handle was opened
    is compared with the store's version of it once before use, so a handle opened
    after another process's write sees that write. ``True``: compared before every
    use. ``False``: never compared. A number: compared when last proven current more
    than that many seconds ago. (Writes in this process always reach every cache at
    once, and a partial-chunk write always proves its starting copy current.)
    Environment: ``CHUNKFLOW_RECHECK_CACHED_DATA``.

Byte sizes may also be given as strings with a unit (``"512 MiB"``, ``"2GB"``), which is
handy in environment variables.
"""

from __future__ import annotations

import os
import re
import threading
from collections.abc import Callable
from types import TracebackType
from typing import Any

__all__ = ["Config", "config", "default_cache_bytes", "parse_bytes", "recheck_policy"]

_UNITS = {
    "": 1, "b": 1,
    "kb": 10**3, "mb": 10**6, "gb": 10**9, "tb": 10**12,
    "kib": 2**10, "mib": 2**20, "gib": 2**30, "tib": 2**40,
}
_SIZE = re.compile(r"^\s*([0-9]*\.?[0-9]+(?:e[0-9]+)?)\s*([a-z]*)\s*$")


def default_cache_bytes() -> int:
    """1 GiB or 1/16 of physical memory, whichever is smaller.

    Examples
    --------
    >>> 0 < default_cache_bytes() <= 2**30
    True
    """
    try:
        physical = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):  # not a POSIX system
        physical = 16 * 2**30
    return int(min(2**30, physical // 16))


def parse_bytes(text: str) -> int:
    """A number of bytes from text such as ``"1000"``, ``"1e9"``, ``"512 MiB"``.

    Raises
    ------
    ValueError
        If ``text`` is not a number with an optional unit (B, kB, MB, GB, TB, KiB...).

    Examples
    --------
    >>> parse_bytes("512 MiB"), parse_bytes("2GB"), parse_bytes("1e3")
    (536870912, 2000000000, 1000)
    """
    match = _SIZE.match(text.lower())
    if match is None or match.group(2) not in _UNITS:
        raise ValueError(f"not a number of bytes: {text!r} (expected e.g. 1000000 or '512 MiB')")
    return int(float(match.group(1)) * _UNITS[match.group(2)])


def _byte_count(name: str, value: Any) -> int:
    """Validate a budget: a non-negative whole number of bytes (or a size string)."""
    if isinstance(value, str):
        try:
            return parse_bytes(value)
        except ValueError:
            raise ValueError(
                f"setting {name!r} must be a number of bytes, got {value!r}"
            ) from None
    if isinstance(value, float) and value.is_integer():
        value = int(value)  # 1e9 is a fine way to write a byte count
    if isinstance(value, bool) or not hasattr(value, "__index__") or value.__index__() < 0:
        raise ValueError(
            f"setting {name!r} must be a non-negative integer number of bytes, got {value!r}"
        )
    return int(value.__index__())


def _flag(name: str, value: Any) -> bool:
    """Validate a boolean: True/False, or the usual spellings in text (env variables)."""
    if isinstance(value, bool):
        return value
    if isinstance(value, str):
        text = value.strip().lower()
        if text in ("1", "true", "yes", "on"):
            return True
        if text in ("0", "false", "no", "off"):
            return False
    raise ValueError(f"setting {name!r} must be True or False, got {value!r}")


def recheck_policy(name: str, value: Any) -> bool | str | float:
    """Validate a ``recheck_cached_data`` value: ``"open"``, a bool, or seconds >= 0.

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
        if text in ("open", "1", "true", "yes", "on", "0", "false", "no", "off"):
            return text if text == "open" else _flag(name, text)
        try:
            value = float(text)
        except ValueError:
            value = text
    if isinstance(value, (int, float)) and value >= 0 and value == value:
        return float(value)
    raise ValueError(
        f"setting {name!r} must be 'open', True, False or a number of seconds >= 0, "
        f"got {value!r}"
    )


class _Setting:
    """What one setting accepts, its default and its environment variable."""

    def __init__(self, check: Callable[[str, Any], Any], default: Callable[[], Any], env: str):
        self.check = check
        self.default = default
        self.env = env

    def initial(self, name: str) -> Any:
        raw = os.environ.get(self.env)
        if raw is None:
            return self.default()
        try:
            return self.check(name, raw)
        except ValueError as error:
            raise ValueError(f"environment variable {self.env}={raw!r}: {error}") from None


_SETTINGS: dict[str, _Setting] = {
    "cache_max_bytes": _Setting(_byte_count, default_cache_bytes, "CHUNKFLOW_CACHE_MAX_BYTES"),
    "cache_compressed_bytes": _Setting(_byte_count, lambda: 0, "CHUNKFLOW_CACHE_COMPRESSED_BYTES"),
    "cache_enabled": _Setting(_flag, lambda: True, "CHUNKFLOW_CACHE_ENABLED"),
    "recheck_cached_data": _Setting(
        recheck_policy, lambda: "open", "CHUNKFLOW_RECHECK_CACHED_DATA"
    ),
}


def _unknown(name: str) -> KeyError:
    return KeyError(f"unknown chunkflow setting {name!r}; known settings: {', '.join(_SETTINGS)}")


class Config:
    """chunkflow's settings: defaults, environment overrides, scoped changes.

    The environment is read when the object is made (for ``config``: at import).
    Thread-safe; the settings are process-wide (like ``dask.config``), not per thread,
    so ``with config.set(...)`` blocks in several threads at once may restore each
    other's values: change settings from one thread.

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
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._values: dict[str, Any] = {name: s.initial(name) for name, s in _SETTINGS.items()}

    def get(self, name: str) -> Any:
        """The current value of setting ``name``.

        Raises
        ------
        KeyError
            If ``name`` is not a setting (the message lists the known ones).
        """
        try:
            return self._values[name]  # one dict read: atomic, no lock needed
        except KeyError:
            raise _unknown(name) from None

    def set(self, **settings: Any) -> _Change:
        """Change settings now; used in a ``with`` block, restore them on exit.

        All values are checked before any is applied.

        Raises
        ------
        KeyError
            For an unknown setting name.
        ValueError
            For a value the setting does not accept.
        """
        checked: dict[str, Any] = {}
        for name, value in settings.items():
            if name not in _SETTINGS:
                raise _unknown(name)
            checked[name] = _SETTINGS[name].check(name, value)
        with self._lock:
            previous = {name: self._values[name] for name in checked}
            # A new dict rather than update(): readers never see a half-applied change.
            self._values = {**self._values, **checked}
        return _Change(self, previous)

    def _restore(self, previous: dict[str, Any]) -> None:
        with self._lock:
            self._values = {**self._values, **previous}

    def __repr__(self) -> str:
        values = self._values
        return "Config(" + ", ".join(f"{k}={v!r}" for k, v in values.items()) + ")"


class _Change:
    """Returned by :meth:`Config.set`; as a context manager, undoes the change on exit."""

    def __init__(self, owner: Config, previous: dict[str, Any]) -> None:
        self._owner = owner
        self._previous = previous

    def __enter__(self) -> Config:
        return self._owner

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        self._owner._restore(self._previous)

    def __repr__(self) -> str:
        return f"<chunkflow settings change: {', '.join(self._previous)}>"


config = Config()
"""The process-wide settings."""
