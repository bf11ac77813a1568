"""chunkflow.label as a job: on threads, processes and a LocalCluster, folder to folder
and on S3 (moto), resumed after a failure and after its process was killed."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import uuid
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from scipy import ndimage

import chunkflow
from chunkflow.errors import IncompleteJobWarning, JobMismatchError
from chunkflow.jobs import RECORDS_FOLDER, job_status
from chunkflow.storage import FsspecStore, LocalStore
from tests.helpers.labels import blobs, logged_block, logged_calls
from tests.helpers.waiting import wait_until

pytestmark = pytest.mark.filterwarnings("ignore::chunkflow.errors.IncompleteJobWarning")

ROOT = Path(__file__).resolve().parents[3]
SHAPE, CHUNKS = (48, 40), (8, 10)  # 6 x 4 = 24 blocks


def _source(folder: Path) -> tuple[str, np.ndarray]:
    image = blobs(SHAPE, 1.5, 0.5, seed=11)
    path = str(folder / "src.zarr")
    chunkflow.array(image, chunks=CHUNKS, store=path)
    return path, ndimage.label(image, np.ones((3, 3), bool))[0]


def _label(src: Any, out: Any, **kwargs: Any) -> tuple[chunkflow.Array, int]:
    return chunkflow.label(src, out, structure=np.ones((3, 3), bool), blocks=(1, 1), **kwargs)


@pytest.mark.parametrize("scheduler", ["threads", pytest.param("processes", marks=pytest.mark.slow)])
def test_folder_to_folder_on_local_schedulers(tmp_path: Path, scheduler: str) -> None:
    src, expected = _source(tmp_path)
    out, count = _label(src, str(tmp_path / "out.zarr"), scheduler=scheduler)
    assert count == int(expected.max())
    reopened = chunkflow.open_array(str(tmp_path / "out.zarr"), mode="r")
    np.testing.assert_array_equal(reopened[...], expected)
    assert job_status(reopened) is None


@pytest.mark.slow
def test_on_a_local_cluster(tmp_path: Path, cluster_client: Any) -> None:
    src, expected = _source(tmp_path)
    out, count = _label(src, str(tmp_path / "out.zarr"), scheduler=cluster_client,
                        resume=True)
    assert count == int(expected.max())
    np.testing.assert_array_equal(out[...], expected)
    assert not any(RECORDS_FOLDER in key for key in LocalStore(tmp_path / "out.zarr")
                   .list_prefix(""))


@pytest.mark.s3
def test_s3_to_s3(tmp_path: Path, s3_server: dict[str, Any]) -> None:
    image = blobs(SHAPE, 1.5, 0.5, seed=12)
    base = f"s3://chunkflow-test/{uuid.uuid4().hex}"
    chunkflow.array(image, chunks=CHUNKS, store=f"{base}/src.zarr",
                    storage_options=s3_server)
    out, count = chunkflow.label(f"{base}/src.zarr", f"{base}/out.zarr", blocks=(1, 1),
                                 scheduler="threads", storage_options=s3_server)
    expected, n = ndimage.label(image)
    assert count == n
    reopened = chunkflow.open_array(FsspecStore(f"{base}/out.zarr", storage_options=s3_server),
                                    mode="r")
    np.testing.assert_array_equal(reopened[...], expected)


def _lazy(src: str, log: Path) -> Any:
    """The source as a logged dask expression (``> 0.5``), one dask block per block."""
    return chunkflow.to_dask(src, blocks=(1, 1)).map_blocks(logged_block, log=str(log),
                                                            dtype=bool)


def _relabelled() -> Any:
    """No chunk cache: the first pass keeps no labels, so the write pass reads and
    labels each block again (as in a worker process that did not scan the block)."""
    return chunkflow.config.set({"chunkflow.cache.max-bytes": 0})


@pytest.mark.parametrize("budget", [None, 0, 3000])
def test_blocks_are_read_once_where_the_cache_keeps_their_labels(tmp_path: Path,
                                                                 budget: int | None) -> None:
    # By default the write pass takes the labels the first pass kept in the chunk
    # cache; with no cache it labels every block again; with a cache of 3000 bytes
    # (a block's labels are 320 bytes of uint32, and its rows) some blocks are kept,
    # others not.
    src, expected = _source(tmp_path)
    log = tmp_path / "log"
    log.mkdir()
    settings = {} if budget is None else {"chunkflow.cache.max-bytes": budget}
    with chunkflow.config.set(settings):
        result, count = _label(_lazy(src, log), str(tmp_path / "out.zarr"), scheduler="sync")
    np.testing.assert_array_equal(result[...], expected)
    calls = len(logged_calls(log))
    if budget is None:
        assert calls == 24
    elif budget == 0:
        assert calls == 48
    else:
        assert 24 < calls < 48


def test_a_failed_run_resumes_where_it_stopped(tmp_path: Path) -> None:
    src, expected = _source(tmp_path)
    log = tmp_path / "log"
    log.mkdir()
    out = str(tmp_path / "out.zarr")
    (log / "fail-3-2").touch()  # the write pass of block (3, 2) fails
    with _relabelled(), pytest.raises(RuntimeError, match="injected"):
        _label(_lazy(src, log), out, resume=True, scheduler="sync")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", IncompleteJobWarning)
        status = job_status(chunkflow.open_array(out, mode="r"))
    assert status is not None and 0 < status.done < 24
    (log / "fail-3-2").unlink()
    for p in (log / "calls").iterdir():
        p.unlink()
    with _relabelled():
        result, count = _label(_lazy(src, log), out, resume=True, scheduler="sync")
    # The first pass reads every block again; the write pass only the blocks not done.
    assert len(logged_calls(log)) == 24 + (24 - status.done)
    np.testing.assert_array_equal(result[...], expected)
    assert job_status(result) is None


def test_resuming_a_different_job_is_refused_and_writes_nothing(tmp_path: Path) -> None:
    src, _ = _source(tmp_path)
    log = tmp_path / "log"
    log.mkdir()
    out = str(tmp_path / "out.zarr")
    (log / "fail-5-3").touch()
    with _relabelled(), pytest.raises(RuntimeError, match="injected"):
        _label(_lazy(src, log), out, resume=True, scheduler="sync")
    before = sorted(LocalStore(out).list_prefix(""))
    with pytest.raises(JobMismatchError, match="label"):
        chunkflow.label(_lazy(src, log), out, resume=True, blocks=(1, 1))  # another structure
    assert sorted(LocalStore(out).list_prefix("")) == before


_SCRIPT = """
import json, sys
import dask
import numpy as np
import chunkflow
from tests.graph.labels.test_label_jobs import _lazy
args = json.loads(sys.argv[1])
with dask.config.set(num_workers=2), chunkflow.config.set({"chunkflow.cache.max-bytes": 0}):
    chunkflow.label(_lazy(args["src"], args["log"]), args["out"], resume=True,
                    structure=np.ones((3, 3), bool), blocks=(1, 1), scheduler="threads")
