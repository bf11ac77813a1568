"""``chunkflow filter --dtype``: the output's dtype, never a silent change of values.

The filters compute in floats wide enough for the source (float64 for integers), round
into an integer output, and cast at the end: a value the output cannot hold fails the
command (exit 1, one line naming ``--dtype`` and ``--casting unsafe``) and leaves no
output; ``--casting unsafe`` casts as numpy's ``astype``. A dtype the filters cannot
write is refused before anything is created (exit 2). Each test runs the real
``chunkflow`` command in a subprocess on real folders; scipy and numpy are the oracles.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import chunkflow
from tests.helpers.trees import fingerprint

ndimage = pytest.importorskip("scipy.ndimage")

ROOT = Path(__file__).resolve().parents[2]  # the tree whose chunkflow is under test


def chunkflow_command(*argv: object) -> subprocess.CompletedProcess[str]:
    """The installed ``chunkflow`` script (``python -m chunkflow`` without one), importing
    this tree."""
    script = shutil.which("chunkflow")
    head = [script] if script else [sys.executable, "-m", "chunkflow"]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run([*head, *map(str, argv)], capture_output=True, text=True, env=env,
                          timeout=300)


def _image(tmp_path: Path, name: str, data: np.ndarray) -> Path:
    chunkflow.array(data, chunks=(16, 16), store=str(tmp_path / name))
    return tmp_path / name


@pytest.fixture
def small(tmp_path: Path) -> tuple[Path, np.ndarray]:
    """The issue's image: uint16 whose Gaussian lies in the thousands."""
    data = np.random.default_rng(0).integers(1393, 13078, (40, 30)).astype("u2")
    return _image(tmp_path, "small.zarr", data), data


def _gaussian(data: np.ndarray, sigma: float) -> np.ndarray:
    return ndimage.gaussian_filter(data.astype("f8"), sigma)


def _refused(done: subprocess.CompletedProcess[str], code: int) -> str:
    assert done.returncode == code, (done.returncode, done.stderr)
    line = done.stderr.strip().splitlines()[-1]
    assert line.startswith("chunkflow filter: error:") and "Traceback" not in done.stderr
    return line


@pytest.mark.parametrize("argv, reason", [
    (["--gaussian", "2", "--dtype", "uint8"], "out of its range 0..255"),
    (["--gaussian", "2", "--dtype", "int8"], "out of its range -128..127"),
    (["--median", "3", "--dtype", "bool"], "a bool holds 0 and 1 only"),
    (["--uniform", "3", "--dtype", "int8", "--boundary", "constant"], "-128..127"),
])
def test_a_value_the_dtype_cannot_hold_fails_and_leaves_nothing(
        tmp_path: Path, small: tuple[Path, np.ndarray], argv: list[str], reason: str) -> None:
    src, data = small
    before = fingerprint(tmp_path)
    line = _refused(chunkflow_command("filter", src, tmp_path / "d1.zarr", *argv), 1)
    dtype = argv[argv.index("--dtype") + 1]
    assert f"do not fit --dtype {dtype}" in line and reason in line
    assert "--casting unsafe" in line and "removed the unfinished" in line
    assert not (tmp_path / "d1.zarr").exists() and fingerprint(tmp_path) == before


def test_unsafe_casts_as_numpy_does(tmp_path: Path, small: tuple[Path, np.ndarray]) -> None:
    src, data = small
    done = chunkflow_command("filter", src, tmp_path / "d1.zarr", "--gaussian", "2",
                             "--dtype", "uint8", "--casting", "unsafe")
    assert done.returncode == 0, done.stderr
    with np.errstate(all="ignore"):
        expected = np.rint(_gaussian(data, 2)).astype("u1")  # numpy's wrap, asked for
    got = chunkflow.open(str(tmp_path / "d1.zarr"), mode="r")
    assert got.dtype == np.uint8
    np.testing.assert_array_equal(got[:], expected)


def test_values_that_fit_are_written_in_the_output_dtype(tmp_path: Path) -> None:
    data = np.random.default_rng(1).integers(0, 200, (40, 30)).astype("u2")
    src = _image(tmp_path, "dim.zarr", data)
    done = chunkflow_command("filter", src, tmp_path / "d.zarr", "--gaussian", "1.5",
                             "--dtype", "uint8")
    assert done.returncode == 0, done.stderr
    np.testing.assert_array_equal(chunkflow.open(str(tmp_path / "d.zarr"), mode="r")[:],
                                  np.rint(_gaussian(data, 1.5)).astype("u1"))
    # A median of 0s and 1s into bool: scipy's median, as bools.
    binary = _image(tmp_path, "binary.zarr", (data % 2).astype("u2"))
    done = chunkflow_command("filter", binary, tmp_path / "b.zarr", "--median", "3",
                             "--dtype", "bool")
    assert done.returncode == 0, done.stderr
    got = chunkflow.open(str(tmp_path / "b.zarr"), mode="r")
    assert got.dtype == np.bool_
    np.testing.assert_array_equal(got[:], ndimage.median_filter(data % 2, 3).astype(bool))


