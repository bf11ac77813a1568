"""``chunkflow convert IN OUT``: TIFF (one file, a quoted glob), FILE.h5::DATASET,
.npy and raw files to OME-Zarr; every option checked before anything is read."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from chunkflow.cli import main
from tests.io.conftest import check_image

tifffile = pytest.importorskip("tifffile")


def run(capsys: pytest.CaptureFixture[str], *argv: object) -> tuple[int, str, str]:
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def _values(shape: tuple[int, ...], seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, 5000, shape).astype("u2")


def test_an_ome_tiff_with_every_option(capsys, tmp_path: Path) -> None:
    values = _values((2, 6, 64, 50))
    tifffile.imwrite(tmp_path / "in.ome.tif", values, ome=True,
                     metadata={"axes": "CZYX", "Channel": {"Name": ["a", "b"]}})
    out = tmp_path / "out.zarr"
    code, printed, err = run(capsys, "convert", tmp_path / "in.ome.tif", out, "--axes", "czyx",
                             "--scale", "1,2,0.5,0.5", "--units", "micrometer", "--chunks",
                             "1,2,16,16", "--shards", "1,2,32,32", "--levels", "3",
                             "--channel-names", "DAPI,GFP", "-q")
    assert code == 0, err
    assert "3 levels" in printed
    check_image(out, values, "czyx", [1.0, 2.0, 0.5, 0.5],
                {"z": "micrometer", "y": "micrometer", "x": "micrometer"}, ["DAPI", "GFP"],
                levels=3)


def test_a_quoted_glob_stacked_along_t_with_zarr_v2(capsys, tmp_path: Path) -> None:
    frames = [_values((30, 20), seed=i) for i in range(4)]
    for i, frame in enumerate(frames):
        tifffile.imwrite(tmp_path / f"f{i}.tif", frame)
    code, _, err = run(capsys, "convert", f"{tmp_path}/f*.tif", tmp_path / "out.zarr",
                       "--stack-axis", "t", "--axes", "tyx", "--zarr-format", "2",
                       "--scale", "t=60", "--units", "t=second")
    assert code == 0, err
    check_image(tmp_path / "out.zarr", np.stack(frames), "tyx", [60.0, 1.0, 1.0],
                {"t": "second"}, None)


def test_hdf5_dataset_npy_and_raw(capsys, tmp_path: Path) -> None:
    import h5py

    values = _values((5, 24, 28), seed=3)
    with h5py.File(tmp_path / "scan.h5", "w") as f:
        f.create_dataset("grp/vol", data=values, chunks=(1, 24, 28))
    np.save(tmp_path / "v.npy", values)
    (tmp_path / "v.raw").write_bytes(b"\0" * 8 + values.astype(">u2").tobytes())
    for name, source, extra in (
            ("h5", f"{tmp_path}/scan.h5::grp/vol", []),
            ("npy", tmp_path / "v.npy", []),
            ("raw", tmp_path / "v.raw", ["--shape", "5,24,28", "--dtype", ">u2", "--offset", "8"])):
        code, _, err = run(capsys, "convert", source, tmp_path / f"{name}.zarr", *extra)
        assert code == 0, (name, err)
        check_image(tmp_path / f"{name}.zarr", values, "zyx", [1.0] * 3, {}, None)


@pytest.mark.parametrize(("argv", "named"), [
    (["--shards", "1,32,32", "--zarr-format", "2"], "--shards"),
    (["--axes", "zyx", "--chunks", "1,16"], "--chunks"),
    (["--axes", "qyx"], "--axes"),
    (["--chunks", "2,16,16", "--shards", "3,32,32"], "--chunks"),
    (["--scale", "1,-2"], "--scale"),
    (["--levels", "0"], "--levels"),
    (["--shape", "4,4"], "--shape"),
    (["--dtype", "nonsense", "--shape", "4,4"], "--dtype"),
    (["--offset", "8"], "--offset"),
    (["--resume", "--overwrite"], "--resume"),
    (["--units", "x="], "--units"),
])
def test_bad_options_exit_2_naming_the_option_before_reading(capsys, tmp_path: Path,
                                                             argv: list[str], named: str) -> None:
    missing = tmp_path / "never-read.tif"  # does not exist: the options fail first
    code, _, err = run(capsys, "convert", missing, tmp_path / "out.zarr", *argv)
    assert code == 2 and named in err, err
    assert not (tmp_path / "out.zarr").exists()


def test_options_that_do_not_fit_the_file_exit_2(capsys, tmp_path: Path) -> None:
    tifffile.imwrite(tmp_path / "in.tif", _values((4, 20, 20)), photometric="minisblack")
    code, _, err = run(capsys, "convert", tmp_path / "in.tif", tmp_path / "out.zarr",
                       "--chunks", "1,8,8,8")
    assert code == 2 and "--chunks" in err, err
    code, _, err = run(capsys, "convert", tmp_path / "in.tif", tmp_path / "out.zarr",
                       "--channel-names", "a,b")
    assert code == 2 and "--channel-names" in err, err
    assert not (tmp_path / "out.zarr").exists()


def test_dtype_of_a_raw_file_is_no_cast_of_a_tiff(capsys, tmp_path: Path) -> None:
    # --dtype uint8 on a uint16 TIFF was ignored: the image came out uint16, silently
    tifffile.imwrite(tmp_path / "in.tif", _values((4, 20, 20)), photometric="minisblack")
    code, _, err = run(capsys, "convert", tmp_path / "in.tif", tmp_path / "out.zarr",
                       "--dtype", "uint8")
    assert code == 2, err
    assert "--dtype 'uint8' describes a raw file (given with --shape)" in err
    assert "(uint16, shape (4, 20, 20))" in err and "leave --dtype out" in err
    assert "dtype=" not in err  # the command's words, not the library's
    assert not (tmp_path / "out.zarr").exists()

