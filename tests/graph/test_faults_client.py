"""Resumable jobs whose client process is SIGKILLed at random moments (issue 21, test 2).

The job runs in a fresh Python process on two threads; once it has computed a random
number of blocks, plus a random fraction of a block's time (so that the kill lands
before, during or after a chunk write or its record), the process is SIGKILLed. A
resume in another fresh process must recompute exactly the blocks without a record,
and give an output bit-identical to an uninterrupted run, records and mark gone.
"""

from __future__ import annotations

import time
import uuid
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from chunkflow.storage import FsspecStore, LocalStore, Store
from tests.helpers.faults import (
    ALL_BLOCKS,
    finish,
    kill,
    make_source,
    names,
    remaining,
    run_job,
    start_job,
    wait_for_calls,
)
from tests.helpers.jobs import calls, clear_calls, data_keys

PAUSE = 0.08  # seconds per block: two threads take about a second for the job


def _locations(tmp_path: Path, backend: str, s3: dict[str, Any] | None
               ) -> tuple[str, str, str, dict[str, Any] | None]:
    if backend == "folder":
        return (str(tmp_path / "src.zarr"), str(tmp_path / "out.zarr"),
                str(tmp_path / "ref.zarr"), None)
    root = f"s3://chunkflow-test/faults-{uuid.uuid4().hex}"
    return f"{root}/src.zarr", f"{root}/out.zarr", f"{root}/ref.zarr", s3


def _store(url: str, options: dict[str, Any] | None) -> Store:
    return LocalStore(url) if options is None else FsspecStore(url, storage_options=options)


@pytest.mark.parametrize(("backend", "seed"), [
    ("folder", 0), ("folder", 1), pytest.param("folder", 2, marks=pytest.mark.slow),
    pytest.param("s3", 3, marks=pytest.mark.s3),
    pytest.param("s3", 4, marks=[pytest.mark.s3, pytest.mark.slow]),
])
@pytest.mark.slow
def test_client_killed_at_a_random_moment_resumes_exactly(
    tmp_path: Path, request: pytest.FixtureRequest, backend: str, seed: int
) -> None:
    s3 = request.getfixturevalue("s3_server") if backend == "s3" else None
    src, out, ref, options = _locations(tmp_path, backend, s3)
    make_source(src, options)
    ref_log = tmp_path / "ref-log"
    ref_log.mkdir()
    run_job(src, ref, ref_log, resume=False, storage_options=options)
    log = tmp_path / "log"
    log.mkdir()

    rng = np.random.default_rng(seed)
    after = int(rng.integers(2, ALL_BLOCKS - 6))
    proc = start_job(src, out, log, pause=PAUSE, storage_options=options)
    wait_for_calls(log, after, proc=proc)
    time.sleep(float(rng.uniform(0, PAUSE)))
    assert kill(proc) == -9, "the job ended before it was killed: make it slower"
    computed = len(calls(log))
    todo = remaining(out, options)
    # Blocks in flight when the kill came (two threads) may have lost their record.
    assert len(todo) <= ALL_BLOCKS - computed + 2

    clear_calls(log)
    finish(start_job(src, out, log, pause=PAUSE, storage_options=options))  # the same job
    assert calls(log) == names(todo)  # each unrecorded block once, no other block
    assert data_keys(_store(out, options)) == data_keys(_store(ref, options))
