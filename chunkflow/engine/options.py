"""How an array handle behaves: read-only, empty chunks, pickle, locks and cache."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from chunkflow import config
from chunkflow.cache import ChunkCache, default_cache, read_settings, recheck_setting, store_cache
from chunkflow.errors import ArgumentTypeError
from chunkflow.sync import Synchronizer, as_synchronizer

__all__ = ["ArrayOptions"]


@dataclass(frozen=True)
class ArrayOptions:
    """Per-handle options of an :class:`~chunkflow.Array` (not stored in the metadata).

    Parameters
    ----------
    read_only : bool
        Refuse writes.
    write_empty_chunks : bool
        Store chunks equal to the fill value everywhere (``False`` deletes them).
    allow_pickle : bool
        Allow the pickle codec (decoding it runs code: trusted stores only).
    synchronizer : Synchronizer or None
        Locks chunks for writes that other writers may overlap.
    cache : ChunkCache, bool or None
        ``None`` uses the process-wide cache (if ``chunkflow.cache.enabled``), ``False`` none,
        a :class:`~chunkflow.cache.ChunkCache` that one.
    lock_timeout : float or None
        Seconds to wait for locks before :class:`~chunkflow.errors.LockTimeoutError`.
    recheck_cached_data : "open", bool, float or None
        How stale cached chunks may be when read (the recheck policy of
        :mod:`chunkflow.config`); ``None`` follows the setting
        ``chunkflow.cache.recheck-cached-data`` (default ``"open"``).

    Examples
    --------
    >>> ArrayOptions(cache=False).resolve_cache() is None
    True
    """

    read_only: bool = False
    write_empty_chunks: bool = False
    allow_pickle: bool = False
    synchronizer: Synchronizer | None = None
    cache: ChunkCache | bool | None = None
    lock_timeout: float | None = None
    recheck_cached_data: bool | str | float | None = None

    @classmethod
    def from_kwargs(cls, **kwargs: Any) -> ArrayOptions:
        """Options from keyword arguments, validating the synchronizer, cache and policy."""
        options = cls(**kwargs)
        recheck = options.recheck_cached_data
        if recheck is not None:
            recheck = config.recheck_policy("recheck_cached_data", recheck)
        return replace(options, synchronizer=as_synchronizer(options.synchronizer),
                       recheck_cached_data=recheck)

    def resolve_recheck(self) -> bool | str | float:
        """The staleness policy to apply now (this handle's, else the process default).

        Examples
        --------
        >>> ArrayOptions(recheck_cached_data=True).resolve_recheck()
        True
        >>> ArrayOptions().resolve_recheck()
        'open'
        """
        if self.recheck_cached_data is not None:
            return self.recheck_cached_data
        return recheck_setting()

    def resolve_cache(self, store: object = None) -> ChunkCache | None:
        """The cache to use now: this handle's, else the one ``store`` carries
        (:func:`~chunkflow.storage.LRUStoreCache`), else the process-wide one (which
        follows ``chunkflow.cache.*``)."""
        if self.cache is False:
            return None
        if isinstance(self.cache, ChunkCache):
            return self.cache
        if self.cache not in (None, True):
            raise ArgumentTypeError(f"cache must be None, True, False or a ChunkCache, got {self.cache!r}")
        own = store_cache(store)
        return own if own is not None else default_cache()

    def resolve_read(self, store: object = None) -> tuple[ChunkCache | None, bool | str | float]:
        """:meth:`resolve_cache` and :meth:`resolve_recheck` at once: what a read asks,
        with one look at the settings.

        Examples
        --------
        >>> ArrayOptions(cache=False, recheck_cached_data=True).resolve_read()
        (None, True)
        """
        if self.cache is None and self.recheck_cached_data is None \
                and getattr(store, "chunk_cache_bytes", None) is None:
            return read_settings()  # the default handle: the process-wide cache
        return self.resolve_cache(store), self.resolve_recheck()

    def with_read_only(self, read_only: bool) -> ArrayOptions:
        """A copy with ``read_only`` replaced."""
        return replace(self, read_only=read_only)

    def __getstate__(self) -> dict[str, Any]:
        # A private ChunkCache stays in its process; elsewhere the default cache serves.
        state = dict(self.__dict__)
        if isinstance(state["cache"], ChunkCache):
            state["cache"] = None
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        for name, value in state.items():
            object.__setattr__(self, name, value)


OPTION_NAMES = tuple(ArrayOptions.__dataclass_fields__)
