"""Unfinished outputs read through ``engine="chunkflow"``: an IncompleteJobWarning, and
the ``chunkflow_unfinished`` attribute on the variable and the dataset (issue 35)."""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("xarray")
import xarray as xr  # noqa: E402

import chunkflow  # noqa: E402
from chunkflow.errors import IncompleteJobWarning  # noqa: E402
from chunkflow.jobs import JOB_ATTRIBUTE, job_status, quiet_open  # noqa: E402
from chunkflow.xarray.unfinished import UNFINISHED_ATTRIBUTE  # noqa: E402
from tests.helpers.jobs import logged_filter  # noqa: E402

SHAPE = (8, 8)


def failed_job(folder: Path, log: Path, zarr_format: int = 3) -> str:
    """A group with a finished array ``src`` and ``out``, the output of a map_chunks
    job that failed part-way (at one block of 16)."""
    path = str(folder / "g.zarr")
    root = chunkflow.open_group(path, mode="w", zarr_format=zarr_format)
    names = ({"dimension_names": ("y", "x")} if zarr_format == 3
             else {"attributes": {"_ARRAY_DIMENSIONS": ["y", "x"]}})
    src = root.create_array("src", shape=SHAPE, chunks=(2, 2), dtype="f8", **names)
    src[:] = np.arange(64.0).reshape(SHAPE) + 1
    out = root.create_array("out", shape=SHAPE, chunks=(2, 2), dtype="f8", **names)
    (log / "fail-2-1").touch()
    with pytest.raises(RuntimeError, match="injected"):
        chunkflow.map_chunks(logged_filter, src, out=out, blocks=(1, 1), blocks_per_task=1,
                             block_info=True, scheduler="sync", log=str(log))
    return path


@pytest.mark.parametrize("zarr_format", [2, 3])
def test_an_unfinished_variable_warns_and_is_marked(tmp_path: Path, log: Path,
                                                    zarr_format: int) -> None:
    path = failed_job(tmp_path, log, zarr_format)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        ds = xr.open_dataset(path, engine="chunkflow", consolidated=False)
    unfinished = [w for w in caught if issubclass(w.category, IncompleteJobWarning)]
    assert len(unfinished) == 1 and "'out'" in str(unfinished[0].message)
    assert unfinished[0].filename == __file__  # attributed to the user's call
    with quiet_open():
        status = job_status(chunkflow.open(path, path="out", mode="r"))
    assert 0 < status.done < status.total
    assert ds.attrs[UNFINISHED_ATTRIBUTE] == ["out"]
    line = ds["out"].attrs[UNFINISHED_ATTRIBUTE]
    assert f"{status.done} of {status.total} blocks done" in line
    assert UNFINISHED_ATTRIBUTE not in ds["src"].attrs
    assert JOB_ATTRIBUTE not in ds["out"].attrs  # the job's tokens are no user attribute
    # Opened again: warned again (every open says so, not once per process).
    with pytest.warns(IncompleteJobWarning):
        xr.open_dataset(path, engine="chunkflow", consolidated=False).close()
    ds.close()


def test_a_finished_output_is_not_marked(tmp_path: Path, log: Path) -> None:
    path = failed_job(tmp_path, log)
    (log / "fail-2-1").unlink()
    root = chunkflow.open_group(path)
    chunkflow.map_chunks(logged_filter, root["src"], out=path + "/out", blocks=(1, 1),
                         blocks_per_task=1, block_info=True, scheduler="sync",
                         log=str(log), resume=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error", IncompleteJobWarning)
        ds = xr.open_dataset(path, engine="chunkflow", consolidated=False)
    assert UNFINISHED_ATTRIBUTE not in ds.attrs and UNFINISHED_ATTRIBUTE not in ds["out"].attrs
    np.testing.assert_array_equal(ds["out"].values, (np.arange(64.0).reshape(SHAPE) + 1) * 3 + 1)


def test_the_tree_marks_the_unfinished_group(tmp_path: Path, log: Path) -> None:
    path = failed_job(tmp_path, log)
    with pytest.warns(IncompleteJobWarning):
        tree = xr.open_datatree(path, engine="chunkflow", consolidated=False)
    assert tree.attrs[UNFINISHED_ATTRIBUTE] == ["out"]
    assert UNFINISHED_ATTRIBUTE in tree["out"].attrs


def test_the_mark_survives_to_zarr_as_a_plain_attribute(tmp_path: Path, log: Path) -> None:
    path = failed_job(tmp_path, log)
    with pytest.warns(IncompleteJobWarning):
        ds = xr.open_dataset(path, engine="chunkflow", consolidated=False)
    ds.to_zarr(str(tmp_path / "copy.zarr"), zarr_format=3, consolidated=False)
    again = xr.open_dataset(str(tmp_path / "copy.zarr"), engine="chunkflow",
                            consolidated=False)
    assert again["out"].attrs[UNFINISHED_ATTRIBUTE] == ds["out"].attrs[UNFINISHED_ATTRIBUTE]
