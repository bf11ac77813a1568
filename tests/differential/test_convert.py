"""chunkflow.convert against numpy: every source kind (numpy array, .npy, raw memmap,
TIFF, HDF5) of drawn arrays, chunks, shards, levels and formats; each level equals
numpy's mean pyramid of the array (the reference of tests/differential/test_pyramid.py,
computed window by window on whole levels), bit for bit but for NaN payloads."""

from __future__ import annotations

import os
import tempfile
from typing import Any

import numpy as np
import pytest
from hypothesis import example, given
from hypothesis import strategies as st

import chunkflow
from chunkflow.testing import strategies as cst
from tests.differential.conftest import budget
from tests.differential.test_pyramid import _natural_levels, _same_bits, next_level

AXES = {2: "yx", 3: "zyx", 4: "czyx"}
# What tifffile writes as it is (no bool, no float16 in every reader).
TIFF_KINDS = ("u1", "u2", "u4", "i1", "i2", "i4", "f4", "f8")


@st.composite
def convert_cases(draw: st.DrawFn) -> dict[str, Any]:
    """An array, the source it is written as, and convert's layout arguments."""
    ndim = draw(st.integers(2, 4))
    data = draw(cst.varied_arrays(cst.dtypes(kinds="biuf", byteorder="any"),
                                  cst.shapes(min_dims=ndim, max_dims=ndim,
                                             max_side={2: 13, 3: 7, 4: 5}[ndim])))
    kinds = ["numpy", "npy", "raw", "hdf5"]
    # tifffile may drop axes of length 1 (tests/io/test_tiff.py) and does not round-trip
    # an empty array (its shape comes back as "YXYX").
    if data.dtype.newbyteorder("=").str[1:] in TIFF_KINDS and min(data.shape) > 1:
        kinds.append("tiff")
    zarr_format = draw(st.sampled_from([2, 3]))
    chunks = draw(cst.chunk_shapes(data.shape))
    shards = None
    if zarr_format == 3 and draw(st.booleans()):
        shards = draw(cst.shard_shapes(chunks))
    return {"data": data, "kind": draw(st.sampled_from(kinds)), "chunks": chunks,
            "shards": shards, "zarr_format": zarr_format,
            "levels": draw(st.none() | st.integers(1, 3)),
            "scheduler": draw(cst.schedulers(processes=False))}


def _source(case: dict[str, Any], folder: str) -> tuple[Any, dict[str, Any]]:
    data, kind = case["data"], case["kind"]
    if kind == "numpy":
        return data, {}
    if kind == "npy":
        np.save(os.path.join(folder, "a.npy"), data)
        return os.path.join(folder, "a.npy"), {}
    if kind == "raw":
        path = os.path.join(folder, "a.raw")
        with open(path, "wb") as f:
            f.write(b"\x07" * 3 + data.tobytes())
        return path, {"shape": data.shape, "dtype": data.dtype, "offset": 3}
    if kind == "hdf5":
        import h5py

        path = os.path.join(folder, "a.h5")
        with h5py.File(path, "w") as f:
            f.create_dataset("v", data=data, chunks=tuple(max(1, n // 2) for n in data.shape)
                             if data.size else None)
        return f"{path}::v", {}
    import tifffile

    path = os.path.join(folder, "a.tif")
    # tifffile's shaped metadata keeps the shape (a plain TIFF holds pages only).
    tifffile.imwrite(path, data, photometric="minisblack")
    return path, {"axes": AXES[data.ndim]}


def _check(case: dict[str, Any]) -> None:
    data = case["data"]
    axes = AXES[data.ndim]
    factors = tuple(2 if a in "zyx" else 1 for a in axes)
    count = case["levels"] or _natural_levels(data.shape, case["chunks"], factors)
    want = [data.astype(data.dtype.newbyteorder("="))]  # levels in the machine's order
    for _ in range(count - 1):
        want.append(next_level(want[-1], factors, "mean"))
    with tempfile.TemporaryDirectory() as folder:
        source, kwargs = _source(case, folder)
        out = os.path.join(folder, "out.zarr")
        arguments = {"chunks": case["chunks"], "shards": case["shards"],
                     "levels": case["levels"], "zarr_format": case["zarr_format"],
                     "scheduler": case["scheduler"], **kwargs}
        if case["levels"] and len(want) > 1 and want[-2].shape == want[-1].shape:
            with pytest.raises(chunkflow.errors.InvalidArgumentError, match="smallest"):
                chunkflow.convert(source, out, **arguments)
            assert not os.path.exists(out)
            return
        chunkflow.convert(source, out, **arguments)
        group = chunkflow.open_group(out, mode="r")
        attrs = dict(group.attrs)
        multiscale = (attrs["ome"] if "ome" in attrs else attrs)["multiscales"][0]
        assert [a["name"] for a in multiscale["axes"]] == list(axes)
        assert len(multiscale["datasets"]) == len(want)
        for k, expected in enumerate(want):
            level = group[str(k)]
            assert level.shape == expected.shape and level.dtype == expected.dtype
            _same_bits(level[...], expected)


@budget(12)
@given(convert_cases())
@example({"data": np.arange(6 * 7, dtype=">u2").reshape(6, 7), "kind": "tiff",
          "chunks": (2, 3), "shards": (4, 6), "zarr_format": 3, "levels": 3,
          "scheduler": "threads"})
@example({"data": np.array([[np.nan, -0.0], [1.5, np.inf]], dtype="<f4"), "kind": "raw",
          "chunks": (1, 1), "shards": None, "zarr_format": 2, "levels": 2,
          "scheduler": "sync"})
@example({"data": np.zeros((3, 3), dtype="u1"), "kind": "numpy", "chunks": (3, 3),
          "shards": None, "zarr_format": 3, "levels": 3, "scheduler": "sync"})
def test_convert_matches_numpys_pyramid(case: dict[str, Any]) -> None:
    _check(case)
