"""Jobs that write into an Icechunk session: on threads straight into the session, on a
cluster through forks of it, merged back when every task succeeded.

Every writer (:func:`chunkflow.store`, :func:`chunkflow.to_chunkflow`,
:func:`chunkflow.map_chunks`, :func:`chunkflow.rechunk`, :func:`chunkflow.pyramid`,
:func:`chunkflow.label`, :func:`chunkflow.segment`; :func:`chunkflow.copy` and
:func:`chunkflow.copy_all`, one job for every array, without ``commit=``) runs its
graph inside :func:`transaction`. When an output lives in a writable Icechunk session
(``out=session.store``, or a chunkflow array opened over one):

- **On threads** (``"threads"``, ``"sync"``, dask's default without a client) the
  tasks write into the session itself, as any write does.
- **On a dask.distributed cluster** Icechunk refuses to pickle a writable session, so
  the job forks it (``session.fork()``, Icechunk's public API); the graph carries the
  fork to the workers (each worker process writes into one copy), and when every task
  succeeded the workers hand their copies back and the session merges them
  (``session.merge(*forks)``). ``scheduler="processes"`` is refused: its processes
  end with the computation, and their forks with them.
- **Every document the tasks wrote comes back.** A task that writes a document (a
  pyramid's ``multiscales``, a label image created once its count is known) writes it
  into its worker's fork, and Icechunk takes a node held by two forks from the fork
  merged last, while every fork holds the nodes carried over: the documents the
  workers wrote are found and written into the session after the merge
  (:mod:`chunkflow.graph.merges`). A job whose tasks read what earlier tasks wrote (a
  pyramid's stages) runs in rounds, the forks merged between two
  (:func:`settle`; :mod:`chunkflow.graph.forked`).
- Icechunk forks only a session without uncommitted changes. Uncommitted node
  changes (the output this job just created, or replaced with ``overwrite=True``;
  attributes) are carried over: the job moves them into the fork, so they come back
  with the merge (and, on failure, are put back as they were). Uncommitted chunks are
  refused before anything runs: commit them first.
- **The commit is the user's**, or the job's with ``commit="message"``: chunkflow
  then commits once, after the merge, rebasing over commits made since the session
  started when they changed other chunks. A conflict (the same chunks or metadata
  changed by another commit) raises :class:`~chunkflow.errors.TransactionConflictError`
  naming the arrays; chunkflow's writes stay in the session, uncommitted.
- **A job that fails leaves nothing committed**: on a cluster nothing is merged (the
  session is as before the job); on threads the tasks that finished wrote into the
  session, uncommitted (``session.discard_changes()`` drops them). ``resume=True``
  records no blocks in an Icechunk session (a record is no Zarr key there, and a
  failed job has nothing merged to continue from): it runs the whole job again.
- With ``compute=False`` a writer returns its graph, which runs outside it: on threads
  it writes into the session; on a cluster its tasks cannot reach the session
  (:class:`~chunkflow.errors.ProcessLocalStoreError`, as Icechunk refuses to pickle a
  writable session); let the writer compute there.

Examples
--------
>>> import chunkflow
>>> z = chunkflow.zeros((4,), chunks=2)
>>> with transaction([z], scheduler="threads", commit=None, what="store") as chosen:
...     chosen
'threads'
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from typing import Any

import dask

from chunkflow.errors import TransactionConflictError, TransactionError
from chunkflow.graph.forked import forked, settle, through_forks
from chunkflow.graph.scheduler import SchedulerLike, scheduler_choice
from chunkflow.storage import Store

__all__ = ["check_commit", "refuse_deferred_commit", "settle", "through_forks", "transaction"]


def _store_of(output: Any) -> Store | None:
    if isinstance(output, Store):
        return output
    store = getattr(output, "store", None)
    return store if isinstance(store, Store) else None


def _sessions(outputs: Sequence[Any]) -> list[tuple[Any, list[str]]]:
    """The writable Icechunk sessions the outputs live in, each with its arrays' paths."""
    found: list[tuple[Any, list[str]]] = []
    for output in outputs:
        store = _store_of(output)
        if store is None or not store.transactional:
            continue
        from chunkflow.storage.zarr_store import ZarrStoreAdapter
        from chunkflow.storage.zarr_traits import session_of

        session = session_of(store.store) if isinstance(store, ZarrStoreAdapter) else None
        if session is None or session.read_only:
            continue
        name = getattr(output, "path", None) or "/"
        for known, names in found:
            if known == session:
                names.append(name)
                break
        else:
            found.append((session, [name]))
    return found


