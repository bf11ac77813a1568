"""Run dask collections on the scheduler a user names, with an optional progress bar.

Every chunkflow function that computes takes ``scheduler=`` and ``progress=`` and
hands them to :func:`compute`:

``scheduler``
    ``None`` (dask's defaults: the ``scheduler`` setting, else an active
    ``distributed.Client``, else threads), ``"threads"``, ``"processes"``,
    ``"sync"``, a ``distributed.Client``, or the address of a running dask scheduler
    (``"tcp://host:8786"``), to which a client is connected for this call.
``progress``
    ``False``; ``True`` for a bar (distributed's progress bar on a cluster; otherwise a
    tqdm bar counting the output blocks of chunkflow's layers when tqdm is installed,
    else dask's ``ProgressBar``); or a callable ``progress(done, total)``.

Examples
--------
>>> import dask.array as da
>>> seen = []
>>> compute(da.ones(10, chunks=5).sum(), scheduler="sync",
...         progress=lambda done, total: seen.append((done, total)))
(np.float64(10.0),)
>>> seen[-1]
(4, 4)
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Callable, Iterator, Mapping
from importlib.util import find_spec
from typing import TYPE_CHECKING, Any, TypeAlias

import dask
from dask.callbacks import Callback

from chunkflow.config.resources import usable_cores
from chunkflow.errors import InvalidArgumentError

if TYPE_CHECKING:
    from distributed import Client

__all__ = [
    "BlockProgress", "SchedulerLike", "active_client", "compute", "deferred_scheduler",
    "local_scheduler", "local_threads",
    "scheduler_choice", "tasks_per_process", "worker_threads",
]

#: What every ``scheduler=`` argument accepts (see :func:`scheduler_choice`): ``None``
#: (dask's current scheduler), a local scheduler name (``"threads"``, ``"processes"``,
#: ``"sync"``), a ``distributed.Client`` or a scheduler address (``"tcp://host:port"``).
SchedulerLike: TypeAlias = "str | Client | None"

# Names of the layers whose tasks are "output blocks": one task reads, writes or maps
# one block. Progress counts these when a graph has them, and every task otherwise.
BLOCK_PREFIXES = ("chunkflow-read-", "chunkflow-map-", "chunkflow-store-", "chunkflow-rechunk-",
                  "chunkflow-label-", "chunkflow-measure-")
# Keys of the data a block task reads (the array, a map plan).
DATA_PREFIXES = ("chunkflow-array-", "chunkflow-job-")
_LOCAL_SCHEDULERS = {
    "threads": "threads", "threading": "threads",
    "processes": "processes", "multiprocessing": "processes",
    "sync": "sync", "synchronous": "sync", "single-threaded": "sync",
}

ProgressArg = bool | Callable[[int, int], Any]


def _key_name(key: Any) -> str:
    return str(key[0] if isinstance(key, tuple) else key)


def _is_block(key: Any) -> bool:
    return _key_name(key).startswith(BLOCK_PREFIXES)


class BlockProgress(Callback):
    """A dask callback that counts finished output blocks and reports them.

    Parameters
    ----------
    report : callable
        Called as ``report(done, total)`` after each counted task and once at the
        start with ``done == 0``.

    Examples
    --------
    >>> import dask.array as da
    >>> counts = []
    >>> with BlockProgress(lambda done, total: counts.append(done)):
    ...     _ = da.ones(4, chunks=1).sum().compute(scheduler="sync")
    >>> counts[0], counts[-1]
    (0, 6)
    """

    def __init__(self, report: Callable[[int, int], Any]) -> None:
        super().__init__()
        self.report = report
        self.done = 0
        self.total = 0
        self._counted: Callable[[Any], bool] = _is_block

    def _start_state(self, dsk: Mapping[Any, Any], state: dict[str, Any]) -> None:
        # dask fuses a read layer with what follows it (read + per-block sum), and the
        # fused task takes the later name; it still depends on the array's key.
        dependencies = state.get("dependencies", {})
        blocks = {
            key for key in dsk
            if _is_block(key) or any(_key_name(d).startswith(DATA_PREFIXES)
                                     for d in dependencies.get(key, ()))
        }
        running = set(state.get("ready", ())) | set(state.get("waiting", ()))
        # A graph without chunkflow block layers (a plain dask array): count tasks.
        self._counted = blocks.__contains__ if blocks else running.__contains__
        self.total = len(blocks) if blocks else len(running)
        self.done = 0
        self.report(0, self.total)

    def _posttask(self, key: Any, result: Any, dsk: Any, state: Any, worker_id: Any) -> None:
        if self._counted(key):
            self.done += 1
            self.report(self.done, self.total)


def _widgets_available() -> bool:
    """Whether ipywidgets can be imported (what tqdm's Jupyter bar needs)."""
    try:
        return find_spec("ipywidgets") is not None
    except (ImportError, ValueError):  # ValueError: blocked with sys.modules[name] = None
        return False


@contextlib.contextmanager
def _tqdm_bar() -> Iterator[None]:
    """A tqdm bar (a widget in Jupyter, text in a terminal) fed by a BlockProgress.

    tqdm.auto picks the widget in Jupyter, which needs ipywidgets: without it tqdm warns
    ("IProgress not found") on every bar, so the text bar is used instead, quietly.
    """
    from tqdm.std import tqdm as text_bar

    bar_class: Any = text_bar
    if _widgets_available():
        from tqdm.auto import tqdm as bar_class

    bar = bar_class(total=0, unit="block", desc="chunkflow", file=sys.stderr)

    def report(done: int, total: int) -> None:
        if bar.total != total:
            bar.total = total
            bar.refresh()
        bar.update(done - bar.n)

    try:
        with BlockProgress(report):
            yield
    finally:
        bar.close()


def _local_progress(progress: ProgressArg) -> contextlib.AbstractContextManager[Any]:
    if progress is False or progress is None:
        return contextlib.nullcontext()
    if callable(progress):
        return BlockProgress(progress)
    try:
        import tqdm  # noqa: F401
    except ImportError:
        from dask.diagnostics import ProgressBar

        return ProgressBar()
    return _tqdm_bar()


def _distributed_progress(futures: list[Any], progress: ProgressArg, address: str) -> None:
    """Show (or report) the progress of ``futures`` (on a terminal: until they finish)."""
    from distributed.diagnostics.progressbar import TextProgressBar
    from distributed.diagnostics.progressbar import progress as show

    if callable(progress):
        report = progress  # narrowed: the class body below does not see the check

        class _Reporting(TextProgressBar):
            def _draw_bar(self, remaining: int, all: int, **kwargs: Any) -> None:
                report(all - remaining, all)

            def _draw_stop(self, **kwargs: Any) -> None:
                pass

        _Reporting(futures, scheduler=address)
    else:
        # A widget in a notebook (returns at once), text in a terminal.
        show(futures, scheduler=address)


def scheduler_choice(scheduler: SchedulerLike) -> tuple[Any, Any]:
    """Split ``scheduler`` into (what ``dask.compute`` takes, a distributed client).

    Examples
    --------
    >>> scheduler_choice("threads"), scheduler_choice(None)
    (('threads', None), (None, None))
    >>> scheduler_choice("bogus")  # doctest: +NORMALIZE_WHITESPACE
    Traceback (most recent call last):
    ...
    chunkflow.errors.InvalidArgumentError: scheduler='bogus' is not one of threads, processes, sync, a
    distributed.Client or a scheduler
    address (tcp://host:port)
    """
    if scheduler is None:
        # A default ``Client`` sets dask's ``scheduler`` to "dask.distributed": that
        # client is the choice; any other setting (threads, sync...) is a local one.
        if dask.config.get("scheduler", None) not in (None, "dask.distributed", "distributed"):
            return None, None
        return None, _default_client()
    if isinstance(scheduler, str):
        if scheduler in _LOCAL_SCHEDULERS:
            return _LOCAL_SCHEDULERS[scheduler], None
        if "://" in scheduler or scheduler.rpartition(":")[2].isdigit():
            return "address", scheduler
    elif hasattr(scheduler, "compute") and hasattr(scheduler, "gather"):
        return scheduler, scheduler
    raise InvalidArgumentError(
        f"scheduler={scheduler!r} is not one of threads, processes, sync, a "
        "distributed.Client or a scheduler address (tcp://host:port)"
    )


def _default_client() -> Any:
    # No client can exist before distributed is imported; importing it just to ask
    # costs 0.3 s and about 40 MB in every fresh process (a plain dask user's first
    # to_dask paid both).
    distributed = sys.modules.get("distributed")
    if distributed is None:
        return None
    try:
        return distributed.default_client()
    except ValueError:  # no client is active
        return None


def active_client(scheduler: SchedulerLike = None) -> Any:
    """The distributed client ``scheduler`` names or, by default, the active one.

    ``None`` for a local scheduler or without a client (or a scheduler address, which
    is not a client yet). A default ``Client`` sets dask's ``scheduler`` setting to
    ``"dask.distributed"``; that is the active client too.

    Examples
    --------
    >>> active_client("threads") is None
    True
    """
    client = scheduler_choice(scheduler)[1]
    return None if isinstance(client, str) else client


def worker_threads(scheduler: SchedulerLike = None) -> int:
    """The threads a dask computation started now (on ``scheduler``) would run on.

    The distributed client's threads (all its workers'; by default the active
    client's), 1 for ``"sync"``, else dask's ``num_workers`` setting, else the cores
    this process may use (what dask's threaded scheduler starts).

    Examples
    --------
    >>> worker_threads() >= 1
    True
    >>> with dask.config.set(num_workers=3):
    ...     worker_threads()
    3
    """
    choice, _ = scheduler_choice(scheduler)
    client = active_client(scheduler)
    # An asynchronous client cannot answer here without an event loop: it falls back.
    if client is not None and not client.asynchronous:
        threads = sum(client.nthreads().values())
        if threads:
            return int(threads)
    if (choice or dask.config.get("scheduler", None)) in ("sync", "synchronous",
                                                            "single-threaded"):
        return 1
    configured = dask.config.get("num_workers", None)
    if configured:
        return int(configured)
    return usable_cores()


def tasks_per_process(scheduler: SchedulerLike = None) -> int:
    """Tasks one worker process runs at once: its threads (a cluster's largest worker,
    this machine's threads), 1 for the ``processes`` and ``sync`` schedulers.

    Examples
    --------
    >>> tasks_per_process("processes"), tasks_per_process("sync")
    (1, 1)
    """
    client = active_client(scheduler)
    if client is not None and not client.asynchronous:
        threads = client.nthreads().values()
        return max(threads, default=1)
    choice, _ = scheduler_choice(scheduler)
    local = choice if choice is not None else dask.config.get("scheduler", None)
    if local in ("processes", "multiprocessing"):
        return 1
    return worker_threads(scheduler)


def deferred_scheduler(scheduler: SchedulerLike) -> str:
    """What a deferred job of several passes (a quantile; a histogram that finds its
    range first) runs its passes on, inside the one task that runs it when computed.

    A local scheduler named by the call is kept; anything else (a client, an address,
    the default) becomes this process's threads: a task must not wait on the cluster
    that runs it.

    Examples
    --------
    >>> deferred_scheduler("sync"), deferred_scheduler(None)
    ('sync', 'threads')
    """
    if isinstance(scheduler, str) and scheduler in _LOCAL_SCHEDULERS:
        return _LOCAL_SCHEDULERS[scheduler]
    return "threads"


def local_scheduler(scheduler: SchedulerLike = None) -> bool:
    """Whether ``scheduler`` runs tasks in this machine's dask schedulers (threads,
    processes, sync) rather than on a distributed cluster (a client, an address, the
    active client by default).

    Examples
    --------
    >>> local_scheduler("threads"), local_scheduler("tcp://127.0.0.1:8786")
    (True, False)
    """
    return scheduler_choice(scheduler)[1] is None


def local_threads(scheduler: SchedulerLike = None) -> bool:
    """Whether ``scheduler`` runs tasks on this process's threads (dask's threaded
    scheduler, whose thread count a computation may lower with ``num_workers``)."""
    if active_client(scheduler) is not None or scheduler_choice(scheduler)[1] is not None:
        return False
    choice = scheduler_choice(scheduler)[0] or dask.config.get("scheduler", None)
    return choice in (None, "threads", "threading")


def compute(
    *collections: Any,
    scheduler: SchedulerLike = None,
    progress: ProgressArg = False,
    **kwargs: Any,
) -> tuple[Any, ...]:
    """``dask.compute(*collections)`` on the chosen scheduler, with progress.

    Parameters
    ----------
    *collections
        Dask collections (arrays, delayed objects).
    scheduler, progress
        See the module documentation.
    **kwargs
        Passed to ``dask.compute`` (or ``Client.compute``).

    Returns
    -------
    tuple
        One result per collection.
    """
    dask_scheduler, client = scheduler_choice(scheduler)
    if dask_scheduler == "address":
        from distributed import Client

        with Client(client) as connected:
            return compute(*collections, scheduler=connected, progress=progress, **kwargs)
    if client is not None:
        futures = client.compute(list(collections), **kwargs)
        if progress:
            _distributed_progress(futures, progress, client.scheduler.address)
        return tuple(client.gather(futures))
    with _local_progress(progress):
        return dask.compute(*collections, scheduler=dask_scheduler, **kwargs)
