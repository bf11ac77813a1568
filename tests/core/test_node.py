"""chunkflow.node: telling arrays from groups, and what arrays and groups share."""

from __future__ import annotations

import json
from typing import Any

import pytest

import chunkflow
from chunkflow.core.documents import (
    classify_node,
    ensure_ancestor_groups,
    load_array_metadata,
    node_kind,
)
from chunkflow.core.node_records import fetch_nodes, parse_node
from chunkflow.errors import (
    ArrayNotFoundError,
    ContainsArrayError,
    MetadataError,
    ReadOnlyError,
)
from chunkflow.storage import MemoryStore
from chunkflow.sync import ThreadSynchronizer

V3_GROUP = {"zarr_format": 3, "node_type": "group"}
V3_ARRAY = {"zarr_format": 3, "node_type": "array"}


@pytest.mark.parametrize(("docs", "zarr_format", "expected"), [
    ({"zarr.json": V3_GROUP}, None, ("group", 3)),
    ({"zarr.json": V3_ARRAY}, None, ("array", 3)),
    # Not a group: taken for an array, whose parse names the bad node_type.
    ({"zarr.json": {"zarr_format": 3, "node_type": "link"}}, None, ("array", 3)),
    ({".zarray": {}}, None, ("array", 2)),
    ({".zgroup": {}, ".zattrs": {}}, None, ("group", 2)),
    ({".zattrs": {}}, None, None),
    ({}, None, None),
    # v3 is preferred; a format restriction looks at that format only.
    ({"zarr.json": V3_GROUP, ".zarray": {}}, None, ("group", 3)),
    ({"zarr.json": V3_GROUP, ".zarray": {}}, 2, ("array", 2)),
    ({".zgroup": {}}, 3, None),
    ({"zarr.json": V3_ARRAY}, 2, None),
])
def test_classify_node(docs: dict, zarr_format: int | None, expected: tuple | None) -> None:
    assert classify_node(docs, zarr_format) == expected


@pytest.mark.parametrize("zarr_format", [2, 3])
def test_every_reader_agrees_on_the_kind(zarr_format: int) -> None:
    # node_kind, parse_node (group listings) and load_array_metadata decide alike.
    root = chunkflow.group(zarr_format=zarr_format)
    root.create_group("g")
    root.zeros("a", shape=3, dtype="u1")
    expected = {"g": "group", "a": "array"}
    for path, kind in expected.items():
        assert node_kind(root.store, path) == kind
        record = parse_node(fetch_nodes(root.store, [path]), path)
        assert record is not None and (record.kind, record.zarr_format) == (kind, zarr_format)
    assert load_array_metadata(root.store, "a")[0].shape == (3,)
    with pytest.raises(ArrayNotFoundError, match="describes a group, not an array"):
        load_array_metadata(root.store, "g")


def test_load_array_metadata_names_the_missing_documents() -> None:
    store = MemoryStore()
    with pytest.raises(ArrayNotFoundError,
                       match=r"path 'x' in .* does not exist.*'x/zarr.json' or 'x/.zarray'"):
        load_array_metadata(store, "x")
    store["x/0"] = b""  # something is there, but no array document
    with pytest.raises(ArrayNotFoundError, match=r"found neither 'x/zarr.json' nor 'x/.zarray'"):
        load_array_metadata(store, "x")


def test_load_array_metadata_refuses_a_node_type_that_is_neither() -> None:
    store = MemoryStore()
    store["x/zarr.json"] = json.dumps({"zarr_format": 3, "node_type": "link"}).encode()
    with pytest.raises(MetadataError, match=r"'x'.*node_type.*'link'"):
        load_array_metadata(store, "x")
    with pytest.raises(MetadataError, match=r"node_type"):
        parse_node(fetch_nodes(store, ["x"]), "x")


