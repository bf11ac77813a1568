"""A resumable job whose scheduler dies mid-job (issue 21, test 4): the whole
``LocalCluster`` (scheduler and worker processes) is torn down while the job runs; the
job is resumed on a new cluster, recomputes exactly the blocks without a record, and
its output is bit-identical to an uninterrupted run."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from chunkflow.storage import LocalStore
from tests.helpers.faults import ALL_BLOCKS, make_source, names, remaining, run_job, wait_for_calls
from tests.helpers.jobs import calls, clear_calls, data_keys

distributed = pytest.importorskip("distributed")

PAUSE = 0.1  # seconds per block on two one-thread workers: about 1.2 s for the job


def _cluster() -> distributed.LocalCluster:
    return distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                    dashboard_address=":0")


@pytest.mark.slow
def test_scheduler_torn_down_mid_job_resumes_on_a_new_cluster(tmp_path: Path) -> None:
    src = make_source(str(tmp_path / "src.zarr"))
    out, ref = str(tmp_path / "out.zarr"), str(tmp_path / "ref.zarr")
    ref_log, log = tmp_path / "ref-log", tmp_path / "log"
    ref_log.mkdir()
    log.mkdir()
    run_job(src, ref, ref_log, resume=False, pause=PAUSE)

    failure: list[BaseException] = []
    with _cluster() as cluster:
        client = distributed.Client(cluster, set_as_default=False)

        def job() -> None:
            try:
                run_job(src, out, log, pause=PAUSE, scheduler=client)
            except BaseException as err:  # whatever the dying cluster raises
                failure.append(err)

        runner = threading.Thread(target=job)
        runner.start()
        wait_for_calls(log, ALL_BLOCKS // 3)
        client.close()
        cluster.close()  # the scheduler and its workers go, the job with them
        runner.join(60)
    assert not runner.is_alive()
    assert failure, "the job finished before the cluster went down: make it slower"
    computed = len(calls(log))
    todo = remaining(out)
    assert 0 < len(todo) <= ALL_BLOCKS - computed + 2  # two workers had blocks in flight

    clear_calls(log)
    with _cluster() as cluster, distributed.Client(cluster, set_as_default=False) as client:
        run_job(src, out, log, pause=PAUSE, scheduler=client)
    assert calls(log) == names(todo)
    assert data_keys(LocalStore(out)) == data_keys(LocalStore(ref))
