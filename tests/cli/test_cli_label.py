"""``chunkflow label`` and ``chunkflow measure`` on the command line."""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np
import pytest
from scipy import ndimage

import chunkflow
from chunkflow.cli import main
from tests.helpers.labels import blobs


def run(capsys: pytest.CaptureFixture[str], *argv: object) -> tuple[int, str, str]:
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def source(tmp_path: Path) -> tuple[str, np.ndarray]:
    image = (blobs((70, 60), 2, 0.5, seed=3) * 1000).astype("u2")
    location = str(tmp_path / "src.zarr")
    chunkflow.array(image, chunks=(16, 16), store=location)
    return location, image


def test_label_with_threshold_and_connectivity(capsys: pytest.CaptureFixture[str],
                                               source: tuple[str, np.ndarray],
                                               tmp_path: Path) -> None:
    location, image = source
    out = tmp_path / "labels.zarr"
    code, printed, err = run(capsys, "label", location, out, "--threshold", "500",
                             "--connectivity", "2", "--chunks", "32,32")
    expected, n = ndimage.label(image > 500, np.ones((3, 3), bool))
    assert code == 0, err
    assert f"{n} objects in {location} written to {out} (uint32)" in printed
    written = chunkflow.open_array(str(out), mode="r")
    assert written.chunks == (32, 32)
    np.testing.assert_array_equal(written[...], expected)


def test_label_refusals_are_usage_errors_and_create_nothing(
        capsys: pytest.CaptureFixture[str], source: tuple[str, np.ndarray],
        tmp_path: Path) -> None:
    location, _ = source
    out = tmp_path / "labels.zarr"
    code, _, err = run(capsys, "label", location, out, "--connectivity", "3")
    assert code == 2 and "--connectivity 3" in err
    code, _, err = run(capsys, "label", location, out, "--max-memory", "1 KiB")
    assert code == 2 and "--max-memory" in err
    noise = str(tmp_path / "noise.zarr")
    chunkflow.array(np.random.default_rng(0).random((60, 60)) > 0.6, chunks=(16, 16),
                    store=noise)  # about 500 objects
    code, _, err = run(capsys, "label", noise, out, "--dtype", "u1", "-q")
    assert code == 2 and "do not fit dtype uint8" in err
    assert not out.exists()
    assert run(capsys, "label", location, out, "-q")[0] == 0
    code, _, err = run(capsys, "label", location, out)
    assert code == 2 and "--overwrite" in err
    assert run(capsys, "label", location, out, "--overwrite", "--resume")[0] == 2


def test_measure_writes_regionprops_columns_as_csv(capsys: pytest.CaptureFixture[str],
                                                   source: tuple[str, np.ndarray],
                                                   tmp_path: Path) -> None:
    skimage_measure = pytest.importorskip("skimage.measure")
    location, image = source
    labels = tmp_path / "labels.zarr"
    assert run(capsys, "label", location, labels, "-q")[0] == 0
    table = tmp_path / "objects.csv"
    code, printed, err = run(capsys, "measure", labels, "--intensity", location,
                             "--properties", "label,area,centroid,intensity_mean",
                             "--output", table)
    assert code == 0, err
    expected = skimage_measure.regionprops_table(
        ndimage.label(image)[0], image, properties=["label", "area", "centroid",
                                                    "intensity_mean"])
    with table.open() as file:
        rows = list(csv.reader(file))
    assert rows[0] == list(expected)
    assert f"{len(rows) - 1} objects measured" in printed
    for k, name in enumerate(rows[0]):
        np.testing.assert_allclose([float(r[k]) for r in rows[1:]], expected[name], rtol=1e-12)


def test_measure_to_parquet(capsys: pytest.CaptureFixture[str], source: tuple[str, np.ndarray],
                            tmp_path: Path) -> None:
    location, image = source
    labels = tmp_path / "labels.zarr"
    assert run(capsys, "label", location, labels, "-q")[0] == 0
    code, _, err = run(capsys, "measure", labels, "--output", tmp_path / "t.parquet")
    try:
        import pyarrow.parquet as pq
    except ImportError:
        assert code == 1 and "needs pyarrow" in err
        return
    assert code == 0, err
    table = pq.read_table(tmp_path / "t.parquet").to_pydict()
    assert table["label"] == list(range(1, ndimage.label(image)[1] + 1))


def test_measure_refusals(capsys: pytest.CaptureFixture[str], source: tuple[str, np.ndarray],
                          tmp_path: Path) -> None:
    location, _ = source
    code, _, err = run(capsys, "measure", location, "--properties", "label,intensity_max",
                       "--output", tmp_path / "t.csv")
    assert code == 2 and "need an intensity image" in err
    code, _, err = run(capsys, "measure", location, "--output", tmp_path / "t.csv",
                       "--properties", ",")
    assert code == 2 and "names no property" in err
