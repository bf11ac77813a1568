"""The analysis of issue 36 from the shell, end to end: a raw 3-D stack filtered,
thresholded, hole-filled, size-filtered, labelled, measured and pyramided by one bash
script of ``chunkflow`` commands; every step's output equals scipy's and
scikit-image's in memory, the threshold passes through a shell variable."""

from __future__ import annotations

import csv
import os
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
from scipy import ndimage

import chunkflow
from tests.helpers.pyramid_reference import reference_levels

skimage_filters = pytest.importorskip("skimage.filters")
morphology = pytest.importorskip("skimage.morphology")
skimage_measure = pytest.importorskip("skimage.measure")

ROOT = Path(__file__).resolve().parents[2]  # the tree whose chunkflow is under test

SHAPE = (16, 48, 48)
PROPERTIES = ("label", "area", "centroid", "axis_major_length", "intensity_mean")

#: The README's pipeline, as a user types it (``T`` is the printed threshold).
SCRIPT = """\
set -euo pipefail
chunkflow filter raw.zarr smooth.zarr --gaussian 1 --dtype float32
T=$(chunkflow threshold smooth.zarr mask.zarr --method otsu --print)
chunkflow fill-holes mask.zarr filled.zarr
chunkflow remove-small-objects filled.zarr kept.zarr --max-size 20
chunkflow remove-small-holes kept.zarr clean.zarr --max-size 4
chunkflow label clean.zarr labels.zarr --connectivity 3
chunkflow measure labels.zarr --intensity raw.zarr --output objects.csv \\
    --properties label,area,centroid,axis_major_length,intensity_mean
chunkflow pyramid raw.zarr analysis.ome.zarr --levels 3
chunkflow pyramid labels.zarr analysis.ome.zarr --labels cells --levels 3
echo "threshold=$T"
"""


def raw_stack(seed: int = 0) -> np.ndarray:
    """Bright balls (some hollow, so that filling has holes to fill) and small specks
    on a background of 500 with Gaussian noise, as uint16."""
    rng = np.random.default_rng(seed)
    grid = np.indices(SHAPE).astype("f8")
    signal = np.full(SHAPE, 500.0)
    for k in range(40):
        centre = rng.uniform(0, 1, 3) * SHAPE
        radius = rng.uniform(1.0, 4.5)
        distance = np.sqrt(sum((g - c) ** 2 for g, c in zip(grid, centre)))
        ball = distance <= radius
        if k % 4 == 0 and radius > 3.5:
            ball &= distance > radius - 1.5  # a hollow shell
        signal[ball] = rng.uniform(2500, 3500)
    return (signal + rng.normal(0, 150, SHAPE)).clip(0, 65535).astype("u2")


def read(location: Path) -> np.ndarray:
    return np.asarray(chunkflow.open_array(str(location), mode="r")[...])


@pytest.mark.slow
def test_the_pipeline_from_the_shell_equals_scipy_and_scikit_image(tmp_path: Path) -> None:
    bash, script = shutil.which("bash"), shutil.which("chunkflow")
    if bash is None or script is None:
        pytest.skip("needs bash and the installed chunkflow script")
    raw = raw_stack()
    stack = chunkflow.create_array(str(tmp_path / "raw.zarr"), shape=SHAPE, chunks=(8, 16, 16),
                                   shards=(8, 32, 32), dtype="u2")  # a sharded Zarr v3
    stack[...] = raw
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    result = subprocess.run([bash, "-c", SCRIPT], cwd=tmp_path, capture_output=True,
                            text=True, env=env, timeout=900)
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr

    smooth = ndimage.gaussian_filter(raw.astype("f8"), 1.0, mode="reflect",
                                     truncate=4.0).astype("f4")
    np.testing.assert_array_equal(read(tmp_path / "smooth.zarr"), smooth)
    threshold = skimage_filters.threshold_otsu(smooth)
    assert f"threshold={np.asarray(threshold).item()}" in result.stdout.splitlines()
    mask = smooth > threshold
    filled = ndimage.binary_fill_holes(mask)
    kept = morphology.remove_small_objects(filled, max_size=20)
    clean = morphology.remove_small_holes(kept, max_size=4)
    labels, count = ndimage.label(clean, ndimage.generate_binary_structure(3, 3))
    assert (filled != mask).any() and (kept != filled).any()  # each step had work
    assert count >= 10
    for name, expected in (("mask", mask), ("filled", filled), ("kept", kept),
                           ("clean", clean), ("labels", labels)):
        np.testing.assert_array_equal(read(tmp_path / f"{name}.zarr"), expected,
                                      err_msg=name)

    with (tmp_path / "objects.csv").open() as file:
        rows = list(csv.DictReader(file))
    table = skimage_measure.regionprops_table(labels, raw, properties=PROPERTIES)
    assert len(rows) == count and list(rows[0]) == list(table)
    for column, values in table.items():
        written = np.array([float(row[column]) for row in rows])
        if column in ("label", "area"):
            np.testing.assert_array_equal(written, values, err_msg=column)
        else:
            np.testing.assert_allclose(written, values, rtol=1e-9, err_msg=column)

    image = chunkflow.open_group(str(tmp_path / "analysis.ome.zarr"), mode="r")
    for level, expected in enumerate(reference_levels(raw, (2, 2, 2), "mean", 3)):
        np.testing.assert_array_equal(image[str(level)][...], expected)
    cells = image["labels/cells"]
    for level, expected in enumerate(reference_levels(labels.astype("u4"), (2, 2, 2),
                                                      "mode", 3)):
        np.testing.assert_array_equal(cells[str(level)][...], expected)
