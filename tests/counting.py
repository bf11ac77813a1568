"""A dict store that counts how often each key is written, shared by the graph tests."""

from __future__ import annotations

import threading
from collections import Counter


class CountingMapping(dict):
    """A dict store that counts how often each key is written (thread-safe)."""

    def __init__(self) -> None:
        super().__init__()
        self.writes: Counter[str] = Counter()
        self._lock = threading.Lock()

    def __setitem__(self, key: str, value: bytes) -> None:
        with self._lock:
            self.writes[key] += 1
        super().__setitem__(key, value)

    def chunk_writes(self) -> Counter[str]:
        """Writes of chunks, leaving out metadata documents."""
        return Counter({k: n for k, n in self.writes.items() if not k.endswith("zarr.json")})
