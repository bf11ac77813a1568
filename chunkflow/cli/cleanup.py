"""Commands that write leave nothing half-made: what a failed run created is removed.

:func:`removed_on_failure` notes whether a destination exists before a command writes
it. If the command then fails, a destination the run created is removed (with the
folders the run made above it) and the error says so; a destination that existed
before is never removed. A re-run then starts clean, without ``--overwrite``.

Examples
--------
>>> import tempfile, os
>>> with tempfile.TemporaryDirectory() as tmp:
...     out = os.path.join(tmp, "new", "out.zarr")
...     try:
...         with removed_on_failure(out):
...             os.makedirs(out)
...             raise ValueError("chunk '1.1' is corrupt")
...     except RemovedOutputError as err:
...         print(str(err).replace(tmp, "TMP"), "|", os.listdir(tmp))
ValueError: chunk '1.1' is corrupt; removed the unfinished 'TMP/new' that this run created | []
"""

from __future__ import annotations

import contextlib
import os
import shutil
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, NoReturn

import dask
import dask.threaded

from chunkflow.cli.errors import describe
from chunkflow.config.resources import usable_cores
from chunkflow.errors import RemovedOutputError

__all__ = ["RemovedOutputError", "new_entries_removed_on_failure", "removed_on_failure",
           "waited_for"]


def _is_url(location: str) -> bool:
    return "://" in location or "::" in location


def _created_root(location: str) -> Path | None:
    """The highest missing folder on the way to local ``location`` (what a run that
    writes ``location`` will create), or ``None`` when ``location`` exists."""
    path = Path(location).absolute()
    if os.path.lexists(path):
        return None
    while not os.path.lexists(path.parent) and path.parent != path:
        path = path.parent
    return path


def _url_exists(location: str, storage_options: dict[str, Any] | None) -> bool:
    """Whether anything is at URL ``location``; when that cannot be told (a chained
    URL, no credentials yet...), ``True``: what might have been there is kept, and the
    command itself reports what is wrong with the URL."""
    if "::" in location:
        return True
    import fsspec

    try:
        fs, path = fsspec.core.url_to_fs(location, **(storage_options or {}))
        return bool(fs.exists(path))
    except Exception:  # noqa: BLE001 - see above: keep, and let the command say why
        return True


def _remove_url(location: str, storage_options: dict[str, Any] | None) -> bool:
    """Remove what is at URL ``location``; ``False`` if nothing was (or it could not be
    removed: then the command's own error is what the user needs first)."""
    import fsspec

    try:
        fs, path = fsspec.core.url_to_fs(location, **(storage_options or {}))
        if not fs.exists(path):
            return False
        fs.rm(path, recursive=True)
    except Exception:  # noqa: BLE001 - see above
        return False
    return True


def _remove_local(root: Path) -> bool:
    if not os.path.lexists(root):
        return False
    if root.is_dir() and not root.is_symlink():
        shutil.rmtree(root)
    else:
        root.unlink()
    return True


@contextlib.contextmanager
def waited_for(scheduler: str) -> Iterator[None]:
    """Run a ``threads`` computation in a pool that leaving this block waits for.

    dask's threaded scheduler raises at the first failed task while others still run;
    those could write into a destination after it was removed. (The ``processes``
    scheduler already waits for its pool; other schedulers are left as they are.)
    """
    if scheduler != "threads":
        yield
        return
    # dask's own pool class carries context variables (settings) into the threads.
    executor = getattr(dask.threaded, "ContextAwareThreadPoolExecutor", ThreadPoolExecutor)
    with executor(usable_cores()) as pool, dask.config.set(pool=pool):
        yield


@contextlib.contextmanager
def removed_on_failure(location: str, storage_options: dict[str, Any] | None = None,
                       ) -> Iterator[None]:
    """Remove ``location`` if the block fails and ``location`` did not exist before it.

    A failure becomes a :class:`RemovedOutputError` saying what went wrong and what was
    removed (chained to the original); a failure that removed nothing is re-raised as
    it was. An interrupt (Ctrl-C) also removes what the run created.
    """
    url = _is_url(location)
    root = None if url else _created_root(location)
    existed = _url_exists(location, storage_options) if url else root is None
    try:
        yield
    except BaseException as err:
        if existed:
            raise
        removed = (_remove_url(location, storage_options) if root is None
                   else _remove_local(root))
        if not removed:
            raise
        shown = location if url else str(root)
        _raise_saying(err, f"removed the unfinished {shown!r} that this run created")


def _raise_saying(err: BaseException, removal: str) -> NoReturn:
    """Raise ``err`` again, told with ``removal`` (an interrupt stays an interrupt)."""
    if isinstance(err, KeyboardInterrupt):
        raise KeyboardInterrupt(removal) from err
    if not isinstance(err, Exception):
        raise err
    raise RemovedOutputError(f"{describe(err)}; {removal}") from err


@contextlib.contextmanager
def new_entries_removed_on_failure(folder: Path) -> Iterator[None]:
    """Like :func:`removed_on_failure` for a local ``folder`` that may exist already:
    then only the entries the block added to it are removed, never what was there."""
    if not os.path.lexists(folder):
        with removed_on_failure(str(folder)):
            yield
        return
    before = set(os.listdir(folder))
    try:
        yield
    except BaseException as err:
        new = sorted(set(os.listdir(folder)) - before)
        for name in new:
            _remove_local(folder / name)
        if not new:
            raise
        _raise_saying(err, f"removed what this run had created in {str(folder)!r}: "
                           f"{', '.join(new)}")
