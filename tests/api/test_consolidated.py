"""Consolidated metadata: one store read opens the whole hierarchy."""

from __future__ import annotations

import json

import numpy as np
import pytest

from chunkflow.api import consolidate_metadata, group, open_consolidated, open_group
from chunkflow.errors import MetadataError
from chunkflow.storage import MemoryStore


class CountingStore(MemoryStore):
    """Counts every read call (single key, batch, listing)."""

    def __init__(self) -> None:
        super().__init__()
        self.reads = 0

    def __getitem__(self, key):
        self.reads += 1
        return super().__getitem__(key)

    def get_many(self, keys):
        self.reads += 1
        return super().get_many(keys)

    def get_many_versioned(self, keys):
        self.reads += 1
        return super().get_many_versioned(keys)

    def list_dir(self, prefix):
        self.reads += 1
        return super().list_dir(prefix)

    def list_prefix(self, prefix):
        self.reads += 1
        return super().list_prefix(prefix)

    def __contains__(self, key):
        self.reads += 1
        return super().__contains__(key)


def _build(store, zarr_format):
    root = group(store, zarr_format=zarr_format, attributes={"r": 1})
    root.create_group("a/b", attributes={"x": [1, 2]})
    root["a/b"].create_array("data", data=np.arange(6), chunks=(4,))
    root.zeros("top", shape=(2, 2), dtype="i2")
    return root


@pytest.mark.parametrize("zarr_format", [2, 3])
def test_consolidated_roundtrip_every_store(make_store, zarr_format):
    store = make_store()
    _build(store, zarr_format)
    consolidate_metadata(store)
    g = open_consolidated(store)
    assert g._live_index() is not None
    assert repr(g.tree()) == repr(open_group(store, mode="r", use_consolidated=False).tree())
    assert dict(g["a/b"].attrs) == {"x": [1, 2]} and dict(g.attrs) == {"r": 1}
    assert g["a/b/data"][:].tolist() == list(range(6))


@pytest.mark.parametrize("zarr_format", [2, 3])
def test_one_read_for_all_metadata(zarr_format):
    store = CountingStore()
    _build(store, zarr_format)
    consolidate_metadata(store)
    store.reads = 0
    g = open_group(store, mode="r", use_consolidated=True)
    arr = g["a/b/data"]
    text = repr(g.tree())
    members = [name for name, _ in g["a"].members()]
    assert store.reads == 1, store.reads
    assert "data (6,) int64" in text and members == ["b"]
    assert arr[:].tolist() == list(range(6))  # chunks still come from the store
    assert store.reads > 1


@pytest.mark.parametrize("zarr_format", [2, 3])
def test_layout_and_staleness(zarr_format):
    store = MemoryStore()
    _build(store, zarr_format)
    consolidate_metadata(store)
    if zarr_format == 2:
        doc = json.loads(store[".zmetadata"])
        assert doc["zarr_consolidated_format"] == 1
        assert {"a/b/.zattrs", "a/b/data/.zarray", ".zgroup"} <= set(doc["metadata"])
    else:
        cm = json.loads(store["zarr.json"])["consolidated_metadata"]
        assert cm["kind"] == "inline" and cm["must_understand"] is False
        assert {"a", "a/b", "a/b/data", "top"} == set(cm["metadata"])
    g = open_consolidated(store, mode="r+")
    g.create_group("new")
    assert "new" in g and g._live_index() is None


def test_use_consolidated_true_requires_it():
    store = MemoryStore()
    group(store)
    with pytest.raises(MetadataError, match="consolidate_metadata"):
        open_consolidated(store)
    assert open_group(store, mode="r").keys() == []
