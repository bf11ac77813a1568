"""Walking groups: members(max_depth=) as zarr-python 3, items/values/visit/visititems as
zarr-python 2, and Group.create_array with zarr-python 3's keywords."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import chunkflow


def _hierarchy(path: Path) -> chunkflow.Group:
    root = chunkflow.create_group(str(path))
    a = root.create_group("a")
    a.create_group("deep").create_group("deeper").zeros("leaf", shape=(2,), dtype="u1")
    a.zeros("x", shape=(3,), dtype="i2")
    root.zeros("b", shape=(4,), dtype="f4")
    root.create_group("c")
    return root


@pytest.mark.parametrize("max_depth", [0, 1, 2, None])
def test_members_max_depth_matches_zarr_python(tmp_path: Path, max_depth: int | None) -> None:
    zarr = pytest.importorskip("zarr")
    root = _hierarchy(tmp_path / "h.zarr")
    ours = root.members(max_depth=max_depth)
    theirs = zarr.open_group(str(tmp_path / "h.zarr"), mode="r").members(max_depth=max_depth)
    assert sorted(name for name, _ in ours) == sorted(name for name, _ in theirs)
    kinds = {name: type(node).__name__ for name, node in theirs}
    assert {name: type(node).__name__ for name, node in ours} == kinds  # Array / Group
    depths = [name.count("/") for name, _ in ours]
    assert depths == sorted(depths)  # shallower members first


def test_members_default_is_the_children(tmp_path: Path) -> None:
    root = _hierarchy(tmp_path / "h.zarr")
    assert [name for name, _ in root.members()] == ["a", "b", "c"]
    assert root["a"].members(max_depth=None)[-1][0] == "deep/deeper/leaf"
    for bad in (-1, 1.5, "1"):
        with pytest.raises(ValueError, match="max_depth"):
            root.members(max_depth=bad)  # type: ignore[arg-type]


def test_items_and_values_are_the_children(tmp_path: Path) -> None:
    root = _hierarchy(tmp_path / "h.zarr")
    assert [name for name, _ in root.items()] == list(root) == ["a", "b", "c"]
    assert [node.path for node in root.values()] == ["a", "b", "c"]
    assert dict(root.items())["b"].shape == (4,)


def test_visit_walks_depth_first_in_name_order(tmp_path: Path) -> None:
    root = _hierarchy(tmp_path / "h.zarr")
    seen: list[str] = []
    assert root.visit(seen.append) is None  # append returns None: the walk goes on
    assert seen == ["a", "a/deep", "a/deep/deeper", "a/deep/deeper/leaf", "a/x", "b", "c"]
    pairs: list[tuple[str, str]] = []
    root["a"].visititems(lambda path, node: pairs.append((path, node.path)))
    assert pairs == [("deep", "a/deep"), ("deep/deeper", "a/deep/deeper"),
                     ("deep/deeper/leaf", "a/deep/deeper/leaf"), ("x", "a/x")]


def test_visit_stops_at_the_first_result(tmp_path: Path) -> None:
    root = _hierarchy(tmp_path / "h.zarr")
    calls: list[str] = []

    def first_array(path: str, node: object) -> str | None:
        calls.append(path)
        return path if isinstance(node, chunkflow.Array) else None

    assert root.visititems(first_array) == "a/deep/deeper/leaf"
    assert calls == ["a", "a/deep", "a/deep/deeper", "a/deep/deeper/leaf"]
    assert root.visit(lambda path: path.upper() if path == "b" else None) == "B"


def test_group_create_array_takes_zarr_python_3_keywords(tmp_path: Path) -> None:
    zarr = pytest.importorskip("zarr")
    call = dict(shape=(16, 16), chunks=(4, 4), shards=(8, 8), dtype="u2",
                compressors={"name": "gzip", "configuration": {"level": 2}},
                attributes={"k": 1}, dimension_names=["y", "x"])
    ours = chunkflow.create_group(str(tmp_path / "ours.zarr")).create_array("g/a", **call)
    zarr.create_group(str(tmp_path / "theirs.zarr")).create_array("g/a", **call)
    assert (ours.chunks, ours.shards, ours.path) == ((4, 4), (8, 8), "g/a")

    def doc(where: str) -> dict:
        return zarr.open_array(str(tmp_path / where), path="g/a", mode="r").metadata.to_dict()

    assert doc("ours.zarr") == doc("theirs.zarr")
    data = np.arange(6, dtype="i4")
    made = chunkflow.group().create_array("d", data=data, chunks=(3,), compressors=None)
    assert made[:].tolist() == data.tolist() and made.compressors == ()


def test_group_info_complete_counts_members(tmp_path: Path) -> None:
    root = _hierarchy(tmp_path / "h.zarr")
    rows = root.info_complete().as_dict()
    assert (rows["No. members"], rows["No. arrays"], rows["No. groups"]) == ("3", "1", "2")
