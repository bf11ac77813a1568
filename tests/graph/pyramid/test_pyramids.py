"""chunkflow.pyramid: every level equals a whole-image numpy/scipy reference, the plan
stays small, and refused jobs create nothing."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import chunkflow
from chunkflow.errors import (
    ContainsGroupError,
    MemoryPlanError,
    OutputIsSourceError,
    PyramidError,
)
from chunkflow.graph.pyramid.downsample import downsample, round_half_even_divide
from tests.helpers.pyramid_reference import reference_levels

METHODS = ["mean", "gaussian", "max", "nearest", "mode"]


def _image(shape: tuple[int, ...], dtype: str, method: str, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    high = 4 if method == "mode" else 1000  # few labels: ties and runs in every window
    values = rng.integers(0, high, shape)
    if np.dtype(dtype).kind == "f":
        return (values * 0.37).astype(dtype)
    return values.astype(dtype) - (500 if np.dtype(dtype).kind == "i" and high > 4 else 0)


def _check_levels(levels: list[chunkflow.Array], image: np.ndarray, factors: tuple[int, ...],
                  method: str) -> None:
    expected = reference_levels(image, factors, method, len(levels))
    for k, (level, want) in enumerate(zip(levels, expected)):
        got = level[...]
        assert got.dtype == image.dtype, f"level {k}"
        np.testing.assert_array_equal(got, want, err_msg=f"level {k} ({method})")


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("zarr_format", [2, 3])
def test_2d_levels_equal_the_whole_image_reference(method: str, zarr_format: int) -> None:
    image = _image((203, 150), "u2", method)  # odd sizes: partial windows at the ends
    source = chunkflow.array(image, chunks=(16, 16), zarr_format=zarr_format)
    levels = chunkflow.pyramid(source, chunkflow.MemoryStore(), method=method,
                               scheduler="sync")
    assert [a.shape for a in levels] == [(203, 150), (102, 75), (51, 38), (26, 19), (13, 10)]
    assert all(a.zarr_format == zarr_format for a in levels)
    _check_levels(list(levels), image, (2, 2), method)


@pytest.mark.parametrize("method", ["mean", "gaussian", "max"])
@pytest.mark.parametrize("dtype", ["i2", "f4", "u1"])
def test_levels_over_several_stages(method: str, dtype: str) -> None:
    # A small memory budget makes more stages: later stages read what earlier ones wrote,
    # with halos across their tasks' edges (gaussian).
    image = _image((150, 171), dtype, method, seed=2)
    source = chunkflow.array(image, chunks=(8, 8))
    out = chunkflow.MemoryStore()
    delayed = chunkflow.pyramid(source, out, method=method, max_memory="40 KiB",
                                compute=False)
    assert len({key[0] for key in delayed.dask if isinstance(key, tuple)}) >= 3  # stages
    delayed.compute(scheduler="threads")
    group = chunkflow.open_group(out, mode="r")
    datasets = group.attrs["ome"]["multiscales"][0]["datasets"]
    levels = [group[d["path"]] for d in datasets]
    _check_levels(levels, image, (2, 2), method)


@pytest.mark.parametrize("method", ["mean", "gaussian"])
def test_3d_float_levels(method: str) -> None:
    image = _image((37, 40, 33), "f4", method, seed=3)
    source = chunkflow.array(image, chunks=(8, 8, 8), zarr_format=3)
    levels = chunkflow.pyramid(source, chunkflow.MemoryStore(), method=method)
    assert len(levels) == 4
    _check_levels(list(levels), image, (2, 2, 2), method)


@pytest.mark.parametrize("axes", ["tczyx", "tcyx"])
def test_channels_and_time_are_not_downsampled(axes: str) -> None:
    shape = {"tczyx": (2, 3, 12, 30, 20), "tcyx": (3, 2, 45, 31)}[axes]
    image = _image(shape, "u2", "mean", seed=4)
    chunks = (1, 1) + (8,) * (len(shape) - 2)
    source = chunkflow.array(image, chunks=chunks, dimension_names=list(axes))
    levels = chunkflow.pyramid(source, chunkflow.MemoryStore(), method="mean")
    spatial = len(axes) - 2
    factors = (1, 1) + (2,) * spatial
    assert all(level.shape[:2] == shape[:2] for level in levels)
    for t in range(shape[0]):  # each (t, c) plane (volume) is a pyramid of its own
        for c in range(shape[1]):
            planes = reference_levels(image[t, c], factors[2:], "mean", len(levels))
            for level, want in zip(levels, planes):
                np.testing.assert_array_equal(level[t, c], want)


def test_labels_mode_under_the_image(tmp_path: Path) -> None:
    image = _image((40, 50), "u2", "mean")
    labels = _image((40, 50), "u4", "mode", seed=5)
    out = str(tmp_path / "image.zarr")
    chunkflow.pyramid(chunkflow.array(image, chunks=(16, 16)), out)
    levels = chunkflow.pyramid(chunkflow.array(labels, chunks=(16, 16)), out, labels="cells")
    _check_levels(list(levels), labels, (2, 2), "mode")
    root = chunkflow.open_group(out, mode="r")
    assert root["labels"].attrs["ome"] == {"version": "0.5", "labels": ["cells"]}
    ome = root["labels/cells"].attrs["ome"]
    assert ome["image-label"] == {"source": {"image": "../../"}}
    assert ome["multiscales"][0]["type"] == "mode"


def test_integer_mean_rounds_half_to_even_without_floats() -> None:
    block = np.array([[1, 2, 3, 4], [2, 3, 4, 5]], dtype="u1")  # means 2.0, 4.0
    assert downsample(block, (2, 2), "mean").tolist() == [[2, 4]]
    halves = np.array([[0, 1, 2, 3, 4, 5, 6, 7]], dtype="i1")  # 0.5, 2.5, 4.5, 6.5
    assert downsample(halves, (1, 2), "mean").tolist() == [[0, 2, 4, 6]]
    negative = np.array([[-1, -2, -3, -4]], dtype="i2")  # -1.5, -3.5
    assert downsample(negative, (1, 2), "mean").tolist() == [[-2, -4]]
    big = np.array([2**64 - 1, 2**64 - 3], dtype="u8")  # a uint64 sum overflows 64 bits
    assert downsample(big, (2,), "mean").tolist() == [2**64 - 2]
    assert round_half_even_divide(np.array([3, 9]), 6).tolist() == [0, 2]


def test_levels_stop_at_one_chunk_unless_levels_is_given() -> None:
    source = chunkflow.array(np.zeros((100, 64), "u1"), chunks=(32, 32))
    assert [a.shape for a in chunkflow.pyramid(source, chunkflow.MemoryStore())] == \
        [(100, 64), (50, 32), (25, 16)]
    more = chunkflow.pyramid(source, chunkflow.MemoryStore(), levels=5)
    assert [a.shape for a in more][-1] == (7, 4)
    with pytest.raises(PyramidError, match="levels=9 goes past"):
        chunkflow.pyramid(source, chunkflow.MemoryStore(), levels=9)


@pytest.mark.parametrize("kwargs", [{"levels": 1}, {"chunks": (16, 16)}])
def test_one_level_is_a_copy(kwargs: dict) -> None:
    # levels=1, or an image that fits in one chunk already: level 0 alone, still written.
    image = _image((10, 12), "u2", "mean")
    levels = chunkflow.pyramid(chunkflow.array(image, chunks=(4, 4)), chunkflow.MemoryStore(),
                               **kwargs)
    assert len(levels) == 1
    np.testing.assert_array_equal(levels[0][...], image)


def test_task_count_stays_small() -> None:
    # ngff-zarr issue 48: a level alone needed 2.5 million tasks. Planning costs nothing.
    source = chunkflow.zeros((16384, 16384), chunks=(512, 512), dtype="u2")
    delayed = chunkflow.pyramid(source, chunkflow.MemoryStore(), compute=False,
                                scheduler="threads")
    tasks = len(delayed.dask)
    # 256 + 64 + 16 + 4 + 1 tasks (levels 1 to 5), the plan and the metadata write;
    # ome-zarr-py's write_image makes 3411 here, ngff-zarr 8186 (bench_pyramid.py).
    assert tasks == 343, tasks


@pytest.mark.parametrize("bad", [
    {"method": "median"},
    {"axes": "zyx"},
    {"axes": ["x", "t"]},
    {"factors": (2, 0)},
    {"factors": 1},
    {"factors": {"q": 2}},
    {"levels": 0},
    {"chunks": (16,)},
    {"labels": "cells", "method": "mean"},
    {"max_memory": "1 KiB"},
])
def test_refusals_create_nothing(tmp_path: Path, bad: dict) -> None:
    source = chunkflow.array(np.zeros((64, 64), "u2"), chunks=(16, 16))
    out = tmp_path / "out.zarr"
    with pytest.raises((PyramidError, MemoryPlanError)):
        chunkflow.pyramid(source, str(out), **bad)
    assert not out.exists()


def test_an_existing_output_is_refused_unless_overwrite(tmp_path: Path) -> None:
    source = chunkflow.array(np.ones((64, 64), "u2"), chunks=(16, 16))
    out = str(tmp_path / "out.zarr")
    chunkflow.pyramid(source, out)
    with pytest.raises(ContainsGroupError, match="overwrite=True"):
        chunkflow.pyramid(source, out, method="max")
    assert chunkflow.open_group(out, mode="r").attrs["ome"]["multiscales"][0]["type"] == "mean"
    chunkflow.pyramid(source, out, method="max", overwrite=True)
    assert chunkflow.open_group(out, mode="r").attrs["ome"]["multiscales"][0]["type"] == "max"


def test_the_source_inside_the_output_is_refused(tmp_path: Path) -> None:
    inside = tmp_path / "image.zarr" / "0"
    chunkflow.array(np.ones((64, 64), "u2"), chunks=(16, 16), store=str(inside))
    with pytest.raises(OutputIsSourceError, match="overlaps its source"):
        chunkflow.pyramid(str(inside), str(tmp_path / "image.zarr"), overwrite=True)
    assert chunkflow.open_array(str(inside), mode="r")[0, 0] == 1
    # The same through stores: one folder opened twice is one location.
    store = chunkflow.LocalStore(str(tmp_path / "image.zarr"))
    with pytest.raises(OutputIsSourceError, match="overlaps its source"):
        chunkflow.pyramid(chunkflow.open_array(store, path="0", mode="r"),
                          chunkflow.LocalStore(str(tmp_path / "image.zarr")), overwrite=True)
    assert chunkflow.open_array(str(inside), mode="r")[0, 0] == 1


def test_metadata_is_written_after_every_level() -> None:
    source = chunkflow.array(np.ones((64, 64), "u2"), chunks=(16, 16), zarr_format=2)
    out = chunkflow.MemoryStore()
    delayed = chunkflow.pyramid(source, out, compute=False)
    group = chunkflow.open_group(out, mode="r")
    assert "multiscales" not in group.attrs  # created, not yet an image
    assert [name for name, _ in group.arrays()] == ["0", "1", "2"]
    delayed.compute()
    attrs = chunkflow.open_group(out, mode="r").attrs["multiscales"][0]
    assert attrs["version"] == "0.4"
    assert [d["coordinateTransformations"][1]["translation"] for d in attrs["datasets"]] == \
        [[0.0, 0.0], [0.5, 0.5], [1.5, 1.5]]


@pytest.mark.slow
def test_runs_on_processes(tmp_path: Path) -> None:
    image = _image((90, 70), "u2", "mean")
    source = str(tmp_path / "source.zarr")
    chunkflow.array(image, chunks=(16, 16), store=source)
    levels = chunkflow.pyramid(source, str(tmp_path / "out.zarr"), scheduler="processes")
    _check_levels(list(levels), image, (2, 2), "mean")


@pytest.mark.parametrize("method", ["mean", "max", "mode"])
def test_blocks_reduced_in_strips_equal_the_reference(monkeypatch: pytest.MonkeyPatch,
                                                      method: str) -> None:
    from chunkflow.graph.pyramid import downsample as kernels

    monkeypatch.setattr(kernels, "STRIP_ELEMENTS", 100)  # strips of a few rows
    image = _image((61, 47, 5), "u2", method, seed=9)
    assert np.array_equal(downsample(image, (2, 2, 1), method),
                          reference_levels(image, (2, 2, 1), method, 2)[1])


def test_runs_on_a_local_cluster_with_progress(tmp_path: Path) -> None:
    distributed = pytest.importorskip("distributed")
    image = _image((90, 70), "u2", "gaussian")
    source = str(tmp_path / "source.zarr")
    chunkflow.array(image, chunks=(16, 16), store=source)
    seen: list[tuple[int, int]] = []
    with distributed.LocalCluster(n_workers=1, threads_per_worker=2, processes=False,
                                  dashboard_address=None) as cluster, \
            distributed.Client(cluster) as client:
        levels = chunkflow.pyramid(source, str(tmp_path / "out.zarr"), method="gaussian",
                                   scheduler=client,
                                   progress=lambda done, total: seen.append((done, total)))
    _check_levels(list(levels), image, (2, 2), "gaussian")
    assert seen and seen[-1][0] == seen[-1][1]
