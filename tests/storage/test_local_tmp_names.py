"""Temporary file names of LocalStore writes: unique across threads and forked processes."""

from __future__ import annotations

import multiprocessing
import os
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from chunkflow.storage import atomic_files as local
from chunkflow.storage.local import LocalStore


def _child_token(queue: multiprocessing.Queue) -> None:  # type: ignore[type-arg]
    queue.put((local._tmp_token, next(local._tmp_counter)))


@pytest.mark.skipif(sys.platform == "win32" or not hasattr(os, "register_at_fork"),
                    reason="needs fork")
def test_a_forked_child_draws_its_own_token() -> None:
    next(local._tmp_counter)  # the parent has written: its counter moved on
    context = multiprocessing.get_context("fork")
    queue = context.Queue()
    child = context.Process(target=_child_token, args=(queue,))
    child.start()
    token, count = queue.get(timeout=30)
    child.join(timeout=30)
    # Same token and counter in both would give both processes the same next name.
    assert token != local._tmp_token and count == 0


def test_threads_writing_one_key_never_share_a_temporary_name(tmp_path: Path) -> None:
    store = LocalStore(tmp_path)
    values = [bytes([i]) * 1000 for i in range(64)]
    with ThreadPoolExecutor(8) as pool:
        list(pool.map(lambda value: store.__setitem__("c/0", value), values))
    assert store["c/0"] in values
    assert os.listdir(tmp_path / "c") == ["0"]  # every temporary file was renamed
