"""``chunkflow rechunk``: new chunks within --max-memory, refusals that leave nothing."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest
import zarr

import chunkflow
from chunkflow.cli import main

DATA = np.arange(32 * 64 * 64, dtype="u2").reshape(32, 64, 64)


def run(capsys: pytest.CaptureFixture[str], *argv: object) -> tuple[int, str, str]:
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def src(tmp_path: Path) -> Path:
    path = tmp_path / "src.zarr"
    chunkflow.create_array(str(path), data=DATA, chunks=(1, 64, 64), zarr_format=2)
    return path


def test_rechunk_through_temp_to_sharded_v3(capsys: pytest.CaptureFixture[str], src: Path,
                                            tmp_path: Path) -> None:
    dst, temp = tmp_path / "dst.zarr", tmp_path / "temp"
    code, out, err = run(capsys, "rechunk", src, dst, "--chunks", "32,8,8", "--shards",
                         "32,32,64", "--max-memory", "3 MiB", "--temp", temp, "--compressor",
                         "zstd:3", "--dtype", "f4", "-q")
    assert code == 0, err
    assert "rechunked" in out and "Zarr v3, shards (32, 32, 64) of chunks (32, 8, 8)" in out
    peer = zarr.open_array(str(dst), mode="r")
    np.testing.assert_array_equal(peer[...], DATA.astype("f4"))
    assert [f for _, _, files in os.walk(temp) for f in files] == []


def test_rechunk_a_region_along_some_axes(capsys: pytest.CaptureFixture[str], src: Path,
                                          tmp_path: Path) -> None:
    dst = tmp_path / "dst.zarr"
    code, _, err = run(capsys, "rechunk", src, dst, "--chunks", "1=16", "--selection", "4:20,8:",
                       "--max-memory", "64 MiB", "-q")
    assert code == 0, err
    result = chunkflow.open_array(str(dst), mode="r")
    assert result.chunks == (1, 16, 64) and result.zarr_format == 2
    np.testing.assert_array_equal(result[...], DATA[4:20, 8:])


def test_a_refused_plan_names_the_options_and_creates_nothing(
        capsys: pytest.CaptureFixture[str], src: Path, tmp_path: Path) -> None:
    dst, temp = tmp_path / "dst.zarr", tmp_path / "temp"
    code, _, err = run(capsys, "rechunk", src, dst, "--chunks", "32,8,8",
                       "--max-memory", "100 KiB")
    assert code == 2 and "pass --temp" in err and "--max-memory=" in err, err
    code, _, err = run(capsys, "rechunk", src, dst, "--chunks", "32,8,8",
                       "--max-memory", "10 KiB", "--temp", temp)
    assert code == 2 and "smallest tasks" in err, err
    code, _, err = run(capsys, "rechunk", src, dst, "--chunks", "32,0", "--max-memory", "1 MiB")
    assert code == 2 and "every size must be at least 1" in err
    assert sorted(os.listdir(tmp_path)) == ["src.zarr"]


def test_an_interrupted_resume_keeps_dst_and_finishes_it(
        capsys: pytest.CaptureFixture[str], src: Path, tmp_path: Path) -> None:
    dst, temp = tmp_path / "dst.zarr", tmp_path / "temp"
    blocker = dst / "c" / "0" / "7" / "7"  # a folder where a chunk must go
    blocker.mkdir(parents=True)
    code, _, err = run(capsys, "rechunk", src, dst, "--chunks", "32,8,8", "--max-memory",
                       "1 MiB", "--temp", temp, "--resume", "--zarr-format", "3")
    assert code == 1, err
    assert (dst / "zarr.json").exists()  # kept for the next --resume
    blocker.rmdir()
    code, out, err = run(capsys, "rechunk", src, dst, "--chunks", "32,8,8", "--max-memory",
                         "1 MiB", "--temp", temp, "--resume", "--zarr-format", "3", "-q")
    assert code == 0, err
    np.testing.assert_array_equal(chunkflow.open_array(str(dst), mode="r")[...], DATA)


@pytest.mark.parametrize(("old", "new", "value"), [
    ("--region", "--selection", "4:20,8:"),
    ("--format", "--zarr-format", "3"),
])
def test_an_old_option_spelling_warns_and_works(capsys: pytest.CaptureFixture[str], src: Path,
                                                tmp_path: Path, old: str, new: str,
                                                value: str) -> None:
    results = []
    for flag in (old, new):
        dst = tmp_path / f"{flag.strip('-')}.zarr"
        argv = ("rechunk", src, dst, "--chunks", "1=16", flag, value, "--max-memory",
                "64 MiB", "-q")
        if flag == old:
            with pytest.warns(FutureWarning, match=f"{old} is renamed {new}"):
                assert run(capsys, *argv)[0] == 0
        else:
            assert run(capsys, *argv)[0] == 0
        results.append(chunkflow.open_array(str(dst), mode="r"))
    old_result, new_result = results
    assert old_result.shape == new_result.shape
    assert old_result.zarr_format == new_result.zarr_format
    np.testing.assert_array_equal(old_result[...], new_result[...])
