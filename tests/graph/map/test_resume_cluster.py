"""Resumable jobs where they matter: a worker killed mid-job on a LocalCluster of
processes, and outputs on object storage (a local moto S3 server)."""

from __future__ import annotations

import uuid
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import chunkflow
from chunkflow.errors import IncompleteJobWarning
from chunkflow.jobs import RECORDS_FOLDER, job_status
from chunkflow.storage import FsspecStore, LocalStore
from tests.helpers.jobs import calls, clear_calls, data_keys, logged_filter, settled_thread_pool

# Tests open unfinished outputs on purpose; the warning itself is tested in
# tests/graph/map/test_resume.py.
pytestmark = pytest.mark.filterwarnings("ignore::chunkflow.errors.IncompleteJobWarning")

SHAPE, CHUNKS = (40, 30), (10, 10)  # 12 blocks
ALL_BLOCKS = 12


def _source(folder: Path) -> str:
    path = str(folder / "src.zarr")
    image = np.random.default_rng(2).random(SHAPE).astype("f4")
    chunkflow.array(image, chunks=CHUNKS, store=path)
    return path


def _run(src: str, out: Any, log: Path, **kwargs: Any) -> chunkflow.Array:
    return chunkflow.map_chunks(logged_filter, src, out=out, blocks=(1, 1), blocks_per_task=1,
                                block_info=True, log=str(log), **kwargs)


@pytest.mark.slow
def test_a_killed_worker_does_not_stop_the_job(tmp_path: Path) -> None:
    """Issue 21, test 3: a worker process dies mid-task (``os._exit``, as the OOM killer
    does); the nanny restarts it, the scheduler reruns its task, the job finishes on its
    own and exactly; the records are gone."""
    import distributed

    src = _source(tmp_path)
    log = tmp_path / "log"
    log.mkdir()
    reference = str(tmp_path / "ref.zarr")
    _run(src, reference, log, scheduler="sync")
    clear_calls(log)
    (log / "kill-2-1").touch()
    out = str(tmp_path / "out.zarr")
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=":0") as cluster, \
            distributed.Client(cluster, set_as_default=False) as client:
        _run(src, out, log, resume=True, scheduler=client)
    assert not (log / "kill-2-1").exists()  # the worker did die
    assert data_keys(LocalStore(out)) == data_keys(LocalStore(reference))


@pytest.mark.s3
def test_resume_on_s3(tmp_path: Path, s3_server: dict[str, Any]) -> None:
    src = _source(tmp_path)
    log = tmp_path / "log"
    log.mkdir()
    url = f"s3://chunkflow-test/{uuid.uuid4().hex}/out.zarr"
    store = FsspecStore(url, storage_options=s3_server)
    (log / "fail-3-0").touch()
    # Tasks in dask's thread pool when the error came still land: wait for them.
    with settled_thread_pool(), pytest.raises(RuntimeError, match="injected"):
        _run(src, store, log, resume=True, scheduler="threads")
    records = [k for k in store.list_prefix("") if RECORDS_FOLDER in k]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", IncompleteJobWarning)
        opened = chunkflow.open(url, mode="r", storage_options=s3_server)
    status = job_status(opened)
    assert status is not None and status.done == len(records) > 0
    assert "job incomplete: ? of 12 blocks done" in repr(opened)  # no listing on S3
    (log / "fail-3-0").unlink()
    clear_calls(log)
    _run(src, store, log, resume=True, scheduler="threads")
    assert len(calls(log)) == ALL_BLOCKS - len(records)
    reference = str(tmp_path / "ref.zarr")
    _run(src, reference, log, scheduler="sync")
    assert data_keys(store) == data_keys(LocalStore(reference))
