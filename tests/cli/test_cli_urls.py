"""Every command that writes DST, on ``file://`` URLs with ``--storage-option`` (the
path of a user whose data lives behind fsspec): it runs, and writes what the same
command writes to plain folders. ``rechunk`` and ``label`` refused the options
("--storage-option apply to URLs, not to an open chunkflow.Array")."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import tifffile
from scipy import ndimage

import chunkflow
from chunkflow.cli import main

# Each writer with its arguments besides SRC and DST; SRC is "image" or "mask".
WRITERS = {
    "copy": ("image", []),
    "convert": ("tiff", []),
    "rechunk": ("image", ["--chunks", "10,16,16", "--max-memory", "64MiB"]),
    "filter": ("image", ["--gaussian", "1"]),
    "threshold": ("image", []),
    "fill-holes": ("mask", []),
    "remove-small-objects": ("mask", ["--max-size", "3"]),
    "remove-small-holes": ("mask", ["--max-size", "3"]),
    "pyramid": ("image", []),
    "label": ("mask", []),
}


@pytest.fixture(scope="module")
def sources(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("url-sources")
    rng = np.random.default_rng(7)
    image = ndimage.gaussian_filter(rng.random((12, 40, 36)), 2)
    image = (image * 4000).astype("u2")
    chunkflow.array(image, chunks=(4, 16, 16), store=str(folder / "image.zarr"))
    chunkflow.array(rng.random((12, 40, 36)) > 0.6, chunks=(4, 16, 16),
                    store=str(folder / "mask.zarr"))
    tifffile.imwrite(folder / "image.tif", image, photometric="minisblack")
    return {"image": folder / "image.zarr", "mask": folder / "mask.zarr",
            "tiff": folder / "image.tif"}


def _levels(location: Path) -> list[np.ndarray]:
    node = chunkflow.open(str(location), mode="r")
    if isinstance(node, chunkflow.Array):
        return [node[...]]
    return [node[name][...] for name in sorted(node.array_keys())]


@pytest.mark.parametrize("command", sorted(WRITERS))
def test_writers_on_file_urls_with_storage_options(tmp_path: Path, sources: dict[str, Path],
                                                   command: str) -> None:
    source, extra = WRITERS[command]
    src = sources[source]
    assert main([command, str(src), str(tmp_path / "plain.zarr"), *extra, "-q"]) == 0
    url_src, url_dst = f"file://{src}", f"file://{tmp_path}/new/url.zarr"  # folder not made
    assert main([command, url_src, url_dst, *extra, "-q",
                 "--storage-option", "auto_mkdir=true"]) == 0
    plain, by_url = _levels(tmp_path / "plain.zarr"), _levels(tmp_path / "new" / "url.zarr")
    assert len(plain) == len(by_url)
    for a, b in zip(plain, by_url):
        np.testing.assert_array_equal(a, b)
    if command == "rechunk":
        np.testing.assert_array_equal(by_url[0], chunkflow.open(str(src), mode="r")[...])
        assert chunkflow.open(url_dst[len("file://"):], mode="r").chunks == (10, 16, 16)
    if command == "label":  # scipy's numbering, face connectivity
        np.testing.assert_array_equal(
            by_url[0], ndimage.label(chunkflow.open(str(src), mode="r")[...])[0])
