"""A job's forks of its Icechunk sessions on a dask.distributed cluster: the forked side
of :mod:`chunkflow.graph.transactions`.

Icechunk refuses to pickle a writable session; workers write into forks of it
(``session.fork()``). :class:`Forks` forks each session the job writes, carries the
session's uncommitted node changes into the fork (Icechunk forks only a clean
session), and registers it (:mod:`chunkflow.storage.forks`): stores of the session
then pickle as the fork, and each worker writes into its own copy of it. When the job
ends, the workers hand their copies back and :func:`~chunkflow.graph.merges.merge_forks`
merges them into the session, keeping every document they wrote.

A task sees only what its own worker wrote during the job. A job whose later tasks read
what earlier ones wrote (a pyramid's stages read the level before), or write into a node
made during the job (a label image, created once its count is known), runs in rounds:
:func:`settle` between two rounds merges the workers' copies, and the nodes the client
made in the session meanwhile, into a new base fork, which the next round's tasks start
from. Results of an earlier round that hold a store (pickled as that round's fork) must
not write in a later one: hand the later tasks objects made on the client after
:func:`settle`.

Examples
--------
>>> through_forks()  # no job writes through forks here
False
>>> settle()  # and so nothing to merge
"""

from __future__ import annotations

import contextlib
import contextvars
import pickle
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from chunkflow.errors import TransactionError
from chunkflow.graph.merges import merge_forks

__all__ = ["Forks", "forked", "settle", "through_forks"]

_ACTIVE: contextvars.ContextVar[Forks | None] = contextvars.ContextVar(
    "chunkflow_forks", default=None)


def _named(names: Sequence[str]) -> str:
    return ", ".join(repr(n) for n in names)


def through_forks() -> bool:
    """Whether the job running here writes through forks of an Icechunk session (on a
    cluster): its tasks then see only what their own worker wrote, until :func:`settle`."""
    return _ACTIVE.get() is not None


def settle() -> None:
    """Between two rounds of a job whose later tasks read what earlier ones wrote: merge
    what the workers wrote so far, and the nodes the client made in the session since
    the last round, into the base fork the next round starts from. Nothing when the job
    writes into its session itself (threads)."""
    forks = _ACTIVE.get()
    if forks is not None:
        forks.settle()


@dataclass
class _Fork:
    """One session's forks: the first (the carried changes only, what a failed job puts
    back) and the current base the workers' copies start from, registered as ``fork_id``."""

    session: Any
    names: list[str]
    first: Any
    base: Any
    fork_id: str


class Forks:
    """The forks of a job's sessions on ``client`` (see the module)."""

    def __init__(self, sessions: list[tuple[Any, list[str]]], client: Any, what: str) -> None:
        from chunkflow.storage.forks import start_fork

        self.client = client
        self.what = what
        prepared = [(session, names, _carried(session, names, what))
                    for session, names in sessions]
        self.forks = []
        for session, names, carried in prepared:
            fork = session.fork()
            _replay(fork, carried)
            self.forks.append(_Fork(session, names, fork, fork, start_fork(session, fork)))
        self.workers = set(client.scheduler_info()["workers"])

    def _returned(self, fork: _Fork) -> tuple[list[Any], set[str]]:
        """The workers' copies of ``fork`` (forgotten everywhere), and the workers lost."""
        from chunkflow.storage.forks import end_fork, forget_fork, take_forks

        end_fork(fork.fork_id)
        returned = self.client.run(take_forks, fork.fork_id)
        with contextlib.suppress(Exception):  # the scheduler keeps a copy if it unpickled one
            self.client.run_on_scheduler(take_forks, fork.fork_id)
        forget_fork(fork.fork_id)
        copies = [copy for copies in returned.values() for copy in copies]
        return copies, self.workers - set(returned)

    def _refuse_lost(self, fork: _Fork, lost: set[str]) -> None:
        raise TransactionError(
            f"{self.what}: worker(s) {', '.join(sorted(lost))} left the cluster during the "
            f"job, and the writes they held for array(s) {_named(fork.names)} with them. "
            "Nothing was merged into the session; run the job again.")

    def settle(self) -> None:
        """Merge the workers' copies into a new base fork, registered for the next round,
        with the nodes the client made in the session meanwhile (carried over, as at the
        start)."""
        from chunkflow.storage.forks import start_fork

        for fork in self.forks:
            copies, lost = self._returned(fork)
            if lost:
                self._refuse_lost(fork, lost)
            made = _carried(fork.session, fork.names, self.what)
            base = pickle.loads(pickle.dumps(fork.base))  # a copy: `first` stays as it was
            merge_forks(base, fork.base, copies, what=self.what, names=fork.names,
                        merge_base=False)
            _replay(base, made)
            fork.base, fork.fork_id = base, start_fork(fork.session, base)

    def end(self, failed: bool) -> None:
        """Merge everything into the sessions; after a failure (or a lost worker) put back
        only the carried changes: each session as before the job."""
        refused: list[TransactionError] = []
        for fork in self.forks:  # every session, whatever one of them refuses
            copies, lost = self._returned(fork)
            try:
                if failed or lost:
                    fork.session.merge(fork.first)
                    if lost and not failed:
                        self._refuse_lost(fork, lost)
                else:
                    merge_forks(fork.session, fork.base, copies, what=self.what,
                                names=fork.names)
            except TransactionError as error:
                refused.append(error)
        if refused:
            raise refused[0]


