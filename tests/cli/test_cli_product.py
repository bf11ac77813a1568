"""The command line as a product: checks before work, tables never clobbered, CLI words.

Every case runs the real command in a subprocess (``python -m chunkflow``). "Before
work" is shown by corrupting every chunk of the input: a check that ran after reading
would report the corrupt chunk instead.
"""

from __future__ import annotations

import json
import os
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from scipy import ndimage

import chunkflow
from chunkflow.cli.parser import build_parser, command_parsers
from tests.helpers.labels import blobs

ROOT = Path(__file__).resolve().parents[2]
ENV = {**os.environ, "PYTHONPATH": str(ROOT)}
PROPERTIES = "label,area,bbox,centroid,intensity_mean"


def chunkflow_cli(*argv: object, cwd: Path | None = None,
                  env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "chunkflow", *map(str, argv)],
                          capture_output=True, text=True, env=env or ENV, cwd=cwd, timeout=300)


@pytest.fixture
def labelled(tmp_path: Path) -> tuple[Path, Path, np.ndarray, np.ndarray]:
    """An image and its labels (scipy's), stored in chunks that split objects."""
    image = (blobs((70, 60), 2, 0.5, seed=3) * 1000).astype("u2")
    labels = ndimage.label(image > 500)[0].astype("u4")
    chunkflow.array(image, chunks=(16, 16), store=str(tmp_path / "image.zarr"))
    chunkflow.array(labels, chunks=(16, 16), store=str(tmp_path / "labels.zarr"))
    return tmp_path / "image.zarr", tmp_path / "labels.zarr", image, labels


def corrupt_every_chunk(array: Path) -> None:
    for chunk in (array / "c").rglob("*"):
        if chunk.is_file():
            chunk.write_bytes(b"not a chunk")


def skimage_table(labels: np.ndarray, image: np.ndarray) -> dict[str, np.ndarray]:
    from skimage.measure import regionprops_table

    return regionprops_table(labels, image, properties=PROPERTIES.split(","))


# -- checks before work --------------------------------------------------------------


@pytest.mark.parametrize(("argv", "says"), [
    (["--properties", "label,not_a_prop", "--output", "t.csv"],
     ["--properties: 'not_a_prop' is not a property", "area, area_bbox"]),
    (["--properties", "intensity_mean", "--output", "t.csv"], ["needs", "--intensity"]),
    (["--output", "t.xlsx"], ["--output 't.xlsx'", ".csv, .tsv, .parquet, .pq, .json"]),
    (["--output", "missing/t.csv"], ["the folder 'missing' does not exist"]),
    (["--output", "t.csv", "--max-memory", "lots"], ["--max-memory", "'lots' is not a size"]),
])
def test_measure_checks_its_arguments_before_reading_a_chunk(
        labelled: tuple[Path, Path, np.ndarray, np.ndarray], tmp_path: Path,
        argv: list[str], says: list[str]) -> None:
    _, labels, _, _ = labelled
    corrupt_every_chunk(labels)
    done = chunkflow_cli("measure", labels, *argv, cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    for text in says:
        assert text.replace("needs", "") in done.stderr, done.stderr
    assert "decode" not in done.stderr and "Traceback" not in done.stderr
    assert not list(tmp_path.glob("t.*")) and not list(tmp_path.glob(".t.*"))


def test_a_float_image_as_labels_is_refused_with_a_hint(
        labelled: tuple[Path, Path, np.ndarray, np.ndarray], tmp_path: Path) -> None:
    image, _, data, _ = labelled
    floats = tmp_path / "floats.zarr"
    chunkflow.array(data.astype("f4"), chunks=(16, 16), store=str(floats))
    corrupt_every_chunk(floats)
    done = chunkflow_cli("measure", floats, "--output", "t.csv", cwd=tmp_path)
    assert done.returncode == 2
    assert "holds float32 values, not integer labels" in done.stderr
    assert f"chunkflow label {floats}" in done.stderr and "--intensity" in done.stderr
    assert not (tmp_path / "t.csv").exists()


def test_an_integer_image_as_labels_is_measured_with_a_warning(
        labelled: tuple[Path, Path, np.ndarray, np.ndarray], tmp_path: Path) -> None:
    _, labels, _, _ = labelled
    rng = np.random.default_rng(4)
    microscope = (ndimage.gaussian_filter(rng.random((80, 70)), 2) * 4000).astype("u2")
    noisy = rng.integers(0, 50, (80, 70)).astype("u2")  # zeros among tiny "objects"
    for image in (microscope, noisy):
        location = tmp_path / "image.zarr"
        chunkflow.array(image, chunks=(16, 16), store=str(location), overwrite=True)
        done = chunkflow_cli("measure", location, "--output", "t.csv", "--overwrite",
                             cwd=tmp_path)
        assert done.returncode == 0, done.stderr
        assert "warning: LABELS" in done.stderr, done.stderr
        assert "looks like an intensity image" in done.stderr
    done = chunkflow_cli("measure", labels, "--output", "u.csv", cwd=tmp_path)
    assert done.returncode == 0 and "warning" not in done.stderr


# -- tables by extension, never clobbered --------------------------------------------


def read_table(path: Path) -> dict[str, np.ndarray]:
    if path.suffix == ".parquet":
        import pyarrow.parquet as pq

        return {k: np.asarray(v) for k, v in pq.read_table(path).to_pydict().items()}
    if path.suffix == ".json":
        rows = json.loads(path.read_text())
        return {name: np.array([row[name] for row in rows]) for name in rows[0]}
    delimiter = "\t" if path.suffix == ".tsv" else ","
    lines = path.read_text().splitlines()
    names = lines[0].split(delimiter)
    values = np.array([line.split(delimiter) for line in lines[1:]], dtype=float)
    return {name: values[:, i] for i, name in enumerate(names)}


@pytest.mark.parametrize("suffix", [".csv", ".tsv", ".json", ".parquet"])
def test_each_table_format_holds_scikit_image_s_values(
        labelled: tuple[Path, Path, np.ndarray, np.ndarray], tmp_path: Path,
        suffix: str) -> None:
    image, labels, data, label_data = labelled
    output = tmp_path / f"t{suffix}"
    done = chunkflow_cli("measure", labels, "--intensity", image, "--properties", PROPERTIES,
                         "--output", output)
    assert done.returncode == 0, done.stderr
    table, expected = read_table(output), skimage_table(label_data, data)
    assert list(table) == list(expected)
    for name, column in expected.items():
        np.testing.assert_allclose(table[name], column, rtol=1e-12, err_msg=name)


def test_an_existing_table_is_kept_unless_overwrite(
        labelled: tuple[Path, Path, np.ndarray, np.ndarray], tmp_path: Path) -> None:
    _, labels, _, label_data = labelled
    output = tmp_path / "curated.csv"
    output.write_text("hand-curated\n")
    done = chunkflow_cli("measure", labels, "--output", output)
    assert done.returncode == 2 and "already exists; pass --overwrite" in done.stderr
    assert output.read_text() == "hand-curated\n"
    done = chunkflow_cli("measure", labels, "--output", output, "--overwrite")
    assert done.returncode == 0, done.stderr
    assert len(output.read_text().splitlines()) == label_data.max() + 1
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".")) == []


