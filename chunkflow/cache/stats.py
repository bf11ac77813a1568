"""Counters of a :class:`~chunkflow.cache.ChunkCache`, as a frozen snapshot."""

from __future__ import annotations

from dataclasses import asdict, dataclass

__all__ = ["CacheStats"]


@dataclass(frozen=True)
class CacheStats:
    """A snapshot of the counters of a :class:`ChunkCache`.

    Attributes
    ----------
    hits, misses : int
        Lookups answered and not answered (``hits`` includes ``compressed_hits``).
    evictions : int
        Chunks that left the cache for lack of room (not discards). With a second tier,
        a chunk moving from the fast tier into it is not an eviction; leaving it is.
    bytes, entries, max_bytes : int
        Decoded bytes and chunks held by the fast tier, and its budget.
    compressed_hits, compressed_bytes, compressed_entries : int
        Hits served by the compressed tier, and what it holds (0 without one).
    rechecks, stale : int
        Cached chunks compared with the store's version before use (the recheck
        policy, see :mod:`chunkflow.config`), and those of them found outdated (then
        read again).
    refused : int
        Chunks not cached because a write changed them while they were being fetched.

    Examples
    --------
    >>> CacheStats(hits=3, misses=1, evictions=0, bytes=64, entries=1, max_bytes=1024)
    CacheStats(hits=3, misses=1, hit_rate=75%, evictions=0, entries=1, bytes=64/1024)
    """

    hits: int
    misses: int
    evictions: int
    bytes: int
    entries: int
    max_bytes: int
    compressed_hits: int = 0
    compressed_bytes: int = 0
    compressed_entries: int = 0
    rechecks: int = 0
    stale: int = 0
    refused: int = 0

    @property
    def hit_rate(self) -> float | None:
        """Hits per lookup, or ``None`` before the first lookup."""
        total = self.hits + self.misses
        return self.hits / total if total else None

    def __repr__(self) -> str:
        rate = "-" if self.hit_rate is None else f"{100 * self.hit_rate:.0f}%"
        text = (
            f"CacheStats(hits={self.hits}, misses={self.misses}, hit_rate={rate}, "
            f"evictions={self.evictions}, entries={self.entries}, "
            f"bytes={self.bytes}/{self.max_bytes}"
        )
        if self.compressed_entries or self.compressed_hits:
            text += (
                f", compressed_entries={self.compressed_entries}, "
                f"compressed_bytes={self.compressed_bytes}, "
                f"compressed_hits={self.compressed_hits}"
            )
        if self.rechecks or self.refused:
            text += f", rechecks={self.rechecks}, stale={self.stale}, refused={self.refused}"
        return text + ")"

    def _repr_html_(self) -> str:
        rows = "".join(
            f"<tr><th style='text-align:left'>{name}</th><td>{value}</td></tr>"
            for name, value in asdict(self).items()
        )
        return f"<table class='chunkflow-cache-stats'>{rows}</table>"
