"""``chunkflow pyramid --axes --units --scale --translation --channels``: checked before
anything is written (exit 2 naming the option), written as NGFF, inherited by labels."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import chunkflow
from chunkflow.cli import main


def run(capsys: pytest.CaptureFixture[str], *argv: object) -> tuple[int, str, str]:
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def sources(tmp_path: Path) -> tuple[str, str]:
    rng = np.random.default_rng(0)
    image = str(tmp_path / "image.zarr")
    labels = str(tmp_path / "labels.zarr")
    chunkflow.array(rng.integers(0, 900, (2, 40, 30)).astype("u2"), chunks=(1, 16, 16),
                    store=image, zarr_format=2)
    chunkflow.array(rng.integers(0, 4, (40, 30)).astype("u4"), chunks=(16, 16), store=labels,
                    zarr_format=2)
    return image, labels


def _multiscale(group: chunkflow.Group) -> dict:
    attrs = dict(group.attrs)
    return (attrs["ome"] if "ome" in attrs else attrs)["multiscales"][0]


def _level0(group: chunkflow.Group) -> tuple[list[float], list[float]]:
    transforms = {t["type"]: t[t["type"]] for t in
                  _multiscale(group)["datasets"][0]["coordinateTransformations"]}
    return transforms["scale"], transforms["translation"]


@pytest.mark.parametrize("arguments, named", [
    (["--scale", "1,2"], "--scale 1,2: "),
    (["--scale", "1,0,1"], "--scale 1,0,1: the scale of axis 'y' must be a positive number"),
    (["--scale", "q=2"], "--scale q=2: scale names axes ['q']"),
    (["--scale", "nan,1,1"], "--scale nan,1,1: the scale of axis 'z'"),
    (["--scale", "two"], "argument --scale: 'two' is not a list of numbers"),
    (["--translation", "0,inf,1"], "--translation 0,inf,1: the translation of axis 'y' must "
                                   "be a finite number"),
    (["--axes", "yx"], "--axes yx: 2 axes"),
    (["--axes", "xcy"], "--axes xcy: axes ['x', 'c', 'y']: NGFF orders them"),
    (["--units", "q=second"], "--units q=second: units names axes ['q']"),
    (["--units", "x=um"], "--units x=um: axis 'x' (space) takes one of NGFF's space units"),
    (["--axes", "tyx", "--units", "t=micrometer"], "--units t=micrometer: axis 't' (time)"),
    (["--axes", "cyx", "--units", "c=second"], "--units c=second: axis 'c' (channel) takes "
                                               "no unit"),
    (["--channels", "a,b"], "--channels a,b: the image (axes 'zyx') has no channel axis"),
    (["--axes", "cyx", "--channels", "a,b,c"], "--channels a,b,c: channels=['a', 'b', 'c'] "
                                               "names 3 channels; the channel axis has 2"),
])
def test_bad_values_exit_2_naming_the_option_and_create_nothing(
        capsys: pytest.CaptureFixture[str], sources: tuple[str, str], tmp_path: Path,
        arguments: list[str], named: str) -> None:
    out = tmp_path / "out.ome.zarr"
    code, _, err = run(capsys, "pyramid", sources[0], out, *arguments)
    assert code == 2, err
    assert named in err, err
    assert not out.exists()


def test_scale_units_channels_then_labels_inherit_them(capsys: pytest.CaptureFixture[str],
                                                       sources: tuple[str, str],
                                                       tmp_path: Path) -> None:
    image, labels = sources
    out = tmp_path / "out.ome.zarr"
    code, _, err = run(capsys, "pyramid", image, out, "--axes", "cyx", "--scale",
                       "y=0.65,x=0.65", "--translation", "1,10,20", "--units",
                       "y=micrometer,x=micrometer", "--channels", "DAPI,GFP")
    assert code == 0, err
    group = chunkflow.open_group(str(out), mode="r")
    assert _level0(group) == ([1.0, 0.65, 0.65], [1.0, 10.0, 20.0])
    assert [c["label"] for c in dict(group.attrs)["omero"]["channels"]] == ["DAPI", "GFP"]
    code, _, err = run(capsys, "pyramid", labels, out, "--labels", "cells")
    assert code == 0, err
    cells = chunkflow.open_group(str(out), mode="r", path="labels/cells")
    assert _level0(cells) == ([0.65, 0.65], [10.0, 20.0])
    assert _multiscale(cells)["axes"] == [
        {"name": "y", "type": "space", "unit": "micrometer"},
        {"name": "x", "type": "space", "unit": "micrometer"}]
    # Explicit values win over the image's.
    code, _, err = run(capsys, "pyramid", labels, out, "--labels", "coarse", "--scale", "1.3,1.3")
    assert code == 0, err
    coarse = chunkflow.open_group(str(out), mode="r", path="labels/coarse")
    assert _level0(coarse) == ([1.3, 1.3], [10.0, 20.0])


def test_labels_refuse_channels(capsys: pytest.CaptureFixture[str], sources: tuple[str, str],
                                tmp_path: Path) -> None:
    out = tmp_path / "out.ome.zarr"
    assert run(capsys, "pyramid", sources[0], out, "--axes", "cyx")[0] == 0
    code, _, err = run(capsys, "pyramid", sources[1], out, "--labels", "cells", "--channels", "a")
    assert code == 2 and "--channels a: " in err and "a label image has none" in err
    assert not (out / "labels").exists()


def test_labels_into_an_array_exit_2(capsys: pytest.CaptureFixture[str],
                                     sources: tuple[str, str]) -> None:
    # The image whose axes the labels would inherit is an array: plan_output's refusal.
    code, _, err = run(capsys, "pyramid", sources[1], sources[0], "--labels", "cells")
    assert code == 2 and "label images go below an image group" in err, err
