"""What a group passes on to every node opened or created through it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from chunkflow.sync import as_synchronizer

if TYPE_CHECKING:
    from chunkflow.cache import CacheLike
    from chunkflow.sync import SynchronizerLike

__all__ = ["MemberOptions"]


@dataclass(frozen=True)
class MemberOptions:
    """Synchronizer, cache and lock timeout shared by a group and its members.

    The group itself uses the synchronizer and ``lock_timeout`` for its attribute
    updates; arrays opened or created through it get all three.

    Examples
    --------
    >>> MemberOptions(lock_timeout=2.0).array_kwargs()
    {'synchronizer': None, 'cache': None, 'lock_timeout': 2.0}
    """

    synchronizer: SynchronizerLike = None
    cache: CacheLike = None
    lock_timeout: float | None = None

    def __post_init__(self) -> None:
        # "thread" becomes one ThreadSynchronizer here, once: the group's own attribute
        # updates need its lock() and every member shares its locks.
        object.__setattr__(self, "synchronizer", as_synchronizer(self.synchronizer))

    def array_kwargs(self) -> dict[str, Any]:
        """Keyword arguments for :func:`chunkflow.create` / :func:`chunkflow.open_array`."""
        return {"synchronizer": self.synchronizer, "cache": self.cache,
                "lock_timeout": self.lock_timeout}
