"""Resumable map_chunks jobs: a failed job resumes where it stopped, bit for bit, on
any scheduler; a different job is refused, naming what changed, and creates nothing."""

from __future__ import annotations

import functools
import math
import threading
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import chunkflow
from chunkflow.errors import (
    ContainsArrayError,
    IncompleteJobWarning,
    JobMismatchError,
    JobTokenError,
)
from chunkflow.jobs import JOB_ATTRIBUTE, RECORDS_FOLDER, job_status
from chunkflow.storage import LocalStore
from tests.helpers.jobs import calls, clear_calls, data_keys, logged_filter, settled_thread_pool
from tests.helpers.waiting import wait_until

# Tests open unfinished outputs on purpose; the warning itself is tested below.
pytestmark = pytest.mark.filterwarnings("ignore::chunkflow.errors.IncompleteJobWarning")

SHAPE, CHUNKS = (48, 40), (8, 10)  # 6 x 4 = 24 blocks of one chunk
ALL_BLOCKS = 24


def _source(folder: Path, zarr_format: int = 3) -> str:
    image = np.random.default_rng(1).integers(0, 1000, SHAPE).astype("f4")
    path = str(folder / "src.zarr")
    chunkflow.array(image, chunks=CHUNKS, store=path, zarr_format=zarr_format)
    return path


def _run(src: str, out: str, log: Path, **kwargs: object) -> chunkflow.Array:
    kwargs.setdefault("scheduler", "sync")
    return chunkflow.map_chunks(logged_filter, src, out=out, blocks=(1, 1), blocks_per_task=1,
                                block_info=True, log=str(log), **kwargs)


def _reference(tmp_path: Path, src: str) -> dict[str, bytes]:
    """The output of the same job run without faults (and without resume)."""
    log = tmp_path / "ref-log"
    log.mkdir()
    _run(src, str(tmp_path / "ref.zarr"), log)
    return data_keys(LocalStore(tmp_path / "ref.zarr"))


@pytest.mark.parametrize("scheduler", ["sync", "threads"])
def test_failed_block_resumes_only_uncommitted_blocks_bit_identical(
        tmp_path: Path, log: Path, scheduler: str) -> None:
    src = _source(tmp_path)
    out = str(tmp_path / "out.zarr")
    (log / "fail-3-2").touch()
    # dask raises at the first error; tasks already handed to its thread pool still
    # run, write and record themselves: the pool's shutdown waits for them to land.
    with settled_thread_pool(), pytest.raises(RuntimeError, match="injected failure") as failure:
        _run(src, out, log, resume=True, scheduler=scheduler)
    # The error names the chunk key of the block and says how to resume.
    assert "chunk key 'c/3/2'" in "".join(failure.value.__notes__)
    assert "resume=True" in "".join(failure.value.__notes__)
    status = job_status(chunkflow.open(out, mode="r"))
    assert status is not None and status.total == ALL_BLOCKS
    committed = ALL_BLOCKS - len(status.remaining)
    assert (3, 2) in status.remaining and committed == status.done

    (log / "fail-3-2").unlink()
    with warnings.catch_warnings():
        warnings.simplefilter("error", IncompleteJobWarning)  # resuming is no surprise
        _run(src, out, log, resume=True, scheduler=scheduler)
    # Every block was computed exactly once over both runs: the resume recomputed
    # exactly the blocks without a record.
    everything = calls(log)
    assert everything == sorted(f"{i}-{j}" for i in range(6) for j in range(4))
    assert len(everything) - committed == len(status.remaining)
    assert data_keys(LocalStore(out)) == _reference(tmp_path, src)  # records and mark gone


def test_resume_true_on_a_finished_output_is_refused_unless_overwrite(
        tmp_path: Path, log: Path) -> None:
    src = _source(tmp_path)
    out = str(tmp_path / "out.zarr")
    _run(src, out, log, resume=True)
    clear_calls(log)
    before = data_keys(LocalStore(out))
    # No mark: nothing to continue, and a finished array is not rewritten unasked.
    with pytest.raises(ContainsArrayError, match="overwrite=True"):
        _run(src, out, log, resume=True)
    assert calls(log) == [] and data_keys(LocalStore(out)) == before
    _run(src, out, log, resume=True, overwrite=True)  # replaced: the job runs again, whole
    assert len(calls(log)) == ALL_BLOCKS
    assert data_keys(LocalStore(out)) == _reference(tmp_path, src)


