"""Waiting for something another thread or process does: poll until it holds, with a
deadline, and fail saying what never happened. (Never a bare sleep: a loaded machine
makes any fixed pause too short.)"""

from __future__ import annotations

import time
from collections.abc import Callable

DEADLINE = 30.0  # seconds: generous, since only a failing test waits this long


def wait_until(condition: Callable[[], object], what: str, timeout: float = DEADLINE,
               interval: float = 0.01) -> None:
    """Return as soon as ``condition()`` is true; raise AssertionError naming ``what``
    if it is still false after ``timeout`` seconds.

    Examples
    --------
    >>> calls = iter([False, False, True])
    >>> wait_until(lambda: next(calls), "the third call", interval=0)
    >>> wait_until(lambda: False, "a miracle", timeout=0)
    Traceback (most recent call last):
    ...
    AssertionError: a miracle did not happen within 0 s
    """
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() >= deadline:
            raise AssertionError(f"{what} did not happen within {timeout:g} s")
        time.sleep(interval)
