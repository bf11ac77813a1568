"""One pool of worker processes for the differential tests that run on ``processes``.

dask's ``processes`` scheduler starts a new pool for every computation otherwise
(seconds each with ``spawn``); one pool, started when first asked for and shut down at
exit, serves every module.
"""

from __future__ import annotations

import atexit
import multiprocessing
from concurrent.futures import ProcessPoolExecutor

_POOL: list[ProcessPoolExecutor] = []


def process_pool() -> ProcessPoolExecutor:
    """The shared pool of two worker processes (for ``dask.config.set(pool=...)``)."""
    if not _POOL:
        _POOL.append(ProcessPoolExecutor(2, mp_context=multiprocessing.get_context("spawn")))
        atexit.register(_POOL[0].shutdown)
    return _POOL[0]
