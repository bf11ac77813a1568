"""``chunkflow threshold``, ``fill-holes``, ``remove-small-objects`` and
``remove-small-holes``: each command run in a subprocess on real folders (and on
``file://`` URLs with storage options), compared with scikit-image and scipy on the
whole image; refusals are usage errors (exit 2) made before any chunk is read or
anything is created.
"""

from __future__ import annotations

import itertools
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from scipy import ndimage

import chunkflow
from chunkflow.cli import main
from chunkflow.cli.analysis import above
from chunkflow.errors import ChunkDecodeError

skimage_filters = pytest.importorskip("skimage.filters")
morphology = pytest.importorskip("skimage.morphology")

ROOT = Path(__file__).resolve().parents[2]  # the tree whose chunkflow is under test


def command(*argv: object, tmpdir: Path | None = None) -> subprocess.CompletedProcess[str]:
    """``python -m chunkflow ARGV`` importing this tree (with ``TMPDIR`` if given)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    if tmpdir is not None:
        env["TMPDIR"] = str(tmpdir)
    return subprocess.run([sys.executable, "-m", "chunkflow", *map(str, argv)],
                          capture_output=True, text=True, env=env, timeout=300)


def done(result: subprocess.CompletedProcess[str]) -> str:
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr
    return result.stdout


def read(location: Path | str) -> np.ndarray:
    return np.asarray(chunkflow.open_array(str(location), mode="r")[...])


def blobs(shape: tuple[int, ...], seed: int) -> np.ndarray:
    """A noisy uint16 image of smooth blobs: a histogram with two humps."""
    rng = np.random.default_rng(seed)
    field = ndimage.gaussian_filter(rng.random(shape), 2.0)
    field = (field - field.min()) / (field.max() - field.min())
    return (field * 3000 + rng.normal(0, 80, shape) + 500).clip(0, 65535).astype("u2")


def speckled_mask(shape: tuple[int, ...], seed: int) -> np.ndarray:
    """Blobs with holes of several sizes in them and small specks around them."""
    rng = np.random.default_rng(seed)
    mask = ndimage.gaussian_filter(rng.random(shape), 1.5) > 0.5
    return mask ^ (rng.random(shape) > 0.93)


@pytest.fixture
def image(tmp_path: Path) -> tuple[Path, np.ndarray]:
    data = blobs((12, 40, 36), seed=1)
    chunkflow.array(data, chunks=(5, 16, 16), store=str(tmp_path / "image.zarr"))
    return tmp_path / "image.zarr", data


@pytest.fixture
def mask(tmp_path: Path) -> tuple[Path, np.ndarray]:
    data = speckled_mask((10, 34, 30), seed=2)
    chunkflow.array(data, chunks=(4, 9, 8), store=str(tmp_path / "mask.zarr"))
    return tmp_path / "mask.zarr", data


@pytest.mark.parametrize(("method", "dtype", "nbins"), [
    ("otsu", "u2", None), ("li", "u2", None), ("yen", "u2", None), ("triangle", "u2", None),
    ("otsu", "f4", 100), ("yen", "f8", None),
])
def test_threshold_prints_scikit_images_value_and_writes_the_mask(
        tmp_path: Path, method: str, dtype: str, nbins: int | None) -> None:
    data = blobs((10, 30, 26), seed=3).astype(dtype)
    if dtype != "u2":
        data = data / np.asarray(7, dtype)  # values that are not integers
    chunkflow.array(data, chunks=(4, 16, 8), store=str(tmp_path / "in.zarr"))
    extra = [] if nbins is None else ["--nbins", nbins]
    printed = done(command("threshold", tmp_path / "in.zarr", tmp_path / "mask.zarr",
                           "--method", method, "--print", *extra))
    func = getattr(skimage_filters, f"threshold_{method}")
    expected = func(data, **({} if nbins is None else {"nbins": nbins}))
    assert printed.strip() == str(np.asarray(expected).item())  # alone on the line
    assert np.asarray(float(printed)).astype(np.asarray(expected).dtype) == expected
    written = read(tmp_path / "mask.zarr")
    assert written.dtype == bool
    np.testing.assert_array_equal(written, data > expected)


def test_threshold_without_a_destination_only_prints(image: tuple[Path, np.ndarray],
                                                     tmp_path: Path) -> None:
    location, data = image
    before = sorted(p.name for p in tmp_path.iterdir())
    printed = done(command("threshold", location, "--method", "li", "--print"))
    assert float(printed) == skimage_filters.threshold_li(data)
    assert sorted(p.name for p in tmp_path.iterdir()) == before


def _cycling_li_image() -> np.ndarray:
    """float16 values whose Li iteration goes round in a cycle with the default
    tolerance (steps of the spacing of float16 around 6000): scikit-image's never ends."""
    rng = np.random.default_rng(306)
    data = (rng.random(8193) ** 3 * 3e4).astype("f2")
    data[rng.integers(0, data.size, 40)] = rng.choice(
        np.array([np.nan, np.inf, -np.inf, 0.0], "f2"), 40)
    return data