def test_the_default_dtype_is_the_sources(tmp_path: Path, small: tuple[Path, np.ndarray]) -> None:
    src, data = small
    done = chunkflow_command("filter", src, tmp_path / "u.zarr", "--gaussian", "2")
    assert done.returncode == 0, done.stderr
    got = chunkflow.open(str(tmp_path / "u.zarr"), mode="r")
    assert got.dtype == np.uint16  # the float64 Gaussian, rounded: 1393..13078 fit
    np.testing.assert_array_equal(got[:], np.rint(_gaussian(data, 2)).astype("u2"))
    # A float32 source is filtered in float32: scipy's own bits.
    floats = _image(tmp_path, "f.zarr", data.astype("f4") / 7)
    done = chunkflow_command("filter", floats, tmp_path / "f2.zarr", "--gaussian", "2")
    assert done.returncode == 0, done.stderr
    got = chunkflow.open(str(tmp_path / "f2.zarr"), mode="r")
    expected = ndimage.gaussian_filter(data.astype("f4") / 7, 2)
    assert got.dtype == np.float32
    np.testing.assert_array_equal(got[:].view("u4"), expected.view("u4"))


def test_float16_is_an_output_dtype(tmp_path: Path, small: tuple[Path, np.ndarray]) -> None:
    # scipy takes no float16: the filter computes in float64 and the result is cast.
    src, data = small
    done = chunkflow_command("filter", src, tmp_path / "h.zarr", "--gaussian", "2",
                             "--dtype", "float16")
    assert done.returncode == 0, done.stderr
    got = chunkflow.open(str(tmp_path / "h.zarr"), mode="r")
    assert got.dtype == np.float16
    np.testing.assert_array_equal(got[:].view("u2"), _gaussian(data, 2).astype("f2").view("u2"))
    # A value beyond float16's 65504 would become inf: refused.
    big = _image(tmp_path, "big.zarr", np.full((20, 20), 70000, "u4"))
    line = _refused(chunkflow_command("filter", big, tmp_path / "inf.zarr", "--uniform", "3",
                                      "--dtype", "float16"), 1)
    assert "overflows to inf" in line and not (tmp_path / "inf.zarr").exists()


@pytest.mark.parametrize("argv, source, needle", [
    (["--gaussian", "2", "--dtype", "U4"], None, "the filters write numbers"),
    (["--gaussian", "2", "--dtype", "datetime64[s]"], None, "the filters write numbers"),
    (["--median", "3"], np.full((8, 8), 1 + 1j, "c8"), "does not take complex"),
    (["--gaussian", "2", "--casting", "same_kind"], None,
     "float64 to the output's dtype uint16 under --casting 'same_kind'"),
])
def test_what_the_filters_cannot_write_is_refused_before_anything_is_created(
        tmp_path: Path, small: tuple[Path, np.ndarray], argv: list[str],
        source: np.ndarray | None, needle: str) -> None:
    src = small[0] if source is None else _image(tmp_path, "c.zarr", source)
    before = fingerprint(tmp_path)
    line = _refused(chunkflow_command("filter", src, tmp_path / "out.zarr", *argv), 2)
    assert needle in line
    assert not (tmp_path / "out.zarr").exists() and fingerprint(tmp_path) == before


# -- chunkflow rechunk --dtype: the same rule, for a copy -------------------------------


def test_rechunk_dtype_never_wraps_values(tmp_path: Path, small: tuple[Path, np.ndarray]) -> None:
    """``rechunk --dtype uint8`` of values up to 13078 wrote them modulo 256, exit 0."""
    src, data = small
    before = fingerprint(tmp_path)
    common = ["--chunks", "20,30", "--max-memory", "64MiB"]
    done = chunkflow_command("rechunk", src, tmp_path / "r.zarr", *common, "--dtype", "uint8")
    assert done.returncode == 1, done.stderr
    line = done.stderr.strip().splitlines()[-1]
    assert line.startswith("chunkflow rechunk: error: the values do not fit --dtype uint8")
    assert "out of its range 0..255" in line and "--casting unsafe" in line
    assert fingerprint(tmp_path) == before  # the unfinished output is removed
    done = chunkflow_command("rechunk", src, tmp_path / "r.zarr", *common, "--dtype", "uint8",
                             "--casting", "unsafe")
    assert done.returncode == 0, done.stderr
    np.testing.assert_array_equal(chunkflow.open(str(tmp_path / "r.zarr"), mode="r")[:],
                                  data.astype("u1"))  # numpy's wrap, asked for
    done = chunkflow_command("rechunk", src, tmp_path / "f.zarr", *common, "--dtype", "float32")
    assert done.returncode == 0, done.stderr
    np.testing.assert_array_equal(chunkflow.open(str(tmp_path / "f.zarr"), mode="r")[:],
                                  data.astype("f4"))
    done = chunkflow_command("rechunk", src, tmp_path / "s.zarr", *common, "--dtype", "U3")
    assert done.returncode == 2 and "--casting unsafe" in done.stderr, done.stderr
    assert not (tmp_path / "s.zarr").exists()