def _refuse_commit(commit: str, what: str) -> None:
    raise TransactionError(
        f"{what}: commit={commit!r} commits an Icechunk session, but no output is in a "
        "writable Icechunk session; commit what you write elsewhere yourself. Nothing was "
        "written.")


def refuse_deferred_commit(commit: str | None, compute: bool, what: str) -> None:
    """Refuse ``commit=`` with ``compute=False``: the lazy result is computed later, by
    the caller, so no commit could follow it here (it would be dropped without a word).

    >>> refuse_deferred_commit("message", False, "store")
    Traceback (most recent call last):
    ...
    chunkflow.errors.TransactionError: store: commit='message' with compute=False: ...
    """
    if commit is not None and not compute:
        raise TransactionError(
            f"{what}: commit={commit!r} with compute=False: the lazy result writes when you "
            "compute it, after this call returns, so commit the session yourself then "
            "(session.commit(...)), or pass compute=True. Nothing was written.")


def check_commit(out: Any, commit: str | None, what: str) -> None:
    """Refuse ``commit=`` for an output location in no writable Icechunk session, before
    a writer creates anything there.

    ``out`` is what the writer was given: an array, a chunkflow store, a zarr-python
    store, a path or a URL.

    Examples
    --------
    >>> check_commit("data/out.zarr", None, "rechunk")
    >>> check_commit("data/out.zarr", "message", "rechunk")
    Traceback (most recent call last):
    ...
    chunkflow.errors.TransactionError: rechunk: commit='message' commits an Icechunk session, ...
    """
    if commit is None or _sessions([out]):
        return
    session: Any = getattr(out, "session", None)  # a zarr-python store of a session
    if callable(getattr(session, "commit", None)) and not session.read_only:
        return
    _refuse_commit(commit, what)


def _named(names: Sequence[str]) -> str:
    return ", ".join(repr(n) for n in names)


@contextlib.contextmanager
def transaction(outputs: Sequence[Any], *, scheduler: SchedulerLike, commit: str | None,
                what: str) -> Iterator[SchedulerLike]:
    """Run the job inside: yields the scheduler to compute on (a client connected for a
    scheduler address); see the module documentation.

    Parameters
    ----------
    outputs
        The arrays (or stores) the job writes.
    scheduler
        The job's ``scheduler=``.
    commit : str, optional
        Commit the outputs' sessions with this message once the job succeeded.
    what
        The writer, for messages ("map_chunks").

    Raises
    ------
    TransactionError
        ``commit`` for outputs in no Icechunk session; a session with uncommitted chunks;
        ``scheduler="processes"``; a worker lost during the job (nothing merged).
    TransactionConflictError
        The commit conflicted with another commit of the branch.
    """
    sessions = _sessions(outputs)
    if commit is not None and not sessions:
        _refuse_commit(commit, what)
    if not sessions:
        yield scheduler
        return
    choice, client = scheduler_choice(scheduler)
    if choice == "address":
        from distributed import Client

        with Client(client) as connected, forked(sessions, connected, what):
            yield connected
    elif client is not None:
        with forked(sessions, client, what):
            yield client
    else:
        _check_local(choice or dask.config.get("scheduler", None), sessions, what)
        yield scheduler  # the tasks write into the session itself
    if commit is not None:
        for session, names in sessions:
            _commit(session, commit, names, what)


def _check_local(choice: Any, sessions: list[tuple[Any, list[str]]], what: str) -> None:
    if choice in ("processes", "multiprocessing"):
        names = [n for _, found in sessions for n in found]
        raise TransactionError(
            f"{what}: array(s) {_named(names)} are in an Icechunk session, and "
            "scheduler='processes' cannot write there: its processes end with the "
            "computation, and the forks of the session they wrote with them. Use "
            "scheduler='threads' or a dask.distributed cluster. Nothing was written.")


def _commit(session: Any, message: str, names: list[str], what: str) -> None:
    """Commit ``session``, rebasing over other commits that changed other things."""
    import icechunk

    try:
        session.commit(message, rebase_with=icechunk.ConflictDetector())
    except (icechunk.ConflictError, icechunk.RebaseFailedError) as error:
        raise TransactionConflictError(
            f"{what}: commit {message!r} of array(s) {_named(names)} on branch "
            f"{session.branch!r} conflicts with a commit made since this session started "
            f"(the same chunks or metadata changed: {error}). The job's writes are in the "
            "session, uncommitted. Keep the other commit and run the job again from a new "
            "session (repo.writable_session(...)), or rebase this one with a conflict "
            "solver (session.rebase(icechunk.BasicConflictSolver(...))) and commit it."
        ) from error
