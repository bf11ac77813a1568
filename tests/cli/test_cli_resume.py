"""``chunkflow filter/copy --resume`` and ``chunkflow status``: a command that fails
keeps its output with --resume, status lists what remains, and the same command
finishes it, equal to a run without faults."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import chunkflow
from chunkflow.cli import copy as copy_command
from chunkflow.cli import main
from chunkflow.jobs import RECORDS_FOLDER
from chunkflow.storage import LocalStore
from tests.helpers.jobs import data_keys

# Tests open unfinished outputs on purpose; the warning itself is tested in
# tests/graph/map/test_resume.py.
pytestmark = pytest.mark.filterwarnings("ignore::chunkflow.errors.IncompleteJobWarning")

SHAPE, CHUNKS = (64, 40), (16, 20)  # 4 x 2 chunks


def _run(capsys: pytest.CaptureFixture[str], *argv: object) -> tuple[int, str, str]:
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def checked_source(tmp_path: Path) -> Path:
    """A v3 uint16 image whose chunks carry a CRC32C checksum."""
    path = tmp_path / "src.zarr"
    data = np.random.default_rng(0).integers(0, 1000, SHAPE).astype("uint16")
    z = chunkflow.create(SHAPE, chunks=CHUNKS, dtype="uint16", store=str(path),
                         codecs=[{"name": "bytes", "configuration": {"endian": "little"}},
                                 {"name": "crc32c"}])
    z[:] = data
    return path


def _corrupt(path: Path, key: str) -> bytes:
    """Flip one byte of a chunk, keeping its size (the checksum fails); returns the
    original bytes."""
    chunk = path / key
    original = chunk.read_bytes()
    chunk.write_bytes(bytes([original[0] ^ 0xFF]) + original[1:])
    return original


def test_filter_resume_after_a_failure(capsys: pytest.CaptureFixture[str], tmp_path: Path,
                                       checked_source: Path) -> None:
    pytest.importorskip("scipy")
    out = tmp_path / "out.zarr"
    original = _corrupt(checked_source, "c/3/1")
    argv = ("filter", checked_source, out, "--uniform", "3", "--scheduler", "sync")
    code, _, err = _run(capsys, *argv, "--resume")
    assert code == 1 and "c/3/1" in err
    assert out.exists()  # kept for the next --resume

    code, shown, _ = _run(capsys, "status", out)
    assert code == 0 and "job incomplete:" in shown and "remaining:" in shown
    assert "block (3, 0)" in shown  # the block of rows 48-64 reads the broken chunk
    code, shown, _ = _run(capsys, "info", out)
    assert "job incomplete:" in shown

    (checked_source / "c/3/1").write_bytes(original)  # the same size: the job is the same
    code, _, err = _run(capsys, *argv, "--resume")
    assert code == 0, err
    code, shown, _ = _run(capsys, "status", out)
    assert "no unfinished job" in shown
    assert _run(capsys, "filter", checked_source, tmp_path / "ref.zarr", "--uniform", "3",
                "--scheduler", "sync")[0] == 0
    assert data_keys(LocalStore(out)) == data_keys(LocalStore(tmp_path / "ref.zarr"))


def test_filter_without_resume_still_removes_a_failed_output(
        capsys: pytest.CaptureFixture[str], tmp_path: Path, checked_source: Path) -> None:
    pytest.importorskip("scipy")
    _corrupt(checked_source, "c/3/1")
    code, _, err = _run(capsys, "filter", checked_source, tmp_path / "out.zarr", "--uniform",
                        "3", "--scheduler", "sync")
    assert code == 1 and not (tmp_path / "out.zarr").exists()


def test_filter_resume_refuses_another_dtype(capsys: pytest.CaptureFixture[str],
                                             tmp_path: Path, checked_source: Path) -> None:
    pytest.importorskip("scipy")
    out = tmp_path / "out.zarr"
    _corrupt(checked_source, "c/3/1")
    argv = ("filter", checked_source, out, "--uniform", "3", "--scheduler", "sync", "--resume")
    assert _run(capsys, *argv)[0] == 1
    before = data_keys(LocalStore(out))
    code, _, err = _run(capsys, *argv, "--dtype", "float32")
    assert code == 1 and "output metadata" in err
    assert data_keys(LocalStore(out)) == before


def test_copy_resume_skips_finished_slabs(capsys: pytest.CaptureFixture[str], tmp_path: Path,
                                          checked_source: Path,
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(copy_command, "SLAB_BYTES", 16 * 40 * 2)  # one chunk row per slab
    out = tmp_path / "copy.zarr"
    original = _corrupt(checked_source, "c/2/0")
    argv = ("copy", checked_source, out, "--scheduler", "sync", "--resume")
    assert _run(capsys, *argv)[0] == 1
    records = [k for k in LocalStore(out).list_prefix(RECORDS_FOLDER)]
    assert len(records) == 2  # slabs 0 and 1 finished before slab 2 failed
    (checked_source / "c/2/0").write_bytes(original)
    code, _, err = _run(capsys, *argv)
    assert code == 0, err
    result = chunkflow.open(str(out), mode="r")
    assert (result[:] == chunkflow.open(str(checked_source), mode="r")[:]).all()
    assert not list(LocalStore(out).list_prefix(RECORDS_FOLDER))
