"""The ``chunkflow`` command line: every command on small data, errors, options."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import dask
import dask.threaded
import numpy as np
import pytest

import chunkflow
from chunkflow.cli import main
from chunkflow.cli import options as cli_options
from chunkflow.cli.cleanup import removed_on_failure
from chunkflow.cli.errors import run_guarded

ROOT = Path(__file__).resolve().parents[2]  # the tree whose chunkflow is under test
COMMANDS = ("info", "tree", "copy", "filter", "pyramid", "reduce", "demo")


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def run_module(*argv: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-m", "chunkflow", *argv], capture_output=True,
                          text=True, env=env, cwd=cwd, timeout=120)


def image(shape: tuple[int, ...] = (60, 50), seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, 1000, shape).astype("uint16")


@pytest.fixture
def stored(tmp_path: Path) -> tuple[str, np.ndarray]:
    """A small v2 uint16 array on disk with chunks that do not divide its shape."""
    data = image()
    z = chunkflow.create(data.shape, chunks=(16, 20), dtype="uint16", zarr_format=2,
                         store=str(tmp_path / "src.zarr"), attributes={"origin": "test"})
    z[:] = data
    return str(tmp_path / "src.zarr"), data


# -- the top level ---------------------------------------------------------------------


def test_version_and_help_say_what_chunkflow_is(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "--version")
    assert code == 0 and out.strip() == f"chunkflow {chunkflow.__version__}"
    code, out, _ = run(capsys, "--help")
    assert code == 0
    assert "Zarr" in out and "The ``chunkflow`` command line" not in out
    listed = [line.split()[0] for line in out.splitlines() if line.startswith("    ")]
    assert [name for name in listed if name in COMMANDS] == list(COMMANDS)


@pytest.mark.parametrize("command", COMMANDS)
def test_every_command_has_help(capsys: pytest.CaptureFixture[str], command: str) -> None:
    code, out, _ = run(capsys, command, "--help")
    assert code == 0 and f"usage: chunkflow {command}" in out


def test_no_command_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys)
    assert code == 2 and "COMMAND" in err and "demo" in err


@pytest.mark.slow
def test_python_dash_m_runs_the_command_line(tmp_path: Path) -> None:
    done = run_module("--version")
    assert done.returncode == 0 and done.stdout.strip() == f"chunkflow {chunkflow.__version__}"
    done = run_module("info", str(tmp_path / "missing.zarr"))
    assert done.returncode == 1 and done.stdout == ""
    assert len(done.stderr.splitlines()) == 1 and "missing.zarr" in done.stderr


# -- info and tree ---------------------------------------------------------------------


def test_info_of_an_array_and_a_group(capsys: pytest.CaptureFixture[str],
                                      stored: tuple[str, np.ndarray], tmp_path: Path) -> None:
    path, data = stored
    code, out, _ = run(capsys, "info", path)
    assert code == 0 and "uint16" in out and str(data.shape) in out and "(16, 20)" in out
    root = chunkflow.group(store=str(tmp_path / "g.zarr"))
    root.create_group("raw").zeros("image", shape=(8, 8), dtype="f4")
    code, out, _ = run(capsys, "info", tmp_path / "g.zarr")
    assert code == 0 and "Group" in out


def test_tree_lists_groups_and_arrays(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    root = chunkflow.group(store=str(tmp_path / "g.zarr"))
    root.create_group("raw").zeros("image", shape=(8, 8), dtype="f4")
    root.zeros("labels", shape=(4,), dtype="u1")
    code, out, _ = run(capsys, "tree", tmp_path / "g.zarr")
    assert code == 0
    assert "raw" in out and "image (8, 8) float32" in out and "labels (4,) uint8" in out
    code, out, _ = run(capsys, "tree", tmp_path / "g.zarr", "--level", "1")
    assert code == 0 and "image" not in out


# -- copy ------------------------------------------------------------------------------


def test_copy_v2_to_sharded_v3_rechunks_and_recompresses(
    capsys: pytest.CaptureFixture[str], stored: tuple[str, np.ndarray], tmp_path: Path
) -> None:
    path, data = stored
    dst = tmp_path / "dst.zarr"
    code, out, err = run(capsys, "copy", path, dst, "--zarr-format", "3", "--chunks", "8,8",
                         "--shards", "16,24", "--compressor", "zstd:3")
    assert code == 0, err
    assert "Zarr v2" in out and "Zarr v3, shards (16, 24) of chunks (8, 8)" in out
    copy = chunkflow.open(str(dst), mode="r")
    np.testing.assert_array_equal(copy[:], data)
    assert copy.zarr_format == 3 and (copy.shards, copy.chunks) == ((16, 24), (8, 8))
    assert copy.attrs["origin"] == "test"
    meta = json.loads((dst / "zarr.json").read_text())
    (sharding,) = meta["codecs"]
    assert sharding["name"] == "sharding_indexed"
    assert sharding["configuration"]["chunk_shape"] == [8, 8]
    assert [c["name"] for c in sharding["configuration"]["codecs"]] == ["bytes", "zstd"]


def test_zarr_python_reads_the_sharded_copy(
    capsys: pytest.CaptureFixture[str], stored: tuple[str, np.ndarray], tmp_path: Path
) -> None:
    zarr = pytest.importorskip("zarr")
    path, data = stored
    assert run(capsys, "copy", path, tmp_path / "dst.zarr", "--shards", "32,25")[0] == 0
    np.testing.assert_array_equal(zarr.open_array(str(tmp_path / "dst.zarr"), mode="r")[:], data)


def test_copy_to_v2_without_compression(
    capsys: pytest.CaptureFixture[str], stored: tuple[str, np.ndarray], tmp_path: Path
) -> None:
    path, data = stored
    first = tmp_path / "v3.zarr"
    assert run(capsys, "copy", path, first, "--zarr-format", "3")[0] == 0
    dst = tmp_path / "v2.zarr"
    code, _, err = run(capsys, "copy", first, dst, "--zarr-format", "2", "--chunks", "7,9",
                       "--compressor", "none", "--scheduler", "sync")
    assert code == 0, err
    meta = json.loads((dst / ".zarray").read_text())
    assert meta["chunks"] == [7, 9] and meta["compressor"] is None
    np.testing.assert_array_equal(chunkflow.open(str(dst), mode="r")[:], data)


def test_copy_in_many_slabs_with_a_bar(capsys: pytest.CaptureFixture[str],
                                       monkeypatch: pytest.MonkeyPatch,
                                       stored: tuple[str, np.ndarray], tmp_path: Path) -> None:
    from chunkflow.cli import copy as copy_command

    monkeypatch.setattr(copy_command, "SLAB_BYTES", 700)  # 7 rows of 50 uint16: 9 slabs
    monkeypatch.setattr(cli_options, "stderr_is_tty", lambda: True)
    code, _, err = run(capsys, "copy", stored[0], tmp_path / "dst.zarr", "--chunks", "7,9")
    assert code == 0 and "9/9" in err and "slab" in err
    np.testing.assert_array_equal(chunkflow.open(str(tmp_path / "dst.zarr"), mode="r")[:],
                                  stored[1])


def test_copy_of_a_zero_dimensional_array(capsys: pytest.CaptureFixture[str],
                                          tmp_path: Path) -> None:
    z = chunkflow.create((), dtype="f8", store=str(tmp_path / "s.zarr"))
    z[...] = 2.5
    assert run(capsys, "copy", tmp_path / "s.zarr", tmp_path / "t.zarr", "--zarr-format", "2")[0] == 0
    assert float(chunkflow.open(str(tmp_path / "t.zarr"), mode="r")[...]) == 2.5


def test_copy_refuses_to_replace_without_overwrite(
    capsys: pytest.CaptureFixture[str], stored: tuple[str, np.ndarray]
) -> None:
    path, data = stored
    code, out, err = run(capsys, "copy", path, path)
    assert code == 2 and out == ""  # refused before anything is read: a usage error
    # DST is SRC: --overwrite would delete it before it is read, so it is not offered.
    assert "is SRC" in err and "Nothing was read or written" in err and "Traceback" not in err
    other = str(Path(path).with_name("other.zarr"))
    assert run(capsys, "copy", path, other)[0] == 0
    code, out, err = run(capsys, "copy", path, other)
    assert code == 2 and "already holds an array; pass --overwrite" in err


@pytest.mark.parametrize("argv, needle", [
    (["--shards", "16,16", "--zarr-format", "2"], "--shards needs --zarr-format 3"),
    (["--chunks", "8,8,8"], "has 3 dimensions; the source has 2"),
    (["--chunks", "5,5", "--shards", "16,16"], "must divide"),
    (["--chunks", "8,a"], "is not a shape"),
    (["--compressor", "lzw"], "is not a compressor"),
    (["--compressor", "zstd:99"], "argument --compressor: 'zstd:99': codec 'zstd': level"),
    (["--compressor", "blosc:foo:5"], "argument --compressor: 'blosc:foo:5': codec 'blosc'"),
])
def test_copy_bad_arguments_exit_2(capsys: pytest.CaptureFixture[str],
                                   stored: tuple[str, np.ndarray], tmp_path: Path,
                                   argv: list[str], needle: str) -> None:
    code, _, err = run(capsys, "copy", stored[0], tmp_path / "dst.zarr", *argv)
    assert code == 2 and needle in err and "Traceback" not in err
    assert not (tmp_path / "dst.zarr").exists()


# -- filter ----------------------------------------------------------------------------


@pytest.mark.parametrize("argv, expected", [
    (["--gaussian", "1.5", "--dtype", "float32"],
     lambda x: __import__("scipy.ndimage").ndimage.gaussian_filter(x.astype("f4"), 1.5)),
    (["--median", "5"], lambda x: __import__("scipy.ndimage").ndimage.median_filter(x, 5)),
    # An integer output holds the float64 filter rounded to the nearest integer.
    (["--uniform", "3", "--boundary", "nearest"],
     lambda x: np.rint(__import__("scipy.ndimage").ndimage.uniform_filter(
         x.astype("f8"), 3, mode="nearest")).astype(x.dtype)),
    (["--gaussian", "2", "--boundary", "periodic", "--dtype", "float64"],
     lambda x: __import__("scipy.ndimage").ndimage.gaussian_filter(x.astype("f8"), 2,
                                                                   mode="wrap")),
    (["--median", "3", "--boundary", "constant"],
     lambda x: __import__("scipy.ndimage").ndimage.median_filter(x, 3, mode="constant")),
])
def test_filter_equals_scipy_on_the_whole_image(
    capsys: pytest.CaptureFixture[str], stored: tuple[str, np.ndarray], tmp_path: Path,
    argv: list[str], expected: Any,
) -> None:
    pytest.importorskip("scipy")
    path, data = stored
    code, out, err = run(capsys, "filter", path, tmp_path / "out.zarr", *argv)
    assert code == 0, err
    assert "halo" in out
    result = chunkflow.open(str(tmp_path / "out.zarr"), mode="r")
    assert result.chunks == (16, 20) and result.zarr_format == 2
    np.testing.assert_allclose(result[:], expected(data), rtol=1e-6)


@pytest.mark.slow
def test_filter_on_processes(capsys: pytest.CaptureFixture[str],
                             stored: tuple[str, np.ndarray], tmp_path: Path) -> None:
    ndimage = pytest.importorskip("scipy.ndimage")
    path, data = stored
    code, _, err = run(capsys, "filter", path, tmp_path / "out.zarr", "--uniform", "5",
                       "--scheduler", "processes")
    assert code == 0, err
    np.testing.assert_array_equal(chunkflow.open(str(tmp_path / "out.zarr"), mode="r")[:],
                                  np.rint(ndimage.uniform_filter(data.astype("f8"), 5))
                                  .astype(data.dtype))


def test_filter_needs_exactly_one_filter(capsys: pytest.CaptureFixture[str],
                                         stored: tuple[str, np.ndarray], tmp_path: Path) -> None:
    out = tmp_path / "out.zarr"
    assert run(capsys, "filter", stored[0], out)[0] == 2
    assert run(capsys, "filter", stored[0], out, "--median", "3", "--uniform", "3")[0] == 2
    code, _, err = run(capsys, "filter", stored[0], out, "--gaussian", "-1")
    assert code == 2 and "must be positive" in err and not out.exists()


def test_a_filter_too_wide_for_memory_names_its_option(
        capsys: pytest.CaptureFixture[str], stored: tuple[str, np.ndarray],
        tmp_path: Path) -> None:
    out = tmp_path / "out.zarr"
    code, _, err = run(capsys, "filter", stored[0], out, "--median", "200001")
    assert code == 2 and not out.exists()
    assert_one_line(err, "chunkflow filter: error: --median 200001 needs a halo of 100000 "
                         "per side", "choose a smaller --median", "removed the unfinished")


def test_filter_without_scipy(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
                              stored: tuple[str, np.ndarray], tmp_path: Path) -> None:
    monkeypatch.setitem(sys.modules, "scipy", None)  # import scipy now fails
    code, _, err = run(capsys, "filter", stored[0], tmp_path / "out.zarr", "--median", "3")
    assert code == 1 and not (tmp_path / "out.zarr").exists()
    assert_one_line(err, "chunkflow filter: error:", "need scipy, which is not installed",
                    "pip install scipy")


# -- failures part-way: errors name array and chunk, and what the run made is removed ----


def _garble(path: Path, at_end: bool) -> None:
    """Overwrite a stored chunk's first half (codec data) or last 32 bytes (a shard's
    index) with a fixed pattern: still present, no longer decodable."""
    data = bytearray(path.read_bytes())
    n = 32 if at_end else len(data) // 2
    where = slice(len(data) - n, len(data)) if at_end else slice(0, n)
    data[where] = b"\x5a" * n
    path.write_bytes(bytes(data))


CORRUPTIONS = {  # name: (creation keywords, key of the garbled chunk or shard, at its end)
    "v2 chunk": ({"zarr_format": 2, "chunks": (16, 16)}, "1.1", False),
    "v3 chunk": ({"zarr_format": 3, "chunks": (16, 16)}, "c/1/1", False),
    "shard index": ({"chunks": (8, 8), "shards": (16, 16)}, "c/1/1", True),
    "inner chunk": ({"chunks": (8, 8), "shards": (16, 16)}, "c/1/1", False),
}


def corrupt_source(tmp_path: Path, case: str) -> tuple[Path, str, np.ndarray]:
    """A 48x48 array with one garbled chunk (or shard); its path, key and values."""
    kwargs, key, at_end = CORRUPTIONS[case]
    path = tmp_path / "src.zarr"
    data = image((48, 48))
    z = chunkflow.open_array(str(path), mode="w", shape=data.shape, dtype=data.dtype,
                             **kwargs)
    z[:] = data
    _garble(path / key, at_end)
    return path, key, data


@pytest.mark.parametrize("case", list(CORRUPTIONS))
@pytest.mark.parametrize("command", [["filter", "--uniform", "3"], ["copy"]])
def test_a_corrupt_chunk_names_it_and_the_output_is_removed(
        capsys: pytest.CaptureFixture[str], tmp_path: Path, case: str,
        command: list[str]) -> None:
    src, key, data = corrupt_source(tmp_path, case)
    dst = tmp_path / "new" / "out.zarr"  # "new" too is made by the run, and removed
    code, out, err = run(capsys, command[0], src, dst, *command[1:])
    assert code == 1 and out == ""
    assert_one_line(err, f"chunkflow {command[0]}: error: {str(src)!r}, array '/': ",
                    f"{key!r} could not be decoded: codec ",
                    f"removed the unfinished {str(tmp_path / 'new')!r} that this run created")
    assert not (tmp_path / "new").exists()
    # Repaired, the same command runs again: no --overwrite, nothing left in the way.
    chunkflow.open(str(src), mode="r+")[:] = data
    code, _, err = run(capsys, command[0], src, dst, *command[1:])
    assert code == 0, err
    assert chunkflow.open(str(dst), mode="r").shape == data.shape


@pytest.mark.slow
@pytest.mark.parametrize("scheduler", ["threads", "processes"])
def test_a_destination_that_was_there_is_never_removed(
        capsys: pytest.CaptureFixture[str], tmp_path: Path, scheduler: str) -> None:
    src, key, _ = corrupt_source(tmp_path, "v3 chunk")
    empty = tmp_path / "empty.zarr"  # a folder the user made for the result
    empty.mkdir()
    previous = tmp_path / "previous.zarr"  # an earlier result, replaced with --overwrite
    chunkflow.zeros((4, 4), chunks=(2, 2), store=str(previous))
    for dst, extra in ((empty, []), (previous, ["--overwrite"])):
        code, _, err = run(capsys, "copy", src, dst, "--scheduler", scheduler, *extra)
        assert code == 1 and f"{key!r} could not be decoded" in err
        assert "removed" not in err and dst.is_dir()


def test_an_interrupted_command_removes_what_it_created(
        capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    out = tmp_path / "out.zarr"

    def interrupted(args: Any) -> int:  # a command that Ctrl-C stops half-way
        with removed_on_failure(str(out)):
            out.mkdir()
            raise KeyboardInterrupt
        return 0

    assert run_guarded("copy", interrupted, None) == 130
    err = capsys.readouterr().err
    assert err == f"chunkflow copy: interrupted; removed the unfinished {str(out)!r} that " \
                  "this run created\n"
    assert not out.exists()


class _CountingPool(dask.threaded.ContextAwareThreadPoolExecutor):
    """dask's pool class, counting the tasks it is running right now."""

    made: list[_CountingPool] = []

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.running = 0
        self._count = threading.Lock()
        self.made.append(self)

    def submit(self, fn: Any, /, *args: Any, **kwargs: Any) -> Any:
        def counted(*args: Any, **kwargs: Any) -> Any:
            with self._count:
                self.running += 1
            try:
                return fn(*args, **kwargs)
            finally:
                with self._count:
                    self.running -= 1
        return super().submit(counted, *args, **kwargs)