class _Endless(Exception):
    pass


def _gives_up_after(steps: int) -> Any:
    """An ``iter_callback`` that stops scikit-image's Li after ``steps`` steps."""
    count = itertools.count(1)

    def step(_: Any) -> None:
        if next(count) > steps:
            raise _Endless

    return step


def test_threshold_li_tolerance(tmp_path: Path) -> None:
    data = _cycling_li_image()
    with pytest.raises(_Endless):  # the premise: scikit-image would loop forever
        skimage_filters.threshold_li(data, iter_callback=_gives_up_after(3000))
    location = tmp_path / "f16.zarr"
    chunkflow.array(data, chunks=(512,), store=str(location))
    refused = command("threshold", location, "--method", "li", "--print")
    assert refused.returncode == 2, refused.stderr
    assert "cycle" in refused.stderr and "tolerance=" not in refused.stderr  # CLI words
    suggested = refused.stderr.rstrip().rpartition("--tolerance ")[2]
    printed = done(command("threshold", location, "--method", "li", "--tolerance",
                           suggested, "--print"))
    assert float(printed) == skimage_filters.threshold_li(data, tolerance=float(suggested))


@pytest.mark.parametrize("connectivity", [1, 3])
def test_fill_holes_equals_scipy(mask: tuple[Path, np.ndarray], tmp_path: Path,
                                 connectivity: int) -> None:
    location, data = mask
    out = f"file://{tmp_path}/new/filled.zarr"  # a file URL, in a folder not made yet
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    printed = done(command("fill-holes", location, out, "--connectivity", connectivity,
                           tmpdir=scratch))
    assert list(scratch.iterdir()) == []  # the background's labels went there, and went
    assert f"written to {out}" in printed
    structure = ndimage.generate_binary_structure(3, connectivity)
    expected = ndimage.binary_fill_holes(data, structure)
    assert (expected != data).any()  # there were holes to fill
    np.testing.assert_array_equal(read(tmp_path / "new" / "filled.zarr"), expected)


@pytest.mark.slow
def test_the_steps_on_s3_urls_with_storage_options(s3_server: dict[str, Any],
                                                   image: tuple[Path, np.ndarray]) -> None:
    """SRC and DST on an S3 server (moto), opened with ``--storage-option`` pairs."""
    location, data = image
    flags = [f"--storage-option={key}={json.dumps(value) if isinstance(value, dict) else value}"
             for key, value in s3_server.items()]
    url = "s3://chunkflow-test/analysis"
    done(command("copy", location, f"{url}/image.zarr", *flags))
    steps = [("threshold", "image", "mask", ["--method", "yen"]),
             ("fill-holes", "mask", "filled", []),
             ("remove-small-objects", "filled", "kept", ["--max-size", "20"]),
             ("remove-small-holes", "kept", "clean", ["--max-size", "5"])]
    for name, src, dst, extra in steps:
        done(command(name, f"{url}/{src}.zarr", f"{url}/{dst}.zarr", *extra, *flags))
    mask = data > skimage_filters.threshold_yen(data)
    kept = morphology.remove_small_objects(ndimage.binary_fill_holes(mask), max_size=20)
    expected = morphology.remove_small_holes(kept, max_size=5)
    written = chunkflow.open_array(f"{url}/clean.zarr", mode="r", storage_options=s3_server)
    np.testing.assert_array_equal(written[...], expected)


