"""Resumable jobs over failing storage (issue 21, tests 5 and 6).

An S3 server (moto, behind :class:`~chunkflow.testing.FaultProxy`) fails 10% of the
reads and writes: with chunkflow's retry defaults the job completes exactly; with
one retry only it fails cleanly, naming the key it lost, and resumes until done.
A disk fills mid-job: a clean error naming the chunk key, no temporary files, then a
resume once there is space again. Each output is compared, bit for bit, with a run
without faults, and each resume recomputes exactly the blocks without a record.
"""

from __future__ import annotations

import errno
import os
import uuid
from pathlib import Path
from typing import Any

import pytest

from chunkflow.errors import StoreRequestError
from chunkflow.storage import FsspecStore, LocalStore
from chunkflow.storage.local import TMP_SUFFIX
from chunkflow.testing import FaultProxy
from tests.helpers.faults import ALL_BLOCKS, make_source, names, remaining, run_job
from tests.helpers.jobs import calls, clear_calls, data_keys

# One retry: about one request in a hundred fails for good.
FEW_RETRIES = {"config_kwargs": {"retries": {"mode": "standard", "total_max_attempts": 2}}}


def _request_error(err: BaseException) -> StoreRequestError | None:
    """The StoreRequestError ``err`` is or was raised from, if any."""
    while err is not None:
        if isinstance(err, StoreRequestError):
            return err
        err = err.__cause__ or err.__context__  # type: ignore[assignment]
    return None


def _s3_job(tmp_path: Path, s3: dict[str, Any]) -> tuple[str, str, dict[str, bytes]]:
    """A source on S3 and the output of the job run on it without faults."""
    root = f"s3://chunkflow-test/faults-{uuid.uuid4().hex}"
    src = make_source(f"{root}/src.zarr", s3)
    (tmp_path / "ref-log").mkdir()
    run_job(src, f"{root}/ref.zarr", tmp_path / "ref-log", resume=False, storage_options=s3)
    return src, f"{root}/out.zarr", data_keys(FsspecStore(f"{root}/ref.zarr", storage_options=s3))


@pytest.mark.slow
@pytest.mark.s3
def test_a_tenth_of_s3_requests_failing_is_retried_to_an_exact_output(
    tmp_path: Path, log: Path, s3_server: dict[str, Any]
) -> None:
    src, out, reference = _s3_job(tmp_path, s3_server)
    with FaultProxy(s3_server["endpoint_url"], fail_share=0.1, seed=7) as proxy:
        options = {**s3_server, "endpoint_url": proxy.url}
        run_job(src, out, log, storage_options=options)
    assert proxy.failures["GET"] > 0 and proxy.failures["PUT"] > 0
    assert calls(log) == names([(i, j) for i in range(6) for j in range(4)])  # each once
    assert data_keys(FsspecStore(out, storage_options=s3_server)) == reference


@pytest.mark.slow
@pytest.mark.s3
def test_with_few_retries_the_job_fails_cleanly_and_resumes_until_done(
    tmp_path: Path, log: Path, s3_server: dict[str, Any]
) -> None:
    src, out, reference = _s3_job(tmp_path, s3_server)
    failures = 0
    with FaultProxy(s3_server["endpoint_url"], fail_share=0.1, faults=["500"],
                    seed=11) as proxy:
        options = {**s3_server, **FEW_RETRIES, "endpoint_url": proxy.url}
        for _ in range(20):
            todo = remaining(out, s3_server)
            clear_calls(log)
            try:
                run_job(src, out, log, storage_options=options, scheduler="sync")
            except Exception as err:
                failures += 1
                failed = _request_error(err)
                assert failed is not None, f"not a clean request error: {err!r}"
                assert "could not" in str(failed) and "key" in str(failed)
                # Only blocks left to do were computed, once; those recorded now are
                # some of them (not the one whose write or record failed).
                computed, after = calls(log), remaining(out, s3_server)
                assert len(set(computed)) == len(computed)
                assert set(computed) <= set(names(todo)) and set(after) <= set(todo)
                assert len(todo) - len(after) <= len(computed)
                continue
            assert calls(log) == names(todo)  # a resume computes what is left, once
            break
        else:
            raise AssertionError("the job never finished")
    assert failures > 0 and proxy.failures["GET"] + proxy.failures["PUT"] >= failures
    assert data_keys(FsspecStore(out, storage_options=s3_server)) == reference


def test_a_full_disk_fails_cleanly_and_resumes_once_space_returns(
    tmp_path: Path, log: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    src = make_source(str(tmp_path / "src.zarr"))
    out, ref = str(tmp_path / "out.zarr"), str(tmp_path / "ref.zarr")
    (tmp_path / "ref-log").mkdir()
    run_job(src, ref, tmp_path / "ref-log", resume=False)

    replace, written = os.replace, [0]

    def filling_disk(*args: Any, **kwargs: Any) -> None:
        # Local writes end with os.replace (write a temporary, then rename it): after
        # 12 of them the disk stays full.
        written[0] += 1
        if written[0] > 12:
            raise OSError(errno.ENOSPC, "No space left on device")
        replace(*args, **kwargs)

    monkeypatch.setattr(os, "replace", filling_disk)
    with pytest.raises(StoreRequestError, match="could not write key") as caught:
        run_job(src, out, log, scheduler="sync")
    monkeypatch.undo()
    assert caught.value.errno == errno.ENOSPC
    assert "chunk key" in "".join(getattr(caught.value, "__notes__", []))
    assert [p for p in Path(out).rglob("*") if p.name.endswith(TMP_SUFFIX)] == []
    todo = remaining(out)
    assert 0 < len(todo) < ALL_BLOCKS

    clear_calls(log)
    run_job(src, out, log, scheduler="threads")
    assert calls(log) == names(todo)
    assert data_keys(LocalStore(out)) == data_keys(LocalStore(ref))