def test_parquet_falls_back_to_fastparquet_and_else_says_what_to_install(
        labelled: tuple[Path, Path, np.ndarray, np.ndarray], tmp_path: Path) -> None:
    pytest.importorskip("fastparquet")
    _, labels, _, label_data = labelled

    def measure_without(modules: list[str], output: Path) -> subprocess.CompletedProcess[str]:
        blocked = "; ".join(f"sys.modules[{m!r}] = None" for m in modules)
        script = (f"import sys; {blocked}; from chunkflow.cli import main; "
                  f"sys.exit(main(['measure', {str(labels)!r}, '--output', {str(output)!r}, "
                  "'--properties', 'label,area']))")
        return subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                              env=ENV, timeout=300)

    done = measure_without(["pyarrow"], tmp_path / "f.parquet")
    assert done.returncode == 0, done.stderr
    import fastparquet

    frame = fastparquet.ParquetFile(str(tmp_path / "f.parquet")).to_pandas()
    np.testing.assert_array_equal(frame["label"], np.arange(1, label_data.max() + 1))
    corrupt_every_chunk(labels)  # the check comes before the first read
    done = measure_without(["pyarrow", "fastparquet"], tmp_path / "n.parquet")
    assert done.returncode == 1
    assert "needs pyarrow or fastparquet" in done.stderr and "decode" not in done.stderr
    assert not (tmp_path / "n.parquet").exists()


# -- messages in CLI words -------------------------------------------------------------


def test_messages_have_one_prefix_and_name_options_as_typed(
        labelled: tuple[Path, Path, np.ndarray, np.ndarray], tmp_path: Path) -> None:
    image, labels, _, _ = labelled
    cases = [
        ("measure", labels, "--properties", "nope", "--output", tmp_path / "t.csv"),
        ("measure", labels, "--output", tmp_path / "t.csv", "--max-memory", "1KiB"),
        ("rechunk", image, tmp_path / "r.zarr", "--chunks", "70,1", "--max-memory", "2KiB"),
        ("reduce", image, "--max-memory", "1KiB"),
        ("pyramid", image, tmp_path / "p.zarr", "--max-memory", "1KiB"),
    ]
    for argv in cases:
        done = chunkflow_cli(*argv)
        assert done.returncode == 2, (argv, done.stderr)
        line = done.stderr.strip().splitlines()[-1]
        command = argv[0]
        assert line.startswith(f"chunkflow {command}: error: "), line
        rest = line.removeprefix(f"chunkflow {command}: error: ")
        assert not rest.startswith((f"{command}:", "chunkflow")), line
        for python_word in ("overwrite=True", "resume=True", "temp=", "max_memory",
                            "storage_options", "give the output"):
            assert python_word not in line, line


