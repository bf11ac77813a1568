"""The hooks a store backend implements, with defaults built on the abstract ones.

:class:`~chunkflow.storage.Store` calls them with keys already normalized and values
already coerced to buffers. A backend must implement :attr:`StoreHooks.identity`,
``_get``, ``_set``, ``_delete`` and ``_list_prefix``; the batch, prefix, size, version
and byte-range hooks have defaults built on those, which a backend overrides when it
can do better (one batched request, a ranged read).
"""

from __future__ import annotations

import abc
import contextlib
from collections.abc import Callable, Iterator

from chunkflow.errors import KeyNotFoundError
from chunkflow.storage.keys import Version, slice_bounds
from chunkflow.storage.ranges import ByteRangeReader, BytesRangeReader

__all__ = ["StoreHooks"]


class StoreHooks(abc.ABC):
    """The backend's side of a :class:`~chunkflow.storage.Store` (see the module)."""

    __slots__ = ()

    # ------------------------------------------------------------------ hooks
    # Keys arrive normalized, values as buffers. A backend must implement the
    # abstract ones (identity, _get, _set, _delete, _list_prefix): a class that
    # forgets one cannot be instantiated (TypeError naming it), as in zarr-python.
    # Every other hook has a default built on those, which backends override
    # when they can do better (one batched request, a ranged read).

    @abc.abstractmethod
    def _get(self, key: str) -> bytes:
        """The value of ``key``; the backend's one place that raises ``KeyError``."""

    @abc.abstractmethod
    def _set(self, key: str, value: bytes | memoryview) -> None:
        """Store ``value`` at ``key`` (read-only backends raise here)."""

    @abc.abstractmethod
    def _delete(self, key: str) -> None:
        """Remove ``key``; ``KeyError`` if it is absent."""

    def _contains(self, key: str) -> bool:
        try:
            self._get(key)
        except KeyError:
            return False
        return True

    @abc.abstractmethod
    def _list_prefix(self, prefix: str) -> Iterator[str]:
        """The full keys below ``prefix`` (``""``: every key), in any order."""

    def _get_many(self, keys: list[str]) -> dict[str, bytes]:
        out: dict[str, bytes] = {}
        for key in keys:
            try:
                out[key] = self._get(key)
            except KeyError:
                pass
        return out

    def _set_many(self, items: dict[str, bytes | memoryview]) -> None:
        for key, value in items.items():
            self._set(key, value)

    def _delete_many(self, keys: list[str]) -> None:
        for key in keys:
            try:
                self._delete(key)
            except KeyError:
                pass

    def _get_into(self, key: str, buffer_for: Callable[[int], memoryview]) -> bytes | memoryview:
        # Backends that read into a caller's buffer override this (and reads_into).
        return self._get(key)

    def _get_range(self, key: str, start: int, length: int | None) -> bytes:
        # Through the pinned reader: a backend that only implements _open_ranges
        # gets ranged get_range for free, and both see one value.
        with self._open_ranges(key) as reader:
            begin, end = slice_bounds(reader.size, start, length)
            return reader.read([(begin, end)])[0]

    def _open_ranges(self, key: str) -> ByteRangeReader:
        # The whole value, fetched once with its version, pins itself. Backends
        # with ranged reads override this.
        found = self._get_many_versioned([key])
        if key not in found:
            raise KeyNotFoundError(key)
        data, version = found[key]
        return BytesRangeReader(key, data, version)

    def _open_ranges_expecting(self, key: str, version: Version) -> ByteRangeReader:
        # Backends that verify reads after the fact override this to skip the open.
        return self._open_ranges(key)

    def _list_dir(self, prefix: str) -> tuple[list[str], list[str]]:
        cut = len(prefix) + 1 if prefix else 0
        keys: set[str] = set()
        dirs: set[str] = set()
        for key in self._list_prefix(prefix):
            rest = key[cut:]
            head, sep, _ = rest.partition("/")
            (dirs if sep else keys).add(head)
        return sorted(keys), sorted(dirs)

    def _delete_prefix(self, prefix: str) -> None:
        self._delete_many(list(self._list_prefix(prefix)))

    def _getsize(self, key: str) -> int:
        return len(self._get(key))

    def _getsize_prefix(self, prefix: str) -> int:
        return sum(self._getsize(key) for key in self._list_prefix(prefix))

    def _versions(self, keys: list[str]) -> dict[str, Version | None]:
        # Backends that can tell versions override this; None proves nothing.
        return dict.fromkeys(keys)

    def _get_many_versioned(self, keys: list[str]) -> dict[str, tuple[bytes, Version | None]]:
        # Versions first, then bytes: a version may be older than the bytes it comes
        # with (a cache then re-reads once too often), never newer (a cache would then
        # take old bytes for current ones).
        versions = self._versions(keys)
        return {key: (data, versions.get(key)) for key, data in self._get_many(keys).items()}

    def _set_many_versioned(self, items: dict[str, bytes | memoryview]) -> dict[str, Version | None]:
        self._set_many(items)
        return dict.fromkeys(items)

    def _translated(self, key: str, err: BaseException, write: bool) -> BaseException | None:
        """A backend's error as chunkflow's (``KeyError`` for a missing key,
        ``ReadOnlyError`` for a refused write), or ``None`` to leave it as it is."""
        return None

    @contextlib.contextmanager
    def _translate(self, key: str, *, write: bool = False) -> Iterator[None]:
        """The one place where a backend's errors become chunkflow's
        (:meth:`_translated`)."""
        try:
            yield
        except Exception as err:
            new = self._translated(key, err, write)
            if new is None:
                raise
            raise new from err

    @property
    @abc.abstractmethod
    def identity(self) -> str:
        """A stable token naming where the data lives (used as a cache key part).

        Two stores over the same location have the same identity; two
        independent in-memory stores never do.
        """