"""


def _records(out: str) -> int:
    folder = Path(out)
    return sum(1 for p in folder.rglob("*") if RECORDS_FOLDER in str(p) and p.is_file())


@pytest.mark.slow
def test_a_killed_run_resumes_bit_identical(tmp_path: Path) -> None:
    src, expected = _source(tmp_path)
    log = tmp_path / "log"
    log.mkdir()
    (log / "pause").write_text("0.05")
    out = str(tmp_path / "out.zarr")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen([sys.executable, "-c", _SCRIPT,
                             json.dumps({"src": src, "out": out, "log": str(log)})],
                            cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)

    def done_blocks() -> int:
        # What job_status counts, not the files in the records folder: the folder
        # also holds the job's own record, which is no block.
        if _records(out) == 0:
            return 0
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", IncompleteJobWarning)
            found = job_status(chunkflow.open_array(out, mode="r"))
        return 0 if found is None else found.done

    def written() -> bool:  # some blocks written and recorded (or the job died)
        return proc.poll() is not None or done_blocks() >= 4

    wait_until(written, "four recorded blocks", timeout=120, interval=0.01)
    assert proc.poll() is None, proc.communicate()[1].decode()
    proc.send_signal(signal.SIGKILL)
    proc.communicate(timeout=30)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", IncompleteJobWarning)
        status = job_status(chunkflow.open_array(out, mode="r"))
    assert status is not None and 4 <= status.done < 24
    (log / "pause").unlink()
    for p in (log / "calls").iterdir():
        p.unlink()
    with _relabelled():
        result, _ = _label(_lazy(src, log), out, resume=True, scheduler="threads")
    assert len(logged_calls(log)) == 24 + (24 - status.done)
    np.testing.assert_array_equal(result[...], expected)
    whole = str(tmp_path / "whole.zarr")
    _label(src, whole, scheduler="sync")
    stored = {k: v for k, v in ((k, LocalStore(whole)[k]) for k in LocalStore(whole).list_prefix(""))
              if "zarr.json" not in k}
    resumed = {k: LocalStore(out)[k] for k in LocalStore(out).list_prefix("") if "zarr.json" not in k}
    assert resumed == stored


def test_a_numpy_source_into_a_url_with_storage_options() -> None:
    """storage_options go to the output URL; a numpy source is copied in memory."""
    mask = np.zeros((12, 10), bool)
    mask[2:4, 2:4] = mask[7:9, 5:9] = True
    url = f"memory://labels-{uuid.uuid4().hex}/labels.zarr"
    labels, count = chunkflow.label(mask, url, chunks=(4, 4),
                                    storage_options={"skip_instance_cache": False})
    expected, n = ndimage.label(mask)
    assert count == n
    np.testing.assert_array_equal(chunkflow.open_array(url, mode="r")[:], expected)
