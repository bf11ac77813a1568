"""Every command that writes DST refuses a DST holding anything but Zarr nodes (a
user's files, or a file), or one that is or overlaps SRC, before it reads a chunk:
exit 2, the user's files and SRC untouched, with or without ``--overwrite`` (which
could not help), in the command line's words."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import chunkflow
from chunkflow.cli import main

# Each command that writes DST, with the arguments it needs besides SRC and DST.
WRITERS = {
    "copy": [],
    "convert": [],
    "rechunk": ["--chunks", "2,3,3", "--max-memory", "64MiB"],
    "filter": ["--gaussian", "1"],
    "threshold": [],
    "fill-holes": [],
    "remove-small-objects": ["--max-size", "3"],
    "remove-small-holes": ["--max-size", "3"],
    "pyramid": [],
    "label": [],
}


def _unreadable(tmp_path: Path) -> Path:
    """An array whose every chunk is garbage: a command that reads one fails with exit
    code 1, so exit code 2 proves the refusal came first."""
    location = tmp_path / "garbage.zarr"
    chunkflow.array(np.ones((4, 6, 6), "u1"), chunks=(2, 3, 3), store=str(location))
    for path in location.rglob("*"):
        if path.is_file() and path.name != "zarr.json":
            path.write_bytes(b"not a chunk")
    return location


@pytest.mark.parametrize("overwrite", [False, True])
@pytest.mark.parametrize("command", sorted(WRITERS))
def test_a_folder_of_user_files_is_refused_before_any_work(
        capsys: pytest.CaptureFixture[str], tmp_path: Path, command: str,
        overwrite: bool) -> None:
    folder = tmp_path / "Documents"
    (folder / "notes").mkdir(parents=True)
    (folder / "thesis.txt").write_text("mine")
    (folder / "notes" / "a.md").write_text("also mine")
    argv = [command, str(_unreadable(tmp_path)), str(folder), *WRITERS[command], "-q"]
    code = main(argv + (["--overwrite"] if overwrite else []))
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert code == 2, err
    name = "OUT" if command == "convert" else "DST"
    assert err.startswith(f"chunkflow {command}: error: {name}: folder "), err
    assert "not part of a Zarr node" in err and "nothing was written or deleted" in err
    assert (folder / "thesis.txt").read_text() == "mine"
    assert (folder / "notes" / "a.md").read_text() == "also mine"
    assert sorted(p.name for p in folder.rglob("*")) == ["a.md", "notes", "thesis.txt"]


@pytest.mark.parametrize("command", sorted(WRITERS))
def test_a_file_as_dst_is_refused_as_a_file(capsys: pytest.CaptureFixture[str],
                                            tmp_path: Path, command: str) -> None:
    target = tmp_path / "notes.txt"
    target.write_text("precious")
    code = main([command, str(_unreadable(tmp_path)), str(target), *WRITERS[command], "-q",
                 "--overwrite"])
    err = capsys.readouterr().err
    assert code == 2, err
    assert "is a file, not a Zarr node" in err
    assert target.read_text() == "precious"


def test_a_zarr_dst_is_still_replaced_with_overwrite(tmp_path: Path) -> None:
    source = tmp_path / "src.zarr"
    chunkflow.array(np.arange(24, dtype="u2").reshape(2, 3, 4), chunks=(1, 3, 4),
                    store=str(source))
    out = tmp_path / "out.zarr"
    chunkflow.zeros((5,), chunks=(5,), store=str(out))  # an old output, replaced
    assert main(["copy", str(source), str(out), "-q", "--overwrite"]) == 0
    np.testing.assert_array_equal(chunkflow.open_array(str(out), mode="r")[...],
                                  np.arange(24, dtype="u2").reshape(2, 3, 4))


@pytest.mark.parametrize("command", sorted(WRITERS))
@pytest.mark.parametrize("inside", [False, True])
def test_dst_that_is_or_lies_in_src_is_refused_before_any_work(
        capsys: pytest.CaptureFixture[str], tmp_path: Path, command: str,
        inside: bool) -> None:
    source = _unreadable(tmp_path)  # a chunk read would fail with exit 1
    before = sorted(p.name for p in source.rglob("*"))
    dst = source / "sub" if inside else source
    code = main([command, str(source), str(dst), *WRITERS[command], "-q", "--overwrite"])
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert code == 2, err
    src, out = ("IN", "OUT") if command == "convert" else ("SRC", "DST")
    relation = "overlaps" if inside else "is"
    assert f"error: {out} {str(dst)!r} {relation} {src} {str(source)!r}" in err, err
    assert sorted(p.name for p in source.rglob("*")) == before  # nothing written or removed


def test_a_link_to_src_is_src(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    source = _unreadable(tmp_path)
    (tmp_path / "link.zarr").symlink_to(source)
    code = main(["filter", str(source), str(tmp_path / "link.zarr"), "--gaussian", "1", "-q",
                 "--overwrite"])
    assert code == 2 and "is SRC" in capsys.readouterr().err


@pytest.mark.parametrize("where", ["zarr.json", "t.csv", "c/t.csv", "zarr.json@intensity",
                                   "t.json@intensity", "zarr.json@elsewhere"])
def test_a_table_in_what_measure_reads_or_named_zarr_json_is_refused(
        capsys: pytest.CaptureFixture[str], tmp_path: Path, where: str) -> None:
    """``--output labels.zarr/zarr.json --overwrite`` replaced the labels' metadata
    with the table: the labels were lost. Refused before any work, with --overwrite."""
    labels = _unreadable(tmp_path)  # reading a chunk would fail with exit 1
    intensity = tmp_path / "image.zarr"
    chunkflow.array(np.ones((4, 6, 6), "u1"), chunks=(2, 3, 3), store=str(intensity))
    other = tmp_path / "other.zarr"
    chunkflow.array(np.ones((2,), "u1"), chunks=(2,), store=str(other))
    name, _, node = where.partition("@")
    folder = {"": labels, "intensity": intensity, "elsewhere": other}[node]
    output = folder / name
    before = {p: p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()}
    code = main(["measure", str(labels), "--intensity", str(intensity), "--output",
                 str(output), "--overwrite", "-q"])
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert code == 2, err
    if name == "zarr.json":
        assert "zarr.json is the name of Zarr metadata" in err, err
    else:
        label = "--intensity" if node else "LABELS"
        assert f"--output {str(output)!r} lies in {label} {str(folder)!r}" in err, err
    assert {p: p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()} == before
