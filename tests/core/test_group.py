"""Groups on every store backend: hierarchy, attributes, members, tree, info, open_node."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from chunkflow.api import group, open_group, open_node
from chunkflow.api.creation import create
from chunkflow.core import Group, Tree
from chunkflow.core.tree import TreeNode
from chunkflow.errors import (
    ContainsArrayError,
    ContainsGroupError,
    GroupNotFoundError,
    MetadataError,
    NodeNotFoundError,
    ReadOnlyError,
    ShapeMismatchError,
)
from chunkflow.storage import LocalStore, MemoryStore

FORMATS = [2, 3]


def _no_deletes(store, reason="zip stores cannot delete or overwrite members"):
    if not getattr(store, "supports_deletes", True):
        pytest.skip(reason)


@pytest.mark.parametrize("zarr_format", FORMATS)
def test_hierarchy_members_and_documents(make_store, zarr_format):
    store = make_store()
    root = group(store, zarr_format=zarr_format, attributes={"title": "t"})
    sub = root.create_group("a/b", attributes={"x": 1})
    z = sub.create_array("data", data=np.arange(12).reshape(3, 4), chunks=(2, 2))
    root.zeros("top", shape=(5,), dtype="i2")
    doc = ".zgroup" if zarr_format == 2 else "zarr.json"
    assert {doc, f"a/{doc}", f"a/b/{doc}"} <= set(store)
    assert root.keys() == ["a", "top"] and list(root) == ["a", "top"] and len(root) == 2
    assert "a/b/data" in root and "nope" not in root
    assert [n for n, _ in root.groups()] == ["a"] and [n for n, _ in root.arrays()] == ["top"]
    again = open_group(store, mode="r")
    assert again.zarr_format == zarr_format and dict(again.attrs) == {"title": "t"}
    inner = again["a/b"]
    assert isinstance(inner, Group) and inner.name == "/a/b" and inner.basename == "b"
    assert inner.path == "a/b" and dict(inner.attrs) == {"x": 1} and inner.read_only
    np.testing.assert_array_equal(again["a/b/data"][:], z[:])
    with pytest.raises(KeyError, match="missing"):
        again["a/missing"]


@pytest.mark.parametrize("zarr_format", FORMATS)
def test_creating_arrays_creates_ancestor_groups(make_store, zarr_format):
    store = make_store()
    create((2,), store=store, path="x/y/z", zarr_format=zarr_format)
    kinds = [open_node(store, mode="r", path=p) for p in ("", "x", "x/y", "x/y/z")]
    assert [type(k).__name__ for k in kinds] == ["Group", "Group", "Group", "Array"]
    with pytest.raises(ContainsArrayError, match="ancestor 'x/y/z'"):
        create((2,), store=store, path="x/y/z/w", zarr_format=zarr_format)


@pytest.mark.parametrize("zarr_format", FORMATS)
def test_attributes_persist_and_nan(make_store, zarr_format):
    store = make_store()
    root = group(store, zarr_format=zarr_format)
    root.attrs["a"] = 1
    root.attrs.update(b=[1, 2], c=float("nan"), d=float("-inf"))
    with pytest.raises(MetadataError, match="JSON"):
        root.attrs["bad"] = {1, 2}
    back = open_group(store, mode="r").attrs
    assert back["a"] == 1 and back["b"] == [1, 2] and math.isnan(back["c"])
    assert back["d"] == -math.inf and "bad" not in back
    with pytest.raises(ReadOnlyError):
        open_group(store, mode="r").attrs["z"] = 1


def test_array_attributes_write_nan_tokens():
    store = MemoryStore()
    z = create((2,), store=store, zarr_format=2, attributes={"v": float("nan")})
    assert b"NaN" in store[".zattrs"] and math.isnan(z.attrs["v"])
    store = MemoryStore()
    z3 = create((2,), store=store, path="v3", attributes={"v": float("inf")})
    assert json.loads(store["v3/zarr.json"])["attributes"]["v"] == math.inf
    assert z3.attrs["v"] == math.inf


@pytest.mark.parametrize("zarr_format", FORMATS)
def test_create_require_and_conflicts(make_store, zarr_format):
    store = make_store()
    root = group(store, zarr_format=zarr_format)
    g = root.require_group("g")
    assert root.require_group("g") == g
    with pytest.raises(ContainsGroupError):
        root.create_group("g")
    a = root.require_array("arr", shape=(4,), dtype="f8", chunks=(2,))
    assert root.require_array("arr", shape=(4,), dtype="f4").shape == (4,)
    with pytest.raises(ShapeMismatchError):
        root.require_array("arr", shape=(5,), dtype="f8")
    with pytest.raises(ContainsArrayError):
        root.require_group("arr")
    with pytest.raises(ContainsGroupError):
        root.require_array("g", shape=(1,))
    assert root.full("f", 3, shape=(2,), dtype="i4")[:].tolist() == [3, 3]
    assert root.ones("o", shape=(2,))[:].tolist() == [1, 1]
    assert root.array("l", [1, 2, 3])[:].tolist() == [1, 2, 3]
    assert root.create_dataset("e", shape=(1,)).zarr_format == zarr_format
    assert a.zarr_format == zarr_format


@pytest.mark.parametrize("zarr_format", FORMATS)
def test_delete_move_and_overwrite(make_store, zarr_format):
    store = make_store()
    _no_deletes(store)
    root = group(store, zarr_format=zarr_format)
    z = root.create_array("a/x", data=np.arange(4), chunks=2)
    root.move("a", "b/c")
    assert "a" not in root and root["b/c/x"][:].tolist() == [0, 1, 2, 3]
    with pytest.raises(KeyError):
        root.move("a", "d")
    del root["b/c/x"]
    assert "b/c/x" not in root
    # a new array at the old path must not see cached chunks of the deleted one
    assert root.zeros("b/c/x", shape=(4,), dtype=z.dtype)[:].tolist() == [0, 0, 0, 0]
    root.create_group("b", overwrite=True)
    assert list(root["b"]) == []
    with pytest.raises(KeyError):
        del root["nothing"]


def test_modes(make_store):
    store = make_store()
    with pytest.raises(GroupNotFoundError, match="does not exist"):  # an empty store
        open_group(store, mode="r")
    g = open_group(store, mode="w-", zarr_format=2)
    with pytest.raises(ContainsGroupError):
        open_group(store, mode="w-")
    assert open_group(store, mode="a").zarr_format == 2
    assert group(store).zarr_format == 2  # opens what exists
    with pytest.raises(ReadOnlyError):
        open_group(store, mode="r").create_group("x")
    g.zeros("arr", shape=(1,))
    with pytest.raises(ContainsArrayError):
        open_group(store, mode="r", path="arr")


def test_tree_and_info():
    root = group()
    root.zeros("array_2D", shape=(1000, 1000), dtype="f8")
    root.create_group("group_1").create_group("inner").zeros("z", shape=(3,), dtype="i1")
    text = repr(root.tree())
    assert text == ("/\n├── array_2D (1000, 1000) float64\n└── group_1\n"
                    "    └── inner\n        └── z (3,) int8")
    assert repr(root.tree(level=1)) == "/\n├── array_2D (1000, 1000) float64\n└── group_1"
    html = root.tree()._repr_html_()
    assert "array_2D" in html and html.count("<li>") == 5
    assert isinstance(root.tree(), Tree)
    info = root.info
    assert info["Type"] == "Group" and info["No. members"] == "2" and info["No. arrays"] == "1"
    assert "<table" in info._repr_html_()


def test_tree_of_a_subgroup_and_a_bad_level():
    root = group()
    root.create_group("a/b").zeros("z", shape=(2,), dtype="u1")
    assert repr(root["a"].tree()) == "/a\n└── b\n    └── z (2,) uint8"
    with pytest.raises(ValueError, match="tree level must be None or >= 0, got -1"):
        root.tree(level=-1)


def test_tree_rendering_needs_no_group():
    # tree.py is pure rendering: it draws TreeNode data and imports nothing of
    # chunkflow (Group.tree reads the members), so group/core <-> group/tree is no cycle.
    import ast
    import importlib

    tree_module = importlib.import_module("chunkflow.core.tree")

    source = ast.parse(open(tree_module.__file__, encoding="utf-8").read())
    imported = [node.module for node in ast.walk(source) if isinstance(node, ast.ImportFrom)]
    assert not [name for name in imported if name and name.startswith("chunkflow")]
    drawn = Tree(TreeNode("/", children=[TreeNode("g", children=[TreeNode("x", "(1,) i1")])]))
    assert repr(drawn) == "/\n└── g\n    └── x (1,) i1"


def test_open_node(make_store):
    store = make_store()
    assert isinstance(open_node(store, mode="w"), Group)
    assert open_node(store, mode="a", path="g/arr", shape=(3,), dtype="u1").shape == (3,)
    assert isinstance(open_node(store, mode="r", path="g"), Group)
    assert open_node(store, mode="r+", path="g/arr").dtype == np.uint8
    with pytest.raises(NodeNotFoundError, match="'nope'"):
        open_node(store, mode="r", path="nope")
    with pytest.raises(TypeError, match="dtype"):
        open_node(store, mode="a", path="new", dtype="i4")


def test_open_node_walks_up_local_folders(tmp_path):
    root = group(LocalStore(tmp_path / "s.zarr"), zarr_format=2)
    root.create_group("a/b").zeros("c", shape=(2,), dtype="i1")
    (tmp_path / "s.zarr" / "a" / "b" / "c" / "0").mkdir(exist_ok=True)
    direct = open_node(str(tmp_path / "s.zarr" / "a" / "b" / "c"), mode="r")
    assert direct.shape == (2,)
    with pytest.raises(NodeNotFoundError):
        open_node(str(tmp_path / "s.zarr" / "a" / "nothing"), mode="r")


def test_open_resolves_paths_inside_a_local_store(tmp_path) -> None:
    import numpy as np

    import chunkflow

    root = chunkflow.group(str(tmp_path / "s.zarr"))
    root.create_array("a/b/c", data=np.arange(6))
    inner = chunkflow.open(str(tmp_path / "s.zarr" / "a" / "b" / "c"), mode="r")
    np.testing.assert_array_equal(inner[:], np.arange(6))
    assert isinstance(chunkflow.open(str(tmp_path / "s.zarr" / "a"), mode="r"), chunkflow.Group)
    with chunkflow.ZipStore(tmp_path / "s.zip", mode="w") as store:
        chunkflow.group(store).create_array("x/y", data=np.arange(3))
    np.testing.assert_array_equal(chunkflow.open(str(tmp_path / "s.zip" / "x" / "y"),
                                                 mode="r")[:], np.arange(3))
