"""Stores whose data lives in one process: pickled by reference, never copied.

An in-memory store (a :class:`~chunkflow.storage.memory.MemoryStore`, fsspec's
``memory://`` file system, a ``dict`` wrapped as a store) holds its bytes in the
memory of the process that made it. A copy sent to another process would accept
writes that nobody ever sees again, and would read chunks the original never had. So
such stores pickle as a *reference*: the registered store's identity plus a token of
the process that owns it.

- Unpickled in the same process (the threaded scheduler, ``Client(processes=False)``),
  the reference resolves to the very same store object.
- Unpickled anywhere else (a worker process, a forked child, a process spawned by
  ``scheduler="processes"``), it becomes a :class:`DetachedStore` whose every use
  raises :class:`~chunkflow.errors.ProcessLocalStoreError`, naming the store and
  saying what to use instead.

A forked child inherits the parent's memory, but not its future: the process token is
renewed after ``fork``, so a child never mistakes its copy for the parent's store.

Examples
--------
>>> import pickle
>>> from chunkflow.storage.memory import MemoryStore
>>> store = MemoryStore()
>>> pickle.loads(pickle.dumps(store)) is store
True
>>> detached = resolve(store.identity, "another-process", "MemoryStore()")
>>> detached.get("zarr.json")
Traceback (most recent call last):
...
chunkflow.errors.ProcessLocalStoreError: MemoryStore() lives in the memory of another process ...
"""

from __future__ import annotations

import os
import threading
import uuid
import weakref
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, NoReturn

from chunkflow.errors import ProcessLocalStoreError
from chunkflow.storage.base import Store

if TYPE_CHECKING:
    from chunkflow.storage.base import Version

__all__ = ["DetachedStore", "process_token", "reference", "register", "resolve"]

_token = uuid.uuid4().hex
_registry: weakref.WeakValueDictionary[str, Store] = weakref.WeakValueDictionary()
_registry_lock = threading.Lock()


def _renew_token() -> None:
    global _token
    _token = uuid.uuid4().hex


if hasattr(os, "register_at_fork"):  # not on Windows, which does not fork
    os.register_at_fork(after_in_child=_renew_token)


def process_token() -> str:
    """A token naming this process (renewed in a forked child).

    Examples
    --------
    >>> process_token() == process_token()
    True
    """
    return _token


def register(store: Store) -> None:
    """Make ``store`` resolvable by its identity in this process (held weakly)."""
    with _registry_lock:
        _registry[store.identity] = store


def reference(store: Store, description: str, why: str | None = None) -> tuple[Any, ...]:
    """A ``__reduce__`` value that pickles ``store`` by reference (see module doc);
    ``why`` says why it cannot travel (default: its data lives in this process)."""
    register(store)
    return (resolve, (store.identity, _token, description, why))


def resolve(identity: str, token: str, description: str, why: str | None = None) -> Store:
    """The store a reference names: the same object here, a detached one elsewhere.

    Parameters
    ----------
    identity : str
        The store's identity.
    token : str
        The :func:`process_token` of the process that pickled it.
    description : str
        How to name the store in errors (its ``repr``).
    why : str, optional
        Why the store cannot be used in another process, for the error there.
    """
    if token == _token:
        with _registry_lock:
            store = _registry.get(identity)
        if store is not None:
            return store
        reason = "was closed or garbage-collected before the pickle was loaded"
    else:
        reason = (
            f"lives in the memory of another process (pid of this one: {os.getpid()}); "
            f"{why or 'its contents are not shared with worker processes'}"
        )
    return DetachedStore(identity, description, reason)


class DetachedStore(Store):
    """A stand-in for an in-memory store of another process: every use raises.

    It exists so that unpickling succeeds and the error surfaces where the data is
    used, in the task that needs it, with a message that says what to do.
    """

    def __init__(self, identity: str, description: str, reason: str) -> None:
        self._identity = identity
        self.description = description
        self.reason = reason

    @property
    def identity(self) -> str:
        return self._identity

    def __repr__(self) -> str:
        return f"DetachedStore({self.description})"

    def __reduce__(self) -> tuple[Any, ...]:
        return (DetachedStore, (self._identity, self.description, self.reason))

    def _refuse(self, *args: Any, **kwargs: Any) -> NoReturn:
        raise ProcessLocalStoreError(
            f"{self.description} {self.reason} ... Use a folder, a zip file or a URL "
            "(chunkflow.open('data.zarr')), or run on threads (scheduler='threads' or "
            "distributed.Client(processes=False)), where in-memory stores are shared."
        )

    _get = _set = _delete = _contains = _snapshot = _open_ranges = _get_range = _refuse

    def _list_prefix(self, prefix: str) -> Iterator[str]:
        self._refuse()

    def _versions(self, keys: list[str]) -> dict[str, Version | None]:
        self._refuse()
