"""``chunkflow pyramid`` and ``chunkflow info`` on an OME-Zarr image."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import chunkflow
from chunkflow.cli import main
from tests.helpers.pyramid_reference import reference_levels


def run(capsys: pytest.CaptureFixture[str], *argv: object) -> tuple[int, str, str]:
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def source(tmp_path: Path) -> tuple[str, np.ndarray]:
    data = np.random.default_rng(0).integers(0, 1000, (70, 60)).astype("u2")
    location = str(tmp_path / "src.zarr")
    chunkflow.array(data, chunks=(16, 16), store=location, zarr_format=2)
    return location, data


def test_pyramid_then_info_shows_the_levels(capsys: pytest.CaptureFixture[str],
                                            source: tuple[str, np.ndarray],
                                            tmp_path: Path) -> None:
    location, data = source
    out = tmp_path / "image.ome.zarr"
    code, printed, err = run(capsys, "pyramid", location, out, "--method", "max",
                             "--units", "x=micrometer,y=micrometer")
    assert code == 0, err
    assert "4 levels" in printed and "(70, 60), (35, 30), (18, 15), (9, 8)" in printed
    group = chunkflow.open_group(str(out), mode="r")
    for k, want in enumerate(reference_levels(data, (2, 2), "max", 4)):
        np.testing.assert_array_equal(group[str(k)][...], want)
    code, printed, _ = run(capsys, "info", out)
    assert code == 0
    assert "OME-NGFF    : 0.4 image, 4 levels, axes yx (space in micrometer, space in " \
           "micrometer), method max" in printed
    assert "Level 3     : (9, 8) chunks (9, 8) scale (8, 8) translation (3.5, 3.5)" in printed


def test_labels_and_options(capsys: pytest.CaptureFixture[str], source: tuple[str, np.ndarray],
                            tmp_path: Path) -> None:
    location, data = source
    out = tmp_path / "image.ome.zarr"
    assert run(capsys, "pyramid", location, out, "--zarr-format", "3", "--levels", "2",
               "--chunks", "32,32", "-q")[0] == 0
    code, printed, err = run(capsys, "pyramid", location, out, "--labels", "cells",
                             "--factors", "1,2")
    assert code == 0, err
    group = chunkflow.open_group(str(out), mode="r")
    assert group["0"].chunks == (32, 32) and "2" not in group
    assert group["labels/cells/1"].shape == (70, 30)
    assert group["labels"].attrs["ome"]["labels"] == ["cells"]


@pytest.mark.parametrize("arguments, message", [
    (["--axes", "zyx"], "3 axes"),
    (["--labels", "cells", "--method", "mean"], "keeps its labels"),
    (["--factors", "two"], "is not a factor"),
    (["--max-memory", "1 KiB"], "more than --max-memory 1.00 kiB; use smaller --chunks"),
])
def test_bad_arguments_exit_2_and_create_nothing(capsys: pytest.CaptureFixture[str],
                                                 source: tuple[str, np.ndarray], tmp_path: Path,
                                                 arguments: list[str], message: str) -> None:
    out = tmp_path / "image.ome.zarr"
    code, _, err = run(capsys, "pyramid", source[0], out, *arguments)
    assert code == 2 and message in err
    assert not out.exists()


def test_an_existing_output_asks_for_overwrite(capsys: pytest.CaptureFixture[str],
                                               source: tuple[str, np.ndarray],
                                               tmp_path: Path) -> None:
    out = tmp_path / "image.ome.zarr"
    assert run(capsys, "pyramid", source[0], out)[0] == 0
    code, _, err = run(capsys, "pyramid", source[0], out)
    assert code == 2 and "--overwrite" in err
    assert run(capsys, "pyramid", source[0], out, "--overwrite", "--method", "nearest")[0] == 0


def test_resume_finishes_an_interrupted_pyramid(capsys: pytest.CaptureFixture[str],
                                                source: tuple[str, np.ndarray],
                                                tmp_path: Path) -> None:
    location, data = source
    out = tmp_path / "image.ome.zarr"
    chunk = Path(location) / "3.2"
    original = chunk.read_bytes()
    chunk.write_bytes(b"\xff" * len(original))  # same size: the same source for the job
    code, _, err = run(capsys, "pyramid", location, out, "--resume", "--scheduler", "sync")
    assert code == 1 and "3.2" in err
    assert out.exists()  # kept for the next --resume
    chunk.write_bytes(original)
    code, _, err = run(capsys, "pyramid", location, out, "--resume", "--scheduler", "sync")
    assert code == 0, err
    group = chunkflow.open_group(str(out), mode="r")
    for k, want in enumerate(reference_levels(data, (2, 2), "mean", 4)):
        np.testing.assert_array_equal(group[str(k)][...], want)