def test_a_path_without_a_zarr_node_says_so(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("x")
    (tmp_path / "folder").mkdir()
    done = chunkflow_cli("info", tmp_path / "notes.txt")
    assert done.returncode == 1
    assert "exists but holds no Zarr array or group: it is a file" in done.stderr
    done = chunkflow_cli("info", tmp_path / "folder")
    assert "exists but holds no Zarr array or group: it is a folder" in done.stderr
    done = chunkflow_cli("info", tmp_path / "nothing")
    assert "does not exist (no such file or folder)" in done.stderr


# -- exit codes --------------------------------------------------------------------------


COMMANDS = sorted(command_parsers(build_parser()))


@pytest.mark.parametrize("command", COMMANDS)
def test_every_command_lists_the_exit_codes_and_exits_2_on_a_bad_option(
        command: str, tmp_path: Path) -> None:
    done = chunkflow_cli(command, "--help")
    assert done.returncode == 0
    text = " ".join(done.stdout.split())
    assert ("Exit codes: 0 done; 1 failed" in text and "2 bad arguments" in text
            and "130 interrupted (Ctrl-C)" in text), text
    done = chunkflow_cli(command, "a.zarr", "b.zarr", "--no-such-option", cwd=tmp_path)
    assert done.returncode == 2 and "error: " in done.stderr and "Traceback" not in done.stderr
    assert list(tmp_path.iterdir()) == []


def test_every_max_memory_option_is_checked_while_parsing(tmp_path: Path) -> None:
    with_option = [name for name, parser in command_parsers(build_parser()).items()
                   if any("--max-memory" in a.option_strings for a in parser._actions)]
    assert {"measure", "reduce", "rechunk", "label", "pyramid", "verify"} <= set(with_option)
    for command in with_option:
        done = chunkflow_cli(command, "in.zarr", "out.zarr", "--max-memory", "lots",
                             cwd=tmp_path)
        assert done.returncode == 2, (command, done.stderr)
        assert "argument --max-memory: 'lots' is not a size" in done.stderr, done.stderr


# -- Ctrl-C, the advice, and the resume it suggests -----------------------------------


def test_ctrl_c_says_how_to_resume_and_that_command_finishes_the_job(tmp_path: Path) -> None:
    data = np.random.default_rng(1).integers(0, 1000, (2048, 2048)).astype("u2")
    source, out = tmp_path / "big.zarr", tmp_path / "median.zarr"
    chunkflow.array(data, chunks=(128, 128), store=str(source))
    argv = ["filter", str(source), str(out), "--median", "5", "--resume", "--scheduler",
            "sync", "-q"]
    job = subprocess.Popen([sys.executable, "-m", "chunkflow", *argv], env=ENV,
                           stderr=subprocess.PIPE, text=True)
    # Interrupt once the job has recorded its first finished block.
    while job.poll() is None and not _recorded_a_block(out):
        time.sleep(0.05)
    job.send_signal(signal.SIGINT)
    err = job.communicate(timeout=300)[1]
    if job.returncode == 0:
        pytest.skip("the job finished before the interrupt reached it")
    assert job.returncode == 130, err
    assert "chunkflow filter: interrupted" in err
    advice = [line.split("to continue where it stopped: ", 1)[1]
              for line in err.splitlines() if "to continue where it stopped: " in line]
    assert advice == [shlex.join(["chunkflow", *argv])], err
    assert f"to see what remains: chunkflow status {out}" in err
    # Without --resume the same command points at --resume and status.
    again = chunkflow_cli(*[a for a in argv if a != "--resume"])
    assert again.returncode == 2 and "add --resume to finish it" in again.stderr
    assert f"chunkflow status {out}" in again.stderr
    # The suggested command, as printed, finishes the job.
    finished = chunkflow_cli(*advice[0].split()[1:])
    assert finished.returncode == 0, finished.stderr
    np.testing.assert_array_equal(chunkflow.open_array(str(out))[...],
                                  ndimage.median_filter(data, 5))


def _recorded_a_block(out: Path) -> bool:
    return out.exists() and any(path.is_file() and path.name != "zarr.json"
                                for path in out.rglob("*"))


# -- reduce --median --percentile -------------------------------------------------------


def test_reduce_median_and_percentiles_are_numpy_s(tmp_path: Path) -> None:
    data = np.random.default_rng(2).normal(size=(90, 70)).astype("f4")
    chunkflow.array(data, chunks=(16, 32), store=str(tmp_path / "a.zarr"))
    done = chunkflow_cli("reduce", tmp_path / "a.zarr", "--median", "--percentile", "99.5",
                         "--percentile", "0")
    assert done.returncode == 0, done.stderr
    printed = dict(line.rsplit(None, 1) for line in done.stdout.splitlines())
    expected = {"median": np.median(data), "percentile 99.5": np.percentile(data, 99.5),
                "percentile 0": data.min()}
    for name, value in expected.items():
        assert float(printed[name]) == pytest.approx(float(value), rel=1e-7), name
    done = chunkflow_cli("reduce", tmp_path / "a.zarr", "--percentile", "101")
    assert done.returncode == 2 and "'101' is not a percentile from 0 to 100" in done.stderr
