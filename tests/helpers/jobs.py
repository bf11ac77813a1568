"""Helpers of the resumable-job tests: a filter that logs each call and fails (or kills
its process) on request, through files, so that it works in any process and its token
does not change between runs (its arguments are the same folders)."""

from __future__ import annotations

import contextlib
import os
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import dask
import numpy as np

from chunkflow.storage import Store


def block_name(index: tuple[int, ...]) -> str:
    return "-".join(str(i) for i in index) or "scalar"


def logged_filter(window: np.ndarray, *, log: str, block_info: dict[str, Any]) -> np.ndarray:
    """``window * 3 + 1``; logs the block in ``log/calls``; raises where ``log/fail-<b>``
    exists, and kills its own process where ``log/kill-<b>`` exists (the first time)."""
    name = block_name(block_info["block_index"])
    folder = Path(log)
    if (folder / f"fail-{name}").exists():
        raise RuntimeError(f"injected failure at block {name}")
    kill = folder / f"kill-{name}"
    if kill.exists():
        kill.unlink()
        os._exit(1)  # a worker dying mid-task, as the OOM killer does it
    (folder / "calls").mkdir(exist_ok=True)
    (folder / "calls" / f"{name}.{uuid.uuid4().hex}").touch()
    return window * 3 + 1


def calls(log: str | Path) -> list[str]:
    """The blocks ``logged_filter`` computed (one entry per call), sorted."""
    folder = Path(log) / "calls"
    return sorted(p.name.partition(".")[0] for p in folder.iterdir()) if folder.exists() else []


def clear_calls(log: str | Path) -> None:
    for p in (Path(log) / "calls").glob("*"):
        p.unlink()


def data_keys(store: Store, prefix: str = "") -> dict[str, bytes]:
    """Every key below ``prefix`` and its bytes (records included)."""
    keys = sorted(store.list_prefix(prefix))
    return {key: store[key] for key in keys}


def logged_block(block: np.ndarray, log: str, block_info: dict | None = None) -> np.ndarray:
    """For ``dask.array.map_blocks``: ``block * 3 + 1``, logged and failing like
    :func:`logged_filter` (by the block's location in the dask array)."""
    if not block_info:  # dask's meta probe while building the graph: no block
        return block * 3 + 1
    index = tuple(block_info[0]["chunk-location"])
    return logged_filter(block, log=log, block_info={"block_index": index})


@contextlib.contextmanager
def settled_thread_pool(workers: int = 2) -> Iterator[ThreadPoolExecutor]:
    """dask's ``"threads"`` scheduler on a pool of its own, shut down on exit.

    dask raises at a task's first error, but the tasks it already handed to its pool
    still run (and write, and record themselves). Leaving the block waits for each of
    them to end, so what they left is all there to inspect.
    """
    pool = ThreadPoolExecutor(workers, thread_name_prefix="settled")
    try:
        with dask.config.set(pool=pool):
            yield pool
    finally:
        pool.shutdown(wait=True)