@pytest.mark.parametrize(("option", "connectivity"), [
    ("--max-size", 1), ("--min-size", 1), ("--max-size", 3), ("--min-size", 2),
])
def test_remove_small_objects_equals_scikit_image(mask: tuple[Path, np.ndarray],
                                                  tmp_path: Path, option: str,
                                                  connectivity: int) -> None:
    location, data = mask
    structure = ndimage.generate_binary_structure(3, connectivity)
    sizes = np.unique(np.bincount(ndimage.label(data, structure)[0].ravel())[1:])
    n = int(sizes[len(sizes) // 3])  # some objects have exactly n voxels
    out = tmp_path / "kept.zarr"
    done(command("remove-small-objects", location, out, option, n, "--connectivity",
                 connectivity))
    # --max-size N removes objects of N voxels; --min-size N keeps them.
    limit = n if option == "--max-size" else n - 1
    expected = morphology.remove_small_objects(data, max_size=limit, connectivity=connectivity)
    off_by_one = morphology.remove_small_objects(data, max_size=2 * n - 1 - limit,
                                                 connectivity=connectivity)
    assert (expected != data).any() and (expected != off_by_one).any()
    written = read(out)
    assert written.dtype == bool
    np.testing.assert_array_equal(written, expected)


def test_work_folder_keeps_what_it_held_and_nothing_more(mask: tuple[Path, np.ndarray],
                                                          tmp_path: Path) -> None:
    location, data = mask
    work = tmp_path / "work"
    work.mkdir()
    (work / "mine.txt").write_text("kept")
    done(command("remove-small-objects", location, tmp_path / "kept.zarr", "--max-size", "4",
                 "--work", work))
    done(command("fill-holes", location, tmp_path / "filled.zarr"))  # stores no labels
    assert [p.name for p in work.iterdir()] == ["mine.txt"]
    np.testing.assert_array_equal(read(tmp_path / "kept.zarr"),
                                  morphology.remove_small_objects(data, max_size=4))
    np.testing.assert_array_equal(read(tmp_path / "filled.zarr"),
                                  ndimage.binary_fill_holes(data))


def test_remove_small_objects_of_labels_keeps_their_values(tmp_path: Path) -> None:
    labels, _ = ndimage.label(speckled_mask((8, 30, 30), seed=4))
    labels = labels.astype("u4")
    chunkflow.array(labels, chunks=(4, 8, 8), store=str(tmp_path / "labels.zarr"))
    done(command("remove-small-objects", tmp_path / "labels.zarr", tmp_path / "kept.zarr",
                 "--max-size", "5"))
    expected = morphology.remove_small_objects(labels, max_size=5)
    written = read(tmp_path / "kept.zarr")
    assert written.dtype == np.dtype("u4")
    np.testing.assert_array_equal(written, expected)


@pytest.mark.parametrize("connectivity", [1, 2])
def test_remove_small_holes_equals_scikit_image(mask: tuple[Path, np.ndarray], tmp_path: Path,
                                                connectivity: int) -> None:
    location, data = mask
    out = tmp_path / "filled.zarr"
    work = tmp_path / "work"  # made for the run, removed after it
    done(command("remove-small-holes", location, out, "--max-size", "8", "--connectivity",
                 connectivity, "--work", work))
    assert not work.exists()
    expected = morphology.remove_small_holes(data, max_size=8, connectivity=connectivity)
    assert (expected != data).any()
    np.testing.assert_array_equal(read(out), expected)


@pytest.mark.slow
def test_threshold_resume_finishes_an_unfinished_mask(tmp_path: Path) -> None:
    """A mask job stopped by an unreadable chunk (the job ``threshold`` runs:
    ``map_chunks(above, SRC, threshold=T)``) is finished by ``--resume``."""
    source = tmp_path / "src.zarr"
    data = blobs((32, 20), seed=6)
    z = chunkflow.create(data.shape, chunks=(8, 20), dtype="u2", store=str(source),
                         codecs=[{"name": "bytes", "configuration": {"endian": "little"}},
                                 {"name": "crc32c"}])  # a flipped byte fails the checksum
    z[...] = data
    value = skimage_filters.threshold_otsu(data)
    chunk = source / "c" / "3" / "0"
    original = chunk.read_bytes()
    chunk.write_bytes(bytes([original[0] ^ 0xFF]) + original[1:])
    with pytest.raises(ChunkDecodeError):
        chunkflow.map_chunks(above, str(source), out=str(tmp_path / "mask.zarr"), dtype=bool,
                             threshold=value, resume=True, scheduler="sync")
    chunk.write_bytes(original)
    assert "job incomplete" in done(command("status", tmp_path / "mask.zarr"))
    done(command("threshold", source, tmp_path / "mask.zarr", "--resume"))
    assert "no unfinished job" in done(command("status", tmp_path / "mask.zarr"))
    np.testing.assert_array_equal(read(tmp_path / "mask.zarr"), data > value)


def test_fill_holes_with_resume_writes_and_a_finished_output_asks_for_overwrite(
        mask: tuple[Path, np.ndarray], tmp_path: Path) -> None:
    location, data = mask
    out = tmp_path / "filled.zarr"
    done(command("fill-holes", location, out, "--resume", "-q"))
    np.testing.assert_array_equal(read(out), ndimage.binary_fill_holes(data))
    again = command("fill-holes", location, out, "--resume", "-q")
    assert again.returncode == 2 and "--overwrite" in again.stderr
    np.testing.assert_array_equal(read(out), ndimage.binary_fill_holes(data))


def _unreadable(tmp_path: Path, dtype: str) -> Path:
    """A 3-D array whose every chunk is garbage: a command that reads one fails with
    exit code 1, so exit code 2 proves the refusal came first."""
    location = tmp_path / f"garbage-{dtype}.zarr"
    chunkflow.array(np.ones((4, 6, 6), dtype), chunks=(2, 3, 3), store=str(location))
    chunk_files = [p for p in location.rglob("*") if p.is_file() and "zarr.json" not in p.name
                   and not p.name.startswith(".z")]
    assert chunk_files
    for path in chunk_files:
        path.write_bytes(b"not a chunk")
    return location


@pytest.mark.parametrize(("argv", "says"), [
    (["threshold", "{bool}"], "give DST"),
    (["threshold", "{bool}", "{out}", "--method", "li", "--nbins", "10"], "--nbins 10"),
    (["threshold", "{bool}", "{out}", "--nbins", "1"], "--nbins 1"),
    (["threshold", "{bool}", "{out}", "--tolerance", "2"], "only threshold_li iterates"),
    (["threshold", "{bool}", "{out}", "--method", "li", "--tolerance", "-1"],
     "--tolerance -1.0: must be a positive number"),
    (["threshold", "{text}", "{out}"], "SRC holds <U1 values"),
    (["fill-holes", "{bool}", "{out}", "--connectivity", "4"], "--connectivity 4"),
    (["fill-holes", "{bool}", "{existing}"], "--overwrite"),
    (["remove-small-objects", "{float}", "{out}", "--max-size", "3"], "SRC holds float32"),
    (["remove-small-objects", "{bool}", "{out}", "--min-size", "0"], "--min-size 0"),
    (["remove-small-objects", "{bool}", "{out}", "--max-size", "-1"], "--max-size -1"),
    (["remove-small-objects", "{bool}", "{existing}", "--max-size", "3"], "--overwrite"),
    (["remove-small-holes", "{bool}", "{out}", "--max-size", "3", "--connectivity", "0"],
     "--connectivity 0"),
    (["remove-small-holes", "{float}", "{out}", "--max-size", "3"], "SRC holds float32"),
    (["remove-small-holes", "{bool}", "{out}", "--max-size", "3", "--work", "s3://bucket/work"],
     "--work s3://"),
    (["remove-small-objects", "{bool}", "{out}", "--max-size", "3", "--work", "{existing}/zarr.json"],
     "not a folder"),
    (["threshold", "{bool}", "{out}", "--max-memory", "lots"], "'lots' is not a size"),
])
def test_refusals_are_usage_errors_before_anything_is_read_or_created(
        capsys: pytest.CaptureFixture[str], tmp_path: Path, argv: list[str],
        says: str) -> None:
    existing = tmp_path / "existing.zarr"
    chunkflow.zeros((2, 2), chunks=(2, 2), store=str(existing))
    text = tmp_path / "text.zarr"
    chunkflow.array(np.array(["a", "b"]), store=str(text))
    names = {"bool": _unreadable(tmp_path, "bool"), "float": _unreadable(tmp_path, "f4"),
             "text": text, "out": tmp_path / "out.zarr", "existing": existing}
    code = main([part.format(**names) for part in argv] + ["-q"])
    err = capsys.readouterr().err
    assert code == 2, err
    assert says in err and err.strip().splitlines()[-1].startswith(f"chunkflow {argv[0]}: error:")
    assert not (tmp_path / "out.zarr").exists()
    assert chunkflow.open_array(str(existing), mode="r").shape == (2, 2)  # left alone


def test_an_output_that_is_the_source_is_refused_and_left_alone(
        capsys: pytest.CaptureFixture[str], mask: tuple[Path, np.ndarray]) -> None:
    location, data = mask
    for name in ("threshold", "fill-holes"):
        code = main([name, str(location), str(location), "--overwrite", "-q"])
        # before the threshold or the fill is computed: a usage error, as chunkflow filter
        assert code == 2 and "is SRC" in capsys.readouterr().err
        np.testing.assert_array_equal(read(location), data)


def test_a_refusal_in_a_subprocess_is_one_line(mask: tuple[Path, np.ndarray],
                                               tmp_path: Path) -> None:
    location, _ = mask
    result = command("remove-small-objects", location, tmp_path / "out.zarr")
    assert result.returncode == 2 and "--max-size" in result.stderr  # argparse: one needed
    result = command("threshold", location, tmp_path / "out.zarr", "--method", "mean")
    assert result.returncode == 2 and "invalid choice: 'mean'" in result.stderr
    assert "Traceback" not in result.stderr
    assert not (tmp_path / "out.zarr").exists()


@pytest.mark.parametrize("name", ["threshold", "fill-holes", "remove-small-objects",
                                  "remove-small-holes"])
def test_every_analysis_command_has_help(capsys: pytest.CaptureFixture[str],
                                         name: str) -> None:
    code = main([name, "--help"])  # main turns argparse's exit into a code
    out = capsys.readouterr().out
    assert code == 0 and f"usage: chunkflow {name}" in out
    assert "--overwrite" in out and "--scheduler" in out and "--max-memory" in out
