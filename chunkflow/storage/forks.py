"""Forks of Icechunk sessions that dask workers write into: the storage side of
:mod:`chunkflow.graph.transactions`.

Icechunk refuses to pickle a writable session; its workers are meant to write into
*forks* (``session.fork()``), which travel, and which the session merges back. While a
job runs on a cluster, :func:`start_fork` registers the fork of the job's session in
the process that runs the job; an adapter over a store of that session then pickles
as the fork (:func:`fork_for`), so the graph carries the fork to the workers.

Each process keeps one copy of each fork (:func:`worker_fork`): every task of a worker
writes into the same fork, and :func:`take_forks` hands it back (and forgets it) when
the job ends, for the merge. Forks are keyed by a random id, so two jobs never share
one.

Examples
--------
>>> worker_fork("no-job", lambda: "a fork store")
'a fork store'
>>> worker_fork("no-job", lambda: "another")  # one copy per process
'a fork store'
>>> forget_fork("no-job")
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Callable
from typing import Any

__all__ = ["end_fork", "forget_fork", "fork_for", "is_ended", "start_fork", "take_forks",
           "worker_fork"]

_lock = threading.Lock()
# In the process that runs a job: fork id -> (the job's session, its fork's store).
_jobs: dict[str, tuple[Any, Any]] = {}
# In every process that unpickled a fork: fork id -> the fork's store written here.
_copies: dict[str, Any] = {}
# The forks this process handed back (ids are random: a set that grows by one a round).
_ended: set[str] = set()


def start_fork(session: Any, fork: Any) -> str:
    """Register ``fork`` (of ``session``) as what stores of ``session`` pickle as;
    returns the fork's id."""
    fork_id = uuid.uuid4().hex
    with _lock:
        _jobs[fork_id] = (session, fork.store)
    return fork_id


def end_fork(fork_id: str) -> None:
    """Stores of the fork's session pickle as themselves again (they refuse)."""
    with _lock:
        _jobs.pop(fork_id, None)


def fork_for(session: Any) -> tuple[str, Any] | None:
    """The id and store of the fork registered for ``session`` (an Icechunk session,
    compared as Icechunk compares them), or ``None``."""
    with _lock:
        registered = list(_jobs.items())
    for fork_id, (owner, store) in registered:
        if owner == session:
            return fork_id, store
    return None


def worker_fork(fork_id: str, load: Callable[[], Any]) -> Any:
    """This process's copy of the fork ``fork_id``: loaded (``load()``) the first time,
    the same object after that. A fork handed back already (:func:`is_ended`) is
    loaded each time and kept nowhere: nothing written there would be merged."""
    with _lock:
        found = _copies.get(fork_id)
        ended = fork_id in _ended
    if found is not None:
        return found
    loaded = load()
    if ended:
        return loaded
    with _lock:
        return _copies.setdefault(fork_id, loaded)


def is_ended(fork_id: str) -> bool:
    """Whether this process handed its copy of ``fork_id`` back (the job merged it, or
    went on to another round): a store of it still reads, and writes no more."""
    with _lock:
        return fork_id in _ended


def take_forks(fork_id: str) -> list[Any]:
    """The sessions of this process's copy of the fork (none, or one), forgotten here:
    what a worker hands back for the merge."""
    with _lock:
        store = _copies.pop(fork_id, None)
        _ended.add(fork_id)
    return [] if store is None else [store.session]


def forget_fork(fork_id: str) -> None:
    """Drop this process's copy of the fork (a failed job: nothing is merged)."""
    with _lock:
        _copies.pop(fork_id, None)
