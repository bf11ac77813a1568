"""distance_transform_edt's plumbing: where results go (numpy arrays, a group at a
path, a store or a URL), the features between passes (removed at the end), the memory
plan, and the refusals."""

from __future__ import annotations

import os
import uuid

import dask.array as da
import numpy as np
import pytest
from scipy import ndimage

import chunkflow
from chunkflow.errors import (
    ArgumentTypeError,
    ContainsArrayError,
    DistanceTransformError,
    IncompleteJobWarning,
    InvalidArgumentError,
    JobMismatchError,
    MemoryPlanError,
    OutputIsSourceError,
)
from chunkflow.graph.distance import distance_transform_edt
from chunkflow.graph.distance.plan import element_bytes, plan_passes

IMAGE = np.random.default_rng(5).random((23, 17)) > 0.15


def expected(image: np.ndarray = IMAGE, **kwargs: object) -> tuple[np.ndarray, np.ndarray]:
    return ndimage.distance_transform_edt(image, return_indices=True, **kwargs)


def test_writes_a_group_at_a_path(tmp_path: os.PathLike) -> None:
    out = os.path.join(tmp_path, "edt.zarr")
    source = chunkflow.array(IMAGE, chunks=(5, 4), store=os.path.join(tmp_path, "in.zarr"))
    dist, ind = distance_transform_edt(source, sampling=(0.5, 2.0), return_indices=True,
                                       out=out, scheduler="threads")
    want_d, want_i = expected(sampling=(0.5, 2.0))
    opened = chunkflow.open_group(out, mode="r")
    assert sorted(opened.array_keys()) == ["distances", "indices"]  # the features are gone
    assert dist.chunks == (5, 4) and ind.chunks == (2, 5, 4)
    np.testing.assert_array_equal(opened["distances"][...].view("u8"), want_d.view("u8"))
    np.testing.assert_array_equal(ind[...], want_i)


def test_a_path_as_input_and_temp_elsewhere(tmp_path: os.PathLike) -> None:
    chunkflow.array(IMAGE, chunks=(4, 4), store=os.path.join(tmp_path, "in.zarr"))
    temp = os.path.join(tmp_path, "temp.zarr")
    dist = distance_transform_edt(os.path.join(tmp_path, "in.zarr"), temp=temp,
                                  out=chunkflow.MemoryStore())
    np.testing.assert_array_equal(dist[...].view("u8"), expected()[0].view("u8"))
    assert list(chunkflow.open_group(temp, mode="r").array_keys()) == []


def test_a_url_with_storage_options() -> None:
    url = f"memory://edt-{uuid.uuid4().hex}/out.zarr"
    ind = distance_transform_edt(IMAGE, return_distances=False, return_indices=True, out=url,
                                 storage_options={"skip_instance_cache": False})
    np.testing.assert_array_equal(ind[...], expected()[1])
    again = chunkflow.open_group(url, mode="r", storage_options={"skip_instance_cache": False})
    np.testing.assert_array_equal(again["indices"][...], expected()[1])


def test_refuses_an_existing_output_unless_overwrite(tmp_path: os.PathLike) -> None:
    out = os.path.join(tmp_path, "edt.zarr")
    distance_transform_edt(IMAGE, out=out)
    with pytest.raises(ContainsArrayError, match="overwrite=True"):
        distance_transform_edt(IMAGE, out=out)
    dist = distance_transform_edt(IMAGE == 0, out=out, overwrite=True)
    np.testing.assert_array_equal(dist[...], ndimage.distance_transform_edt(IMAGE == 0))