def test_resume_false_drops_an_unfinished_jobs_records_first(tmp_path: Path, log: Path) -> None:
    src = _source(tmp_path)
    out = str(tmp_path / "out.zarr")
    (log / "fail-0-1").touch()
    with pytest.raises(RuntimeError):
        _run(src, out, log, resume=True)
    # A different job without resume replaces the output: the old records must not
    # survive it.
    chunkflow.map_chunks(np.negative, src, out=out, scheduler="sync", overwrite=True)
    z = chunkflow.open(out, mode="r")
    assert JOB_ATTRIBUTE not in z.attrs
    assert not list(LocalStore(out).list_prefix(RECORDS_FOLDER))


def test_progress_counts_skipped_blocks_as_done(tmp_path: Path, log: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    src = _source(tmp_path)
    for name, fail in (("a.zarr", "fail-0-0"), ("b.zarr", "fail-0-1")):
        (log / fail).touch()
        with pytest.raises(RuntimeError):
            _run(src, str(tmp_path / name), log, resume=True, scheduler="threads")
        (log / fail).unlink()
    done_before = job_status(chunkflow.open(str(tmp_path / "a.zarr"), mode="r")).done
    assert 0 < done_before < ALL_BLOCKS
    capsys.readouterr()
    _run(src, str(tmp_path / "a.zarr"), log, resume=True, progress=True)
    shown = capsys.readouterr().err
    assert f"{done_before} of {ALL_BLOCKS} blocks done before (skipped)" in shown
    assert f"{ALL_BLOCKS}/{ALL_BLOCKS}" in shown  # the bar counts skipped blocks as done
    seen: list[tuple[int, int]] = []
    _run(src, str(tmp_path / "b.zarr"), log, resume=True,
         progress=lambda done, total: seen.append((done, total)))
    assert seen[0] == (0, ALL_BLOCKS) and seen[-1] == (ALL_BLOCKS, ALL_BLOCKS)


# ------------------------------------------------------------------ refusals


def _interrupted(tmp_path: Path, log: Path) -> tuple[str, str, dict[str, bytes]]:
    src = _source(tmp_path)
    out = str(tmp_path / "out.zarr")
    (log / "fail-2-2").touch()
    with pytest.raises(RuntimeError):
        _run(src, out, log, resume=True)
    (log / "fail-2-2").unlink()
    return src, out, data_keys(LocalStore(tmp_path))


def _double(window: np.ndarray, *, log: str, block_info: dict) -> np.ndarray:
    return window * 2


@pytest.mark.parametrize("change,named", [
    (dict(func=_double), "function"),
    (dict(log_suffix="-other"), "arguments"),
    (dict(blocks=(2, 1)), "block plan"),
    (dict(depth=1), "arguments"),
])
def test_a_different_job_is_refused_naming_what_changed_and_writes_nothing(
        tmp_path: Path, log: Path, change: dict, named: str) -> None:
    src, out, before = _interrupted(tmp_path, log)
    func = change.get("func", logged_filter)
    other_log = log.parent / f"log{change.get('log_suffix', '')}"
    other_log.mkdir(exist_ok=True)
    with pytest.raises(JobMismatchError, match=f"differs from this one in: {named}"):
        chunkflow.map_chunks(func, src, out=out, blocks=change.get("blocks", (1, 1)), blocks_per_task=1,
                             depth=change.get("depth", 0), block_info=True,
                             log=str(other_log), resume=True, scheduler="sync")
    assert data_keys(LocalStore(tmp_path)) == before


def test_a_changed_source_is_refused(tmp_path: Path, log: Path) -> None:
    src, out, _ = _interrupted(tmp_path, log)
    source = chunkflow.open(src, mode="r+")
    source[0:8, 0:10] = np.arange(80, dtype="f4").reshape(8, 10)  # a chunk of another size
    before = data_keys(LocalStore(out))
    with pytest.raises(JobMismatchError, match=r"source 0 \('/'\) stored bytes"):
        _run(src, out, log, resume=True)
    assert data_keys(LocalStore(out)) == before


def test_an_untokenizable_function_asks_for_job_name_and_creates_nothing(
        tmp_path: Path) -> None:
    src = _source(tmp_path)
    out = tmp_path / "out.zarr"
    lock = threading.Lock()  # not picklable: no deterministic token

    def locked(window: np.ndarray, guard: object) -> np.ndarray:
        return window + 1

    with pytest.raises(JobTokenError, match="pass job_name="):
        chunkflow.map_chunks(locked, src, out=str(out), guard=lock, resume=True)
    assert not out.exists()
    named = chunkflow.map_chunks(locked, src, out=str(out), guard=lock, resume=True,
                                 job_name="plus one", scheduler="sync")
    assert named[0, 0] == chunkflow.open(src)[0, 0] + 1


def test_job_name_replaces_the_function_token(tmp_path: Path, log: Path) -> None:
    src = _source(tmp_path)
    out = str(tmp_path / "out.zarr")
    (log / "fail-1-1").touch()
    with pytest.raises(RuntimeError):
        _run(src, out, log, resume=True, job_name="triple")
    (log / "fail-1-1").unlink()
    clear_calls(log)
    # A partial is another function object; the name says it is the same job.
    same = functools.partial(logged_filter)
    chunkflow.map_chunks(same, src, out=out, blocks=(1, 1), blocks_per_task=1, block_info=True, log=str(log),
                         resume=True, job_name="triple", scheduler="sync")
    assert len(calls(log)) < ALL_BLOCKS
    with pytest.raises(JobMismatchError, match="job_name"):
        (log / "fail-1-1").touch()
        try:
            # The finished output of "triple" is replaced by the failing job "a".
            _run(src, out, log, resume=True, job_name="a", overwrite=True)
        except RuntimeError:
            pass
        _run(src, out, log, resume=True, job_name="b")


def test_resume_needs_an_output() -> None:
    with pytest.raises(TypeError, match="needs out="):
        chunkflow.map_chunks(np.negative, chunkflow.zeros((4,), chunks=(2,)), resume=True)


# ------------------------------------------------------- the unfinished output


def test_an_unfinished_output_says_so(tmp_path: Path, log: Path) -> None:
    src, out, _ = _interrupted(tmp_path, log)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        z = chunkflow.open(out, mode="r")
        chunkflow.open(out, mode="r")  # once per array, job and process
    assert [w.category for w in caught] == [IncompleteJobWarning]
    status = job_status(z)
    text = f"job incomplete: {status.done} of {ALL_BLOCKS} blocks done"
    assert text in repr(z)
    assert text in z.info["Job"]
    assert 0 < status.done < ALL_BLOCKS
    _run(src, out, log, resume=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        finished = chunkflow.open(out, mode="r")
    assert "job incomplete" not in repr(finished) and "Job" not in finished.info_complete().as_dict()


@pytest.mark.parametrize("zarr_format", [2, 3])
def test_records_are_invisible_to_zarr_tensorstore_and_xarray(tmp_path: Path, log: Path,
                                                              zarr_format: int) -> None:
    import tensorstore as ts
    import xarray as xr
    import zarr

    src = _source(tmp_path, zarr_format)
    root = tmp_path / "out.zarr"
    group = chunkflow.open_group(str(root), mode="w", zarr_format=zarr_format)
    group.create_array("image", shape=SHAPE, chunks=CHUNKS, dtype="f4", fill_value=0,
                       **({"dimension_names": ["y", "x"]} if zarr_format == 3 else {}))
    if zarr_format == 2:
        group["image"].attrs["_ARRAY_DIMENSIONS"] = ["y", "x"]
    (log / "fail-4-1").touch()
    with pytest.raises(RuntimeError):
        chunkflow.map_chunks(logged_filter, src, out=group["image"], blocks=(1, 1),
                             block_info=True, log=str(log), resume=True, scheduler="sync")
    assert list(LocalStore(root).list_prefix(f"image/{RECORDS_FOLDER}"))  # records there
    expected = chunkflow.open(str(root), path="image", mode="r")[:]

    assert (zarr.open_group(str(root), mode="r")["image"][:] == expected).all()
    assert (zarr.open_array(str(root / "image"), mode="r")[:] == expected).all()
    driver = "zarr3" if zarr_format == 3 else "zarr"
    opened = ts.open({"driver": driver, "kvstore": {"driver": "file",
                                                   "path": str(root / "image")}}).result()
    assert (opened.read().result() == expected).all()
    dataset = xr.open_zarr(str(root), consolidated=False, zarr_format=zarr_format,
                           mask_and_scale=False)  # fill_value 0 is data here
    assert list(dataset.data_vars) == ["image"]
    assert (dataset["image"].values == expected).all()


def test_open_costs_no_extra_request_and_a_task_one_record_write(tmp_path: Path,
                                                                log: Path) -> None:
    from chunkflow.testing import CountingMapping, CountingStore

    src = _source(tmp_path)
    backing = CountingMapping()
    (log / "fail-5-0").touch()
    with pytest.raises(RuntimeError):
        _run(src, chunkflow.storage.MappingStore(backing), log, resume=True)
    (log / "fail-5-0").unlink()
    records = [k for k in backing.writes if RECORDS_FOLDER in k]
    chunk_writes = [k for k in backing.chunk_writes() if RECORDS_FOLDER not in k]
    # One record per finished block, each written once, after its chunk.
    assert len(records) == len(chunk_writes) > 0
    assert all(backing.writes[k] == 1 for k in records)

    counting = CountingStore(chunkflow.storage.MappingStore(backing))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", IncompleteJobWarning)
        opened = chunkflow.Array(counting)
    # The mark came with the metadata: one request, no listing, as for any array.
    assert JOB_ATTRIBUTE in opened.attrs
    assert counting.counts.requests == 1 and sum(counting.counts.calls.values()) == 1

    # Finding what is done: one listing, not one request per block.
    counting.counts.reset()
    backing.writes.clear()
    clear_calls(log)
    _run(src, counting, log, resume=True)
    # One listing finds what is done; one at the end lists what is stored (jobs.written).
    assert counting.counts.calls["_list_prefix"] == 2
    assert sum(1 for k in backing.writes if RECORDS_FOLDER in k) == len(calls(log))
    assert not any(RECORDS_FOLDER in k for k in backing)


# ------------------------------------------------------------ other schedulers


@pytest.mark.slow
def test_resume_on_processes(tmp_path: Path, log: Path) -> None:
    src = _source(tmp_path)
    out = str(tmp_path / "out.zarr")
    (log / "fail-2-3").touch()
    with pytest.raises(RuntimeError):
        _run(src, out, log, resume=True, scheduler="processes")
    remaining = job_status(chunkflow.open(out, mode="r")).remaining
    (log / "fail-2-3").unlink()
    clear_calls(log)
    _run(src, out, log, resume=True, scheduler="processes")
    assert len(calls(log)) == len(remaining) < ALL_BLOCKS
    assert data_keys(LocalStore(out)) == _reference(tmp_path, src)


def _running_tasks(dask_worker: Any) -> int:
    """How many tasks a worker is executing, those the scheduler has released included
    (a worker cannot stop a running task; it stays in this set until its thread ends)."""
    return len(dask_worker.state.all_running_tasks)


def test_resume_on_a_cluster(tmp_path: Path, log: Path, cluster_client: Any) -> None:
    src = _source(tmp_path)
    out = str(tmp_path / "out.zarr")
    (log / "fail-1-0").touch()
    with pytest.raises(RuntimeError):
        _run(src, out, log, resume=True, scheduler=cluster_client)
    # Tasks running when the error came finish (and record themselves) on the workers,
    # even after the scheduler has released them: wait for every worker thread to be idle.
    wait_until(lambda: not any(cluster_client.run(_running_tasks).values()),
               "the workers' running tasks ending")
    remaining = job_status(chunkflow.open(out, mode="r")).remaining
    (log / "fail-1-0").unlink()
    clear_calls(log)
    _run(src, out, log, resume=True, scheduler=cluster_client)
    assert len(calls(log)) == len(remaining) < ALL_BLOCKS
    assert data_keys(LocalStore(out)) == _reference(tmp_path, src)


def test_a_resume_on_more_threads_keeps_the_plan_the_job_started_with(tmp_path: Path,
                                                                     log: Path) -> None:
    # 256 chunks of 64 bytes: the default groups them into 4 blocks per worker thread,
    # so "sync" (1 thread) and "threads" (2 here) plan differently.
    image = np.arange(64 * 64, dtype="f4").reshape(64, 64)
    src = str(tmp_path / "small.zarr")
    chunkflow.array(image, chunks=(4, 4), store=src)
    out = str(tmp_path / "out.zarr")
    (log / "fail-1-0").touch()
    with pytest.raises(RuntimeError):
        chunkflow.map_chunks(logged_filter, src, out=out, block_info=True, log=str(log),
                             resume=True, scheduler="sync")
    grid = job_status(chunkflow.open(out, mode="r")).grid
    (log / "fail-1-0").unlink()
    chunkflow.map_chunks(logged_filter, src, out=out, block_info=True, log=str(log),
                         resume=True, scheduler="threads")
    assert (chunkflow.open(out, mode="r")[:] == image * 3 + 1).all()
    plain = chunkflow.map_chunks(logged_filter, src, block_info=True, log=str(log),
                                 scheduler="threads")
    assert plain.numblocks != grid  # the default would have planned otherwise


def test_resuming_an_output_does_not_warn_about_it(tmp_path: Path, log: Path) -> None:
    src = _source(tmp_path)
    out = str(tmp_path / "out.zarr")
    (log / "fail-2-0").touch()
    with pytest.raises(RuntimeError):
        _run(src, out, log, resume=True)
    (log / "fail-2-0").unlink()
    with warnings.catch_warnings():
        warnings.simplefilter("error", IncompleteJobWarning)  # first open in this process
        _run(src, out, log, resume=True)


def test_compute_false_finishes_the_job_when_computed(tmp_path: Path, log: Path) -> None:
    src = _source(tmp_path)
    out = str(tmp_path / "out.zarr")
    (log / "fail-0-3").touch()
    with pytest.raises(RuntimeError):
        _run(src, out, log, resume=True)
    (log / "fail-0-3").unlink()
    pending = chunkflow.map_chunks(logged_filter, src, out=out, blocks=(1, 1), blocks_per_task=1,
                                   block_info=True, log=str(log), resume=True, compute=False)
    assert job_status(chunkflow.open(out, mode="r")) is not None
    assert bool(pending.compute(scheduler="sync"))
    assert job_status(chunkflow.open(out, mode="r")) is None
    assert data_keys(LocalStore(out)) == _reference(tmp_path, src)


def test_a_resumed_v2_output_is_bit_identical_too(tmp_path: Path, log: Path) -> None:
    # v2 keeps the mark in .zattrs: it must be gone (not left as "{}") at the end.
    src = _source(tmp_path, zarr_format=2)
    out = str(tmp_path / "out.zarr")
    (log / "fail-4-3").touch()
    with pytest.raises(RuntimeError):
        _run(src, out, log, resume=True)
    assert ".zattrs" in data_keys(LocalStore(out))
    (log / "fail-4-3").unlink()
    _run(src, out, log, resume=True)
    assert data_keys(LocalStore(out)) == _reference(tmp_path, src)


def test_grouped_tasks_record_per_task_and_resume_only_unrecorded_tasks(
        tmp_path: Path, log: Path) -> None:
    # Default plan with 2 x 2 blocks per task: one record per task, and a failed block
    # makes its whole task (and only the tasks without a record) run again.
    src = _source(tmp_path)
    out = str(tmp_path / "out.zarr")
    run = dict(blocks=(1, 1), blocks_per_task=(2, 2), block_info=True, log=str(log),
               scheduler="sync")
    (log / "fail-3-2").touch()
    with pytest.raises(RuntimeError, match="injected failure") as failure:
        chunkflow.map_chunks(logged_filter, src, out=out, resume=True, **run)
    notes = "".join(failure.value.__notes__)
    assert "block (3, 2) of this task, chunk key 'c/3/2'" in notes
    status = job_status(chunkflow.open(out, mode="r"))
    assert status is not None and status.total == 6  # 3 x 2 tasks of 2 x 2 blocks
    assert (1, 1) in status.remaining  # the task of block (3, 2)
    first = calls(log)
    (log / "fail-3-2").unlink()
    clear_calls(log)
    with warnings.catch_warnings():
        warnings.simplefilter("error", IncompleteJobWarning)
        chunkflow.map_chunks(logged_filter, src, out=out, resume=True, **run)
    again = calls(log)
    # Exactly the blocks of the tasks without a record ran again.
    expected = sorted(f"{2 * ti + i}-{2 * tj + j}" for ti, tj in status.remaining
                      for i in range(2) for j in range(2))
    assert again == expected
    assert len(first) >= ALL_BLOCKS - len(expected)  # recorded tasks ran once, before
    assert data_keys(LocalStore(out)) == _reference(tmp_path, src)


def test_a_resume_on_more_threads_keeps_the_task_groups_the_job_started_with(
        tmp_path: Path, log: Path) -> None:
    # One chunk per block, grouped by the default: 4 tasks per worker thread, so "sync"
    # (1 thread) and "threads" (2 here) group the same blocks differently.
    image = np.arange(64 * 64, dtype="f4").reshape(64, 64)
    src = str(tmp_path / "small.zarr")
    chunkflow.array(image, chunks=(4, 4), store=src)
    out = str(tmp_path / "out.zarr")
    run = dict(blocks=(1, 1), block_info=True, log=str(log), resume=True)
    (log / "fail-1-0").touch()
    with pytest.raises(RuntimeError):
        chunkflow.map_chunks(logged_filter, src, out=out, scheduler="sync", **run)
    status = job_status(chunkflow.open(out, mode="r"))
    (log / "fail-1-0").unlink()
    clear_calls(log)
    chunkflow.map_chunks(logged_filter, src, out=out, scheduler="threads", **run)
    assert (chunkflow.open(out, mode="r")[:] == image * 3 + 1).all()
    assert len(calls(log)) == 256 * len(status.remaining) // math.prod(status.grid)
