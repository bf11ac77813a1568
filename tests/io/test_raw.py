"""Raw binary, ``.npy`` files and numpy arrays (and memmaps) through numpy, converted,
read back by ome-zarr-py and ngff-zarr."""

from __future__ import annotations

import numpy as np
import pytest

import chunkflow
from chunkflow.errors import InvalidArgumentError
from chunkflow.io import MemmapReader, open_source
from tests.io.conftest import check_image


@pytest.mark.parametrize("fortran", [False, True])
def test_npy_files_c_and_fortran_order(tmp_path, fortran) -> None:
    values = np.random.default_rng(1).integers(0, 255, (6, 33, 47), dtype="u1")
    values = np.asfortranarray(values) if fortran else values
    np.save(tmp_path / "v.npy", values)
    chunkflow.convert(tmp_path / "v.npy", tmp_path / "v.zarr", chunks=(2, 8, 8))
    check_image(tmp_path / "v.zarr", values, "zyx", [1.0, 1.0, 1.0], {}, None)


def test_a_raw_file_with_shape_dtype_offset_and_order(tmp_path) -> None:
    values = np.random.default_rng(2).normal(size=(2, 5, 30, 26)).astype(">f8")
    raw = tmp_path / "sim.raw"
    raw.write_bytes(b"H" * 100 + values.tobytes(order="F"))
    chunkflow.convert(raw, tmp_path / "sim.zarr", shape=values.shape, dtype=">f8", offset=100,
                      order="F", axes="czyx", channel_names=["u", "v"])
    check_image(tmp_path / "sim.zarr", values.astype("<f8"), "czyx", [1.0] * 4, {}, ["u", "v"])


def test_a_raw_file_too_small_for_its_shape_is_refused(tmp_path) -> None:
    (tmp_path / "short.raw").write_bytes(bytes(99))
    with pytest.raises(InvalidArgumentError, match="has 99 bytes"):
        chunkflow.convert(tmp_path / "short.raw", tmp_path / "o.zarr", shape=(10, 10), dtype="u1")
    assert not (tmp_path / "o.zarr").exists()


def test_numpy_arrays_and_memmaps(tmp_path) -> None:
    values = np.random.default_rng(3).integers(-5, 5, (2, 3, 17, 19)).astype("i8")
    chunkflow.convert(values, tmp_path / "a.zarr")  # tczyx by dimensions: 4 -> czyx
    check_image(tmp_path / "a.zarr", values, "czyx", [1.0] * 4, {},
                ["Channel 0", "Channel 1"])
    mapped = np.memmap(tmp_path / "m.dat", dtype="u2", mode="w+", shape=(40, 30), offset=16)
    mapped[:] = np.arange(1200, dtype="u2").reshape(40, 30)
    mapped.flush()
    reader = open_source(mapped)
    assert isinstance(reader, MemmapReader) and reader.offset == 16  # read from the file
    chunkflow.convert(mapped, tmp_path / "m.zarr", axes="yx")
    check_image(tmp_path / "m.zarr", np.asarray(mapped), "yx", [1.0, 1.0], {}, None)


@pytest.mark.parametrize("order", ["C", "F"])
def test_maps_of_a_few_slices_at_a_time(tmp_path, monkeypatch, order) -> None:
    import chunkflow.io.raw as raw

    values = np.random.default_rng(6).integers(0, 99, (9, 8, 7), dtype="u2")
    path = tmp_path / "v.raw"
    path.write_bytes(b"#" * 5 + values.tobytes(order=order))
    monkeypatch.setattr(raw, "MAP_BYTES", 3 * 8 * 2)  # a few rows (C) or planes (F) per map
    reader = MemmapReader(path, shape=values.shape, dtype="u2", offset=5, order=order)
    region = (slice(1, 8), slice(2, 7), slice(0, 6))
    np.testing.assert_array_equal(reader.read(region), values[region])


@pytest.mark.parametrize(("given", "says"), [
    ({"dtype": "u1"}, "dtype='u1' describes a raw file"),
    ({"offset": 8}, "offset=8 describes a raw file"),
    ({"order": "F"}, "order='F' describes a raw file"),
    ({"dtype": "u1", "offset": 8}, "dtype='u1', offset=8 describe a raw file"),
])
def test_raw_file_options_on_another_source_are_refused_not_ignored(tmp_path, given,
                                                                    says) -> None:
    # dtype="u1" on a uint16 .npy file would look like a cast that never happened
    values = np.arange(600, dtype="u2").reshape(20, 30)
    np.save(tmp_path / "v.npy", values)
    for source in (tmp_path / "v.npy", values):
        with pytest.raises(InvalidArgumentError, match=says) as refused:
            chunkflow.convert(source, tmp_path / "o.zarr", **given)
        assert "(uint16, shape (20, 30))" in str(refused.value)
        assert "convert casts nothing" in str(refused.value)
        assert not (tmp_path / "o.zarr").exists()