def test_memory_below_one_line_is_refused_before_anything_is_created(tmp_path: os.PathLike) -> None:
    out = os.path.join(tmp_path, "edt.zarr")
    line = 23 * element_bytes(0, 2, 1)
    with pytest.raises(MemoryPlanError, match=r"one line along axis \d \(\d+ elements\)"):
        distance_transform_edt(IMAGE, out=out, max_memory=line // 2)
    assert not os.path.exists(out)


def test_given_chunks_that_do_not_fit_are_refused_with_chunks_that_do() -> None:
    with pytest.raises(MemoryPlanError, match=r"chunks=\(\d+, \d+\) would fit"):
        distance_transform_edt(IMAGE, chunks=(23, 17), max_memory="20 kiB")


def test_default_chunks_shrink_to_fit_and_tasks_keep_the_plan() -> None:
    plan = plan_passes((200, 300), (200, 300), 1, "100 kiB", "sync")
    assert plan.chunks[0] < 200 or plan.chunks[1] < 300
    assert max(plan.memory) <= 100 * 1024
    assert [b[a] for a, b in enumerate(plan.blocks)] == [200, 300]  # each axis whole
    image = np.random.default_rng(1).random((200, 300)) > 0.01
    got = distance_transform_edt(image, max_memory="100 kiB", scheduler="sync")
    np.testing.assert_array_equal(got.view("u8"), ndimage.distance_transform_edt(image).view("u8"))


@pytest.mark.parametrize(("kwargs", "error", "match"), [
    ({"resume": True}, InvalidArgumentError, "resume=True continues a job that writes to out="),
    ({"resume": True, "overwrite": True, "out": "x.zarr"}, InvalidArgumentError, "one of them"),
    ({"out": 3}, ArgumentTypeError, "out must be"),
    ({"out": "x.zarr", "distances": np.zeros((23, 17))}, InvalidArgumentError, "distances="),
    ({"distances": [0.0]}, ArgumentTypeError, "numpy array"),
    ({"sampling": [1.0]}, DistanceTransformError, "length equal to input rank"),
    ({"sampling": "ab"}, ArgumentTypeError, "sampling"),
    ({"chunks": (4,)}, InvalidArgumentError, "chunks"),
    ({"scheduler": "processes"}, InvalidArgumentError, "temp="),
])
def test_refusals_name_the_argument(kwargs: dict, error: type, match: str) -> None:
    with pytest.raises(error, match=match):
        distance_transform_edt(IMAGE, **kwargs)


def test_refuses_inputs_without_numbers() -> None:
    with pytest.raises(ArgumentTypeError, match="holds no numbers"):
        distance_transform_edt(np.array(["a", ""]))
    with pytest.raises(ArgumentTypeError, match="Python objects"):
        distance_transform_edt(np.array([None, 1], dtype=object))


def test_a_zero_dimensional_array_is_its_one_value() -> None:
    z = chunkflow.array(np.array(0.0))
    np.testing.assert_array_equal(distance_transform_edt(z), ndimage.distance_transform_edt(0.0))


def test_refuses_to_replace_the_group_that_holds_its_input(tmp_path: os.PathLike) -> None:
    root = os.path.join(tmp_path, "data.zarr")
    chunkflow.array(IMAGE, chunks=(8, 8), store=root, path="image")
    with pytest.raises(OutputIsSourceError):
        distance_transform_edt(chunkflow.open(root, path="image"), out=root, overwrite=True)
    np.testing.assert_array_equal(chunkflow.open(root, path="image")[...], IMAGE)


FAILING = {"on": False, "calls": 0}


def _flaky(block: np.ndarray, block_info: dict | None = None) -> np.ndarray:
    FAILING["calls"] += 1
    if FAILING["on"] and block_info is not None and block_info[0]["array-location"][1][1] == 17:
        raise OSError("a read failed")
    return block


def test_resume_finishes_an_interrupted_job_writing_only_what_is_missing(tmp_path: os.PathLike) -> None:
    out = os.path.join(tmp_path, "edt.zarr")
    lazy = da.from_array(IMAGE, chunks=(23, 4)).map_blocks(_flaky, dtype=bool)
    FAILING.update(on=True, calls=0)
    with pytest.raises(OSError, match="a read failed"):
        distance_transform_edt(lazy, return_indices=True, out=out, chunks=(4, 4),
                               scheduler="sync", job_name="edt")
    first = FAILING["calls"]
    with pytest.warns(IncompleteJobWarning):
        chunkflow.open(out, path="distances", mode="r")
    with pytest.raises(JobMismatchError):  # another job: another sampling
        distance_transform_edt(lazy, 2.0, return_indices=True, out=out, chunks=(4, 4),
                               scheduler="sync", job_name="edt", resume=True)
    FAILING.update(on=False, calls=0)
    dist, ind = distance_transform_edt(lazy, return_indices=True, out=out, chunks=(4, 4),
                                       scheduler="sync", job_name="edt", resume=True)
    # Pass 0 reads 5 blocks of (23, 4), one source block each: those the failed run
    # recorded (all it read but the failing one) are not read again.
    assert FAILING["calls"] == 5 - (first - 1)
    want_d, want_i = expected()
    np.testing.assert_array_equal(dist[...].view("u8"), want_d.view("u8"))
    np.testing.assert_array_equal(ind[...], want_i)
    assert sorted(chunkflow.open_group(out, mode="r").array_keys()) == ["distances", "indices"]
    with pytest.raises(ContainsArrayError, match="finished"):
        distance_transform_edt(lazy, return_indices=True, out=out, chunks=(4, 4),
                               scheduler="sync", job_name="edt", resume=True)
