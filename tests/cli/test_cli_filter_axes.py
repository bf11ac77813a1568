"""``chunkflow filter`` on images with channels and time: a single size smooths space
only (scipy per channel / per frame is the oracle), sizes per axis are taken as given,
and bad sizes or axes exit 2 naming the option."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from scipy import ndimage

import chunkflow
from chunkflow.cli import main


def run(capsys: pytest.CaptureFixture[str], *argv: object) -> tuple[int, str, str]:
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


IMAGE = np.random.default_rng(3).random((3, 6, 30, 26))


def _stored(tmp_path: Path, data: np.ndarray, **kwargs: object) -> str:
    location = str(tmp_path / "src.zarr")
    chunkflow.array(data, chunks=(1, 3, 8, 8)[-data.ndim:], store=location, **kwargs)
    return location


def _per_plane(func, data: np.ndarray, leading: int, **kwargs: object) -> np.ndarray:
    """scipy on each channel (each frame): the oracle of a filter that leaves them alone."""
    out = np.empty_like(data)
    for index in np.ndindex(*data.shape[:leading]):
        out[index] = func(data[index], **kwargs)
    return out


def test_gaussian_on_czyx_leaves_channels_alone(capsys: pytest.CaptureFixture[str],
                                                tmp_path: Path) -> None:
    src = _stored(tmp_path, IMAGE, dimension_names=list("czyx"))
    out = tmp_path / "out.zarr"
    code, printed, err = run(capsys, "filter", src, out, "--gaussian", "1.5")
    assert code == 0, err
    assert "on axes czyx" in printed
    got = chunkflow.open_array(str(out), mode="r")
    want = _per_plane(ndimage.gaussian_filter, IMAGE, 1, sigma=1.5, truncate=4.0)
    np.testing.assert_array_equal(got[...], want)
    assert got.dimension_names == ("c", "z", "y", "x")


def test_median_on_tyx_v2_names_from_xarray_attribute(capsys: pytest.CaptureFixture[str],
                                                      tmp_path: Path) -> None:
    data = (IMAGE[0] * 100).astype("u2")
    location = str(tmp_path / "src.zarr")
    source = chunkflow.array(data, chunks=(2, 8, 8), store=location, zarr_format=2)
    source.attrs["_ARRAY_DIMENSIONS"] = ["t", "y", "x"]
    out = tmp_path / "out.zarr"
    assert run(capsys, "filter", location, out, "--median", "3")[0] == 0
    got = chunkflow.open_array(str(out), mode="r")
    np.testing.assert_array_equal(got[...], _per_plane(ndimage.median_filter, data, 1, size=3))
    assert got.attrs["_ARRAY_DIMENSIONS"] == ["t", "y", "x"]


def test_a_level_of_an_ome_zarr_image_takes_its_ngff_axes(capsys: pytest.CaptureFixture[str],
                                                          tmp_path: Path) -> None:
    image = str(tmp_path / "image.ome.zarr")
    chunkflow.pyramid(chunkflow.array(IMAGE, chunks=(1, 3, 8, 8), zarr_format=2), image,
                      levels=1)
    out = tmp_path / "out.zarr"
    code, _, err = run(capsys, "filter", f"{image}/0", out, "--uniform", "3")
    assert code == 0, err
    want = _per_plane(ndimage.uniform_filter, IMAGE, 1, size=3)
    np.testing.assert_allclose(chunkflow.open_array(str(out), mode="r")[...], want, rtol=1e-12)


def test_axes_option_names_an_unnamed_array(capsys: pytest.CaptureFixture[str],
                                            tmp_path: Path) -> None:
    data = IMAGE[:, 0]
    src = _stored(tmp_path, data)
    out = tmp_path / "out.zarr"
    assert run(capsys, "filter", src, out, "--gaussian", "2", "--axes", "cyx")[0] == 0
    want = _per_plane(ndimage.gaussian_filter, data, 1, sigma=2.0)
    np.testing.assert_array_equal(chunkflow.open_array(str(out), mode="r")[...], want)
    # Without names every axis is space: scipy's meaning.
    plain = tmp_path / "plain.zarr"
    assert run(capsys, "filter", src, plain, "--gaussian", "2")[0] == 0
    np.testing.assert_array_equal(chunkflow.open_array(str(plain), mode="r")[...],
                                  ndimage.gaussian_filter(data, 2.0))


@pytest.mark.parametrize("size, sigma", [("1,2,2", (1.0, 2.0, 2.0)),
                                         ("y=2,x=0.5", (0.0, 2.0, 0.5))])
def test_sizes_per_axis_are_taken_as_given(capsys: pytest.CaptureFixture[str], tmp_path: Path,
                                           size: str, sigma: tuple[float, ...]) -> None:
    data = IMAGE[0]
    src = _stored(tmp_path, data[:, :, :], dimension_names=["c", "y", "x"])
    out = tmp_path / "out.zarr"
    code, _, err = run(capsys, "filter", src, out, "--gaussian", size)
    assert code == 0, err
    np.testing.assert_array_equal(chunkflow.open_array(str(out), mode="r")[...],
                                  ndimage.gaussian_filter(data, sigma))


@pytest.mark.parametrize("arguments, message", [
    (["--gaussian", "1,2"], "--gaussian 1,2: 2 sizes (1.0, 2.0) for an image of 4 axes"),
    (["--gaussian", "q=1"], "--gaussian q=1: sizes name axes ['q']"),
    (["--gaussian", "0,0,0,0"], "--gaussian 0,0,0,0 leaves every axis of"),
    (["--gaussian", "1,-1,1,1"], "every sigma must be finite and at least 0"),
    (["--gaussian", "nan"], "--gaussian nan: must be positive"),
    (["--median", "2.5"], "--median 2.5: sizes are whole numbers"),
    (["--median", "1"], "--median 1 leaves every axis of"),
    (["--uniform", "c=3"], None),  # an explicit size on c is allowed
    (["--gaussian", "two"], "argument --gaussian: 'two' is not a size"),
    (["--gaussian", "2", "--axes", "yx"], "--axes yx: give 4 distinct names"),
])
def test_bad_sizes_exit_2_naming_the_option(capsys: pytest.CaptureFixture[str], tmp_path: Path,
                                            arguments: list[str], message: str | None) -> None:
    src = _stored(tmp_path, IMAGE, dimension_names=list("czyx"))
    out = tmp_path / "out.zarr"
    code, _, err = run(capsys, "filter", src, out, *arguments)
    if message is None:
        assert code == 0, err
        np.testing.assert_allclose(chunkflow.open_array(str(out), mode="r")[...],
                                   ndimage.uniform_filter(IMAGE, (3, 1, 1, 1)), rtol=1e-12)
        return
    assert code == 2 and message in err, err
    assert not out.exists()
