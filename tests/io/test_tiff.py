"""TIFF and OME-TIFF files written by tifffile, converted, read back by ome-zarr-py
and ngff-zarr: values (numpy's pyramid), axes, scale, units and channel names."""

from __future__ import annotations

import numpy as np
import pytest

import chunkflow
from chunkflow.errors import PyramidError, UnsupportedFormatError
from chunkflow.io import TiffReader, TiffStackReader, open_source
from tests.io.conftest import check_image

tifffile = pytest.importorskip("tifffile")


def _values(shape: tuple[int, ...], dtype: str = "u2", seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return rng.integers(0, 4000, size=shape).astype(dtype)


def test_ome_tiff_gives_axes_channels_physical_sizes_and_units(tmp_path) -> None:
    values = _values((3, 12, 70, 90))
    path = tmp_path / "cells.ome.tif"
    tifffile.imwrite(path, values, ome=True, metadata={
        "axes": "CZYX", "Channel": {"Name": ["DAPI", "GFP", "mCherry"]},
        "PhysicalSizeX": 0.65, "PhysicalSizeXUnit": "µm", "PhysicalSizeY": 0.65,
        "PhysicalSizeYUnit": "µm", "PhysicalSizeZ": 2.5, "PhysicalSizeZUnit": "nm"})
    levels = chunkflow.convert(path, tmp_path / "cells.zarr")  # no tuning arguments
    assert levels[0].shards is not None and levels[0].zarr_format == 3
    check_image(tmp_path / "cells.zarr", values, "czyx", [1.0, 2.5, 0.65, 0.65],
                {"z": "nanometer", "y": "micrometer", "x": "micrometer"},
                ["DAPI", "GFP", "mCherry"])


def test_bigtiff_tiled_with_time_and_zarr_v2(tmp_path) -> None:
    values = _values((2, 5, 100, 130), "u1", seed=1)
    path = tmp_path / "movie.ome.tif"
    tifffile.imwrite(path, values, ome=True, bigtiff=True, tile=(32, 32), compression="zlib",
                     metadata={"axes": "TZYX", "TimeIncrement": 1.5, "TimeIncrementUnit": "s",
                               "PhysicalSizeX": 0.5, "PhysicalSizeY": 0.5})
    reader = TiffReader(path)
    assert reader.blocks == (1, 1, 32, 32)  # read along the tiles
    assert reader.info.axes == "tzyx"
    chunkflow.convert(path, tmp_path / "movie.zarr", zarr_format=2, chunks=(1, 5, 32, 32),
                      levels=3)
    check_image(tmp_path / "movie.zarr", values, "tzyx", [1.5, 1.0, 0.5, 0.5],
                {"t": "second", "y": "micrometer", "x": "micrometer"}, None, levels=3)
    attrs = chunkflow.open_group(tmp_path / "movie.zarr", mode="r").attrs
    assert attrs["multiscales"][0]["version"] == "0.4"


@pytest.mark.parametrize(("compression", "byteorder"), [("zlib", "<"), (None, ">")])
def test_multi_page_plain_tiff_in_strips(tmp_path, compression, byteorder) -> None:
    values = _values((7, 50, 60), "i2", seed=2) - 2000
    path = tmp_path / "stack.tif"
    tifffile.imwrite(path, values, rowsperstrip=8, photometric="minisblack",
                     compression=compression, byteorder=byteorder)
    reader = open_source(str(path))
    # Compressed strips are decoded whole; uncompressed values are mapped, row by row.
    assert (reader.info.axes, reader.blocks) == ("zyx", (1, 8, 60) if compression else (1, 1, 60))
    chunkflow.convert(str(path), tmp_path / "stack.zarr", chunks=(4, 16, 16),
                      shards=(4, 32, 32), scale=(3.0, 1.0, 1.0), units={"z": "micrometer"})
    check_image(tmp_path / "stack.zarr", values, "zyx", [3.0, 1.0, 1.0], {"z": "micrometer"},
                None)


def test_rgb_samples_become_the_channel_axis(tmp_path) -> None:
    values = _values((40, 30, 3), "u1", seed=3)
    path = tmp_path / "rgb.tif"
    tifffile.imwrite(path, values, photometric="rgb")
    reader = TiffReader(path)
    assert (reader.shape, reader.info.axes) == ((3, 40, 30), "cyx")
    np.testing.assert_array_equal(reader.read((slice(1, 3), slice(5, 9), slice(0, 30))),
                                  np.moveaxis(values, -1, 0)[1:3, 5:9])
    chunkflow.convert(path, tmp_path / "rgb.zarr", channel_names=["R", "G", "B"])
    check_image(tmp_path / "rgb.zarr", np.moveaxis(values, -1, 0), "cyx", [1.0, 1.0, 1.0], {},
                ["R", "G", "B"])


@pytest.mark.parametrize("axis", ["z", "t", "c"])
def test_a_glob_of_files_stacked_along_an_axis(tmp_path, axis) -> None:
    planes = [_values((33, 41), seed=10 + i) for i in range(11)]
    for i, plane in enumerate(planes):  # 2 before 10: natural order
        tifffile.imwrite(tmp_path / f"plane_{i}.tif", plane)
    stacked = np.stack(planes)
    out = tmp_path / "stack.zarr"
    chunkflow.convert(str(tmp_path / "plane_*.tif"), out, stack_axis=axis,
                      axes=f"{axis}yx" if axis != "c" else None)
    check_image(out, stacked, f"{axis}yx", [1.0, 1.0, 1.0], {},
                [f"Channel {i}" for i in range(11)] if axis == "c" else None)


def test_a_folder_of_3d_files_stacked_along_time_keeps_their_ome_metadata(tmp_path) -> None:
    folder = tmp_path / "timepoints"
    folder.mkdir()
    frames = [_values((6, 20, 24), seed=20 + i) for i in range(3)]
    for i, frame in enumerate(frames):
        tifffile.imwrite(folder / f"t{i}.ome.tif", frame, ome=True,
                         metadata={"axes": "ZYX", "PhysicalSizeZ": 2.0, "PhysicalSizeX": 0.25,
                                   "PhysicalSizeY": 0.25})
    reader = open_source(folder, stack_axis="t")
    assert isinstance(reader, TiffStackReader) and reader.info.axes == "tzyx"
    chunkflow.convert(folder, tmp_path / "movie.zarr", stack_axis="t")
    check_image(tmp_path / "movie.zarr", np.stack(frames), "tzyx", [1.0, 2.0, 0.25, 0.25],
                {"z": "micrometer", "y": "micrometer", "x": "micrometer"}, None)


def test_a_stack_refuses_files_of_another_shape_and_an_axis_they_have(tmp_path) -> None:
    tifffile.imwrite(tmp_path / "a.tif", _values((3, 8, 8)), photometric="minisblack")
    tifffile.imwrite(tmp_path / "b.tif", _values((3, 8, 9)), photometric="minisblack")
    reader = TiffStackReader([tmp_path / "a.tif", tmp_path / "b.tif"], "t")
    with pytest.raises(UnsupportedFormatError, match="b.tif"):
        reader.read((slice(0, 2), slice(0, 3), slice(0, 8), slice(0, 8)))
    with pytest.raises(UnsupportedFormatError, match="cannot stack along 'z'"):
        TiffStackReader([tmp_path / "a.tif"], "z")


def test_a_pyramidal_ome_tiff_reads_its_full_resolution(tmp_path) -> None:
    values = _values((128, 96), seed=4)
    path = tmp_path / "slide.ome.tif"
    with tifffile.TiffWriter(path, bigtiff=True) as tif:
        tif.write(values, subifds=1, tile=(32, 32), metadata={"axes": "YX"})
        tif.write(values[::2, ::2], subfiletype=1, tile=(32, 32))
    reader = TiffReader(path)
    assert reader.pyramidal and reader.shape == (128, 96)
    assert TiffReader(path, level=1).shape == (64, 48)
    chunkflow.convert(path, tmp_path / "slide.zarr", chunks=(32, 32))
    check_image(tmp_path / "slide.zarr", values, "yx", [1.0, 1.0], {}, None)


def test_a_file_url_in_and_out(tmp_path) -> None:
    values = _values((4, 40, 50), seed=5)
    tifffile.imwrite(tmp_path / "in.tif", values, photometric="minisblack")
    chunkflow.convert(f"file://{tmp_path}/in.tif", f"file://{tmp_path}/out.zarr")
    check_image(tmp_path / "out.zarr", values, "zyx", [1.0, 1.0, 1.0], {}, None)


@pytest.mark.s3
def test_tiff_on_s3_to_s3_with_storage_options(s3_server, tmp_path) -> None:
    import fsspec

    values = _values((3, 70, 50), seed=6)
    tifffile.imwrite(tmp_path / "in.ome.tif", values, ome=True,
                     metadata={"axes": "ZYX", "PhysicalSizeX": 0.2, "PhysicalSizeY": 0.2})
    fs = fsspec.filesystem("s3", skip_instance_cache=True, **s3_server)
    fs.put(str(tmp_path / "in.ome.tif"), "chunkflow-test/convert/in.ome.tif")
    levels = chunkflow.convert("s3://chunkflow-test/convert/in.ome.tif",
                               "s3://chunkflow-test/convert/out.zarr", storage_options=s3_server)
    assert levels[0].shards is not None
    fs.get("chunkflow-test/convert/out.zarr", str(tmp_path / "out.zarr"), recursive=True)
    check_image(tmp_path / "out.zarr", values, "zyx", [1.0, 0.2, 0.2],
                {"y": "micrometer", "x": "micrometer"}, None)


def test_tifffile_may_drop_axes_of_length_one(tmp_path) -> None:
    # Found by the differential test's long run: a (1, 1, 1) array written by tifffile
    # reads back as (1, 1) "YX". convert reads what tifffile reads, and refuses axes
    # that do not fit it, naming them (pass the array itself to keep every axis).
    values = _values((1, 1, 1))
    tifffile.imwrite(tmp_path / "one.tif", values, photometric="minisblack", metadata=None)
    assert open_source(tmp_path / "one.tif").shape == (1, 1)
    with pytest.raises(PyramidError, match="'zyx'"):
        chunkflow.convert(tmp_path / "one.tif", tmp_path / "one.zarr", axes="zyx")
    chunkflow.convert(values, tmp_path / "one.zarr", axes="zyx")
    check_image(tmp_path / "one.zarr", values, "zyx", [1.0] * 3, {}, None)
