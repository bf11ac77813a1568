"""map_chunks' output: an existing location is refused unless asked, a source never
written with a halo (issue 26, point 2)."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest
from scipy import ndimage

import chunkflow
from chunkflow.errors import (
    CastingError,
    ContainsArrayError,
    ContainsGroupError,
    OutputIsSourceError,
    UsageError,
)
from chunkflow.storage import LocalStore
from tests.helpers.jobs import data_keys


def _image(path: Path, dtype: str = "f8") -> np.ndarray:
    data = np.random.default_rng(0).integers(0, 200, (40, 36)).astype(dtype)
    chunkflow.array(data, chunks=(8, 8), store=str(path))
    return data


def test_the_issue_example_is_refused_and_writes_nothing(tmp_path: Path) -> None:
    a = tmp_path / "a.zarr"
    data = _image(a)
    before = data_keys(LocalStore(str(a)))
    for overwrite in (False, True):  # even overwrite=True cannot make halos right
        with pytest.raises(OutputIsSourceError, match=r"halo \(depth=\(8, 8\)\)"):
            chunkflow.map_chunks(ndimage.gaussian_filter, str(a), out=str(a), depth=8,
                                 sigma=2, overwrite=overwrite)
    assert data_keys(LocalStore(str(a))) == before
    np.testing.assert_array_equal(chunkflow.open(str(a), mode="r")[:], data)


def test_an_open_source_handle_as_out_with_a_halo_is_refused(tmp_path: Path) -> None:
    _image(tmp_path / "a.zarr")
    z = chunkflow.open(str(tmp_path / "a.zarr"), mode="r+")
    same = chunkflow.open(str(tmp_path / "a.zarr"), mode="r+")  # another handle, one array
    with pytest.raises(OutputIsSourceError, match="source 0"):
        chunkflow.map_chunks(ndimage.gaussian_filter, z, out=same, depth=1, sigma=1)


def test_a_group_holding_the_source_is_refused(tmp_path: Path) -> None:
    root = chunkflow.open_group(str(tmp_path / "g.zarr"), mode="w")
    src = root.create_array("img", shape=(8, 8), chunks=(4, 4), dtype="f8")
    with pytest.raises(OutputIsSourceError, match="overlaps source 0"):
        chunkflow.map_chunks(np.negative, src, out=str(tmp_path / "g.zarr"), overwrite=True)
    assert "img" in chunkflow.open_group(str(tmp_path / "g.zarr"), mode="r")


def test_in_place_without_a_halo_needs_overwrite(tmp_path: Path) -> None:
    a = tmp_path / "a.zarr"
    data = _image(a)
    with pytest.raises(OutputIsSourceError, match="needs overwrite=True"):
        chunkflow.map_chunks(np.negative, str(a), out=str(a))
    np.testing.assert_array_equal(chunkflow.open(str(a), mode="r")[:], data)
    chunkflow.map_chunks(np.negative, str(a), out=str(a), overwrite=True)
    np.testing.assert_array_equal(chunkflow.open(str(a), mode="r")[:], -data)


def test_an_existing_location_is_refused_unless_overwrite(tmp_path: Path) -> None:
    data = _image(tmp_path / "a.zarr")
    out = tmp_path / "b.zarr"
    old = np.full((40, 36), 7, dtype="i2")
    chunkflow.array(old, chunks=(5, 5), store=str(out))  # another dtype and chunking
    before = data_keys(LocalStore(str(out)))
    with pytest.raises(ContainsArrayError, match=r"overwrite=True.*Nothing was written"):
        chunkflow.map_chunks(np.sqrt, str(tmp_path / "a.zarr"), out=str(out), depth=1)
    assert data_keys(LocalStore(str(out))) == before
    chunkflow.map_chunks(np.sqrt, str(tmp_path / "a.zarr"), out=str(out), depth=1,
                         overwrite=True)
    result = chunkflow.open(str(out), mode="r")
    assert (result.dtype, result.chunks) == (np.dtype("f8"), (8, 8))  # replaced, like the source
    np.testing.assert_array_equal(result[:], np.sqrt(data))


def test_a_group_at_out_is_refused_unless_overwrite(tmp_path: Path) -> None:
    _image(tmp_path / "a.zarr")
    chunkflow.open_group(str(tmp_path / "g.zarr"), mode="w")
    with pytest.raises(ContainsGroupError, match="holds a group"):
        chunkflow.map_chunks(np.negative, str(tmp_path / "a.zarr"), out=str(tmp_path / "g.zarr"))


def test_an_open_array_handle_is_written_into(tmp_path: Path) -> None:
    data = _image(tmp_path / "a.zarr")
    out = chunkflow.zeros((40, 36), chunks=(8, 12), dtype="f8", store=str(tmp_path / "b.zarr"))
    chunkflow.map_chunks(ndimage.uniform_filter, str(tmp_path / "a.zarr"), out=out, depth=2,
                         size=3, mode="reflect")
    np.testing.assert_allclose(out[:], ndimage.uniform_filter(data, size=3, mode="reflect"))


def test_a_cast_numpy_refuses_is_refused_with_the_block_and_both_dtypes(tmp_path: Path) -> None:
    data = np.arange(65534, 65534 - 40 * 36, -1).astype("u2").reshape(40, 36)
    src = chunkflow.array(data, chunks=(8, 8), store=str(tmp_path / "a.zarr"))
    half = lambda b: b * 0.5  # noqa: E731 - float64 blocks
    # numpy's dtype rule, asked for: refused before any block runs, naming both dtypes.
    with pytest.raises(CastingError, match=r"block \(\d, \d\) for array '/' in file://.*b\.zarr "
                       r"\(chunk keys? 'c/.*float64.*uint8.*same_kind"):
        chunkflow.map_chunks(half, src, out=str(tmp_path / "b.zarr"), dtype="u1",
                             casting="same_kind", scheduler="sync")
    # numpy's ufunc refuses the same output cast.
    with pytest.raises(TypeError):
        np.multiply(data, 0.5, out=np.empty(data.shape, "u1"))
    # The default looks at the values: the first block's first value does not fit.
    with pytest.raises(CastingError, match=r"block \(\d, \d\) for array '/' .*b2\.zarr.*"
                       r"the value \d+\.0 at \(\d+, \d+\) changes when cast to the output's "
                       r"dtype uint8 \(out of its range 0\.\.255\).*casting='unsafe'") as refused:
        chunkflow.map_chunks(half, src, out=str(tmp_path / "b2.zarr"), dtype="u1",
                             scheduler="sync")
    _assert_names_a_value_of(refused, data * 0.5)
    region = r"block \(\d, \d\) \(array region \[\(\d+, \d+\), \(\d+, \d+\)\]\)"
    with pytest.raises(CastingError, match=region):
        chunkflow.map_chunks(half, src, dtype="u1").compute(scheduler="sync")
    done = chunkflow.map_chunks(half, src, out=str(tmp_path / "c.zarr"), dtype="u1",
                                casting="unsafe")
    np.testing.assert_array_equal(done[:], (data * 0.5).astype("u1"))
    # int64 into int16 is the same kind: numpy's rule allows it, with its wrap-around;
    # the default refuses the values that wrap.
    wide = chunkflow.map_chunks(lambda b: b.astype("i8") * 3, src, dtype="i2",
                                casting="same_kind").compute()
    np.testing.assert_array_equal(wide, (data.astype("i8") * 3).astype("i2"))
    with pytest.raises(CastingError, match="int16 \\(out of its range -32768..32767\\)"):
        chunkflow.map_chunks(lambda b: b.astype("i8") * 3, src, dtype="i2").compute()
    with pytest.raises(UsageError, match="casting='sometimes'"):
        chunkflow.map_chunks(half, src, dtype="u1", casting="sometimes")


def _assert_names_a_value_of(error: pytest.ExceptionInfo[CastingError], values: np.ndarray) -> None:
    """The refusal names a value of ``values`` and its position in the array."""
    found = re.search(r"the value (\S+) at \(([\d, ]*)\)", str(error.value))
    assert found, str(error.value)
    position = tuple(int(i) for i in found[2].split(",") if i.strip())
    assert float(found[1]) == float(values[position])
