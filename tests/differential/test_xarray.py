"""engine="chunkflow" against zarr-python and ngff-zarr, on drawn arrays and pyramids.

- A store holding one array opens as a dataset of one variable: its values are
  zarr-python's reading of the same folder, bit for bit (NaN payloads and -0.0 too:
  the fill value of an array xarray did not write masks nothing), its dtype and shape
  zarr-python's (up to byte order: xarray's decoding makes numbers native-endian),
  its dimensions ``dim_0``... and its name the folder's less ``.zarr``.
- ``open_datatree`` on a pyramid gives each level the coordinates
  ``translation + index * scale`` of the level's NGFF metadata, computed here from the
  JSON and from ngff-zarr's ``from_ngff_zarr``, with the axes' units.
"""

from __future__ import annotations

import json
import math
import tempfile
import warnings
from pathlib import Path

import numpy as np
import pytest
from hypothesis import example, given
from hypothesis import strategies as st

import chunkflow
from chunkflow.testing import strategies as cst
from tests.differential.conftest import budget

xr = pytest.importorskip("xarray")
zarr = pytest.importorskip("zarr", minversion="3.1")

#: Numbers, booleans, complex and times: the kinds xarray keeps as stored (strings
#: change dtype through xarray's decoding, which the zarr engine does as well).
KINDS = "biufcmM"


def bits(values: np.ndarray) -> np.ndarray:
    """The values as unsigned integers of the same size (floats, complex, times)."""
    if values.dtype.kind in "fcmM":
        return np.ascontiguousarray(values).view(f"u{values.dtype.itemsize // 2}"
                                                 if values.dtype.kind == "c" else
                                                 f"u{values.dtype.itemsize}")
    return values


@budget(25)
@given(spec=cst.stored_arrays(dtypes=cst.dtypes(kinds=KINDS, byteorder="any")))
@example(spec=cst.StoredArraySpec(np.array([[-0.0, np.nan]], dtype="f4"), (1, 1),
                                  zarr_format=2, fill_value=0.0))
@example(spec=cst.StoredArraySpec(np.array([], dtype=">i2"), (1,), zarr_format=2))
@example(spec=cst.StoredArraySpec(np.array([], dtype=">m8[s]"), (1,), zarr_format=2))
def test_single_array_reads_as_zarr_python(spec: cst.StoredArraySpec) -> None:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "drawn.zarr"
        spec.create(str(path))
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # nothing about consolidated metadata either
            ds = xr.open_dataset(path, engine="chunkflow")
            values = ds["drawn"].values
        expected = zarr.open_array(path, mode="r")[...]
        assert list(ds.data_vars) == ["drawn"]
        assert ds["drawn"].dims == tuple(f"dim_{d}" for d in range(expected.ndim))
        # xarray's decoding makes numbers native-endian (the zarr engine's too).
        native = expected.dtype.newbyteorder("=")
        assert values.shape == expected.shape and values.dtype.newbyteorder("=") == native
        np.testing.assert_array_equal(bits(values.astype(native)), bits(expected.astype(native)))
        ds.close()


def ngff_coordinates(path: Path) -> list[dict[str, np.ndarray]]:
    """Each level's coordinates from the NGFF JSON, computed here."""
    document = (json.loads((path / "zarr.json").read_text())["attributes"]["ome"]
                if (path / "zarr.json").exists() else json.loads((path / ".zattrs").read_text()))
    multiscale = document["multiscales"][0]
    names = [axis["name"] for axis in multiscale["axes"]]
    levels = []
    for dataset in multiscale["datasets"]:
        scale, translation = (dataset["coordinateTransformations"][k][kind]
                              for k, kind in ((0, "scale"), (1, "translation")))
        shape = zarr.open_array(path / dataset["path"], mode="r").shape
        levels.append({name: translation[d] + np.arange(shape[d]) * scale[d]
                       for d, name in enumerate(names)})
    return levels


@budget(8)
@given(shape=st.tuples(st.integers(1, 12), st.integers(1, 20), st.integers(1, 20)),
       scale=st.tuples(*[st.floats(0.01, 100.0, allow_subnormal=False)] * 3),
       levels=st.integers(1, 3), method=st.sampled_from(["mean", "nearest"]),
       zarr_format=st.sampled_from([2, 3]))
@example(shape=(4, 8, 8), scale=(2.0, 0.65, 0.65), levels=3, method="mean", zarr_format=2)
@example(shape=(1, 1, 1), scale=(1.0, 1.0, 1.0), levels=2, method="mean", zarr_format=2)
def test_level_coordinates_match_ngff(shape: tuple[int, int, int],
                                      scale: tuple[float, float, float], levels: int,
                                      method: str, zarr_format: int) -> None:
    ngff_zarr = pytest.importorskip("ngff_zarr")
    # pyramid refuses levels past the one where every axis is down to 1.
    levels = min(levels, 1 + math.ceil(math.log2(max(shape))))
    image = np.arange(int(np.prod(shape)), dtype="u2").reshape(shape)
    units = {"z": "micrometer", "x": "nanometer"}
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "image.zarr"
        chunkflow.pyramid(chunkflow.array(image, chunks=(4, 8, 8)), path, levels=levels,
                          method=method, scale=scale, units=units, zarr_format=zarr_format,
                          scheduler="sync")
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            tree = xr.open_datatree(path, engine="chunkflow")
        by_hand = ngff_coordinates(path)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # ngff-zarr's notes on zarr-python
            images = ngff_zarr.from_ngff_zarr(str(path)).images
        assert len(images) == len(by_hand) == len(tree.children)
        for level, (expected, image_k) in enumerate(zip(by_hand, images)):
            node = tree[str(level)].to_dataset()
            for d, dim in enumerate("zyx"):
                np.testing.assert_array_equal(node[dim].values, expected[dim])
                from_ngff_zarr = (image_k.translation[dim]
                                  + np.arange(image_k.data.shape[d]) * image_k.scale[dim])
                np.testing.assert_array_equal(node[dim].values, from_ngff_zarr)
                assert node[dim].attrs.get("units") == units.get(dim)
        tree.close()
