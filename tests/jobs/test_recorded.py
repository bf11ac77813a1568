"""Every job is recorded, whether or not resume=True was passed (issue 26, point 3): an
output left by a failed run says so, continues with resume=True, and refuses another
function."""

from __future__ import annotations

import warnings
from pathlib import Path

import dask.array as da
import numpy as np
import pytest

import chunkflow
from chunkflow.cli import main
from chunkflow.errors import IncompleteJobWarning, JobMismatchError
from chunkflow.jobs import JOB_ATTRIBUTE, RECORDS_FOLDER, job_status, not_recorded
from chunkflow.storage import LocalStore
from chunkflow.testing import CountingMapping
from tests.helpers.jobs import calls, clear_calls, logged_filter

SHAPE, CHUNKS = (48, 40), (8, 10)  # 6 x 4 = 24 blocks of one chunk
ALL_BLOCKS = 24


def _source(tmp_path: Path) -> tuple[str, np.ndarray]:
    image = np.random.default_rng(1).integers(0, 1000, SHAPE).astype("f4")
    chunkflow.array(image, chunks=CHUNKS, store=str(tmp_path / "src.zarr"))
    return str(tmp_path / "src.zarr"), image


def _run(src: str, out: str, log: Path, func=logged_filter, **kwargs: object) -> None:
    chunkflow.map_chunks(func, src, out=out, blocks=(1, 1), blocks_per_task=1,
                         block_info=True, log=str(log), scheduler="sync", **kwargs)


def _failed_without_resume(tmp_path: Path, log: Path) -> tuple[str, str, np.ndarray]:
    src, image = _source(tmp_path)
    out = str(tmp_path / "out.zarr")
    (log / "fail-3-2").touch()
    with pytest.raises(RuntimeError, match="injected failure"):
        _run(src, out, log)  # no resume=True
    (log / "fail-3-2").unlink()
    return src, out, image


def test_a_failed_run_without_resume_leaves_an_output_that_says_so(
        tmp_path: Path, log: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src, out, image = _failed_without_resume(tmp_path, log)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        z = chunkflow.open(out, mode="r")
    assert [w.category for w in caught] == [IncompleteJobWarning]
    status = job_status(z)
    assert status is not None and 0 < status.done < ALL_BLOCKS
    assert "job incomplete" in z.info["Job"]
    assert main(["status", out]) == 0
    assert "job incomplete:" in capsys.readouterr().out
    # resume=True continues it: only the blocks not recorded run again.
    clear_calls(log)
    _run(src, out, log, resume=True)
    assert len(calls(log)) == ALL_BLOCKS - status.done
    done = chunkflow.open(out, mode="r")
    assert JOB_ATTRIBUTE not in done.attrs and not list(LocalStore(out).list_prefix(RECORDS_FOLDER))
    np.testing.assert_array_equal(done[:], image * 3 + 1)


def test_a_resume_with_another_function_is_refused(tmp_path: Path, log: Path) -> None:
    src, out, _ = _failed_without_resume(tmp_path, log)
    before = sorted(p.name for p in Path(out).rglob("*"))

    def other(window: np.ndarray, *, log: str, block_info: dict) -> np.ndarray:
        return window * 2

    with pytest.raises(JobMismatchError, match="function"):
        _run(src, out, log, func=other, resume=True)
    assert sorted(p.name for p in Path(out).rglob("*")) == before


def test_store_without_resume_records_and_finishes(tmp_path: Path) -> None:
    z = chunkflow.zeros((16, 12), chunks=(4, 4), store=str(tmp_path / "st.zarr"))

    def boom(block: np.ndarray, block_info: dict) -> np.ndarray:
        if block_info[None]["chunk-location"] == (2, 1):
            raise RuntimeError("injected failure")
        return block

    x = da.ones((16, 12), chunks=4).map_blocks(boom, dtype="f8")
    with pytest.raises(RuntimeError):
        chunkflow.store(x, z, scheduler="sync")
    assert job_status(z) is not None and job_status(z).done < 12
    chunkflow.store(da.ones((16, 12), chunks=4), z, scheduler="sync")  # starts over
    assert job_status(z) is None and not list(z.store.list_prefix(RECORDS_FOLDER))
    assert z[:].sum() == 16 * 12


def test_not_recorded_switches_recording_off(tmp_path: Path, log: Path) -> None:
    src, _ = _source(tmp_path)
    out = str(tmp_path / "out.zarr")
    (log / "fail-3-2").touch()
    with not_recorded(), pytest.raises(RuntimeError):
        _run(src, out, log)
    assert job_status(chunkflow.open(out, mode="r")) is None  # looks finished: the old way


class _Logged(CountingMapping):
    """Keeps every metadata document written, to see the mark come and go."""

    def __init__(self) -> None:
        super().__init__()
        self.documents: list[str] = []

    def __setitem__(self, key: str, value: bytes) -> None:
        if key.endswith((".zattrs", "zarr.json")):
            self.documents.append(bytes(value).decode())
        super().__setitem__(key, value)


@pytest.mark.parametrize("writer", ["rechunk", "pyramid", "label", "to_chunkflow", "copy"])
def test_every_writer_records_without_resume(tmp_path: Path, writer: str) -> None:
    data = (np.random.default_rng(2).random((64, 48)) > 0.5).astype("u1")
    z = chunkflow.array(data, chunks=(16, 16), store=str(tmp_path / "src.zarr"))
    mapping = _Logged()
    if writer == "rechunk":
        chunkflow.rechunk(z, (64, 8), mapping, max_memory="1 MiB")
    elif writer == "pyramid":
        chunkflow.pyramid(z, chunkflow.MappingStore(mapping), levels=2, method="max")
    elif writer == "label":
        chunkflow.label(z, out=chunkflow.MappingStore(mapping))
    elif writer == "to_chunkflow":
        chunkflow.to_chunkflow(chunkflow.to_dask(z), mapping)
    else:
        chunkflow.copy(z, chunkflow.open_group(mapping, mode="w"), "copied")
    if writer != "copy":  # copy marks its output, but records no blocks without resume
        assert any(RECORDS_FOLDER in k for k in mapping.writes), "no block was recorded"
    assert any(JOB_ATTRIBUTE in d for d in mapping.documents), "never marked unfinished"
    assert not any(RECORDS_FOLDER in k for k in mapping)  # all gone once complete
    assert not any(JOB_ATTRIBUTE in bytes(v).decode() for k, v in mapping.items()
                   if k.endswith((".zattrs", "zarr.json")))
