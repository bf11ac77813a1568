"""Groups and consolidated metadata shared with zarr-python 3, both directions."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

from chunkflow.api import consolidate_metadata, group, open_consolidated, open_group

try:
    import zarr
except ImportError:  # a test peer: only the tests that use it are skipped
    zarr = None
needs_zarr = pytest.mark.skipif(zarr is None, reason="zarr-python is not installed")


def _zarr_tree(g, prefix=""):
    out = {}
    for name, node in sorted(g.members()):
        path = prefix + name
        if isinstance(node, zarr.Group):
            out[path] = ("group", dict(node.attrs))
            out.update(_zarr_tree(node, path + "/"))
        else:
            out[path] = ("array", dict(node.attrs), node[...].tolist())
    return out


def _our_tree(g, prefix=""):
    out = {}
    for name, node in g.members():
        path = prefix + name
        if hasattr(node, "members"):
            out[path] = ("group", dict(node.attrs))
            out.update(_our_tree(node, path + "/"))
        else:
            out[path] = ("array", dict(node.attrs), node[...].tolist())
    return out


@pytest.fixture(autouse=True)
def _quiet():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        yield


@needs_zarr
@pytest.mark.parametrize("zarr_format", [2, 3])
def test_zarr_writes_chunkflow_reads(tmp_path, zarr_format):
    root = zarr.open_group(str(tmp_path / "z.zarr"), mode="w", zarr_format=zarr_format)
    root.attrs.update(title="t", nan=float("nan"))
    sub = root.create_group("g1/g2")
    sub.attrs["k"] = [1, 2]
    arr = sub.create_array("a", shape=(5,), chunks=(2,), dtype="i4")
    arr[:] = np.arange(5)
    arr.attrs["unit"] = "m"
    ours = open_group(str(tmp_path / "z.zarr"), mode="r")
    assert ours.zarr_format == zarr_format and math.isnan(ours.attrs["nan"])
    assert _our_tree(ours) == _zarr_tree(zarr.open_group(str(tmp_path / "z.zarr"), mode="r"))
    zarr.consolidate_metadata(str(tmp_path / "z.zarr"))
    cons = open_consolidated(str(tmp_path / "z.zarr"))
    assert cons._live_index() is not None
    assert _our_tree(cons) == _our_tree(ours)


@needs_zarr
@pytest.mark.parametrize("zarr_format", [2, 3])
def test_chunkflow_writes_zarr_reads(tmp_path, zarr_format):
    path = str(tmp_path / "c.zarr")
    root = group(path, zarr_format=zarr_format, attributes={"title": "t", "inf": float("inf")})
    sub = root.create_group("g1/g2", attributes={"k": [1, 2]})
    sub.create_array("a", data=np.arange(5, dtype="i4"), chunks=(2,)).attrs["unit"] = "m"
    root.zeros("z", shape=(2, 3), dtype="f4")
    theirs = zarr.open_group(path, mode="r")
    assert theirs.attrs["inf"] == math.inf
    assert _zarr_tree(theirs) == _our_tree(open_group(path, mode="r"))
    consolidate_metadata(path)
    cons = zarr.open_consolidated(path, zarr_format=zarr_format)
    assert cons.metadata.consolidated_metadata is not None
    assert _zarr_tree(cons) == _our_tree(open_group(path, mode="r"))