def test_a_v2_group_document_is_a_group_everywhere() -> None:
    store = MemoryStore()
    store["g/.zgroup"] = b'{"zarr_format": 2}'
    assert node_kind(store, "g") == "group"
    with pytest.raises(ArrayNotFoundError, match=r"'g/.zgroup' describes a group"):
        load_array_metadata(store, "g")
    ensure_ancestor_groups(store, "g/child", 2)  # a group may hold children
    assert sorted(store) == [".zgroup", "g/.zgroup"]


@pytest.mark.parametrize("documents", [
    {"a/.zarray": b"{}"},
    {"a/zarr.json": json.dumps(V3_ARRAY).encode()},
    # An array of one format beside a group document of the other is still an array.
    {"a/zarr.json": json.dumps(V3_GROUP).encode(), "a/.zarray": b"{}"},
])
def test_ensure_ancestor_groups_refuses_an_array_ancestor(documents: dict) -> None:
    store = MemoryStore()
    store.set_many(documents)
    with pytest.raises(ContainsArrayError, match=r"ancestor 'a' is an array"):
        ensure_ancestor_groups(store, "a/b", 3)


# -- what arrays and groups share: read-only refusal, the node lock, attribute updates --


class RecordingSynchronizer(ThreadSynchronizer):
    """A thread synchronizer that records the keys it locks."""

    def __init__(self) -> None:
        super().__init__()
        self.locked: list[str] = []

    def lock(self, key: str, *, timeout: float | None = None) -> Any:
        self.locked.append(key)
        return super().lock(key, timeout=timeout)


def _node(kind: str, zarr_format: int, store: MemoryStore, **options: Any) -> Any:
    root = chunkflow.open_group(store, mode="a", zarr_format=zarr_format, **options)
    if kind == "group":
        return root.create_group("n")
    return root.zeros("n", shape=4, chunks=2, dtype="u1")


@pytest.mark.parametrize("kind", ["array", "group"])
@pytest.mark.parametrize("zarr_format", [2, 3])
def test_attribute_updates_lock_the_node_document(kind: str, zarr_format: int) -> None:
    sync = RecordingSynchronizer()
    node = _node(kind, zarr_format, MemoryStore(), synchronizer=sync)
    sync.locked.clear()
    node.attrs["unit"] = "nm"
    document = {(3, "array"): "zarr.json", (3, "group"): "zarr.json",
                (2, "array"): ".zarray", (2, "group"): ".zgroup"}[zarr_format, kind]
    assert sync.locked == [f"n/{document}"]


@pytest.mark.parametrize("kind", ["array", "group"])
@pytest.mark.parametrize("zarr_format", [2, 3])
def test_attribute_updates_through_two_handles_all_land(kind: str, zarr_format: int) -> None:
    # Under a synchronizer each update re-reads the stored attributes: the second
    # handle does not write back its stale copy over the first handle's key.
    store = MemoryStore()
    first = _node(kind, zarr_format, store, synchronizer="thread")
    second = chunkflow.open_group(store, mode="r+", synchronizer="thread")["n"]
    first.attrs["a"] = 1
    second.attrs["b"] = 2
    reopened = chunkflow.open_group(store, mode="r")["n"]
    assert dict(reopened.attrs) == {"a": 1, "b": 2} == dict(second.attrs)


@pytest.mark.parametrize("kind", ["array", "group"])
def test_read_only_nodes_refuse_changes_naming_the_node(kind: str) -> None:
    store = MemoryStore()
    _node(kind, 3, store)
    node = chunkflow.open_group(store, mode="r")["n"]
    with pytest.raises(ReadOnlyError, match=r"^node 'n' is read-only"):
        node.attrs["a"] = 1
    change = (lambda: node.create_group("x")) if kind == "group" else \
        (lambda: node.__setitem__(0, 1))
    with pytest.raises(ReadOnlyError, match=rf"^{kind} 'n' in MemoryStore.* is read-only"):
        change()
    assert dict(node.attrs) == {}