@contextlib.contextmanager
def forked(sessions: list[tuple[Any, list[str]]], client: Any, what: str) -> Iterator[None]:
    """Fork each session for the workers; merge the forks back when the body succeeded
    (put the sessions back as they were when it failed)."""
    forks = Forks(sessions, client, what)
    token = _ACTIVE.set(forks)
    failed = True
    try:
        yield
        failed = False
    finally:
        _ACTIVE.reset(token)
        forks.end(failed)


def _carried(session: Any, names: list[str], what: str) -> list[tuple[str, bytes | None]]:
    """The uncommitted node changes of ``session`` that its fork takes over, as
    (prefix, None) for a deleted node and (key, document) for a new or changed one,
    after checking there are no uncommitted chunks; the session is left clean."""
    if not session.has_uncommitted_changes:
        return []
    diff = session.status()
    if diff.updated_chunks:
        raise TransactionError(
            f"{what}: array(s) {_named(names)} are in an Icechunk session with uncommitted "
            f"chunks (in {', '.join(sorted(diff.updated_chunks))}). On a cluster the job "
            "writes through forks of the session, and Icechunk forks only a session "
            "without uncommitted changes: commit them first (session.commit(...), then "
            "repo.writable_session(...) for the job), or run on threads "
            "(scheduler='threads'). Nothing was written.")
    from chunkflow.storage.zarr_store import ZarrStoreAdapter

    def depth(node: str) -> int:
        return node.count("/") - (node == "/")

    deleted = sorted({*diff.deleted_arrays, *diff.deleted_groups}, key=depth)
    # A node deleted with its parent goes with the parent's delete.
    tops = [node for node in deleted
            if not any(node.startswith(other.rstrip("/") + "/") for other in deleted)]
    nodes = sorted({*diff.new_groups, *diff.new_arrays, *diff.updated_groups,
                    *diff.updated_arrays}, key=depth)
    store = ZarrStoreAdapter(session.store)
    carried: list[tuple[str, bytes | None]] = [(node.strip("/"), None) for node in tops]
    for node in nodes:
        key = f"{node.strip('/')}/zarr.json".lstrip("/")
        carried.append((key, store[key]))
    session.discard_changes()
    return carried


def _replay(fork: Any, carried: list[tuple[str, bytes | None]]) -> None:
    """Make the carried node changes in the fork: deletions, then documents (parents
    first)."""
    if not carried:
        return
    from chunkflow.storage.zarr_store import ZarrStoreAdapter

    store = ZarrStoreAdapter(fork.store)
    for key, document in carried:
        if document is None:
            store.delete_prefix(key)
        else:
            store[key] = document
