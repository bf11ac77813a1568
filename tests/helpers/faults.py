"""Helpers of the fault tests: a slow logged filter, a job run in a fresh Python
process that can be SIGKILLed once it has computed some blocks, and the job's state."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import warnings
from pathlib import Path
from typing import Any

import numpy as np

import chunkflow
from chunkflow.errors import IncompleteJobWarning
from chunkflow.jobs import job_status
from tests.helpers.jobs import calls, logged_filter

ROOT = Path(__file__).resolve().parents[2]
SHAPE, CHUNKS = (48, 40), (8, 10)  # 6 x 4 = 24 blocks of one chunk
ALL_BLOCKS = 24


def slow_filter(window: np.ndarray, *, log: str, pause: float,
                block_info: dict[str, Any]) -> np.ndarray:
    """:func:`logged_filter` after ``pause`` seconds, so that a job lasts long enough
    to be killed in the middle."""
    time.sleep(pause)
    return logged_filter(window, log=log, block_info=block_info)


def make_source(url: str, storage_options: dict[str, Any] | None = None) -> str:
    image = np.random.default_rng(1).integers(0, 1000, SHAPE).astype("f4")
    chunkflow.array(image, chunks=CHUNKS, store=url, storage_options=storage_options)
    return url


def run_job(src: str, out: str, log: Path, *, pause: float = 0.0, resume: bool = True,
            storage_options: dict[str, Any] | None = None, **kwargs: Any) -> Any:
    """The fault tests' job: ``slow_filter`` over ``src`` into ``out``, one chunk a block."""
    kwargs.setdefault("scheduler", "threads")
    return chunkflow.map_chunks(slow_filter, src, out=out, blocks=(1, 1), blocks_per_task=1, block_info=True,
                                log=str(log), pause=pause, resume=resume,
                                storage_options=storage_options, **kwargs)


_SCRIPT = """
import json, sys
import dask
from tests.helpers.faults import run_job
args = json.loads(sys.argv[1])
with dask.config.set(num_workers=2):
    run_job(args["src"], args["out"], args["log"], pause=args["pause"],
            storage_options=args["storage_options"])
"""


def start_job(src: str, out: str, log: Path, *, pause: float,
              storage_options: dict[str, Any] | None = None) -> subprocess.Popen[bytes]:
    """The job in a fresh Python process (two threads, ``resume=True``)."""
    args = {"src": src, "out": out, "log": str(log), "pause": pause,
            "storage_options": storage_options}
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.Popen([sys.executable, "-c", _SCRIPT, json.dumps(args)], cwd=ROOT,
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def wait_for_calls(log: Path, n: int, timeout: float = 60.0,
                   proc: subprocess.Popen[bytes] | None = None) -> None:
    """Wait until the job has computed ``n`` blocks (or its process ended)."""
    deadline = time.monotonic() + timeout
    while len(calls(log)) < n:
        if proc is not None and proc.poll() is not None:
            return
        if time.monotonic() > deadline:
            raise TimeoutError(f"the job computed {len(calls(log))} blocks, not {n}, "
                               f"within {timeout} s")
        time.sleep(0.002)


def kill(proc: subprocess.Popen[bytes]) -> int:
    """SIGKILL ``proc`` (no cleanup of any kind runs) and reap it; its return code."""
    proc.send_signal(signal.SIGKILL)
    proc.communicate(timeout=30)
    return proc.returncode


def finish(proc: subprocess.Popen[bytes]) -> None:
    """Wait for ``proc``, raising with its stderr if it failed."""
    _, err = proc.communicate(timeout=120)
    if proc.returncode != 0:
        raise AssertionError(f"the job process failed ({proc.returncode}):\n{err.decode()}")


def remaining(out: str, storage_options: dict[str, Any] | None = None) -> list[tuple[int, ...]]:
    """The blocks a resume of ``out``'s job must compute (all of them if there is no
    job mark: the job had not started, or its output not been created)."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", IncompleteJobWarning)
            array = chunkflow.open(out, mode="r", storage_options=storage_options, cache=False)
    except FileNotFoundError:
        return [(i, j) for i in range(6) for j in range(4)]
    status = job_status(array)
    if status is None:
        return [(i, j) for i in range(6) for j in range(4)]
    return [tuple(index) for index in status.remaining]


def names(blocks: list[tuple[int, ...]]) -> list[str]:
    return sorted("-".join(map(str, index)) for index in blocks)