def test_chunks_still_being_written_do_not_outlive_the_cleanup(
        capsys: pytest.CaptureFixture[str], tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    # Many chunks, the very first one corrupt: dask raises while other threads still
    # filter and write theirs (measured: without waiting for them, out.zarr came back
    # within a second of its removal); the cleanup waits, so nothing outlives it.
    monkeypatch.setattr(dask.threaded, "ContextAwareThreadPoolExecutor", _CountingPool)
    monkeypatch.setattr(_CountingPool, "made", [])
    data = image((2048, 2048))
    src = tmp_path / "src.zarr"
    z = chunkflow.create(data.shape, chunks=(128, 128), dtype=data.dtype, store=str(src))
    z[:] = data
    _garble(src / "c" / "0" / "0", at_end=False)
    dst = tmp_path / "out.zarr"
    code, _, err = run(capsys, "filter", src, dst, "--median", "5")
    assert code == 1 and "removed the unfinished" in err
    # The command ran its tasks in a pool of its own, and none of them still runs.
    assert [pool.running for pool in _CountingPool.made] == [0]
    assert not dst.exists()


# -- reduce ----------------------------------------------------------------------------


def test_reduce_prints_the_statistics(capsys: pytest.CaptureFixture[str],
                                      stored: tuple[str, np.ndarray]) -> None:
    path, data = stored
    code, out, _ = run(capsys, "reduce", path, "--op", "mean", "--op", "std", "--op", "min",
                       "--op", "max", "--op", "sum")
    assert code == 0
    values = {line.split()[0]: float(line.split()[1]) for line in out.splitlines()}
    expected = {op: float(getattr(data.astype("f8"), op)()) for op in values}
    assert values.keys() == {"mean", "std", "min", "max", "sum"}
    for op, value in values.items():
        assert value == pytest.approx(expected[op], rel=1e-6)


def test_reduce_of_a_corrupt_chunk_names_path_array_and_chunk(
        capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    src, key, _ = corrupt_source(tmp_path, "v2 chunk")
    code, out, err = run(capsys, "reduce", src)
    assert code == 1 and out == ""
    assert_one_line(err, f"chunkflow reduce: error: {str(src)!r}, array '/': chunk {key!r} "
                         "could not be decoded: codec ")


def test_reduce_keeps_to_max_memory_or_says_it_is_too_small(
        capsys: pytest.CaptureFixture[str], stored: tuple[str, np.ndarray]) -> None:
    path, data = stored
    code, out, _ = run(capsys, "reduce", path, "--op", "max", "--max-memory", "64 KiB")
    assert code == 0 and out.split() == ["max", str(int(data.max()))]
    # One 16 x 20 uint16 chunk (640 B), its float64 work and the next block: 11.25 KiB.
    code, out, err = run(capsys, "reduce", path, "--op", "histogram", "--max-memory", "1 KiB")
    assert code == 2 and out == ""
    assert_one_line(err, "chunkflow reduce: error: histogram: each task would need about "
                         "11.25 kiB", "more than --max-memory 1.00 kiB; raise --max-memory")


def test_reduce_histogram_is_a_text_plot(capsys: pytest.CaptureFixture[str],
                                         stored: tuple[str, np.ndarray]) -> None:
    path, data = stored
    code, out, _ = run(capsys, "reduce", path, "--op", "histogram", "--bins", "5")
    assert code == 0
    rows = [line for line in out.splitlines() if line.startswith("[")]
    counts, _ = np.histogram(data, bins=5)
    assert [int(row.split()[2]) for row in rows] == counts.tolist()
    longest = max(rows, key=lambda row: int(row.split()[2]))
    assert longest.endswith("#" * 40)


def test_reduce_histogram_of_nan_asks_for_range_in_cli_words(
        capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    data = np.array([[1, 2, np.nan], [4, -0.0, 6]], "f4")
    path = str(tmp_path / "nan.zarr")
    chunkflow.array(data, chunks=(1, 2), store=path)
    code, out, err = run(capsys, "reduce", path, "--op", "histogram", "--bins", "3")
    assert code == 1 and out == ""
    assert_one_line(err, "not finite", "pass --range LOW,HIGH")
    code, out, _ = run(capsys, "reduce", path, "--op", "histogram", "--bins", "3",
                       "--range=-1,7")
    assert code == 0
    counts, _ = np.histogram(data, bins=3, range=(-1, 7))  # NaN is not counted
    rows = [line for line in out.splitlines() if line.startswith("[")]
    assert [int(row.split()[-2]) for row in rows] == counts.tolist()
    for bad in ("5,1", "0,inf", "1", "a,b"):
        code, _, err = run(capsys, "reduce", path, "--op", "histogram", f"--range={bad}")
        assert code == 2 and "is not LOW,HIGH" in err


# -- errors ----------------------------------------------------------------------------


def assert_one_line(err: str, *needles: str) -> None:
    assert "Traceback" not in err
    assert len(err.strip().splitlines()) == 1, err
    for needle in needles:
        assert needle in err


def test_a_bad_path_is_one_line_and_exit_1(capsys: pytest.CaptureFixture[str],
                                           tmp_path: Path) -> None:
    for command in ("info", "tree", "reduce"):
        code, out, err = run(capsys, command, tmp_path / "nothing.zarr")
        assert code == 1 and out == ""
        assert_one_line(err, f"chunkflow {command}: error:", "nothing.zarr")


def test_an_unknown_protocol_is_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "info", "nosuchproto://bucket/a.zarr")
    assert code == 1
    assert_one_line(err, "unknown URL protocol 'nosuchproto'", "'nosuchproto://bucket/a.zarr'")


def test_bad_arguments_exit_2(capsys: pytest.CaptureFixture[str],
                              stored: tuple[str, np.ndarray]) -> None:
    path, _ = stored
    code, _, err = run(capsys, "reduce", path, "--op", "median")
    assert code == 2 and "invalid choice: 'median'" in err and "Traceback" not in err
    code, _, err = run(capsys, "info", path, "--storage-option", "anon")
    assert code == 2 and "'anon' is not KEY=VALUE" in err
    code, _, err = run(capsys, "info", path, "--storage-option", "anon=true")
    assert code == 2 and "--storage-option applies to URLs" in err
    code, _, err = run(capsys, "reduce", path, "--scheduler", "bogus")
    assert code == 2 and "scheduler address" in err


def test_a_group_where_an_array_is_needed(capsys: pytest.CaptureFixture[str],
                                          tmp_path: Path) -> None:
    chunkflow.group(store=str(tmp_path / "g.zarr"))
    code, _, err = run(capsys, "reduce", tmp_path / "g.zarr")
    assert code == 2
    assert_one_line(err, "holds a group, not an array", "chunkflow tree")


def test_debug_shows_the_traceback(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    missing = tmp_path / "x.zarr"
    for argv in (["--debug", "info", missing], ["info", missing, "--debug"]):
        code, _, err = run(capsys, *argv)
        assert code == 1
        assert "Traceback (most recent call last)" in err
        assert err.strip().splitlines()[-1].startswith("chunkflow info: error:")


def test_missing_credentials_give_a_hint(capsys: pytest.CaptureFixture[str],
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    class NoCredentialsError(Exception):  # what botocore raises, without botocore
        pass

    def refuse(*args: Any, **kwargs: Any) -> None:
        raise NoCredentialsError("Unable to locate credentials")

    monkeypatch.setattr(chunkflow, "open", refuse)
    code, _, err = run(capsys, "info", "s3://some-bucket/image.zarr")
    assert code == 1
    assert_one_line(err, "cannot open 's3://some-bucket/image.zarr'",
                    "Unable to locate credentials", "--storage-option anon=true")
    assert err.count("anon=true") == 1


def test_s3_with_storage_options(capsys: pytest.CaptureFixture[str], s3_server: dict[str, Any],
                                 stored: tuple[str, np.ndarray]) -> None:
    flags = [f"--storage-option={key}={json.dumps(value) if isinstance(value, dict) else value}"
             for key, value in s3_server.items()]
    url = "s3://chunkflow-test/cli-copy.zarr"
    code, _, err = run(capsys, "copy", stored[0], url, "--zarr-format", "3", *flags)
    assert code == 0, err
    code, out, _ = run(capsys, "reduce", url, "--op", "max", *flags)
    assert code == 0 and float(out.split()[1]) == float(stored[1].max())
    code, _, err = run(capsys, "info", "s3://no-such-bucket-here/x.zarr", *flags)
    assert code == 1
    assert_one_line(err, "chunkflow info: error:", "no-such-bucket-here")


def test_a_failed_copy_to_s3_removes_what_it_wrote_there(
        capsys: pytest.CaptureFixture[str], s3_server: dict[str, Any],
        tmp_path: Path) -> None:
    import fsspec

    flags = [f"--storage-option={key}={json.dumps(value) if isinstance(value, dict) else value}"
             for key, value in s3_server.items()]
    src, key, _ = corrupt_source(tmp_path, "v3 chunk")
    fs = fsspec.filesystem("s3", skip_instance_cache=True, **s3_server)
    url = "s3://chunkflow-test/failed.zarr"
    code, _, err = run(capsys, "copy", src, url, *flags)
    assert code == 1 and f"chunk {key!r} could not be decoded" in err
    assert "removed the unfinished" in err
    fs.invalidate_cache()
    assert not fs.exists("chunkflow-test/failed.zarr")
    # A prefix holding other data is refused before anything is read or written (a usage
    # error), never removed.
    fs.pipe("chunkflow-test/kept.zarr/notes.txt", b"mine")
    code, _, err = run(capsys, "copy", src, "s3://chunkflow-test/kept.zarr", *flags)
    assert code == 2 and "'notes.txt'" in err and "removed" not in err
    fs.invalidate_cache()
    assert fs.find("chunkflow-test/kept.zarr") == ["chunkflow-test/kept.zarr/notes.txt"]
    assert fs.cat("chunkflow-test/kept.zarr/notes.txt") == b"mine"


def test_storage_option_values_are_json_when_they_parse() -> None:
    parse = cli_options.parse_storage_option
    assert parse("anon=true") == ("anon", True)
    assert parse("retries=3") == ("retries", 3)
    assert parse('client_kwargs={"region_name": "eu"}') == ("client_kwargs", {"region_name": "eu"})
    assert parse("profile=lab=1") == ("profile", "lab=1")


# -- progress --------------------------------------------------------------------------


def test_progress_bar_on_a_terminal_unless_quiet(capsys: pytest.CaptureFixture[str],
                                                 monkeypatch: pytest.MonkeyPatch,
                                                 stored: tuple[str, np.ndarray],
                                                 tmp_path: Path) -> None:
    path, _ = stored
    assert run(capsys, "reduce", path, "--op", "sum")[2] == ""  # not a terminal: no bar
    monkeypatch.setattr(cli_options, "stderr_is_tty", lambda: True)
    code, _, err = run(capsys, "reduce", path, "--op", "sum")
    assert code == 0 and "chunkflow" in err and "block" in err
    for argv in (["--quiet", "reduce", path], ["reduce", path, "-q"]):
        code, _, err = run(capsys, *argv, "--op", "sum")
        assert code == 0 and err == ""
    code, _, err = run(capsys, "copy", path, tmp_path / "c.zarr")  # one slab: a block bar
    assert code == 0 and "block" in err
    code, _, err = run(capsys, "filter", path, tmp_path / "f.zarr", "--median", "3", "-q")
    assert code == 0 and err == ""


# -- demo ------------------------------------------------------------------------------


@pytest.mark.slow
def test_demo_keeps_its_results(capsys: pytest.CaptureFixture[str], tmp_path: Path,
                                monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    code, out, err = run(capsys, "demo", "--size", "256", "--chunk", "64")
    assert code == 0, err
    folder = tmp_path / "chunkflow-demo"
    for name in ("raw.zarr", "smooth.zarr", "before-after.png"):
        assert str(folder / name) in out
    assert "kept" in out and "map_chunks" in out and " s\n" in out
    raw = chunkflow.open(str(folder / "raw.zarr"), mode="r")
    smooth = chunkflow.open(str(folder / "smooth.zarr"), mode="r")
    assert raw.shape == smooth.shape == (256, 256) and raw.dtype == np.uint16
    assert float(smooth[:].std()) < float(raw[:].std())  # the filter smoothed it
    if importlib.util.find_spec("matplotlib") is not None:
        assert (folder / "before-after.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_demo_image_is_larger_than_the_cache_budget(capsys: pytest.CaptureFixture[str],
                                                    tmp_path: Path) -> None:
    budget_before = chunkflow.config.get("chunkflow.cache.max-bytes")
    code, out, _ = run(capsys, "demo", "--size", "128", "--chunk", "32", "--folder",
                       tmp_path / "d", "--scheduler", "sync")
    assert code == 0
    assert "128x128 uint16 image (32.00 kiB)" in out and "cache budget 16.00 kiB" in out
    assert chunkflow.config.get("chunkflow.cache.max-bytes") == budget_before  # restored
    assert (tmp_path / "d" / "smooth.zarr").exists()


def test_a_scheduler_address(capsys: pytest.CaptureFixture[str],
                             stored: tuple[str, np.ndarray], tmp_path: Path) -> None:
    distributed = pytest.importorskip("distributed")
    path, data = stored
    with distributed.LocalCluster(n_workers=1, threads_per_worker=2, processes=False,
                                  dashboard_address=":0") as cluster:
        code, out, err = run(capsys, "reduce", path, "--op", "max",
                             "--scheduler", cluster.scheduler_address)
        assert code == 0, err
        assert float(out.split()[1]) == float(data.max())
        code, _, err = run(capsys, "filter", path, tmp_path / "out.zarr", "--uniform", "3",
                           "--scheduler", cluster.scheduler_address)
        assert code == 0, err
    ndimage = pytest.importorskip("scipy.ndimage")
    np.testing.assert_array_equal(chunkflow.open(str(tmp_path / "out.zarr"), mode="r")[:],
                                  np.rint(ndimage.uniform_filter(data.astype("f8"), 3))
                                  .astype(data.dtype))


def test_demo_without_matplotlib_skips_the_picture(capsys: pytest.CaptureFixture[str],
                                                   monkeypatch: pytest.MonkeyPatch,
                                                   tmp_path: Path) -> None:
    # Importing what the demo needs now fails (blocking "matplotlib" itself would break
    # a matplotlib that an earlier test already imported).
    for name in ("matplotlib.backends.backend_agg", "matplotlib.figure"):
        monkeypatch.setitem(sys.modules, name, None)
    code, out, err = run(capsys, "demo", "--size", "64", "--chunk", "32", "--folder", tmp_path)
    assert code == 0, err
    assert "matplotlib is not installed: no PNG (python -m pip install matplotlib" in out
    assert 'python -m pip install ".[plot]"' in out  # the README's first line, as written
    assert not (tmp_path / "before-after.png").exists()
    assert (tmp_path / "smooth.zarr").exists()


def test_demo_without_scipy_says_demo_and_creates_nothing(
        capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
        tmp_path: Path) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setitem(sys.modules, "scipy", None)  # a broken install: import scipy fails
    code, out, err = run(capsys, "demo", "--size", "64", "--chunk", "32")
    assert code == 1 and out == ""
    assert_one_line(err, "chunkflow demo: error:", "need scipy", "pip install scipy")
    assert "chunkflow filter" not in err
    assert list(tmp_path.iterdir()) == []


@pytest.mark.slow
def test_a_failed_demo_removes_the_folder_it_made(capsys: pytest.CaptureFixture[str],
                                                  monkeypatch: pytest.MonkeyPatch,
                                                  tmp_path: Path) -> None:
    # Fails after the image is written: the scheduler named is unreachable.
    monkeypatch.chdir(tmp_path)
    with dask.config.set({"distributed.comm.timeouts.connect": "1s"}):
        code, out, err = run(capsys, "demo", "--size", "64", "--chunk", "32",
                             "--scheduler", "tcp://127.0.0.1:1")
    assert code == 1 and "make the image" in out
    assert_one_line(err, "chunkflow demo: error:", "127.0.0.1:1",
                    f"removed the unfinished {str(tmp_path / 'chunkflow-demo')!r}")
    assert list(tmp_path.iterdir()) == []


def test_the_demo_refuses_a_folder_holding_other_data(capsys: pytest.CaptureFixture[str],
                                                       tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("mine")
    (tmp_path / "smooth.zarr").write_text("a file where the demo wants a folder")
    code, out, err = run(capsys, "demo", "--size", "64", "--chunk", "32", "--folder", tmp_path)
    assert code == 2 and out == ""
    assert_one_line(err, "chunkflow demo: error:", "'notes.txt', 'smooth.zarr'",
                    "which the demo did not write", "choose another --folder")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["notes.txt", "smooth.zarr"]
    assert (tmp_path / "notes.txt").read_text() == "mine"


@pytest.mark.parametrize("argv, option, wrong", [
    (["--chunk", "0"], "argument --chunk: must be from 16 to 65536, got 0", "--size"),
    (["--size", "8"], "argument --size: must be from 16 to 65536, got 8", "--chunk"),
    (["--size", "100000000"], "argument --size: must be from 16 to 65536", "--chunk"),
    (["--chunk", "big"], "argument --chunk: 'big' is not an integer", "--size"),
])
def test_demo_option_errors_name_the_option_typed(capsys: pytest.CaptureFixture[str],
                                                  monkeypatch: pytest.MonkeyPatch,
                                                  tmp_path: Path, argv: list[str],
                                                  option: str, wrong: str) -> None:
    monkeypatch.chdir(tmp_path)
    code, _, err = run(capsys, "demo", *argv)
    assert code == 2 and option in err.splitlines()[-1] and wrong not in err.splitlines()[-1]
    assert list(tmp_path.iterdir()) == []
