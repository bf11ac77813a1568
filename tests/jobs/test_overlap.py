"""Every writer refuses an output that is, holds or lies in one of its sources, and
writes nothing (issue 26, point 2): rechunk, pyramid, copy, label, segment, the CLI."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import chunkflow
from chunkflow.cli import main
from chunkflow.errors import OutputIsSourceError
from chunkflow.jobs import array_location, canonical, check_not_source, overlaps
from chunkflow.storage import LocalStore
from tests.helpers.jobs import data_keys


def _image(tmp_path: Path) -> tuple[str, np.ndarray]:
    data = (np.random.default_rng(0).random((32, 24)) > 0.6).astype("u1")
    chunkflow.array(data, chunks=(8, 8), store=str(tmp_path / "img.zarr"))
    return str(tmp_path / "img.zarr"), data


def _unchanged(tmp_path: Path, before: dict[str, bytes], data: np.ndarray) -> None:
    assert data_keys(LocalStore(str(tmp_path))) == before
    np.testing.assert_array_equal(chunkflow.open(str(tmp_path / "img.zarr"), mode="r")[:], data)


def test_locations_compare_stores_and_paths() -> None:
    assert overlaps("file:///d/a.zarr", "file:///d/a.zarr/0")
    assert not overlaps("file:///d/a", "file:///d/ab")
    assert canonical("memory:x/", "a/b/") == "memory:x/a/b"
    check_not_source("w", "file:///d/b", [("source 0", "file:///d/a")], depth=(3,))  # apart


@pytest.mark.parametrize("writer", ["rechunk", "copy", "label", "segment"])
def test_library_writers_refuse_their_source_as_output(tmp_path: Path, writer: str) -> None:
    src, data = _image(tmp_path)
    z = chunkflow.open(src, mode="r")
    parent = chunkflow.open_group(str(tmp_path), mode="a")  # where copy writes
    before = data_keys(LocalStore(str(tmp_path)))
    with pytest.raises(OutputIsSourceError, match="of this job"):
        if writer == "rechunk":
            chunkflow.rechunk(z, (16, 16), src, max_memory="1 MiB", overwrite=True)
        elif writer == "copy":
            chunkflow.copy(z, parent, "img.zarr", if_exists="replace")
        elif writer == "label":
            chunkflow.label(z, out=src, overwrite=True)
        else:
            chunkflow.segment(lambda b: b.astype("i8"), z, out=src, depth=1,
                              overwrite=True)
    _unchanged(tmp_path, before, data)


def test_label_into_the_open_source_handle_is_refused(tmp_path: Path) -> None:
    src, data = _image(tmp_path)
    z = chunkflow.open(src, mode="r+")
    before = data_keys(LocalStore(str(tmp_path)))
    with pytest.raises(OutputIsSourceError, match="halo"):
        chunkflow.label(z, out=z)
    _unchanged(tmp_path, before, data)
    assert array_location(z) == canonical(LocalStore(src).identity, "")


@pytest.mark.parametrize("command", [
    ["copy"], ["rechunk", "--chunks", "16,16", "--max-memory", "1MiB"],
    ["filter", "--gaussian", "1"], ["pyramid"], ["label"]])
def test_cli_commands_refuse_dst_that_is_src(tmp_path: Path, command: list[str],
                                              capsys: pytest.CaptureFixture[str]) -> None:
    src, data = _image(tmp_path)
    before = data_keys(LocalStore(str(tmp_path)))
    code = main([command[0], src, src, *command[1:], "--overwrite"])
    assert code != 0
    assert "SRC" in capsys.readouterr().err
    _unchanged(tmp_path, before, data)
